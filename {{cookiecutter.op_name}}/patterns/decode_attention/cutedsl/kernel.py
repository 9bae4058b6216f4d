"""Decode attention (GQA / MHA / MQA, one query token per sequence) in CuTe DSL for Hopper (sm_90a).

Flash-decoding in one launch. The kernel splits the KV sequence of every (sequence, KV head) pair as plan()
decides for the shape (NUM_SMS is op.json's compute_units); each split CTA streams its keys global -> shared
with cp.async, runs an online softmax for all the query heads of its GQA group at once and writes an fp32
partial output plus its log-sum-exp; the last CTA of a (sequence, KV head) pair to finish, found with an
atomic counter, merges the partials in split order. A sequence that fits one split writes `out` directly.
Every group with D <= 128, MHA's G = 1 included, puts its heads on the M dimension of mma.sync m16n8k16; D = 256
(and any D without a warp tile) runs on CUDA cores (fp32 FMAs and lane shuffles).

What it computes
    out[b, h] = softmax(q[b, h] . K[b, :len_b, h // G]^T * scale) . V[b, :len_b, h // G]
    with q[B, Hq, D] (heads and D contiguous, any batch stride: a view of a fused QKV output needs no copy),
    k_cache/v_cache[B, S_max, Hkv, D] (contiguous), seq_lens[B] int32 (1 <= len <= S_max),
    G = Hq / Hkv query heads per KV head (MHA: G = 1, MQA: Hkv = 1), D in {64, 128, 256}, bf16/fp16 in and
    out, all math in fp32. scale = op.json params.scale, or 1/sqrt(D) when null.

Why this shape (flash-decoding; worked with the H200's cited peaks: 989 TFLOP/s, 4.8 TB/s, 132 SMs)
    One query row per head means each K/V byte is used for only 2*G FMAs: at G = 4, D = 128 a sequence of
    4096 keys is 2 MiB of K/V for 8.4 MFLOP, ~4 FLOP/byte, far left of the ridge point (~206 FLOP/byte).
    The kernel must stream K/V at HBM speed, read each byte once, and put enough CTAs on the SMs although
    a batch offers only B*Hkv (sequence, KV head) pairs (256 for B32 Hkv8). So the sequence is split:

    split CTA grid (G/heads, splits, B*Hkv): a CTA reads `split_size` keys of one (b, kv head) for `heads`
              query heads at once (the whole GQA group up to 8 heads on CUDA cores, up to 32 on the tensor
              cores, 8 when the batch has fewer (sequence, KV head) pairs than SMs), keeps an online softmax (running max m, running sum l, fp32 accumulator) and writes
              a normalised partial o[b, h, split, :] in fp32 plus lse = m + log2(l). A split that starts at
              or past len_b (short sequences in a mixed batch) returns at once and writes nothing.
    merge     in the same kernel (_fused_merge): the n = ceil(len_b / split_size) non-empty split CTAs of
              an item arrive on its counter (atom.add.acq_rel.gpu after a fence and a CTA barrier); the
              n-th resets the counter to 0 and computes out = sum_s 2^(lse_s - M) o_s / sum_s 2^(lse_s - M),
              M = max_s lse_s, over s = 0 .. n-1 in order (deterministic whatever the arrival order), with
              the weights in shared memory and 128-bit partial loads, MERGE_UNROLL in flight per thread.
              With n = 1 there is nothing to merge: the CTA writes out itself. The former second kernel
              (a grid of Hq x B CTAs with a PDL launch) cost a launch, its host time, and, as profilers
              count it, its wait for the split grid; its per-thread dependent loads were slow at 32+ splits.

How many splits (plan() and _splits(); NUM_SMS = op.json's compute_units, the examples use 132)
    items = B * Hkv * (G / heads) independent work items; each path fills a number of CTA slots per SM
    (CUDA cores 2, at 204 registers; tensor cores 2, MMA_CTAS_PER_SM); _splits() picks the split count with
    the least modelled time: streaming time / wave efficiency + a fixed cost per wave + the fused merge's
    cost (one CTA reads splits x heads x D x 4 bytes). Its docstring works the regimes: B1 Hkv8 G4 S8192 ->
    32 splits of 256 keys (256 CTAs, 0.97 of a wave of 264 slots), B32 Hkv8 G4 S4096 -> 1 split, no merge
    (256 CTAs), MQA B32 Hkv1 G16 -> 2 head chunks x 4 x 1024 (256 CTAs), B32 Hq8 Hkv8 (MHA, its one head
    padded on the tensor cores) -> 1 split, no merge. Fewer SMs give proportionally fewer, longer splits.
    Why 2 tensor-core slots per SM when 3 CTAs of one m16 tile fit (<= 168 registers): two CTAs of 4 warps
    already keep 64 KiB of K/V in flight per SM (a tile of 8 KiB per warp), above the ~36 KiB that Little's
    law asks for (4.8 TB/s x ~1 us over 132 SMs), so a third adds little bandwidth; counted as a slot, it made the plan cut every sequence into ~1.5x more, shorter splits (and a
    merge) to fill it: B32 Hkv8 G4 S4096 ran as 3 splits of 1408 keys, 768 CTAs, at 0.97x SDPA, and runs as one
    split, 256 CTAs, at 1.02x; B1 S8192 went from 43 to 32 splits, 0.80x to 0.99x (2026-12-02-h200-round4.md).
    The grid is sized from S_max (seq_lens stay on the GPU: no host sync); CTAs of splits past len_b exit.

Thread / value layout of a split CTA (128 threads = 4 warps)
    Each thread owns `nch` 128-bit chunks (8 dims each) of a key row: nch = 2 when the CTA holds <= 4
    query heads, 1 for 5-8 heads (q and the accumulator cost 8*nch fp32 registers per head each). So
    tpk = D/(8*nch) threads share a row and a step covers rows = 128/tpk keys (<= 4 heads: D=128: 8 threads
    per key, 16 keys; D=64: 4 and 32; 5-8 heads, D=128: 16 and 8). Thread c of a row owns chunks c and
    c + tpk, so each of its two 128-bit loads is, across the tpk threads, one contiguous 128-byte line
    (D=128; 64 bytes at D=64):

        thread t:  r = t // tpk (which key of the step), c = t % tpk (dims 8c..8c+7 and 8(c+tpk)..+7)
        step keys: key0 + u*rows + r  for u < unroll (2): 32 keys per CTA step at D=128, <= 4 heads
        D=128, 2 chunks: warp 0 = | key 0: T0..T7 | key 1: T8..T15 | key 2: T16..T23 | key 3: T24..T31 |

    Registers per thread: q slice of each head (8*nch*heads fp32, pre-scaled by scale*log2 e so scores are
    in base 2 and exp is one ex2.approx.ftz), accumulator (8*nch*heads fp32), m and l per head. Score of
    (key, head): 8*nch FMAs in nch independent chains, then a butterfly shuffle-sum over the tpk threads of
    the row (log2(tpk) shfl.bfly; every lane ends with the same bits). With 2 chunks a D=128 score costs 3
    shuffle steps over 8 lanes instead of 4 over 16 (2.7x fewer lane-shuffles per key and head), and the
    redundant exp2 of the softmax is done by 8 lanes instead of 16; the price is 204 registers (G=4, bf16)
    instead of 150, i.e. 2 CTAs (8 warps) per SM instead of 3 (ptxas held to 3 CTAs by .minnctapersm 3
    gives 168 registers and 180 bytes of spills). The online softmax rescales once per step of `unroll`
    keys, not once per key. Keys past the split end are clamped to the last valid key for the load and get
    score -inf, so nothing past len_b is ever read (the cache tail may hold NaN). At the end the `rows` key
    lanes of the CTA merge by log-sum-exp through shared memory (rows*heads*D fp32, in the same buffer as
    the K/V slots).

Data movement: a private cp.async pipeline
    K/V chunks go global -> shared memory with 16-byte cp.async.cg (L2 only), STAGES = 4 steps deep: every
    thread copies its own chunks into its own slots ([8 values][thread][chunk][key][K|V][stage], a warp's
    slots are 512 contiguous bytes: conflict-free) and reads back only what it copied, so
    cp.async.wait_group orders it with no CTA barrier. Loads in flight hold no registers: 3 steps x 16 KiB =
    48 KiB per CTA, ~96 KiB per SM (2 CTAs, 66 KB smem each), above the ~36 KiB per SM that Little's law
    asks for (4.8 TB/s x ~1 us of latency over 132 SMs). q is read once with 128-bit ld.global.v4.

Tensor-core path (D <= 128, every G; the CUDA-core split kernel above keeps D = 256)
    Why: on CUDA cores every K/V element feeds 2*G fp32 FMAs plus its share of the shuffles, so from G = 8
    on the split kernel is bound by FMAs and shuffles rather than by HBM, and MQA (G = 32) most of all; at
    G = 4 it streamed 82% of the copy bandwidth where G = 8 on the tensor cores streamed 88%. Even at G = 1
    the padded mma (1 useful row of 16) beats the CUDA cores: the tensor cores are idle in decode anyway, and
    the per-warp tiles keep more bytes in flight than the CUDA-core pipeline. So MMA_MIN_GROUP = 1: every group
    at D <= 128 takes this path; only short latency-bound caches lose a little (the H200 sweep over G = 1 and 2:
    benchmarks/2026-12-04-h200-decode-variants.md, "MHA and the built-in regimes").
    mma.sync does that work on the tensor cores: per 16 keys and 16 heads q.K^T + P.V at D = 128 are 32
    m16n8k16 instructions per warp instead of ~8K FMAs + shuffles.
    Shapes: S = Q.K^T has M = the query heads of the CTA (largest divisor of G <= MMA_MAX_HEADS = 32, or <=
    MMA_FEW_PAIRS_HEADS = 8, see "Heads per CTA"), N = keys, K = D; O += P.V has M = heads, N = D, K = keys. The
    M rows are padded to a whole m16 tile (mrows = 16 for G = 4 to 16, 32 for MQA's 32 heads when they share a
    CTA): q rows >= heads are zero in shared memory, their
    scores are 0, they go through the softmax harmlessly and are never written. Why pad instead of putting
    keys on M (S^T = K.q^T has no padding at G = 8)? With heads as M the m16n8 accumulator of S is, register
    for register, the A operand of P.V (two n8 score tiles = one k16 tile of P, converted to bf16/fp16 in
    registers), so P never leaves the registers; keys-as-M would need a transpose of P (shared memory or
    movmatrix). The padded half is wasted tensor-core work, but the tensor cores are mostly idle anyway:
    B8 Hq64 Hkv8 S16384 issues 8.6 GFLOP of padded mma against 0.54 GB of K/V, i.e. ~77 TFLOP/s at the
    HBM-bound time (~112 us at 4.8 TB/s), under 8% of the 989 TFLOP/s dense-bf16 peak.
    CTA: 4 warps, grid (G/heads, splits, B*Hkv), 128 threads; warp w takes the kt-key tiles w, w+4, w+8, ...
    of the split (kt = MMA_KEYS[D]: 16 keys at D = 128; 32 at D = 64, whose rows are 128 bytes, so that a
    tile and stage stay 4 KiB of K + V and a warp keeps as many bytes in flight as at D = 128). Each warp owns MMA_STAGES = 2 slots of [16 keys][D] K and V in shared
    memory, swizzled (16-byte chunk c of row r stored at c ^ (r % 8)) so that both the 16-byte cp.async
    writes and the 8-row ldmatrix reads are bank-conflict free. Lane l copies chunk l % (D/8) of rows
    l // (D/8) + 32/(D/8)*i (one 256-byte K row per 16 lanes at D = 128); rows past the split end are
    clamped to key s1 - 1 (never a stale slot) and their scores set to -inf. A warp synchronises only with
    itself: cp.async.wait_group then bar.warp.sync (the tile is read by all 32 lanes through ldmatrix), and
    the refill of the slot consumed one step earlier is issued before this step's math, so one tile per
    warp is always in flight (8 KiB; at G = 8 a CTA takes 73 KB smem and 165 registers/thread, so 3 CTAs would
    fit (12 warps, 96 KiB in flight per SM; the plan fills 2); MQA: 80 KB, 254 registers, 2 CTAs; a chunked
    item's CTAs take 3 stages, see "Pipeline depth"). Per step and warp (D = 128, 16 heads):
    8 ldmatrix.x4 for K (k-major rows = the "col" B operand directly), 8 ldmatrix.x4.trans for V, 16 mma
    for S, the online softmax on the fp32 accumulator (each lane holds 2 head rows x 4 keys; row max and sum
    over the 4 lanes of a quad with 2 shuffles; scale*log2(e) applied in fp32, exp2.approx), acc_O (16 x D
    fp32 = 64 registers per lane) rescaled, 16 mma for P.V. q is loaded once into registers (32 regs) for
    one m16 tile; with two tiles (MQA) it is re-read by ldmatrix each step (kept in registers, two tiles
    overflow the 255-register budget and spill; re-read, ptxas gives 246-254 registers and no spill). After
    the loop the 4 warps merge (m, l, acc) through shared memory (reusing the K/V slots, rows padded by 4
    floats) and write the same fp32 partial + lse as the CUDA-core kernel, so the fused merge is shared.
    Registers (ptxas, bf16): G4 D128 168 (3 CTAs per SM), G16 D128 167, G4 D64 124, MQA 32 heads 254 (2).
    Heads per CTA. With B * Hkv >= NUM_SMS (sequence, KV head) pairs the grid streams HBM at full width and
    each K/V byte must be read once: the whole group (up to MMA_MAX_HEADS = 32) shares one CTA. With fewer
    pairs than SMs (MQA B32 Hkv1, B1-B4 with Hkv8) the split CTAs are short and latency-bound, and a group of
    G > 8 is split into G / 8 chunks of 8 heads, one CTA each: per key, a CTA of 8 heads does the same padded
    mma as one of 16 (m16 either way) but half the softmax and acc_O rescale work; an item's chunk CTAs sit side
    by side on grid x and read the same K/V at the same time, so the second read comes from the L2 (a few
    streams' windows); twice the CTAs per HBM byte means twice the warps streaming, and each split's partial
    (the fused merge's tail) halves. Measured on both sides of the rule in benchmarks/ (the regimes page): with
    many pairs, chunks lose (the second read goes to HBM); 4 heads per CTA loses with few pairs too.
    Pipeline depth. A CTA of an unchunked item keeps MMA_STAGES = 2 slots per warp (one tile in flight while it
    computes on the other). The chunk CTAs of an item ask the memory system for twice the bytes per HBM byte (the
    second read is an L2 hit, but it is a request in flight all the same), so they take MMA_STAGES_DEEP = 3
    slots: two tiles, 16 KiB per warp, in flight. At 8 heads that is ~101 KB of shared memory, still 2 CTAs per
    SM, the 2 slots the plan fills. Measured (benchmarks/2026-12-02-h200-round5.md): chunked points gain up to 10% (B4 S32768 G16
    D64 0.88x -> 0.96x SDPA, MQA B32 Hq16 Hkv1 0.88x -> 0.91-0.94x); on unchunked items 3 stages cost 1-2% on
    long single-split streams (B32 S32768), so they keep 2 - except in a grid of one to two waves (slots < CTAs
    <= 2 x slots, e.g. B64 Hkv8: 512 CTAs). With 2 stages 3 CTAs fit an SM, so 512 CTAs run as 396 and then a
    tail of 116, one per SM, too few bytes in flight; 3 stages fit 2 per SM, and the grid runs as two full
    rounds of 264 and 248 CTAs, each warp with two tiles in flight. Measured on the H200: faster at every such
    point (B64 S1024-4096, G 4 and 8, D 64 and 128), the same or slower just outside the band (B32: one wave;
    B48: 768 CTAs; B128: four waves), bitwise the same output (benchmarks/2026-12-04-h200-decode-variants.md).

Your variant (op.json "op": "lowered")
    The template traces the user's decode function into lowered.py (tests/lowered_examples/CONTRACT_DECODE.md):
    scale(d), score(), keep(), key_range(), sink() and the flags SCORE, MASK, RANGE, WINDOW, SINK. The cell imports
    it and traces each function into the same two kernels, every piece under const_expr on its flag: the built-in
    op's code is unchanged, and a variant of a custom scale alone compiles to the built-in's PTX (its scale is the
    runtime qscale). The variant's code is _qscale, the _Variant class and _key_range; where the kernels use it:
    Scale      q . k is multiplied by lowered.scale(D) * log2(e) (the pre-scaled q on CUDA cores, the fp32 S
               accumulator on the tensor cores), or by lowered.scale(D) alone when SCORE: score() takes natural
               units, and its result is multiplied by log2(e).
    score()    on each (key, head) score as soon as it is complete, before the online softmax: after the butterfly
    keep()     sum in _attend_step (CUDA cores), on the S accumulator fragment after the mma (tensor cores); keep()
               is a select to -inf, then the kernel's own bound kpos < s1 as always. b, h (the query head), kpos
               (the key's position in the cache) and len_b go in as fp32; the vectors' values of each head (VECTORS:
               vector[h], or vector[b] of a "batch" vector) are loaded and converted to fp32 once per CTA before
               the key loop (a CUDA-core thread holds them for its <= 8 heads, a tensor-core lane for its 2 head
               rows, 4 for MQA's 32 heads; zero-padded rows take the last head's).
    key range  per CTA, lo_b = max(0, int(lo)) and hi_b = min(len_b, int(hi)) of key_range(b, len_b); split j reads
               keys [lo_b + j*split_size, min(lo_b + (j+1)*split_size, hi_b)) and the merge counts the n = ceil((hi_b
               - lo_b) / split_size) splits that have keys: a key outside the range is never loaded (a step's tail
               re-reads key s1 - 1, inside it). With WINDOW, plan() sizes the grid over min(S_max, WINDOW) keys: a
               1024-key window over S = 4096 at B1 Hq32 Hkv8 plans 8 splits of 128 keys, 64 CTAs, where the whole
               cache takes 32 splits, 256 CTAs.
    sinks      sink(b, h) * log2(e) joins a head's denominator where that is final: the fused merge takes M =
               max(max_s lse_s, sink) and adds 2^(sink - M) to sum_s 2^(lse_s - M); a sequence of one split divides
               its direct write by l + 2^(sink - m) (both scaled by 2^-max(m, sink)). Read where it is used.
    No key. A step, a split or a whole range whose every score is -inf keeps the running max at NEG_BIG (finite),
    every weight 2^(-inf - m) = 0 and l = 0: its partial is written as o = 0, lse = -inf and weighs 0 in the
    merge. An empty range runs one split with no key, and a head with no kept key (and no sink) is written 0,
    not NaN. These guards (a few selects per output element) are traced only for a variant that can drop keys or
    has sinks.
    Registers. With only .reqntid, ptxas picks a register count at an occupancy step (80, 128, 168 per thread)
    and spills a few bytes to stay on it when a variant's per-key work takes it just past one (8 bytes at G = 1
    and G = 2 for the examples). The CUDA-core kernel of such a variant carries .minnctapersm 1 (CC_MIN_CTAS): it
    takes what it needs (the examples: 89-250 registers, no spill; the plan counts on 2 CTAs per SM, and at <= 4
    heads the K/V slots' 66 KB of shared memory hold 3 at most anyway). The tensor-core kernel keeps ptxas's
    choice: 168 registers for the examples, as the built-in, 130 at D = 64, no spill.
    Host. run(*inputs, out=None) takes lowered.INPUTS in order; the vectors (any float dtype) are more arguments of
    the same launch, with their dtypes in the prepared-launch cache's key; there is no per-call conversion.

Limits
    D = 256 stays on CUDA cores (acc_O would be 128 registers per m16 tile). The fused merge runs on one CTA
    per item: with few items and many splits (B1: 32 splits of 4 heads, 64 KB of partials) it is a visible
    tail, which the plan's merge term trades against wave efficiency.
    The KV cache must have < 2^31 elements (int32 indexing). Scratch is per signature: two calls of one
    shape must not run concurrently on two streams.

Measured times against torch SDPA, the knob sweeps (splits, chunks, stages, heads per CTA) behind the
defaults, and the correctness checks (NaN- and 6e4-filled cache tails): benchmarks/2026-11-30-h200-decode-attention.md.

Host side (the launch path itself is described in cutedsl_runtime.py)
    One TVM-FFI launcher per path launches the one kernel. It takes the torch tensors (q, k_cache, v_cache,
    seq_lens, the fp32 partials o[B, Hq, splits, D] and lse[B, Hq, splits], the int32 counters[items],
    out), then chunks, split_size and qscale; it is compiled once per dtype, D and plan constexprs, on fake
    tensors whose shared symbols (B, Hq, Hkv, S, splits, items; D static) let the wrapper check that the
    shapes agree, besides dtype, device and 16-byte alignment (seq_lens included: the kernels are compiled
    assuming it). run() itself checks contiguity; host.py's checks, plan() and the scratch allocation run
    once per (dtype, q.shape, k_cache.shape, device) and again on a refused call, to say what is wrong.
    The scratch is allocated once (the counters zeroed) and the merging CTAs reset the counters, so a
    run() allocates nothing but `out` (none when out= is given), and a CUDA graph replays correctly.

Interface (the same in every kbaseline cell):
    run(q, k_cache, v_cache, seq_lens, out=None) -> out   compiles and caches on first use
    run(*inputs, out=None) -> out                          a lowered variant: lowered.INPUTS in order
    compile_only(case, out_dir) -> PTX text                 compile for sm_90a with no GPU (fake tensors)
    describe(case) -> dict                                  grid, threads, splits and data movement
"""

