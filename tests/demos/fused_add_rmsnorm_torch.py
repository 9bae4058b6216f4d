"""The PyTorch function of tests/demos/fused_add_rmsnorm_triton.py (test data): the reference its demo is checked
against, and what kbaseline lowers into the row cell."""

import torch


def fused_add_rmsnorm(x, residual, weight, eps=1e-6):
    h = x + residual
    v = h.float().pow(2).mean(-1, keepdim=True)
    return h, (h.float() * torch.rsqrt(v + eps)).to(x.dtype) * weight
