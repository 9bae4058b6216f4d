"""The kbaseline catalogue: which GPUs, patterns, ops, dtypes and shapes exist, and which cells are built.

Template-side single source of truth. The pre-gen hook validates against it, the post-gen hook turns it
into the workspace's ``op.json``, and the Jinja extension derives the private cookiecutter keys
(arch, target, framework) from it. A generated workspace never imports this module: everything it
needs is frozen into ``op.json``.

A *cell* is one (pattern, framework) pair, e.g. ``elementwise × cutedsl``. Its kernel lives at
``{{cookiecutter.op_name}}/cells/<framework>/<pattern>/kernel.py`` in the template repo.
"""

from __future__ import annotations

import re

GPUS = {
    # name: vendor, architecture family, compile target, DSL
    "H200": {"vendor": "nvidia", "arch": "hopper", "target": "sm_90a", "framework": "cutedsl"},
    "H100": {"vendor": "nvidia", "arch": "hopper", "target": "sm_90a", "framework": "cutedsl"},
    "H20": {"vendor": "nvidia", "arch": "hopper", "target": "sm_90a", "framework": "cutedsl"},
    "MI300X": {"vendor": "amd", "arch": "cdna3", "target": "gfx942", "framework": "flydsl"},
    "MI308X": {"vendor": "amd", "arch": "cdna3", "target": "gfx942", "framework": "flydsl"},
    "MI355X": {"vendor": "amd", "arch": "cdna4", "target": "gfx950", "framework": "flydsl"},
}

DTYPES = {
    # name: torch dtype name, bytes per element, default rel_err tolerance
    "bf16": {"torch": "bfloat16", "bytes": 2, "tolerance": 1e-2},
    "fp16": {"torch": "float16", "bytes": 2, "tolerance": 1e-2},
    "fp32": {"torch": "float32", "bytes": 4, "tolerance": 1e-5},
    "fp8": {"torch": "float8_e4m3fn", "bytes": 1, "tolerance": 5e-2},
}

# Elementwise ops. `inputs` are the parameter names the reference and kernel take, in order;
# `flops` counts arithmetic per output element (exp/erf/div counted as one each).
ELEMENTWISE_OPS = {
    "add": {"inputs": ["x", "y"], "flops": 1, "math": "out = x + y"},
    "mul": {"inputs": ["x", "y"], "flops": 1, "math": "out = x * y"},
    "silu": {"inputs": ["x"], "flops": 4, "math": "out = x / (1 + exp(-x))"},
    "gelu": {"inputs": ["x"], "flops": 5, "math": "out = 0.5 * x * (1 + erf(x / sqrt(2)))  (exact erf form, torch's default)"},
    "relu": {"inputs": ["x"], "flops": 1, "math": "out = max(x, 0)  (NaN propagates, as in torch)"},
    "silu_mul": {"inputs": ["x", "y"], "flops": 5, "math": "out = silu(x) * y  (SwiGLU gate: x = gate, y = up)"},
}

PATTERNS = {
    "elementwise": {
        "ops": list(ELEMENTWISE_OPS),
        "default_op": "silu_mul",
        "dtypes": ["bf16", "fp16", "fp32"],
        "shapes_help": "one or more 1-D or 2-D shapes separated by ';', dims joined by 'x', e.g. '268435456;8192x8192'",
    },
    "reduction": {
        "ops": ["sum", "mean", "max", "softmax", "rmsnorm"],
        "default_op": "softmax",
        "dtypes": ["bf16", "fp16", "fp32"],
        "shapes_help": "MxN shapes separated by ';', e.g. '32768x8192;4096x4096'",
    },
    "gemm": {
        "ops": ["matmul"],
        "default_op": "matmul",
        "dtypes": ["bf16", "fp16", "fp8"],
        "shapes_help": "MxNxK shapes separated by ';', e.g. '4096x4096x4096;8192x8192x8192'",
    },
    "decode_attention": {
        "ops": ["gqa"],
        "default_op": "gqa",
        "dtypes": ["bf16", "fp16"],
        "shapes_help": "BxHqxHkvxSxD shapes separated by ';', e.g. '32x32x8x4096x128'",
    },
}