from __future__ import annotations

import dataclasses
import math
import os

import cutedsl_runtime as rt  # first: it sets CUTE_DSL_ARCH=sm_90a before cutlass is imported
import host

import cutlass
import cutlass.cute as cute
import torch
from cutlass.memory import SmemAllocator

OP_SPEC = host.OP
OP = OP_SPEC["op"]
SCALE = (OP_SPEC.get("params") or {}).get("scale")  # None -> 1/sqrt(D)
LOWERED = OP == "lowered"  # a lowered variant: see "Your variant" in the module docstring
if LOWERED:
    import lowered  # the user's variant, generated at the workspace root (tests/lowered_examples/CONTRACT_DECODE.md)
SCORE_MOD = LOWERED and bool(lowered.SCORE)   # score() on every (key, head) score
KEEP_MOD = LOWERED and bool(lowered.MASK)     # keep() on every (key, head) score
KEY_RANGE = LOWERED and bool(lowered.RANGE)   # key_range(): the splits cover [lo_b, hi_b) only
SINKS = LOWERED and bool(lowered.SINK)        # sink(): one more logit in every head's denominator
WINDOW = lowered.WINDOW if KEY_RANGE else None  # hi - lo <= WINDOW: the plan sizes the splits over min(S, WINDOW)
KEY_MODS = SCORE_MOD or KEEP_MOD                  # per-key work in the key loops
MAY_BE_EMPTY = KEY_MODS or KEY_RANGE              # a split may have no finite score: its partial is guarded
FINISH_MODS = MAY_BE_EMPTY or SINKS               # the partial, direct write and merge change (a scale alone: not)
VECTOR_ROLES = tuple(r for r in lowered.ROLES if r in ("head", "batch")) if LOWERED else ()
CC_MIN_CTAS = 1 if FINISH_MODS else 0  # .minnctapersm of a variant's CUDA-core kernel (0: none): "Your variant"

NUM_SMS = OP_SPEC["compute_units"]  # SMs of the target GPU (op.json); sizes the split grid

