"""What each built cell promises and teaches, frozen into op.json and the workspace README.

Template-side. A *cell* is one (pattern, framework) pair; an entry here switches it on (catalog.AVAILABLE_CELLS).
Each entry holds:

- ``summary``: one line for the plan and the report;
- ``semantics``, ``design``, ``levers``, ``ncu_kernel``: the workspace README's teaching text (what the op
  accepts, why the kernel is shaped as it is, the next three optimization levers, the kernel-name regex for ncu);
- ``isa_markers``: what the compiled ISA must (``required``) and must not (``forbidden``) contain, checked by
  ``test_kernel.py --compile-only`` on a machine without the GPU;
- ``framework_facts`` and ``pitfalls``: what the kernel relies on and what went wrong while writing it
  (they seed the plan and memory/v0.json);
- ``phase1`` (optional): the Phase-1 semantics lines (catalog.PHASE1) this framework's kernel states differently,
  e.g. how a FlyDSL kernel handles boundaries with buffer descriptors where a CuTe DSL one uses TMA.
"""

from __future__ import annotations

# Facts every CuTe DSL cell relies on.
CUTEDSL_FACTS = [
    "CUTE_DSL_ARCH=sm_90a must be set before `import cutlass`; unset, CuTe DSL 4.8.1 targets sm_100a.",
    "`cute.compile` does not cache: kernel.py keeps its own dict of compiled kernels.",
    "Compile-only needs no GPU: placeholder pointers (`make_ptr`) or fake tensors (`make_fake_compact_tensor`) and "
    "`make_fake_stream()`; `options='--keep-ptx'` keeps the PTX, written only into an existing CUTE_DSL_DUMP_DIR "
    "(then `compiled.artifacts.PTX` is that file's path, otherwise the text).",
]

# Facts every FlyDSL cell relies on.
FLYDSL_FACTS = [
    "Compile-only needs COMPILE_ONLY=1 ARCH=<gfx> FLYDSL_GPU_ARCH=<gfx> and a ROCM_PATH with llvm/bin/ld.lld "
    "(LLD >= 19) and amdgcn/bitcode; tools/rocm_env.py builds one from Debian lld-19 + rocm-device-libs. Without "
    "COMPILE_ONLY, FlyDSL aborts the process when there is no HIP runtime.",
    "FlyDSL and CuTe DSL cannot be loaded into one process (nanobind duplicate-type abort): compile FlyDSL in a "
    "child process (tools/rocm_env.compile_isa).",
    "fx.rocdl.make_buffer_tensor(t, max_size=False) sets num_records = the tensor's bytes; out-of-range buffer "
    "loads read 0 and stores are dropped, checked per dword. The bound is the whole tensor: a row edge inside "
    "the tensor is not out of range.",
]
NO_SCRATCH = [{"text": "scratch_", "meaning": "scratch loads/stores: register spills"}]
PRIVATE_0 = {"text": ".private_segment_fixed_size: 0", "meaning": "no scratch memory per lane"}

NO_LOCAL = {"text": ".local", "meaning": "local memory: register spills or a stack array"}

CELLS = {
    ("elementwise", "cutedsl"): {
        "semantics": "Any contiguous 1-D or 2-D shape, one shape for all tensors; the math runs in fp32 registers "
                     "with one rounding on the store.",
        "design": "The tensor is viewed as 1-D. Each CTA of 128 threads owns a tile of 128 x VEC x UNROLL elements "
                  "(VEC = 8 for 16-bit types, 4 for fp32; UNROLL per op in `kernel.py`), and each thread moves UNROLL "
                  "128-bit vectors per tensor with `ld.global.v4`/`st.global.v4`, enough bytes in flight per SM to "
                  "cover HBM latency. The math is fp32; only the last CTA uses per-element predicates. There is no "
                  "shared memory because nothing is reused.",
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
            *CUTEDSL_FACTS,
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
    },
}

