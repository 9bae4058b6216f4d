"""Decode attention (GQA / MHA / MQA, one query token) in FlyDSL for AMD CDNA3 (gfx942) and CDNA4 (gfx950).

Flash-decoding on the matrix cores: the keys of every (sequence, KV head) are split over many one-wave
workgroups, so that a small batch still fills every CU. Each wave streams its split's K and V once with
128-bit buffer loads straight into MFMA operand registers (no LDS), serves all query heads of its GQA
group at once (q.K^T and P.V on MFMA, P never leaving the lane), and keeps an online softmax in fp32; a
second kernel merges the splits by log-sum-exp. Keys past a sequence's length read as 0 through a
per-sequence buffer descriptor, and two register sets (ping-pong) keep one 16-key tile in flight while
the other is computed.

What it computes
    out[b, h] = softmax(q[b, h] . K[b, :len_b, h // G]^T * scale) . V[b, :len_b, h // G]
    with q[B, Hq, D] (heads and D contiguous, any batch stride: a view of a fused QKV output needs no copy),
    k_cache/v_cache[B, S_max, Hkv, D] (contiguous), seq_lens[B] int32 on the GPU
    (1 <= len_b <= S_max), G = Hq / Hkv query heads per KV head (MHA: G = 1, MQA: Hkv = 1), D in {64, 128, 256},
    bf16/fp16 in and out, all math in fp32. scale = op.json params.scale, or 1/sqrt(D) when null.

Why this shape (flash-decoding; peaks from reference/gpu_specs.json)
    One query row per head: each K/V byte feeds only G multiply-adds for q.K and G for P.V, 4*G*D FLOP per 4*D
    bytes of a key's K and V rows, i.e. G FLOP/byte (4 at G = 4). The ridge point is ~247 FLOP/byte on gfx942
    (MI300X: 1307 TFLOP/s dense bf16 / 5.3 TB/s) and ~315 on gfx950 (MI355X: 2517 / 8.0), so the kernel is a
    stream: read every K/V byte once at HBM speed. Headline B32 Hq32 Hkv8 S4096 D128 moves 537 MB of K/V: ~101 us at
    5.3 TB/s, ~67 us at 8 TB/s (floors on paper). A batch offers only B*Hkv (sequence, KV head) pairs, 256 here,
    fewer than there are CUs x waves, so each sequence is also split along its keys:

    kernel 1  grid (head chunks, splits, B*Hkv), ONE wave (64 lanes) per workgroup: a wave reads `split_size`
              keys of one (b, kv head) for up to 16 query heads at once (K/V read once per GQA group), keeps an
              online softmax (running max m, running sum l, fp32 accumulator) and writes a normalised partial
              o[b, h, split, :] in fp32 plus lse = m + log2(l) (base 2). A split that starts at or past len_b
              returns at once and writes nothing.
    kernel 2  grid (ceil(Hq / (256/D)), B), 64 lanes, each owning 4 output dims of one head: merges the
              n = ceil(len_b / split_size) non-empty splits by log-sum-exp, out = sum_s 2^(lse_s - M) o_s /
              sum_s 2^(lse_s - M), M = max_s lse_s, so the empty splits are never read.
    Both kernels are launched back to back on one stream (no PDL on AMD); compile_only compiles both.

CDNA facts it rests on (contrast: the CuTe DSL cell for Hopper)
    - Waves are 64 lanes (a CUDA warp is 32), and 64 lanes are exactly one 16x16 MFMA operand tile: 16 rows x
      4 k-groups. A workgroup here is one wave (the Hopper cell uses 4-warp CTAs and merges them through shared
      memory); more splits stand in for more waves per workgroup, so no cross-wave merge, no barrier, no LDS.
    - Matrix cores for every group size. The Hopper cell keeps G <= 7 on CUDA-core FMAs + shuffles; on CDNA a
      VALU dot product per key would need a cross-lane reduction per key and head, so all G take MFMA:
      q.K^T on v_mfma_f32_16x16x16_bf16/_f16 (gfx942) or v_mfma_f32_16x16x32_bf16/_f16 (gfx950, half the
      instructions), P.V on v_mfma_f32_16x16x16 on both. The query heads are padded to N = 16 (zero q rows): at
      G = 4 three quarters of the MFMA work is padding, affordable because the matrix pipe is mostly idle (the
      headline's 8.6 GFLOP of padded MFMA work in the 101 us floor is ~85 TFLOP/s, ~7% of MI300X's 1307).
    - CUs: run() reads the device's count from torch.cuda.get_device_properties(...).multi_processor_count,
      once per device (flydsl_runtime.device_compute_units); describe() and compile_only() use op.json's
      compute_units (the GPU's datasheet count). The split count below depends on it; the compiled code does
      not (splits are a runtime argument).
    - LDS: 64 KB per CU on gfx942, 160 KB on gfx950 (Hopper: 228 KB per SM). This kernel uses 0 bytes: K and V
      go from HBM straight into the MFMA operand registers with 128-bit buffer loads (below).
    - Registers: 512 VGPRs per SIMD lane, shared by arch VGPRs and AGPRs (accumulation registers; the MFMA
      accumulators may live in either), allocated in blocks of 8, at most 8 waves per
      SIMD: waves/SIMD = floor(512 / VGPRs rounded up to 8). The split kernel's registers grow with D (two
      tiles of K and V, D/16 accumulators of 4 fp32, q): from ~6 waves per SIMD at D = 64 to 2 at D = 256
      (the compiled counts are in benchmarks/flydsl_compile.md). The grid aims at WAVES_PER_CU = 8 waves per
      CU (2 per SIMD), so the register count does not cap the occupancy the grid asks for.
    - Memory: buffer loads. A buffer access goes through a 128-bit resource descriptor (base address,
      num_records = size in bytes, format flags) in 4 scalar registers plus a per-lane 32-bit byte offset; the
      hardware returns 0 for a load whose dword lies at or past num_records. Each wave builds ONE descriptor per
      sequence for K and one for V: base = cache + b*S_max*Hkv*D elements (64-bit math on the scalar unit),
      num_records = len_b*Hkv*D*2 bytes. So every K/V row at or past len_b reads as 0, with no per-lane branch,
      and the stale cache tail (the harness fills it with 6e4 or NaN) is never read. (The Hopper cell clamps the
      row index to the last valid key instead.) The per-lane offsets are 32-bit, so one sequence's K (or V)
      must stay under 2 GiB, but the whole cache may be larger (the Hopper cell needs < 2^31 elements in total).

Tiling and thread/value layout of a split wave (lane l = 16 g + j: lane group g = l // 16, column j = l % 16)
    The MFMA v_mfma_f32_16x16x16 computes D[16x16] += A[16x16] . B[16x16]; lane l holds A[j][4g..4g+3],
    B[4g..4g+3][j] (4 x 16-bit each) and D[4g..4g+3][j] (4 x fp32); 16x16x32 holds 8 k-values per lane and the
    same D. Only two facts of these layouts matter below: row/column j = l % 16 of A/B, and D's rows 4g..4g+3
    (the k order inside a lane group only has to be the same in A and B, which it is). A 16-key tile at k0:

    q.K^T as S^T = K . q^T  (M = 16 keys, N = 16 query heads, K = head dims: D/16 MFMAs, D/32 on gfx950)
        A = K: lane (g, j) loads key k0 + j, 16-byte chunks c = g, g+4, g+8, ... (D/32 buffer_load_dwordx4):
            the four lane groups read 64 contiguous bytes of each key row per instruction. The reduction index
            can be any permutation of the dims as long as A and B use the same one: on gfx942 MFMA step
            (u, half) uses dims 8(g + 4u) + 4 half + 0..3 in both operands, on gfx950 the 16x16x32 step u takes
            the whole chunk g + 4u (8 dims per lane) in both.
        B = q^T: lane (g, j) loaded head head0 + j the same way, once per wave (zero for padded heads).
        D: lane (g, j) gets S[key k0 + 4g + i][head j], i < 4.
    online softmax in fp32 (base 2): t = S * scale*log2(e), t = -inf for keys >= split end s1; the tile max of
        head j is max over the lane's 4 keys and over lanes j, j^16, j^32, j^48 (2 cross-lane shuffles:
        ds_swizzle + ds_bpermute on gfx942, v_permlane16/32_swap on gfx950); m_new = max(m, tile max);
        alpha = 2^(m - m_new); p = 2^(t - m_new) (v_exp_f32); l = l*alpha + sum of the lane's 4 p (per-lane
        partial sums, added over the 4 lane groups once at the end).
    P.V as O^T = V^T . P^T  (M = 16 rows of dims, N = 16 heads, K = the 16 keys, D/16 MFMAs)
        B = P^T: exactly the scores' D layout (lane (g, j) holds keys 4g + i of head j), converted to bf16/fp16
            in registers: P never leaves the lane.
        A = V^T: lane (g, j) needs keys 4g..4g+3 at one dim: it loads V rows k0 + 4g + i (i < 4), dims
            dv*j .. dv*j + dv - 1 (dv = D/16: one buffer_load_dwordx4 per row at D = 128, dwordx2 at D = 64, two
            dwordx4 at D = 256; 16 lanes read one row's 256 contiguous bytes), then M-tile e (e < dv) takes
            element e of the 4 rows: a 4x4 transpose in registers with v_perm_b32 (2 per MFMA operand).
        D: lane (g, j) accumulates O[head j][dv(4g + r) + e] (r < 4, e < dv), i.e. dims D/4*g .. D/4*g + D/4 - 1
            of head j: each lane's accumulator belongs to the head whose m and l it holds, so the alpha rescale
            needs no shuffle, and the output is D/4 contiguous fp32 (D/16 buffer_store_dwordx4).

        D = 128, tile of 16 keys; what lane (g, j) reads:     K  row k0 + j:       chunks g, g+4, g+8, g+12
                                                             V  rows k0 + 4g + i: dims 8j .. 8j+7, i = 0..3
        lanes  0-15 (g=0): K rows k0..k0+15 bytes   0- 15, 64- 79, ...   V rows k0+0..3
        lanes 16-31 (g=1): K rows k0..k0+15 bytes  16- 31, 80- 95, ...   V rows k0+4..7
        lanes 32-47 (g=2): ...                                           V rows k0+8..11
        lanes 48-63 (g=3): ...                                           V rows k0+12..15

Data movement and pipeline
    HBM -> VGPRs with buffer_load_dwordx4 (128 bits), straight into the MFMA operands; no LDS. The loop takes
    two tiles per step in two register sets, A and B (ping-pong): B's loads are issued before A's MFMAs, and
    the next A's loads right after A's last MFMA, before B's; so one tile (8 KiB at D = 128: 4 + 4 dwordx4 per
    lane) per wave is in flight while the wave computes the other. Only A is loop-carried and its old value is
    dead before its reload, so the back edge needs no register copies (a one-buffer "carry the next
    tile" loop makes LLVM copy the prefetched registers at the back edge, and each copy waits with s_waitcnt
    for the load it was meant to overlap). Two guards keep that order: rocdl.sched_barrier(0) between A's last
    MFMA and its reload, and a uniform branch around B's half (it also skips a B tile past the split end), which
    stops instruction selection from pulling B's MFMAs, and so the wait for B's loads, above A's: the B half
    then waits only for B's loads (s_waitcnt vmcnt), with the next A's loads still in flight.
    In flight per CU at the target 8 waves (Little's law): ~64 KiB, above the bandwidth x latency / CUs that
    DRAM latency needs: 5.3 TB/s x ~1 us / 304 CUs = ~17 KiB (gfx942) to 8 TB/s x ~1 us / 256 CUs = ~31 KiB
    (gfx950), with ~1 us an assumed loaded latency.
    A tile at or past the split end s1 (the next A after the last step, a B tile of an odd count) is pointed at
    key len_b, past the descriptor's num_records: it reads zeros instead of the next split's keys (at most one
    wasted tile request per split).

How many splits (plan(); a sizing rule to tune on the GPU)
    items = B * Hkv * ceil(G / 16) wave-items; splits = clamp(ceil(CUs * WAVES_PER_CU / items), 1,
    ceil(S / MIN_SPLIT_KEYS)); split_size = ceil(S / splits) rounded up to 16 keys, splits = ceil(S / split_size).
                                  304 CUs (compute_units)            256 CUs
      B32 Hq32 Hkv8 S4096:   items 256 -> 10 splits x 416 keys, 2560 waves;  8 x 512, 2048 waves
      B8  Hq64 Hkv8 S16384:  items  64 -> 38 splits x 432 keys, 2432 waves; 32 x 512, 2048 waves
      B1  Hq32 Hkv32 S32768: items  32 -> 76 splits x 432 keys, 2432 waves; 64 x 512, 2048 waves
    The grid is sized from S_max (seq_lens stay on the GPU: no host sync); waves of splits past len_b exit.
    Partials: B*Hq*splits*(D+1)*4 bytes (5.3 MB for the headline, 1% of its K/V), written and read once.

Boundary handling
    - Keys of a tile past the split end s1 = min(s0 + split_size, len_b): score -inf by a select (not an add: a
      NaN or 6e4 score is replaced, never combined), so p = 2^(-inf) = 0.
    - K/V rows at or past len_b: read as 0 through num_records, so a NaN V row can never reach the accumulator
      (0 * NaN would be NaN). Rows in [s1, len_b) are real finite data of the next split, multiplied by p = 0.
    - Every computed tile holds at least one key < s1 (A tiles start below s1 by the loop bound
      ceil((s1 - s0) / 32), B tiles by the branch), so the running max is finite after the first tile: m starts
      at -1e30 (finite, so 2^(m - m_new) is never inf - inf) and alpha = 0 then. Every written split has l >= 1
      (its largest score contributes 2^0).
    - Padded query heads (j >= min(16, G - 16 chunk)): q rows 0 (selected), scores 0, never written; MFMA
      columns do not mix, so they cannot disturb real heads.
    - The merge reads exactly the n = ceil(min(len_b, S) / split_size) splits that kernel 1 wrote.
    Walked through for the harness's boundary cases (304 CUs):
    - seq_lens all 1 (B4 S1024): 4 splits x 256; split 0 has s1 = 1, one step: A tile keys 0..15 with rows
      1..15 read as 0 and masked, B tile skipped; out = v[0] (l = 1); splits 1-3 exit; the merge reads n = 1.
    - len 4093 (B2 S4096): 16 splits x 256; the last has 253 keys, 8 steps; its last B tile holds keys
      4080..4095: 4093..4095 read 0 and are masked; the merge reads n = 16.
    - mixed [1, 1485, 2585, ...] (B8 S4096): 16 x 256; len 1485: splits 0-5, the sixth with 205 keys (7 steps,
      last A tile 1472..1487 partly masked, last B tile 1488.. skipped), splits 6-15 exit; the merge reads 6.
    - MQA Hq16 Hkv1 mixed: G = 16, one chunk, no padding; Hq8 Hkv8 S777 D64: G = 1 (15 padded columns),
      4 splits x 208, V rows loaded with dwordx2; Hq16 Hkv2 S1000 D256: G = 8, 4 x 256, two V dwordx4 per
      row, 16 M-tiles; G > 16 (e.g. Hq64 Hkv1): ceil(G / 16) chunks on grid x, the last one padded.

Your own variant: the lowered path (op.json "op": "lowered", tests/lowered_examples/CONTRACT_DECODE.md)
    The template traces the user's decode attention into lowered.py: scale(D), score(s, b, h, kpos, len,
    *vectors), keep(...), key_range(b, len), sink(b, h, *vectors), the VECTORS ([Hq] "head" or [B] "batch"
    values, any float dtype) and the flags SCORE, MASK, RANGE, WINDOW, SINK. Both kernels' bodies are shared by
    the built-in op and a variant (_split_body, _merge_body, rewritten by FlyDSL's AST rewriter as a kernel is);
    the flags are compile-time conditions (const_expr), all false for the built-in op, so its ISA is the one
    without them. The variant's kernels (lowered_split_kernel, lowered_merge_kernel) add VEC_SLOTS tensor slots
    for the vectors (the unused ones never read) and the hash of lowered.py and pointwise.py as a Constexpr.
    - Scale: qscale = scale(D) * log2(e) as before (a custom scale alone costs nothing), or scale(D) alone when
      SCORE: score() takes natural-log units, and its result is multiplied by log2(e).
    - score() and keep() run in _attend on each of the lane's 4 scores of a tile, after q.K^T and before the tile
      max: t = score(s, b, h, kpos, len_b, *values) * log2(e), then t = keep(...) ? t : -inf (a select), then the
      split-end select as before. b, len_b and h = head0 + j (the lane's column) are converted to fp32, and the
      vectors' values (vector[h] or vector[b], converted to fp32) loaded, once per wave before the key loop; per
      key only kpos = k0 + 4g + i is converted (v_cvt_f32_i32).
    - Key range (RANGE): both kernels compute (lo, hi) = key_range(b, len_b) in fp32, lo_b = max(0, trunc lo),
      hi_b = min(len_b, trunc hi), moved to scalar registers (v_readfirstlane). Split j covers [lo_b +
      j*split_size, min(lo_b + (j+1)*split_size, hi_b)), and the K/V descriptors end at row hi_b, so no key
      outside [lo_b, hi_b) is read (tiles past s1 point at hi_b and read 0). The merge reads min(ceil((hi_b -
      lo_b) / split_size), splits) splits: exactly those kernel 1 wrote. With WINDOW, plan() sizes the split grid
      over min(S_max, WINDOW) keys: a 1024-key window over S = 4096 gets a quarter of the splits (16 -> 4 x 256
      when MIN_SPLIT_KEYS caps the count, B4 Hq32 Hkv8 on 304 CUs) and reads a quarter of the cache.
    - Fully masked keys: with SCORE or MASK a whole split may score -inf. m stays NEG_BIG (finite: alpha = 1, p =
      2^(-inf) = 0, no NaN), l = 0, and the split writes an empty partial: o = 0 (1/l selected to 0, not 0 *
      inf) and lse = -inf, whose merge weight 2^(-inf - M) is 0. The merge selects 1/den to 0 when den = 0 (no
      split, or empty ones only, and no sink): such a row is 0, not NaN.
    - Sinks (SINK) enter in the merge, which always runs (every path goes through it, one split or many): s_h =
      sink(b, h, *values) * log2(e) with the head's values loaded once per lane, M = max(max_s lse_s, s_h), and
      the denominator gains 2^(s_h - M): out = sum_s 2^(lse_s - M) o_s / (sum_s 2^(lse_s - M) + 2^(s_h - M)).

Verification: compiled to gfx942/gfx950 ISA on a CPU; it has not run on AMD hardware. A lane-level numpy
model of exactly these formulas (MFMA layouts, buffer range checks, masks, ping-pong loop, merge),
benchmarks/models/decode_attention_flydsl.py in the template repository, runs the harness cases with the
cache tail filled with NaN and with 6e4 against float64, and fails when the range check or the mask is
removed. That checks the design, not the compiler or the hardware. Host side: argument checks from
host.py, op.json, the targets and compile-only from flydsl_runtime.py.

Interface (the same in every kbaseline cell):
    run(q, k_cache, v_cache, seq_lens, out=None) -> out   ROCm torch tensors ("cuda" device); compiles one
                                                          kernel pair per dtype, D and arch, and prepares a
                                                          launch (plan, workspace) once per argument signature
    run(*lowered.INPUTS, out=None) -> out                 op "lowered": the inputs in lowered.INPUTS order
                                                          (host.decode_operands); one kernel pair per dtype, D,
                                                          arch and the vectors' dtypes
    compile_only(case, out_dir) -> ISA text               compile both kernels for op.json's target with no GPU,
                                                          in a child process (flydsl_runtime.py,
                                                          tools/rocm_env.py); writes
                                                          kernel_<op>_<dtype>_d<D>_g<G>.<gfx>.s
    describe(case) -> dict                                grid, waves, splits and data movement
    (compile_only takes vec_dtype, the vectors' torch dtype name for a variant: the workspace's unless given)
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path

import flydsl.compiler as flyc
import flydsl.expr as fx
import flydsl_runtime as rt
import host
import torch
from flydsl._mlir import ir
from flydsl.compiler.ast_rewriter import ASTRewriter
from flydsl.expr import const_expr, rocdl
from flydsl_runtime import COMPUTE_UNITS, MAX_BYTES, WAVE, target

OP_SPEC = host.OP
OP = OP_SPEC["op"]
SCALE = (OP_SPEC.get("params") or {}).get("scale")  # None -> 1/sqrt(D)

# A variant (op "lowered": lowered.py beside this file, CONTRACT_DECODE.md). Its flags are compile-time conditions of
# the kernels, all false for the built-in op.
if OP == "lowered":
    import lowered as LOWERED
else:
    LOWERED = None
SCORE = bool(LOWERED and LOWERED.SCORE)     # score() on every (key, head) score
MASK = bool(LOWERED and LOWERED.MASK)       # keep(): a select to -inf
RANGE = bool(LOWERED and LOWERED.RANGE)     # key_range(): the splits cover [lo_b, hi_b) only
SINK = bool(LOWERED and LOWERED.SINK)       # sink(): a logit in the merge's denominator
WINDOW = LOWERED.WINDOW if RANGE else None  # hi - lo <= WINDOW: the plan sizes the splits over min(S, WINDOW)
EMPTY = SCORE or MASK                       # a split's scores may all be -inf: empty partials
EMPTY_ROWS = EMPTY or RANGE                 # a row may have no keys: the merge's den may be 0
ROLES = tuple(LOWERED.ROLES) if LOWERED else ("q", "k", "v", "lens")
VECTOR_ROLES = tuple(r for r in ROLES if r in ("head", "batch"))  # "head": [Hq], "batch": [B], in VECTORS order
VEC_SLOTS = 4             # the variant launchers' vector tensor slots (a FlyDSL launcher has a fixed signature)
# the variant kernels' Constexpr: FlyDSL's disk cache keys a kernel by this file's code, not by lowered.py's (or the
# pw functions' it calls), so a re-generated lowered.py is never served a kernel compiled from the old one
KEY = hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in (LOWERED, getattr(LOWERED, "pw", None))
                              if m)).hexdigest()[:16] if LOWERED else ""
if LOWERED and (len(VECTOR_ROLES) > VEC_SLOTS or len(VECTOR_ROLES) != len(LOWERED.VECTORS)):
    raise ValueError(f"lowered.py: {len(LOWERED.VECTORS)} VECTORS with roles {VECTOR_ROLES}; this cell takes at most "
                     f"{VEC_SLOTS}, one 'head' or 'batch' role each")

# WAVE (64) lanes of a CDNA wavefront = the threads of a split workgroup
TILE = 16                 # keys per MFMA tile (M of q.K^T, K of P.V); a loop step takes two tiles
MFMA_N = 16               # query heads per wave (N of both MFMAs); fewer are zero-padded
WAVES_PER_CU = 8          # split waves aimed for per CU (2 per SIMD; on paper, not timed)
MIN_SPLIT_KEYS = 256      # a split reads at least this many keys (partials stay ~1% of the traffic)
MERGE_THREADS = 64        # one wave; each lane merges 4 dims of one head
LOG2E = 1.4426950408889634
NEG_BIG = -1.0e30         # "minus infinity" for the running max: finite, so 2^(m_old - m_new) is never NaN


# ------------------------------------------------------------------------------------------------
# Launch plan (host side, plain Python)
# ------------------------------------------------------------------------------------------------


def plan(B: int, Hq: int, Hkv: int, S: int, D: int, cus: int = COMPUTE_UNITS) -> dict:
    """Head chunks, split count and split size for one shape on a GPU with `cus` compute units."""
    group = Hq // Hkv
    heads = min(group, MFMA_N)              # query heads one wave holds (the last chunk may hold fewer)
    chunks = -(-group // MFMA_N)
    items = B * Hkv * chunks                # independent (sequence, KV head, head chunk) work items
    want = -(-(cus * WAVES_PER_CU) // items)
    splits = max(1, min(want, -(-S // MIN_SPLIT_KEYS)))
    split_size = -(-(-(-S // splits)) // TILE) * TILE
    splits = -(-S // split_size)
    return {"group": group, "heads": heads, "chunks": chunks, "splits": splits, "split_size": split_size,
            "grid": [chunks, splits, B * Hkv], "cus": cus}


# ------------------------------------------------------------------------------------------------
# Device helpers (plain Python, traced inline: their loops unroll at trace time)
# ------------------------------------------------------------------------------------------------

def _rsrc(t, elem_off=None, nbytes=None):
    """Buffer resource (4 scalar registers) of tensor t: the whole tensor, or nbytes from element elem_off."""
    if elem_off is None:
        return rocdl.get_buffer_rsrc(fx.get_iter(rocdl.make_buffer_tensor(t, max_size=False)))
    ptr = fx.add_offset(fx.get_iter(t), elem_off)
    return rocdl.get_buffer_rsrc(rocdl.make_buffer_ptr(ptr, num_records_bytes=fx.Int64(nbytes)))


def _load(rsrc, byte_off, nbytes: int):
    """One buffer load per lane of nbytes (8 or 16) at byte_off, as a Vector of i32 (0 past num_records)."""
    ty = ir.VectorType.get([nbytes // 4], ir.IntegerType.get_signless(32))
    return fx.Vector(rocdl.raw_ptr_buffer_load(ty, rsrc, fx.Int32(byte_off), 0, 0))


def _load_f32(rsrc, byte_off):
    """One fp32 per lane (a 1-element vector load does not lower: 'Do not know how to scalarize')."""
    return fx.Float32(rocdl.raw_ptr_buffer_load(ir.F32Type.get(), rsrc, fx.Int32(byte_off), 0, 0))


def _store(value, rsrc, byte_off):
    """One buffer store per lane (raw ODS builder: ir.Values only; stores past num_records are dropped)."""
    rocdl.raw_ptr_buffer_store(value.ir_value(), rsrc, fx.Int32(byte_off).ir_value(), fx.Int32(0).ir_value())


def _mfma(a, b, c, fp16: bool):
    """c + a . b on v_mfma_f32_16x16x16_{bf16,f16}: a, b are 4 x 16-bit per lane (Vector of Int16), c 4 x fp32."""
    f32x4 = ir.VectorType.get([4], ir.F32Type.get())
    if fp16:
        res = rocdl.mfma_f32_16x16x16f16(f32x4, [a.bitcast(fx.Float16), b.bitcast(fx.Float16), c, 0, 0, 0])
    else:  # the bf16 builder takes the bits as i16 (vector<4xbf16> fails its verifier)
        res = rocdl.mfma_f32_16x16x16bf16_1k(f32x4, [a, b, c, 0, 0, 0])
    return fx.Vector(res)


def _load_tile(rk, rv, k0, j, g, kv_stride, k_lane, v_lane, d: int):
    """K and V registers of the 16-key tile at key k0 for lane (g, j).

    K: row k0 + j, 16-byte chunks g + 4u (u < D/32). V: rows k0 + 4g + i (i < 4), dims dv*j .. dv*j + dv - 1.
    """
    dv = d // 16
    ks = [_load(rk, (k0 + j) * kv_stride + k_lane + u * 64, 16) for u in range(d // 32)]
    vs = []
    for i in range(4):
        row = (k0 + g * 4 + i) * kv_stride + v_lane
        vs.append([_load(rv, row + w * 16, min(16, dv * 2)) for w in range(max(1, dv // 8))])
    return ks, vs


def _mfma_k32(a, b, c, fp16: bool):
    """c + a . b on gfx950's v_mfma_f32_16x16x32_{bf16,f16}: a, b are 8 x 16-bit per lane, c 4 x fp32."""
    f32x4 = ir.VectorType.get([4], ir.F32Type.get())
    t = fx.Float16 if fp16 else fx.BFloat16
    op = rocdl.mfma_f32_16x16x32_f16 if fp16 else rocdl.mfma_f32_16x16x32_bf16
    return fx.Vector(op(f32x4, [a.bitcast(t), b.bitcast(t), c, 0, 0, 0]))