THREADS = 128            # 4 warps per split CTA
VEC = 8                  # 16-bit elements per 128-bit access
MAX_HEADS = 8            # query heads one CTA keeps in registers (q and the output accumulator)
MIN_SPLIT_KEYS = 256     # a CUDA-core split reads at least this many keys (partials stay ~1% of the traffic)
STAGES = 4               # cp.async pipeline depth (0 = plain ld.global.v4 into registers, no prefetch)
CHUNKS_FEW_HEADS = 2     # 128-bit chunks of a key row per thread when a CTA holds <= 4 query heads
CHUNKS_MANY_HEADS = 1    # ... and when it holds 5-8 (q and the accumulator take 16*chunks registers per head)
UNROLL_FEW_HEADS = 2     # keys per thread per step when a CTA holds <= 4 query heads
UNROLL_MANY_HEADS = 2    # ... and when it holds 5-8
CC_CTAS_PER_SM = 2       # resident CUDA-core split CTAs per SM (204 registers x 128 threads; see the docstring)
MMA_MIN_GROUP = 1        # G >= this (and D <= 128) takes the tensor-core path: every group (see its docstring)
MMA_M = 16               # rows of an m16n8k16 atom: query heads of the group, zero-padded
MMA_MAX_HEADS = 32       # query heads per tensor-core CTA (the largest divisor of G that is <= this) ...
MMA_FEW_PAIRS_HEADS = 8  # ... and when B * Hkv < NUM_SMS: a large group is split into side-by-side chunks
MMA_WARPS = 4            # warps of a tensor-core CTA; each streams its own key tiles
MMA_KEYS = {64: 32, 128: 16}    # keys per warp tile by D: 4 KiB of K + V per tile and stage either way
MMA_STAGES = 2           # per-warp cp.async slots (K + V tile each) ...
MMA_STAGES_DEEP = 3      # ... and when an item's group is split into chunk CTAs that read the same K/V, or the
                         # grid is one to two waves ("Pipeline depth" in the docstring)
MMA_CTAS_PER_SM = {1: 2, 2: 2}  # tensor-core CTAs per SM the plan fills, by m16 tiles (see "How many splits")
MMA_MIN_SPLIT_KEYS = 128 # a tensor-core split reads at least this many keys
HBM_BYTES_PER_US = 4.0e6 # plan()'s model: K/V streamed at ~4 TB/s (83% of the H200's cited 4.8 TB/s) ...
MERGE_BYTES_PER_US = 6.4e4  # ... one merging CTA reads partials at ~64 GB/s (32 KiB of loads in flight) ...
MERGE_US = 1.0           # ... the fused merge's fixed cost (atomic, fences, barriers, the weight pass) ...
WAVE_US = 1.0            # ... and each wave's unhidden CTA start and drain (pipeline fill, epilogue)
MAX_SPLITS = 256         # splits per sequence; the fused merge keeps heads x MAX_SPLITS fp32 weights in smem
MERGE_UNROLL = 16        # splits the fused merge reads per loop iteration (independent 128-bit L2 loads)
LOG2E = 1.4426950408889634
NEG_BIG = -1.0e30        # "minus infinity" for running maxima: finite, so exp2(m_old - m_new) is never NaN

# ------------------------------------------------------------------------------------------------
# Launch plan (host side, plain Python)
# ------------------------------------------------------------------------------------------------

def plan(B: int, Hq: int, Hkv: int, S: int, D: int) -> dict:
    """Path, heads per CTA, tile and split plan of one shape.

    Path: D <= 128 runs on the tensor cores (the group's heads are the M rows of m16n8k16, padded to 16), D = 256
    on CUDA cores: the padded mma is cheaper than the CUDA cores' 2*G fp32 FMAs and butterfly shuffles per K/V
    element at every G, MHA's G = 1 included (the "Tensor-core path" docstring gives the measurements). The split
    count comes from `_splits`: see it for the regimes.
    A variant with a key window (lowered.WINDOW) reads at most WINDOW keys of a sequence: S is min(S, WINDOW)."""
    if WINDOW:
        S = min(S, WINDOW)
    group = Hq // Hkv
    if group >= MMA_MIN_GROUP and D <= 128:
        return _plan_mma(B, Hq, Hkv, S, D)
    heads = max(h for h in range(1, min(group, MAX_HEADS) + 1) if group % h == 0)
    chunks = group // heads
    nch = CHUNKS_FEW_HEADS if heads <= 4 else CHUNKS_MANY_HEADS  # 128-bit chunks of a row per thread
    tpk = D // (VEC * nch)              # threads that share one key row (each owns 8*nch dims)
    rows = THREADS // tpk               # keys one CTA reads per step
    unroll = UNROLL_FEW_HEADS if heads <= 4 else UNROLL_MANY_HEADS  # keys per thread per step
    block = rows * unroll               # keys per CTA per loop iteration
    items = B * Hkv * chunks            # independent (sequence, KV head, head chunk) work items
    split = _splits(items, S, block, NUM_SMS * CC_CTAS_PER_SM, MIN_SPLIT_KEYS, 4 * B * Hkv * S * D, 4 * heads * D)
    return {"group": group, "heads": heads, "chunks": chunks, "nch": nch, "tpk": tpk, "rows": rows, "unroll": unroll,
            "block": block, "stages": STAGES, "mma": False, "items": items, **split, "grid": [chunks, split["splits"], B * Hkv]}


