"""Reduction V0 kernel in CuTe DSL for Hopper (sm_90a): one program over the rows of x, reduced over the last dim.

Every op of this cell is a program: the built-in ones (sum, mean, max, softmax, rmsnorm) are the PyTorch functions
of tools/patterns/reduction/programs.py, a user's op is their own function, and a bake traces either into
lowered.py (tests/lowered_examples/CONTRACT.md). This file is the data movement around it: it loads the row into
registers, calls lowered.compute() with this thread's fp32 values and a reduce(kind, v) that is the row's
reduction hierarchy, and stores what compute() returns. One kernel, one run().

What it computes
    x is [M, N] (last dim contiguous, row stride ld >= N, e.g. ``base[:, :N]`` of a wider tensor); the other
    inputs are rows like x, [N] vectors (rmsnorm's weight), scalars, one value per row (a per-token scale, a
    padding mask) or masks (lowered.KINDS). Outputs are rows
    [M, N] (softmax, rmsnorm) or one value per row [M] (sum, mean, max) in OUT_DTYPES. Loads are bf16/fp16/fp32,
    all math and accumulation is fp32, and every output is rounded once by its store. NaN and -inf follow torch:
    a row holding a NaN gets max NaN and an all-NaN softmax row (see NaN semantics).

Why this shape (roofline)
    A row reduction does 1-5 FLOP per element moved, far left of Hopper's ridge point (H200, cited:
    989 TFLOP/s dense bf16 / 4.8 TB/s ~ 206 FLOP/byte), so the kernel is a bandwidth kernel: read x once,
    write the output once, with 128-bit coalesced loads and enough bytes in flight (Little's law:
    4.8 TB/s x ~600 ns ~ 2.9 MB, ~22 KiB per SM of 132). softmax and rmsnorm need the row twice (reduce,
    then normalise), so the row stays in registers between the two steps: HBM is read once and written
    once, where a two-kernel softmax (max, then exp and sum) reads it twice.

The reduction hierarchy: reduce(kind, v) (one row is owned by TPR = threads-per-row consecutive threads)
    0. mask:    values past the row end become the identity (0 for sum, -inf for max, +inf for min) first:
                compute() may have turned a not-loaded 0 into anything (exp(0) = 1).
    1. thread:  each thread reduces its (VEC, CHUNKS) values serially in fp32 (no communication at all).
    2. warp:    butterfly ``shfl.sync.bfly`` over min(TPR, 32) lanes, log2 steps (5 for a full warp);
                with TPR < 32 one warp holds 32/TPR rows and the butterfly stays inside each group.
    3. CTA:     with TPR > 32 the row spans TPR/32 warps: lane 0 of each warp writes its partial to
                shared memory ([rows, warps_per_row, slot] fp32), one ``bar.sync``, then every warp
                reads the TPR/32 partials back and does one more full-warp butterfly, so every
                thread ends with the row result (softmax needs it to normalise its own values).
                Each reduce() call of compute() uses its own smem slot, so one barrier per call.
    4. cluster: a row that needs more than CLUSTER_ABOVE = 256 threads is split across a thread-block
                cluster of up to 16 CTAs of 256 or more (plan); each CTA reduces its share as above, then
                the CTAs exchange their results through distributed shared memory (_ClusterRow: one
                st.async per CTA pair into the receiver's smem, completed on its mbarrier, no cluster-wide
                barrier) and every CTA combines them in rank order, so each holds the same row value. With
                CTAs of 256 the CTA step is skipped: every warp sends its own partial (the direct exchange).
                This keeps a long row in registers (read once) and puts more CTAs on the GPU when rows
                are few: 8 x 131072 runs on 128 CTAs instead of 8, 4.1 us instead of 17.8 on the H200
                (benchmarks/2026-12-04-h200-cluster.md). Where rows are many, a program of one load takes
                half the CTAs a row at twice the values a thread, 3 CTAs an SM (plans: quack's geometry).

NaN semantics (as torch.amax / torch.softmax)
    Every max is the IEEE-754 ``maximum`` (PTX ``max.NaN.f32``: NaN in, NaN out), never ``fmax``'s
    ``maximumNumber`` (``max.f32``), which drops a NaN when the other operand is a number. In-thread,
    ``x.reduce(MAX)`` already lowers to MLIR's MAXIMUMF = ``max.NaN.f32``; the warp butterfly, the
    cross-warp smem step and the looped path's running max use ``cute.arch.fmax(..., nan=True)``
    (``_max``), so one NaN anywhere in a row survives every level of the hierarchy: a butterfly built
    on plain fmax would drop it between lanes. softmax then computes exp(x - NaN) = NaN for every
    element, so the whole row is NaN, as torch's is. -inf is unchanged: some -inf values softmax to 0,
    an all -inf row gives max -inf and a NaN softmax row (-inf - -inf), both as torch. ``max.NaN.f32``
    is one instruction, like ``max.f32``: the semantics cost no instructions.

Thread/value layout (register path)
    The row is cut into 128-bit vectors of VEC = 128 / bits elements (8 for bf16/fp16, 4 for fp32);
    thread t of a row owns vectors t, t + TPR, t + 2*TPR, ... (CHUNKS of them):

        x viewed as (VEC, NV, M) : (1, VEC, ld)          NV = N / VEC vectors per row
        thread t, value (v, k)  ->  x[row, (k*TPR + t)*VEC + v]

        k = 0:  | t0: v0..v7 | t1: v0..v7 | ... | t(TPR-1) |     one ld.global.v4 per thread,
        k = 1:  | t0: v0..v7 | t1: v0..v7 | ... | t(TPR-1) |     a warp reads 512 contiguous bytes

    Per N, TPR is the smallest power of two (1..16 * 1024, over a cluster's CTAs) that keeps CHUNKS * VEC <= the
    values a thread may hold per loaded tensor (VALUES_PER_THREAD = 32 fp32 values for one or two loads: the row
    cached in registers costs 32 of the 255 registers; more loads share 64, see values_per_load); a CTA has
    max(128, TPR) threads and holds 128/TPR rows when TPR < 128. A row of at most 32 vectors gets one vector per
    thread, and a one-CTA row that would leave budget unused takes fewer, fuller warps (plan). Examples, bf16:
        N = 1000             TPR 32,   4 chunks, 4 rows/CTA    -- one warp per row, no smem step
        N = 4096             TPR 128,  4 chunks, 1 row/CTA     -- 4 warps per row, smem step
        N = 5120             TPR 160,  4 chunks, 1 row/CTA     -- 5 warps: 256 threads would hold 3 chunks each
        N = 8192             TPR 256,  4 chunks, 1 row/CTA     -- 64 B per thread in flight, 32768 CTAs
        N = 32768            TPR 1024 = a cluster of 4 CTAs of 256 threads, 4 chunks each
        N = 131072           TPR 4096 = a cluster of 16 CTAs of 256, 4 chunks each
        N = 524288           TPR 16384 = a cluster of 16 CTAs of 1024: the largest register-resident row
    That is the plan of any M. Many rows of one load (M of two waves or more, on a GPU with the H200's bandwidth
    per SM) take 64 values a thread at 3 CTAs an SM instead, and rows of one CTA that fit on the SMs with one CTA
    each (M <= SM_COUNT) take 16 values a thread, in twice the threads (plans):
        N = 131072, M >= 98  TPR 2048 = a cluster of 8 CTAs of 256, 8 chunks each
        N = 8192,  M <= 132  TPR 512, 2 chunks
    fp32 has VEC = 4, so CHUNKS <= 8 and the same TPR per N. 32 values is the balance between bytes in
    flight per thread (fewer values: more, smaller CTAs) and registers (more values: lower occupancy);
    the 16 / 32 / 64 sweep is in benchmarks/2026-11-30-h200-reduction.md.

Larger N (> 16 * 1024 * 32 elements of one load): the looped path
    One CTA of 512 threads per row, a dynamic loop over the row 2048 vectors (16 KiB bf16) at a time
    (4 chunks per thread per iteration), in passes that lowered.PASSES schedules (tools/lower/ir.py,
    ``schedule``): pass p runs compute() on every slice and folds the thread partials of the reduce() calls
    of pass p; calls of earlier passes return their row results, later ones a dummy (what depends on it is
    discarded, and compiled away). A pass ends with the row reduction of its partials. The last pass knows
    every result and writes the row outputs; the reduced outputs, which depend on the results alone, come
    from one more compute() on filler values. Independent reductions share a pass, and an online pair
    (lowered.ONLINE: sum(exp(a - m)) with m = max(a), softmax's) shares one: each thread keeps a running max
    and rescales its running sum by exp(m_old - m_new) when the max grows (shifting by 0 while the max is
    still -inf, so a masked -inf prefix gives 0, not NaN: benchmarks/2026-12-01-h200-reduction-masked-prefix.md),
    and the row combines the pairs as sum_t s_t * exp(m_t - M). So softmax reads a long row twice, and rmsnorm
    twice; the second read is expected to hit L2 (one row per resident CTA, ~132 x 1 MiB, is over the 50 MB L2 at
    the largest rows: these rows are rare, and the second pass then reads part of the row from HBM).

Alignment and predication
    VEC is the widest power of two (<= 128 bits) that divides N, every row stride and the element offsets
    of every input and row output; N = 1000 bf16 contiguous keeps VEC 8, N = 7 or a row stride of 1003
    falls back to VEC 1 (scalar ld.global, still coalesced across threads, still correct). Vectors past
    the row end and rows past M are predicated off per 128-bit access. When CHUNKS * TPR == NV exactly
    (N = 4096, 8192, ...) a constexpr drops the predicates and the loads issue back to back. A plan gives each
    thread the fewest chunks that cover the row, so only its last chunk can reach past the row end: with
    TAIL_PREDICATES (off until timed on the H200) the others issue unpredicated, from one base address
    (_whole_chunks).

What compute() gets (lowered.py)
    INPUTS ("row": [M, N], any row stride; "vector": [N]; "scalar"; "per_row": [M] or [M, 1]; a mask, bool),
    OUTPUTS ("row" [M, N], "reduced" [M], "reduced_keepdim" [M, 1]) with OUT_DTYPES, and compute(*values, n,
    reduce): straight-line fp32 math on pointwise.py's `pw.` functions, with REDUCTIONS[i] the kind of its i-th
    reduce() call.
    - Inputs come in the function's parameter order; x is the first row input. compute()'s arguments are lowered.ARGS:
      each comes from a load (a register fragment of (VEC, CHUNKS)) or is a single fp32 value, read once per thread: a
      scalar input's one element, or a per-row input's element of the thread's row (``x * scale[:, None]``, a padding
      mask over [B, S, D]). A bool mask is read as its bytes (rt.masks_as_bytes; VEC bytes per access: 64-bit beside a
      bf16 x) and handed over as 0.0 / 1.0. run() passes it as the model does, to a launcher compiled on bool
      (BOOL_MASKS; off, a uint8 view of it per call). An input the function reads in parts ([M, r*N], WIDTHS r) is
      loaded per part j from column j*N (x.chunk(2, -1): two 128-bit loads per chunk), or, for interleaved lanes (x[...,
      ::2], x[..., 1::2]), as ONE fragment of r*VEC contiguous elements per chunk that each lane views with stride r:
      every byte of x once, 128-bit loads either way, the deinterleave in registers. Outputs are stored in OUT_DTYPES:
      x's dtype, fp32, or a quantizer's int8 / fp8 (converted once by the store).
    - x of rank 3 or more (a model's hidden states [B, S, D]): when x and the tensors that share its rows (row
      inputs, per-row inputs, a given out) are contiguous, run() passes them as they are to a launcher compiled on
      x's rank. Contiguous, each one is its M = B*S rows in row-major order, one row length apart, so the kernel
      indexes them as 2-D rows (_rows_mode); the outputs are made in x's leading shape. An input the function
      broadcasts over some of x's dims (RoPE's cos [S, D] beside q [B, S, H, D], adaLN's [B, D]) comes as it is
      too, when x has the rank the function names its dims at: its M mode has x's leading extents nested
      innermost first, its own stride where it has that dim (by name, lowered.DIMS) and 0 where it does not, so
      that x's row index r = b*S + s decodes into it (_broadcast_mode). Views cost 0.5-1 us of host time each;
      run()'s Python for Mamba2's masked [B, S, D] went from 9.6 to 4.1 us, for Llama's RoPE from 20.3 to 4.4 (a
      CPU, launcher stubbed: benchmarks/2026-12-05-leading-dims.md). Heads of c (lowered.HEADS: q [*lead, H*c])
      come as the model passes them, and the launcher makes the function's view [*lead, H, c] (_as_heads). Any
      other layout gets [M, N] views (host.rows_nd).
    - Register path (row_kernel): every input's row values are loaded once into registers, compute() runs once
      on them (its reductions in between), the row outputs are stored from registers and the reduced ones by the
      row's thread 0: HBM read once, written once. With three loads or more, those no reduction needs
      (lowered.LATE: LayerNorm's weight and bias) are loaded after the reductions, and the register budget goes
      to the loads held across them.

Measured bandwidth against the device copy and torch, per op, shape and dtype:
benchmarks/2026-11-30-h200-reduction.md; the built-ins through this one path against the hand-written ones they
replaced: benchmarks/2026-12-04-h200-one-path.md.

Interface (the same in every kbaseline cell):
    run(*inputs, out=None)             -> out     lowered.INPUTS order (softmax: run(x); rmsnorm: run(x, weight));
                                                  one tensor, or a tuple for several outputs; compiles and caches on
                                                  first use
    compile_only(case, out_dir)        -> PTX     compile for sm_90a with no GPU (fake tensors)
    describe(case)                     -> dict    threads per row, chunks, grid, data movement
"""

from __future__ import annotations

import functools
import math
import operator
import os

import cutedsl_runtime as rt  # first: it sets CUTE_DSL_ARCH=sm_90a before cutlass is imported
import host
import lowered  # the op as a program, generated at the workspace root (tests/lowered_examples/CONTRACT.md)

import cutlass
import cutlass.cute as cute
import torch
from cutlass import Float32, Int32, const_expr
from cutlass._mlir.dialects import llvm