def _qk(ks, qv, fp16: bool, kdim: int):
    """S^T = K . q^T over one tile: lane (g, j) gets the scores of keys k0 + 4g + i (i < 4) for head j.

    kdim 32 (gfx950): one MFMA per 16-byte chunk. kdim 16: two, on dims 8(g + 4u) + 4 half + 0..3. The dims
    are a permutation of 0..D-1 that both operands share, which is all a dot product needs.
    """
    s = fx.Vector.filled(4, 0.0, fx.Float32)
    for u in range(len(ks)):
        kk = ks[u].bitcast(fx.Int16)
        if kdim == 32:
            s = _mfma_k32(kk, qv[u], s, fp16)
            continue
        for half in range(2):
            sel = [4 * half + e for e in range(4)]
            s = _mfma(kk.shuffle(kk, sel), qv[u].shuffle(qv[u], sel), s, fp16)
    return s


def _pv(acc, vs, p16, alpha, fp16: bool):
    """acc_e = alpha * acc_e + V^T_e . P^T for the D/16 M-tiles e (tile row m is dim dv*m + e)."""
    rows = [fx.Vector.from_elements([x for part in vs[i] for x in part], fx.Int32).bitcast(fx.Int16)
            for i in range(4)]
    out = []
    for e in range(len(acc)):
        a = fx.Vector.from_elements([rows[i][e] for i in range(4)], fx.Int16)  # keys 4g..4g+3 at one dim
        out.append(_mfma(a, p16, acc[e] * alpha, fp16))
    return out


