"""PyTorch reference for the GEMM: the ground truth test_kernel.py checks the kernel against.

- ``reference(a, b)``: ``a @ b.T``, called by the harness on float64 copies, so the reference adds no rounding
  error of its own; or your own function when the workspace was baked with ``pytorch_logic`` (a lowered GEMM:
  your matmul and its epilogue, given every input by name; host.reference_for).
- ``baseline(a, b)``: what "torch" means in the timing: ``a @ b.T`` on the native dtype, i.e. cuBLAS, timed in the
  same run with the same timer as the kernel; for your own function, that function in eager torch.
- ``make_inputs(case, dtype, device, seed)``: fresh standard-normal ``a`` [M, K] and ``b`` [N, K], both K-major,
  then a lowered op's epilogue inputs, each in the shape its function takes it: op.json's program gives every input
  its dims in M, N, K (a row input [M, N], a vector [N], one value per row [M], or [M, 1] where annotated so).
"""

from __future__ import annotations

import torch

import host

BUILT_IN = {
    "matmul": lambda a, b: a @ b.T,  # nn.Linear's layout: both operands K-major
}
BUILT_IN_DIMS = [["M", "K"], ["N", "K"]]  # the built-in op's a and b

reference = host.reference_for(BUILT_IN)
baseline = reference


def make_inputs(case: dict, dtype: torch.dtype, device: str, seed: int) -> list:
    randn = host.randn(torch.Generator(device=device).manual_seed(seed), dtype, device)
    size = dict(zip("MNK", case["dims"]))
    lowered = host.OP.get("lowered")
    dims = [i["dims"] for i in lowered["inputs"]] if lowered else BUILT_IN_DIMS
    return [randn(*(size[d] if isinstance(d, str) else d for d in shape)) for shape in dims]
