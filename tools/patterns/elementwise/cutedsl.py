"""The elementwise cell in CuTe DSL: what patterns/elementwise/cutedsl/kernel.py promises, for op.json and the records."""

from tools.dsls.cutedsl import NO_LOCAL

CELL = {
    "semantics": "Any contiguous 1-D or 2-D shape, one shape for all tensors; the math runs in fp32 registers "
                 "with one rounding on the store.",
    "ncu_kernel": "elementwise",
    "levers": [
        "Fuse: the biggest win for an elementwise op is not to exist on its own. Fold it into the producer's "
        "epilogue (e.g. silu·mul into the GEMM that makes the gate and up projections).",
        "Cache hints: stream-once data can use evict-first loads and streaming stores so it does not evict data "
        "another kernel reuses from L2 (measure: on the H200 they did not help the kernel alone).",
        "Launch shape: for small tensors launch overhead, not bandwidth, sets the time; a persistent grid or "
        "CUDA graphs remove the launch tail.",
    ],
    "summary": "CuTe DSL elementwise kernel: 1-D view, 128-thread CTAs, 2 (8 for add/mul) 128-bit accesses per "
               "thread per tensor, fp32 math, predicated tail CTA",
    "isa_markers": {
        "required": [
            {"text": "ld.global.v4", "meaning": "128-bit global loads (fast path)"},
            {"text": "st.global.v4", "meaning": "128-bit global stores (fast path)"},
        ],
        "forbidden": [
            NO_LOCAL,
        ],
    },
    "framework_facts": [
        "A copy atom built with `num_bits_per_copy=128` over a contiguous VEC-element mode lowers to "
        "ld.global.v4 / st.global.v4 when the pointer is declared 16-byte aligned (`assumed_align=16`).",
        "`cute.copy(..., pred=...)` takes one predicate per atom, not per element: per-element guards in the "
        "tail use explicit element loads under `if pred[i]`.",
        "Values captured by a helper called inside a dynamic `if` must be passed as arguments "
        "(SCOPE_CLOSURE_CAPTURE).",
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
}
