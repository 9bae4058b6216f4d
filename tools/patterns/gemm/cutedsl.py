"""The gemm cell in CuTe DSL: what patterns/gemm/cutedsl/kernel.py promises, for op.json and the records."""

from tools.dsls.cutedsl import NO_LOCAL

CELL = {
    "summary": "CuTe DSL Hopper GEMM: 128x256x64 tiles on a persistent grid of 2x1 clusters (B multicast), a "
               "TMA producer warpgroup feeding a 4-stage mbarrier pipeline, two consumer warpgroups issuing "
               "wgmma m64n256k16 with fp32 accumulators, stmatrix + TMA-store epilogue; 64-row tiles for skinny M",
    "semantics": "M and N may be anything >= 1 (tiles that stick out are zero-filled by TMA on the way in and "
                 "clipped on the way out); K must give 16-byte rows (a multiple of 8 bf16/fp16 elements). When "
                 "N*2 bytes is not a multiple of 16, a second compiled variant stores C with predicated st.global.",
    "ncu_kernel": "gemm",
    "isa_targets": {"tma": True},  # Hopper feeds wgmma from shared memory loaded by the TMA engine
    "levers": [
        "Ping-pong consumers: let the two consumer warpgroups work on different tiles so one's epilogue hides "
        "under the other's MMAs (the current epilogue stalls the tensor cores at the end of every tile).",
        "Stream-K or split-K: 4096 x 14336 x 4096 is 3.9 waves of tiles, so the last wave runs part-empty "
        "(0.97x cuBLAS); skinny M = 16 wastes 48 of 64 tile rows and is 0.85x; splitting K fills the SMs.",
        "Fuse the epilogue: bias, activation (silu·mul for a gate/up projection) and fp8 output quantisation "
        "cost nothing inside the GEMM and a full memory round trip outside it.",
    ],
    "isa_markers": {
        "required": [
            {"text": "wgmma.mma_async", "meaning": "warpgroup MMA on the tensor cores"},
            {"text": "cp.async.bulk.tensor", "meaning": "TMA loads and stores of whole tiles"},
            {"text": "setmaxnreg", "meaning": "register reallocation between producer and consumer warpgroups"},
        ],
        "forbidden": [NO_LOCAL],
    },
    "framework_facts": [
        "CUTLASS's Hopper dense_gemm example rejects bf16 in its dtype check; nothing in the TMA/WGMMA path needs "
        "that restriction, and this kernel takes bf16 and fp16.",
        "A TMA store issued without `elect_one` is issued by all 32 lanes of the warp: the PTX showed every C tile "
        "written 32 times until the store was put under an elected lane.",
    ],
    "pitfalls": [
        {"pitfall": "the TMA store of C was issued by all 32 lanes (visible in the PTX), writing each tile 32 times",
         "fix": "issue it from one elected lane after a named barrier per subtile",
         "source": "PTX inspection while writing kernel.py"},
        {"pitfall": "N*2 bytes not a multiple of 16 (N = 4097) breaks the TMA descriptor of C",
         "fix": "a second compiled variant with predicated st.global stores for such N",
         "source": "boundary case 4095x4097x4096"},
    ],
}
