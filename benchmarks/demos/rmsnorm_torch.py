"""An RMSNorm in PyTorch (benchmarks/bench_demo.py): the reference (pytorch_logic) of the disagreeing and the raising
demos."""

import torch


def rmsnorm(x, weight, eps=1e-6):
    v = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(v + eps)).to(x.dtype) * weight
