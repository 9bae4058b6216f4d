"""The decode_attention cell in FlyDSL: what patterns/decode_attention/flydsl/kernel.py promises, for op.json and the records."""

from tools.dsls.flydsl import NO_SCRATCH, PRIVATE_0

CELL = {
    "summary": "FlyDSL flash-decoding (CDNA3/CDNA4): one 64-lane wave per (sequence, KV head, split) for up to 16 "
               "query heads, q.K^T and P.V both on MFMA (heads padded to 16), online softmax in fp32 base 2, K/V "
               "straight from HBM into MFMA operands through per-sequence buffer descriptors (rows past len_b read "
               "0), two register sets ping-pong; then a log-sum-exp merge kernel",
    "semantics": "q [B, Hq, D], k_cache/v_cache [B, S_max, Hkv, D] contiguous, seq_lens [B] int32 with 1 <= len <= "
                 "S_max (read on the GPU, no host sync); Hq a multiple of Hkv (MHA, GQA, MQA), D in {64, 128, 256}, "
                 "bf16/fp16, fp32 math; cache slots past len_b are never read. One sequence's K (or V) must stay "
                 "under 2 GiB (32-bit buffer offsets); the whole cache may be larger.",
    "phase1": {
        "boundaries": "seq_len 1, lengths that are not a multiple of the 16-key tile or the split size, mixed "
                      "lengths in one batch, and splits that receive no keys; K/V rows past len_b read as 0 "
                      "through a per-sequence buffer descriptor and their scores are -inf.",
    },
    "levers": [
        "Time it on an MI300X/MI355X, then sweep the sizing knobs: WAVES_PER_CU {4, 8, 12}, MIN_SPLIT_KEYS {128, "
        "256, 512} and the prefetch depth (a third register set, or gfx950's buffer-load-to-LDS path to keep "
        "more bytes in flight without VGPRs); all sizing is on paper with an assumed ~1 us loaded latency.",
        "Fuse or skip the merge: the last-arriving wave per (b, head chunk) merges through an atomic counter, or "
        "single-split sequences write out directly; with no PDL the second launch's gap is exposed, which "
        "matters for short and mixed batches.",
        "Read fewer bytes: an fp8 KV cache halves the traffic of this memory-bound kernel; non-temporal K/V "
        "loads keep the stream from evicting q and the partials from L2 / Infinity Cache.",
    ],
    "isa_markers": {
        "required": [
            {"text": "v_mfma_f32_16x16x16_", "meaning": "MFMA matrix cores (P.V on 16x16x16 on both targets; q.K^T "
                                                       "on 16x16x32 on gfx950)"},
            {"text": "buffer_load_dwordx4", "meaning": "128-bit buffer loads of K, q and the partials"},
            {"text": "buffer_store_dwordx4", "meaning": "128-bit stores of the fp32 partials"},
            {"text": "v_exp_f32", "meaning": "hardware exp2 in the online softmax"},
            PRIVATE_0,
            {"text": ".group_segment_fixed_size: 0", "meaning": "no LDS, by design (one wave per workgroup)"},
        ],
        "forbidden": [*NO_SCRATCH,
                      {"text": "v_div_scale", "meaning": "an IEEE division sequence: the fast reciprocal was lost"}],
    },
    "framework_facts": [
        "A per-sequence buffer descriptor (add_offset + make_buffer_ptr, num_records = len_b rows) turns every "
        "K/V row past len_b into zeros in hardware, so a NaN in a stale cache slot cannot reach the accumulator.",
        "gfx942's mfma_f32_16x16x16bf16_1k takes <4 x i16> (bitcast the bf16 vector); gfx950's 16x16x32_bf16 "
        "takes <8 x bf16>; the f16 forms take f16 vectors.",
    ],
    "pitfalls": [
        {"pitfall": "1.0/x and log2 compile to the IEEE v_div_scale/fmas/fixup and a denormal-scaling sequence",
         "fix": "fx.fastmath('afn') (v_rcp_f32, v_log_f32; exp2 with fastmath='afn' is a bare v_exp_f32); not "
                "'fast', whose no-infinities flag would let LLVM drop the -inf mask", "source": "FlyDSL 0.4.2 ISA"},
        {"pitfall": "prefetched registers carried across loop iterations became v_mov copies at the back edge, each "
                    "behind an s_waitcnt on the load it was meant to overlap",
         "fix": "two register sets (A/B ping-pong) with only A carried", "source": "FlyDSL 0.4.2 ISA"},
        {"pitfall": "rocdl.sched_barrier(0) did not stop MFMAs moving across it (a vmcnt(0) landed mid-iteration)",
         "fix": "put the second tile's half in a uniform `if` (which also skips a tile past the split end)",
         "source": "FlyDSL 0.4.2 / LLVM scheduling, seen in the ISA"},
        {"pitfall": "a vector<1xi32> buffer load fails in LLVM ('Do not know how to scalarize the result')",
         "fix": "a scalar f32/i32 result type", "source": "FlyDSL 0.4.2 compile error"},
    ],
}