def _attend(ks, vs, k0, state, qv, qscale, s1, g, dtype, fp16: bool, kdim: int, mod=None):
    """One 16-key tile: scores, masked base-2 online softmax, P.V. state = (m, l, acc) of this lane's head.

    mod: a variant's score() / keep() (_score_mod), applied to each score before the split-end select."""
    m, lsum, acc = state
    s = _qk(ks, qv, fp16, kdim)
    key = k0 + g * 4
    if mod is None:
        tt = [(key + i < s1).select(s[i] * qscale, -math.inf) for i in range(4)]  # keys >= s1 -> -inf (select)
    else:
        tt = [(key + i < s1).select(mod(s[i] * qscale, key + i), -math.inf) for i in range(4)]
    mt = fx.arith.maxnumf(fx.arith.maxnumf(tt[0], tt[1]), fx.arith.maxnumf(tt[2], tt[3]))
    mt = fx.arith.maxnumf(mt, mt.shuffle_xor(16, WAVE))  # max over the 4 lane groups of head j
    mt = fx.arith.maxnumf(mt, mt.shuffle_xor(32, WAVE))
    m_new = fx.arith.maxnumf(m, mt)
    alpha = fx.exp2(m - m_new, fastmath="afn")
    p = [fx.exp2(x - m_new, fastmath="afn") for x in tt]
    lsum = lsum * alpha + ((p[0] + p[1]) + (p[2] + p[3]))
    p16 = fx.Vector.from_elements(p, fx.Float32).to(dtype).bitcast(fx.Int16)
    return m_new, lsum, _pv(acc, vs, p16, alpha, fp16)


