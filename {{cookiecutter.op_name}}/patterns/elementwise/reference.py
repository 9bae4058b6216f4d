"""PyTorch reference for the elementwise ops: the ground truth test_kernel.py checks the kernel against.

- ``reference(*inputs)``: the harness calls it on float64 copies of the inputs, so the reference adds no rounding
  error of its own. It is op.json's op from ``BUILT_IN``, or your own function when the workspace was baked with
  ``pytorch_logic`` (host.reference_for says how your parameters are matched).
- ``baseline(*inputs)``: what "torch" means in the timing: the same expression in eager torch, on the native
  dtype, timed in the same run with the same timer as the kernel.
- ``make_inputs(case, dtype, device, seed)``: fresh standard-normal inputs for one op.json case, in op.json's
  input order (a lowered op's: the function's parameter order); every tensor has the case's shape, except a lowered
  op's vector inputs (op.json ``kinds``), which are [N], the case's last dim, and its scalars and boolean masks
  (host.lowered_input).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import host

BUILT_IN = {
    "add": lambda x, y: x + y,
    "mul": lambda x, y: x * y,
    "silu": lambda x: F.silu(x),
    "gelu": lambda x: F.gelu(x),  # exact erf form (approximate="none"), the same as the kernels
    "relu": lambda x: F.relu(x),
    "silu_mul": lambda x, y: F.silu(x) * y,  # SwiGLU: x is the gate projection, y the up projection
}

reference = host.reference_for(BUILT_IN)
baseline = reference


def make_inputs(case: dict, dtype: torch.dtype, device: str, seed: int, inputs: list[str] | None = None) -> list:
    randn = host.randn(torch.Generator(device=device).manual_seed(seed), dtype, device)
    return [host.lowered_input(randn, name, lambda width: randn(*case["dims"]), case["dims"][-1])
            for name in inputs or host.OP["inputs"]]
