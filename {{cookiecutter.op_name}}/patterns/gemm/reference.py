"""PyTorch reference for the GEMM: the ground truth test_kernel.py checks the kernel against.

- ``reference(a, b)``: ``a @ b.T``, called by the harness on float64 copies, so the reference adds no rounding
  error of its own; or your own function when the workspace was baked with ``pytorch_logic`` (a lowered GEMM:
  your matmul and its epilogue, given every input by name; host.reference_for). fp8:
  ``reference(a, b, scale_a, scale_b)`` dequantises in float64, ``(a * scale_a) @ (b * scale_b).T``: the harness
  widens the exact e4m3 values and their fp32 scales to float64, so only the kernel's accumulation and its bf16
  output rounding are measured.
- ``baseline(...)``: what "torch" means in the timing, on the native dtype, timed in the same run with the same
  timer as the kernel: ``a @ b.T`` (cuBLAS), or for fp8 ``torch._scaled_mm(a, b.t(), scale_a, scale_b,
  out_dtype=torch.bfloat16)`` (cuBLASLt's fp8 GEMM, its default accumulation); for your own function, that
  function in eager torch.
- ``make_inputs(case, dtype, device, seed)``: fresh standard-normal ``a`` [M, K] and ``b`` [N, K], both K-major,
  then a lowered op's epilogue inputs, each in the shape its function takes it: op.json's program gives every input
  its dims in M, N, K (a row input [M, N], a vector [N], one value per row [M], or [M, 1] where annotated so).
  fp8: each operand quantised with its own per-tensor scale, amax / the format's max (448 for float8_e4m3fn, 240
  for gfx942's float8_e4m3fnuz), the epilogue inputs in bf16, then ``scale_a``, ``scale_b`` as fp32 tensors of
  shape (1,).
"""

from __future__ import annotations

import torch

import host

FP8 = host.OP.get("dtype") == "fp8"


def _matmul(a, b, scale_a=None, scale_b=None):
    if scale_a is None:
        return a @ b.T  # nn.Linear's layout: both operands K-major
    return (a * scale_a) @ (b * scale_b).T


BUILT_IN = {"matmul": _matmul}
BUILT_IN_DIMS = [["M", "K"], ["N", "K"]]  # the built-in op's a and b

reference = host.reference_for(BUILT_IN)


def _scaled_mm(a, b, scale_a, scale_b):
    return torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16)


baseline = _scaled_mm if FP8 and host.OP.get("op") == "matmul" else reference

def quantize(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """x in `dtype` (an e4m3 flavour) with one per-tensor scale: (x / scale).to(dtype), scale = amax / max."""
    scale = (x.abs().amax().float() / torch.finfo(dtype).max).clamp(min=1e-12).reshape(1)
    return (x / scale).to(dtype), scale


def make_inputs(case: dict, dtype: torch.dtype, device: str, seed: int) -> list:
    fp8 = dtype.itemsize == 1
    randn = host.randn(torch.Generator(device=device).manual_seed(seed), torch.float32 if fp8 else dtype, device)
    size = dict(zip("MNK", case["dims"]))
    lowered = host.OP.get("lowered")
    dims = [i["dims"] for i in lowered["inputs"]] if lowered else BUILT_IN_DIMS
    a, b, *extras = [randn(*(size[d] if isinstance(d, str) else d for d in shape)) for shape in dims]
    if not fp8:
        return [a, b, *extras]
    (a, scale_a), (b, scale_b) = quantize(a, dtype), quantize(b, dtype)
    return [a, b, *(e.to(torch.bfloat16) for e in extras), scale_a, scale_b]