OP_SPEC = host.OP
ACCESS_BITS = 128
VALUES_PER_THREAD = 32  # fp32 row values a thread keeps in registers per loaded tensor (see values_per_load)
MAX_TPR = 1024  # threads per CTA on the register path
MAX_UNSPLIT = 512  # ... for a row that may not be split across a cluster (_fit)
CLUSTER_ABOVE = 256  # a row needing more threads than this is split across a cluster of CTAs of this many or more
MAX_CLUSTER = 16  # CTAs per cluster (16 is sm_90's non-portable maximum, which CuTe DSL allows on every kernel)
CLUSTER_LOADS = 2  # ... for programs of at most this many loads (plan)
WHOLE_WARPS = True  # a row of one CTA whose power-of-two plan leaves budget unused takes fewer, fuller warps (plan)
LATE_LOADS = True  # the register path loads what no reduction needs (lowered.LATE) after the reductions (row_kernel)
CONVERT_LATE = False  # ... and converts what it loaded early of that to fp32 after them (_unreduced_loads). Off until
# timed on every shape it changes: it takes rmsnorm from 75 to 60 registers (ptxas, N = 8192), 4 CTAs of 256 an SM
# instead of 3. On the H200 rmsnorm 32768x8192 took 258.71 us against 264.66 and 16384x7168 tied; on an H100 it was
# within 1% at 6 of 7 shapes and 3.3% faster at 1024x32768 (benchmarks/2026-12-06-h200-goals.md,
# 2026-12-07-persist.md; cluster_ab.sh convert times the rest on the H200)
RELOAD = False  # the register path reads what the reductions need again after them, from L2, instead of holding it
# across them, and loads what they do not need after them (_late_loads): quack's reload of x above N = 8192, which
# splits a row of 32768 bf16 over 2 CTAs, not 4. At 1024x32768, 64 values a thread: 76 registers, 3 CTAs of 256 an
# SM (held: 123, 2); 32 values: 44 registers (held: 77). Off until timed on the H200 (bench_cluster.py's reload,
# reload64; benchmarks/2026-12-07-h200-l2-policy.md), where the held rows run 0.89-0.98x quack at those shapes
CLUSTER_DIRECT = True  # the few-rows plan's cluster row of CTAs of 256: its warps send their partials to every CTA
# (no bar.sync a reduction; _ClusterRow). On an H100 (benchmarks/2026-12-05-session19.md) softmax 1x32768 ran 2.55 us
# against 2.75, 128x32000 6.83 against 7.09, rmsnorm 8x65536 2.64 against 2.77; CTAs of 512 lost 3.5% (16x262144),
# and the many-rows plan spills with it (80 registers) and lost 4.7% at 4096x32000, so neither takes it
ONLINE_EXCHANGE = True  # softmax's max and sum leave the warp as one (max, sum) pair, one CTA step and one cluster
# exchange, as quack's online softmax does, not two; compute()'s rebase then moves its exps to the row's max
# (_RowReducer). Where: the plan's "pair" (_pair_exchange)
TAIL_PREDICATES = False  # a register row predicates its last chunk alone: a plan gives a thread ceil(NV / (TPR *
# CLUSTER)) chunks at every N it serves, so every chunk but the last exists for every thread (_whole_chunks).
# Predicating every chunk costs softmax 1024x128256 33 constant-bank reloads of the row's base and stride, 29
# compares and 19 selects a thread (quack's kernel, which knows N when it compiles: 3, 27, 0; ptxas + nvdisasm on a
# CPU, benchmarks/2026-12-07-h200-tail.md). Correct on an H100 (its GPU tests); off until timed on the H200
# (bench_cluster.py's tail, after_tail)
LOAD_CG = False  # the register path's loads as ld.global.cg (cached in L2 only, as quack's cp.async.cg copies): off
# until timed on the H200 (bench_cluster.py's ldcg; benchmarks/2026-12-07-h200-tail.md)
BOOL_MASKS = True  # a bool mask reaches a launcher compiled on bool as it is, not as a uint8 view made per call
# (_viewer): Mamba2's masked rows' run() 10.6 -> 9.2 us on an H100's host (benchmarks/2026-12-06-h100-host-views.md),
# where tests/test_gpu.py's test_bool_masks_reach_the_launcher_as_they_are passed
MIN_CTA_THREADS = 128  # threads of a CTA at least: rows of fewer threads go MIN_CTA_THREADS // TPR to a CTA
LOOP_THREADS = 512  # looped (large-N) path: one CTA per row
LOOP_CHUNKS = 4  # 128-bit vectors per thread per loop iteration
MANY_ROWS_DIRECT = True  # the many-rows plan's cluster row takes the direct exchange, with its online pair: quack's
# kernel (no bar.sync, one 8-byte send a warp), for programs with such a pair; without the pair that plan spilled
# (4-36 bytes), with it none (ptxas, 80 registers). On an H100, in two runs of the H200's plans
# (benchmarks/2026-12-06-h100-many-direct.md), softmax 16x262144 ran 8.41-8.44 us against 8.68-8.73, 512x32000
# 23.03-23.06 against 23.63-23.68, 256x128256 46.72-46.88 against 47.31, 1024x128256 175.4-175.5 against 176.0
MANY_ROWS_VALUES = 64  # the many-rows plan (plans): fp32 row values a thread holds, quack's 8 CTAs of 256 at 128256
MANY_ROWS_CTAS = 3  # ... CTAs of it an SM holds: ptxas fits its registers to them (.minnctapersm)
MANY_ROWS_THREADS = 768  # ... threads an SM holds, at most: 85 registers a thread, which 64 values fit (79 used)
MANY_ROWS_WAVES = 2  # ... from this many waves of its rows (MANY_ROWS_CTAS an SM) on
MANY_ROWS_GBPS_PER_SM = 30  # ... on GPUs with more HBM bandwidth per SM than this (H200 36, H100 25; op.json)
SUB_WAVE_VALUES = 16  # rows of one CTA each, no more of them than SMs: fp32 values a thread holds per load (plans)
FULL_SM_CTAS = 4  # the full-SM plan (_full_sm_plan): CTAs of its threads an SM, SM90_THREADS_PER_SM in all
FEW_ROWS_MIN_CTAS = 0  # a row of one CTA: CTAs an SM that ptxas fits its registers to (0: its own choice). Off
# (where rows fill an SM four times over, _full_sm_plan takes 4 with an L2 policy):
# rmsnorm with 16 values in CTAs of 512 and CONVERT_LATE fits 4 of them in 32 registers with no spill, Inductor's
# occupancy (bench_cluster.py's v16_cta512_4ctas), and on the H200 took 32768x8192 from 264.66 to 257.18 us but lost
# 1.9% at 16384x7168 and 16% at 16384x5120 (benchmarks/2026-12-06-h200-goals.md)
SM_COUNT = OP_SPEC["compute_units"]  # the target GPU's SMs, and its cited HBM bandwidth per SM in GB/s (op.json)
GBPS_PER_SM = OP_SPEC["hbm_gbps"] / SM_COUNT
SM90_SMEM_PER_SM = 233472  # bytes of shared memory an sm_90 SM can give its CTAs (228 KiB)
SMEM_RESERVED_PER_CTA = 1024  # ... of which the system takes this much per resident CTA
SM90_THREADS_PER_SM = 2048  # resident threads an sm_90 SM holds
LOG2_E = math.log2(math.e)