# Cells that are built. Every other (pattern, framework) pair is refused by the pre-gen hook with
# "not available yet" rather than generated as a stub.
AVAILABLE_CELLS = {("elementwise", "cutedsl")}

# Shapes used when the user gives none. Representative cases are timed; boundary cases check
# predication and odd sizes (not multiples of the 128-bit vector or of the CTA tile) and are not timed.
DEFAULT_SHAPES = {
    "elementwise": {
        "representative": ["268435456", "8192x8192", "4096x14336"],
        "boundary": ["1", "7", "1000x1001", "12345679", "3x16385"],
    },
}

_DIM = re.compile(r"^[1-9][0-9]*$")
MAX_ELEMENTWISE_NUMEL = 2**31 - 2**20  # int32 indexing in the kernel, with one CTA tile of headroom


class InputError(ValueError):
    """A bad template input. str() is the one-line message: the input, what is wrong, the fix."""


def resolve_op(pattern: str, op: str) -> str:
    """The op for a pattern: 'default' picks the pattern's default op."""
    return PATTERNS[pattern]["default_op"] if op in ("", "default") else op


def parse_elementwise_shapes(text: str) -> list[list[int]]:
    """Parse '268435456;8192x8192' into [[268435456], [8192, 8192]]."""
    shapes = []
    for item in (s.strip() for s in text.split(";")):
        if not item:
            continue
        dims = item.lower().split("x")
        if len(dims) > 2 or not all(_DIM.match(d) for d in dims):
            raise InputError(
                f"shapes: '{item}' is not a 1-D or 2-D shape; use positive integers joined by 'x', "
                f"e.g. '268435456;8192x8192'"
            )
        shape = [int(d) for d in dims]
        numel = 1
        for d in shape:
            numel *= d
        if numel > MAX_ELEMENTWISE_NUMEL:
            raise InputError(
                f"shapes: '{item}' has {numel} elements, above the kernel's int32 limit of "
                f"{MAX_ELEMENTWISE_NUMEL}; split the tensor or use smaller shapes"
            )
        shapes.append(shape)
    if not shapes:
        raise InputError("shapes: no shape given; leave it empty for the built-in set, or e.g. '8192x8192'")
    return shapes


SHAPE_PARSERS = {"elementwise": parse_elementwise_shapes}


def elementwise_case(shape: list[int], role: str, dtype: str) -> dict:
    """One op.json case: its dims, the names formulas may use, and whether it is timed."""
    numel = 1
    for d in shape:
        numel *= d
    names = {"numel": numel, "elem_bytes": DTYPES[dtype]["bytes"]}
    names.update({"N": shape[0]} if len(shape) == 1 else {"M": shape[0], "N": shape[1]})
    return {
        "name": f"{role[:3]}_{'x'.join(map(str, shape))}",
        "role": role,
        "dims": shape,
        "vars": names,
        "timed": role == "representative",
    }


def build_cases(pattern: str, dtype: str, shapes_text: str) -> list[dict]:
    """Representative cases (the user's shapes, or the built-in set) plus the built-in boundary cases."""
    parse = SHAPE_PARSERS[pattern]
    defaults = DEFAULT_SHAPES[pattern]
    rep = parse(shapes_text) if shapes_text.strip() else parse(";".join(defaults["representative"]))
    cases = [elementwise_case(s, "representative", dtype) for s in rep]
    cases += [elementwise_case(s, "boundary", dtype) for s in parse(";".join(defaults["boundary"]))]
    seen, unique = set(), []
    for c in cases:
        if c["name"] not in seen:
            seen.add(c["name"])
            unique.append(c)
    return unique


def op_inputs(pattern: str, op: str) -> list[str]:
    """Parameter names of the op's reference and kernel, in order."""
    return ELEMENTWISE_OPS[op]["inputs"]


