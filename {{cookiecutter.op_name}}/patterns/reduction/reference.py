"""PyTorch reference for the row reductions: the ground truth test_kernel.py checks the kernel against.

- ``reference(*inputs)``: the harness calls it on float64 copies of the inputs, so the reference adds no rounding
  error of its own. It is op.json's op from ``BUILT_IN``, or your own function when the workspace was baked with
  ``pytorch_logic`` (host.reference_for says how your parameters are matched).
- ``baseline(*inputs)``: what "torch" means in the timing: the same expression in eager torch, on the native
  dtype, timed in the same run with the same timer as the kernel.
- ``make_inputs(case, dtype, device, seed)``: fresh standard-normal inputs for one op.json case: each row input
  (``x``, and a lowered op's other [M, N] inputs) with a padded row stride when the case has one (the kernel must
  honour ``x.stride(0)``), each vector (``weight`` [N]; a lowered op's ``kinds`` say which are), and a lowered op's
  scalars, one value per row and boolean masks (host.lowered_input), in the function's own parameter order; a case with ``lead``
  makes its rows [*lead, N] (rank 3 or more), and an input broadcast over some of x's dims its own shape (cos
  [S, D] beside q [B, S, H, D]). A case's N is the output row's length (host.lowered_lengths).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import host

EPS = (host.OP.get("params") or {}).get("eps", 1e-6)  # rms_norm's eps: op.json params.eps, the kernel's too

BUILT_IN = {
    "sum": lambda x: x.sum(dim=-1),  # torch accumulates 16-bit inputs in fp32 and rounds once
    "mean": lambda x: x.mean(dim=-1),
    "max": lambda x: x.amax(dim=-1),
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "rmsnorm": lambda x, weight: F.rms_norm(x, (x.shape[-1],), weight, eps=EPS),
}

BUILT_IN_KINDS = {"x": "row", "weight": "vector"}  # the built-in ops' inputs: x [M, N], rmsnorm's weight [N]

reference = host.reference_for(BUILT_IN)
baseline = reference


def make_inputs(case: dict, dtype: torch.dtype, device: str, seed: int, inputs: list[str] | None = None) -> list:
    randn = host.randn(torch.Generator(device=device).manual_seed(seed), dtype, device)
    m, n = case["dims"]
    if not host.OP.get("kinds"):  # a built-in op: x [M, N], rmsnorm's weight [N]
        return [randn(m, case.get("row_stride") or n)[:, :n] if BUILT_IN_KINDS.get(name, "row") == "row" else randn(n)
                for name in inputs or host.OP["inputs"]]
    lead = case.get("lead")  # a case of rank 3 or more: the rows as [*lead, N] (M = their product)
    n, length = host.lowered_lengths(n)  # the kernel's row length, and a row input's per unit of width

    def row(width: int, names=None):
        if names:  # broadcast over some of x's dims (cos [S, D] beside q [B, S, H, D]): its own dims' sizes
            sizes = dict(zip(host.lowered_names()[:-1], lead))
            return randn(*(1 if d == "1" else sizes[d] for d in names[:-1]), width * length)
        t = randn(m, max(case.get("row_stride") or 0, width * length))[:, :width * length]
        return t.reshape(*lead, width * length) if lead else t

    return [host.lowered_input(randn, name, row, n, tuple(lead or [m])) for name in inputs or host.OP["inputs"]]