_BYTES = {name: bits // 8 for name, bits in host.DTYPE_BITS.items()}


# ------------------------------------------------------------------------------------------------
# Launch plan (host side, plain Python)
# ------------------------------------------------------------------------------------------------

def _fit(n: int, vec: int, values: int, max_cluster: int, loop_values: int) -> dict:
    """Threads per row, chunks per thread, CTA size and cluster size for a row of n elements read VEC at a time.

    `values`: the fp32 row values one thread may hold per loaded tensor (plan: values_per_load, or VEC);
    `max_cluster`: the CTAs a row may be split across (plan); `loop_values`: the looped path's values per load.

    A row that may not be split takes at most MAX_UNSPLIT threads, else the looped path: F.layer_norm at 4096x32000
    ran 227 us on 1024 threads of 4 chunks against 172 looped, and 366 against 290 at 32768x8192 on 1024 threads of
    one chunk (H200, benchmarks/2026-12-04-h200-late-loads.md)."""
    nv = -(-n // vec)
    kmax = max(1, values // vec)
    tpr = 1  # threads per row, over the whole cluster
    while tpr < MAX_TPR * max_cluster and -(-nv // tpr) > kmax:
        tpr *= 2
    cluster = max(1, min(max_cluster, tpr // CLUSTER_ABOVE))
    if WHOLE_WARPS and cluster == 1 and tpr > MIN_CTA_THREADS and -(-nv // tpr) < kmax:
        tpr = max(MIN_CTA_THREADS, -(-(-(-nv // kmax)) // 32) * 32)  # one row per CTA: whole warps, full budgets
    if -(-nv // tpr) <= kmax and tpr // cluster <= (MAX_TPR if max_cluster > 1 else MAX_UNSPLIT):
        chunks = -(-nv // tpr)
        tpr //= cluster  # per CTA
        threads = max(MIN_CTA_THREADS, tpr)
        return {"looped": False, "tpr": tpr, "chunks": chunks, "threads": threads, "cluster": cluster,
                "full": chunks * tpr * cluster == nv, "rows_per_cta": threads // tpr, "iters": 1}
    chunks = max(1, min(LOOP_CHUNKS, loop_values // vec))
    return {"looped": True, "tpr": LOOP_THREADS, "chunks": chunks, "threads": LOOP_THREADS, "cluster": 1,
            "full": False, "rows_per_cta": 1, "iters": -(-nv // (LOOP_THREADS * chunks))}


def _smem_bytes(cfg: dict, slots: int) -> int:
    """fp32 partials [rows, warps per row, slots]: one slot per reduce() call of compute() (softmax: 2); a cluster
    row has as well its received partials [slots, cluster] and an 8-byte mbarrier per slot (_ClusterRow), or with
    the direct exchange only the received partials of every warp [slots, cluster * warps] and the mbarriers, and
    with an online pair (_online_pair) the received (max, sum) pairs, 8 bytes each, 8-byte aligned."""
    cluster, warps = cfg["cluster"], cfg["threads"] // 32
    if cfg["direct"]:  # _ClusterRow.direct: every warp's partial, no CTA step
        base = (8 + 4 * cluster * warps) * slots + 16
    else:
        base = (4 * warps * slots if cfg["tpr"] > 32 else 0) + ((8 + 4 * cluster) * slots + 16 if cluster > 1 else 0)
    if cluster > 1 and not cfg["looped"] and _online_pair(cfg["pair"], cfg["tpr"], cluster):
        base += 8 * cluster * (warps if cfg["direct"] else 1) + 8
    return base


def _pair_exchange(cluster: int, direct: bool) -> bool:
    """A plan's "pair": whether its row exchanges an online pair as one (ONLINE_EXCHANGE). Every plan but a cluster
    of 2 CTAs that exchanges once a CTA (the many-rows plan with MANY_ROWS_DIRECT off), which keeps the max and the
    sum apart; with the direct exchange (every warp's pair to every CTA, MANY_ROWS_DIRECT) it takes the pair.

    Measured on the H200 (benchmarks/2026-12-06-h200-online-pair.md, softmax, the pair against the two exchanges):
    8x131072 3.62 against 3.96 us (quack 3.80), 1024x128256 135.2 against 138.7, 64x128256 10.77 against 11.63;
    rows of one CTA within 0.5% (32768x8192, 16384x5120, 8192x14336). The cluster of 2 lost: 512x32000 20.05
    against 19.39 us and 20.06 against 19.55 in two runs, 4096x32000 127.4 against 126.9 and 127.5 against 127.3.
    Its CTA has one partner, so the pair saves one DSMEM round trip and still pays the rescale's exps."""
    return ONLINE_EXCHANGE and (cluster != 2 or direct)


def _online_pair(pair: bool, tpr: int, cluster: int) -> tuple | None:
    """(max, sum): the reduce() calls of the online pair (lowered.ONLINE: sum(exp(a - m)) with m = max(a)) that a
    register row exchanges as one pair beyond the warp (the plan's "pair"), else None. The first pair whose calls
    are adjacent, on a row that spans more than a warp (a row of a warp or less has nothing beyond the warp)."""
    if not pair or (tpr <= 32 and cluster == 1):
        return None
    return next(((m, q) for q, m in enumerate(lowered.ONLINE) if m is not None and m == q - 1), None)


# ------------------------------------------------------------------------------------------------
# Device side
# ------------------------------------------------------------------------------------------------

def _max(a, b):
    """NaN-propagating fp32 max (PTX max.NaN.f32, like torch.amax); plain fmax would skip NaN."""
    return cute.arch.fmax(a, b, nan=True)


def _min(a, b):
    """NaN-propagating fp32 min (PTX min.NaN.f32, like torch.amin)."""
    return cute.arch.fmin(a, b, nan=True)


IDENTITY = {"sum": 0.0, "max": -math.inf, "min": math.inf}  # of each reduction kind: what masked values become
_REDUCTION_OPS = {"sum": cute.ReductionOp.ADD, "max": cute.ReductionOp.MAX, "min": cute.ReductionOp.MIN}


def _combine(kind: str):
    return {"max": _max, "min": _min, "sum": operator.add}[kind]


@cute.jit
def _row_reduce(val: Float32, kind: cutlass.Constexpr[str], tpr: cutlass.Constexpr[int], buf, slot: cutlass.Constexpr[int]):
    """Thread partial -> row result in every thread of the row: warp butterfly, then smem across warps."""
    op = _combine(kind)
    val = cute.arch.warp_reduction(val, op, threads_in_group=min(tpr, 32))
    if const_expr(tpr > 32):
        warps_per_row = tpr // 32
        lane = cute.arch.lane_idx()
        warp = cute.arch.warp_idx()
        if lane == 0:
            buf[warp // warps_per_row, warp % warps_per_row, slot] = val
        cute.arch.barrier()
        part = Float32(IDENTITY[kind])
        if lane < warps_per_row:
            part = buf[warp // warps_per_row, lane, slot]
        val = cute.arch.warp_reduction(part, op, threads_in_group=32)
    return val


def _allocate_partials(rows: int, tpr: int, slots: int):
    """The smem step's fp32 partials [rows, warps per row, slots] (see _row_reduce)."""
    smem = cutlass.memory.SmemAllocator()
    return smem.allocate_tensor(Float32, cute.make_layout((rows, tpr // 32, slots), stride=(tpr // 32 * slots, slots, 1)), 4)


def values_per_load(held: bool = True) -> int:
    """fp32 row values a thread may hold per load: a budget of 2 * VALUES_PER_THREAD (rmsnorm's x and weight, 32
    each) shared among the loads (a whole input or a part counts one, a wide input's lanes r; a scalar input is one
    register and counts none), at most VALUES_PER_THREAD. `held`: the register path's, shared among the loads held
    across the reductions (_early_loads; a late load counts none), else the looped path's, whose slices hold every
    load. F.layer_norm's x thus gets 32 values (256 threads of 4 chunks at N = 8192) where x, weight and bias
    shared 21 (512 of 2): 259 against 345 us at 32768x8192 on the H200, torch.compile 299; its looped slices at
    4096x32000 keep 2 chunks: 170 us, against 224 with 4 (benchmarks/2026-12-04-h200-late-loads.md).

    Measured on the H200 (benchmarks/2026-12-01-h200-lowered.md): x, weight and bias (F.layer_norm) at 32 values
    each took 110 registers, 2 CTAs per SM and 0.71x rmsnorm's bandwidth; at 10 values each (one shared
    budget) rows of 1024 threads with one vector in flight ran 0.44x."""
    widths = _load_widths()
    return max(1, min(VALUES_PER_THREAD, 2 * VALUES_PER_THREAD // sum(widths[q] for q in _early_loads()) if held
                      else 2 * VALUES_PER_THREAD // sum(widths)))


SHORT_ROW_VECTORS = 32  # a row of at most this many vectors gets one vector per thread (plan)


def _few_rows_plan(n: int, vec: int) -> dict:
    """The launch plan of a row of n elements read VEC at a time (_fit) for any M: the loads share the register budget
    (values_per_load), except that a short row (at
    most SHORT_ROW_VECTORS vectors: a head of 128, RoPE's half of 64) gets one vector per thread and so as many
    threads as vectors: every load issues at once, and the row reduction takes one or two more shuffle steps.

    Measured on the H200 (benchmarks/2026-12-04-h200-real-models-nd.md, sweep_row_plan.py): a QK-norm over heads
    of 128 ([8192, 4096] bf16) ran 36.5-37.1 us with 16 threads of one vector per head against 38.9 us with 4 of
    four; RoPE's rows of 64 already ran one vector per thread. Rows of scalars (VEC 1: an odd N) keep the budget: at
    4096x7, 8 threads of one element per row ran 1.09 us against 0.99 for one thread of seven
    (benchmarks/2026-12-04-h200-one-path.md).

    A row of one CTA whose power-of-two plan gives each thread fewer chunks than its budget takes the fewest whole
    warps that hold it at full budget instead (WHOLE_WARPS; N = 5120 bf16: 160 threads of 4 chunks, not 256 of 3, the
    last one partial): rmsnorm 16384x5120 ran 81.0 against 88.7 us, 16384x5600 88.4 against 93.9. Where the
    power-of-two plan already fills the budget it stays: at 16384x7168, 224 threads of 4 full chunks ran 122.5 us
    against 112.5 for 256 threads whose last chunk is half empty (benchmarks/2026-12-04-h200-cluster.md).

    A row is split across a cluster (up to MAX_CLUSTER CTAs) only for programs of at most CLUSTER_LOADS loads
    (softmax, rmsnorm, sum, max: one or two): with three (F.layer_norm's x, weight and bias) each thread holds two
    vectors per load and the split lost on the H200, 371.9 against 343.7 us at 32768x8192 and 242.5 against 172.0
    (looped) at 4096x32000 (benchmarks/2026-12-04-h200-cluster.md)."""
    nv = -(-n // vec)
    cfg = _fit(n, vec, vec if nv <= SHORT_ROW_VECTORS and vec > 1 else values_per_load(),
               MAX_CLUSTER if sum(_load_widths()) <= CLUSTER_LOADS else 1, values_per_load(held=False))
    direct = CLUSTER_DIRECT and cfg["cluster"] > 1 and cfg["threads"] <= CLUSTER_ABOVE
    min_ctas = FEW_ROWS_MIN_CTAS if cfg["cluster"] == 1 and not cfg["looped"] else 0
    return {**cfg, "min_ctas": min_ctas, "direct": direct, "pair": _pair_exchange(cfg["cluster"], direct),
            "convert_late": CONVERT_LATE, "l2_last": False}


def plans(n: int, vec: int) -> list:
    """The plans of a row of n elements read VEC at a time, as [(the first M it serves, plan)]: the plan of any M
    (_few_rows_plan), and where rows are many, on a GPU that asks for more bytes in flight, the many-rows plan; a row
    of one CTA has instead, below one wave of rows, a plan of twice the threads (_sub_wave_plans), and rows packed
    several to a CTA keep MIN_CTA_THREADS // TPR rows a CTA at every M (_sub_wave_plans says why).

    Why M matters: a row split across a cluster of more CTAs has more loads in flight at once, which is what a few
    rows need to fill the GPU (8 x 131072 runs on 128 CTAs of 256, 16 a row). Once rows outnumber the clusters the
    GPU holds at a time, what counts is how many bytes each SM keeps in flight, and fewer, fuller CTAs keep more:
    quack's geometry, MANY_ROWS_VALUES values a thread (N = 128256: 8 CTAs of 256 a row, 8 chunks a thread) with
    ptxas held to MANY_ROWS_CTAS CTAs an SM (without that bound 64 values took 96-103 registers, 2 CTAs an SM, and
    lost: 172 against 150 us at 1024x128256 on the H200).

    Measured on the H200 (benchmarks/2026-12-05-session17.md, bench_cluster.py's v64_3ctas): softmax at 1024x128256
    ran 138.2-138.6 us against 149.4-149.6 (quack 129.3-129.9), at 4096x32000 126.3-126.9 against 131.6-131.8
    (quack 125.7-126.7); at 8x131072 4.15 against 4.07. On an H100 the same plans tied or lost up to 2.5%: that GPU
    reaches its bandwidth with either, and its HBM gives each SM 25 GB/s where the H200's gives 36: hence the
    bound on op.json's bandwidth per SM (MANY_ROWS_GBPS_PER_SM; the H20's 51 takes this plan unmeasured).

    It applies to programs of one load (softmax, sum, max and user functions of one row input) whose row is split
    across a cluster: 64 values of two loads would not fit 85 registers, and a row of one CTA gains nothing (32768 x
    8192: 261.6 against 261.0 us, benchmarks/2026-12-05-h200-loads.md). It starts at MANY_ROWS_WAVES waves of its
    own rows in flight (SM_COUNT x MANY_ROWS_CTAS CTAs), where the few-rows plan, with twice the CTAs a row, no
    longer has every row in flight at once either.

    A row that fills a whole cluster of CTAs of 512 (N = 262144 bf16) takes it at every M and on every GPU: 16 CTAs
    of 256 threads of 64 values a row, not 16 of 512 of 32. On an H100, softmax 16x262144 ran 8.97 us against 11.04
    (quack 8.15; benchmarks/2026-12-05-session19.md)."""
    few = _few_rows_plan(n, vec)
    if few["cluster"] == 1 and not few["looped"]:
        return _sub_wave_plans(n, vec, few)
    if sum(_load_widths()) != 1 or few["looped"]:
        return [(1, few)]
    many = {**_fit(n, vec, MANY_ROWS_VALUES, MAX_CLUSTER, values_per_load(held=False)), "min_ctas": MANY_ROWS_CTAS,
            "convert_late": CONVERT_LATE, "l2_last": False}
    many["direct"] = MANY_ROWS_DIRECT and many["cluster"] > 1 and _online_pair(  # a program with an online pair
        _pair_exchange(many["cluster"], True), many["tpr"], many["cluster"]) is not None
    many["pair"] = _pair_exchange(many["cluster"], many["direct"])
    fits = not many["looped"] and many["threads"] * MANY_ROWS_CTAS <= MANY_ROWS_THREADS  # CTAs of 256 at most
    if not fits or many == {**few, "min_ctas": MANY_ROWS_CTAS, "direct": many["direct"], "pair": many["pair"]}:
        return [(1, few)]
    if few["threads"] > CLUSTER_ABOVE:  # a full cluster of CTAs of 512: fewer, fuller threads at any M, on any GPU
        return [(1, many)]
    if GBPS_PER_SM <= MANY_ROWS_GBPS_PER_SM:
        return [(1, few)]
    in_flight = SM_COUNT * MANY_ROWS_CTAS * many["rows_per_cta"] // many["cluster"]
    return [(1, few), (MANY_ROWS_WAVES * in_flight, many)]


def _sub_wave_plans(n: int, vec: int, few: dict) -> list:
    """The plans of a row of one CTA (few: its plan at any M): below one wave, M rows on M of the GPU's SM_COUNT SMs,
    each SM holds one CTA and nothing else, so its loads in flight are that CTA's alone; twice the threads of half
    the values each (SUB_WAVE_VALUES a load, in whole warps, up to MAX_UNSPLIT threads) put twice the warps' requests
    in flight, and each thread's chain of loads, shuffles and stores is half as long. From SM_COUNT + 1 rows
    on, CTAs share SMs and the fuller threads of `few` keep more bytes in flight an SM for fewer registers, unless
    `wide` fills an SM four times over (_full_sm_plan).

    Measured on an H100, in two runs of the H200's plans (benchmarks/2026-12-06-h100-many-direct.md, bench_cluster.py's
    v16_cta512): rmsnorm 128x8192 ran 2.82 us on 512 threads of 2 chunks against 2.92 on 256 of 4 (quack 2.87);
    at 16384x5120 and 32768x8192, where CTAs share SMs, the same geometry lost 6%. Short rows (one vector a thread)
    already have a thread per vector.

    A row of one warp (N <= 1024 bf16) keeps its plan: it reduces by shuffles alone, and two warps a row would add a
    shared-memory round trip and a barrier to every reduction. On an H100 (benchmarks/2026-12-06-h100-one-path-
    again.md) twice the threads cost softmax, max and sum 5-15% at N = 768 and 1024 (softmax 128x1024: 1.74 against
    1.64 us) and moved rmsnorm's one reduction by -4% to +2%; from N = 2048, where `few` has two warps a row already,
    they won 2-14%. Four warps of one 128-bit load each, Inductor's direction, did no better
    (benchmarks/2026-12-06-h100-spread.md): rmsnorm 6% faster at three shapes and 3% slower at a fourth, softmax and
    max 2-15% slower. Nor do rows packed several to a CTA leave SMs idle to any cost worth a plan: CTAs of one row
    or one warp up to SM_COUNT x R rows won rmsnorm 2-4% on rows of 4 chunks and lost 2-16% on rows of one
    (benchmarks/2026-12-06-h100-narrow.md)."""
    nv, kmax = -(-n // vec), max(1, SUB_WAVE_VALUES // vec)
    tpr = -(-(-(-nv // kmax)) // 32) * 32  # the fewest whole warps that hold the row at kmax chunks a thread
    if not SUB_WAVE_VALUES or nv <= SHORT_ROW_VECTORS or few["tpr"] <= 32 or tpr <= few["tpr"] or tpr > MAX_UNSPLIT:
        return [(1, few)]
    if tpr < MIN_CTA_THREADS:  # a CTA holds MIN_CTA_THREADS // tpr rows: tpr a power of two
        tpr = 1 << (tpr - 1).bit_length()
    chunks, threads = -(-nv // tpr), max(MIN_CTA_THREADS, tpr)
    wide = {**few, "tpr": tpr, "chunks": chunks, "threads": threads, "full": chunks * tpr == nv,
            "rows_per_cta": threads // tpr}
    return [(1, wide), (SM_COUNT + 1, _full_sm_plan(wide, vec) or few)]


def _full_sm_plan(wide: dict, vec: int) -> dict | None:
    """The plan of many rows of one CTA where the sub-wave plan `wide` fills an SM four times over: the same CTAs
    (16 values a load, MAX_UNSPLIT threads, every chunk whole), FULL_SM_CTAS of them an SM, so ptxas fits each
    thread in 32 registers (SM90_THREADS_PER_SM threads an SM, not the 768 of `few`'s 75 registers); the load no
    reduction needs held across the reduction as it came and converted after it (convert_late: rmsnorm's weight,
    8 registers, not 16), and every load carrying an L2 evict_last policy (l2_last). This is Inductor's rmsnorm at
    32768x8192 (one row a CTA of 512 threads, 32 registers, its loads evict_last), with x held in registers where
    Inductor reads it twice. It serves programs of two loads, a row and one no reduction needs, and one reduction
    (rmsnorm: x, the weight, the sum of squares), of 16-bit elements or narrower (VEC of 8 or more); None elsewhere.
    In 32 registers ptxas spilled the others: fp32's weight, held as loaded, is its fp32 values (40 bytes at N =
    8192, 512 threads of 4 chunks of 4), and Cohere's LayerNorm (a mean, then a variance) 4 bytes.

    Measured on the H200 (benchmarks/2026-12-07-h200-l2-policy.md, bench_cluster.py's v16_4ctas_l2), rmsnorm
    32768x8192: 247.89 us against 262.23 for `few` (256 threads of 4 chunks), torch.compile 248.47, quack 256.48;
    the geometry alone took 255.41 (v16_cta512_4ctas), the policy alone on `few` 261.84 (l2_el): neither alone
    reaches Inductor. At 256x8192: 3.49 against 3.56. Where the CTAs of 512 are not whole (16384x5120: 640 vectors
    over 1024 slots) the same knobs lost 17% (93.67 against 79.81), and at 16384x7168 (896 of 1024) tied: hence
    every chunk whole. On an H100 it tied the default, 353.3-353.8 against 353.9-354.0 us
    (benchmarks/2026-12-07-inductor-config.md), and the template's build of it 351.12 against torch.compile's 352.17
    (2026-12-07-h200-l2-policy.md)."""
    late = _unneeded_loads()
    if (wide["threads"] * FULL_SM_CTAS != SM90_THREADS_PER_SM or not wide["full"] or wide["rows_per_cta"] != 1
            or vec * 16 < ACCESS_BITS or _load_widths() != [1, 1] or len(late) != 1 or len(lowered.REDUCTIONS) != 1
            or lowered.KINDS[_LOADS[late[0]][0]] != "vector"):
        return None
    return {**wide, "min_ctas": FULL_SM_CTAS, "convert_late": True, "l2_last": True}


def plan(n: int, vec: int, m: int = 1) -> dict:
    """The plan that serves M rows of n elements read VEC at a time (plans)."""
    return next(cfg for start, cfg in reversed(plans(n, vec)) if m >= start)


def _chunk(t: cute.Tensor, kind: str, idx, row):
    """Vector idx of a row: rows are (VEC, NV, M) views (a broadcast input's M mode nested, (L2, L1, L0) : its
    strides, 0 where it is broadcast: the layout finds its row), [N] vectors (VEC, NV) ones."""
    return t[None, idx] if kind == "vector" else t[None, idx, row]


# Where compute()'s arguments (lowered.ARGS) come from: the loads, one register fragment each (a row or vector input
# whole; a part j of a wide input, its columns [j*N, (j+1)*N); all the lanes of a wide input, one fragment r*VEC wide
# per chunk that each lane j views with stride r), and the single values: a scalar input (one value, read once per
# thread) or one value per row (its row's, read once per thread). x is the first row input in the user's parameter
# order, not necessarily the first input.
SINGLE = ("scalar", "per_row", "broadcast_per_row")  # the kinds compute() takes as one fp32 scalar, never a row


def _plan_loads(args, kinds):
    loads, of_arg, scalars = [], [], []
    for i, how, j in args:
        if kinds[i] in SINGLE:
            of_arg.append((kinds[i], len(scalars)))
            scalars.append(i)
            continue
        key = (i, how, 0 if how == "lane" else j)
        if key not in loads:
            loads.append(key)
        of_arg.append((how, loads.index(key), j))
    return loads, of_arg, scalars


_LOADS, _OF_ARG, _SCALARS = _plan_loads(lowered.ARGS, lowered.KINDS)


def _late_loads() -> tuple:
    """The loads whose every argument is in lowered.LATE (no reduction depends on them), when holding every load
    would cut each one's share of the register budget (values_per_load: three loads or more): row_kernel issues
    them after the row's reductions. With one or two loads the budget is not the limit and a late load only adds
    its latency after the reduction: rmsnorm's weight, loaded late, took 3.0 against 2.7 us at 128x8192 and 82.5
    against 80.5 at 16384x5120 on the H200. With RELOAD they are late with any number of loads: then the row
    holds nothing across its reductions. Empty when LATE_LOADS is off or when every load is late (no reductions)."""
    late = _unneeded_loads()
    shared = 2 * VALUES_PER_THREAD // sum(_load_widths()) < VALUES_PER_THREAD
    return late if LATE_LOADS and (shared or RELOAD) and len(late) < len(_LOADS) else ()


def _unneeded_loads() -> tuple:
    """The loads whose every argument is in lowered.LATE: no reduction needs them."""
    return tuple(k for k in range(len(_LOADS))
                 if all(p in lowered.LATE for p, a in enumerate(_OF_ARG) if a[0] not in SINGLE and a[1] == k))


def _unreduced_loads(convert_late: bool) -> tuple:
    """The loads whose values row_kernel converts to fp32 only after the row's reductions: the late ones, and with
    the plan's convert_late (_full_sm_plan; CONVERT_LATE elsewhere) every other load no reduction needs (every
    argument in lowered.LATE: rmsnorm's weight), unless every load is one. Loaded early, such a load is held across
    the reductions as it came (16 registers for 32 bf16 values) rather than converted (32): compiled as one
    expression, the conversions are pure and go up to the loads, so row_kernel passes its words through a volatile
    move after the reductions first (_pin)."""
    if not convert_late:
        return _late_loads()
    late = _unneeded_loads()
    return late if len(late) < len(_LOADS) else ()


@cute.jit
def _pin(frag):
    """Each 32-bit word of a register fragment through ``mov.b32`` in an asm with side effects: what is computed from
    the words stays after the barriers before it (a pure conversion would be hoisted to the load). A fragment of
    a size that is not whole words (a mask's bytes) is left as it is."""
    if const_expr(cute.size(frag) * frag.element_type.width % 32 == 0):
        words = cute.recast_tensor(frag, Int32)
        for i in cutlass.range_constexpr(cute.size(words)):
            words[i] = Int32(llvm.inline_asm(Int32.mlir_type, [words[i].ir_value()], "mov.b32 $0, $1;", "=r,r",
                                             has_side_effects=True, is_align_stack=False,
                                             asm_dialect=llvm.AsmDialect.AD_ATT))


def _early_loads() -> tuple:
    """The loads row_kernel issues first: those the reductions need (every load without late ones)."""
    return tuple(q for q in range(len(_LOADS)) if q not in _late_loads())


# Where compute()'s results go (host.lowered_stores): one register fragment per store of a row output, a wide one's
# halves from column j*N or its lanes as ONE fragment r*VEC wide; a reduced output by the row's thread 0.
_STORES, _FIRST = host.lowered_stores(lowered.OUTPUTS, lowered.OUT_WIDTHS, lowered.OUT_HOW)
_X = lowered.KINDS.index("row")
_X_DIMS = lowered.DIMS[_X] if lowered.DIMS else ()  # x's dims by name, where the function names them
_HEADS = host.heads_of(lowered)  # c: rows of heads of c, the row inputs as the model passes them (_as_heads); else 0
_LIKE = next((k for k, a in enumerate(_OF_ARG) if a[0] not in SINGLE), 0)  # an argument of the values' shape


def _read_singles(scalars, row) -> list:
    """The single values of compute()'s, read once per thread (before any loop over the row) as fp32 scalars, in
    _SCALARS order: a scalar input's one element, a per-row input's element of `row` (a row index below M: the
    caller clamps a row past M, which stores nothing)."""
    return [Float32(t[0 if lowered.KINDS[i] == "scalar" else row].to(Float32)) for t, i in zip(scalars, _SCALARS)]


def _values(frags, singles, vec: int, chunks: int, absent: tuple = ()):
    """compute()'s arguments in lowered.ARGS order: each load's fragment as fp32 (a mask's bytes as 0.0 / 1.0), a
    lane j of a wide input as its fragment viewed with stride r from j, each single value (_read_singles) as the
    scalar it is; the arguments of the loads in `absent` (not loaded yet) as zeros."""
    made = []
    for arg in _OF_ARG:
        if arg[0] not in SINGLE and arg[1] in absent:
            made.append(cute.full((vec, chunks), 0.0, Float32))
        elif arg[0] in SINGLE:
            made.append(singles[arg[1]])
        elif arg[0] == "lane":
            frag, r = frags[arg[1]], lowered.WIDTHS[_LOADS[arg[1]][0]]
            lane = cute.make_tensor(frag.iterator + arg[2], cute.make_layout((vec, chunks), stride=(r, r * vec)))
            made.append(lane.load().to(Float32))
        else:
            made.append(frags[arg[1]].load().to(Float32))
    return made


def _chunk_mask(chunks: int, first, tpr: int, nv, whole: int = 0):
    """Which of a thread's CHUNKS vectors lie in the row: vector first + k*TPR exists (first + k*TPR < NV); None for
    the first `whole` chunks, which exist for every thread (_whole_chunks). One predicate per vector, not per value:
    the mask costs a select per partial chunk per reduce(), not VEC * CHUNKS.

    The mask is the only thing that makes a vector that was not loaded harmless: reduce() selects the identity in
    its place and the stores skip it, so the fragments are never filled first. Filling them (0 before predicated
    loads) cost rmsnorm at N = 5120, where the last chunk is partial, 0.76x of the hand-written kernel on the H200:
    23.3 against 30.9 us at 4096x5120, the same instructions and bytes, more long-scoreboard stalls
    (benchmarks/2026-12-04-h200-one-path.md, ab_workspaces.py)."""
    return [None if k < whole else first + k * tpr < nv for k in range(chunks)]


def _thread_partial(kind: str, v, valid, like):
    """reduce(kind, v)'s in-thread step: v (a vector, or a scalar meant for every element) reduced over the thread's
    values, a vector that was not loaded (valid[k] false; valid None when every one was, valid[k] None when vector k
    always is) counting as the identity."""
    v = v if isinstance(v, cute.TensorSSA) else cute.full_like(like, v, Float32)
    if valid is None:
        return Float32(v.reduce(_REDUCTION_OPS[kind], IDENTITY[kind], 0))  # a Float32 whatever the reduce hands back
    held = cute.make_rmem_tensor(v.shape, Float32)
    held.store(v)
    part = Float32(IDENTITY[kind])
    for k, ok in enumerate(valid):  # per vector: reduce it, then keep it only where it was loaded
        column = Float32(held[None, k].load().reduce(_REDUCTION_OPS[kind], IDENTITY[kind], 0))
        part = _combine(kind)(part, column if ok is None else cutlass.select_(ok, column, Float32(IDENTITY[kind])))
    return part


class _ClusterRow:
    """The cluster level of the reduction hierarchy: a row split across the CLUSTER CTAs of a thread-block cluster
    (rank r owns the vectors r*TPR + t + k*CLUSTER*TPR), its partials exchanged through distributed shared memory.

    Per reduce() call (slot i) the CTA reduces its share first (_row_reduce), then thread j < CLUSTER sends the
    CTA's result to CTA j with one ``st.async.shared::cluster`` into results[i, rank], which completes 4 bytes on
    CTA j's mbarrier i. Every CTA waits on its own mbarrier i (armed once for the CLUSTER * 4 bytes it receives),
    then combines the CLUSTER results in rank order: the same values in the same order in every CTA, so every CTA
    holds the same row value, bit for bit. The mbarriers are initialised before anything is loaded and published
    by one cluster arrive, whose wait comes before the first send (a peer's store must not reach a barrier not yet
    initialised); a CTA may exit once it has waited on every slot, because by then nothing more is sent to it.

    The direct exchange (quack's; the plan's "direct", CLUSTER_DIRECT) skips the CTA step: each warp's partial (its
    butterfly) goes straight to every CTA, lane j sending to CTA j into results[i, rank * WARPS + warp], and each
    warp reduces the CLUSTER * WARPS received values itself (lane l combines l, l + 32, ..., then one butterfly:
    the same order in every warp of every CTA, and a butterfly leaves every lane the same bits). One mbarrier wait
    a reduction instead of a ``bar.sync`` and the wait; the row is one CTA of the cluster's (plan), so its warps
    are the CTA's."""

    def __init__(self, cluster: int, slots: int, warps: int = 0, pair: bool = False):
        """warps: the CTA's, for the direct exchange (plan's "direct"); 0 for one send a CTA. pair: room for the
        received (max, sum) pairs of an online pair (_exchange_pair)."""
        smem = cutlass.memory.SmemAllocator()
        self.cluster, self.rank, self.warps = cluster, cute.arch.block_idx_in_cluster(), warps
        self.mbar = smem.allocate_array(cutlass.Int64, num_elems=slots, byte_alignment=8)
        senders = cluster * max(warps, 1)
        self.results = smem.allocate_tensor(Float32, cute.make_layout((slots, senders), stride=(senders, 1)), 4)
        self.pairs = smem.allocate_tensor(Float32, cute.make_layout((senders, 2), stride=(2, 1)), 8) if pair else None
        _init_barriers(self.mbar, slots)

    def published(self):
        """Before the first send: every CTA of the cluster has initialised its mbarriers."""
        cute.arch.cluster_wait()

    def reduce(self, val, kind: str, slot: int):
        """val: the CTA's partial; the row's value back, in every thread."""
        return _exchange(Float32(val), kind, self.results, self.mbar, self.rank, self.cluster, slot)

    def direct(self, val, kind: str, slot: int):
        """The direct exchange's reduce: val is the thread's partial; the row's value back, in every thread."""
        return _exchange_warps(Float32(val), kind, self.results, self.mbar, self.rank, self.cluster, self.warps, slot)


@cute.jit
def _init_barriers(mbar, slots: cutlass.Constexpr[int]):
    t, _, _ = cute.arch.thread_idx()
    if t < slots:
        cute.arch.mbarrier_init(mbar + t, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive_relaxed()


@cute.jit
def _exchange(val: Float32, kind: cutlass.Constexpr[str], results, mbar, rank, cluster: cutlass.Constexpr[int],
              slot: cutlass.Constexpr[int]):
    """_ClusterRow.reduce: send this CTA's partial to every CTA of the cluster, wait for theirs, combine."""
    t, _, _ = cute.arch.thread_idx()
    bar = mbar + slot
    if t == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, 4 * cluster)
    if t < cluster:
        cute.arch.store_async_dsmem(results.iterator + (slot * cluster + rank), val.bitcast(Int32), bar, t)
    cute.arch.mbarrier_wait(bar, 0)
    out = results[slot, 0]
    for r in cutlass.range_constexpr(1, cluster):
        out = _combine(kind)(out, results[slot, r])
    return out


@cute.jit
def _exchange_warps(val: Float32, kind: cutlass.Constexpr[str], results, mbar, rank, cluster: cutlass.Constexpr[int],
                    warps: cutlass.Constexpr[int], slot: cutlass.Constexpr[int]):
    """_ClusterRow.direct: every warp's butterfly result to every CTA of the cluster, then each warp's reduce of
    the CLUSTER * WARPS results."""
    op = _combine(kind)
    val = cute.arch.warp_reduction(val, op, threads_in_group=32)
    t, _, _ = cute.arch.thread_idx()
    lane, warp = cute.arch.lane_idx(), cute.arch.warp_idx()
    bar = mbar + slot
    senders = cluster * warps
    if t == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, 4 * senders)
    if lane < cluster:
        cute.arch.store_async_dsmem(results.iterator + (slot * senders + rank * warps + warp), val.bitcast(Int32),
                                    bar, lane)
    cute.arch.mbarrier_wait(bar, 0)
    part = _fold_received(Float32(IDENTITY[kind]), op, lambda i: results[slot, i], senders)
    return cute.arch.warp_reduction(part, op, threads_in_group=32)


@cute.jit
def _fold_received(acc: Float32, op, read, senders: cutlass.Constexpr[int]):
    """This lane's share of the `senders` values a cluster exchange received: acc op read(l) op read(l + 32) ...
    for lane l, unpredicated where every lane has one. The same order in every warp of every CTA."""
    lane = cute.arch.lane_idx()
    for k in cutlass.range_constexpr(-(-senders // 32)):
        if const_expr((k + 1) * 32 <= senders):
            acc = op(acc, read(lane + k * 32))
        elif lane + k * 32 < senders:
            acc = op(acc, read(lane + k * 32))
    return acc


@cute.jit
def _pair_butterfly(m: Float32, s: Float32):
    """A warp's (max, sum) pairs, each sum of exp(a - shift(max)), combined: the largest max M, and the sum of
    s * exp(m - shift(M)) (m unshifted: a pair of max -inf adds 0 whatever M is, see _shift), in every lane."""
    top = cute.arch.warp_reduction(m, _max, threads_in_group=32)
    return top, cute.arch.warp_reduction(_rescaled(s, m, top), operator.add, threads_in_group=32)


@cute.jit
def _cta_pair(m: Float32, s: Float32, tpr: cutlass.Constexpr[int], buf, slot_m: cutlass.Constexpr[int],
              slot_s: cutlass.Constexpr[int]):
    """_row_reduce's smem step for an online pair: lane 0 of each warp writes its pair into slots slot_m and slot_s
    of the partials, one bar.sync, then each warp combines the row's pairs (_pair_butterfly)."""
    warps_per_row = tpr // 32
    lane, warp = cute.arch.lane_idx(), cute.arch.warp_idx()
    if lane == 0:
        buf[warp // warps_per_row, warp % warps_per_row, slot_m] = m
        buf[warp // warps_per_row, warp % warps_per_row, slot_s] = s
    cute.arch.barrier()
    part_m, part_s = Float32(-math.inf), Float32(0.0)
    if lane < warps_per_row:
        part_m = buf[warp // warps_per_row, lane, slot_m]
        part_s = buf[warp // warps_per_row, lane, slot_s]
    return _pair_butterfly(part_m, part_s)


@cute.jit
def _exchange_pair(m: Float32, s: Float32, pairs, mbar, rank, cluster: cutlass.Constexpr[int],
                   warps: cutlass.Constexpr[int], slot: cutlass.Constexpr[int]):
    """_exchange and _exchange_warps for an online pair: the CTA's pair (warps 0), or every warp's (the direct
    exchange), to every CTA of the cluster with one 8-byte st.async each, completed on mbarrier `slot`; then each
    lane folds its share of the received pairs into one (the largest max, then the sums rescaled to it) and the
    warp combines the lanes' pairs (_pair_butterfly): the same order in every warp of every CTA, so every thread
    holds the same bits."""
    t, _, _ = cute.arch.thread_idx()
    lane, warp = cute.arch.lane_idx(), cute.arch.warp_idx()
    bar = mbar + slot
    senders = cluster * max(warps, 1)
    if t == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, 8 * senders)
    me, peer = rank, t  # one send a CTA, from its threads 0..CLUSTER-1 ...
    if const_expr(warps > 0):
        me, peer = rank * warps + warp, lane  # ... or a send a warp, from its lanes (the direct exchange)
    if peer < cluster:
        cute.arch.store_async_dsmem(pairs.iterator + cute.assume(2 * me, divby=2), (m.bitcast(Int32), s.bitcast(Int32)),
                                    bar, peer)
    cute.arch.mbarrier_wait(bar, 0)
    top = _fold_received(Float32(-math.inf), _max, lambda i: pairs[i, 0], senders)
    total = _fold_received(Float32(0.0), operator.add, lambda i: _rescaled(pairs[i, 1], pairs[i, 0], top), senders)
    return _pair_butterfly(top, total)


class _RowReducer:
    """compute()'s reduce on the register path: the masked thread partial, then _row_reduce (warp, then smem),
    call number i in smem slot i, then the cluster's exchange (`cluster`: a _ClusterRow, or None).

    An online pair (`pair`: softmax's max and sum, _online_pair) leaves the warp once, as quack's online softmax
    does: the max call returns the warp's max m_w (shifted, _shift) as the frame of its sum, and the sum call
    combines the warp's (m_w, sum of exp(a - m_w)) pairs across the CTA and the cluster in one step (_cta_pair,
    _exchange_pair) into the row's max M and its sum in M's frame. compute()'s next line, reduce("rebase", (m, e))
    (tools/lower/ir.py rebases), gets M back and exp(a - m_w) moved to it, e * exp(m_w - shift(M)): one exp a
    thread and one multiply a value. A replay (late loads) hands out M itself, and its rebase changes nothing."""

    def __init__(self, valid, like, tpr: int, buf, cluster=None, pair=None):
        self.valid, self.like, self.tpr, self.buf, self.cluster, self.calls = valid, like, tpr, buf, cluster, 0
        self.pair, self.published, self.frame = pair, False, None
        self.results = []  # each call's row result, for a second compute() (replay)

    def replay(self):
        """The reduce of compute() run again: call i returns the first run's row result."""
        self.calls, self.frame = 0, None
        return self

    def done(self):
        """After compute(): every online max handed out as a warp's was rebased (a lowered.py written before
        reduce("rebase") would store values in the warp's frame)."""
        if const_expr(self.frame is not None):
            raise ValueError("lowered.py: an online pair's sum is not followed by reduce(\"rebase\", (max, exp)); "
                             "re-bake the workspace to regenerate it")

    def _exchange(self, val, kind: str, slot: int, total=None):
        """The cluster's step: the CTA's (or with the direct exchange each warp's) value to every CTA, or with `total`
        an online pair's (max val, sum total)."""
        if const_expr(not self.published):  # the first send waits until every CTA's mbarriers are initialised
            self.cluster.published()
            self.published = True
        c = self.cluster
        if const_expr(total is not None):
            return _exchange_pair(val, total, c.pairs, c.mbar, c.rank, c.cluster, c.warps, slot)
        return Float32((c.direct if c.warps > 0 else c.reduce)(val, kind, slot))

    def __call__(self, kind: str, v):
        if const_expr(kind == "rebase"):  # (max, exp) of the online pair into the row max's frame
            return self._rebase(*v)
        q, self.calls = self.calls, self.calls + 1
        if const_expr(q < len(self.results)):  # compute() run again: this call's row result is known
            return self.results[q]
        # Float32: with one thread per row (TPR 1) the butterfly is empty and the raw reduce value comes back, which
        # compute()'s scalar arithmetic and the store's .to() need as a Float32
        part = _thread_partial(kind, v, self.valid, self.like)
        direct = self.cluster is not None and self.cluster.warps > 0  # the cluster takes every warp's partial
        if const_expr(self.pair is not None and q == self.pair[0]):  # the online max: the warp's, its sum's frame
            self.frame = Float32(cute.arch.warp_reduction(part, _max, threads_in_group=32))
            return _shift(self.frame)
        if const_expr(self.pair is not None and q == self.pair[1]):  # its sum: the pair leaves the warp once
            top, total = self.frame, Float32(cute.arch.warp_reduction(part, operator.add, threads_in_group=32))
            if const_expr(not direct and self.tpr > 32):
                top, total = _cta_pair(top, total, self.tpr, self.buf, *self.pair)
            if const_expr(self.cluster is not None):
                top, total = self._exchange(top, kind, q, total)
            self.results += [Float32(top), Float32(total)]
            return self.results[q]
        self.done()  # no other reduction between an online pair's sum and its rebase
        val = part if direct else Float32(_row_reduce(part, kind, self.tpr, self.buf, q))
        if const_expr(self.cluster is not None):
            val = self._exchange(val, kind, q)
        self.results.append(val)
        return val

    def _rebase(self, m, e):
        """(M, e * exp(m_w - shift(M))) after a pair whose max was the warp's m_w (unshifted: a warp that saw only
        -inf scales its exps, all 0, by 0, never by exp(-M) = inf); (m, e) as they are otherwise."""
        if const_expr(self.frame is None):
            return m, e
        top = self.results[self.pair[0]]
        e, self.frame = _rescaled(e, self.frame, top), None
        return top, e


def _shift(m):
    """The exponent shift of an online max: m, or 0 while m is still -inf (a masked prefix: exp(-inf - 0) = 0,
    where exp(-inf - -inf) would be NaN)."""
    return cutlass.select_(m == -math.inf, Float32(0.0), m)


def _exp(v):
    return cute.math.exp2(v * LOG2_E, fastmath=True)


def _rescaled(s, m, top):
    """s, a sum of exp(a - shift(m)) or such exps, in the frame of top >= m: s * exp(m - shift(top)). m unshifted: s
    of a max -inf is 0 and stays 0 (exp(-inf) = 0), where exp(shift(-inf) - top) = exp(-top) is inf below -88."""
    return s * _exp(m - _shift(top))


_SLOTS = max(1, len(lowered.REDUCTIONS))  # smem slots: one per reduce() call
_ONLINE_MAX = {m: q for q, m in enumerate(lowered.ONLINE) if m is not None}  # online max -> its sum


class _PassReducer:
    """compute()'s reduce in pass p of the looped path (lowered.PASSES; p None: the last pass, which knows every
    result). A call of an earlier pass returns its row result (known), a call of a later pass a dummy 0 (what
    depends on it is discarded; the compiler drops it), a call of pass p folds its masked thread partial into
    acc[q], an rmem accumulator the slice loop carries:
    - an online max (lowered.ONLINE) folds, then returns the thread's running max, shifted (_shift), so that its
      sum's exp(a - m) is relative to it; it keeps the old and new shifts for that sum;
    - an online sum rescales its running sum by exp(m_old - shift(m_new)) before adding the slice's. m_old is not
      shifted: after a -inf prefix, shift(-inf) = 0 would make the factor exp(-m_new), inf for a max below -88, and
      0 * inf = NaN; exp(-inf - m_new) = 0 is what it is.
    A rebase changes nothing: what pass p computes of the running max is discarded, the last pass knows M."""

    def __init__(self, p, known, acc, valid, like):
        self.p, self.known, self.acc, self.valid, self.like, self.calls, self.moved = p, known, acc, valid, like, 0, {}

    def __call__(self, kind: str, v):
        if kind == "rebase":
            return v
        q, self.calls = self.calls, self.calls + 1
        if self.p is None or lowered.PASSES[q] < self.p:
            return self.known[q]
        if lowered.PASSES[q] > self.p:
            return Float32(0.0)
        part = _thread_partial(kind, v, self.valid, self.like)
        if q in _ONLINE_MAX:
            old = self.acc[q]  # unshifted: a lane that held only -inf rescales its 0 by exp(-inf) = 0, not by inf
            self.acc[q] = _max(self.acc[q], part)
            self.moved[q] = (old, _shift(self.acc[q]))
            return self.moved[q][1]
        if lowered.ONLINE[q] is not None:
            old, new = self.moved[lowered.ONLINE[q]]
            self.acc[q] = self.acc[q] * _exp(old - new) + part
        else:
            self.acc[q] = _combine(kind)(self.acc[q], part)
        return Float32(0.0)


def _row_results(p: int, acc, known: dict, tpr: int, buf):
    """The row results of pass p's reductions from their thread accumulators: an online sum's terms rescaled to
    the row's max first (s_t * exp(m_t - shift(M)): a lane that held only -inf contributes 0), then summed."""
    for q, kind in enumerate(lowered.REDUCTIONS):
        if lowered.PASSES[q] == p:
            m = lowered.ONLINE[q]
            val = acc[q] if m is None else _rescaled(acc[q], acc[m], known[m])
            known[q] = Float32(_row_reduce(val, kind, tpr, buf, q))


@cute.jit
def _load_chunks(loads, frags, first, row, nv: Int32, tpr: cutlass.Constexpr[int],
                 chunks: cutlass.Constexpr[int], whole: cutlass.Constexpr[int], only=None, l2_last: bool = False):
    """Every load's (or those numbered in `only`) vectors first + k*TPR (k < CHUNKS) of the row into its fragment's
    column k: VEC elements (128-bit for x; a bool mask's VEC bytes, 64-bit for a 16-bit x), r*VEC for a wide input's
    lanes (r 128-bit accesses); vectors past the row end are skipped (chunks below `whole` exist). quack stages its row
    through shared memory by cp.async; that lost here on the H100 and the H200 (STAGE_SMEM, removed:
    benchmarks/2026-12-05-h200-knobs.md, 2026-12-06-h100-many-direct.md), so every load goes to registers. With
    `l2_last` (the full-SM plan) each load carries an L2 evict_last policy (_l2_evict_last)."""
    hint = {"cache_policy": _l2_evict_last()} if const_expr(l2_last) else {}
    for k in cutlass.range_constexpr(chunks):
        if k < whole or first + k * tpr < nv:
            for q, ((i, _, _), src, dst) in enumerate(zip(_LOADS, loads, frags)):
                if const_expr(only is None or q in only):
                    cute.copy(_vector_atom(src.element_type, dst.shape[0], load=l2_last or LOAD_CG),
                              _chunk(src, lowered.KINDS[i], first + k * tpr, row), dst[None, k], **hint)


@cute.jit
def _store_chunks(outputs, frags, first, row, nv: Int32, tpr: cutlass.Constexpr[int],
                  chunks: cutlass.Constexpr[int], whole: cutlass.Constexpr[int]):
    """_load_chunks the other way: each store's fragment (_STORES) to its vectors first + k*TPR of the row (r*VEC
    elements for a wide output's lanes, r 128-bit accesses)."""
    for k in cutlass.range_constexpr(chunks):
        if k < whole or first + k * tpr < nv:
            for dst, src in zip(outputs, frags):
                cute.copy(_vector_atom(dst.element_type, src.shape[0]), src[None, k], dst[None, first + k * tpr, row])


def _vector_atom(dtype, vec: int, load: bool = False):
    """A copy atom for VEC elements of dtype: accesses of up to 128 bits (an fp32 output of a bf16 op: two); with
    `load`, a global-to-register load that takes a cache policy (_load_chunks). Cache hints on the loads into
    registers (ld.global.cg, L2::256B, .cs; st.global.cs) changed nothing on an H100
    (benchmarks/2026-12-05-session19.md) nor helped softmax on the H200 (2026-12-07-h200-l2-policy.md), and
    Inductor's L2 policies on the looped path (evict_last, then evict_first) cost rmsnorm 20% on the H200
    (benchmarks/2026-12-06-h200-l2.md)."""
    bits = min(ACCESS_BITS, vec * dtype.width)
    cached = {"load_cache_mode": cute.nvgpu.LoadCacheMode.GLOBAL} if load and LOAD_CG else {}
    return cute.make_copy_atom(cute.nvgpu.CopyG2ROp() if load else cute.nvgpu.CopyUniversalOp(), dtype,
                               num_bits_per_copy=bits, **cached)


def _l2_evict_last():
    """An L2 cache policy that keeps what a load brings in L2 past the lines marked evict_normal (PTX createpolicy,
    fraction 1.0), for a load's `cache_policy` (ld.global.L2::cache_hint)."""
    return cutlass.Int64(llvm.inline_asm(cutlass.Int64.mlir_type, [],
                                         "createpolicy.fractional.L2::evict_last.b64 $0, 1.0;", "=l",
                                         has_side_effects=False, is_align_stack=False,
                                         asm_dialect=llvm.AsmDialect.AD_ATT))


def _fragments(tensors, vec: int, chunks: int, widths=None):
    return [cute.make_rmem_tensor((vec * (widths[k] if widths else 1), chunks), t.element_type)
            for k, t in enumerate(tensors)]


def _load_widths():
    """Each load's fragment width in VECs: r for a wide input's lanes, 1 otherwise."""
    return [lowered.WIDTHS[i] if how == "lane" else 1 for i, how, _ in _LOADS]


def _split(tensors):
    """The launcher's views: the loads, the scalar inputs, the row outputs' stores (_STORES), the reduced outputs."""
    a, b, c = len(_LOADS), len(_LOADS) + len(_SCALARS), len(_LOADS) + len(_SCALARS) + len(_STORES)
    return tensors[:a], tensors[a:b], tensors[b:c], tensors[c:]


def _store_widths():
    """Each store's fragment width in VECs: r for a wide output's lanes, 1 otherwise."""
    return [lowered.OUT_WIDTHS[o] if how == "lane" else 1 for o, how, _ in _STORES]


def _round_into(frags, results, vec: int, chunks: int):
    """compute()'s row results rounded once into the stores' fragments: a lane j of a wide output into its
    fragment viewed with stride r from j (the interleave in registers, before one wide store)."""
    for f, (o, how, j) in zip(frags, _STORES):
        if const_expr(how == "lane"):
            r = lowered.OUT_WIDTHS[o]
            for lane in range(r):
                view = cute.make_tensor(f.iterator + lane, cute.make_layout((vec, chunks), stride=(r, r * vec)))
                view.store(results[_FIRST[o] + lane].to(f.element_type))
        else:
            f.store(results[_FIRST[o] + j].to(f.element_type))


def _store_reduced(outputs, results, row):
    """The "reduced" outputs of compute's results: one scalar per row (the caller picks the one thread)."""
    reduced = [o for o, kind in enumerate(lowered.OUTPUTS) if kind != "row"]
    for t, o in zip(outputs, reduced):
        t[row] = results[_FIRST[o]].to(t.element_type)


@cute.kernel
def row_kernel(
    m: Int32, nv: Int32, tensors, vec: cutlass.Constexpr[int], tpr: cutlass.Constexpr[int],
    chunks: cutlass.Constexpr[int], threads: cutlass.Constexpr[int], full: cutlass.Constexpr[bool],
    cluster: cutlass.Constexpr[int], direct: cutlass.Constexpr[bool], paired: cutlass.Constexpr[bool],
    convert_late: cutlass.Constexpr[bool], l2_last: cutlass.Constexpr[bool],
):
    """Register path: TPR threads own one row (or, in a cluster, CLUSTER CTAs of TPR threads do: the row's virtual
    thread rank*TPR + t); every input's row values stay in registers from the load, through compute()'s reductions,
    to the outputs.

    The loads no reduction needs (_late_loads: LayerNorm's weight and bias) are issued after the reductions: compute()
    runs once with zeros in their place, for its reductions alone (what else it computes is dead code), then again on
    every value with the reductions' results replayed. They hold no registers across the row reduction, which is
    what bounds the rows an SM keeps in flight: F.layer_norm at 32768x8192 on 512 threads of 2 chunks took 40
    registers a thread instead of 63, and 289 us instead of 340 on the H200; the budget they free gives x 4 chunks
    (values_per_load): 259 us, torch.compile 299 (benchmarks/2026-12-04-h200-late-loads.md). Their row index is
    clamped to M - 1 rather than predicated: a predicated late load made ptxas keep every loaded value live (59
    registers); a row past M reads row M - 1 and stores nothing."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    rows = threads // tpr
    t = tidx % tpr
    loads, scalars, row_outputs, reduced = _split(tensors)
    buf = None
    if const_expr(tpr > 32 and len(lowered.REDUCTIONS) > 0 and not direct):
        buf = _allocate_partials(rows, tpr, len(lowered.REDUCTIONS))
    exchange, first, pair = None, t, _online_pair(paired, tpr, cluster)  # paired: the plan's "pair"
    if const_expr(cluster > 1 and len(lowered.REDUCTIONS) > 0):
        exchange = _ClusterRow(cluster, len(lowered.REDUCTIONS), threads // 32 if direct else 0, pair is not None)
    stride = tpr * cluster  # between a thread's vectors: rank r of a cluster row reads every CLUSTER-th run of TPR
    if const_expr(cluster > 1):  # (one contiguous share a CTA, quack's way, tied: 2026-12-06-h200-online-pair.md)
        first = cute.arch.block_idx_in_cluster() * tpr + t
    row = bidx // cluster * rows + tidx // tpr
    frags = _fragments(loads, vec, chunks, _load_widths())  # not filled: see _chunk_mask
    whole = _whole_chunks(chunks, full)
    late, after = _late_loads(), _unreduced_loads(convert_late)
    if row < m:
        _load_chunks(loads, frags, first, row, nv, stride, chunks, whole, _early_loads(), l2_last)
    held = cutlass.min(row, m - 1)  # a row past M reads row M - 1's single values (and stores nothing)
    singles = _read_singles(scalars, held)
    values = _values(frags, singles, vec, chunks, after)
    valid = None if const_expr(full) else _chunk_mask(chunks, first, stride, nv, whole)
    reducer = _RowReducer(valid, values[_LIKE], tpr, buf, exchange, pair)
    results = lowered.compute(*values, Float32(nv * vec), reducer)
    reducer.done()
    if const_expr(len(after) > 0 or RELOAD):
        if const_expr(RELOAD):  # what the reductions read, read again (from L2): not held across them
            _load_chunks(loads, frags, first, held, nv, stride, chunks, whole, _early_loads(), l2_last)
        if const_expr(len(late) > 0):
            _load_chunks(loads, frags, first, held, nv, stride, chunks, whole, late, l2_last)
        for q in after:
            if const_expr(q not in late):  # loaded early: converted from here on (CONVERT_LATE)
                _pin(frags[q])
        results = lowered.compute(*_values(frags, singles, vec, chunks), Float32(nv * vec), reducer.replay())
    out_frags = _fragments(row_outputs, vec, chunks, _store_widths())
    _round_into(out_frags, results, vec, chunks)
    if row < m:
        _store_chunks(row_outputs, out_frags, first, row, nv, stride, chunks, whole)
        if first == 0:
            _store_reduced(reduced, results, row)


def _whole_chunks(chunks: int, full: bool) -> int:
    """A register row's chunks that every thread loads unpredicated: all of them when `full`, else every one but the
    last (TAIL_PREDICATES). A plan gives a thread chunks = ceil(NV / stride) at every N it serves (stride TPR *
    CLUSTER between a thread's vectors: _fit, _sub_wave_plans), so (chunks - 1) * stride < NV and a thread's vector
    first + k * stride < NV for k < chunks - 1; _prepare checks this of every plan it compiles."""
    return chunks if full else chunks - 1 if TAIL_PREDICATES else 0


def _fold_slice(p: int, loads, frags, singles, acc, known: dict, first, row, nv, n_f, vec: int, tpr: int,
                chunks: int, whole: bool):
    """One slice of reduction pass p: load it, run compute() with pass p's reducer. A whole slice (every vector
    exists) loads unpredicated and masks nothing; the partial last one predicates its loads and masks its reduce."""
    _load_chunks(loads, frags, first, row, nv, tpr, chunks, chunks if whole else 0)
    values = _values(frags, singles, vec, chunks)
    valid = None if const_expr(whole) else _chunk_mask(chunks, first, tpr, nv)
    lowered.compute(*values, n_f, _PassReducer(p, known, acc, valid, values[_LIKE]))


def _write_slice(loads, frags, singles, row_outputs, out_frags, acc, known: dict, first, row, nv, n_f, vec: int,
                 tpr: int, chunks: int, whole: bool):
    """One slice of the last pass: load it, compute() with every row result known, store the row outputs."""
    _load_chunks(loads, frags, first, row, nv, tpr, chunks, chunks if whole else 0)
    values = _values(frags, singles, vec, chunks)
    results = lowered.compute(*values, n_f, _PassReducer(None, known, acc, None, values[_LIKE]))
    _round_into(out_frags, results, vec, chunks)
    _store_chunks(row_outputs, out_frags, first, row, nv, tpr, chunks, chunks if whole else 0)


@cute.kernel
def looped_kernel(
    m: Int32, nv: Int32, iters: Int32, tensors, vec: cutlass.Constexpr[int], tpr: cutlass.Constexpr[int],
    chunks: cutlass.Constexpr[int], threads: cutlass.Constexpr[int],
):
    """Large-N path: one CTA per row, the reductions' passes over the row in slices (lowered.PASSES), then one
    that writes the row outputs."""
    t, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    loads, scalars, row_outputs, reduced = _split(tensors)
    singles = _read_singles(scalars, row)  # once per thread, before the passes
    buf = _allocate_partials(1, tpr, _SLOTS)
    frags = _fragments(loads, vec, chunks, _load_widths())
    out_frags = _fragments(row_outputs, vec, chunks, _store_widths())
    acc = cute.make_rmem_tensor((_SLOTS,), Float32)
    n_f = Float32(nv * vec)
    step = tpr * chunks
    known = {}  # reduction number -> its row result, once its pass is done

    whole = nv // step  # slices whose vectors all exist: no predicates, no masks; the last one (if any) is partial

    for p in cutlass.range_constexpr(max(lowered.PASSES) + 1 if lowered.PASSES else 0):
        for q, kind in enumerate(lowered.REDUCTIONS):
            if const_expr(lowered.PASSES[q] == p):
                acc[q] = Float32(IDENTITY[kind])
        for it in cutlass.range(whole):
            _fold_slice(p, loads, frags, singles, acc, known, it * step + t, row, nv, n_f, vec, tpr, chunks, True)
        if whole < iters:
            _fold_slice(p, loads, frags, singles, acc, known, whole * step + t, row, nv, n_f, vec, tpr, chunks, False)
        _row_results(p, acc, known, tpr, buf)

    # Last pass: every reduce() result is known; re-read the row (mostly L2 hits) and write the row outputs.
    if const_expr(len(row_outputs) > 0):
        for it in cutlass.range(whole):
            _write_slice(loads, frags, singles, row_outputs, out_frags, acc, known, it * step + t, row, nv, n_f, vec,
                         tpr, chunks, True)
        if whole < iters:
            _write_slice(loads, frags, singles, row_outputs, out_frags, acc, known, whole * step + t, row, nv, n_f,
                         vec, tpr, chunks, False)
    # The "reduced" outputs depend on the row results alone: compute() once more, on filler values.
    filler = cute.full((vec, chunks), 0.0, Float32)
    results = lowered.compute(*(singles[a[1]] if a[0] in SINGLE else filler for a in _OF_ARG), n_f,
                              _PassReducer(None, known, acc, None, filler))
    if t == 0:
        _store_reduced(reduced, results, row)


def _rows_mode(t, lead: int, m, divby: int = 1):
    """(shape, stride) of a row tensor's M mode, the one its row index walks: dim 0 of a 2-D x's tensors, by its
    stride (a multiple of divby: a row's VEC-wide loads); beside an x of rank 3 or more ([B, S, D] as the model
    passes it, lead = 2), M = B*S rows one row length apart (t's last dim). run() passes such tensors contiguous,
    and a contiguous tensor is its rows in row-major order, whatever stride torch keeps for a dim of extent 1
    ([1, B, D].transpose(0, 1)). So the kernel indexes them as 2-D rows, with no div/mod of the row index (a
    nested (S, B) : (s1, s0) mode cost a QK-norm over heads of 128 8% of its GPU time on the H200:
    benchmarks/2026-12-05-rows-as-stored.md), and the host reshapes nothing."""
    if const_expr(lead == 1):
        return t.shape[0], cute.assume(t.stride[0], divby=divby)
    return m, cute.assume(t.shape[lead], divby=divby)


def _broadcast_mode(t, i: int, x, lead: int):
    """(shape, stride) of broadcast input i's M mode beside an x of its named rank: x's leading dims innermost first,
    as _rows_mode's, with i's own stride where i has that dim (by name: lowered.DIMS) and 0 where the function
    broadcasts it (cos [S, D] beside q [B, S, H, D]: (H, S, B) : (0, s_S, 0)). The wrapper has checked each shared
    dim against x's (one symbol, _compile_args)."""
    own = {_X_DIMS.index(d): k for k, d in enumerate(lowered.DIMS[i]) if d != "1" and d != _X_DIMS[-1]}
    return (tuple(x.shape[j] for j in reversed(range(lead))),
            tuple(t.stride[own[j]] if j in own else 0 for j in reversed(range(lead))))


def _one_per_row(t, m, lead: int):
    """A tensor of one value per row of x as one mode that x's row index walks: beside 2-D rows, [M] or [M, 1] by
    its dim-0 stride (a per-row input as the function takes it, or a reduced output: 1 when contiguous); beside an x
    of rank 3 or more, [*lead] or [*lead, 1], contiguous: M values one apart (_rows_mode)."""
    return cute.make_tensor(t.iterator, cute.make_layout(m, stride=t.stride[0] if const_expr(lead == 1) else 1))


def _single_view(t, kind: str, m, lead: int, x=None, i: int = 0):
    """A single value's view, indexed by x's row: a scalar's one element; one per row (_one_per_row); one per row
    broadcast over some of x's dims, its [L0, L1, L2] view (host.broadcast_rows: stride 0 where broadcast) as one
    mode (L2, L1, L0) whose flat index is x's row, as a broadcast row input's M mode."""
    if const_expr(kind == "broadcast_per_row" and lead > 1):
        shape, stride = _broadcast_mode(t, i, x, lead)
        return cute.make_tensor(t.iterator, cute.make_layout((shape,), stride=(stride,)))
    if const_expr(kind == "broadcast_per_row"):
        return cute.make_tensor(t.iterator, cute.make_layout(((t.shape[2], t.shape[1], t.shape[0]),),
                                                             stride=((t.stride[2], t.stride[1], t.stride[0]),)))
    if const_expr(kind == "scalar"):
        return cute.make_tensor(t.iterator, cute.make_layout(1))
    return _one_per_row(t, m, lead)


def _as_heads(inputs) -> list:
    """Heads of c (HEADS: Qwen3's ``q.view(T, -1, head_dim)`` inside the function): each row input, [*lead, H*c] as
    run() passes it (contiguous), as the function's own view [*lead, H, c], made here in the launcher, not by torch
    on every call. A torch view costs 0.7 us on a CPU and 1.2 on the H100's host; with it and its checks gone,
    the QK-norm's run() went from 11.2 to 9.3 us on that host (benchmarks/2026-12-06-h100-host-views.md). The outputs
    come in that shape already (run() makes them so), and from here on the launch is that of any x of rank 3: T*H
    rows of c, one c apart."""
    return [cute.make_tensor(t.iterator, cute.make_layout((*t.shape[:-1], t.shape[-1] // _HEADS, _HEADS),
                                                          stride=(*t.stride[:-1], _HEADS, 1)))
            if kind == "row" else t for t, kind in zip(inputs, lowered.KINDS)]


@cute.jit
def reduction_launch(
    iters: Int32, stream, vec: cutlass.Constexpr[int], tpr: cutlass.Constexpr[int], chunks: cutlass.Constexpr[int],
    threads: cutlass.Constexpr[int], looped: cutlass.Constexpr[bool], full: cutlass.Constexpr[bool],
    cluster: cutlass.Constexpr[int], smem_bytes: cutlass.Constexpr[int], min_ctas: cutlass.Constexpr[int],
    direct: cutlass.Constexpr[bool], paired: cutlass.Constexpr[bool], convert_late: cutlass.Constexpr[bool],
    l2_last: cutlass.Constexpr[bool], *tensors,
):
    """Host side: every load as (VEC, NV, M) : (1, VEC, its row stride) (a part j of a wide input from column j*N;
    a wide input's lanes (r*VEC, NV, M) : (1, r*VEC, its row stride)), each vector as (VEC, NV) : (1, VEC), each
    scalar input as (1,), each row output as a row, each "reduced" output (and [M, 1]) as [M]; then
    reduction_launch's grid. N is x's last dim over its width r."""
    inputs, outputs = tensors[:len(lowered.INPUTS)], tensors[len(lowered.INPUTS):]
    inputs = rt.masks_as_bytes(inputs, lowered.DTYPES)  # a bool mask: its bytes
    if const_expr(_HEADS):  # x [*lead, H*c] as the model passes it: the function's view [*lead, H, c]
        inputs = _as_heads(inputs)
    lead = len(inputs[_X].shape) - 1  # x's leading dims: 1 for [M, N]; [B, S, D] comes as it is (_rows_mode)
    m, n = inputs[_X].shape[0], inputs[_X].shape[lead]
    for d in inputs[_X].shape[1:lead]:
        m = m * d  # M = B*S*...: the grid's rows
    if const_expr(lowered.WIDTHS[_X] > 1):  # the row length N: a wide x is r*N
        n = cute.assume(n // lowered.WIDTHS[_X], divby=vec)
    nv = n // vec
    views = []
    for i, how, j in _LOADS:
        t, kind = inputs[i], lowered.KINDS[i]
        width = vec * lowered.WIDTHS[i] if how == "lane" else vec  # a lanes load reads r*VEC contiguous elements
        if const_expr(kind == "row"):  # a lanes load's row stride is a multiple of r*VEC (host: _operand_vec)
            rows, ld = _rows_mode(t, lead, m, width)
            layout = cute.make_layout((width, nv, rows), stride=(1, width, ld))
        elif const_expr(kind == "broadcast" and lead > 1):  # as the function takes it, by its dims' names
            rows, ld = _broadcast_mode(t, i, inputs[_X], lead)
            layout = cute.make_layout((width, nv, rows), stride=(1, width, ld))
        elif const_expr(kind == "broadcast"):  # [L0, L1, L2, W] with stride 0 where it is broadcast (host)
            layout = cute.make_layout((width, nv, (t.shape[2], t.shape[1], t.shape[0])),
                                      stride=(1, width, (t.stride[2], t.stride[1], t.stride[0])))
        else:
            layout = cute.make_layout((width, nv), stride=(1, width))
        views.append(cute.make_tensor(t.iterator + j * n if how == "part" else t.iterator, layout))
    views += [_single_view(inputs[i], lowered.KINDS[i], m, lead, inputs[_X], i) for i in _SCALARS]
    for o, how, j in _STORES:  # a row output [M, r*N]: a half j from column j*N, or its lanes r*VEC wide
        t = outputs[o]
        width = vec * lowered.OUT_WIDTHS[o] if how == "lane" else vec
        rows, ld = _rows_mode(t, lead, m, width)
        views.append(cute.make_tensor(t.iterator + j * n if how == "part" else t.iterator,
                                      cute.make_layout((width, nv, rows), stride=(1, width, ld))))
    views += [_one_per_row(t, m, lead) for t, kind in zip(outputs, lowered.OUTPUTS) if kind != "row"]
    if const_expr(looped):
        looped_kernel(m, nv, iters, tuple(views), vec, tpr, chunks, threads).launch(
            grid=[m, 1, 1], block=[threads, 1, 1], smem=smem_bytes, stream=stream)
    else:
        rows = threads // tpr  # 1 in a cluster, whose CLUSTER consecutive CTAs share a row
        row_kernel(m, nv, tuple(views), vec, tpr, chunks, threads, full, cluster, direct, paired, convert_late,
                   l2_last).launch(
            grid=[(m + rows - 1) // rows * cluster, 1, 1], block=[threads, 1, 1],
            cluster=[cluster, 1, 1] if const_expr(cluster > 1) else None, smem=smem_bytes, stream=stream,
            **_occupancy(min_ctas, threads, smem_bytes))


def _occupancy(min_ctas: int, threads: int, smem_bytes: int) -> dict:
    """The launch options that hold ptxas to min_ctas CTAs of `threads` an SM (.minnctapersm and .maxntid; none
    for 0). CuTe DSL 4.8.1 then asks the driver for the SM's shared memory to derive the kernel's preferred
    carveout, unless the launch names one: naming it (the percent of sm_90's shared memory those CTAs use, the
    rest left to L1) keeps compile_only working with no GPU, and the code the same with one."""
    if not min_ctas:
        return {}
    carveout = -(-100 * min_ctas * (smem_bytes + SMEM_RESERVED_PER_CTA) // SM90_SMEM_PER_SM)
    return {"min_blocks_per_mp": min_ctas, "max_number_threads": [threads, 1, 1], "preferred_smem_carveout": carveout}


# ------------------------------------------------------------------------------------------------
# Host interface
# ------------------------------------------------------------------------------------------------

_compiled: dict = {}  # (op, dtype, vec, plan) -> compiled launcher: one compile serves every M, and every N of the plan
_launches: dict = {}  # run()'s argument signature -> (compiled launcher, iters): the hot path's one lookup


def _plan_args(vec: int, cfg: dict) -> tuple:
    """The launcher's constexprs of a plan: vec, tpr, chunks, threads, looped, full, cluster, smem bytes (a slot per
    reduce), CTAs an SM (0: ptxas's choice), the cluster's exchange (direct: a send a warp), the online pair's, and
    the full-SM plan's convert_late and l2_last."""
    return (vec, cfg["tpr"], cfg["chunks"], cfg["threads"], cfg["looped"], cfg["full"], cfg["cluster"],
            _smem_bytes(cfg, _SLOTS), cfg["min_ctas"], cfg["direct"], cfg["pair"], cfg["convert_late"], cfg["l2_last"])


def _pick_vec(elem_bytes: int, n: int, ld: int, addresses) -> int:
    """Widest power-of-two vector (<= 128 bits) dividing N, the row stride and every tensor's element offset."""
    vec = ACCESS_BITS // 8 // elem_bytes
    while vec > 1 and (n % vec or ld % vec or any(a % (vec * elem_bytes) for a in addresses)):
        vec //= 2
    return vec


def _max_rows(n: int, ld: int) -> int:
    """The largest M whose last element of x [M, N] with row stride ld has an int32 offset ((M - 1) * ld + N <
    2**31): the kernel's offsets are 32-bit."""
    return (2**31 - 1 - n) // max(ld, 1) + 1


def _compile_args(dtype: str, vec: int, cfg: dict, lead: int = 1, per_row_ranks: tuple = ()) -> tuple:
    """Fake inputs and outputs of reduction_launch, in INPUTS then OUTPUTS order, sharing the M and N symbols.

    Row inputs [M, N] : (ld, 1) each with its own ld symbol (a multiple of VEC), vectors [N], row outputs [M, N]
    contiguous; all VEC-element aligned (an fp32 row output of a 16-bit op: min(16, 4 * VEC) bytes). Reduced
    outputs [M] and [M, 1] get scalar stores: element alignment.

    x of rank 3 or more (lead > 1 leading dims, [B, S, D]): M is that many shared symbols. Every tensor with rows
    (row inputs and outputs, per-row inputs of rank per_row_ranks, reduced outputs) has x's leading shape and
    strides of its own (run passes them contiguous), and a broadcast input has x's symbol for each dim it names
    (lowered.DIMS), 1 for its "1"s: the wrapper checks every shared extent against x's.

    Heads of c: lead counts the function's view of x, [*lead, H, c], and N is c itself. The row inputs come as the
    model passes them, [*lead[:-1], H*c], and the wrapper checks that H*c is a multiple of c; the outputs' H, which
    only they share, run() checks against x's."""
    ms = tuple(rt.dim() for _ in range(lead))  # x's leading dims, M = their product
    m, n = ms[0], _HEADS or rt.dim(vec)  # heads of c: rows of c
    hc = rt.dim(_HEADS) if _HEADS else None  # heads of c: every row input's last dim H*c, one symbol (the wrapper
    # checks that they agree, as it checked [*lead, H, c] views sharing H)
    per_row_ranks = iter(per_row_ranks)

    def strides(step: int) -> tuple:  # of the leading dims of a tensor with rows (their own symbols)
        return tuple(rt.dim(step) for _ in ms)

    inputs = []
    for kind, kept, width in zip(lowered.KINDS, lowered.DTYPES, lowered.WIDTHS):
        name = ("bool" if BOOL_MASKS else "uint8") if kept == "bool" else dtype  # a mask: read as its bytes
        eb = 1 if kept == "bool" else _BYTES[dtype]
        lanes = any(lowered.ARGS[k][1] == "lane" for k in range(len(lowered.ARGS))
                    if lowered.ARGS[k][0] == len(inputs))  # r*VEC-wide loads: stride and start r*VEC aligned
        step = vec * width if lanes else vec
        row = n if width == 1 else rt.dim(vec * width)
        if kind.startswith("broadcast") and lead > 1:  # its own dims: x's symbol for each one it names, 1 for "1"
            names = lowered.DIMS[len(inputs)]
            own = names[:-1] if kind == "broadcast" else names
            inputs.append(rt.tensor(name, (*(1 if d == "1" else ms[_X_DIMS.index(d)] for d in own),
                                           *((row,) if kind == "broadcast" else ())),
                                    (*(rt.dim() if d == "1" or kind != "broadcast" else rt.dim(step) for d in own),
                                     *((1,) if kind == "broadcast" else ())),
                                    align=min(16, step * eb) if kind == "broadcast" else eb))
            continue
        if kind == "row" and _HEADS:  # [*lead, H*c] as the model passes it (_as_heads), H*c a multiple of c
            inputs.append(rt.tensor(name, (*ms[:-1], hc), (*strides(step)[:-1], 1), align=min(16, step * eb)))
            continue
        rank = next(per_row_ranks, lead) if kind == "per_row" else 0
        if rank > 1 or kind == "per_row" and lead > 1:  # [*lead] or [*lead, 1] by its own strides
            inputs.append(rt.tensor(name, (*ms, *(1,) * (rank - lead)), (*strides(1), *(rt.dim(),) * (rank - lead)),
                                    align=eb))
            continue
        inputs.append(rt.tensor(name, (*ms, row), (*strides(step), 1), align=min(16, step * eb)) if kind == "row"
                      # [L0, L1, L2, W]: host.broadcast_rows' view, stride 0 over the dims it is broadcast over
                      else rt.tensor(name, (rt.dim(), rt.dim(), rt.dim(), row), (*(rt.dim(step) for _ in range(3)), 1),
                                     align=min(16, step * eb)) if kind == "broadcast"
                      else rt.tensor(name, (row,), (1,), align=min(16, step * eb)) if kind == "vector"
                      else rt.tensor(name, (m,), (1,), align=eb) if kind == "per_row"  # [M]: its M values
                      # [L0, L1, L2]: host.broadcast_rows' view of one value per row, stride 0 where broadcast
                      else rt.tensor(name, (rt.dim(), rt.dim(), rt.dim()), (rt.dim(), rt.dim(), rt.dim()), align=eb)
                      if kind == "broadcast_per_row"
                      else rt.tensor(name, (1,), (1,), align=eb))
    outputs = []
    for kind, out_dtype, width, how in zip(lowered.OUTPUTS, lowered.OUT_DTYPES, lowered.OUT_WIDTHS, lowered.OUT_HOW):
        name = dtype if out_dtype == "input" else out_dtype  # fp32, or a quantizer's int8 / fp8
        ob = _BYTES[name]
        row = n if width == 1 else rt.dim(vec * width)  # a wide output [M, r*N]
        step = vec * width if how == "lane" else vec
        if lead > 1:  # x's leading shape, strides of its own
            shape, stride = {"row": ((*ms, row), (*strides(step), 1)), "reduced": (ms, strides(1)),
                             "reduced_keepdim": ((*ms, 1), (*strides(1), rt.dim()))}[kind]
        else:
            shape, stride = {"row": ((m, row), (row, 1)), "reduced": ((m,), (1,)),
                             "reduced_keepdim": ((m, 1), (1, 1))}[kind]
        outputs.append(rt.tensor(name, shape, stride, min(16, step * ob) if kind == "row" else ob))
    return (1, rt.STREAM, *_plan_args(vec, cfg), *inputs, *outputs)


def _operand_vec(elem_bytes: int, n: int, lds, inputs, outputs) -> int:
    """_pick_vec over every input and row output (each row stride, each pointer). An fp32 row output of a 16-bit op
    stores VEC fp32 values per vector, so its pointer must be min(16, 4 * VEC)-byte aligned."""
    rows = [o for o, kind in zip(outputs, lowered.OUTPUTS) if kind == "row"]
    loaded = [t for t, kind in zip(inputs, lowered.KINDS) if kind not in SINGLE]
    lds = [*lds, *(s for t, kind in zip(inputs, lowered.KINDS) if kind == "broadcast" for s in t.stride()[:3])]
    vec = _pick_vec(elem_bytes, n, math.gcd(*lds), [t.data_ptr() for t in (*loaded, *rows)
                                                    if t.element_size() == elem_bytes])
    lanes = [(t, lowered.WIDTHS[i]) for i, (t, kind) in enumerate(zip(inputs, lowered.KINDS))
             if any(a[0] == i and a[1] == "lane" for a in lowered.ARGS)]
    lanes += [(o, r) for o, r, how in zip(outputs, lowered.OUT_WIDTHS, lowered.OUT_HOW) if how == "lane"]
    while vec > 1 and (any(math.gcd(*t.stride()[:-1]) % (vec * r) or t.data_ptr() % min(16, vec * r * elem_bytes)
                           for t, r in lanes)
                       or any(o.data_ptr() % min(16, vec * o.element_size()) for o in rows
                           if o.element_size() != elem_bytes)
                       or any(t.data_ptr() % vec for t in loaded if t.element_size() == 1)):  # a mask's VEC bytes
        vec //= 2
    return vec


def _out_shapes(m: int, n: int) -> list:
    return host.lowered_out_shapes(lowered, m, n)


def _prepare(inputs, out):
    """A signature's first call, or a refused one: host.py's checks, the plans, their compiled launchers (and the
    outputs). Returns (entry, outputs): an entry is (launcher, iters, the largest M it serves, the entry of the rows
    above those or None), the first one's plan that of a single row; the last one serves up to the largest M whose
    offsets stay in int32 at this N and row stride. Every plan of the N is compiled here (two where rows may be many:
    plans), so that run() never compiles on a hot path that crosses from few rows to many. An x of rank 3 or more
    (contiguous, as run() passes it) is checked and planned as the [M, N] rows it holds (host.flat_rows), and
    compiled on its own shape (_compile_args)."""
    host.check_count(lowered.SOURCE, inputs, len(lowered.INPUTS))
    host.check_rank(lowered, inputs[_X])
    if _HEADS:  # x [*lead, H*c]: planned as its T*H rows of c, compiled on the function's view [*lead, H, c]
        host.check_heads(lowered, inputs[_X])
    lead = inputs[_X].dim() if _HEADS else max(inputs[_X].dim() - 1, 1)
    ranks = tuple(inputs[i].dim() for i in _PER_ROW)  # each as it came: [M] or [M, 1], [B, S] or [B, S, 1]
    if lead > 1 or _HEADS:
        inputs, out = host.flat_rows(lowered, inputs, out)
    m, n, _ = host.rows_of(lowered.SOURCE, inputs[_X])
    n //= lowered.WIDTHS[_X]  # the row length N (a wide x is r*N)
    dtype, outputs = host.lowered_operands(lowered, inputs, out, _out_shapes(m, n), False)
    lds = [host.rows_of(lowered.SOURCE, t)[2] for t, kind in zip(inputs, lowered.KINDS) if kind == "row"]
    ld = max(lds) if m > 1 else n  # as run()'s signature has it (one row: its stride is never used)
    if m > _max_rows(n, ld):
        raise ValueError(f"{lowered.SOURCE}: {m}x{n} with row strides {lds} exceeds the int32 index range of this kernel")
    vec = _operand_vec(inputs[_X].element_size(), n, lds, inputs, outputs)
    for i, width in enumerate(lowered.WIDTHS):  # a lanes load reads r elements together: the row stride keeps them
        if width > 1 and math.gcd(*inputs[i].stride()[:-1]) % width and any(a[0] == i and a[1] == "lane"
                                                                            for a in lowered.ARGS):
            raise ValueError(f"{lowered.SOURCE}: {lowered.INPUTS[i]}'s row stride {inputs[i].stride(0)} is not a "
                             f"multiple of {width} (its interleaved lanes are read together); pass it contiguous")
    entry, bound = None, _max_rows(n, ld)
    for start, cfg in reversed(plans(n, vec)):  # each plan of this N compiled, the one of the most rows first
        if not cfg["looped"] and (cfg["chunks"] - 1) * cfg["tpr"] * cfg["cluster"] >= n // vec:
            raise RuntimeError(f"{lowered.SOURCE}: internal: plan {cfg} at N = {n} leaves a thread's chunk before its "
                               "last empty (_whole_chunks); please report it with this line")
        if start <= bound:
            key = (dtype, *_plan_args(vec, cfg), lead, ranks)
            launcher = rt.compiled(_compiled, key, reduction_launch,
                                   functools.partial(_compile_args, dtype, vec, cfg, lead, ranks))
            entry, bound = (launcher, cfg["iters"], bound, entry), start - 1
    return entry, outputs


_ROW_INPUTS = tuple(i for i, kind in enumerate(lowered.KINDS) if kind == "row")
_PER_ROW = tuple(i for i, kind in enumerate(lowered.KINDS) if kind == "per_row")
_PACKED = tuple(i for i, kind in enumerate(lowered.KINDS) if kind in ("row", "per_row"))  # beside an N-D x, run()
# passes these (and the outputs) only contiguous: the launcher walks their rows one row length apart (_rows_mode);
# a broadcast input goes by its own strides (_broadcast_mode), which the wrapper checks
_N_INPUTS = len(lowered.INPUTS)
_BROADCAST = tuple(i for i, kind in enumerate(lowered.KINDS) if kind == "broadcast")
_ND = bool(lowered.HEADS and not _HEADS or _BROADCAST or "broadcast_per_row" in lowered.KINDS)  # rows not x's own
# (heads aside, which the launcher views itself: _as_heads): _run_rows takes x as it is only at _AS_IS_RANK


def _viewer():
    """run()'s view of the inputs that need one (None: none does): a 0-d scalar as [1], a bool mask as its bytes
    unless BOOL_MASKS; a per-row input goes as it is, of any rank (_compile_args)."""
    return host.lowered_viewer(lowered, flat_per_row=False, mask_bytes=not BOOL_MASKS)


_VIEWS = _viewer()
_X_WIDTH = lowered.WIDTHS[_X]
_ONE_ROW_INPUT = len(_ROW_INPUTS) == 1
_ONE_OUTPUT = len(lowered.OUTPUTS) == 1
_DATA_PTR = torch.Tensor.data_ptr
_KEYED = (*_ROW_INPUTS, *_BROADCAST, *_PER_ROW)  # the inputs whose strides a long key holds, row inputs first
_N_ROWS = len(_ROW_INPUTS)
_LONG_KEY = not _ONE_ROW_INPUT or bool(_BROADCAST or _PER_ROW)  # run()'s signature holds more than x's dtype, N and
# row stride: the strides of _KEYED, each as Tensor.stride() gives them (stride(0) parses its argument: 0.07 us more a
# tensor; Qwen2-MoE's gate over two row inputs: run() 3.91 -> 3.19 us on a CPU,
# benchmarks/2026-12-06-h100-host-views.md)


def _new_output(kind: str, r: int, dtype, like):
    """How run() makes an output (dtype None: x's) beside x [*lead, r_x*N]: one of x's shape by `like` when
    x is packed (torch's cheapest allocation, 0.85 us on a CPU; it keeps x's strides, so a padded row stride, or the
    stride of a lone row sliced from a wider matrix, which torch calls contiguous, would reach the output), else by
    new_empty of [*lead, r*N], [*lead] or [*lead, 1]. `lead` is a tuple: (M,) for 2-D rows, [*lead, H] for heads of
    c. new_empty takes the extents one by one, and a dtype only when it is not x's: 0.9 us on a CPU, where a shape
    tuple costs 1.35 and dtype=None 0.2 more (torch parses them slower)."""
    empty = torch.Tensor.new_empty if dtype is None else functools.partial(torch.Tensor.new_empty, dtype=dtype)
    if kind == "row" and r == _X_WIDTH and not _HEADS:  # (heads of c: the function's view [*lead, H, c], not x's)
        return lambda x, packed, lead, n: like(x) if packed else empty(x, *lead, n * r)
    if kind == "row":
        return lambda x, packed, lead, n: empty(x, *lead, n * r)
    if kind == "reduced":
        return lambda x, packed, lead, n: empty(x, *lead)
    return lambda x, packed, lead, n: empty(x, *lead, 1)  # reduced_keepdim


_EMPTY_LIKES = host.empty_likes(lowered.OUT_DTYPES)  # each output of x's shape as torch.empty_like of x makes it
_NEW_OUTPUTS = tuple(_new_output(kind, r, d, like) for kind, r, d, like in
                     zip(lowered.OUTPUTS, lowered.OUT_WIDTHS, host.out_dtypes(lowered.OUT_DTYPES), _EMPTY_LIKES))
_LIKE_ONLY = not _HEADS and all(kind == "row" and r == _X_WIDTH for kind, r in zip(lowered.OUTPUTS, lowered.OUT_WIDTHS))
_LIKES = _EMPTY_LIKES if _LIKE_ONLY else ()  # run() calls them on a packed x with no Python frame in between:
# RoPE's run() 3.68 -> 3.55 us on a CPU against _NEW_OUTPUTS' lambdas (benchmarks/2026-12-06-h100-host-views.md)
_CONTIGUOUS = torch.Tensor.is_contiguous


def _run_rows(*inputs, out=None, flat=False):
    """lowered.compute over the rows of x, on the current CUDA stream: one output tensor, or a tuple of them.

    inputs in lowered.INPUTS order, the function's own (rows [..., N] with a contiguous last dim and any row stride,
    vectors [N], scalars of one element, masks bool); `out` one tensor or a tuple/list in OUTPUTS order.

    This is run() itself for a program whose rows are x's (see run below) and the hot path: the signature (x's dtype, N,
    the row strides; the pointers' 16-byte phases once any call had one) picks the compiled plans, M is free: one dict
    lookup, one comparison of M against the rows the entry's plan serves (where rows are many, one more step to the
    entry of the many-rows plan: plans), then the TVM-FFI call, whose wrapper checks dtypes, shapes, strides and the
    alignment each plan assumes against the compiled variant. host.py runs on a signature's first call and when the
    wrapper refuses one, so its checks and its words cost nothing on the hot path (see cutedsl_runtime.py).

    Layouts: x [M, N], or of rank 3 or more ([B, S, D]) with the tensors of its rows contiguous, goes to the launcher
    as it is; so do heads of c, x [*lead, H*c] (_as_heads), and, beside inputs the function broadcasts over x's dims
    (RoPE's cos [S, D] beside q [B, S, H, D]), an x of the rank the function names its dims at (_broadcast_mode).
    Any other layout goes through host.rows_nd, which views the rows as [M, N] and calls back with `flat` (its
    views are the rows, whatever the function's dims: _run_flat).

    Pointers: a plan's vector width depends on every pointer's 16-byte phase, but reading them costs 0.1 us a
    tensor, and torch's allocations are aligned. So run() assumes phase 0 until a signature's first call has a
    pointer that is not (a view x[:, 1:], say), or a call is refused for one: from then on (_PHASES) the phases are
    part of the signature, and that call runs again under its own plan. The same holds with several row inputs,
    whose signature has every row stride but no phase until then: Qwen2-MoE's per-row gate over two row inputs
    spent 7.6 us of Python a call with the phases read and its views rebuilt per call, 4.5 without (a CPU, the
    launcher stubbed out: benchmarks/2026-12-05-host-python-cpu.md).

    Host cost: every step here is paid on every call, beside the TVM-FFI launch itself: hence one Python frame
    (run is this function), and the int32 bound kept in the entry (the largest M of the signature's N and row
    stride) rather than recomputed (benchmarks/2026-12-04-h200-host-trim.md)."""
    global _PHASES
    try:
        x = inputs[_X]
    except IndexError:  # too few inputs: host.py says so
        return host.rows_nd(lowered, _run_flat, inputs, out)
    shape = x.shape
    if len(shape) != 2 or _HEADS:  # x [*lead, N] (a model's [B, S, D]), or heads of c, x [*lead, H*c]: passed as
        # they are when x and its kin are contiguous
        if _ND and len(shape) != _AS_IS_RANK:  # rows not x's own, x not of the rank the function names its dims at
            return host.rows_nd(lowered, _run_flat, inputs, out)
        kin = [inputs[i] for i in _PACKED] if len(inputs) == _N_INPUTS else []  # x among them
        if out is not None and kin:
            given = host.lowered_outputs(out)
            kin += given
        if len(shape) < _LEAST_RANK or not kin or not all(map(_CONTIGUOUS, kin)):  # [M, N] views, then the 2-D
            # call (or the count check's words)
            return _heads_repacked(inputs, out) if _HEADS else host.rows_nd(lowered, _run_flat, inputs, out)
        if _VIEWS:
            inputs = _VIEWS(inputs)
        n = shape[-1]
        if _HEADS:  # T*H rows of c, the outputs in the function's view [*lead, H, c] (_as_heads; host.view_lead's,
            lead = (*shape[:-1], n // _HEADS)  # inline: a call less on the hot path)
            n = _HEADS
        else:
            lead = () if _LIKE_ONLY else tuple(shape[:-1])  # only outputs not of x's shape need it (_LIKES)
        m = x.numel() // n  # M rows, as the plan's int32 bound counts them
        if _X_WIDTH != 1:
            n //= _X_WIDTH
        if out is None:
            outputs = [like(x) for like in _LIKES] if _LIKE_ONLY else [new(x, True, lead, n) for new in _NEW_OUTPUTS]
        else:
            outputs = given
            if _HEADS and outputs[0].shape[len(shape) - 1:len(shape)] != lead[-1:]:  # their H, which the wrapper
                return _heads_repacked(inputs, out)  # checks only among them (x has H*c)
        signature = (x.dtype, n, len(shape), *[inputs[i].dim() for i in _PER_ROW]) if _PER_ROW else \
            (x.dtype, n, len(shape))
        if _PHASES:
            signature += tuple(_DATA_PTR(t) & 15 for t in (*inputs, *outputs))
    else:
        if _ND and not flat:  # rows not x's own: host.rows_nd's [M, N] views of them, then back here with `flat`
            return host.rows_nd(lowered, _run_flat, inputs, out)
        m, n = shape
        if _VIEWS:  # x is never among the inputs a view changes (it is a float tensor of rows)
            inputs = _VIEWS(inputs)
        if _X_WIDTH != 1:
            n //= _X_WIDTH  # the row length N: a wide x is r*N
        ld = x.stride()[0]  # (0.07 us less than x.stride(0) on a CPU: no argument to parse)
        if out is not None:
            outputs = host.lowered_outputs(out)
        elif _LIKE_ONLY and ld == n * _X_WIDTH:  # x packed: outputs of its shape and strides
            outputs = [like(x) for like in _LIKES]
        else:
            outputs = [new(x, ld == n * _X_WIDTH, (m,), n) for new in _NEW_OUTPUTS]
        # x's row alone, pointers assumed 16-byte aligned: a short key; else every row stride and the broadcast
        # inputs' strides, and once any call had a pointer off 16 bytes (_PHASES) each pointer's phase (it picks
        # the vector width)
        if _LONG_KEY or _PHASES:  # every row input's strides, then the broadcast inputs' and the per-row inputs' ([M]
            # or [M, 1], compiled as it comes, so that a new layout meets the checks)
            strides = [inputs[i].stride() for i in _KEYED]
            ld = (strides[0] if _ONE_ROW_INPUT else max(strides[:_N_ROWS]))[0] if m > 1 else n  # (one row: never used)
            signature = (x.dtype, n, ld, *strides)
            if _PHASES:
                signature += tuple(_DATA_PTR(t) & 15 for t in (*inputs, *outputs))
        else:
            signature = (x.dtype, n, ld if m > 1 else n)
    prepared = _launches.get(signature)
    while prepared is not None and m > prepared[2]:  # M is not in the signature: each entry has the rows it serves,
        prepared = prepared[3]  # then the entry of the rows above them (many rows: plans), or None
    if prepared is None:
        if not _PHASES and _phase(inputs, outputs):  # a first call off 16 bytes: key on the phases from now on
            _PHASES = True
            return _run_rows(*inputs, out=out, flat=flat)
        prepared = _launches[signature] = _prepare(inputs, out)[0]  # raises for an M past the int32 bound
        while m > prepared[2]:
            prepared = prepared[3]
    launcher, iters = prepared[0], prepared[1]
    try:
        launcher(iters, *inputs, *outputs)
    except (TypeError, ValueError):  # the wrapper refused the call before launching
        if not _PHASES and _phase(inputs, outputs):  # a pointer off 16 bytes: key on the phases from now on
            _PHASES = True
            return _run_rows(*inputs, out=out, flat=flat)
        masks = host.bool_masks(lowered, inputs) if BOOL_MASKS else None  # bytes: the launcher takes bool
        if masks is not None:
            return _run_rows(*masks, out=out, flat=flat)
        _prepare(inputs, out)  # host.py says why in the words every cell uses ...
        if len(shape) > 2 and not lowered.HEADS:  # ... or finds nothing wrong: an out of another rank ([M, N]
            # beside x [B, S, N]) takes the [M, N] views, as before
            return host.rows_nd(lowered, _run_flat, inputs, out)
        raise  # ... and the wrapper's own message stands for 2-D rows
    return outputs[0] if _ONE_OUTPUT else tuple(outputs)


def _heads_repacked(inputs, out):
    """run() on heads of c laid out otherwise than _run_rows takes them as they are: a row input that is not
    contiguous (q sliced from a fused QKV projection) goes as a contiguous copy, as host.rows_nd's [T*H, c] reshape
    would copy it; a given out that is contiguous but not of the function's shape ([T, H*c], q's own) is written
    through that view of it and handed back as given. A wrong count of inputs, a 0-d x, a last dim of no whole
    number of heads, or an out of another size or not contiguous, gets host.py's words."""
    if len(inputs) != _N_INPUTS or not inputs[_X].dim() or inputs[_X].shape[-1] % _HEADS:
        return host.rows_nd(lowered, _run_flat, inputs, out)  # raises, in host.py's words
    inputs = [t.contiguous() if i in _ROW_INPUTS else t for i, t in enumerate(inputs)]
    if out is None:
        return _run_rows(*inputs)
    given, lead = host.lowered_outputs(out), host.view_lead(lowered, inputs[_X])
    views = []
    for o, kind, r in zip(given, lowered.OUTPUTS, lowered.OUT_WIDTHS, strict=True):
        shape = host.lead_shape(kind, lead, _HEADS * r)
        if not o.is_contiguous() or o.numel() != math.prod(shape):
            raise ValueError(f"{lowered.SOURCE}: out must be contiguous, of the function's view of x's heads "
                             f"{list(shape)} (or as many elements), got {tuple(o.shape)}; or pass no out")
        views.append(o.view(shape))
    _run_rows(*inputs, out=views)
    return given[0] if len(given) == 1 else tuple(given)


_LEAST_RANK = 1 if _HEADS else 3  # the least rank of an x that _run_rows's N-D branch takes as it is
_AS_IS_RANK = len(_X_DIMS) if _ND and not lowered.HEADS and len(_X_DIMS) > 2 else -1  # rows not x's own: the
# rank at which x goes as it is beside inputs broadcast by its dims' names (none: -1)
_run_flat = functools.partial(_run_rows, flat=True)  # host.rows_nd's call back with [M, N] views of the rows

# run(*inputs, out=None): one output tensor, or a tuple of them (_run_rows says how). Every program takes the hot path
# itself, with no frame in front of it: a frame cost 0.8-0.9 us a call on the H200's host
# (benchmarks/2026-12-04-h200-host-trim.md), and 0.3 on a CPU for RoPE (benchmarks/2026-12-06-h100-host-views.md).
run = _run_rows
_PHASES = False  # _run_rows: set by the first plan or refusal for a pointer that is not 16-byte aligned


def _phase(inputs, outputs) -> int:
    """The OR of every pointer's low 4 bits: 0 when all are 16-byte aligned."""
    return functools.reduce(operator.or_, map(_DATA_PTR, (*inputs, *outputs))) & 15


def _case_mn(case: dict | None) -> tuple[int, int]:
    """(M, N) of a case as the kernel runs it (as host.lowered_lengths: a wide output's row is r pieces of N, heads
    of c are rows of c)."""
    if not case:
        return 4096, 4096
    dims = case.get("dims") or [case["vars"]["M"], case["vars"]["N"]]
    m, n = math.prod(map(int, dims[:-1])), int(dims[-1])
    rows = host.lowered_lengths(n, lowered.HEADS, next((r for r, kind in zip(lowered.OUT_WIDTHS, lowered.OUTPUTS)
                                                        if kind == "row"), 1))[0]
    return m * n // rows if lowered.HEADS else m, rows


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", dtype: str | None = None,
                 vec: int | None = None) -> str:
    """Compile the case's launch plan for sm_90a without a GPU (fake pointers and stream); write and return PTX.

    The case's M and N pick the plan (contiguous rows, 16-byte aligned pointers), as run() would for it."""
    dtype = dtype or OP_SPEC["dtype"]
    m, n = _case_mn(case)
    vec = vec or _pick_vec(_BYTES[dtype], n, n, [])
    cfg = plan(n, vec, m)
    rows = (f"rows{cfg['tpr']}" + (f"_cta{cfg['threads']}" if cfg["rows_per_cta"] > 1 else "")
            if cfg["cluster"] == 1 else f"cluster{cfg['cluster']}")
    path = ("looped" if cfg["looped"] else rows) + \
        (f"_{cfg['min_ctas']}ctas" if cfg["min_ctas"] else "") + ("_direct" if cfg["direct"] else "")
    lead = _case_lead(case)
    ranks = _per_row_ranks(lead)
    name = f"{OP_SPEC['op']}_{dtype}_n{n}_{path}" + (f"_rank{lead + 1}" if lead > 1 else "")
    return rt.dump_ptx(reduction_launch, _compile_args(dtype, vec, cfg, lead, ranks), out_dir, name)


def _case_lead(case: dict | None) -> int:
    """x's leading dims in a case as run() launches it: the case's [*lead, N] (reference.make_inputs), or its dims;
    one more for heads of c, which the launcher views as the function does, [*lead, H, c] (_as_heads)."""
    if not case:
        return 1
    lead = len(case.get("lead") or (case.get("dims") or "MN")[:-1])
    return lead + 1 if _HEADS else lead  # heads of c: the function's view of x, [*lead, H, c] (_as_heads)


def _per_row_ranks(lead: int) -> tuple:
    """The rank of each per-row input beside an x of lead leading dims, as a case makes it (host.per_row_form): its
    own dims beside the x they name, else x's leading dims and a trailing 1 where the function takes one ([M, 1],
    [B, S, 1])."""
    forms = [host.per_row_form(lowered.INPUTS[i]) for i in _PER_ROW]
    return tuple(len(names) if names and lead > 1 else lead + one for names, one in forms)


def passes() -> int:
    """Passes of the looped path over a row: the reductions' (lowered.PASSES), plus one that writes the row outputs."""
    return (max(lowered.PASSES) + 1 if lowered.PASSES else 0) + ("row" in lowered.OUTPUTS)


def describe(case: dict) -> dict:
    """Launch configuration of a case (contiguous rows), for the plan and the report."""
    dtype = OP_SPEC["dtype"]
    m, n = _case_mn(case)
    vec = _pick_vec(_BYTES[dtype], n, n, [])
    cfg, every = plan(n, vec, m), plans(n, vec)
    grid = m if cfg["looped"] else -(-m // cfg["rows_per_cta"]) * cfg["cluster"]
    reads = {1: "; x is read once", 2: "; the row is read twice (the second pass is expected to hit L2)"}
    sub_wave = len(every) > 1 and every[0][1]["cluster"] == 1 and m < every[1][0]  # _sub_wave_plans's first
    return {
        "path": f"looped (one CTA per row, {passes()} passes)" if cfg["looped"] else "register-resident rows"
        + (f", each split across a cluster of {cfg['cluster']} CTAs" if cfg["cluster"] > 1 else "")
        + (f", {cfg['min_ctas']} CTAs an SM (many rows)" if cfg["min_ctas"] else "")
        + (", what no reduction needs converted after the reductions" if cfg["convert_late"] else "")
        + (f", twice the threads: no more rows than the {SM_COUNT} SMs" if sub_wave else ""),
        "cluster": cfg["cluster"],
        "vector_elements": vec,
        "threads_per_row": cfg["tpr"] * cfg["cluster"],
        "chunks_per_thread": cfg["chunks"] if not cfg["looped"] else f"{cfg['chunks']} per iteration x {cfg['iters']}",
        "rows_per_cta": cfg["rows_per_cta"],
        "threads_per_cta": cfg["threads"],
        "smem_bytes": _smem_bytes(cfg, _SLOTS),
        "grid": [grid, 1, 1],
        "grid_blocks": grid,
        "data_movement": f"global -> registers with {vec * _BYTES[dtype] * 8}-bit loads, fp32 reduce in "
        "registers, warp shfl.sync butterfly"
        + (", every warp's result to every CTA of the cluster through DSMEM (st.async + mbarrier)" if cfg["direct"] else
           (", smem across warps" if cfg["tpr"] > 32 else "")
           + (", DSMEM across the cluster's CTAs (st.async + mbarrier)" if cfg["cluster"] > 1 else ""))
        + (", the online max and its sum beyond the warp as one (max, sum) pair" if not cfg["looped"] and
           _online_pair(cfg["pair"], cfg["tpr"], cfg["cluster"]) else "")
        + (", every load with an L2 evict_last policy" if cfg["l2_last"] else "")
        + ", then registers -> global"
        + (reads.get(passes(), f"; the row is read {passes()} times (passes after the first are expected to hit L2)")
           if cfg["looped"] else reads[1]),
    }
