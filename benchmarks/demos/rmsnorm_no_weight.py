"""A kernel demo that disagrees with its reference (benchmarks/bench_demo.py): it forgets the weight."""

import torch


def rmsnorm(x, weight, eps=1e-6):
    v = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(v + eps)).to(x.dtype)
