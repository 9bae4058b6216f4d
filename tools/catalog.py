"""The kbaseline catalogue: which GPUs, patterns, ops, dtypes and shapes exist, and which cells are built.

Template-side single source of truth. The pre-gen hook validates against it, the post-gen hook turns it
into the workspace's ``op.json``, and the Jinja extension derives the private cookiecutter keys
(arch, target, framework) from it. A generated workspace never imports this module: everything it
needs is frozen into ``op.json``.

A *cell* is one (pattern, framework) pair, e.g. ``elementwise × cutedsl``. Its kernel lives at
``{{cookiecutter.op_name}}/cells/<framework>/<pattern>/kernel.py`` in the template repo.
"""

from __future__ import annotations

from cells import CELLS


GPUS = {
    # name: vendor, architecture family, compile target, DSL, SMs / CUs (frozen into op.json as compute_units:
    # kernels size their grids from it where no device can be asked, as in compile_only and describe)
    "H200": {"vendor": "nvidia", "arch": "hopper", "target": "sm_90a", "framework": "cutedsl", "compute_units": 132},
    "H100": {"vendor": "nvidia", "arch": "hopper", "target": "sm_90a", "framework": "cutedsl", "compute_units": 132},
    "H20": {"vendor": "nvidia", "arch": "hopper", "target": "sm_90a", "framework": "cutedsl", "compute_units": 78},
    "MI300X": {"vendor": "amd", "arch": "cdna3", "target": "gfx942", "framework": "flydsl", "compute_units": 304},
    "MI308X": {"vendor": "amd", "arch": "cdna3", "target": "gfx942", "framework": "flydsl", "compute_units": 80},
    "MI355X": {"vendor": "amd", "arch": "cdna4", "target": "gfx950", "framework": "flydsl", "compute_units": 256},
}

DTYPES = {
    # name: torch dtype name, bytes per element, default rel_err tolerance
    "bf16": {"torch": "bfloat16", "bytes": 2, "tolerance": 1e-2},
    "fp16": {"torch": "float16", "bytes": 2, "tolerance": 1e-2},
    "fp32": {"torch": "float32", "bytes": 4, "tolerance": 1e-5},
    "fp8": {"torch": "float8_e4m3fn", "bytes": 1, "tolerance": 5e-2},
}

# Ops per pattern. `inputs` are the parameter names the reference and kernel take, in order; `flops` and
# `bytes` are formulas in the case variable names (tools/shapes.py), evaluated safely by compute_utilization;
# `out` names the output's shape; `params` are fixed op parameters frozen into op.json.
OPS = {
    "elementwise": {
        "add": {"inputs": ["x", "y"], "flops": "numel", "bytes": "3*numel*elem_bytes", "math": "out = x + y"},
        "mul": {"inputs": ["x", "y"], "flops": "numel", "bytes": "3*numel*elem_bytes", "math": "out = x * y"},
        "silu": {"inputs": ["x"], "flops": "4*numel", "bytes": "2*numel*elem_bytes", "math": "out = x / (1 + exp(-x))"},
        "gelu": {"inputs": ["x"], "flops": "5*numel", "bytes": "2*numel*elem_bytes",
                 "math": "out = 0.5 * x * (1 + erf(x / sqrt(2)))  (exact erf form, torch's default)"},
        "relu": {"inputs": ["x"], "flops": "numel", "bytes": "2*numel*elem_bytes", "math": "out = max(x, 0)  (NaN propagates, as in torch)"},
        "silu_mul": {"inputs": ["x", "y"], "flops": "5*numel", "bytes": "3*numel*elem_bytes",
                     "math": "out = silu(x) * y  (SwiGLU gate: x = gate, y = up)"},
    },
    "reduction": {
        "sum": {"inputs": ["x"], "flops": "M*N", "bytes": "(M*N + M)*elem_bytes", "out": "[M]",
                "math": "out[m] = sum_n x[m, n]  (fp32 accumulation, output in the input dtype)"},
        "mean": {"inputs": ["x"], "flops": "M*N + M", "bytes": "(M*N + M)*elem_bytes", "out": "[M]",
                 "math": "out[m] = sum_n x[m, n] / N  (fp32 accumulation)"},
        "max": {"inputs": ["x"], "flops": "M*N", "bytes": "(M*N + M)*elem_bytes", "out": "[M]",
                "math": "out[m] = max_n x[m, n]  (NaN propagates, as in torch)"},
        "softmax": {"inputs": ["x"], "flops": "5*M*N", "bytes": "2*M*N*elem_bytes", "out": "[M, N]",
                    "math": "out[m, n] = exp(x[m, n] - max_n x[m]) / sum_n exp(x[m, n] - max_n x[m])  (fp32 math)"},
        "rmsnorm": {"inputs": ["x", "weight"], "flops": "4*M*N", "bytes": "(2*M*N + N)*elem_bytes", "out": "[M, N]",
                    "params": {"eps": 1e-6},
                    "math": "out[m, n] = x[m, n] / sqrt(mean_n x[m, n]^2 + eps) * weight[n]  "
                            "(as torch.nn.functional.rms_norm, eps = 1e-6)"},
    },
    "gemm": {
        "matmul": {"inputs": ["a", "b"], "flops": "2*M*N*K", "bytes": "(M*K + N*K + M*N)*elem_bytes", "out": "[M, N]",
                   "math": "c[M, N] = a[M, K] @ b[N, K]^T  (both K-major, as nn.Linear; fp32 accumulation)"},
    },
    "decode_attention": {
        "gqa": {"inputs": ["q", "k_cache", "v_cache", "seq_lens"], "flops": "4*Hq*D*total_len",
                "bytes": "2*Hkv*D*total_len*elem_bytes + 2*B*Hq*D*elem_bytes + 4*B", "out": "[B, Hq, D]",
                "params": {"scale": None},
                "math": "out[b, h] = softmax(q[b, h] . k[b, :len_b, h // (Hq/Hkv)]^T * scale) @ v[b, :len_b, h // (Hq/Hkv)]"
                        "  (scale = 1/sqrt(D); fp32 math)"},
    },
}

