"""The elementwise cell in FlyDSL: what patterns/elementwise/flydsl/kernel.py promises, for op.json and the records."""

from tools.dsls.flydsl import NO_SCRATCH, PRIVATE_0

CELL = {
    "summary": "FlyDSL elementwise kernel (CDNA3/CDNA4): 1-D view, 256-thread workgroups (4 waves of 64), 2 (4 for "
               "add/mul) 128-bit buffer accesses per lane per tensor, fp32 math, the tail bounded by the buffer "
               "descriptor's num_records",
    "semantics": "Any contiguous 1-D or 2-D shape under 2 GiB per tensor (buffer offsets are 32-bit), one shape for "
                 "all tensors; the math runs in fp32 registers with one rounding on the store.",
    "phase1": {"boundaries": "sizes that are not a multiple of the 128-bit vector or of the workgroup tile: the last "
                             "workgroup uses one-element buffer accesses bounded by the descriptor's num_records "
                             "(out-of-range loads read 0, stores are dropped), no per-lane predicates."},
    "levers": [
        "Time it on the GPU first: UNROLL and the workgroup size were sized from bandwidth x latency on paper "
        "(the ~1 us loaded latency is an assumption); sweep UNROLL {1, 2, 4, 8} x {128, 256, 512} threads.",
        "Fuse it into its producer's epilogue (e.g. silu·mul into the gate/up GEMM): the op moves bytes and does "
        "almost no math, so not existing on its own is the biggest win.",
        "Non-temporal stores (`nt` / `sc1` bits on the buffer store) for stream-once outputs keep them from "
        "evicting data other kernels reuse from the MI300's Infinity Cache.",
    ],
    "isa_markers": {
        "required": [
            {"text": "buffer_load_dwordx4", "meaning": "128-bit buffer loads (fast path)"},
            {"text": "buffer_store_dwordx4", "meaning": "128-bit buffer stores (fast path)"},
            PRIVATE_0,
        ],
        "forbidden": NO_SCRATCH,
    },
    "framework_facts": [],
    "pitfalls": [
        {"pitfall": "make_layout_tv on a 1-D layout returns a 2-D tiler and the partition aborts "
                    "('Mismatched ranks')",
         "fix": "pass the layout (THREADS, VEC):(VEC, 1) and the tile (THREADS*VEC,) to make_tiled_copy directly",
         "source": "FlyDSL 0.4.2 behaviour"},
        {"pitfall": "gelu's erf comes from the ROCm math library and fails to link without rocm-device-libs",
         "fix": "apt-get install rocm-device-libs (tools/rocm_env.py points ROCM_PATH/amdgcn at it)",
         "source": "FlyDSL 0.4.2 compile error"},
    ],
}
