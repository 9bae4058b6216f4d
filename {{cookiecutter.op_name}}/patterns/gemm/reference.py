"""PyTorch reference for the GEMM: the ground truth test_kernel.py checks the kernel against.

- ``reference(a, b)``: ``a @ b.T``, called by the harness on float64 copies, so the reference adds no rounding
  error of its own; or your own function when the workspace was baked with ``pytorch_logic``.
- ``baseline(a, b)``: what "torch" means in the timing: ``a @ b.T`` on the native dtype, i.e. cuBLAS, timed in the
  same run with the same timer as the kernel.
- ``make_inputs(case, dtype, device, seed)``: fresh standard-normal ``a`` [M, K] and ``b`` [N, K], both K-major.
"""

from __future__ import annotations

import torch

import host

BUILT_IN = {
    "matmul": lambda a, b: a @ b.T,  # nn.Linear's layout: both operands K-major
}

reference = host.reference_for(BUILT_IN)
baseline = reference


def make_inputs(case: dict, dtype: torch.dtype, device: str, seed: int) -> list:
    randn = host.randn(torch.Generator(device=device).manual_seed(seed), dtype, device)
    m, n, k = case["dims"]
    return [randn(m, k), randn(n, k)]