PATTERNS = {
    "gemm": {
        "ops": list(OPS["gemm"]),
        "default_op": "matmul",
        "dtypes": ["bf16", "fp16"],
        "shapes_help": "MxNxK shapes separated by ';', e.g. '4096x4096x4096;8192x8192x8192'",
    },
    "decode_attention": {
        "ops": list(OPS["decode_attention"]),
        "default_op": "gqa",
        "dtypes": ["bf16", "fp16"],
        "shapes_help": "BxHqxHkvxSxD shapes separated by ';', each optionally '@L' (every length L) or '@mixed', "
                       "e.g. '32x32x8x4096x128;8x32x8x4096x128@mixed'",
    },
    "reduction": {
        "ops": list(OPS["reduction"]),
        "default_op": "softmax",
        "dtypes": ["bf16", "fp16", "fp32"],
        "shapes_help": "MxN shapes separated by ';', each optionally '@S' for a row stride S >= N, "
                       "e.g. '32768x8192;1000x4096@4160'",
    },
    "elementwise": {
        "ops": list(OPS["elementwise"]),
        "default_op": "silu_mul",
        "dtypes": ["bf16", "fp16", "fp32"],
        "shapes_help": "one or more 1-D or 2-D shapes separated by ';', dims joined by 'x', e.g. '268435456;8192x8192'",
    },
}