# ------------------------------------------------------------------------------------------------
# A variant's device helpers (op "lowered"; traced only where its flags ask)
# ------------------------------------------------------------------------------------------------

def _vector_values(vecs, b, h):
    """The VECTORS' values of query head h ("head": vector[h]) or sequence b ("batch": vector[b]) as fp32: one
    buffer load each in the vector's own dtype (a padded head past Hq reads 0: it is never written)."""
    vals = []
    for t, role in zip(vecs, VECTOR_ROLES):
        et = t.element_type
        off = (h if role == "head" else b) * (et.width // 8)
        vals.append(et(rocdl.raw_ptr_buffer_load(et.ir_type, _rsrc(t), fx.Int32(off), 0, 0)).to(fx.Float32))
    return vals


def _key_range(b, seqlen):
    """(lo_b, hi_b) of sequence b: lowered.key_range(b, len_b) in fp32, truncated to integers, clamped to [0, len_b]
    and moved to scalar registers (the wave agrees on them; they feed descriptors, loop bounds and branches)."""
    lo, hi = LOWERED.key_range(fx.Float32(b), fx.Float32(seqlen))
    lo = fx.max(fx.Int32(fx.Float32(lo)), 0)
    hi = fx.min(fx.Int32(fx.Float32(hi)), seqlen)
    i32 = ir.IntegerType.get_signless(32)
    return (fx.Int32(rocdl.readfirstlane(i32, lo.ir_value())), fx.Int32(rocdl.readfirstlane(i32, hi.ir_value())))


def _score_mod(vecs, b, h, seqlen):
    """A variant's work on one score, as _attend applies it: mod(s, kpos) -> the base-2 score (-inf: dropped).

    s arrives as q.k * qscale: natural-log units when SCORE (score() then times log2(e)), base 2 otherwise (keep()
    alone does not touch it). b, h (this lane's query head), len_b and the vectors' values are the wave's: converted
    and loaded once here, before the key loop; per key only kpos is converted."""
    bf, hf, lenf = fx.Float32(b), fx.Float32(h), fx.Float32(seqlen)
    vals = _vector_values(vecs, b, h)

    def mod(s, kpos):
        kf = fx.Float32(kpos)
        with fx.fastmath("afn"):  # as the row cells trace compute(): a `/` is v_rcp_f32 and a multiply
            if SCORE:
                s = fx.Float32(LOWERED.score(s, bf, hf, kf, lenf, *vals)) * LOG2E
            if MASK:
                keep = LOWERED.keep(bf, hf, kf, lenf, *vals)
                if isinstance(keep, bool):  # a constant condition
                    s = s if keep else fx.Float32(-math.inf)
                else:
                    s = keep.select(s, -math.inf)
        return s

    return mod


# ------------------------------------------------------------------------------------------------
# Kernel 1: one wave per (head chunk, split, sequence x KV head)
# ------------------------------------------------------------------------------------------------

def _split_body(Q, K, V, Lens, Opart, Lse, vecs, q_stride, hq, hkv, seq_max, splits, split_size, qscale, d, kdim):
    """split_kernel's body, shared with lowered_split_kernel (vecs: a variant's vector tensors, () otherwise)."""
    dtype = Q.element_type
    fp16 = dtype is fx.Float16
    lane = fx.Int32(fx.thread_idx.x)
    chunk = fx.Int32(fx.block_idx.x)
    split = fx.Int32(fx.block_idx.y)
    bh = fx.Int32(fx.block_idx.z)
    g = lane // 16
    j = lane % 16
    b = bh // hkv
    kvh = bh - b * hkv
    group = hq // hkv
    head0 = kvh * group + chunk * MFMA_N
    n_heads = fx.min(group - chunk * MFMA_N, MFMA_N)       # real query heads of this chunk
    seqlen = fx.min(rocdl.s_buffer_load(fx.get_iter(rocdl.make_buffer_tensor(Lens, max_size=False)), b), seq_max)
    s0 = split * split_size
    kend = seqlen                                           # the end of the keys read: len_b (a variant: hi_b)
    if const_expr(RANGE):                                   # a variant's key range: the splits start at lo_b
        lo, kend = _key_range(b, seqlen)
        s0 = lo + s0
    dv = d // 16
    row_bytes = d * 2
    if s0 < kend:  # splits past this sequence's length have nothing to do (the merge skips them)
        s1 = fx.min(s0 + split_size, kend)
        kv_stride = hkv * row_bytes                         # bytes between consecutive keys of a sequence
        seq_elems = fx.Int64(b) * fx.Int64(seq_max * hkv * d)
        rk = _rsrc(K, seq_elems, kend * kv_stride)          # rows >= len_b (hi_b) read as 0
        rv = _rsrc(V, seq_elems, kend * kv_stride)
        # q of head head0 + j, chunks g + 4u: the B operand of q.K^T, loaded once (0 for padded heads)
        rq = _rsrc(Q)
        q_off = (b * q_stride + (head0 + j) * d + g * 8) * 2  # q's rows keep their batch stride (a QKV view)
        zero = fx.Vector.filled(4, 0, fx.Int32)
        qv = [(j < n_heads).select(_load(rq, q_off + u * 64, 16), zero).bitcast(fx.Int16) for u in range(d // 32)]
        k_lane = kvh * row_bytes + g * 16
        v_lane = kvh * row_bytes + j * (dv * 2)
        n_pairs = (s1 - s0 + 2 * TILE - 1) // (2 * TILE)   # loop steps of two tiles (A, B)
        mod = None
        if const_expr(EMPTY):                               # a variant's score() / keep(), its values loaded once
            mod = _score_mod(vecs, b, head0 + j, seqlen)

        def tile(k0):
            # a tile at or past s1 (the B tile of an odd count, or the prefetch after the last step) is pointed
            # at key len_b (hi_b): its loads read 0 and all its keys are masked
            return _load_tile(rk, rv, (k0 < s1).select(k0, kend), j, g, kv_stride, k_lane, v_lane, d)

        m = fx.Float32(NEG_BIG)
        lsum = fx.Float32(0.0)
        acc = [fx.Vector.filled(4, 0.0, fx.Float32) for _ in range(dv)]
        ka, va = tile(s0)
        # ping-pong over two register sets: B is loaded while A is computed, the next A while B is computed.
        # Only A is loop-carried, and its old value is dead before its reload, so the back edge needs no copies
        # (a copy of a register still being loaded would stall on s_waitcnt). sched_barrier keeps the machine
        # scheduler from hoisting the reload above A's last use; the uniform branch around B (also skipping a
        # B tile past the split end) keeps the instruction selector from pulling B's MFMAs, which must wait
        # for B's loads, above A's.
        for t in range(0, n_pairs):
            k0 = s0 + t * (2 * TILE)
            kb, vb = tile(k0 + TILE)
            m, lsum, acc = _attend(ka, va, k0, (m, lsum, acc), qv, qscale, s1, g, dtype, fp16, kdim, mod)
            rocdl.sched_barrier(0)
            ka, va = tile(k0 + 2 * TILE)
            if k0 + TILE < s1:
                m, lsum, acc = _attend(kb, vb, k0 + TILE, (m, lsum, acc), qv, qscale, s1, g, dtype, fp16, kdim, mod)
        # softmax sum of head j over its 4 lane groups, then the normalised partial and its log-sum-exp
        lsum = lsum + lsum.shuffle_xor(16, WAVE)
        lsum = lsum + lsum.shuffle_xor(32, WAVE)
        with fx.fastmath("afn"):
            inv = 1.0 / lsum
        if const_expr(EMPTY):  # every score -inf (l = 0): an empty partial, o = 0 (not 0 * inf) and lse = -inf
            inv = (lsum > 0.0).select(inv, 0.0)
        if j < n_heads:
            row = (b * hq + head0 + j) * splits + split
            ro = _rsrc(Opart)
            o = [acc[e][r] * inv for r in range(4) for e in range(dv)]  # dims D/4*g + dv*r + e, contiguous
            base = (row * d + g * (4 * dv)) * 4
            for w in fx.range_constexpr(dv):
                _store(fx.Vector.from_elements(o[4 * w:4 * w + 4], fx.Float32), ro, base + w * 16)
            if g == 0:
                with fx.fastmath("afn"):
                    lse = m + fx.log2(lsum)
                if const_expr(EMPTY):
                    lse = (lsum > 0.0).select(lse, -math.inf)
                _store(fx.Float32(lse), _rsrc(Lse), row * 4)


_split_body = ASTRewriter.transform(_split_body)  # its `if`s and loop become scf ops, as in a @flyc.kernel


@flyc.kernel
def split_kernel(
    Q: fx.Tensor, K: fx.Tensor, V: fx.Tensor, Lens: fx.Tensor, Opart: fx.Tensor, Lse: fx.Tensor, q_stride: fx.Int32,
    hq: fx.Int32, hkv: fx.Int32, seq_max: fx.Int32, splits: fx.Int32, split_size: fx.Int32, qscale: fx.Float32,
    d: fx.Constexpr[int], kdim: fx.Constexpr[int],
):
    _split_body(Q, K, V, Lens, Opart, Lse, (), q_stride, hq, hkv, seq_max, splits, split_size, qscale, d, kdim)


@flyc.kernel
def lowered_split_kernel(
    Q: fx.Tensor, K: fx.Tensor, V: fx.Tensor, Lens: fx.Tensor, Opart: fx.Tensor, Lse: fx.Tensor,
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, q_stride: fx.Int32,
    hq: fx.Int32, hkv: fx.Int32, seq_max: fx.Int32, splits: fx.Int32, split_size: fx.Int32, qscale: fx.Float32,
    d: fx.Constexpr[int], kdim: fx.Constexpr[int], key: fx.Constexpr[str],
):
    """A variant's kernel 1: its VECTORS in slots T0.. (the unused ones never read); key = KEY (lowered.py's hash)."""
    vecs = (T0, T1, T2, T3)[:len(VECTOR_ROLES)]
    _split_body(Q, K, V, Lens, Opart, Lse, vecs, q_stride, hq, hkv, seq_max, splits, split_size, qscale, d, kdim)


# ------------------------------------------------------------------------------------------------
# Kernel 2: one wave per (256/D query heads, sequence); lane t merges dims 4c..4c+3 of one head
# ------------------------------------------------------------------------------------------------

def _merge_body(Opart, Lse, Lens, Out, vecs, hq, seq_max, splits, split_size, d):
    """merge_kernel's body, shared with lowered_merge_kernel (vecs: a variant's vector tensors, () otherwise)."""
    lane = fx.Int32(fx.thread_idx.x)
    hb = fx.Int32(fx.block_idx.x)
    b = fx.Int32(fx.block_idx.y)
    cpr = d // 4                       # lanes per head (4 fp32 dims each)
    head = hb * (MERGE_THREADS // cpr) + lane // cpr
    c = lane % cpr
    seqlen = fx.min(rocdl.s_buffer_load(fx.get_iter(rocdl.make_buffer_tensor(Lens, max_size=False)), b), seq_max)
    if const_expr(RANGE):  # the splits kernel 1 wrote: those starting below hi_b, from lo_b on
        lo, kend = _key_range(b, seqlen)
        n = fx.min((fx.max(kend - lo, 0) + split_size - 1) // split_size, splits)
    else:
        n = (seqlen + split_size - 1) // split_size        # the splits kernel 1 wrote for this sequence
    if head < hq:
        ro = _rsrc(Opart)
        rl = _rsrc(Lse)
        row0 = (b * hq + head) * splits
        mx = fx.Float32(NEG_BIG)
        for s in range(0, n):
            mx = fx.arith.maxnumf(mx, _load_f32(rl, (row0 + s) * 4))
        if const_expr(SINK):  # the head's sink logit (base 2) joins the max, and below the denominator
            vals = _vector_values(vecs, b, head)
            sink = fx.Float32(LOWERED.sink(fx.Float32(b), fx.Float32(head), *vals)) * LOG2E
            mx = fx.arith.maxnumf(mx, sink)
        num = fx.Vector.filled(4, 0.0, fx.Float32)
        den = fx.Float32(0.0)
        for s in range(0, n):
            w = fx.exp2(_load_f32(rl, (row0 + s) * 4) - mx, fastmath="afn")
            num = num + _load(ro, ((row0 + s) * d + c * 4) * 4, 16).bitcast(fx.Float32) * w
            den = den + w
        if const_expr(SINK):
            den = den + fx.exp2(sink - mx, fastmath="afn")
        with fx.fastmath("afn"):
            inv = 1.0 / den
        if const_expr(EMPTY_ROWS):  # no split or empty ones only (and no sink): out = 0, not 0 / 0
            inv = (den > 0.0).select(inv, 0.0)
        res = (num * inv).to(Out.element_type).bitcast(fx.Int32)   # 4 x 16-bit = one dwordx2 store
        _store(res, _rsrc(Out), ((b * hq + head) * d + c * 4) * 2)


_merge_body = ASTRewriter.transform(_merge_body)


@flyc.kernel
def merge_kernel(
    Opart: fx.Tensor, Lse: fx.Tensor, Lens: fx.Tensor, Out: fx.Tensor,
    hq: fx.Int32, seq_max: fx.Int32, splits: fx.Int32, split_size: fx.Int32, d: fx.Constexpr[int],
):
    _merge_body(Opart, Lse, Lens, Out, (), hq, seq_max, splits, split_size, d)


@flyc.kernel
def lowered_merge_kernel(
    Opart: fx.Tensor, Lse: fx.Tensor, Lens: fx.Tensor, Out: fx.Tensor,
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor,
    hq: fx.Int32, seq_max: fx.Int32, splits: fx.Int32, split_size: fx.Int32, d: fx.Constexpr[int],
    key: fx.Constexpr[str],
):
    """A variant's kernel 2 (its sinks, its key range); slots and key as lowered_split_kernel's."""
    vecs = (T0, T1, T2, T3)[:len(VECTOR_ROLES)]
    _merge_body(Opart, Lse, Lens, Out, vecs, hq, seq_max, splits, split_size, d)


@flyc.jit
def decode_launch(
    Q: fx.Tensor, K: fx.Tensor, V: fx.Tensor, Lens: fx.Tensor, Opart: fx.Tensor, Lse: fx.Tensor, Out: fx.Tensor,
    batch: fx.Int32, q_stride: fx.Int32, hq: fx.Int32, hkv: fx.Int32, seq_max: fx.Int32, chunks: fx.Int32,
    splits: fx.Int32, split_size: fx.Int32, qscale: fx.Float32, d: fx.Constexpr[int], kdim: fx.Constexpr[int],
    stream: fx.Stream = fx.Stream(None),
):
    """Host side: the split grid, then the merge grid, on one stream (tensors are flat 1-D views; q's rows are
    q_stride elements apart)."""
    split_kernel(Q, K, V, Lens, Opart, Lse, q_stride, hq, hkv, seq_max, splits, split_size, qscale, d, kdim).launch(
        grid=(chunks, splits, batch * hkv), block=(WAVE, 1, 1), stream=stream)
    hpw = MERGE_THREADS // (d // 4)
    merge_kernel(Opart, Lse, Lens, Out, hq, seq_max, splits, split_size, d).launch(
        grid=((hq + hpw - 1) // hpw, batch, 1), block=(MERGE_THREADS, 1, 1), stream=stream)


@flyc.jit
def lowered_launch(
    Q: fx.Tensor, K: fx.Tensor, V: fx.Tensor, Lens: fx.Tensor, Opart: fx.Tensor, Lse: fx.Tensor, Out: fx.Tensor,
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor,
    batch: fx.Int32, q_stride: fx.Int32, hq: fx.Int32, hkv: fx.Int32, seq_max: fx.Int32, chunks: fx.Int32,
    splits: fx.Int32, split_size: fx.Int32, qscale: fx.Float32, d: fx.Constexpr[int], kdim: fx.Constexpr[int],
    key: fx.Constexpr[str], stream: fx.Stream = fx.Stream(None),
):
    """decode_launch of a variant: the same grids, the vector slots T0.. and lowered.py's hash besides."""
    lowered_split_kernel(Q, K, V, Lens, Opart, Lse, T0, T1, T2, T3, q_stride, hq, hkv, seq_max, splits, split_size,
                         qscale, d, kdim, key).launch(grid=(chunks, splits, batch * hkv), block=(WAVE, 1, 1),
                                                      stream=stream)
    hpw = MERGE_THREADS // (d // 4)
    lowered_merge_kernel(Opart, Lse, Lens, Out, T0, T1, T2, T3, hq, seq_max, splits, split_size, d, key).launch(
        grid=((hq + hpw - 1) // hpw, batch, 1), block=(MERGE_THREADS, 1, 1), stream=stream)


# ------------------------------------------------------------------------------------------------
# Python entry points
# ------------------------------------------------------------------------------------------------

_compiled: dict = {}   # (dtype, D, qk MFMA K[, vector dtypes, lowered.py hash]) -> CompiledFunction; every other
                       # size is a runtime argument
_workspace: dict = {}  # (device, partial rows, D) -> fp32 partial outputs and log-sum-exps, reused across calls
_launches: dict = {}   # run()'s signature (shapes, dtypes, devices of all five tensors) -> rt.Launch


def _qk_kdim(arch: str) -> int:
    """K of the q.K^T MFMA: 32 on gfx950 (v_mfma_f32_16x16x32), 16 on gfx942 (v_mfma_f32_16x16x16)."""
    return 32 if arch.startswith("gfx950") else 16


def _softmax_scale(d: int) -> float:
    if LOWERED is not None:
        return float(LOWERED.scale(d))
    return float(SCALE) if SCALE is not None else 1.0 / math.sqrt(d)


def _qscale(d: int) -> float:
    """What multiplies q.k in kernel 1: scale * log2(e) (base-2 scores), or scale alone for a variant's score()."""
    return _softmax_scale(d) * (1.0 if SCORE else LOG2E)


def _plan_keys(S: int) -> int:
    """The keys a sequence's splits span at most: S_max, or a variant's window."""
    return min(S, WINDOW) if WINDOW else S


def _compile_args(dtype: str, D: int, kdim: int, p: dict) -> tuple:
    """What run() and compile_only compile: 1-D CPU placeholders for the seven tensors, launch scalars (runtime
    values: any will do; these are the plan's), then the constexprs D and the q.K^T MFMA K."""
    x = rt.placeholder(dtype, 16)
    f32 = rt.placeholder("float32", 16)
    return (x, x.clone(), x.clone(), rt.placeholder("int32", 1), f32, f32.clone(), x.clone(), p["B"], p["Hq"] * D,
            p["Hq"], p["Hkv"], p["S"], p["chunks"], p["splits"], p["split_size"], _qscale(D), D, kdim)


def _lowered_compile_args(dtype: str, D: int, kdim: int, p: dict, vec_dtypes: tuple) -> tuple:
    """_compile_args of a variant's lowered_launch: the vector slots (each vector's torch dtype name; the unused
    slots hold seq_lens) after Out, lowered.py's hash after the constexprs."""
    q, k, v, lens, o_part, lse, out, *scalars = _compile_args(dtype, D, kdim, p)
    vecs = [rt.placeholder(name, 16) for name in vec_dtypes]
    return (q, k, v, lens, o_part, lse, out, *_slots(vecs, lens), *scalars, KEY)


def _slots(vectors, seq_lens) -> list:
    return [*vectors, *[seq_lens] * (VEC_SLOTS - len(vectors))]


def _q_extent(q) -> int:
    """Elements from q's first to its last: B x Hq x D contiguous, more for a batch-strided view (a QKV slice)."""
    return (q.shape[0] - 1) * q.stride(0) + q.shape[1] * q.shape[2]


def _flat_q(q):
    """q as the kernels take it, a flat 1-D view from its first element to its last (gaps between rows included)."""
    return q.view(-1) if q.is_contiguous() else q.as_strided((_q_extent(q),), (1,))


def _prepare(q, k_cache, v_cache, seq_lens, out):
    """A signature's first call, or a refused one: host.py's checks, the buffer and grid limits, the plan (on the
    device's CU count), the workspace and the launch. Its facts: the launch's runtime scalars and the workspace,
    which the signature (every shape) fixes."""
    dtype, B, Hq, Hkv, S, D, out = host.decode_dims(OP, q, k_cache, v_cache, seq_lens, out, "dwordx4 loads")
    return _prepared(dtype, B, Hq, Hkv, S, D, (q, k_cache, v_cache, seq_lens, out), ())


def _prepare_lowered(inputs, out):
    """_prepare of a variant: host.decode_operands finds q, k, v, seq_lens and the vectors by lowered.ROLES and
    checks them (each vector [Hq] or [B], contiguous, on q's GPU)."""
    dtype, B, Hq, Hkv, S, D, out, (q, k_cache, v_cache, seq_lens), vectors = host.decode_operands(
        OP, LOWERED, inputs, out, "dwordx4 loads")
    return _prepared(dtype, B, Hq, Hkv, S, D, (q, k_cache, v_cache, seq_lens, out), tuple(vectors))


def _prepared(dtype, B, Hq, Hkv, S, D, tensors, vectors):
    """The checks FlyDSL needs beyond host.py's, the plan, the workspace and the launch of checked arguments."""
    q = tensors[0]
    if (S + 2 * TILE) * Hkv * D * 2 >= MAX_BYTES or _q_extent(q) * 2 >= MAX_BYTES:
        raise ValueError(f"{OP}: one sequence's K (or V) or q is >= 2 GiB; buffer offsets are 32-bit")
    if B * Hkv > 65535:
        raise ValueError(f"{OP}: B*Hkv = {B * Hkv} exceeds the grid's z limit (65535)")
    if len({t.get_device() for t in (*tensors, *vectors)}) != 1:
        raise ValueError(f"{OP}: q, k_cache, v_cache, seq_lens{', the vectors' if vectors else ''} and out must be "
                         "on one GPU")
    device = q.get_device()
    p = {**plan(B, Hq, Hkv, _plan_keys(S), D, rt.device_compute_units(device)), "B": B, "Hq": Hq, "Hkv": Hkv, "S": S}
    n_part = B * Hq * p["splits"]
    if n_part * D * 4 >= MAX_BYTES:
        raise ValueError(f"{OP}: the fp32 partials ({n_part} x {D}) exceed 2 GiB")
    key = (device, n_part, D)
    if key not in _workspace:
        _workspace[key] = (q.new_empty(n_part * D, dtype=torch.float32), q.new_empty(n_part, dtype=torch.float32))
    kdim = _qk_kdim(rt.device_target(OP))
    scalars = (B, q.stride(0), Hq, Hkv, S, p["chunks"], p["splits"], p["split_size"], _qscale(D))
    if LOWERED is not None:
        vec_dtypes = tuple(str(t.dtype).removeprefix("torch.") for t in vectors)
        fn = rt.compiled(_compiled, (dtype, D, kdim, vec_dtypes, KEY), lowered_launch,
                         lambda: _lowered_compile_args(dtype, D, kdim, p, vec_dtypes))
        return rt.Launch(OP, fn, (D, kdim, KEY), device, (_workspace[key], scalars))
    fn = rt.compiled(_compiled, (dtype, D, kdim), decode_launch, lambda: _compile_args(dtype, D, kdim, p))
    return rt.Launch(OP, fn, (D, kdim), device, (_workspace[key], scalars))


def run(q, k_cache, v_cache, seq_lens, out=None):
    """out[b, h] = softmax(q[b, h] . k[b, :len, h // G]^T * scale) . v[b, :len, h // G] (fp32 math).

    The hot path is a dict lookup (the signature holds every shape and q's strides, so the plan, the workspace and
    the launch scalars are fixed by it), contiguity and alignment checks (FlyDSL's call makes none), 1-D views and the
    two launches; see flydsl_runtime.py. seq_lens stay on the GPU: no sync."""
    if out is None:
        out = q.new_empty(q.shape)  # contiguous, whatever q's batch stride
    signature = (q.shape, q.stride(), k_cache.shape, v_cache.shape, seq_lens.shape, out.shape, q.dtype, k_cache.dtype,
                 v_cache.dtype, seq_lens.dtype, out.dtype, q.get_device(), k_cache.get_device(), v_cache.get_device(),
                 seq_lens.get_device(), out.get_device())
    launch = _launches.get(signature)
    if launch is None:
        launch = _launches[signature] = _prepare(q, k_cache, v_cache, seq_lens, out)
    if not (k_cache.is_contiguous() and v_cache.is_contiguous() and seq_lens.is_contiguous() and out.is_contiguous()
            and not (q.data_ptr() | k_cache.data_ptr() | v_cache.data_ptr() | out.data_ptr()) & 15):
        launch = _prepare(q, k_cache, v_cache, seq_lens, out)  # raises, in host.py's words (or prepares this call)
    (o_part, lse_part), scalars = launch.facts  # q's strides are in the signature: _prepare checked them
    launch(_flat_q(q), k_cache.view(-1), v_cache.view(-1), seq_lens, o_part, lse_part, out.view(-1), *scalars)
    return out


TENSORS_AT = tuple(ROLES.index(r) for r in ("q", "k", "v", "lens"))  # a variant's run(): q, k, v, seq_lens
VECTORS_AT = tuple(i for i, r in enumerate(ROLES) if r in ("head", "batch"))  # ... and its vectors


def run_lowered(*inputs, out=None):
    """run(*lowered.INPUTS, out=None) of a variant (op "lowered"): run()'s path, the inputs found by lowered.ROLES,
    the vectors in the launcher's slots; the signature holds every input's shape, dtype and device."""
    if len(inputs) != len(ROLES):
        _prepare_lowered(inputs, out)  # raises, in host.py's words
    q, k_cache, v_cache, seq_lens = (inputs[i] for i in TENSORS_AT)
    vectors = [inputs[i] for i in VECTORS_AT]
    if out is None:
        out = q.new_empty(q.shape)  # contiguous, whatever q's batch stride
    signature = (*((t.shape, t.dtype, t.get_device()) for t in inputs), q.stride(), out.shape, out.dtype,
                 out.get_device())
    launch = _launches.get(signature)
    if launch is None:
        launch = _launches[signature] = _prepare_lowered(inputs, out)
    if not (k_cache.is_contiguous() and v_cache.is_contiguous() and seq_lens.is_contiguous() and out.is_contiguous()
            and all(t.is_contiguous() for t in vectors)
            and not (q.data_ptr() | k_cache.data_ptr() | v_cache.data_ptr() | out.data_ptr()) & 15):
        launch = _prepare_lowered(inputs, out)  # raises, in host.py's words (or prepares this call)
    (o_part, lse_part), scalars = launch.facts  # q's strides are in the signature: _prepare checked them
    launch(_flat_q(q), k_cache.view(-1), v_cache.view(-1), seq_lens, o_part, lse_part, out.view(-1),
           *_slots(vectors, seq_lens), *scalars)
    return out


if LOWERED is not None:
    run = run_lowered  # noqa: F811 -- a variant's run() takes lowered.INPUTS


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", op: str = OP,
                 dtype: str | None = None, arch: str | None = None, vec_dtype: str | None = None) -> str:
    """Compile both kernels run() would launch for `case` for `arch` (default op.json's target), with no GPU.

    Writes and returns the AMDGPU ISA (split kernel + merge kernel) as kernel_<op>_<dtype>_d<D>_g<G>.<arch>.s.
    A variant (op "lowered") compiles its own pair, every vector in vec_dtype (a torch dtype name; by default the
    workspace's dtype, as reference.make_inputs draws them and a model holds them)."""
    dtype = dtype or OP_SPEC["dtype"]
    vec_dtype = vec_dtype or host.TORCH_DTYPES[dtype]
    arch = target(arch)
    v = (case or OP_SPEC["cases"][0])["vars"]
    args = [dtype, arch, *(v[k] for k in ("B", "Hq", "Hkv", "S", "D")), *([vec_dtype] if LOWERED else [])]
    return rt.compile_isa(_emit_isa, f"{op}_{dtype}_d{v['D']}_g{v['Hq'] // v['Hkv']}", args, arch, out_dir)


def _emit_isa(dtype: str, arch: str, B: str, Hq: str, Hkv: str, S: str, D: str, vec_dtype: str = "float32") -> None:
    """Child side of compile_only: compile what run() compiles for this D and arch (COMPILE_ONLY: nothing launched)."""
    B, Hq, Hkv, S, D = (int(x) for x in (B, Hq, Hkv, S, D))
    p = {**plan(B, Hq, Hkv, _plan_keys(S), D, COMPUTE_UNITS), "B": B, "Hq": Hq, "Hkv": Hkv, "S": S}
    if LOWERED is not None:
        vec_dtypes = (vec_dtype,) * len(VECTOR_ROLES)
        flyc.compile(lowered_launch, *_lowered_compile_args(dtype, D, _qk_kdim(arch), p, vec_dtypes))
        return
    flyc.compile(decode_launch, *_compile_args(dtype, D, _qk_kdim(arch), p))


def describe(case: dict) -> dict:
    """Launch configuration of a case (on op.json's compute_units), for the plan and the report."""
    v = case["vars"]
    p = plan(v["B"], v["Hq"], v["Hkv"], _plan_keys(v["S"]), v["D"], COMPUTE_UNITS)
    hpw = MERGE_THREADS // (v["D"] // 4)
    variant = {} if LOWERED is None else {"variant": {
        "source": LOWERED.SOURCE, "scale": _softmax_scale(v["D"]), "score": SCORE, "mask": MASK, "range": RANGE,
        "window": WINDOW, "sink": SINK, "vectors": dict(zip(LOWERED.VECTORS, VECTOR_ROLES)),
        "keys_planned": _plan_keys(v["S"]),
        "where": "score()/keep() on each score in kernel 1 before the online softmax (vectors loaded once per wave); "
                 "key_range() narrows each sequence's splits to [lo, hi) (both kernels); sink() in the merge"}}
    return {
        "grid": p["grid"],
        "grid_blocks": p["grid"][0] * p["grid"][1] * p["grid"][2],
        "threads_per_cta": WAVE,
        "waves_per_workgroup": 1,
        "lds_bytes": 0,
        "merge_grid": [-(-v["Hq"] // hpw), v["B"], 1],
        "merge_threads_per_cta": MERGE_THREADS,
        "path": "matrix cores: q.K^T on v_mfma_f32_16x16x16 (gfx942) / 16x16x32 (gfx950), P.V on 16x16x16, "
                "bf16/f16 operands, fp32 accumulate",
        "cus_assumed": p["cus"],
        "splits": p["splits"],
        "split_size_keys": p["split_size"],
        "query_heads_per_wave": p["heads"],
        "head_chunks": p["chunks"],
        "mfma_n_padded": MFMA_N,
        "keys_per_mfma_tile": TILE,
        "keys_per_loop_step": 2 * TILE,
        "pipeline": "two 16-key register sets (ping-pong): one tile in flight while the other is computed",
        "data_movement": "K/V rows HBM -> VGPRs with 128-bit buffer_load_dwordx4 (dwordx2 for V at D = 64) straight "
        "into MFMA operands through per-sequence buffer descriptors (rows >= len read 0), ping-pong prefetch; "
        "q.K^T and P.V on v_mfma 16x16x16 with P kept in registers, online softmax in fp32 (v_exp_f32), "
        "fp32 partials + log-sum-exp to global with buffer_store_dwordx4, merged by a second kernel; no LDS",
        **variant,
    }


if __name__ == "__main__":
    rt.child_main(_emit_isa)
