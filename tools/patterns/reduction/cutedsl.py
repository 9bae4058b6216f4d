"""The reduction cell in CuTe DSL: what patterns/reduction/cutedsl/kernel.py promises, for op.json and the records."""

from tools.dsls.cutedsl import NO_LOCAL

CELL = {
    "summary": "CuTe DSL row reduction: a power-of-two group of threads per row, 128-bit loads, fp32 in-thread "
               "reduction, warp butterfly shuffles, one shared-memory step across warps; rows stay in registers up "
               "to 32768 elements (softmax/rmsnorm read HBM once), a looped two-pass path beyond",
    "semantics": "Any M, N >= 1 and any row stride >= N (the row start need not be 16-byte aligned: the vector "
                 "width drops to what the stride and offsets allow). sum, mean and max return [M]; softmax and "
                 "rmsnorm return [M, N]. NaN propagates as in torch: a row holding a NaN has a NaN max and a NaN "
                 "softmax row (every max is the NaN-propagating `max.NaN.f32`).",
    "ncu_kernel": "row_kernel|looped_kernel",
    "levers": [
        "Small M with long rows (8 x 131072 reaches ~5% of the copy bandwidth on 8 of 132 SMs): split each row "
        "over a cluster of CTAs and combine the partials through distributed shared memory, so every SM works.",
        "Mid-size shapes (4096 x 4096-8192 reach 47-83% of the copy): more rows per CTA or a persistent grid to "
        "hide the ramp-up and the single barrier per reduction, and TMA bulk loads to put more bytes in flight "
        "per thread.",
        "Fuse the neighbours: rmsnorm with the residual add before it and the quantisation after it, softmax "
        "with the scaling and masking in front of it; each fusion removes a full read and write of x.",
    ],
    "isa_markers": {
        "required": [
            {"text": "ld.global.v4", "meaning": "128-bit global loads of the row"},
            {"text": "shfl.sync.bfly", "meaning": "warp butterfly reduction"},
        ],
        "forbidden": [NO_LOCAL],
    },
    "framework_facts": [
        "The vector width is a compile-time choice: kernel.py compiles one variant per (op, dtype, vector width, "
        "threads per row) and picks the widest width dividing N, the row stride and every tensor's element offset.",
        "A Constexpr flag drops the per-vector predicates when the vectors exactly fill the row (N = 4096, 8192, "
        "...), so the loads issue back to back.",
    ],
    "pitfalls": [
        {"pitfall": "cute.arch.fmax drops NaN (max.f32): a NaN kept by one thread vanished in the warp butterfly, so "
                    "max returned the row's largest number where torch.amax returns NaN",
         "fix": "cute.arch.fmax(a, b, nan=True) (max.NaN.f32) in the butterfly, the cross-warp step and the looped "
                "path; same speed on the H200 (max 4158 GB/s, softmax 4076 GB/s)",
         "source": "benchmarks/bench_reduction.py NaN/-inf check on the H200: 102/102"},
        {"pitfall": "the looped path's online softmax rescaled by exp2(acc - new_max): a thread whose first slices "
                    "were all -inf (a masked prefix) got -inf - -inf = NaN, and the whole row came out NaN",
         "fix": "shift by 0 while the running max is still -inf (its terms are exp2(-inf) = 0)",
         "source": "benchmarks/2026-12-01-h200-reduction-masked-prefix.md: NaN/-inf check 102/102 (old kernel 78/102)"},
        {"pitfall": "16 fp32 values per thread cost rmsnorm 17% at 32768 x 8192 bf16 (3370 vs 4068 GB/s)",
         "fix": "32 values per thread: within 2% of the best setting for sum, softmax and rmsnorm",
         "source": "benchmarks/bench_reduction.py --sweep on the H200"},
        {"pitfall": "an N that is not a multiple of 8 (bf16) or a padded stride like 1003 breaks 128-bit alignment",
         "fix": "pick the vector width per call from N, the row stride and the data pointers; scalar loads stay "
                "coalesced across threads", "source": "kernel.py _pick_vec"},
    ],
}