CELLS[("gemm", "cutedsl")] = {
    "summary": "CuTe DSL Hopper GEMM: 128x256x64 tiles on a persistent grid of 2x1 clusters (B multicast), a "
               "TMA producer warpgroup feeding a 4-stage mbarrier pipeline, two consumer warpgroups issuing "
               "wgmma m64n256k16 with fp32 accumulators, stmatrix + TMA-store epilogue; 64-row tiles for skinny M",
    "semantics": "M and N may be anything >= 1 (tiles that stick out are zero-filled by TMA on the way in and "
                 "clipped on the way out); K must give 16-byte rows (a multiple of 8 bf16/fp16 elements). When "
                 "N*2 bytes is not a multiple of 16, a second compiled variant stores C with predicated st.global.",
    "design": "A large GEMM is compute-bound (8192³ is ~2700 FLOP/byte against a ridge of ~206), so the kernel exists "
              "to keep the tensor cores fed. The CTA tile is 128x256x64: it needs the least L2-to-shared-memory "
              "bandwidth per FLOP that the register file allows, because its 128 KiB fp32 accumulator is split over "
              "two consumer warpgroups (64x256 each, 232 registers by `setmaxnreg`). Two CTAs of a 2x1 cluster "
              "share each B tile through TMA multicast, cutting the L2-to-SMEM traffic by a third. One producer "
              "warpgroup issues TMA loads into 4 stages of 48 KiB (225 of the 227 KiB of shared memory, with the "
              "epilogue buffers), synchronised by full/empty mbarriers; the consumers keep one K-step of "
              "`wgmma.mma_async` in flight. A persistent grid of as many clusters as fit walks the tiles in groups "
              "along M for L2 reuse, and the epilogue converts to the dtype, stages C in shared memory with "
              "`stmatrix` and writes it with a TMA store.",
    "ncu_kernel": "gemm",
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
        *CUTEDSL_FACTS,
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

CELLS[("reduction", "cutedsl")] = {
    "summary": "CuTe DSL row reduction: a power-of-two group of threads per row, 128-bit loads, fp32 in-thread "
               "reduction, warp butterfly shuffles, one shared-memory step across warps; rows stay in registers up "
               "to 32768 elements (softmax/rmsnorm read HBM once), a looped two-pass path beyond",
    "semantics": "Any M, N >= 1 and any row stride >= N (the row start need not be 16-byte aligned: the vector "
                 "width drops to what the stride and offsets allow). sum, mean and max return [M]; softmax and "
                 "rmsnorm return [M, N]. NaN propagates as in torch: a row holding a NaN has a NaN max and a NaN "
                 "softmax row (every max is the NaN-propagating `max.NaN.f32`).",
    "design": "A row is owned by TPR consecutive threads (a power of two, 1 to 1024), the smallest group that keeps "
              "each thread at 32 fp32 row values, so the whole row lives in registers: softmax and rmsnorm read x "
              "from HBM once and write once, where torch eager's softmax reads it twice. Each thread loads "
              "128-bit vectors (8 bf16/fp16 or 4 fp32 elements), reduces them in fp32 with no communication, "
              "then a `shfl.sync.bfly` butterfly reduces across the warp, and when a row spans several warps "
              "their partials meet once in shared memory (one `bar.sync`) before a second butterfly hands every "
              "thread the row result. Rows longer than 32768 elements take a looped path: one 512-thread CTA per "
              "row, a first pass that accumulates (softmax keeps an online max and rescaled sum), and a second "
              "pass that re-reads the row from L2 and writes it.",
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
        *CUTEDSL_FACTS,
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

CELLS[("decode_attention", "cutedsl")] = {
    "summary": "CuTe DSL flash-decoding: the sequence split across CTAs (splits sized from B*Hkv and the 132 SMs), "
               "each CTA handles a GQA group so K/V are read once, online softmax in fp32, K/V streamed through a "
               "16-byte cp.async shared-memory pipeline; CUDA-core dot products for G <= 7, mma.sync tensor cores "
               "for G >= 8 and MQA; then a log-sum-exp merge kernel",
    "semantics": "Variable lengths per sequence (1 <= seq_lens[b] <= S_max); cache slots past a length are never "
                 "read (the test inputs fill them with large values, so a leak fails). D = 64, 128 or 256.",
    "design": "Decode attention reads every K/V byte for only 2*G FMAs (G = Hq/Hkv query heads per KV head), so it "
              "is a streaming kernel, but a batch offers only B*Hkv (sequence, KV head) pairs, too few to fill 132 "
              "SMs. Flash-decoding splits each sequence: kernel 1 gives each CTA one split of one (sequence, KV "
              "head) for the query-head group, keeps a running max and sum per head in fp32 (the online softmax) "
              "and writes a partial output with its log-sum-exp; splits past a sequence's length exit at once. "
              "Kernel 2 merges the non-empty splits by log-sum-exp, launched with programmatic dependent launch so "
              "its launch overlaps kernel 1's tail. K and V stream into shared memory with 16-byte `cp.async` "
              "several steps ahead, so loads in flight hold no registers. The dot products take one of two paths by "
              "group size. For G <= 7, CUDA cores: each thread owns two 128-bit slices of a key row, so at D = 128 "
              "eight threads share a key and a score needs 3 butterfly shuffles, in base 2 so exp is one "
              "`ex2.approx`. For G >= 8 (and MQA), tensor cores: the group's query heads, padded to 16-row tiles, are "
              "the M dimension of `mma.sync` m16n8k16 for S = Q.K^T (K via `ldmatrix`) and for O += P.V (V via "
              "`ldmatrix.trans`), and the fp32 scores become the bf16/fp16 P operand register for register.",
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
        *CUTEDSL_FACTS,
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

CELLS[("elementwise", "flydsl")] = {
    "summary": "FlyDSL elementwise kernel (CDNA3/CDNA4): 1-D view, 256-thread workgroups (4 waves of 64), 2 (4 for "
               "add/mul) 128-bit buffer accesses per lane per tensor, fp32 math, the tail bounded by the buffer "
               "descriptor's num_records",
    "semantics": "Any contiguous 1-D or 2-D shape under 2 GiB per tensor (buffer offsets are 32-bit), one shape for "
                 "all tensors; the math runs in fp32 registers with one rounding on the store.",
    "design": "The tensor is viewed as 1-D. Each 256-thread workgroup (four 64-lane waves, one per SIMD) owns a "
              "tile of 256 x VEC x UNROLL elements, and each lane moves UNROLL 128-bit vectors per tensor with "
              "`buffer_load_dwordx4`/`buffer_store_dwordx4`. A buffer access is bounds-checked by the hardware "
              "against the descriptor's num_records, so the last, partial workgroup needs no per-lane predicate: it "
              "uses one-element buffer accesses, out-of-range loads read 0 and out-of-range stores are dropped. No "
              "LDS: nothing is reused. Compiled for real gfx942/gfx950 ISA on a CPU; not run on AMD hardware here.",
    "phase1": {"boundaries": "sizes that are not a multiple of the 128-bit vector or of the workgroup tile: the last "
                             "workgroup uses one-element buffer accesses bounded by the descriptor's num_records "
                             "(out-of-range loads read 0, stores are dropped), no per-lane predicates."},
    "profile": "rocprofv3 --kernel-trace --stats -d results/rocprof -- python test_kernel.py --no-timing",
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
    "framework_facts": FLYDSL_FACTS,
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

CELLS[("reduction", "flydsl")] = {
    "summary": "FlyDSL row reduction (CDNA3/CDNA4): a power-of-two lane group (1-64 lanes) or 2-16 whole 64-lane "
               "waves per row, 128-bit buffer loads, fp32 in-lane tree, DPP wave reduction, one LDS step across "
               "waves; rows stay in VGPRs up to 32768 elements (softmax/rmsnorm read HBM once), a looped two-pass "
               "path beyond",
    "semantics": "Any M, N >= 1 and any row stride >= N (the vector width drops to what N, the stride and the "
                 "pointers allow), every tensor under 2 GiB. sum, mean and max return [M]; softmax and rmsnorm "
                 "return [M, N]. NaN propagates as in torch: a row holding a NaN has a NaN max and a NaN softmax "
                 "row (`arith.maximumf`; gfx942 has no NaN-propagating max instruction, so a v_max3 tree plus a "
                 "NaN flag).",
    "design": "A row reduction does 1-5 FLOP per element moved, far left of the CDNA ridge (~250 FLOP/B on MI300X, "
              "~315 on MI355X): a bandwidth kernel. Each lane keeps at most 32 fp32 row values, so a row of up to "
              "32768 elements lives in VGPRs and softmax/rmsnorm read x once and write once. Short rows share a "
              "256-lane workgroup (the smallest power-of-two lane group per row); longer rows take 2-16 whole waves "
              "(the count with the fewest idle slots: N = 5120 bf16 is 5 waves). The reduction follows the "
              "hardware: an fp32 tree inside each lane, then the 64-lane wave with DPP row_shr/row_bcast (no LDS), "
              "then the 4-byte partials of a multi-wave row meet once in LDS (one s_barrier). 32 values per lane "
              "keeps the kernel at 36-72 VGPRs, 7-8 waves per SIMD of the 512-VGPR budget; a 1024-lane workgroup "
              "could not launch above 128 VGPRs. Rows longer than 32768 elements loop: one 512-lane workgroup per "
              "row, an online max/sum in pass 1, the re-read in pass 2 expected to hit L2 / Infinity Cache. "
              "Compiled for real gfx942/gfx950 ISA on a CPU; not run on AMD hardware here.",
    "phase1": {"boundaries": "N not a multiple of the 128-bit vector, rows whose start is not 16-byte aligned (the "
                             "vector width drops), and very long rows (N > 32768) that do not fit one workgroup's "
                             "VGPRs (a looped two-pass path)."},
    "profile": "rocprofv3 --kernel-trace --stats -d results/rocprof -- python test_kernel.py --no-timing",
    "levers": [
        "Small M with long rows (8 x 131072 uses 8 of 304 CUs): split each row over several workgroups, partial "
        "(max, sum) to a buffer, then a small combine kernel or a last-workgroup-done atomic (CDNA has no clusters "
        "or distributed shared memory).",
        "Time it on the GPU: sweep values per lane (16/32/64), rows per workgroup and the looped slice; gfx942 "
        "bf16 softmax is ~15 VALU per element (no hardware bf16 convert) vs ~9 on gfx950, about half the CU's "
        "VALU rate at HBM speed on paper, so check VALU busy with rocprofv3.",
        "Branchless tails and a pipelined loop: offsets past num_records instead of exec-masked branches, prefetch "
        "the next slice in the looped path, non-temporal output stores to keep the Infinity Cache for pass 2.",
    ],
    "isa_markers": {
        "required": [
            {"text": "buffer_load_dwordx4", "meaning": "128-bit buffer loads of the row"},
            {"text": "row_bcast:31", "meaning": "DPP wave64 reduction (row_shr steps, then row_bcast across rows)"},
            {"text": "s_barrier", "meaning": "the cross-wave step through LDS"},
            PRIVATE_0,
        ],
        "forbidden": NO_SCRATCH,
    },
    "framework_facts": [
        *FLYDSL_FACTS,
        "The vector width is a compile-time choice: kernel.py compiles one variant per (op, dtype, vector width, "
        "lanes per row) and picks the widest width dividing N, the row stride and every tensor's element offset.",
        "fx.coop.warp_reduce lowers a full-wave reduction to DPP row_shr:1,2,4,8, row_bcast:15/31 and "
        "v_readlane_b32 of lane 63; a half wave or less uses a DPP butterfly and one ds_swizzle.",
    ],
    "pitfalls": [
        {"pitfall": "Vector.reduce(ReductionOp.MAX) lowers to maxnumf and drops NaN (fx.coop.warp_reduce uses it "
                    "on a Vector input), unlike fx.max (maximumf)",
         "fix": "reduce in-lane with your own fx.max tree and pass fp32 scalars to the wave reduction",
         "source": "FlyDSL 0.4.2 behaviour, seen in the ISA"},
        {"pitfall": "a (1, k) register tensor (vec = 1), or fill() on it, fails in fly-layout-lowering with only "
                    "'Failure while executing pass pipeline'",
         "fix": "a 1-D register tensor of vec*k elements viewed with logical_divide; FLYDSL_DUMP_IR=1 shows the "
                "last good stage", "source": "FlyDSL 0.4.2 compile error"},
        {"pitfall": "a Python `while` in a kernel body becomes scf.while, so trace-time loops over lists fail "
                    "('carried variable does not match the region entry')",
         "fix": "keep trace-time loops in undecorated helpers; helpers with dynamic ifs are @flyc.jit",
         "source": "FlyDSL 0.4.2 AST rewriter"},
        {"pitfall": "inside fx.fastmath('afn') a division becomes a multiply by v_rcp and rsqrt becomes v_sqrt + "
                    "v_rcp", "fix": "keep exact divisions such as mean's /N outside the fast-math block",
         "source": "FlyDSL 0.4.2 ISA"},
    ],
}

CELLS[("gemm", "flydsl")] = {
    "summary": "FlyDSL GEMM (CDNA3/CDNA4): 256-thread workgroups (2x2 waves of 64) on 256x128x64 tiles (64x64 when "
               "the big tiles make less than one wave), dwordx4 buffer loads prefetched one K tile ahead, an "
               "XOR-swizzled LDS stage, MFMA 16x16x16 (gfx942) / 16x16x32 (gfx950) with fp32 accumulators, 16-byte "
               "stores straight from registers",
    "semantics": "C[M, N] = A[M, K] . B[N, K]^T, bf16 or fp16 in and out, fp32 accumulation, any M, N >= 1 and K a "
                 "multiple of 8 (16-byte rows), contiguous and 16-byte aligned tensors under 2 GiB each.",
    "design": "GEMM sits far right of the ridge (8192^3: 2731 FLOP/B vs ~247 on MI300X), so the job is to keep "
              "every SIMD's MFMA pipe fed. A 256x128 tile does 85 FLOP per byte of L2 traffic: ~15 TB/s over 304 "
              "CUs at 1307 TFLOP/s, against ~34 TB/s of L2; it quantizes to 96% busy CU-slots at 8192^3. 256x256 "
              "would fill all 64 KiB of gfx942's LDS with one stage and need 472 VGPRs (it spills on gfx950). Each "
              "K tile goes HBM -> VGPRs (buffer_load_dwordx4, prefetched one tile ahead during the MFMAs) -> LDS "
              "(ds_write_b128, chunk c of row r in slot c ^ (r%8) ^ 4((r/8)%2): no bank conflicts) -> ds_read_b128 "
              "-> MFMA. B feeds MFMA's first operand, so each lane ends with 8 consecutive C columns of one row "
              "and the epilogue is one 16-byte store per chunk, no LDS round trip. Out-of-matrix chunks (a K tail, "
              "rows past M or N) get a buffer offset past num_records: reads return 0, stores are dropped; "
              "N % 8 != 0 compiles an epilogue of masked 2-byte stores. Tiles are renumbered so each of the 8 XCDs "
              "(own L2) gets a contiguous run. Compiled for real gfx942/gfx950 ISA on a CPU; not run on AMD "
              "hardware here.",
    "phase1": {
        "shapes": "any M, N >= 1 and K a multiple of 8 (16-byte rows for the dwordx4 buffer loads); the cases below.",
        "precision": "inputs and output in the dtype; products accumulated in fp32 registers by the MFMA matrix "
                     "cores; one rounding on the store.",
        "boundaries": "M, N or K not a multiple of the tile: a 16-byte chunk outside the matrix gets a buffer offset "
                      "past num_records, so its load returns 0 and its store is dropped (num_records alone bounds "
                      "the whole tensor, not a row); N % 8 != 0 uses masked 2-byte stores.",
    },
    "profile": "rocprofv3 --kernel-trace --stats -d results/rocprof -- python test_kernel.py --no-timing",
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
        *FLYDSL_FACTS,
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

CELLS[("decode_attention", "flydsl")] = {
    "summary": "FlyDSL flash-decoding (CDNA3/CDNA4): one 64-lane wave per (sequence, KV head, split) for up to 16 "
               "query heads, q.K^T and P.V both on MFMA (heads padded to 16), online softmax in fp32 base 2, K/V "
               "straight from HBM into MFMA operands through per-sequence buffer descriptors (rows past len_b read "
               "0), two register sets ping-pong; then a log-sum-exp merge kernel",
    "semantics": "q [B, Hq, D], k_cache/v_cache [B, S_max, Hkv, D] contiguous, seq_lens [B] int32 with 1 <= len <= "
                 "S_max (read on the GPU, no host sync); Hq a multiple of Hkv (MHA, GQA, MQA), D in {64, 128, 256}, "
                 "bf16/fp16, fp32 math; cache slots past len_b are never read. One sequence's K (or V) must stay "
                 "under 2 GiB (32-bit buffer offsets); the whole cache may be larger.",
    "design": "Decode attention does about G FLOP per K/V byte (4 at G = 4) against a ridge near 247 FLOP/B on "
              "MI300X and 315 on MI355X, so it is a stream: each K/V byte read once at HBM speed (headline floor on "
              "paper: 537 MB, ~101 us on MI300X). A batch has only B*Hkv (sequence, KV head) pairs, so flash-"
              "decoding splits each sequence along its keys, sized from B*Hkv and the CU count (8 waves per CU, "
              ">= 256 keys per split). One 64-lane wave handles one split for up to 16 query heads: 64 lanes are "
              "exactly one 16x16 MFMA operand tile. Both products run on MFMA for every group size (the H200 cell "
              "keeps G <= 7 on CUDA cores): S^T = K.q^T with 16 keys as M and the heads padded to N = 16, K rows "
              "loaded straight into the A operand; O^T = V^T.P^T with the scores reused in place as P^T and V "
              "transposed 4x4 in registers (v_perm_b32). The padding is affordable: the matrix pipe is ~7% busy at "
              "the bandwidth floor. Each wave builds one buffer descriptor per sequence whose size ends at len_b, "
              "so stale slots read as 0 with no per-lane branch; no LDS, no barriers. A second kernel merges the "
              "non-empty splits by log-sum-exp (AMD has no PDL: the launch gap is exposed). Compiled for real "
              "gfx942/gfx950 ISA on a CPU; not run on AMD hardware here.",
    "phase1": {
        "boundaries": "seq_len 1, lengths that are not a multiple of the 16-key tile or the split size, mixed "
                      "lengths in one batch, and splits that receive no keys; K/V rows past len_b read as 0 "
                      "through a per-sequence buffer descriptor and their scores are -inf.",
    },
    "profile": "rocprofv3 --kernel-trace --stats -d results/rocprof -- python test_kernel.py --no-timing",
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
        *FLYDSL_FACTS,
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
