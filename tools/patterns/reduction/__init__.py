"""The reduction pattern: each row of the last dim reduced (sum, mean, max) or normalised (softmax, rmsnorm).

Template side: the registry reads this module; the workspace gets its facts through op.json. The workspace side
of the pattern is ``{{cookiecutter.op_name}}/patterns/reduction/`` (reference.py and one kernel per DSL).
"""

from __future__ import annotations

import math

from tools import shapes
from tools.catalog import InputError

PROMPT = "Reduction over the last dim (sum, mean, max, softmax, rmsnorm)"
DEFAULT_OP = "softmax"
DTYPES = ["bf16", "fp16", "fp32"]
SHAPES_HELP = ("MxN shapes separated by ';', each optionally '@S' for a row stride S >= N, "
               "e.g. '32768x8192;1000x4096@4160'; your function's rows of rank 3 or more as all their dims "
               "(RoPE's q, '1x8192x32x128')")

# `out` names the output's shape; `params` are fixed op parameters frozen into op.json; ops whose output is as
# large as the input also stream their stores (`isa_targets`).
OPS = {
    "sum": {"inputs": ["x"], "flops": "M*N", "bytes": "(M*N + M)*elem_bytes", "out": "[M]",
            "math": "out[m] = sum_n x[m, n]  (fp32 accumulation, output in the input dtype)"},
    "mean": {"inputs": ["x"], "flops": "M*N + M", "bytes": "(M*N + M)*elem_bytes", "out": "[M]",
             "math": "out[m] = sum_n x[m, n] / N  (fp32 accumulation)"},
    "max": {"inputs": ["x"], "flops": "M*N", "bytes": "(M*N + M)*elem_bytes", "out": "[M]",
            "math": "out[m] = max_n x[m, n]  (NaN propagates, as in torch)"},
    "softmax": {"inputs": ["x"], "flops": "5*M*N", "bytes": "2*M*N*elem_bytes", "out": "[M, N]",
                "isa_targets": {"vec_stores": True},
                "math": "out[m, n] = exp(x[m, n] - max_n x[m]) / sum_n exp(x[m, n] - max_n x[m])  (fp32 math)"},
    "rmsnorm": {"inputs": ["x", "weight"], "flops": "4*M*N", "bytes": "(2*M*N + N)*elem_bytes", "out": "[M, N]",
                "params": {"eps": 1e-6}, "isa_targets": {"vec_stores": True},
                "math": "out[m, n] = x[m, n] / sqrt(mean_n x[m, n]^2 + eps) * weight[n]  "
                        "(as torch.nn.functional.rms_norm, eps = 1e-6)"},
}
FORMULA_NOTES = {"flops": "one add (or max) per element; softmax ~5 and rmsnorm ~4 per element",
                 "bytes": "x read once (plus weight for rmsnorm), the output written once: the minimum traffic"}

PHASE1 = {
    "inputs": "`x` [M, N], row-major with the last dim contiguous and any row stride >= N"
              " (plus `weight` [N] for rmsnorm).",
    "shapes": "any M >= 1, N >= 1; the cases below, including N = 1, odd N, M = 1 and a padded row stride.",
    "precision": "inputs and output in the dtype; accumulation and all math in fp32; one rounding on the store.",
    "masks": "none; every op reduces over the last dim.",
    "boundaries": "N not a multiple of the 128-bit vector, rows whose start is not 16-byte aligned, "
                  "and very long rows (N >= 65536) that do not fit one CTA's registers.",
    "special": "softmax subtracts the row max, so large inputs do not overflow; NaN propagates as in torch "
               "(a NaN in a row makes its max and its whole softmax row NaN).",
}
BASELINE = "the same expression in eager torch is the timed baseline"
WIKI_WORDS = ["reduction", "reduce", "softmax", "rmsnorm", "layernorm", "warp shuffle"]
# the gpu-wiki's operator families of this pattern (its JSON records' scope.operator_family, matched exactly)
WIKI_FAMILIES = ["reduction", "norm", "softmax"]
ISA_TARGETS = {"kind": "memory", "tensor_core": False, "vec_stores": False}

DEFAULT_SHAPES = {
    # 32768x8192 is the headline; 4096 x {4096, 5120, 8192} are LLM hidden sizes; 8x131072 is the large-N path
    "representative": ["32768x8192", "4096x4096", "4096x5120", "4096x8192", "8x131072"],
    "boundary": ["4096x1", "4096x7", "4096x1000", "1x4096", "1000x4096@4160", "333x65536"],
}


def cases(text: str, role: str, dtype: str) -> list[dict]:
    """`MxN` or `MxN@S` items (S: the row stride in elements) -> cases with M, N, numel (and row_stride); an item of
    rank 3 or more (`BxSxHxD`, a lowered function's N-D rows) is M = B*S*H rows of N = D, its leading dims kept as
    ``lead``."""
    out = []
    for item in shapes.items(text):
        shape, _, stride = item.partition("@")
        found = shapes.dims(shape, (2, 3, 4, 5), "32768x8192, 1000x4096@4160 or 1x8192x32x128")
        m, n = math.prod(found[:-1]), found[-1]
        extra = {"lead": found[:-1]} if len(found) > 2 else {}
        if stride:
            if not shapes.DIM.match(stride) or int(stride) < n:
                raise InputError(f"shapes: '{item}': the row stride after '@' must be an integer >= N ({n}); "
                                 f"e.g. '1000x4096@4160'")
            extra["row_stride"] = int(stride)
        if m * extra.get("row_stride", n) >= 2**31:
            raise InputError(f"shapes: '{item}' spans {m * extra.get('row_stride', n)} elements, above the int32 "
                             f"index range; use fewer rows")
        out.append(shapes.case(role, item.lower(), [m, n], {"M": m, "N": n, "numel": m * n}, dtype, extra))
    return out


def tensors(case: dict, op: str) -> dict[str, tuple[int, int]]:
    """Every tensor the op reads or writes: name -> (elements, bytes per element); x with its row padding."""
    v = case["vars"]
    out = {"x": (v["M"] * case.get("row_stride", v["N"]), v["elem_bytes"])}
    if "weight" in OPS[op]["inputs"]:
        out["weight"] = (v["N"], v["elem_bytes"])
    out["out"] = (v["M"] * (v["N"] if OPS[op]["out"] == "[M, N]" else 1), v["elem_bytes"])
    return out


def largest_buffer(case: dict) -> int:
    """Bytes one buffer descriptor covers: x from its first to its last element, padded stride included."""
    v = case["vars"]
    elems = (v["M"] - 1) * case["row_stride"] + v["N"] if case.get("row_stride") else v["numel"]
    return elems * v["elem_bytes"]
