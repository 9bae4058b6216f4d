"""The decode_attention cell in CuTe DSL: what patterns/decode_attention/cutedsl/kernel.py promises, for op.json and the records."""

from tools.dsls.cutedsl import NO_LOCAL

CELL = {
    "summary": "CuTe DSL flash-decoding: the sequence split across CTAs (splits sized from B*Hkv and the 132 SMs), "
               "each CTA handles a GQA group so K/V are read once, online softmax in fp32, K/V streamed through a "
               "16-byte cp.async shared-memory pipeline; CUDA-core dot products for G <= 7, mma.sync tensor cores "
               "for G >= 8 and MQA; then a log-sum-exp merge kernel",
    "semantics": "Variable lengths per sequence (1 <= seq_lens[b] <= S_max); cache slots past a length are never "
                 "read (the test inputs fill them with large values, so a leak fails). D = 64, 128 or 256.",
    "ncu_kernel": "split|merge",
    "levers": [
        "Small groups on tensor cores too: G <= 7 still uses CUDA-core FMAs and shuffles (the headline G = 4 case is "
        "0.88x torch SDPA at 82% of the copy bandwidth); an mma path with 16-row padding wastes more than half the "
        "tile there, so try keys as the M dimension with a register transpose of P.",
        "TMA for K/V: one thread issues a bulk tensor copy per tile, freeing the other threads' issue slots, with an "
        "mbarrier pipeline in place of per-thread cp.async groups; and fewer, larger splits for MQA, whose fp32 "
        "partials add ~12% to its traffic.",
        "Paged KV cache and quantised K/V: serving stacks store K/V in pages and often in fp8; reading fp8 halves "
        "the bytes of this memory-bound kernel.",
    ],
    "isa_markers": {
        "required": [
            {"text": "cp.async.cg.shared.global", "meaning": "16-byte asynchronous K/V loads into shared memory"},
            {"text": "shfl.sync.bfly", "meaning": "butterfly shuffles for the scores and reductions"},
        ],
        "forbidden": [NO_LOCAL],
    },
    "framework_facts": [
        "The grid is sized from S_max, not from seq_lens, so no host sync reads the lengths; CTAs of splits past "
        "a sequence's length exit at once.",
        "cp.async.wait_group orders only the calling thread's copies: a thread (or warp, with bar.warp.sync) that "
        "reads back only the slots it copied itself needs no CTA barrier.",
        "With the query heads as the M dimension of mma.sync, the fp32 accumulator fragment of S = Q.K^T has the "
        "layout of the A operand of P.V: P is converted in registers and never goes through shared memory.",
    ],
    "pitfalls": [
        {"pitfall": "plain 128-bit loads into registers with no prefetch reached 64% of the copy bandwidth "
                    "(197 us on B32 Hq32 Hkv8 S4096 bf16)",
         "fix": "a cp.async shared-memory pipeline: 164 us with 3 stages",
         "source": "benchmarks/2026-11-30-h200-decode-attention.md"},
        {"pitfall": "one 128-bit slice per thread put 16 threads on a D = 128 key: 4 shuffle steps per score kept "
                    "the headline at 0.82-0.84x torch SDPA",
         "fix": "two slices per thread (8 threads per key, 3 steps), 4 stages, 5 splits: 154 us, 0.876x",
         "source": "benchmarks/2026-11-30-h200-decode-attention.md"},
        {"pitfall": "CUDA-core FMAs + shuffles are compute-bound for large groups: G = 8 reached 0.46x and MQA 0.29x "
                    "of torch SDPA",
         "fix": "mma.sync m16n8k16 with the heads padded to 16 rows for G >= 8: G = 8 0.968x, MQA 0.84x",
         "source": "benchmarks/2026-11-30-h200-decode-attention.md"},
        {"pitfall": "keeping the 32-row MQA q tile in registers made ptxas spill (255 registers, 60 bytes of spill "
                    "stores)",
         "fix": "re-read q from shared memory each step: 246-254 registers, no spill",
         "source": "ptxas -v on the sm_90a PTX"},
    ],
}
