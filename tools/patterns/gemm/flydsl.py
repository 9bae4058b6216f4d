"""The gemm cell in FlyDSL: what patterns/gemm/flydsl/kernel.py promises, for op.json and the records."""

from tools.dsls.flydsl import NO_SCRATCH, PRIVATE_0

CELL = {
    "summary": "FlyDSL GEMM (CDNA3/CDNA4): 256-thread workgroups (2x2 waves of 64) on 256x128x64 tiles (64x64 when "
               "the big tiles make less than one wave), dwordx4 buffer loads prefetched one K tile ahead, an "
               "XOR-swizzled LDS stage, MFMA 16x16x16 (gfx942) / 16x16x32 (gfx950) with fp32 accumulators, 16-byte "
               "stores straight from registers",
    "semantics": "C[M, N] = A[M, K] . B[N, K]^T, bf16 or fp16 in and out, fp32 accumulation, any M, N >= 1 and K a "
                 "multiple of 8 (16-byte rows), contiguous and 16-byte aligned tensors under 2 GiB each.",
    "phase1": {
        "shapes": "any M, N >= 1 and K a multiple of 8 (16-byte rows for the dwordx4 buffer loads); the cases below.",
        "precision": "inputs and output in the dtype; products accumulated in fp32 registers by the MFMA matrix "
                     "cores; one rounding on the store.",
        "boundaries": "M, N or K not a multiple of the tile: a 16-byte chunk outside the matrix gets a buffer offset "
                      "past num_records, so its load returns 0 and its store is dropped (num_records alone bounds "
                      "the whole tensor, not a row); N % 8 != 0 uses masked 2-byte stores.",
    },
    "levers": [
        "Remove gfx942's LDS-write bubble and schedule the hot loop: direct-to-LDS loads (BufferLoadAsyncLDS on "
        "gfx950) or a 2-stage 256x128x32 layout in 48 KiB, and sched_group_barrier interleaving of ds_read / "
        "buffer_load / ds_write with the MFMAs; on gfx950 time Config(stages=2) (96 KiB) first.",
        "Split-K / stream-K for skinny M: 16-128 x 8192 x 8192 gives 128-256 workgroups for 304 CUs with one "
        "16 KiB K tile in flight each, far from 5.3 TB/s; the same for the 3.4-6.7-wave tails.",
        "Bigger tiles on gfx950: 256x256 once direct-to-LDS frees the prefetch VGPRs halves L2 and LDS bytes per "
        "FLOP; with CDNA4's doubled MFMA rate 256x128 is LDS/L2-bound on paper.",
    ],
    "isa_markers": {
        "required": [
            {"text": "v_mfma_f32_16x16x", "meaning": "MFMA matrix-core instructions (16x16x16 gfx942, 16x16x32 gfx950)"},
            {"text": "buffer_load_dwordx4", "meaning": "128-bit buffer loads of A and B"},
            {"text": "ds_write_b128", "meaning": "VGPR -> LDS staging of the K tile"},
            {"text": "ds_read_b128", "meaning": "LDS -> MFMA operand registers"},
            {"text": "s_barrier", "meaning": "workgroup barrier before LDS reuse"},
            PRIVATE_0,
        ],
        "forbidden": NO_SCRATCH,
    },
    "framework_facts": [
        "The MFMA shape is a trace-time choice from the target: gfx942's mfma_f32_16x16x16bf16_1k takes <4 x i16> "
        "(bitcast the bf16 vector), gfx950's 16x16x32_bf16 takes <8 x bf16>; in compile-only the target comes "
        "from FLYDSL_GPU_ARCH.",
        "fx.gpu.barrier() emits s_waitcnt lgkmcnt(0); s_barrier, which is what makes LDS writes visible to the "
        "other waves.",
    ],
    "pitfalls": [
        {"pitfall": "num_records bounds the whole tensor, so a K tail or an N edge inside it reads the next row",
         "fix": "redirect the whole offset of an out-of-matrix chunk to 0x80000000 (past num_records): the load "
                "returns 0, the store is dropped", "source": "kernel.py; buffer OOB semantics"},
        {"pitfall": "`for ... in range(...)` in a kernel body (or a helper it calls) becomes a dynamic scf.for, and "
                    "indexing a Python list with its variable fails ('list indices must be integers ... not "
                    "ArithValue')", "fix": "fx.range_constexpr for trace-time loops",
         "source": "FlyDSL 0.4.2 AST rewriter"},
        {"pitfall": "fx.rocdl.raw_ptr_buffer_load accepts DSL values but raw_ptr_buffer_store is the raw builder",
         "fix": "wrap the store's operands with fx.as_ir_value", "source": "FlyDSL 0.4.2 API"},
        {"pitfall": "256x256 tiles: 472 VGPRs on gfx942, 510 + 13 spilled on gfx950",
         "fix": "256x128 tiles (264-280 VGPRs, no spills)", "source": "benchmarks/flydsl_compile.md"},
    ],
}