def op_formulas(pattern: str, op: str) -> dict:
    """FLOP and byte formulas, written in the case variable names (evaluated safely by compute_utilization)."""
    spec = ELEMENTWISE_OPS[op]
    n_tensors = len(spec["inputs"]) + 1
    return {
        "flops": f"{spec['flops']}*numel",
        "bytes": f"{n_tensors}*numel*elem_bytes",
        "flops_note": f"{spec['flops']} FLOP per element ({spec['math']})",
        "bytes_note": f"{len(spec['inputs'])} input(s) read once + 1 output written once",
    }


# What each built cell promises, frozen into op.json: the markers its compiled ISA must show, the
# framework facts the kernel depends on, and the pitfalls met while writing it (they seed memory/v0.json).
CELLS = {
    ("elementwise", "cutedsl"): {
        "summary": "CuTe DSL elementwise kernel: 1-D view, 128-thread CTAs, 2 (8 for add/mul) 128-bit accesses per "
                   "thread per tensor, fp32 math, predicated tail CTA",
        "isa_markers": {
            "required": [
                {"text": "ld.global.v4", "meaning": "128-bit global loads (fast path)"},
                {"text": "st.global.v4", "meaning": "128-bit global stores (fast path)"},
            ],
            "forbidden": [
                {"text": ".local", "meaning": "local memory: register spills or a stack array"},
            ],
        },
        "framework_facts": [
            "CUTE_DSL_ARCH=sm_90a must be set before `import cutlass`; unset, CuTe DSL 4.8.1 targets sm_100a.",
            "`cute.compile` does not cache: kernel.py keeps a dict keyed by (op, dtype).",
            "A copy atom built with `num_bits_per_copy=128` over a contiguous VEC-element mode lowers to "
            "ld.global.v4 / st.global.v4 when the pointer is declared 16-byte aligned (`assumed_align=16`).",
            "`cute.copy(..., pred=...)` takes one predicate per atom, not per element: per-element guards in the "
            "tail use explicit element loads under `if pred[i]`.",
            "Values captured by a helper called inside a dynamic `if` must be passed as arguments "
            "(SCOPE_CLOSURE_CAPTURE).",
            "Compile-only needs no GPU: raw pointers from `make_ptr` with a placeholder address and "
            "`make_fake_stream()`; `options='--keep-ptx'` keeps the PTX, written only into an existing "
            "CUTE_DSL_DUMP_DIR (then `compiled.artifacts.PTX` is that file's path, otherwise the text).",
        ],
        "pitfalls": [
            {"pitfall": "cute.copy with a per-element predicate tensor failed IR verification "
                        "('expects pred to have compatible shape with (4,(1))')",
             "fix": "Unpredicated 128-bit copies for full tiles; explicit guarded element loads in the tail CTA",
             "source": "CuTe DSL 4.8.1 compiler error"},
            {"pitfall": "a nested helper closing over bidx inside a dynamic if: SCOPE_CLOSURE_CAPTURE",
             "fix": "module-level helper taking bidx/tidx as arguments", "source": "CuTe DSL 4.8.1 compiler error"},
            {"pitfall": "CUTE_DSL_KEEP/CUTE_DSL_DUMP_DIR set after `import cutlass` did not dump PTX, and a dump dir "
                        "that does not exist yet gets no file",
             "fix": "set CUTE_DSL_DUMP_DIR before the import, create it, compile with options='--keep-ptx'",
             "source": "CuTe DSL 4.8.1 behaviour"},
            {"pitfall": "silu with an IEEE fp32 division (div.rn.f32) ran at 0.97x torch eager on the H200: "
                        "compute-bound on the division sequence",
             "fix": "x * rcp.approx.ftz(1 + exp(-x)): 1.07x torch, 99% of the measured copy bandwidth",
             "source": "benchmarks/2026-11-30-h200-elementwise.md"},
        ],
    },
}