# Phase-1 semantics per pattern (workflow step 1.1), frozen into op.json and written into plans/v0_plan.md.
PHASE1 = {
    "gemm": {
        "inputs": "`a` [M, K] and `b` [N, K], both K-major (row-major with K contiguous), as nn.Linear stores "
                  "activations and weights; output `c` [M, N], row-major.",
        "shapes": "any M, N, K >= 1 with K a multiple of 16 bytes of elements (TMA row alignment); the cases below.",
        "precision": "inputs and output in the dtype; products accumulated in fp32 registers by the tensor cores; "
                     "one rounding on the store.",
        "masks": "none; no bias, no activation (fuse those in the epilogue in a later version).",
        "boundaries": "M or N not a multiple of the tile: TMA zero-fills out-of-range loads and clips "
                      "out-of-range stores, so partial tiles need no padding; K tails likewise.",
        "special": "no special values handling beyond IEEE: NaN/Inf propagate through the dot products.",
    },
    "decode_attention": {
        "inputs": "`q` [B, Hq, D]; `k_cache`, `v_cache` [B, S_max, Hkv, D] (contiguous, the usual KV-cache "
                  "layout); `seq_lens` [B] int32, 1 <= len <= S_max. Output `out` [B, Hq, D].",
        "shapes": "Hq a multiple of Hkv (GQA; MHA when equal, MQA when Hkv = 1); D in {64, 128, 256}; the cases below.",
        "precision": "inputs and output in the dtype; scores, the online softmax (running max and sum) and the "
                     "P.V accumulation in fp32.",
        "masks": "key positions >= seq_lens[b] are masked out (they hold stale data in a real cache, and large "
                 "values in the test inputs, so a leak fails); scale = 1/sqrt(D).",
        "boundaries": "seq_len 1, lengths that are not a multiple of the split size, mixed lengths in one batch, "
                      "and splits that receive no keys.",
        "special": "a fully masked split contributes nothing (its log-sum-exp is -inf); every sequence has >= 1 key.",
    },
    "reduction": {
        "inputs": "`x` [M, N], row-major with the last dim contiguous and any row stride >= N"
                  " (plus `weight` [N] for rmsnorm).",
        "shapes": "any M >= 1, N >= 1; the cases below, including N = 1, odd N, M = 1 and a padded row stride.",
        "precision": "inputs and output in the dtype; accumulation and all math in fp32; one rounding on the store.",
        "masks": "none; every op reduces over the last dim.",
        "boundaries": "N not a multiple of the 128-bit vector, rows whose start is not 16-byte aligned, "
                      "and very long rows (N >= 65536) that do not fit one CTA's registers.",
        "special": "softmax subtracts the row max, so large inputs do not overflow; NaN propagates as in torch "
                   "(a NaN in a row makes its max and its whole softmax row NaN).",
    },
    "elementwise": {
        "inputs": "each the same shape as the output; one output of that shape.",
        "shapes": "any contiguous 1-D or 2-D shape; the cases below. Non-contiguous inputs are refused (the kernel "
                  "views every tensor as 1-D of `numel` elements).",
        "precision": "inputs and output in the dtype; fp32 registers, one rounding on the store.",
        "masks": "none; all tensors have one shape (no broadcast).",
        "boundaries": "sizes that are not a multiple of the 128-bit vector or of the CTA tile are handled by "
                      "per-element predicates in the last CTA.",
        "special": "NaN propagates as in torch.",
    },
}

# Cells that are built: those with an entry in cells.py. Every other (pattern, framework) pair is refused by
# the pre-gen hook with "not available yet" rather than generated as a stub.
AVAILABLE_CELLS = set(CELLS)


class InputError(ValueError):
    """A bad template input. str() is the one-line message: the input, what is wrong, the fix."""


def resolve_op(pattern: str, op: str) -> str:
    """The op for a pattern: 'default' picks the pattern's default op."""
    return PATTERNS[pattern]["default_op"] if op in ("", "default") else op


def op_spec(pattern: str, op: str) -> dict:
    """An op's catalogue entry (inputs, math, formulas, params)."""
    return OPS[pattern][op]


def op_inputs(pattern: str, op: str) -> list[str]:
    """Parameter names of the op's reference and kernel, in order."""
    return OPS[pattern][op]["inputs"]


def op_formulas(pattern: str, op: str) -> dict:
    """FLOP and byte formulas in the case variable names (evaluated safely by compute_utilization)."""
    spec = OPS[pattern][op]
    flops_notes = {
        "elementwise": "arithmetic per output element, exp/erf/division counted as one each",
        "reduction": "one add (or max) per element; softmax ~5 and rmsnorm ~4 per element",
        "gemm": "one multiply-add (2 FLOP) per (m, n, k)",
        "decode_attention": "q.k and p.v: 2 FLOP each per (query head, key, d)",
    }
    bytes_notes = {
        "elementwise": f"{len(spec['inputs'])} input(s) read once + 1 output written once",
        "reduction": "x read once (plus weight for rmsnorm), the output written once: the minimum traffic",
        "gemm": "A, B read once and C written once: the compulsory traffic (re-reads served by L2 are not counted)",
        "decode_attention": "K and V read once for the real lengths (total_len = sum of seq_lens), q read and out "
                            "written once, seq_lens as int32",
    }
    return {"flops": spec["flops"], "bytes": spec["bytes"],
            "flops_note": flops_notes[pattern], "bytes_note": bytes_notes[pattern]}
