"""PyTorch reference for the GEMM: the ground truth test_kernel.py checks the kernel against.

- ``reference(a, b)``: ``a @ b.T``, called by the harness on float64 copies, so the reference adds no rounding
  error of its own; or your own function when the workspace was baked with ``pytorch_logic``. fp8:
  ``reference(a, b, scale_a, scale_b)`` dequantises in float64, ``(a * scale_a) @ (b * scale_b).T``: the harness
  widens the exact e4m3 values and their fp32 scales to float64, so only the kernel's fp32 accumulation and its
  bf16 output rounding are measured.
- ``baseline(...)``: what "torch" means in the timing, on the native dtype, timed in the same run with the same
  timer as the kernel: ``a @ b.T`` (cuBLAS), or for fp8 ``torch._scaled_mm(a, b.t(), scale_a, scale_b,
  out_dtype=torch.bfloat16)`` (cuBLASLt's fp8 GEMM, its default accumulation).
- ``make_inputs(case, dtype, device, seed)``: fresh standard-normal ``a`` [M, K] and ``b`` [N, K], both K-major, in
  op.json's input order. fp8: each operand quantised with its own per-tensor scale, amax / the format's max (448
  for float8_e4m3fn, 240 for gfx942's float8_e4m3fnuz), then ``scale_a``, ``scale_b`` as fp32 tensors of shape
  (1,). A lowered op's epilogue inputs (op.json ``kinds``): "row" [M, N], "vector" [N], "per_row" [M].
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

reference = host.reference_for(BUILT_IN)


def _scaled_mm(a, b, scale_a, scale_b):
    return torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16)


baseline = _scaled_mm if FP8 and host.OP.get("op") == "matmul" else reference

EXTRA_SHAPES = {"row": lambda m, n: (m, n), "vector": lambda m, n: (n,), "per_row": lambda m, n: (m,)}


def quantize(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """x in `dtype` (an e4m3 flavour) with one per-tensor scale: (x / scale).to(dtype), scale = amax / max."""
    scale = (x.abs().amax().float() / torch.finfo(dtype).max).clamp(min=1e-12).reshape(1)
    return (x / scale).to(dtype), scale


def make_inputs(case: dict, dtype: torch.dtype, device: str, seed: int) -> list:
    fp8 = dtype.itemsize == 1
    values = torch.float32 if fp8 else dtype
    randn = host.randn(torch.Generator(device=device).manual_seed(seed), values, device)
    m, n, k = case["dims"]
    a, b = randn(m, k), randn(n, k)
    if fp8:
        (a, scale_a), (b, scale_b) = quantize(a, dtype), quantize(b, dtype)
    kinds = host.OP.get("kinds", {})
    out_dtype = getattr(torch, host.OP.get("out_torch_dtype") or str(dtype).removeprefix("torch."))
    extras = [randn(*EXTRA_SHAPES[kinds[name]](m, n)).to(out_dtype) for name in host.OP.get("inputs", [])[2:]
              if kinds.get(name) in EXTRA_SHAPES]
    return [a, b, *extras, *((scale_a, scale_b) if fp8 else ())]
