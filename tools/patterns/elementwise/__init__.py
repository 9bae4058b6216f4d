"""The elementwise pattern: one output element from the same element of each input, everything it knows.

Template side: the registry reads this module; the workspace gets its facts through op.json. The workspace side
of the pattern is ``{{cookiecutter.op_name}}/patterns/elementwise/`` (reference.py and one kernel per DSL).
"""

from __future__ import annotations

import math

from tools import shapes
from tools.catalog import InputError

PROMPT = "Elementwise (add, mul, silu, gelu, relu, silu_mul)"
DEFAULT_OP = "silu_mul"
DTYPES = ["bf16", "fp16", "fp32"]
SHAPES_HELP = "one or more 1-D or 2-D shapes separated by ';', dims joined by 'x', e.g. '268435456;8192x8192'"

# `inputs`: the parameter names of the reference and the kernel, in order; `flops`/`bytes`: formulas in the case
# variable names, evaluated safely by tools/compute_utilization.py; `math`: what the op computes.
OPS = {
    "add": {"inputs": ["x", "y"], "flops": "numel", "bytes": "3*numel*elem_bytes", "math": "out = x + y"},
    "mul": {"inputs": ["x", "y"], "flops": "numel", "bytes": "3*numel*elem_bytes", "math": "out = x * y"},
    "silu": {"inputs": ["x"], "flops": "4*numel", "bytes": "2*numel*elem_bytes", "math": "out = x / (1 + exp(-x))"},
    "gelu": {"inputs": ["x"], "flops": "5*numel", "bytes": "2*numel*elem_bytes",
             "math": "out = 0.5 * x * (1 + erf(x / sqrt(2)))  (exact erf form, torch's default)"},
    "relu": {"inputs": ["x"], "flops": "numel", "bytes": "2*numel*elem_bytes",
             "math": "out = max(x, 0)  (NaN propagates, as in torch)"},
    "silu_mul": {"inputs": ["x", "y"], "flops": "5*numel", "bytes": "3*numel*elem_bytes",
                 "math": "out = silu(x) * y  (SwiGLU gate: x = gate, y = up)"},
}
FORMULA_NOTES = {"flops": "arithmetic per output element, exp/erf/division counted as one each",
                 "bytes": "each input read once + 1 output written once"}

# Phase-1 semantics (workflow step 1.1), frozen into op.json and written into plans/v0_plan.md.
PHASE1 = {
    "inputs": "each the same shape as the output; one output of that shape.",
    "shapes": "any contiguous 1-D or 2-D shape; the cases below. Non-contiguous inputs are refused (the kernel "
              "views every tensor as 1-D of `numel` elements).",
    "precision": "inputs and output in the dtype; fp32 registers, one rounding on the store.",
    "masks": "none; all tensors have one shape (no broadcast).",
    "boundaries": "sizes that are not a multiple of the 128-bit vector or of the CTA tile are handled by "
                  "per-element predicates in the last CTA.",
    "special": "NaN propagates as in torch.",
}
BASELINE = "the same expression in eager torch is the timed baseline"
WIKI_WORDS = ["elementwise", "element-wise", "vectoriz", "vectoris", "memory-bound", "bandwidth", "activation"]
# the gpu-wiki's operator families of this pattern (its JSON records' scope.operator_family, matched exactly)
WIKI_FAMILIES = ["elementwise", "activation"]
# What tools/isa_metrics.py holds the compiled kernel to: a stream (memory-bound) whose output is as big as an input.
ISA_TARGETS = {"kind": "memory", "tensor_core": False, "vec_stores": True}

MAX_NUMEL = 2**31 - 2**20  # int32 indexing in the kernels, with one CTA tile of headroom
DEFAULT_SHAPES = {
    "representative": ["268435456", "8192x8192", "4096x14336"],
    "boundary": ["1", "7", "1000x1001", "12345679", "3x16385"],
}


def cases(text: str, role: str, dtype: str) -> list[dict]:
    """`N` or `MxN` items -> cases with `numel` (and `N`, or `M` and `N`)."""
    out = []
    for item in shapes.items(text):
        dims = shapes.dims(item, (1, 2), "268435456;8192x8192")
        numel = math.prod(dims)
        if numel > MAX_NUMEL:
            raise InputError(f"shapes: '{item}' has {numel} elements, above the kernel's int32 limit of "
                             f"{MAX_NUMEL}; split the tensor or use smaller shapes")
        names = {"numel": numel, **({"N": dims[0]} if len(dims) == 1 else {"M": dims[0], "N": dims[1]})}
        out.append(shapes.case(role, "x".join(map(str, dims)), dims, names, dtype))
    return out


def tensors(case: dict, op: str) -> dict[str, tuple[int, int]]:
    """Every tensor the op reads or writes: name -> (elements, bytes per element); all of one shape."""
    each = (case["vars"]["numel"], case["vars"]["elem_bytes"])
    return {**{name: each for name in OPS[op]["inputs"]}, "out": each}


def largest_buffer(case: dict) -> int:
    """Bytes of the largest range one buffer descriptor covers: a whole tensor."""
    return case["vars"]["numel"] * case["vars"]["elem_bytes"]
