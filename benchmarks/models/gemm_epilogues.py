"""The four fused-epilogue GEMMs of issue 15, as a user writes them: the `pytorch_logic` bench_gemm_epilogue.py bakes.

Each is one K-major matmul head (x [M, K], w [N, K]) and a pointwise epilogue on C [M, N]: a per-column bias or scale
([N], by name), or a residual of C's shape.
"""

import torch
import torch.nn.functional as F


def linear_bias_gelu(x, w, bias):
    return F.gelu(F.linear(x, w, bias), approximate="tanh")


def linear_bias_sqrelu(x, w, bias):
    return torch.square(torch.relu(F.linear(x, w, bias)))


def linear_residual(x, w, residual):
    return x @ w.T + residual


def linear_scale_cast(x, w, scale):
    return (F.linear(x, w).float() * scale.float()).to(torch.bfloat16)
