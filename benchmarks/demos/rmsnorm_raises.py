"""A kernel demo that raises on part of the cases (benchmarks/bench_demo.py): rows wider than 4096 are refused, as a
kernel with a fixed block size would refuse them."""

import torch.nn.functional as F


def rmsnorm(x, weight, eps=1e-6):
    if x.shape[-1] > 4096:
        raise NotImplementedError(f"this demo handles rows of at most 4096 elements, got {x.shape[-1]}")
    return F.rms_norm(x, (x.shape[-1],), weight, eps=eps)