def _plan_mma(B: int, Hq: int, Hkv: int, S: int, D: int) -> dict:
    """Tensor-core path: heads per CTA (padded to 16 rows), warp tiles of MMA_KEYS[D] keys, split plan."""
    group = Hq // Hkv
    cap = MMA_FEW_PAIRS_HEADS if B * Hkv < NUM_SMS else MMA_MAX_HEADS  # see "Heads per CTA" in the docstring
    heads = max(h for h in range(1, min(group, cap) + 1) if group % h == 0)
    chunks = group // heads
    tiles = -(-heads // MMA_M)          # m16 tiles of q rows
    kt = MMA_KEYS[D]
    block = kt * MMA_WARPS              # keys per CTA step (each warp one tile)
    items = B * Hkv * chunks
    slots = NUM_SMS * MMA_CTAS_PER_SM[tiles]
    split = _splits(items, S, block, slots, MMA_MIN_SPLIT_KEYS, 4 * B * Hkv * S * D, 4 * heads * D)
    ctas = items * split["splits"]
    deep = chunks > 1 or slots < ctas <= 2 * slots  # see "Pipeline depth" in the docstring
    stages = MMA_STAGES_DEEP if deep else MMA_STAGES
    return {"group": group, "heads": heads, "chunks": chunks, "nch": 0, "tpk": D // VEC, "rows": MMA_M * tiles,
            "unroll": kt, "block": block, "stages": stages, "mma": True, "items": items, **split,
            "grid": [chunks, split["splits"], B * Hkv]}


def _splits(items: int, S: int, block: int, slots: int, min_keys: int, kv_bytes: int, part_bytes: int) -> dict:
    """Split count and size: the count with the least modelled time, for every regime at once.

    Model (three terms, in microseconds):
      stream  kv_bytes / (HBM_BYTES_PER_US x wave efficiency). `slots` = NUM_SMS (op.json's compute_units: 132
              on the H200) x the CTAs per SM the path fills (2 for both; the module docstring's "How many
              splits" says why not 3 on the tensor cores); a launch of items x splits equal CTAs runs in
              waves of `slots`, and waves / ceil(waves) of the GPU streams on average (a last wave 30% full
              leaves 70% of the SMs' slots idle for one CTA's duration; fewer CTAs than slots, the same).
      waves   ceil(waves) x WAVE_US: a CTA's pipeline fill and its epilogue (the cross-warp merge, the partial
              writes) are latency no other resident CTA hides entirely; without this term tiny splits would win.
      merge   0 for one split (the CTA writes `out` itself), else MERGE_US (atomic, fences, the weight pass)
              + splits x part_bytes / MERGE_BYTES_PER_US: the last CTA of an item reads every split's fp32
              partial (part_bytes = heads x D x 4) alone, so the merge grows with the split count.
    Candidates: every split count from 1 to min(MAX_SPLITS, S / min_keys), each rounded to a split size that is a
    whole number of CTA steps (`block` keys), which may lower the count (its efficiency is taken after the
    rounding); ties go to fewer splits (longer CTAs, fewer partials). What that gives on 132 SMs:
      small B*Hkv (B1 Hkv8 G4, 8 items, 264 slots): ~33 splits fill one wave; at S8192 32 splits of 256 keys,
        256 CTAs, 2 on nearly every SM, and a 64 KB merge per item;
      middle (B32 Hkv8 G4, 256 items): 1 split fills 97% of one wave: 256 CTAs of 4096 keys, no merge at all;
        large (B128 Hkv8, 1024 items): 1 split, 3.88 waves (97%); on CUDA cores too (264 slots) 256 items fill
        97% of one wave with 1 split;
      MQA (B32 Hkv1 G16: 32 pairs < 132 SMs, so 2 chunks of 8 heads, 64 items): 4 x 1024 keys, 256 CTAs, 0.97 of a
        wave; G32: 4 chunks, 128 items, 2 x 2048 keys; B32 Hkv8 G16 (256 pairs): one CTA of 16 heads per item.
    The grid is sized from S_max (seq_lens stay on the GPU: no host sync); CTAs of splits past len_b exit."""
    max_splits = max(1, min(MAX_SPLITS, -(-S // min_keys)))
    cands = {}
    for n in range(1, max_splits + 1):
        size = _split_size(S, n, block)
        real = -(-S // size)
        waves = items * real / slots
        eff = waves / math.ceil(waves)
        merge = 0.0 if real == 1 else MERGE_US + real * part_bytes / MERGE_BYTES_PER_US
        cands[real] = (kv_bytes / (HBM_BYTES_PER_US * eff) + math.ceil(waves) * WAVE_US + merge, size, eff)
    splits = min(cands, key=lambda n: (round(cands[n][0], 3), n))
    t, size, eff = cands[splits]
    return {"splits": splits, "split_size": size, "wave_efficiency": round(eff, 3), "slots": slots,
            "model_us": round(t, 1)}


def _split_size(S: int, n: int, block: int) -> int:
    """Keys per split when S keys are cut into n: ceil(S / n) rounded up to whole CTA steps of `block` keys (which
    may leave fewer than n splits: ceil(S / size))."""
    return -(-(-(-S // n)) // block) * block


def _row_sum(x, tpk: int):
    """Butterfly all-reduce over the tpk lanes that share a key row (trace-time loop: log2(tpk) shuffles)."""
    off = tpk // 2
    while off > 0:
        x = x + cute.arch.shuffle_sync_bfly(x, offset=off)
        off //= 2
    return x


# ------------------------------------------------------------------------------------------------
# A lowered variant inside a split CTA (op.json "op": "lowered"; traced only then: "Your variant")
# ------------------------------------------------------------------------------------------------

def _to_int(x):
    """int(x) of a key_range() bound (truncation, as Python's int): a traced fp32 value or a Python number."""
    return cutlass.Int32(int(x)) if isinstance(x, (int, float)) else cutlass.Int32(x)


def _split_keys(b, seqlen, split, split_size):
    """(s0, hi, n_valid) of a split CTA: its first key, the end of its sequence's keys and how many splits have
    keys (0 .. n_valid - 1, uniform in the CTA). The splits cover [0, len_b), or a variant's [lo_b, hi_b)
    (_key_range): keys outside are never read."""
    if cutlass.const_expr(KEY_RANGE):
        lo, hi, n_valid = _key_range(b, seqlen, split_size)
        return lo + split * split_size, hi, n_valid
    return split * split_size, seqlen, (seqlen + split_size - 1) // split_size


def _key_range(b, seqlen, split_size):
    """(lo_b, hi_b, n_valid): key_range(b, len_b) clamped to [0, len_b) (lo_b = hi_b when it is empty) and the
    count of splits that cover it, at least 1 (an empty range's one split finds no key and writes zeros). hi_b is
    also held to the keys the grid's splits can hold: only a lowered.py that breaks its WINDOW promise needs it,
    and with it no split is counted that the grid does not launch (the merge would wait for it)."""
    _, n_splits, _ = cute.arch.grid_dim()
    lo_f, hi_f = lowered.key_range(cutlass.Float32(b), cutlass.Float32(seqlen))
    hi = cutlass.max(cutlass.min(_to_int(hi_f), seqlen), 0)
    lo = cutlass.min(cutlass.max(_to_int(lo_f), 0), hi)
    hi = cutlass.min(hi, lo + n_splits * split_size)
    return lo, hi, cutlass.max((hi - lo + split_size - 1) // split_size, 1)


@dataclasses.dataclass(frozen=True)
class _Variant:
    """lowered.py's score(), keep() and sink() in a split CTA: b and len_b in fp32, and per query head h its fp32
    h and vector values (VECTORS in order: vector[h] of a "head" vector, vector[b] of a "batch" one), loaded once
    per head before the key loop, never per key. Frozen: the DSL then passes it through its dynamic ifs and loops
    as the read-only Python object it is. (Its fields' annotations are objects, not strings: a string makes
    dataclasses look the module up in sys.modules, where a kernel.py loaded from its file path may not be.)"""

    __annotations__ = {"vecs": tuple, "b": object, "bf": object, "lenf": object}

    @staticmethod
    def of(vecs, b, seqlen):
        return _Variant(vecs, b, cutlass.Float32(b), cutlass.Float32(seqlen))

    def head(self, head):
        """(h in fp32, its vector values in fp32): what score/keep/sink take for query head `head`."""
        return cutlass.Float32(head), [(v[head] if role == "head" else v[self.b]).to(cutlass.Float32)
                                       for v, role in zip(self.vecs, VECTOR_ROLES)]

    def heads(self, head0, heads: int):
        return [self.head(head0 + g) for g in range(heads)]

    def score(self, s, hv, kpos):
        """The score of key kpos (an Int32) for head hv = head(h), in base 2: score() on s (natural units when
        SCORE_MOD: q was scaled by scale alone), then keep() as a select to -inf."""
        hf, vals = hv
        kf = cutlass.Float32(kpos)
        if SCORE_MOD:
            s = cutlass.Float32(lowered.score(s, self.bf, hf, kf, self.lenf, *vals)) * LOG2E
        if KEEP_MOD:
            keep = lowered.keep(self.bf, hf, kf, self.lenf, *vals)
            if isinstance(keep, bool):
                s = s if keep else cutlass.Float32(-math.inf)
            else:
                s = cutlass.select_(keep, s, -math.inf)
        return s

    def sink2(self, head):
        """sink(b, h) in base 2 (times log2 e), read where it is used: the direct write and the merge."""
        hf, vals = self.head(head)
        return cutlass.Float32(lowered.sink(self.bf, hf, *vals)) * LOG2E

    def finish(self, o, tot, mx, head, n_valid):
        """(value, lse) of a finished element for _write_partial, from the CTA's sum o of 2^(s - mx)-weighted values
        and tot of weights: tot = 0 (every score -inf) is the empty partial, o = 0 and lse = -inf; a sequence of one
        split with SINKS writes o / (tot + 2^(sink - mx)), both scaled by 2^-max(mx, sink) (no overflow; 0 when
        every key is dropped)."""
        some = tot > 0.0
        value = cutlass.select_(some, o / tot, 0.0)
        lse = cutlass.select_(some, mx + cute.math.log2(tot, fastmath=True), -math.inf)
        if SINKS:
            sink2 = self.sink2(head)
            top = cute.arch.fmax(mx, sink2)
            a = cute.math.exp2(mx - top, fastmath=True)
            den = tot * a + cute.math.exp2(sink2 - top, fastmath=True)
            value = cutlass.select_(n_valid == 1, cutlass.select_(den > 0.0, o * a / den, 0.0), value)
        return value, lse


def _attend_step(rq, rk16, rv16, rk, rv, rs, rp, rm, rl, acc, key0, rows, s1, tpk, nch, heads, unroll,
                 variant=None, hvs=None):
    """One step of `unroll` keys (key0, key0 + rows, ...) for this thread: scores, online softmax, P.V. A lowered
    variant's score/keep run on each (key, head) score here, before the online softmax (hvs: variant.heads())."""
    rk.store(rk16.load().to(cutlass.Float32))
    rv.store(rv16.load().to(cutlass.Float32))
    n = VEC * nch  # dims this thread owns; rq/acc index them as e + VEC * k (value e of chunk k)
    # partial dot products over this thread's dims (one FMA chain per 128-bit chunk), then a butterfly sum
    for u in range(unroll):
        for g in range(heads):
            part = []
            for k in range(nch):
                x = rq[k * VEC, g] * rk[0, k, u]
                for e in range(1, VEC):
                    x = x + rq[k * VEC + e, g] * rk[e, k, u]
                part.append(x)
            x = part[0]
            for k in range(1, nch):
                x = x + part[k]
            if variant is None:
                rs[u, g] = cutlass.select_(key0 + u * rows < s1, _row_sum(x, tpk), -math.inf)
            else:
                s = variant.score(_row_sum(x, tpk), hvs[g], key0 + u * rows)
                rs[u, g] = cutlass.select_(key0 + u * rows < s1, s, -math.inf)
    # online softmax, one rescale per step; scores are already in log2 units
    for g in range(heads):
        m_new = rm[g]
        for u in range(unroll):
            m_new = cute.arch.fmax(m_new, rs[u, g])
        alpha = cute.math.exp2(rm[g] - m_new, fastmath=True)
        rm[g] = m_new
        psum = cutlass.Float32(0.0)
        for u in range(unroll):
            rp[u] = cute.math.exp2(rs[u, g] - m_new, fastmath=True)
            psum = psum + rp[u]
        rl[g] = rl[g] * alpha + psum
        for i in range(n):
            y = acc[i, g] * alpha
            for u in range(unroll):
                y = y + rp[u] * rv[i % VEC, i // VEC, u]
            acc[i, g] = y


@cute.jit
def _write_partial(mO: cute.Tensor, mLse: cute.Tensor, mOut: cute.Tensor, o, lse, dd, split, head, b, n_valid):
    """One finished element of a split CTA: straight to `out` when the sequence has one split, else a partial."""
    if n_valid == 1:
        mOut[dd, head, b] = o.to(mOut.element_type)
    else:
        mO[dd, split, head, b] = o
        if dd == 0:
            mLse[split, head, b] = lse


@cute.jit
def _fused_merge(mO: cute.Tensor, mLse: cute.Tensor, mCnt: cute.Tensor, mOut: cute.Tensor, sW: cute.Tensor,
                 sFlag: cute.Tensor, n, item, head0, b, tidx, nt: cutlass.Constexpr[int],
                 heads: cutlass.Constexpr[int], d: cutlass.Constexpr[int], variant=None):
    """Arrive on the item's counter; the last of its n split CTAs merges the n partials in split order.

    Ordering (PTX memory model): every thread fences (fence.acq_rel.gpu) after its partial stores, the CTA
    barrier gathers them, then thread 0's atom.add.acq_rel.gpu publishes the CTA's arrival (release) and, in
    the last CTA, acquires every other CTA's (each of them published after its own fence and barrier). The
    last CTA stores 0 back into the counter, so the next launch (or CUDA-graph replay) finds it reset; the
    counter is touched by no other CTA of this launch after the n-th arrival. After the second barrier every
    thread of the last CTA fences again before it reads the partials. Deterministic: the weights and sums go
    over splits 0 .. n-1 in index order and a fixed lane tree, whatever order the CTAs arrived in.
    Merge: (1) the n x heads log-sum-exps into smem (sW, the freed K/V buffer); (2) per head, warp-parallel:
    M = max lse, w_s = 2^(lse_s - M) / sum_s 2^(lse_s - M); (3) out = sum_s w_s o_s, one 4-float vector of a
    head row per thread and iteration, MERGE_UNROLL independent 128-bit L2 loads in flight per thread.
    A lowered variant (`variant`, a _Variant): with SINKS head h's sink joins M and the denominator of (2); an empty
    partial (lse = -inf) weighs 0, and a head whose every partial is empty (and has no sink) gets weights 0, not NaN."""
    cute.arch.fence_acq_rel_gpu()
    cute.arch.sync_threads()  # every partial of this CTA is written and fenced; sAcc / sBuf are free
    if tidx == 0:
        old = cute.arch.atomic_add((mCnt.iterator + item).llvm_ptr, cutlass.Int32(1), sem="acq_rel", scope="gpu")
        is_last = old == n - 1
        sFlag[0] = cutlass.select_(is_last, cutlass.Int32(1), cutlass.Int32(0))
        if is_last:
            mCnt[item] = cutlass.Int32(0)  # reset for the next launch
    cute.arch.sync_threads()
    if sFlag[0] == 1:
        cute.arch.fence_acq_rel_gpu()
        nw = nt // 32
        warp = tidx // 32
        lane = tidx - warp * 32
        pairs = heads * n
        for it in cutlass.range((pairs + nt - 1) // nt, unroll=1):
            i = tidx + it * nt
            if i < pairs:
                g = i // n
                sW[i - g * n, g] = mLse[i - g * n, head0 + g, b]
        cute.arch.sync_threads()
        rounds = (n + 31) // 32
        for g in cutlass.range_constexpr(heads):
            if warp == g % nw:
                mx = cutlass.Float32(NEG_BIG)
                for it in cutlass.range(rounds, unroll=1):
                    mx = cute.arch.fmax(mx, sW[cutlass.min(lane + it * 32, n - 1), g])
                mx = _warp_reduce(mx, cute.arch.fmax)
                if cutlass.const_expr(SINKS):
                    sink2 = variant.sink2(head0 + g)
                    mx = cute.arch.fmax(mx, sink2)
                tot = cutlass.Float32(0.0)
                for it in cutlass.range(rounds, unroll=1):
                    s = lane + it * 32
                    w = cute.math.exp2(sW[cutlass.min(s, n - 1), g] - mx, fastmath=True)
                    tot = tot + cutlass.select_(s < n, w, cutlass.Float32(0.0))
                if cutlass.const_expr(FINISH_MODS):
                    tot = _warp_reduce(tot, lambda x, y: x + y)
                    if cutlass.const_expr(SINKS):
                        tot = tot + cute.math.exp2(sink2 - mx, fastmath=True)
                    inv = cutlass.select_(tot > 0.0, cutlass.Float32(1.0) / tot, 0.0)
                else:
                    inv = cutlass.Float32(1.0) / _warp_reduce(tot, lambda x, y: x + y)
                for it in cutlass.range(rounds, unroll=1):  # each lane rewrites only its own entries s = lane + 32k
                    s = lane + it * 32
                    if s < n:
                        sW[s, g] = cute.math.exp2(sW[s, g] - mx, fastmath=True) * inv
        cute.arch.sync_threads()
        ld = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
        q4 = d // 4
        for it in cutlass.range_constexpr((heads * q4 + nt - 1) // nt):
            vi = tidx + it * nt
            if vi < heads * q4:
                g = vi // q4
                j = vi - g * q4
                acc = cute.make_rmem_tensor((4,), cutlass.Float32)
                part = cute.make_rmem_tensor((4,), cutlass.Float32)
                acc.fill(0.0)
                for s in cutlass.range(n, unroll=MERGE_UNROLL):
                    cute.copy(ld, mO[(None, j), s, head0 + g, b], part)
                    acc.store(acc.load() + part.load() * sW[s, g])
                for e in cutlass.range_constexpr(4):
                    mOut[j * 4 + e, head0 + g, b] = acc[e].to(mOut.element_type)


def _warp_reduce(x, op):
    """All-reduce over the 32 lanes of a warp (butterfly: every lane ends with the same bits)."""
    for off in (16, 8, 4, 2, 1):
        x = op(x, cute.arch.shuffle_sync_bfly(x, offset=off))
    return x


# ------------------------------------------------------------------------------------------------
# Split kernel: one CTA per (head chunk, split, sequence x KV head); the last of an item merges
# ------------------------------------------------------------------------------------------------

@cute.kernel
def split_kernel(
    mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mLens: cute.Tensor, mO: cute.Tensor, mLse: cute.Tensor,
    mCnt: cute.Tensor, mOut: cute.Tensor,
    hkv: cutlass.Int32, group: cutlass.Int32, seq_max: cutlass.Int32, split_size: cutlass.Int32, qscale: cutlass.Float32,
    vecs, d: cutlass.Constexpr[int], heads: cutlass.Constexpr[int], nch: cutlass.Constexpr[int],
    unroll: cutlass.Constexpr[int], stages: cutlass.Constexpr[int],
):
    tidx, _, _ = cute.arch.thread_idx()
    chunk, split, bh = cute.arch.block_idx()
    nchunks, _, _ = cute.arch.grid_dim()
    n = VEC * nch            # dims one thread owns
    tpk = d // n
    rows = THREADS // tpk
    block = rows * unroll
    b = bh // hkv
    h = bh - b * hkv
    seqlen = cutlass.min(mLens[b], seq_max)  # 1 <= len <= S is the contract; the clamp keeps reads in bounds
    variant = None
    if cutlass.const_expr(LOWERED):
        variant = _Variant.of(vecs, b, seqlen)
    s0, hi, n_valid = _split_keys(b, seqlen, split, split_size)
    r = tidx // tpk          # which key of a step this thread reads
    c = tidx - r * tpk       # which slice of the row: chunks c, c + tpk, ... of 8 dims
    head0 = h * group + chunk * heads

    smem = SmemAllocator()
    sM = smem.allocate_tensor(cutlass.Float32, cute.make_layout((rows, heads)), 16)
    sL = smem.allocate_tensor(cutlass.Float32, cute.make_layout((rows, heads)), 16)
    sFlag = smem.allocate_tensor(cutlass.Int32, cute.make_layout(1), 16)
    # one buffer, used first as the per-thread K/V slots ([8 values][thread][chunk][key][K|V][stage], 16 B
    # each) and after the main loop as the fp32 accumulators of the `rows` key lanes ([dim][head][lane])
    kv_elems = VEC * THREADS * nch * unroll * 2 * stages
    sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(max(d * heads * rows, kv_elems // 2,
                                                                       MAX_SPLITS * heads)), 16)
    sAcc = cute.make_tensor(sBuf.iterator, cute.make_layout((d, heads, rows)))
    sW = cute.make_tensor(sBuf.iterator, cute.make_layout((MAX_SPLITS, heads)))  # the fused merge's weights, last
    if cutlass.const_expr(stages > 0):
        sKV = cute.make_tensor(cute.recast_ptr(sBuf.iterator, dtype=mK.element_type),
                               cute.make_layout((VEC, THREADS, nch, unroll, 2, stages)))

    live = s0 < seqlen  # splits past this sequence's length (or its key range) have nothing to do
    if cutlass.const_expr(KEY_RANGE):
        live = split < n_valid  # (an empty range has one split, to write zeros)
    if live:
        s1 = cutlass.min(s0 + split_size, hi)
        load = cute.make_copy_atom(cute.nvgpu.CopyG2ROp(), mK.element_type, num_bits_per_copy=128)

        # q slice of every head in the chunk, fp32, pre-scaled by scale*log2(e) (scores in base 2)
        rq = cute.make_rmem_tensor((n, heads), cutlass.Float32)
        rq16 = cute.make_rmem_tensor((VEC,), mQ.element_type)
        for g in cutlass.range_constexpr(heads):
            for k in cutlass.range_constexpr(nch):
                cute.copy(load, mQ[((None, c, k), head0 + g, b)], rq16)
                qf = rq16.load().to(cutlass.Float32) * qscale
                for e in cutlass.range_constexpr(VEC):
                    rq[k * VEC + e, g] = qf[e]
        hvs = None
        key_variant = None
        if cutlass.const_expr(KEY_MODS):
            hvs = variant.heads(head0, heads)  # each head's h and vector values, once per CTA
            key_variant = variant

        rm = cute.make_rmem_tensor((heads,), cutlass.Float32)
        rl = cute.make_rmem_tensor((heads,), cutlass.Float32)
        acc = cute.make_rmem_tensor((n, heads), cutlass.Float32)
        rm.fill(NEG_BIG)
        rl.fill(0.0)
        acc.fill(0.0)
        rk16 = cute.make_rmem_tensor((VEC, nch, unroll), mK.element_type)
        rv16 = cute.make_rmem_tensor((VEC, nch, unroll), mK.element_type)
        rk = cute.make_rmem_tensor((VEC, nch, unroll), cutlass.Float32)
        rv = cute.make_rmem_tensor((VEC, nch, unroll), cutlass.Float32)
        rs = cute.make_rmem_tensor((unroll, heads), cutlass.Float32)
        rp = cute.make_rmem_tensor((unroll,), cutlass.Float32)

        n_steps = (s1 - s0 + block - 1) // block
        if cutlass.const_expr(stages == 0):
            # register path: issue the 2*nch*unroll 128-bit loads of a step, then wait for them and compute
            for step in cutlass.range(n_steps, unroll=1):
                base = s0 + step * block
                for u in cutlass.range_constexpr(unroll):
                    j = cutlass.min(base + u * rows + r, s1 - 1)  # keys past s1 re-read key s1-1 and are masked
                    for k in cutlass.range_constexpr(nch):
                        cute.copy(load, mK[((None, c, k), h, j, b)], rk16[(None, k, u)])
                        cute.copy(load, mV[((None, c, k), h, j, b)], rv16[(None, k, u)])
                _attend_step(rq, rk16, rv16, rk, rv, rs, rp, rm, rl, acc, base + r, rows, s1, tpk, nch, heads, unroll,
                             key_variant, hvs)
        else:
            # cp.async path: each thread streams its own K/V slices `stages - 1` steps ahead into a private
            # slot of shared memory (no registers held by loads in flight, no CTA barrier: a thread reads back
            # only what it copied itself, so cp.async.wait_group alone orders it)
            g2s = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL),
                                      mK.element_type, num_bits_per_copy=128)
            s2r = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), mK.element_type, num_bits_per_copy=128)
            for st in cutlass.range_constexpr(stages - 1):
                if st < n_steps:
                    for u in cutlass.range_constexpr(unroll):
                        j = cutlass.min(s0 + st * block + u * rows + r, s1 - 1)
                        for k in cutlass.range_constexpr(nch):
                            cute.copy(g2s, mK[((None, c, k), h, j, b)], sKV[(None, tidx, k, u, 0, st)])
                            cute.copy(g2s, mV[((None, c, k), h, j, b)], sKV[(None, tidx, k, u, 1, st)])
                cute.arch.cp_async_commit_group()
            for step in cutlass.range(n_steps, unroll=1):
                cute.arch.cp_async_wait_group(stages - 2)  # this step's group has landed
                stage = step % stages
                for u in cutlass.range_constexpr(unroll):
                    for k in cutlass.range_constexpr(nch):
                        cute.copy(s2r, sKV[(None, tidx, k, u, 0, stage)], rk16[(None, k, u)])
                        cute.copy(s2r, sKV[(None, tidx, k, u, 1, stage)], rv16[(None, k, u)])
                ahead = step + stages - 1  # refill the slot read (and consumed) in the previous step
                if ahead < n_steps:
                    slot = ahead % stages
                    for u in cutlass.range_constexpr(unroll):
                        j = cutlass.min(s0 + ahead * block + u * rows + r, s1 - 1)
                        for k in cutlass.range_constexpr(nch):
                            cute.copy(g2s, mK[((None, c, k), h, j, b)], sKV[(None, tidx, k, u, 0, slot)])
                            cute.copy(g2s, mV[((None, c, k), h, j, b)], sKV[(None, tidx, k, u, 1, slot)])
                cute.arch.cp_async_commit_group()
                _attend_step(rq, rk16, rv16, rk, rv, rs, rp, rm, rl, acc, s0 + step * block + r, rows, s1, tpk,
                             nch, heads, unroll, key_variant, hvs)
            cute.arch.cp_async_wait_group(0)  # (only empty groups remain) before sBuf is reused below

        # combine the `rows` key lanes of the CTA through shared memory (log-sum-exp rescaling)
        if c == 0:
            for g in cutlass.range_constexpr(heads):
                sM[r, g] = rm[g]
        cute.arch.sync_threads()  # also: every thread is done with its K/V slots, sBuf becomes sAcc
        for g in cutlass.range_constexpr(heads):
            mx = sM[0, g]
            for i in cutlass.range_constexpr(1, rows):
                mx = cute.arch.fmax(mx, sM[i, g])
            alpha = cute.math.exp2(rm[g] - mx, fastmath=True)
            for k in cutlass.range_constexpr(nch):
                for e in cutlass.range_constexpr(VEC):
                    sAcc[(k * tpk + c) * VEC + e, g, r] = acc[k * VEC + e, g] * alpha
            if c == 0:
                sL[r, g] = rl[g] * alpha
        cute.arch.sync_threads()
        for it in cutlass.range_constexpr((d * heads + THREADS - 1) // THREADS):
            idx = tidx + it * THREADS
            if idx < d * heads:
                g = idx // d
                dd = idx - g * d
                mx = sM[0, g]
                tot = sL[0, g]
                o = sAcc[dd, g, 0]
                for i in cutlass.range_constexpr(1, rows):
                    mx = cute.arch.fmax(mx, sM[i, g])
                    tot = tot + sL[i, g]
                    o = o + sAcc[dd, g, i]
                if cutlass.const_expr(FINISH_MODS):
                    o, lse = variant.finish(o, tot, mx, head0 + g, n_valid)
                    _write_partial(mO, mLse, mOut, o, lse, dd, split, head0 + g, b, n_valid)
                else:
                    _write_partial(mO, mLse, mOut, o / tot, mx + cute.math.log2(tot, fastmath=True), dd, split,
                                   head0 + g, b, n_valid)
        if n_valid > 1:
            _fused_merge(mO, mLse, mCnt, mOut, sW, sFlag, n_valid, (bh * nchunks + chunk), head0, b, tidx, THREADS,
                         heads, d, variant)


# ------------------------------------------------------------------------------------------------
# Split kernel, tensor-core variant (D <= 128): warp-level mma.sync m16n8k16, query heads as the M rows
# ------------------------------------------------------------------------------------------------

def _mn_view(acc: cute.Tensor) -> cute.Tensor:
    """View an m16n8 accumulator fragment ((2 cols, 2 rows), MMA_M, MMA_N) as (rows, cols) of this thread."""
    lay = cute.make_layout(acc.layout.shape)
    mn = cute.make_layout(((lay.shape[0][1], lay.shape[1]), (lay.shape[0][0], lay.shape[2])),
                          stride=((lay.stride[0][1], lay.stride[1]), (lay.stride[0][0], lay.stride[2])))
    return cute.make_tensor(acc.iterator, cute.composition(acc.layout, mn))


def _quad_reduce(x, op):
    """Reduce over the 4 lanes (lane % 4) that hold the columns of one accumulator row."""
    x = op(x, cute.arch.shuffle_sync_bfly(x, offset=2))
    return op(x, cute.arch.shuffle_sync_bfly(x, offset=1))


def _swizzled_rows(d: int):
    """Shared-memory atom for [rows][d] 16-bit tiles: 8 rows x 64 values, 16-byte chunk index XOR (row % 8)."""
    return cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))


@cute.jit
def _load_kv_tile(atom, mK: cute.Tensor, mV: cute.Tensor, tKVs: cute.Tensor, key0, s1, r0, cc, h, b, slot,
                  passes: cutlass.Constexpr[int], rpp: cutlass.Constexpr[int]):
    """cp.async one warp tile of K and V rows into slots `slot` and `slot + 1`; rows past s1 re-read key s1 - 1."""
    for i in cutlass.range_constexpr(passes):
        j = cutlass.min(key0 + r0 + i * rpp, s1 - 1)
        cute.copy(atom, mK[((None, cc), h, j, b)], tKVs[(None, i, 0, slot)])
        cute.copy(atom, mV[((None, cc), h, j, b)], tKVs[(None, i, 0, slot + 1)])


@cute.kernel
def mma_split_kernel(
    mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mLens: cute.Tensor, mO: cute.Tensor, mLse: cute.Tensor,
    mCnt: cute.Tensor, mOut: cute.Tensor,
    hkv: cutlass.Int32, group: cutlass.Int32, seq_max: cutlass.Int32, split_size: cutlass.Int32, qscale: cutlass.Float32,
    vecs, d: cutlass.Constexpr[int], heads: cutlass.Constexpr[int], kt: cutlass.Constexpr[int],
    stages: cutlass.Constexpr[int],
):
    tidx, _, _ = cute.arch.thread_idx()
    chunk, split, bh = cute.arch.block_idx()
    nchunks, _, _ = cute.arch.grid_dim()
    nw = MMA_WARPS
    mrows = MMA_M * ((heads + MMA_M - 1) // MMA_M)   # heads padded to whole m16 tiles
    warp = tidx // 32
    lane = tidx - warp * 32
    tpr = d // VEC                # lanes that copy one key row (16-byte chunks per row)
    rpp = 32 // tpr               # key rows one warp copies per pass
    nt = nw * 32
    b = bh // hkv
    h = bh - b * hkv
    seqlen = cutlass.min(mLens[b], seq_max)
    variant = None
    if cutlass.const_expr(LOWERED):
        variant = _Variant.of(vecs, b, seqlen)
    s0, hi, n_valid = _split_keys(b, seqlen, split, split_size)
    head0 = h * group + chunk * heads
    dt = mK.element_type

    # shared memory: q tile [16][d]; per warp `stages` slots of a K tile and a V tile [kt][d] (swizzled);
    # after the loop the K/V slots hold the 16 x d fp32 accumulators of the 4 warps for the merge
    atom = _swizzled_rows(d)
    sQ_layout = cute.tile_to_shape(atom, (mrows, d), (0, 1))
    n_slots = 2 * stages * nw
    sKV_layout = cute.tile_to_shape(atom, (kt, d, n_slots), (0, 1, 2))
    smem = SmemAllocator()
    sM = smem.allocate_tensor(cutlass.Float32, cute.make_layout((nw, mrows)), 16)
    sL = smem.allocate_tensor(cutlass.Float32, cute.make_layout((nw, mrows)), 16)
    sFlag = smem.allocate_tensor(cutlass.Int32, cute.make_layout(1), 16)
    sQ = smem.allocate_tensor(dt, sQ_layout, 1024)
    kv_ptr = smem.allocate_array(dt, max(kt * d * n_slots, 2 * nw * mrows * (d + 4), 2 * MAX_SPLITS * heads),
                                 byte_alignment=1024)
    sKV = cute.make_tensor(kv_ptr, sKV_layout)                           # (key, dim, slot)
    sVt = cute.composition(sKV, cute.make_layout((d, kt, n_slots), stride=(kt, 1, kt * d)))  # (dim, key, slot)
    # [warp][row][dim], rows padded by 4 floats: the fragment stores hit 2-way, the final row reads 1-way banks
    sAcc = cute.make_tensor(cute.recast_ptr(kv_ptr, dtype=cutlass.Float32),
                            cute.make_layout((nw, mrows, d), stride=(mrows * (d + 4), d + 4, 1)))
    sW = cute.make_tensor(cute.recast_ptr(kv_ptr, dtype=cutlass.Float32), cute.make_layout((MAX_SPLITS, heads)))

    live = s0 < seqlen
    if cutlass.const_expr(KEY_RANGE):
        live = split < n_valid
    if live:
        s1 = cutlass.min(s0 + split_size, hi)
        g2s_atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.LoadCacheMode.GLOBAL),
                                       dt, num_bits_per_copy=128)
        # q rows of this head chunk -> sQ (rows >= heads are zero: the M = 16 padding)
        q_copy = cute.make_tiled_copy_tv(g2s_atom, cute.make_layout((nt // tpr, tpr), stride=(tpr, 1)),
                                         cute.make_layout((1, VEC)))
        tQs = q_copy.get_slice(tidx).partition_D(sQ)
        for i in cutlass.range_constexpr(mrows // (nt // tpr)):
            row = tidx // tpr + i * (nt // tpr)
            if row < heads:
                cute.copy(g2s_atom, mQ[((None, tidx % tpr), head0 + row, b)], tQs[(None, i, 0)])
            else:
                tQs[(None, i, 0)].fill(0.0)
        cute.arch.cp_async_commit_group()

        # per-warp K/V copies: lane -> (row lane // tpr + rpp * i, 16-byte chunk lane % tpr)
        kv_copy = cute.make_tiled_copy_tv(g2s_atom, cute.make_layout((rpp, tpr), stride=(tpr, 1)),
                                          cute.make_layout((1, VEC)))
        tKVs = kv_copy.get_slice(lane).partition_D(sKV)   # (CPY, kt / rpp, 1, slot)
        r0 = lane // tpr
        cc = lane - r0 * tpr
        n_tiles = (s1 - s0 + kt - 1) // kt
        n_steps = (n_tiles + nw - 1) // nw                 # warp w takes tiles w, w + nw, ... (same count each)

        for st in cutlass.range_constexpr(stages - 1):
            if st < n_steps:
                _load_kv_tile(g2s_atom, mK, mV, tKVs, s0 + (st * nw + warp) * kt, s1, r0, cc, h, b,
                              2 * (warp * stages + st), kt // rpp, rpp)
            cute.arch.cp_async_commit_group()

        # tensor-core partitions: one warp = one 16 x 8 x 16 atom, N tiled to 16 so ldmatrix.x4 feeds two atoms
        tiled_mma = cute.make_tiled_mma(cute.nvgpu.warp.MmaF16BF16Op(dt, cutlass.Float32, (16, 8, 16)), (1, 1, 1),
                                        permutation_mnk=(16, 16, 16))
        thr_mma = tiled_mma.get_slice(lane)
        tSrQ = thr_mma.make_fragment_A(thr_mma.partition_A(sQ))
        tSrK = thr_mma.make_fragment_B(thr_mma.partition_B(sKV[None, None, 0]))
        tOrVt = thr_mma.make_fragment_B(thr_mma.partition_B(sVt[None, None, 0]))
        ld = cute.nvgpu.warp.LdMatrix8x8x16bOp
        cp_q = cute.make_tiled_copy_A(cute.make_copy_atom(ld(transpose=False, num_matrices=4), dt), tiled_mma)
        cp_k = cute.make_tiled_copy_B(cute.make_copy_atom(ld(transpose=False, num_matrices=4), dt), tiled_mma)
        cp_v = cute.make_tiled_copy_B(cute.make_copy_atom(ld(transpose=True, num_matrices=4), dt), tiled_mma)
        thr_q = cp_q.get_slice(lane)
        thr_k = cp_k.get_slice(lane)
        thr_v = cp_v.get_slice(lane)
        tSsK = thr_k.partition_S(sKV)
        tSrK_v = thr_k.retile(tSrK)
        tOsVt = thr_v.partition_S(sVt)
        tOrVt_v = thr_v.retile(tOrVt)

        cute.arch.cp_async_wait_group(stages - 1)  # the q group (committed first) has landed
        cute.arch.sync_threads()
        tSsQ = thr_q.partition_S(sQ)
        tSrQ_v = thr_q.retile(tSrQ)
        q_in_regs = mrows == MMA_M   # one m16 tile: q (8 regs per 16 dims) stays in registers for the split;
        if cutlass.const_expr(q_in_regs):   # two tiles (MQA, 32 heads) re-read it with ldmatrix every step
            cute.copy(cp_q, tSsQ, tSrQ_v)

        acc_O = cute.make_rmem_tensor(thr_mma.partition_shape_C((mrows, d)), cutlass.Float32)
        acc_O.fill(0.0)
        acc_O_mn = _mn_view(acc_O)
        cS = _mn_view(thr_mma.partition_C(cute.make_identity_tensor((mrows, kt))))
        n_rows = cute.size(acc_O_mn, mode=[0])   # 2 rows per thread: lane // 4 and lane // 4 + 8
        n_cols = cute.size(cS, mode=[1])
        rm = cute.make_rmem_tensor((n_rows,), cutlass.Float32)
        rl = cute.make_rmem_tensor((n_rows,), cutlass.Float32)
        rm.fill(NEG_BIG)
        rl.fill(0.0)
        hvs = None
        if cutlass.const_expr(KEY_MODS):  # h and vector values of this thread's head rows (padding rows: the last head)
            hvs = [variant.head(head0 + cutlass.min(cS[r, 0][0], heads - 1)) for r in range(n_rows)]

        for step in cutlass.range(n_steps, unroll=1):
            cute.arch.cp_async_wait_group(stages - 2)   # this lane's copies of the step have landed ...
            cute.arch.sync_warp()                       # ... and every lane's (the warp reads them with ldmatrix)
            slot = step % stages
            ahead = step + stages - 1
            if ahead < n_steps:                         # refill the slot the warp finished in the previous step
                _load_kv_tile(g2s_atom, mK, mV, tKVs, s0 + (ahead * nw + warp) * kt, s1, r0, cc, h, b,
                              2 * (warp * stages + ahead % stages), kt // rpp, rpp)
            cute.arch.cp_async_commit_group()
            ks = 2 * (warp * stages + slot)
            # S = q . K^T  (16 x kt, fp32)
            acc_S = cute.make_rmem_tensor(thr_mma.partition_shape_C((mrows, kt)), cutlass.Float32)
            acc_S.fill(0.0)
            for k in cutlass.range_constexpr(cute.size(tSrK, mode=[2])):
                cute.copy(cp_k, tSsK[None, None, k, ks], tSrK_v[None, None, k])
                if cutlass.const_expr(not q_in_regs):
                    cute.copy(cp_q, tSsQ[None, None, k], tSrQ_v[None, None, k])
            for k in cutlass.range_constexpr(cute.size(tSrK, mode=[2])):
                cute.gemm(tiled_mma, acc_S, tSrQ[None, None, k], tSrK[None, None, k], acc_S)
            for k in cutlass.range_constexpr(cute.size(tOrVt, mode=[2])):
                cute.copy(cp_v, tOsVt[None, None, k, ks + 1], tOrVt_v[None, None, k])
            # online softmax per head row (base 2), keys >= s1 masked to -inf
            key0 = s0 + (step * nw + warp) * kt
            s_mn = _mn_view(acc_S)
            for r in cutlass.range_constexpr(n_rows):
                mx = cutlass.Float32(-math.inf)
                for c in cutlass.range_constexpr(n_cols):
                    if cutlass.const_expr(KEY_MODS):  # score() and keep() of the variant on each (key, head) score
                        s = variant.score(s_mn[r, c] * qscale, hvs[r], key0 + cS[0, c][1])
                        s = cutlass.select_(key0 + cS[0, c][1] < s1, s, -math.inf)
                    else:
                        s = cutlass.select_(key0 + cS[0, c][1] < s1, s_mn[r, c] * qscale, -math.inf)
                    s_mn[r, c] = s
                    mx = cute.arch.fmax(mx, s)
                m_new = cute.arch.fmax(rm[r], _quad_reduce(mx, cute.arch.fmax))
                alpha = cute.math.exp2(rm[r] - m_new, fastmath=True)
                rm[r] = m_new
                psum = cutlass.Float32(0.0)
                for c in cutlass.range_constexpr(n_cols):
                    p = cute.math.exp2(s_mn[r, c] - m_new, fastmath=True)
                    s_mn[r, c] = p
                    psum = psum + p
                rl[r] = rl[r] * alpha + psum
                for c in cutlass.range_constexpr(cute.size(acc_O_mn, mode=[1])):
                    acc_O_mn[r, c] = acc_O_mn[r, c] * alpha
            # O += P . V  (P: the S accumulator converted to 16-bit, re-read as the A operand)
            rP = cute.make_fragment_like(acc_S, dt)
            rP.store(acc_S.load().to(dt))
            pl = cute.logical_divide(rP.layout, (None, None, 2))
            tOrP = cute.make_tensor(rP.iterator, cute.make_layout(
                ((pl.shape[0], pl.shape[2][0]), pl.shape[1], pl.shape[2][1]),
                stride=((pl.stride[0], pl.stride[2][0]), pl.stride[1], pl.stride[2][1])))
            for k in cutlass.range_constexpr(cute.size(tOrP, mode=[2])):
                cute.gemm(tiled_mma, acc_O, tOrP[None, None, k], tOrVt[None, None, k], acc_O)
        cute.arch.cp_async_wait_group(0)

        # merge the 4 warps' (m, l, acc) through shared memory, write the normalised partial + lse
        cO = _mn_view(thr_mma.partition_C(cute.make_identity_tensor((mrows, d))))
        for r in cutlass.range_constexpr(n_rows):
            rl[r] = _quad_reduce(rl[r], lambda x, y: x + y)
        if lane % 4 == 0:
            for r in cutlass.range_constexpr(n_rows):
                sM[warp, cO[r, 0][0]] = rm[r]
                sL[warp, cO[r, 0][0]] = rl[r]
        cute.arch.sync_threads()   # also: every warp is done with its K/V slots, which become sAcc
        for r in cutlass.range_constexpr(n_rows):
            row = cO[r, 0][0]
            mx = sM[0, row]
            for w in cutlass.range_constexpr(1, nw):
                mx = cute.arch.fmax(mx, sM[w, row])
            alpha = cute.math.exp2(rm[r] - mx, fastmath=True)
            for c in cutlass.range_constexpr(cute.size(acc_O_mn, mode=[1])):
                sAcc[warp, row, cO[r, c][1]] = acc_O_mn[r, c] * alpha
        cute.arch.sync_threads()
        for it in cutlass.range_constexpr((d * heads + nt - 1) // nt):
            idx = tidx + it * nt
            if idx < d * heads:
                row = idx // d
                dd = idx - row * d
                mx = sM[0, row]
                for w in cutlass.range_constexpr(1, nw):
                    mx = cute.arch.fmax(mx, sM[w, row])
                tot = cutlass.Float32(0.0)
                o = cutlass.Float32(0.0)
                for w in cutlass.range_constexpr(nw):
                    tot = tot + sL[w, row] * cute.math.exp2(sM[w, row] - mx, fastmath=True)
                    o = o + sAcc[w, row, dd]
                if cutlass.const_expr(FINISH_MODS):
                    o, lse = variant.finish(o, tot, mx, head0 + row, n_valid)
                    _write_partial(mO, mLse, mOut, o, lse, dd, split, head0 + row, b, n_valid)
                else:
                    _write_partial(mO, mLse, mOut, o / tot, mx + cute.math.log2(tot, fastmath=True), dd, split,
                                   head0 + row, b, n_valid)
        if n_valid > 1:
            _fused_merge(mO, mLse, mCnt, mOut, sW, sFlag, n_valid, (bh * nchunks + chunk), head0, b, tidx, nt,
                         heads, d, variant)


def _views(mQ, mK, mV, mLens, mO, mLse, mOut, d, dims):
    """The launcher's tensors as the kernels index them: dims fastest-first, `dims` splitting each row of D
    into the path's vectors. Every tensor is rebuilt from its data pointer and shape values (the caches, seq_lens
    and out are contiguous: run() and the wrapper check it; the partials are the scratch _prepare allocates
    contiguous; q keeps its own batch stride, a multiple of VEC the wrapper checks, so that a view into a fused
    QKV output needs no copy), with the divisibility facts the kernels were written for. The partial o is
    ((4, d/4), splits, Hq, B): a split CTA stores it by dim, the fused merge reads it 4 floats (128 bits) at once."""
    B, Hq, _ = mQ.shape
    _, S, Hkv, _ = mK.shape
    splits = mO.shape[2]
    hd = cute.assume(Hkv * d, divby=d)
    qd = cute.assume(Hq * d, divby=d)
    sd = cute.assume(splits * d, divby=d)
    qb = cute.assume(mQ.stride[0], divby=VEC)  # q's batch stride (its heads and D are contiguous)
    q = cute.make_tensor(mQ.iterator, cute.make_layout((dims[0], Hq, B), stride=(dims[1], d, qb)))
    kv_layout = cute.make_layout((dims[0], Hkv, S, B), stride=(dims[1], d, hd, cute.assume(S * hd, divby=d)))
    o = cute.make_tensor(mO.iterator, cute.make_layout(((4, d // 4), splits, Hq, B),
                                                       stride=((1, 4), d, sd, cute.assume(Hq * sd, divby=d))))
    lse = cute.make_tensor(mLse.iterator, cute.make_layout((splits, Hq, B), stride=(1, splits, Hq * splits)))
    out = cute.make_tensor(mOut.iterator, cute.make_layout((d, Hq, B), stride=(1, d, qd)))
    views = (q, cute.make_tensor(mK.iterator, kv_layout), cute.make_tensor(mV.iterator, kv_layout),
             cute.make_tensor(mLens.iterator, cute.make_layout(B)), o, lse, out)
    return views, (B, Hq, Hkv, S, splits)


@cute.jit
def decode_launch(
    mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mLens: cute.Tensor, mO: cute.Tensor, mLse: cute.Tensor,
    mCnt: cute.Tensor, mOut: cute.Tensor, chunks: cutlass.Int32, split_size: cutlass.Int32, qscale: cutlass.Float32,
    stream, d: cutlass.Constexpr[int], heads: cutlass.Constexpr[int], nch: cutlass.Constexpr[int],
    unroll: cutlass.Constexpr[int], stages: cutlass.Constexpr[int], *vecs,
):
    """Host side: re-view the tensors (dims fastest-first) and launch the split kernel (it merges, too). `vecs`: a
    lowered variant's vectors (lowered.VECTORS: [Hq] or [B] each), none for the built-in op."""
    tpk = d // (VEC * nch)
    dims = ((VEC, tpk, nch), (1, VEC, VEC * tpk))  # D split into (8 contiguous values, tpk threads, nch chunks)
    (q, k, v, lens, o, lse, out), (B, Hq, Hkv, S, splits) = _views(mQ, mK, mV, mLens, mO, mLse, mOut, d, dims)
    split_kernel(q, k, v, lens, o, lse, mCnt, out, Hkv, Hq // Hkv, S, split_size, qscale, vecs, d, heads, nch, unroll,
                 stages).launch(grid=[chunks, splits, B * Hkv], block=[THREADS, 1, 1],
                                smem=_split_smem_bytes(d, heads, nch, unroll, stages), stream=stream,
                                min_blocks_per_mp=CC_MIN_CTAS)


@cute.jit
def decode_launch_mma(
    mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mLens: cute.Tensor, mO: cute.Tensor, mLse: cute.Tensor,
    mCnt: cute.Tensor, mOut: cute.Tensor, chunks: cutlass.Int32, split_size: cutlass.Int32, qscale: cutlass.Float32,
    stream, d: cutlass.Constexpr[int], heads: cutlass.Constexpr[int], kt: cutlass.Constexpr[int],
    stages: cutlass.Constexpr[int], *vecs,
):
    """Host side of the tensor-core path: rows as (8 values, d/8 chunks) views, then the split kernel."""
    dims = ((VEC, d // VEC), (1, VEC))
    (q, k, v, lens, o, lse, out), (B, Hq, Hkv, S, splits) = _views(mQ, mK, mV, mLens, mO, mLse, mOut, d, dims)
    mma_split_kernel(q, k, v, lens, o, lse, mCnt, out, Hkv, Hq // Hkv, S, split_size, qscale, vecs, d, heads, kt,
                     stages).launch(grid=[chunks, splits, B * Hkv], block=[MMA_WARPS * 32, 1, 1],
                                    smem=_mma_smem_bytes(d, heads, kt, stages), stream=stream)


def _mma_smem_bytes(d: int, heads: int, kt: int, stages: int) -> int:
    """Shared memory of a tensor-core CTA: warp maxima/sums, the q tile, the per-warp K/V slots (>= accumulators)."""
    mrows = MMA_M * -(-heads // MMA_M)
    kv = max(2 * kt * d * 2 * stages * MMA_WARPS, 4 * MMA_WARPS * mrows * (d + 4), 4 * MAX_SPLITS * heads)
    return 2 * 4 * MMA_WARPS * mrows + 16 + 2 * mrows * d + kv + 3 * 1024


def _split_smem_bytes(d: int, heads: int, nch: int, unroll: int, stages: int) -> int:
    """Shared memory of a split CTA: lane maxima and sums, plus max(K/V slots, lane accumulators)."""
    rows = THREADS // (d // (VEC * nch))
    kv_bytes = 2 * VEC * THREADS * nch * unroll * 2 * stages
    return 4 * 2 * rows * heads + 16 + max(4 * d * heads * rows, kv_bytes, 4 * MAX_SPLITS * heads) + 64


# ------------------------------------------------------------------------------------------------
# Python entry points
# ------------------------------------------------------------------------------------------------

_compiled: dict = {}  # (dtype, [mma,] d, heads, ...constexprs, warps/threads[, vector dtypes]) -> compiled launcher
# (torch dtype, q.shape, k_cache.shape, device[, vector dtypes]) -> (launcher, the scratch tensors, the scalars after
# the tensors: the plan's runtime numbers chunks and split_size, and qscale); the hot path's one lookup
_launches: dict = {}
# a lowered variant's run(*inputs): where q, k_cache, v_cache, seq_lens and the vectors are among the inputs (ROLES)
_AT = tuple(lowered.ROLES.index(role) for role in ("q", "k", "v", "lens")) if LOWERED else (0, 1, 2, 3)
_VECTORS_AT = tuple(i for i, role in enumerate(lowered.ROLES) if role in ("head", "batch")) if LOWERED else ()
_VECTOR_DTYPES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16", torch.float64: cutlass.Float64}


def _variant(dtype: str, d: int, p: dict):
    """(cache key, launcher, constexpr arguments) of the path the plan picked."""
    if p["mma"]:  # tensor-core path: (d, heads, keys per warp tile, stages)
        key = (dtype, "mma", d, p["heads"], p["unroll"], p["stages"], MMA_WARPS, MAX_SPLITS)
        return key, decode_launch_mma, key[2:-2]
    key = (dtype, d, p["heads"], p["nch"], p["unroll"], p["stages"], THREADS, MAX_SPLITS)
    return key, decode_launch, key[1:-2]


def _compile_args(dtype: str, d: int, consts, vector_dtypes=()) -> tuple:
    """Fake tensors of one symbolic shape, 16-byte aligned; shared symbols let the wrapper check that they agree.

    B: q, caches, seq_lens, partials, out; Hq: q, partials, out; S and Hkv: the two caches; splits: the two
    partials; items: the counters. D is static (it is a constexpr of the variant), and so are q's head and dim
    strides (D, 1): its batch stride is free, a multiple of VEC. Then placeholders for
    chunks, split_size, qscale, and a lowered variant's vectors, contiguous, [Hq] ("head") or [B] ("batch"), of
    their own dtypes, element-aligned (each value is one scalar load)."""
    B, Hq, Hkv, S, splits, items = (rt.dim() for _ in range(6))
    q = rt.tensor(dtype, (B, Hq, d), (rt.dim(VEC), d, 1))  # any batch stride of whole 128-bit chunks
    k, v, out = (rt.tensor(dtype, shape) for shape in ((B, S, Hkv, d), (B, S, Hkv, d), (B, Hq, d)))
    tensors = (q, k, v, rt.tensor("int32", (B,)), rt.tensor("fp32", (B, Hq, splits, d)),
               rt.tensor("fp32", (B, Hq, splits)), rt.tensor("int32", (items,)), out)
    align = {"fp32": 4, "bf16": 2, "fp16": 2}
    vectors = tuple(rt.tensor(name, (Hq if role == "head" else B,), (1,), align.get(name, 8))
                    for name, role in zip(vector_dtypes, VECTOR_ROLES))
    return (*tensors, cutlass.Int32(1), cutlass.Int32(1), cutlass.Float32(1.0), rt.STREAM, *consts, *vectors)


def _softmax_scale(d: int) -> float:
    return float(SCALE) if SCALE is not None else 1.0 / math.sqrt(d)


def _qscale(d: int) -> float:
    """What q . k is multiplied by: scale * log2(e) (scores in base 2), or a variant's lowered.scale(d) alone when
    score() follows (it takes natural units; its result is multiplied by log2(e))."""
    if LOWERED:
        return float(lowered.scale(d)) * (1.0 if SCORE_MOD else LOG2E)
    return _softmax_scale(d) * LOG2E


def _prepare(q, k_cache, v_cache, seq_lens, out) -> tuple:
    """A signature's first call, or a refused one: host.py's checks, the plan, the launcher and the scratch.

    The scratch (fp32 partials o[B, Hq, splits, D] and lse[B, Hq, splits], int32 arrival counters, one per
    (b, KV head, head chunk), zeroed here and reset by the kernel itself) belongs to the signature, so run()
    allocates nothing but `out`. The price: two calls of one signature must not run concurrently (two streams
    at once); one stream, or graphs replayed one after the other, are fine. Made under CUDA-graph capture the
    scratch would live in the graph's private pool, so the first call of a shape must be an eager one."""
    dtype, B, Hq, Hkv, S, D, out = host.decode_dims(OP, q, k_cache, v_cache, seq_lens, out, "128-bit loads")
    return _prepared(dtype, B, Hq, Hkv, S, D, q, k_cache, seq_lens, ())


def _prepare_lowered(inputs, out) -> tuple:
    """_prepare of a lowered variant: run()'s inputs by their ROLES (host.decode_operands checks the vectors too)."""
    dtype, B, Hq, Hkv, S, D, out, (q, k_cache, _, seq_lens), vectors = host.decode_operands(
        OP, lowered, inputs, out, "128-bit loads")
    for name, t in zip(lowered.VECTORS, vectors):
        if t.dtype not in _VECTOR_DTYPES:
            raise TypeError(f"{OP}: {name} must be float32, bfloat16, float16 or float64, got {t.dtype}")
    return _prepared(dtype, B, Hq, Hkv, S, D, q, k_cache, seq_lens, tuple(_VECTOR_DTYPES[t.dtype] for t in vectors))


def _prepared(dtype, B, Hq, Hkv, S, D, q, k_cache, seq_lens, vector_dtypes) -> tuple:
    if k_cache.numel() >= 2**31:
        raise ValueError(f"{OP}: the KV cache has >= 2^31 elements; this kernel indexes with int32")
    host.check_aligned(OP, (seq_lens,), "seq_lens too: the kernels are compiled assuming it")
    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError(f"{OP}: the first call of a shape allocates its scratch; make it before CUDA-graph capture")
    p = plan(B, Hq, Hkv, S, D)
    ckey, launch, consts = _variant(dtype, D, p)
    launcher = rt.compiled(_compiled, (*ckey, *vector_dtypes), launch,
                           lambda: _compile_args(dtype, D, consts, vector_dtypes))
    splits = p["splits"]
    scratch = (q.new_empty((B, Hq, splits, D), dtype=torch.float32), q.new_empty((B, Hq, splits), dtype=torch.float32),
               torch.zeros(p["items"], dtype=torch.int32, device=q.device))
    return launcher, scratch, (p["chunks"], p["split_size"], _qscale(D))


def run(*inputs, out=None):
    """out[b, h] = softmax(q[b, h] . k[b, :len, h // group]^T * scale) . v[b, :len, h // group] (fp32 math).

    run(q, k_cache, v_cache, seq_lens, out=None); a lowered variant's run(*inputs, out=None) takes lowered.INPUTS
    in order (_run_lowered). The hot path is a dict lookup, the out allocation when none is given (torch's caching
    allocator), three contiguity checks and one TVM-FFI call that launches the one kernel (its wrapper checks q's
    strides: (any multiple of VEC, D, 1)); see cutedsl_runtime.py."""
    if LOWERED:
        return _run_lowered(inputs, out)
    if len(inputs) != 4:
        host.check_count(OP, inputs, 4)
    q, k_cache, v_cache, seq_lens = inputs
    signature = (q.dtype, q.shape, k_cache.shape, q.device)
    prepared = _launches.get(signature)
    if prepared is None:
        prepared = _launches[signature] = _prepare(q, k_cache, v_cache, seq_lens, out)
    launcher, (o_part, lse_part, counters), scalars = prepared
    if out is None:
        out = q.new_empty(q.shape)  # contiguous, whatever q's batch stride
    try:
        if not (k_cache.is_contiguous() and v_cache.is_contiguous() and out.is_contiguous()):  # q: the wrapper
            raise ValueError(f"{OP}: k_cache, v_cache and out must be contiguous")
        launcher(q, k_cache, v_cache, seq_lens, o_part, lse_part, counters, out, *scalars)
    except (TypeError, ValueError):  # refused before anything was launched (here or by the wrapper)
        _prepare(q, k_cache, v_cache, seq_lens, out)  # host.py says why in the words every cell uses ...
        raise  # ... and the refusal's own message stands if host.py finds nothing wrong
    return out


def _run_lowered(inputs, out):
    """run() of a lowered variant: the same hot path, its vectors (VECTORS) appended to the launch's arguments;
    the signature adds their dtypes (the wrapper checks their shapes against q's Hq or B, and their stride 1)."""
    if len(inputs) != len(lowered.INPUTS):
        _prepare_lowered(inputs, out)  # raises, in host.py's words
    q, k_cache, v_cache, seq_lens = (inputs[i] for i in _AT)
    vectors = [inputs[i] for i in _VECTORS_AT]
    signature = (q.dtype, q.shape, k_cache.shape, q.device, *(t.dtype for t in vectors))
    prepared = _launches.get(signature)
    if prepared is None:
        prepared = _launches[signature] = _prepare_lowered(inputs, out)
    launcher, (o_part, lse_part, counters), scalars = prepared
    if out is None:
        out = q.new_empty(q.shape)  # contiguous, whatever q's batch stride
    try:
        if not (k_cache.is_contiguous() and v_cache.is_contiguous() and out.is_contiguous()):  # q: the wrapper
            raise ValueError(f"{OP}: k_cache, v_cache and out must be contiguous")
        launcher(q, k_cache, v_cache, seq_lens, o_part, lse_part, counters, out, *scalars, *vectors)
    except (TypeError, ValueError):  # refused before anything was launched (here or by the wrapper)
        _prepare_lowered(inputs, out)  # host.py says why in the words every cell uses ...
        raise  # ... and the refusal's own message stands if host.py finds nothing wrong
    return out


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", dtype: str | None = None,
                 vector_dtype: str | None = None) -> str:
    """Compile run()'s launcher of the case's path for sm_90a without a GPU (fake tensors); write and return the PTX.

    One compile serves every shape of a path, so the case only picks the path (its D and the plan's constexprs). A
    lowered variant compiles with its vectors (if any) of `vector_dtype`: by default the workspace's dtype, as
    reference.make_inputs draws them and a model holds them."""
    dtype = dtype or OP_SPEC["dtype"]
    vector_dtype = vector_dtype or dtype
    case = case or OP_SPEC["cases"][0]
    v = case["vars"]
    p = plan(v["B"], v["Hq"], v["Hkv"], v["S"], v["D"])
    _, launch, consts = _variant(dtype, v["D"], p)
    path = "mma" if p["mma"] else "cc"
    return rt.dump_ptx(launch, _compile_args(dtype, v["D"], consts, (vector_dtype,) * len(VECTOR_ROLES)), out_dir,
                       f"{OP}_{dtype}_d{v['D']}_h{p['heads']}_{path}")


def describe(case: dict) -> dict:
    """Which path and split plan a case takes, and why (the plan's numbers and the regime in words)."""
    v = case["vars"]
    B, Hq, Hkv, S, D = (v[k] for k in ("B", "Hq", "Hkv", "S", "D"))
    p = plan(B, Hq, Hkv, S, D)
    if p["mma"]:
        path = "tensor cores (mma.sync m16n8k16, fp32 accumulate)"
        why = (f"D = {D} <= 128: the {p['heads']} heads of a CTA are the M rows "
               f"({p['rows']} with the zero padding), {p['unroll']}-key warp tiles")
        threads, smem = MMA_WARPS * 32, _mma_smem_bytes(D, p["heads"], p["unroll"], p["stages"])
        movement = (f"each warp streams its own {p['unroll']}-key K and V tiles global -> shared with 16-byte "
                    f"cp.async.cg into {p['stages']} swizzled slots (wait_group + bar.warp.sync, no CTA barrier); "
                    "ldmatrix (.trans for V) feeds mma.sync q.K^T and P.V, online softmax on the fp32 accumulators, "
                    "the 4 warps merge through shared memory")
    else:
        path = "CUDA cores (fp32 FMA + shuffles)"
        why = (f"D = {D} (the mma path's fp32 O tile would not fit the registers): {p['heads']} heads per CTA, "
               f"{p['nch']} 128-bit chunks of a row per thread")
        threads, smem = THREADS, _split_smem_bytes(D, p["heads"], p["nch"], p["unroll"], p["stages"])
        movement = (f"K/V rows in {p['nch']} x 128-bit chunks per thread, global -> shared with 16-byte cp.async.cg, "
                    f"a per-thread pipeline {p['stages']} steps deep; fp32 dot products + butterfly shuffles, online "
                    "softmax in registers, cross-lane merge through shared memory")
    ctas = p["grid"][0] * p["grid"][1] * p["grid"][2]
    waves = ctas / p["slots"]
    regime = ("small B*Hkv: the split count fills the resident slots" if p["items"] < p["slots"] / 2 else
              "large B*Hkv: one split per item already fills the slots" if p["splits"] == 1 else
              "middle: splits chosen for whole waves")
    merge = ("none: every sequence fits one split, the CTA writes out itself" if p["splits"] == 1 else
             "fused: the last of a (sequence, KV head) item's split CTAs, found with an atomic counter, merges the "
             "fp32 partials in split order (a sequence with one non-empty split writes out directly)")
    keys = min(S, WINDOW) if WINDOW else S
    described = {
        "path": path, "why_path": why, "regime": regime,
        "grid": p["grid"], "grid_blocks": ctas, "threads_per_cta": threads,
        "splits": p["splits"], "split_size_keys": p["split_size"], "items": p["items"],
        "resident_slots": p["slots"], "waves": round(waves, 2), "wave_efficiency": p["wave_efficiency"],
        "modelled_us": p["model_us"],
        "why_splits": f"{p['items']} items x {p['splits']} splits = {ctas} CTAs = {waves:.2f} waves of {p['slots']} "
                      f"slots ({NUM_SMS} SMs); the least modelled time of every split count (see _splits)"
                      + (f"; sized over the {keys}-key window, not S = {S}" if keys < S else ""),
        "query_heads_per_cta": p["heads"], "keys_per_cta_step": p["block"], "pipeline_stages": p["stages"],
        "smem_bytes_per_cta": smem, "merge": merge, "launches": 1, "data_movement": movement,
    }
    if LOWERED:
        parts = [f"scale {lowered.scale(D):.6g}"] + [what for on, what in (
            (SCORE_MOD, "score() on every (key, head) score"), (KEEP_MOD, "keep() as a select to -inf"),
            (KEY_RANGE, "splits over key_range() [lo_b, hi_b) only" + (f" (at most {WINDOW} keys)" if WINDOW else "")),
            (SINKS, "sink() in the merge and the direct write")) if on]
        described["variant"] = f"lowered ({lowered.SOURCE}): " + ", ".join(parts)
        described["keys_read_per_sequence"] = f"<= {keys}" if KEY_RANGE else "len_b"
    return described
