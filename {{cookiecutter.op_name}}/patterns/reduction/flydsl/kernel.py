"""Row reduction kernel in FlyDSL for AMD CDNA3 (gfx942) and CDNA4 (gfx950): one program over the rows of x, reduced
over the last dim.

Every op of this cell is a program: the built-in ones (sum, mean, max, softmax, rmsnorm) are the PyTorch functions
of tools/patterns/reduction/programs.py in the template repository, a user's op is their own function, and a bake
traces either into lowered.py at the workspace root (tests/lowered_examples/CONTRACT.md in the template). This file
is the data movement around it, a bandwidth kernel over the last dim of x [M, N]: each row is owned by a power-of-two
group of lanes or by whole waves and read once with 128-bit buffer loads into VGPRs; lowered.compute() runs on the
lane's fp32 values with a reduce(kind, v) that is the row's reduction hierarchy (in-lane tree, DPP across the wave,
4 bytes per wave through LDS across waves), and what it returns is stored from the same registers, so HBM sees
every input once. plan() picks the lanes per row and vectors per lane so that a row of up to 32768 elements fits in
registers at 32 fp32 values per lane per load; longer rows take a looped path with one workgroup per row and the
reductions in passes (lowered.PASSES), and when they are too few to fill the GPU, a split-row path that spreads each
row over several workgroups, which meet through fp32 partials in global memory between kernels (split()). Edges (N
not a multiple of the vector, M not a multiple of the rows per workgroup) are explicit branches around each access,
never padding. One launcher body per path kind (_launch, _split_launch, each behind launchers of 2, 3 and 8 tensor
slots: flydsl_lowered.LAUNCH_SLOTS), one run().

What it computes
    x is [M, N] (last dim contiguous, row stride ld >= N, e.g. ``base[:, :N]`` of a wider tensor): the first "row"
    input of lowered.INPUTS. The other inputs are rows like x (each with its own row stride), [N] vectors (rmsnorm's
    weight), rows broadcast over x's rows, scalars and bool masks (lowered.KINDS). Outputs are rows [M, N] (softmax,
    rmsnorm) or one value per row, [M] or [M, 1] (sum, mean, max), in lowered.OUT_DTYPES. Loads are
    bf16/fp16/fp32, all math and accumulation is fp32, every output is rounded once by its store. NaN and -inf
    follow torch on both paths: a row holding a NaN gets max NaN and an all-NaN softmax row; an all -inf row gives
    max -inf and a NaN softmax row (-inf - -inf); some -inf entries softmax to 0.

Why this shape (roofline, peaks from reference/gpu_specs.json)
    A row reduction does 1-5 FLOP per element moved; the ridge point is ~247 FLOP/byte on gfx942 (MI300X:
    1307 dense bf16 TFLOP/s / 5.3 TB/s) and ~315 on gfx950 (MI355X: 2517 / 8.0), so this is a bandwidth
    kernel: read x once, write the output once, in 128-bit coalesced accesses with enough bytes in flight.
    softmax and rmsnorm need the row twice (reduce, then normalise), so the row stays in VGPRs between the
    two steps and HBM is read once. Floor at 32768 x 8192 bf16 (512 MiB in): 512 MiB / 5.3 TB/s = ~101 us
    for sum, ~203 us for softmax/rmsnorm (1 GiB moved).

CDNA facts it rests on (contrast: the CuTe DSL cell for Hopper)
    - Waves are 64 lanes (a CUDA warp is 32). The in-wave step is DPP, not shuffles: fx.coop.warp_reduce
      lowers a full wave to v_*_dpp row_shr:1,2,4,8 + row_bcast:15 + row_bcast:31 and one v_readlane_b32
      of lane 63 (the total lands in an SGPR, uniform by construction); a 2-32 lane group to an XOR
      butterfly of DPP quad_perm / row_half_mirror / row_ror:8 moves plus one ds_swizzle_b32 (SWAP 16, a
      lane crossbar move that touches no LDS memory). No ds_bpermute is needed. A row spanning W > 1 waves
      meets once in LDS.
    - Grid: one workgroup per 256 / TPR rows; at 32768 x 8192 that is 32768 workgroups of 4 waves, about a
      hundred per CU (op.json's compute_units), so the tail wave is negligible.
    - LDS: 4 B per wave per reduce() call, 16-128 B per workgroup for one call, so LDS never limits occupancy.
    - Registers: 512 VGPRs per SIMD lane (arch VGPRs + AGPRs, at most 256 arch VGPRs per wave, allocated in
      granules of 8), at most 8 waves per SIMD: waves/SIMD = min(8, 512 / VGPRs), so <= 64 VGPRs keeps all 8.
      A 1024-lane workgroup puts 4 waves on every SIMD, so it cannot launch at all above 128 VGPRs. The
      register path keeps VALUES_PER_LANE = 32 fp32 row values per lane for one load (32 VGPRs for the row):
      1024 lanes x 32 = 32768 elements per row in registers, with room left for the reduction and the
      addresses. 64 per lane would hold 65536-element rows but roughly double the registers (4-5 waves per
      SIMD) for every N. Two loads (rmsnorm's x and weight) keep 32 values each, more loads share 64 (see "What
      compute() gets"); every load is issued before compute(), so all of them are live through its reduce().
    - ALU: gfx942 has no f32 -> bf16 convert (a multi-instruction round-to-nearest-even with a NaN check per
      value), gfx950 has v_cvt_pk_bf16_f32; v_pk_mul_f32 / v_pk_add_f32 do two fp32 per instruction. softmax
      (exp, scale, convert per element) is the op nearest to turning ALU-bound, most of all bf16 on gfx942.
    - No MFMA: there is no matrix product here.
    - Memory: buffer loads. A buffer access goes through a 128-bit resource descriptor (base, num_records =
      size in bytes, format flags) in 4 SGPRs plus a 32-bit per-lane byte offset; one 16-byte vector per
      lane is one buffer_load_dwordx4 (8 bf16/fp16 or 4 fp32), a wave moves 1 KiB per instruction. The
      hardware returns 0 for a load past num_records and drops such a store (checked per dword). Here every
      access is also predicated explicitly (see Boundaries), so correctness does not rest on that check.
    - NaN-propagating max: fx.max is arith.maximumf. gfx950 has v_maximum3_f32 (IEEE maximum of three),
      gfx942 only v_max_f32 / v_max3_f32, which return the number when the other operand is NaN (LLVM
      expands one maximumf there into v_max + v_cmp_o + v_cndmask). So on gfx942 the in-lane max is a
      v_max3_f32 tree plus one "any NaN" flag (v_cmp_u_f32 per pair, OR-ed in SGPRs, one v_cndmask at the
      end); the cross-lane steps use fx.max. Pitfall avoided: FlyDSL's Vector.reduce(MAX) is MAXNUMF, which
      drops NaN, and fx.coop.warp_reduce folds a Vector with it, so only fp32 scalars go in.

The reduction hierarchy: reduce(kind, v) (one row is owned by TPR lanes; vector k of lane t is the row's vector
k*TPR + t)
    1. lane:      chunks x vec values, fp32 tree (sum) or NaN-propagating max, no communication; each chunk
                  (vector) is folded first, then a chunk that was not loaded (past the row end) becomes the
                  identity of the kind (0 for sum, -inf for max; min is folded as max of -v and negated at the
                  end): one select per chunk, not per value. The mask is what makes such a chunk harmless: its
                  registers are not zero-filled before the predicated loads, and compute() may have made
                  anything of them. Only the register path's rows that are not `full` and the looped path's
                  partial last slice have masks.
    2. wave:      DPP over min(TPR, 64) lanes as above; every lane of the group ends with the result.
    3. workgroup: TPR = 64*W > 64: lane 0 of each wave writes LDS[slot][wave], one s_barrier, every lane
                  reads its row's W totals (an LDS broadcast, ds_read_b128) and folds them in one fixed
                  order, so all lanes agree bit for bit. Call q of compute() uses slot q (softmax: the max
                  slot 0, the sum slot 1): no slot is reused, so one barrier per call suffices.

Thread/value layout (register path)
    x viewed as 1-D vectors of vec elements: row r, vector j  ->  vector index r * (ld / vec) + j

        k = 0:  | t0: v0..v7 | t1: v0..v7 | ... | t(TPR-1) |     one buffer_load_dwordx4 per lane,
        k = 1:  | t0: v0..v7 | t1: v0..v7 | ... | t(TPR-1) |     a wave reads 1 KiB contiguous

    NV = N / vec vectors per row; KMAX = values per lane / vec vectors per lane (32 / vec for one or two loads).
    Rows of <= 64 * KMAX vectors use the smallest power-of-two TPR (1..64) with ceil(NV / TPR) <= KMAX and pack
    256 / TPR rows in a 256-lane workgroup (4 waves, one per SIMD). Longer rows use W = 2..16 whole waves per row
    (any W: the LDS step needs no power of two), the W wasting the fewest vector slots, then the fewest waves;
    256 / TPR rows per workgroup when that divides. Examples, bf16 softmax (vec 8, KMAX 4):
        N = 7 (vec 1)      TPR 1,    7 chunks, 256 rows/WG  -- one lane per row, scalar buffer_load_ushort
        N = 1000           TPR 32,   4 chunks, 8 rows/WG    -- half a wave per row: DPP + ds_swizzle
        N = 4096           TPR 128,  4 chunks, 2 rows/WG    -- 2 waves per row: DPP + LDS
        N = 5120           TPR 320,  2 chunks, 1 row/WG     -- 5 waves, no idle slot (640 vectors)
        N = 8192           TPR 256,  4 chunks, 1 row/WG     -- 32768 workgroups at 32768 x 8192
        N = 32768          TPR 1024, 4 chunks, 1 row/WG     -- the largest register-resident row
    fp32 has vec 4, KMAX 8, the same TPR per N. A Constexpr `full` (chunks * TPR == NV) drops the per-vector
    predicates, so the loads issue back to back (32768 x 8192: 4 unpredicated dwordx4 loads per lane).

Data movement
    HBM -> VGPRs (buffer_load_dwordx4, all of a lane's vectors of every load issued before the first use) ->
    compute() in fp32 VGPRs, its reduce() calls DPP, then 4 B per wave through LDS -> VGPRs -> HBM
    (buffer_store_dwordx4 for a row output such as softmax's and rmsnorm's; one 16/32-bit buffer store per row
    for a reduced one such as sum's). Data is never staged in LDS: no lane reuses another's data, only the
    partials meet. Bytes in flight at 32768 x 8192 bf16 (Little's law): 256 lanes x 64 B = 16 KiB per workgroup,
    8 workgroups per CU at 8 waves per SIMD = 128 KiB per CU, above the bandwidth x latency / CUs that DRAM
    latency needs: 5.3 TB/s x ~1 us / 304 CUs = ~17 KiB (gfx942) to 8 TB/s x ~1 us / 256 CUs = ~31 KiB
    (gfx950), ~1 us an assumed latency.

Large N (past the register path: > 32768 elements for one or two loads): the looped path
    One 512-lane workgroup (8 waves) per row, a runtime loop over the row 512 x LOOP_CHUNKS vectors at a time
    (4 vectors per lane per iteration for one load, 32 KiB bf16; the loads share the 4: rmsnorm's x and weight 2
    each), in passes that lowered.PASSES schedules (tools/lower/ir.py's schedule() in the template). Pass p runs
    compute() on every slice with a reduce() (_PassReduce) that folds the lane partial of each call q with
    PASSES[q] == p into acc[q], a register tensor of one fp32 per reduction that the loop carries (through memory,
    which LLVM keeps in VGPRs). The slices whose vectors all lie in the row (nv // (512 x LOOP_CHUNKS) of them)
    load and store unpredicated and mask nothing; only the partial last slice, if any, is predicated and masked
    (the CuTe DSL cell's split: masking every slice made its long-row max 2.5x slower on the H200). A call of an
    earlier pass returns its row result, a call of a later pass a dummy
    (nothing pass p folds depends on it, and LLVM drops what does). After the loop each of the pass's lane
    partials goes through DPP and its own LDS slot. A reduction that needs earlier results runs one pass after
    the last of them, independent ones share a pass, and an online pair shares one: lowered.ONLINE[q] = m when
    call q is sum(exp(a - m)) with m = max(a) of the same a (softmax's, a log-softmax's or logsumexp's). Then
    each lane keeps a running max m_t and a running sum s_t (shift(v) = 0 if v == -inf else v):
        max call m:  m_t = max(m_t, slice max) (NaN-propagating); it returns shift(m_t), so compute()'s
                     exp(a - m) is relative to the lane's running max, and a masked -inf prefix gives
                     exp(-inf - 0) = 0, not exp(-inf - -inf) = NaN;
        sum call q:  s_t = s_t * exp(m_old - shift(m_t)) + the slice's terms (m_old unshifted: a lane that saw
                     only -inf has s_t = 0 and a factor exp(-inf) = 0, never 0 * inf);
        row:         M = row max of m_t, S = row sum of s_t * exp(m_t - shift(M)) (a lane that saw only -inf
                     adds 0 however small M is; a NaN anywhere makes M and S NaN; an all -inf row gives S = 0,
                     so softmax's exp(-inf - -inf) is NaN as torch's, and a logsumexp's M + log(0) is -inf).
    A last pass re-reads the row with every result known and stores the row outputs (a reduced output once, at
    the first slice); with no row output, compute() runs once on zeros instead (a reduced output is a function
    of the row results). So softmax reads a long row twice (its max and sum online, then the outputs), rmsnorm
    twice, sum / mean / max once; a lowered.py without PASSES / ONLINE (baked before they existed) takes one pass
    per reduce() call. A re-read row was just read (256 KiB bf16 at N = 131072), so it should come from the 4 MB L2
    of the XCD or the 256 MB Infinity Cache. Correct for any N, but alone it would leave CUs idle for small M
    (8 x 131072 on 8 workgroups of op.json's 304 CUs): that is the split-row path's case.

Few long rows: the split-row path (split())
    The looped path gives a row one workgroup, so M rows keep at most M CUs busy. When M workgroups would leave most
    of op.json's compute_units idle (2 * M < CUs) and a row has at least 2 whole loop iterations (nv // (512 x
    LOOP_CHUNKS) of them, the looped path's unpredicated slices), each row is split across G workgroups:
        G = min(ceil(CUs / M), whole iterations, 512), then per = ceil(whole / G) iterations per workgroup and
        G = ceil(whole / per), so that every workgroup has at least one whole iteration (none is left empty),
    about one workgroup per CU in all (8 x 131072 bf16: 8 whole iterations per row, G = 8, 64 workgroups; fp32
    rmsnorm, two loads of 2 chunks, 32 whole iterations: G = 32). Otherwise (more rows, shorter rows) the register
    and looped paths run exactly as above. CDNA has no thread-block clusters (the CuTe DSL cell shares a row's
    results between the CTAs of a cluster through DSMEM), so the workgroups of a row meet in global memory, and
    kernel boundaries on the stream order them:
        kernel A, once per reduction pass p (lowered.PASSES): workgroup g of row r (grid [G, M]) runs pass p on
            its iterations [g*per, min((g+1)*per, whole)) (the last workgroup also the partial last slice), the
            looped path's _slice and _PassReduce unchanged, then folds its lanes (DPP, LDS: _row_results) into
            one fp32 partial per reduction of the pass and writes it to partials[r, g, q] (lane 0; a min as the
            max of -v it folds). The results of earlier passes come first from combining their partials, as in B.
        kernel B, the last pass: the same combine of every reduction, then the workgroup re-reads its slice
            (read moments ago by kernel A's workgroup of the same index: expected L2 / Infinity Cache hits), runs
            compute() with every result known and stores its slice of the row outputs; a reduced output is
            stored once, by workgroup 0 (with no row output, B is one workgroup per row that only stores the
            reduced outputs).
    The combine: lane t < G of every workgroup of the row loads partial t (the others the identity: 0, -inf),
    then the partials go through the workgroup's own reduction (_row_results: DPP, LDS, one fixed order), so every
    workgroup of the row gets the same row values bit for bit (one load per lane, not a loop over the G partials
    in each lane: G dependent steps, each waiting on memory). A plain sum adds them, a max is the NaN-propagating
    max (fx.max), a min the max of the -v partials negated; an online pair (m_g, s_g), each workgroup's running
    max and its sum relative to shift(m_g), combines as
        M = max_g m_g,   S = sum_g s_g * exp(m_g - shift(M))     (shift(v) = 0 if v == -inf else v)
    the looped path's lane combine one level up: a workgroup whose slice was all -inf has m_g = -inf and s_g = 0
    and adds 0 * exp(-inf - shift(M)) = 0; a NaN anywhere makes M (and S) NaN; an all -inf row gives M = -inf,
    S = 0. The partials buffer is fp32 [M, G, len(REDUCTIONS)], made by run() (torch.empty on x's device, kept
    per (M, G) and stream, so two streams never share one), passed to every kernel: x is read passes() times as
    on the looped path, plus M * G * len(REDUCTIONS) fp32 partials, each written once and read by the G
    workgroups of its row.

Boundaries
    - vec is 128 bits of the widest element among the row, broadcast and vector inputs and the row outputs,
      narrowed until it divides N, every row stride (a broadcast view's three too) and every address (a mask's:
      vec bytes) (flydsl_lowered.pick_vec; once per run() signature, which holds N, the strides and the
      pointers' low 4 bits): N = 1000 bf16 keeps 8, N = 7 or a stride of 1003 fall back to vec 1
      (buffer_load_ushort / _dword, still coalesced across lanes); stride 4160 keeps 8.
    - Vectors past the row end (j >= NV, only when not `full`) and rows past M (the last workgroup when M is
      not a multiple of its rows) are skipped by branches around each load and store (exec-masked on AMD); the
      register tensors are not zero-filled first (a fill before the predicated loads cost the CuTe DSL cell 0.76x
      at rmsnorm N = 5120 on the H200): reduce() replaces a skipped vector's partial by the identity (one select
      per chunk), and the stores skip it.
    - Every byte offset is < 2^31 (run() refuses a tensor or a row span of >= 2 GiB), and the descriptors'
      num_records are the real tensor sizes, a second guard that no access can leave them.
    - The barrier and the DPP steps sit outside every divergent branch: all lanes of the workgroup reach
      them (rows past M compute on whatever their registers hold, within their own lanes, and are never stored).

What compute() gets (lowered.py)
    lowered.py declares INPUTS in the function's parameter order with KINDS ("row" [M, N], each with its own row
    stride; "broadcast": rows paired with x's through a [L0, L1, L2, N] view, stride 0 over the dims it is broadcast
    over, as RoPE's cos [S, D] against q [B, S, H, D]; "vector" [N]; "scalar": one element, a runtime scalar;
    "per_row": one value per row [M], read at the lane's row; "broadcast_per_row": one value per row over some of
    x's dims, through an [L0, L1, L2] view, as a per-sample [B] over NCHW rows), DTYPES ("float": x's dtype; "bool":
    a mask), WIDTHS (an input's last dim in units of N: 1, or r for a wide row, broadcast or vector input the
    function reads in r parts, as a gated MLP's x.chunk(2, -1) or RoPE's halves), ARGS (compute()'s value arguments
    in order: an input "whole", or "part" j / "lane" j of a wide one), OUTPUTS ("row" [M, N], "reduced" [M],
    "reduced_keepdim" [M, 1]) with OUT_WIDTHS and OUT_HOW (a row output [M, r*N] made of r pieces: "part"s side by
    side, piece j at column j*N, or interleaved "lane"s, piece j at columns j, j + r, ...), HEADS (None, or c: x [T, H*c] is rows of c, host-side), REDUCTIONS (sum, max, min:
    the kind of each reduce() call), PASSES and ONLINE (the looped path's schedule, above) and compute(*values, n,
    reduce), straight-line fp32 math that returns a flat tuple: OUT_WIDTHS[o] results per output, its pieces in
    order. x, whose rows the plan takes, is the first "row" input (host.lowered_x), not necessarily the first
    input; N is its last dim over its width. compute() runs between the loads and the stores:

        loads:      every row and vector input's chunks, as above (a vector input's chunk k of lane t is its
                    vector j = k*TPR + t, the columns of the row's chunk beside it); a bool mask is launched as
                    its bytes (uint8, host.lowered_viewer) and loaded the same way, vec bytes per access
                    (buffer_load_dwordx2 beside a bf16 x's dwordx4), then passed as 0.0 / 1.0 (compute() compares
                    it itself); a scalar input is one element loaded once per lane (before the looped path's
                    passes) and passed as an fp32 scalar, never a row. A wide input is read through its ARGS
                    (flydsl_lowered.plan_loads): each "part" j is a load of its own, the same row stride from
                    column j*N (vector j*NV of the row), vec elements per chunk like any row; its "lane"s share
                    one load of r*vec contiguous elements per chunk (vectors r*v .. r*v + r-1 for the chunk's
                    vector v: r dwordx4 loads) and lane j is the fp32 values j, j + r, ... of it (a register
                    shuffle, no move), so every byte of x is read once with 128-bit loads either way. A broadcast
                    input is loaded like a row from the start of the row its view pairs with x's row r:
                    (r % L2)*s2 + (r / L2 % L1)*s1 + r / (L2*L1)*s0, the sizes and strides the view's runtime
                    layout (FlyDSL passes a tensor's dynamic sizes and strides with it), two integer divisions
                    once per row (before the looped path's passes); its buffer descriptor spans the view's cosize
                    (_storage_vectors). A wide vector [r*N] is read in parts or lanes like a wide row. The
                    register budget is 2 * VALUES_PER_LANE values divided among the loads by their registers (a
                    row or vector input 1, a part 1, a lanes load r; a scalar takes no share), at most
                    VALUES_PER_LANE each (3 at bf16: 21 values, two chunks per lane: more lanes per row), so every
                    load's row stays in VGPRs through every reduce() and HBM is read once
        reduce():   the hierarchy above, per call
        stores:     row outputs, a wide one [M, r*N] per piece (host.lowered_stores): each "part" j from its own
                    register tensor to column j*N, its "lane"s interleaved in ONE register tensor of r*vec elements
                    per chunk (piece j at j, j + r, ...: register moves) and stored with r 128-bit stores per
                    chunk, the loads' lanes the other way; reduced outputs one scalar per row from lane 0
                    (compute()'s result at the output's first index), each in its OUT_DTYPES: x's dtype, fp32, or a
                    quantizer's int8 / fp8 e4m3fn (the function's final .to(), converted once here: int8 truncates
                    toward zero, v_cvt_i32_f32; fp8 rounds to nearest even through v_cvt_pk_fp8_f32, OCP bytes on
                    gfx942 too: flydsl_lowered.e4m3fn_bytes); an int8 / fp8 row beside a bf16 x is vec bytes per
                    access (buffer_store_dwordx2)
    run(*inputs, out=None) returns a tensor for one output, a tuple for several. Rows of rank 3 or more ([B, S, H,
    D]: rows of the last dim) launch as they are when they and their kin are contiguous (_packed: the 1-D views of
    their storage are the [M, N] rows). Other layouts, heads (HEADS c: x [T, H*c] as T*H rows of c, one reduction
    per head) and broadcast inputs arrive as 2-D rows: host.rows_nd views the row inputs and outputs as [M, N] (a
    broadcast input as host.broadcast_rows' [L0, L1, L2, N] view, no copy) and reshapes the outputs back;
    compile_only and describe take a case [M, N] of a HEADS program as M*N/c rows of c, and of a program with a
    wide row output as rows of N / r (host.lowered_lengths).

Verification: compiled to gfx942/gfx950 ISA on a CPU; it has not run on AMD hardware. The plan, the index math and
the fold order of the built-in programs' lowered.py (NaN, -inf, masked prefixes, the looped path's passes and online
pairs, the split-row path's partials and their combine) are re-traced per lane in numpy against torch in float64 by
benchmarks/models/reduction_flydsl.py in the
template repository: that checks the algorithm, not the compiler or the hardware. Host side: argument checks from
host.py, op.json, the targets and compile-only from flydsl_runtime.py, the glue to lowered.py from
flydsl_lowered.py.

Interface (the same in every kbaseline cell):
    run(*inputs, out=None)      -> out        lowered.INPUTS order (softmax: run(x); rmsnorm: run(x, weight)), ROCm
                                              torch tensors; one tensor, or a tuple for several outputs; compiles
                                              once per variant and prepares a launch once per argument signature
                                              (N, row strides, alignment)
    compile_only(case, out_dir) -> ISA text   compile the variant run() picks for the case (contiguous rows
                                              unless the case has a row_stride) for op.json's target, with no
                                              GPU, in a child process (flydsl_runtime.py, tools/rocm_env.py);
                                              writes kernel_<op>_<dtype>_n<N>_<rows|looped|split>[_vec<k>].<gfx>.s
                                              (<op>: op.json's, "lowered" for a user's function)
    describe(case)              -> dict        lanes per row, chunks, passes, grid, LDS and data movement
"""

from __future__ import annotations

import math
import os
from types import SimpleNamespace

import flydsl.compiler as flyc
import flydsl.expr as fx
import flydsl_lowered as lw
import flydsl_runtime as rt
import host
from flydsl.compiler.backends import current_target
from flydsl.expr import const_expr, range_constexpr
from flydsl_lowered import regs as _regs
from flydsl_lowered import vectors as _vectors
from flydsl_runtime import DTYPE_BYTES, MAX_BYTES, WAVE

OP_SPEC = host.OP
OP = OP_SPEC["op"]  # the ISA file's name: the built-in op's, or "lowered" for a user's function

VALUES_PER_LANE = 32  # fp32 row values a lane keeps in VGPRs per load on the register path (two loads: 32 each)
MAX_WAVES_PER_ROW = 16  # 1024 lanes, the largest workgroup -> rows up to 16 * 64 * 32 = 32768 elements
MIN_WG_LANES = 256  # 4 waves, one per SIMD of a CU
LOOP_LANES = 512  # looped (long-row) path: one 8-wave workgroup per row
LOOP_CHUNKS = 4  # vectors per lane per loop iteration, all loads together
LOG2_E = math.log2(math.e)

_BYTES = DTYPE_BYTES  # op.json dtype -> bytes per element


# ------------------------------------------------------------------------------------------------
# Launch plan (host side, plain Python)
# ------------------------------------------------------------------------------------------------

def plan(n: int, vec: int, values_per_lane: int = VALUES_PER_LANE, loop_chunks: int = LOOP_CHUNKS) -> dict:
    """Lanes per row (tpr), vectors per lane (chunks) and workgroup shape for a row of n elements, vec at a time.

    values_per_lane / loop_chunks: one load's budget per lane (budget(): the loads share it)."""
    nv = n // vec  # vec divides n (flydsl_lowered.pick_vec)
    kmax = max(1, values_per_lane // vec)
    if nv <= WAVE * kmax:
        # A wave or less per row: the smallest power-of-two lane group, several rows per workgroup.
        tpr = 1
        while -(-nv // tpr) > kmax:
            tpr *= 2
    elif nv <= MAX_WAVES_PER_ROW * WAVE * kmax:
        # Several waves per row: the wave count wasting the fewest vector slots, then the fewest waves.
        lo = -(-nv // (WAVE * kmax))
        waves = min(range(lo, MAX_WAVES_PER_ROW + 1), key=lambda w: (w * WAVE * -(-nv // (w * WAVE)) - nv, w))
        tpr = waves * WAVE
    else:
        return {"looped": True, "tpr": LOOP_LANES, "chunks": loop_chunks, "threads": LOOP_LANES, "rows": 1,
                "full": False, "nv": nv, "iters": -(-nv // (LOOP_LANES * loop_chunks))}
    chunks = -(-nv // tpr)
    rows = MIN_WG_LANES // tpr if MIN_WG_LANES % tpr == 0 else 1
    return {"looped": False, "tpr": tpr, "chunks": chunks, "threads": rows * tpr, "rows": rows,
            "full": chunks * tpr == nv, "nv": nv, "iters": 1}


def budget(loads: int) -> tuple[int, int]:
    """(values per lane, loop chunks) of each of `loads` loads (their registers, _loads): the register path's
    2 * VALUES_PER_LANE values shared among them, at most VALUES_PER_LANE each (one or two loads: 32, three: 21;
    more lanes per row, no spills), and the looped path's LOOP_CHUNKS vectors per lane shared likewise. The CuTe DSL
    cell's rule, whose H200 measurement is in benchmarks/2026-12-01-h200-lowered.md."""
    return max(1, min(VALUES_PER_LANE, 2 * VALUES_PER_LANE // loads)), max(1, LOOP_CHUNKS // loads)


def _loads() -> int:
    """The row values a lane holds per chunk vector of x, in vectors: one per load (a row or vector input, a part of
    a wide input), r for a wide input's lanes (r*vec elements); a scalar input is one register, not a row's."""
    return max(1, sum(lw.facts().load_widths))


def _plan(n: int, vec: int) -> dict:
    """plan() for this workspace's program, with its LDS: one fp32 per wave per reduce() call (none within a wave)."""
    cfg = plan(n, vec, *budget(_loads()))
    cfg["lds_floats"] = len(lw.facts().reductions) * (cfg["threads"] // WAVE) if cfg["tpr"] > WAVE else 0
    return cfg


def split(m: int, cfg: dict, cus: int | None = rt.COMPUTE_UNITS) -> tuple[int, int]:
    """(G, per) of the split-row path for M rows of plan `cfg`: workgroups per row and whole loop iterations per
    workgroup; (1, 0) when the row is not split (see "Few long rows" above).

    The rule: only a looped row (past the register path), only when its M workgroups would leave most of the `cus`
    compute units idle (2 * M < CUs: op.json's compute_units, the count describe() and compile_only plan with too),
    and only as far as every workgroup keeps at least one whole loop iteration (512 x chunks vectors, unpredicated):
    G = min(ceil(CUs / M), whole iterations, 512 lanes: the combine's one partial per lane), per = ceil(whole / G),
    then G = ceil(whole / per) so that none is left empty; no split unless G >= 2."""
    if not cfg["looped"] or not cus or 2 * m >= cus:
        return 1, 0
    whole = cfg["nv"] // (cfg["threads"] * cfg["chunks"])
    groups = min(-(-cus // m), whole, LOOP_LANES)
    if groups < 2:
        return 1, 0
    per = -(-whole // groups)
    return -(-whole // per), per


def reduction_passes() -> int:
    """Passes of the looped path that fold reductions (lowered.PASSES: independent ones share one)."""
    return max(lw.facts().passes) + 1 if lw.facts().passes else 0


def passes() -> int:
    """Passes of the looped path over a row: the reductions', plus one that stores the row outputs."""
    return reduction_passes() + ("row" in lw.facts().outputs)


# ------------------------------------------------------------------------------------------------
# Device side
# ------------------------------------------------------------------------------------------------

def _tree(vals: list, fn):
    """Pairwise fold of a Python list of traced scalars: depth log2(n), no serial dependency chain."""
    while len(vals) > 1:
        nxt = [fn(vals[i], vals[i + 1]) for i in range(0, len(vals) - 1, 2)]
        if len(vals) % 2:
            nxt.append(vals[-1])
        vals = nxt
    return vals[0]


def _lane_sum(vals: list):
    return _tree(vals, lambda a, b: a + b)


def _lane_max(vals: list):
    """NaN-propagating max of fp32 scalars (torch.amax semantics); see "NaN-propagating max" above."""
    if current_target().arch.startswith("gfx95"):
        return _tree(vals, fx.max)  # arith.maximumf -> v_maximum3_f32
    m = _tree(vals, fx.maxnumf)  # v_max3_f32: drops NaN ...
    nan = _tree([v != v for v in vals], lambda a, b: a | b)  # ... so flag it: v_cmp_u_f32 pairs, s_or_b64
    return nan.select(fx.Float32(math.nan), m)


def _combine(kind: str, a, b):
    return fx.max(a, b) if kind == "max" else a + b  # fx.max = arith.maximumf: NaN-propagating


@flyc.jit
def _row_reduce(val, kind: str, tpr: int, threads: int, lds, slot: int, tid):
    """Lane partial -> row result in every lane of the row: DPP within the wave, then LDS across waves."""
    if const_expr(tpr > 1):
        op = fx.ReductionOp.MAX if const_expr(kind == "max") else fx.ReductionOp.ADD
        val = fx.coop.warp_reduce(val, op, width=min(tpr, WAVE))  # DPP (+ ds_swizzle for 32-lane groups)
    if const_expr(tpr > WAVE):
        waves = tpr // WAVE
        slot_base = slot * (threads // WAVE)  # one fp32 per wave of the workgroup per slot
        if tid % WAVE == 0:
            lds[slot_base + tid // WAVE] = val
        fx.barrier()
        first = slot_base + (tid // tpr) * waves  # the row's waves are consecutive
        acc = lds[first]
        for w in range_constexpr(1, waves):
            acc = _combine(kind, acc, lds[first + w])
        val = acc
    return val


@flyc.jit
def _move(atom, gmem, regs, base, j0, lanes: int, chunks: int, t, nv, full: bool, load: bool):
    """This lane's vectors k = 0..chunks-1 <-> row vectors j = j0 + k*lanes + t at gmem vector base + j.

    One buffer access of vec elements each; vectors with j >= nv are skipped (a branch, exec-masked),
    unless `full` (a Constexpr) says none can be.
    """
    for k in range_constexpr(chunks):
        j = j0 + k * lanes + t
        if const_expr(full):
            if const_expr(load):
                fx.copy(atom, gmem[None, base + j], regs[None, k])
            else:
                fx.copy(atom, regs[None, k], gmem[None, base + j])
        else:
            if j < nv:
                if const_expr(load):
                    fx.copy(atom, gmem[None, base + j], regs[None, k])
                else:
                    fx.copy(atom, regs[None, k], gmem[None, base + j])


@flyc.jit
def _store_scalar(Out, index, val, dtype):
    """out[index] = val in dtype, one 16/32-bit buffer store."""
    r = fx.make_rmem_tensor(1, dtype)
    r[0] = val.to(dtype)
    fx.copy(fx.make_copy_atom(fx.rocdl.BufferCopy(dtype.width), dtype), r, _vectors(Out, 1)[None, index])


def _lane_partial(kind: str, v, masks, vec: int):
    """One lane's part of reduce(kind, v): its values folded, a chunk that was not loaded (masks[k] false) counting
    as the identity.

    One select per chunk (128-bit vector), not per value: each chunk is folded first (the pairwise tree over a
    power-of-two vec, so the fold order is the one a per-value tree over all the values has), then a masked chunk's
    partial becomes the identity (on gfx942's max, also its NaN flag is dropped). The mask is what makes a vector
    that was not loaded harmless: the register tensors are not zero-filled before the predicated loads (_inputs), so
    such a chunk holds whatever the registers held, and compute() may have made anything of it. The CuTe DSL cell's
    _thread_partial; per-value selects and the fill cost it on the H200 (its _chunk_mask).

    min is folded as max of -v (negation is exact and keeps NaN; it becomes a source modifier of v_max3), so
    min and max share _lane_max's NaN handling and _row_reduce's max path; the caller negates the row result."""
    u = -v if kind == "min" else v
    chunks = [[u[k * vec + e] for e in range(vec)] for k in range(len(masks))]
    if all(ok is None for ok in masks):
        vals = [x for c in chunks for x in c]
        return _lane_sum(vals) if kind == "sum" else _lane_max(vals)
    if kind == "sum":
        parts = [_lane_sum(c) if ok is None else ok.select(_lane_sum(c), fx.Float32(0.0))
                 for c, ok in zip(chunks, masks)]
        return _lane_sum(parts)
    if current_target().arch.startswith("gfx95"):
        parts = [_tree(c, fx.max) for c in chunks]  # arith.maximumf -> v_maximum3_f32
        return _tree([p if ok is None else ok.select(p, fx.Float32(-math.inf)) for p, ok in zip(parts, masks)],
                     fx.max)
    # gfx942: v_max3_f32 per chunk (drops NaN) and a NaN flag per chunk (v_cmp_u_f32, s_or_b64), both masked
    parts = [_tree(c, fx.maxnumf) for c in chunks]
    nans = [_tree([x != x for x in c], lambda a, b: a | b) for c in chunks]
    m = _tree([p if ok is None else ok.select(p, fx.Float32(-math.inf)) for p, ok in zip(parts, masks)], fx.maxnumf)
    nan = _tree([n if ok is None else n & ok for n, ok in zip(nans, masks)], lambda a, b: a | b)
    return nan.select(fx.Float32(math.nan), m)


def _as_vector(v, like):
    """reduce()'s argument as a vector of the values' shape (a scalar of compute() broadcast to the values)."""
    if isinstance(v, fx.Vector):
        return v
    return fx.Vector.filled(like.shape, fx.Float32(v) if isinstance(v, (int, float)) else v, fx.Float32)


def _shift(m):
    """An online max as the exponent's shift: m, or 0 while m is -inf (a masked -inf prefix: exp(-inf - 0) = 0,
    where exp(-inf - -inf) would be NaN)."""
    return (m == -math.inf).select(fx.Float32(0.0), m)


def _exp(v):
    with fx.fastmath("afn"):  # v_exp_f32 (~1 ulp), as pw.exp
        return fx.math.exp2(v * LOG2_E)


class _RowReduce:
    """The register path's reduce(kind, v) that compute() calls: every call is the row's result (lane partial, DPP,
    one LDS step in slot c for call c), negated back for min."""

    def __init__(self, masks, vec, like, reduce_row):
        self.masks, self.vec, self.like, self.reduce_row, self.calls = masks, vec, like, reduce_row, 0

    def __call__(self, kind: str, v):
        if kind == "rebase":  # every call is the row's result: the pair is in the row max's frame already
            return v
        c, self.calls = self.calls, self.calls + 1
        val = self.reduce_row(_lane_partial(kind, _as_vector(v, self.like), self.masks, self.vec), kind, c)
        return -val if kind == "min" else val


class _PassReduce:
    """The looped path's reduce(kind, v) in pass p (lowered.PASSES; p = reduction_passes(): the last pass, which
    knows every result). Call q of an earlier pass returns its row result (`known`); of a later pass a dummy, acc[q]
    (a runtime value whose uses LLVM drops; a constant would fold at trace time, where 1 / 0 or log(0) of it
    raises); of pass p it folds its masked lane partial of this slice into acc[q], the lane accumulator the slice
    loop carries, and returns acc[q] (a dummy too), except:
    - an online max (a value of lowered.ONLINE) returns the lane's running max, shifted (_shift), so that compute()'s
      exp(a - m) of its sum is relative to it; it keeps (old max, new shift) for that sum;
    - an online sum rescales its running sum by exp(old max - new shift) before adding the slice's terms."""

    def __init__(self, masks, vec, like, acc, known: dict, p: int):
        self.masks, self.vec, self.like, self.acc, self.known, self.p = masks, vec, like, acc, known, p
        self.calls, self.moved = 0, {}

    def __call__(self, kind: str, v):
        if kind == "rebase":  # pass p's values of the running max are discarded; the last pass knows M
            return v
        f = lw.facts()
        q, self.calls = self.calls, self.calls + 1
        if f.passes[q] < self.p:
            return self.known[q]
        if f.passes[q] > self.p:
            return self.acc[q]
        part = _lane_partial(kind, _as_vector(v, self.like), self.masks, self.vec)
        if q in f.online:  # an online max (its kind is "max")
            old = self.acc[q]
            new = fx.max(old, part)
            self.acc[q] = new
            self.moved[q] = (old, _shift(new))
            return self.moved[q][1]
        if f.online[q] is not None:
            old, shift = self.moved[f.online[q]]
            self.acc[q] = self.acc[q] * _exp(old - shift) + part
        else:
            self.acc[q] = self.acc[q] + part if kind == "sum" else fx.max(self.acc[q], part)  # min: max of -v
        return self.acc[q]


def _row_results(p: int, acc, known: dict, threads: int, lds, tid) -> None:
    """known[q] for the reductions of pass p: each lane partial through DPP and LDS slot q; an online sum's s_t first
    rescaled to the row's max M = known[m] as s_t * exp(m_t - shift(M)) (m_t unshifted: a lane that saw only -inf
    adds 0, and an all -inf row sums to 0)."""
    f = lw.facts()
    for q, kind in enumerate(f.reductions):
        if f.passes[q] == p:
            part = acc[q]
            m = f.online[q]
            if m is not None:
                part = part * _exp(acc[m] - _shift(known[m]))
            val = _row_reduce(part, "sum" if kind == "sum" else "max", threads, threads, lds, q, tid)
            known[q] = -val if kind == "min" else val


def _scalars(tensors, row) -> dict:
    """Every single value as an fp32 scalar (by input index), loaded once per lane (lw.scalar): a scalar input's one
    element, a per-row input's element of `row`, a per-row input broadcast over some of x's dims its element for
    `row` in its [L0, L1, L2] view (host.broadcast_rows: stride 0 where broadcast), found as _broadcast_starts
    finds a broadcast row."""
    singles = {}
    for i, (T, kind) in enumerate(zip(tensors, lw.facts().kinds)):
        if kind == "broadcast_per_row":
            singles[i] = lw.scalar(_storage(T), _view_offset(T, row))
        elif kind in lw.SINGLE:
            singles[i] = lw.scalar(T, 0 if kind == "scalar" else row)
    return singles


def _view_offset(T, row):
    """The element offset of x's row `row` in an [L0, L1, L2, ...] view whose first three strides say where each of
    x's rows is (stride 0 over the dims it is broadcast over): (row % L2)*s2 + (row / L2 % L1)*s1 + row / (L2*L1)*s0,
    two integer divisions by the view's runtime sizes, the remainders by a multiply."""
    l1, l2 = fx.get_scalar(T.shape[1]), fx.get_scalar(T.shape[2])
    s0, s1, s2 = (fx.get_scalar(T.stride[d]) for d in range(3))
    q2 = row // l2
    q1 = q2 // l1
    return (row - q2 * l2) * s2 + (q2 - q1 * l1) * s1 + q1 * s0


def _broadcast_starts(tensors, row, vec: int) -> dict:
    """Every broadcast input's start of row `row` (by input index), in vectors of its storage, once per row (before
    the looped path's passes): its [L0, L1, L2, W] view (host.broadcast_rows: x's rows row-major over L0, L1, L2,
    stride 0 over the dims it is broadcast over) holds x's row r at (r % L2)*s2 + (r / L2 % L1)*s1 + r / (L2*L1)*s0:
    two integer divisions by the view's runtime sizes (FlyDSL passes a tensor's dynamic layout with it), the
    remainders by a multiply; vec divides the strides (_prepare)."""
    return {i: _view_offset(T, row) // vec for i, (T, kind) in enumerate(zip(tensors, lw.facts().kinds))
            if kind == "broadcast"}


def _storage(T):
    """A broadcast view's storage as a 1-D tensor: its cosize, every element a row can read (the buffer descriptor's
    num_records, stride-0 dims counted once)."""
    return fx.make_view(fx.get_iter(T), fx.make_layout(fx.get_scalar(fx.cosize(T.layout)), 1))


def _storage_vectors(T, vec: int):
    """A broadcast input's storage (_storage) as 1-D vectors (lw.vectors)."""
    return lw.vectors(_storage(T), vec)


def _inputs(tensors, ldvs, starts: dict, scalars, row, j0, lanes: int, chunks: int, t, nv, vec: int, full: bool,
            row_ok):
    """compute()'s values in ARGS order, from the loads (flydsl_lowered.plan_loads), each this lane's chunks k as
    fp32 register vectors: a row or vector input's vector j = j0 + k*lanes + t of its row (a mask's vec bytes per
    access, as 0.0 / 1.0), a broadcast input's of the row `starts` found; a part p of a wide input (a row, a
    broadcast input or a vector [r*N]) its vector p*NV + j (columns [p*N, (p+1)*N)); the lanes of a wide input its r
    vectors r*j .. r*j + r-1 (r*vec contiguous elements, r 128-bit loads), lane l the values l, l + r, ... of them
    (a shuffle of the fp32 registers: no move); each scalar input its value from `scalars` (_scalars, loaded once
    per lane, outside any loop)."""
    f = lw.facts()
    loaded = []
    for (i, how, part), width in zip(f.loads, f.load_widths):
        T, ldv, kind = tensors[i], ldvs[i], f.kinds[i]
        dtype = T.element_type
        r, v = _regs(vec, chunks * width, dtype)  # not zero-filled: a chunk not loaded is masked (_lane_partial)
        atom = fx.make_copy_atom(fx.rocdl.BufferCopy(vec * dtype.width), dtype)
        gmem = _storage_vectors(T, vec) if kind == "broadcast" else _vectors(T, vec)
        # traced after the view: the order that keeps non-wide ISA as it was
        base = row * ldv if kind == "row" else starts[i] if kind == "broadcast" else 0
        if const_expr(how == "part"):
            base = base + part * nv  # column part*N of the row
        _move_if(row_ok if kind in ("row", "broadcast") else True, atom, gmem, v, base, j0, lanes, chunks, t, nv,
                 full, True, width)
        loaded.append(r.load().to(fx.Float32))
    values = []
    for how, k, j in f.of_arg:
        if const_expr(how == "scalar"):
            values.append(scalars[k])
        elif const_expr(how == "lane"):
            w, width = loaded[k], f.load_widths[k]
            values.append(w.shuffle(w, [c * width * vec + j + width * e for c in range(chunks) for e in range(vec)]))
        else:
            values.append(loaded[k])
    return values


def _stores(tensors, results, row, j0, lanes: int, chunks: int, t, nv, vec: int, full: bool, ok, reduced_ok):
    """compute()'s flat results to the outputs (the tensors after the inputs): each of lw.facts().stores when `ok`
    (the row exists), each reduced output's results[first[o]] by lane 0 when `reduced_ok`. A row output [M, r*N]
    (r = OUT_WIDTHS) has rows r*NV vectors apart: its part j from column j*N, its lanes interleaved in registers
    (_interleave) and stored r vectors per chunk, like a wide input's loads."""
    f = lw.facts()
    outputs = tensors[len(f.kinds):]
    for o, how, j in f.stores:
        r, first = f.out_widths[o], f.first[o]
        if const_expr(how == "lane"):
            _store_row(outputs[o], _interleave(results[first:first + r], vec, chunks), row * (r * nv), j0, lanes,
                       chunks, t, nv, vec, full, ok, r)
        else:
            base = row * nv if const_expr(r == 1) else row * (r * nv) + j * nv
            _store_row(outputs[o], results[first + j], base, j0, lanes, chunks, t, nv, vec, full, ok, 1)
    for o, kind in enumerate(f.outputs):
        if const_expr(kind != "row"):
            _store_reduced(outputs[o], results[f.first[o]], row, t, reduced_ok)


def _interleave(pieces, vec: int, chunks: int):
    """r fp32 register vectors (a wide output's lanes, vec*chunks values each) as one of r*vec*chunks values: chunk
    c's r*vec contiguous columns, piece l's value e at c*r*vec + e*r + l (register moves, no data movement)."""
    r = len(pieces)
    return fx.Vector.from_elements([pieces[q][c * vec + e] for c in range(chunks) for e in range(vec)
                                    for q in range(r)], fx.Float32)


def _store_row(T, value, base, j0, lanes: int, chunks: int, t, nv, vec: int, full: bool, ok, width: int):
    """One row store (when `ok`: the row exists): this lane's chunks of `value` (width*vec values per chunk) to the
    row's vectors from `base`, in the output's dtype (x's, fp32, a quantizer's int8 / fp8: lw.to_storage), vec
    elements per access (int8 / fp8 beside a bf16 x: 8 bytes, dwordx2)."""
    dtype = T.element_type
    r, v = _regs(vec, chunks * width, dtype)
    r.store(lw.to_storage(value, dtype))
    atom = fx.make_copy_atom(fx.rocdl.BufferCopy(vec * dtype.width), dtype)
    _move_if(ok, atom, _vectors(T, vec), v, base, j0, lanes, chunks, t, nv, full, False, width)


def _store_reduced(T, value, row, t, ok):
    """A reduced output's value of the row by lane 0 (when `ok`), in its dtype (fp8: lw.to_storage)."""
    dtype = T.element_type
    lane0 = (t == 0) if ok is True else ok & (t == 0)
    value = fx.Float32(value) if isinstance(value, (int, float)) else value
    if const_expr(dtype is fx.Float8E4M3FN):  # converted here: _store_scalar's .to() has no fp8
        value = lw.to_storage(value, dtype)
    _store_scalar_if(lane0, T, row, value, dtype)


@flyc.jit
def _move_if(ok, atom, gmem, regs, base, j0, lanes: int, chunks: int, t, nv, full: bool, load: bool, width: int = 1):
    """_move when `ok` (a branch around the accesses; True: none); width > 1: _move_lanes."""
    if const_expr(ok is True):
        if const_expr(width == 1):
            _move(atom, gmem, regs, base, j0, lanes, chunks, t, nv, full, load)
        else:
            _move_lanes(atom, gmem, regs, base, j0, lanes, chunks, t, nv, full, width, load)
    else:
        if ok:
            if const_expr(width == 1):
                _move(atom, gmem, regs, base, j0, lanes, chunks, t, nv, full, load)
            else:
                _move_lanes(atom, gmem, regs, base, j0, lanes, chunks, t, nv, full, width, load)


@flyc.jit
def _move_lanes(atom, gmem, regs, base, j0, lanes: int, chunks: int, t, nv, full: bool, width: int, load: bool):
    """A wide tensor's lanes: for chunk k (row vector j = j0 + k*lanes + t of the N-wide rows), its `width` vectors
    width*j .. width*j + width-1 (width*vec contiguous elements) <-> regs vectors k*width ...; skipped when j >= nv
    (unless `full`)."""
    for k in range_constexpr(chunks):
        j = j0 + k * lanes + t
        if const_expr(full):
            for q in range_constexpr(width):
                _copy(atom, gmem[None, base + j * width + q], regs[None, k * width + q], load)
        else:
            if j < nv:
                for q in range_constexpr(width):
                    _copy(atom, gmem[None, base + j * width + q], regs[None, k * width + q], load)


def _copy(atom, gmem_vector, regs_vector, load: bool):
    """One buffer access of a vector: gmem -> registers (a load) or back (a store)."""
    if load:
        fx.copy(atom, gmem_vector, regs_vector)
    else:
        fx.copy(atom, regs_vector, gmem_vector)


@flyc.jit
def _store_scalar_if(ok, Out, index, val, dtype):
    if ok:
        _store_scalar(Out, index, val, dtype)


def _chunk_masks(j0, lanes: int, chunks: int, t, nv, full: bool) -> list:
    """Per chunk k, whether its vector j0 + k*lanes + t lies in the row (None: certainly, `full`)."""
    return [None if full else (j0 + k * lanes + t < nv) for k in range(chunks)]


def _lds(lds_floats: int):
    """The LDS floats of the reductions' cross-wave step, or None when a row is one wave (lds_floats 0)."""
    return fx.SharedAllocator().allocate(fx.Array[fx.Float32, lds_floats, 16]).peek() if lds_floats > 0 else None


def _identities(acc) -> None:
    """Each reduction's accumulator set to its identity: 0 for a sum, -inf for a max (a min is folded as the max of
    -v)."""
    f = lw.facts()
    for q in range_constexpr(len(f.reductions)):
        acc[q] = fx.Float32(0.0 if f.reductions[q] == "sum" else -math.inf)


def _pass_state(tensors, row, vec: int, lds_floats: int) -> tuple:
    """What the looped and split kernels set up before their passes: the LDS floats, the reductions' accumulators at
    their identities, the scalar inputs (read once, before every pass) and the broadcast inputs' row starts."""
    lds = _lds(lds_floats)
    acc = fx.make_rmem_tensor(max(1, len(lw.facts().reductions)), fx.Float32)
    _identities(acc)
    return lds, acc, _scalars(tensors, row), _broadcast_starts(tensors, row, vec)


def _reduced_only(tensors, scalars: dict, acc, known: dict, row, nv, vec: int, threads: int, chunks: int, tid,
                  store) -> None:
    """The reduced outputs of a row with no row output, once every row result is known: compute() on zeros (its
    outputs are functions of the row results alone), stored by lane 0 where `store` holds."""
    f = lw.facts()
    last = reduction_passes()
    zeros = fx.make_rmem_tensor(vec * chunks, fx.Float32)
    zeros.fill(0.0)
    values = [scalars[k] if how == "scalar" else zeros.load() for how, k, _ in f.of_arg]
    masks = _chunk_masks(0, threads, chunks, tid, nv, True)
    results = lw.compute(values, fx.Float32(nv * vec), _PassReduce(masks, vec, values[f.like], acc, known, last))
    _stores(tensors, results, row, 0, threads, chunks, tid, nv, vec, True, True, store)


@flyc.kernel
def rows_kernel(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, L0: fx.Int32, L1: fx.Int32, L2: fx.Int32, L3: fx.Int32, L4: fx.Int32, L5: fx.Int32,
    L6: fx.Int32, L7: fx.Int32, m: fx.Int32, nv: fx.Int32,
    vec: fx.Constexpr[int], tpr: fx.Constexpr[int], chunks: fx.Constexpr[int], threads: fx.Constexpr[int],
    full: fx.Constexpr[bool], lds_floats: fx.Constexpr[int], key: fx.Constexpr[str],
):
    """Register path: tpr lanes own one row; every input's chunks stay in VGPRs from the loads through every reduce()
    to the stores."""
    tid = fx.thread_idx.x
    row = fx.block_idx.x * (threads // tpr) + tid // tpr
    t = tid % tpr
    f = lw.facts()
    tensors = [T0, T1, T2, T3, T4, T5, T6, T7]
    lds = _lds(lds_floats)
    row_ok = row < m
    values = _inputs(tensors, [L0, L1, L2, L3, L4, L5, L6, L7], _broadcast_starts(tensors, row, vec),
                     _scalars(tensors, row), row, 0, tpr, chunks, t, nv, vec, full, row_ok)
    reduce = _RowReduce(_chunk_masks(0, tpr, chunks, t, nv, full), vec, values[f.like],
                        lambda part, kind, slot: _row_reduce(part, "sum" if kind == "sum" else "max", tpr, threads,
                                                             lds, slot, tid))
    results = lw.compute(values, fx.Float32(nv * vec), reduce)
    _stores(tensors, results, row, 0, tpr, chunks, t, nv, vec, full, row_ok, row_ok)


@flyc.jit
def _pass(tensors, ldvs, starts: dict, scalars: dict, row, iters, nv, vec: int, threads: int, chunks: int, tid, acc,
          known: dict, p: int):
    """Pass p of the looped path over the row, `threads * chunks` vectors per iteration (see _PassReduce): the whole
    slices (every vector in the row) with unpredicated loads and stores and no masks, then the partial last slice,
    if any, predicated and masked. The CuTe DSL cell's looped_kernel: masking every slice made its long-row max 2.5x
    slower on the H200."""
    step = threads * chunks
    whole = nv // step
    for it in range(whole):
        _slice(tensors, ldvs, starts, scalars, row, it * step, nv, vec, threads, chunks, tid, acc, known, p, it == 0,
               True)
    if whole < iters:
        _slice(tensors, ldvs, starts, scalars, row, whole * step, nv, vec, threads, chunks, tid, acc, known, p,
               whole == 0, False)


def _slice(tensors, ldvs, starts: dict, scalars, row, j0, nv, vec: int, threads: int, chunks: int, tid, acc,
           known: dict, p: int, first, whole: bool):
    """One slice of a pass: load, compute; the last pass stores the row outputs (and the reduced ones once). A whole
    slice (every vector in the row: `whole`, a Python bool) loads and stores unpredicated and masks nothing."""
    f = lw.facts()
    values = _inputs(tensors, ldvs, starts, scalars, row, j0, threads, chunks, tid, nv, vec, whole, True)
    masks = _chunk_masks(j0, threads, chunks, tid, nv, whole)
    results = lw.compute(values, fx.Float32(nv * vec), _PassReduce(masks, vec, values[f.like], acc, known, p))
    if const_expr(p == reduction_passes()):
        _stores(tensors, results, row, j0, threads, chunks, tid, nv, vec, whole, True, first)


@flyc.kernel
def looped_kernel(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, L0: fx.Int32, L1: fx.Int32, L2: fx.Int32, L3: fx.Int32, L4: fx.Int32, L5: fx.Int32,
    L6: fx.Int32, L7: fx.Int32, nv: fx.Int32, iters: fx.Int32,
    vec: fx.Constexpr[int], threads: fx.Constexpr[int], chunks: fx.Constexpr[int], lds_floats: fx.Constexpr[int],
    key: fx.Constexpr[str],
):
    """Long rows: one workgroup per row, the reductions' passes over it (lowered.PASSES, see _PassReduce), then one
    that stores the row outputs.

    The lane partials live in a register tensor of one fp32 per reduction (loop-carried through memory, which LLVM
    keeps in VGPRs); after pass p those of its reductions go through DPP and LDS (_row_results) and the row results
    are SSA values the later passes read. When no output is a row, the last pass needs no data: compute() runs once
    on zeros for the reduced outputs (functions of the row results only)."""
    tid = fx.thread_idx.x
    row = fx.block_idx.x
    f = lw.facts()
    tensors = [T0, T1, T2, T3, T4, T5, T6, T7]
    ldvs = [L0, L1, L2, L3, L4, L5, L6, L7]
    lds, acc, scalars, starts = _pass_state(tensors, row, vec, lds_floats)
    known = {}
    for p in range_constexpr(reduction_passes()):
        _pass(tensors, ldvs, starts, scalars, row, iters, nv, vec, threads, chunks, tid, acc, known, p)
        _row_results(p, acc, known, threads, lds, tid)
    last = reduction_passes()
    if const_expr("row" in f.outputs):
        _pass(tensors, ldvs, starts, scalars, row, iters, nv, vec, threads, chunks, tid, acc, known, last)
    else:
        _reduced_only(tensors, scalars, acc, known, row, nv, vec, threads, chunks, tid, True)


@flyc.jit
def _split_pass(tensors, ldvs, starts: dict, scalars: dict, row, g, groups, per, iters, nv, vec: int, threads: int,
                chunks: int, tid, acc, known: dict, p: int):
    """Pass p of the split-row path over workgroup g's part of the row: its whole slices [g*per, (g+1)*per) (the last
    workgroup's end is the row's last whole slice: split() leaves none empty) unpredicated, then, in the last
    workgroup only, the partial last slice, predicated and masked: _pass's slices, split among the G workgroups."""
    step = threads * chunks
    whole = nv // step
    lo = g * per
    last = g == groups - 1
    hi = last.select(whole, lo + per)
    for it in range(lo, hi):
        _slice(tensors, ldvs, starts, scalars, row, it * step, nv, vec, threads, chunks, tid, acc, known, p, it == 0,
               True)
    if last & (whole < iters):
        _slice(tensors, ldvs, starts, scalars, row, whole * step, nv, vec, threads, chunks, tid, acc, known, p,
               whole == 0, False)


@flyc.jit
def _load_partial_if(ok, P, index, regs, q: int):
    """regs vector q (one fp32) = P[index] when `ok`: one 32-bit buffer load."""
    if ok:
        fx.copy(fx.make_copy_atom(fx.rocdl.BufferCopy(32), fx.Float32), _vectors(P, 1)[None, index], regs[None, q])


def _combine_partials(P, row, groups, p: int, known: dict, threads: int, lds, tid) -> None:
    """known[q] for every reduction of the passes before p, from the G workgroup partials of the row in P [M, G,
    slots]: lane t < G loads partial t of each (one 32-bit load per reduction), the other lanes hold the identity
    (sum 0, max -inf; an online sum 0 beside its max's -inf), then _row_results folds them as the looped path folds
    its lane partials: DPP and LDS in one fixed order (the same in every workgroup of the row, so all get the same
    bits), a min negated back, an online sum s_g rescaled by exp(m_g - shift(M)) to the combined max M."""
    f = lw.facts()
    slots = max(1, len(f.reductions))
    part, view = _regs(1, slots, fx.Float32)
    _identities(part)  # a min's partial is a max of -v
    have = tid < groups
    first = (row * groups + tid) * slots
    for q in range_constexpr(len(f.reductions)):
        if const_expr(f.passes[q] < p):
            _load_partial_if(have, P, first + q, view, q)
    for pp in range_constexpr(p):
        _row_results(pp, part, known, threads, lds, tid)


@flyc.kernel
def split_kernel(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, P: fx.Tensor, L0: fx.Int32, L1: fx.Int32, L2: fx.Int32, L3: fx.Int32, L4: fx.Int32,
    L5: fx.Int32, L6: fx.Int32, L7: fx.Int32, nv: fx.Int32, iters: fx.Int32, groups: fx.Int32, per: fx.Int32,
    vec: fx.Constexpr[int], threads: fx.Constexpr[int], chunks: fx.Constexpr[int], lds_floats: fx.Constexpr[int],
    p: fx.Constexpr[int], key: fx.Constexpr[str],
):
    """Split-row path, workgroup (g, row) of grid [G, M]: pass p of its part of the row. p < reduction_passes() is
    kernel A (fold, then write this workgroup's partials of pass p: P[row, g, q]), p == reduction_passes() kernel B
    (store the outputs); both first combine the partials of the passes before p (_combine_partials)."""
    tid = fx.thread_idx.x
    g = fx.block_idx.x
    row = fx.block_idx.y
    f = lw.facts()
    tensors = [T0, T1, T2, T3, T4, T5, T6, T7]
    ldvs = [L0, L1, L2, L3, L4, L5, L6, L7]
    lds, acc, scalars, starts = _pass_state(tensors, row, vec, lds_floats)
    known = {}
    if const_expr(p > 0):
        _combine_partials(P, row, groups, p, known, threads, lds, tid)
    last = reduction_passes()
    if const_expr(p < last or "row" in f.outputs):
        _split_pass(tensors, ldvs, starts, scalars, row, g, groups, per, iters, nv, vec, threads, chunks, tid, acc,
                    known, p)
    if const_expr(p < last):
        mine = {}
        _row_results(p, acc, mine, threads, lds, tid)
        base = (row * groups + g) * max(1, len(f.reductions))
        for q in range_constexpr(len(f.reductions)):
            if const_expr(f.passes[q] == p):
                val = -mine[q] if f.reductions[q] == "min" else mine[q]  # min: the max of -v it folded
                _store_scalar_if(tid == 0, P, base + q, val, fx.Float32)
    elif const_expr("row" not in f.outputs):
        _reduced_only(tensors, scalars, acc, known, row, nv, vec, threads, chunks, tid, g == 0)


def _split_launch(tensors, P, ldvs, m, nv, iters, groups, per, vec: int, threads: int, chunks: int, lds_floats: int,
                  key: str, stream):
    """The split-row launchers' body (at trace time): kernel A once per reduction pass, then kernel B, each on grid
    [G, M] (B on [1, M] when it has no row output to store), in stream order: each kernel's partials are in global
    memory before the next starts."""
    T, L = lw.kernel_slots(tensors), lw.kernel_slots(ldvs)
    for p in range(reduction_passes() + 1):
        width = groups if p < reduction_passes() or "row" in lw.facts().outputs else 1
        split_kernel(*T, P, *L, nv, iters, groups, per, vec, threads, chunks, lds_floats, p, key).launch(
            grid=(width, m, 1), block=(threads, 1, 1), stream=stream)


@flyc.jit
def split_launch(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, P: fx.Tensor, L0: fx.Int32, L1: fx.Int32, L2: fx.Int32, L3: fx.Int32, L4: fx.Int32,
    L5: fx.Int32, L6: fx.Int32, L7: fx.Int32, m: fx.Int32, nv: fx.Int32, iters: fx.Int32, groups: fx.Int32,
    per: fx.Int32, vec: fx.Constexpr[int], threads: fx.Constexpr[int], chunks: fx.Constexpr[int],
    lds_floats: fx.Constexpr[int], key: fx.Constexpr[str], stream: fx.Stream = fx.Stream(None),
):
    """The split-row path's host side, lw.SLOTS tensor slots as reduction_launch's, then the fp32 partials P."""
    _split_launch([T0, T1, T2, T3, T4, T5, T6, T7], P, [L0, L1, L2, L3, L4, L5, L6, L7], m, nv, iters, groups, per,
                  vec, threads, chunks, lds_floats, key, stream)


@flyc.jit
def split_launch3(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, P: fx.Tensor, L0: fx.Int32, L1: fx.Int32, L2: fx.Int32,
    m: fx.Int32, nv: fx.Int32, iters: fx.Int32, groups: fx.Int32, per: fx.Int32, vec: fx.Constexpr[int],
    threads: fx.Constexpr[int], chunks: fx.Constexpr[int], lds_floats: fx.Constexpr[int], key: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """split_launch with 3 tensor slots."""
    _split_launch([T0, T1, T2], P, [L0, L1, L2], m, nv, iters, groups, per, vec, threads, chunks, lds_floats, key,
                  stream)


@flyc.jit
def split_launch2(
    T0: fx.Tensor, T1: fx.Tensor, P: fx.Tensor, L0: fx.Int32, L1: fx.Int32, m: fx.Int32, nv: fx.Int32,
    iters: fx.Int32, groups: fx.Int32, per: fx.Int32, vec: fx.Constexpr[int], threads: fx.Constexpr[int],
    chunks: fx.Constexpr[int], lds_floats: fx.Constexpr[int], key: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """split_launch with 2 tensor slots."""
    _split_launch([T0, T1], P, [L0, L1], m, nv, iters, groups, per, vec, threads, chunks, lds_floats, key, stream)


def _launch(tensors, ldvs, m, nv, iters, vec: int, tpr: int, chunks: int, threads: int, looped: bool, full: bool,
            lds_floats: int, key: str, stream):
    """Every launcher's body (at trace time): one workgroup per threads // tpr rows (register path) or per row
    (looped path). The kernels take lw.SLOTS tensors and row strides whatever the launcher's count
    (lw.kernel_slots: the unused ones repeat the first, never read), so their ISA does not depend on the launcher."""
    T, L = lw.kernel_slots(tensors), lw.kernel_slots(ldvs)
    if looped:
        looped_kernel(*T, *L, nv, iters, vec, threads, chunks, lds_floats, key).launch(
            grid=(m, 1, 1), block=(threads, 1, 1), stream=stream)
    else:
        rows = threads // tpr
        rows_kernel(*T, *L, m, nv, vec, tpr, chunks, threads, full, lds_floats, key).launch(
            grid=((m + rows - 1) // rows, 1, 1), block=(threads, 1, 1), stream=stream)


@flyc.jit
def reduction_launch(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, L0: fx.Int32, L1: fx.Int32, L2: fx.Int32, L3: fx.Int32, L4: fx.Int32, L5: fx.Int32,
    L6: fx.Int32, L7: fx.Int32, m: fx.Int32, nv: fx.Int32, iters: fx.Int32,
    vec: fx.Constexpr[int], tpr: fx.Constexpr[int], chunks: fx.Constexpr[int], threads: fx.Constexpr[int],
    looped: fx.Constexpr[bool], full: fx.Constexpr[bool], lds_floats: fx.Constexpr[int], key: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """Host side, lw.SLOTS tensor slots: tensor slot i and row stride L<i> (in vectors; 0 for a vector input) are
    lowered.INPUTS then OUTPUTS (flydsl_lowered.slots)."""
    _launch([T0, T1, T2, T3, T4, T5, T6, T7], [L0, L1, L2, L3, L4, L5, L6, L7], m, nv, iters, vec, tpr, chunks,
            threads, looped, full, lds_floats, key, stream)


@flyc.jit
def reduction_launch3(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, L0: fx.Int32, L1: fx.Int32, L2: fx.Int32, m: fx.Int32,
    nv: fx.Int32, iters: fx.Int32,
    vec: fx.Constexpr[int], tpr: fx.Constexpr[int], chunks: fx.Constexpr[int], threads: fx.Constexpr[int],
    looped: fx.Constexpr[bool], full: fx.Constexpr[bool], lds_floats: fx.Constexpr[int], key: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """reduction_launch with 3 tensor slots (rmsnorm: x, weight, out): FlyDSL packs 5 tensors and 5 strides fewer
    per call."""
    _launch([T0, T1, T2], [L0, L1, L2], m, nv, iters, vec, tpr, chunks, threads, looped, full, lds_floats, key,
            stream)


@flyc.jit
def reduction_launch2(
    T0: fx.Tensor, T1: fx.Tensor, L0: fx.Int32, L1: fx.Int32, m: fx.Int32, nv: fx.Int32, iters: fx.Int32,
    vec: fx.Constexpr[int], tpr: fx.Constexpr[int], chunks: fx.Constexpr[int], threads: fx.Constexpr[int],
    looped: fx.Constexpr[bool], full: fx.Constexpr[bool], lds_floats: fx.Constexpr[int], key: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """reduction_launch with 2 tensor slots (softmax, sum, mean, max: x and the output)."""
    _launch([T0, T1], [L0, L1], m, nv, iters, vec, tpr, chunks, threads, looped, full, lds_floats, key, stream)


LAUNCHERS = {2: reduction_launch2, 3: reduction_launch3, lw.SLOTS: reduction_launch}  # by lw.launch_slots
SPLIT_LAUNCHERS = {2: split_launch2, 3: split_launch3, lw.SLOTS: split_launch}


# ------------------------------------------------------------------------------------------------
# Host interface
# ------------------------------------------------------------------------------------------------

_compiled: dict = {}  # (dtypes, constexprs) -> CompiledFunction; M, N and the strides are runtime values
_launches: dict = {}  # run()'s signature (dtypes, devices, N, row strides, alignment) -> rt.Launch


def _constexprs(vec: int, cfg: dict) -> tuple:
    return (vec, cfg["tpr"], cfg["chunks"], cfg["threads"], cfg["looped"], cfg["full"], cfg["lds_floats"],
            lw.facts().key)


def _compile_args(in_dtypes, out_dtypes, vec: int, cfg: dict) -> tuple:
    """What run() and compile_only compile: 1-D placeholders in the tensor slots (a broadcast input's a [L0, L1, L2,
    W] one: its sizes and strides are runtime values the kernel reads), the row strides (in vectors) of the slots, M,
    N / vec, the loop count, then the constexprs."""
    tensors = _placeholders(in_dtypes, out_dtypes)
    return (*lw.short_slots(tensors), *lw.short_slots([1] * len(tensors)), 1, 1, 1, *_constexprs(vec, cfg))


def _placeholders(in_dtypes, out_dtypes) -> list:
    """The tensor slots' placeholders: 1-D, but a broadcast input's [L0, L1, L2, W] and a broadcast per-row input's
    [L0, L1, L2] (host.broadcast_rows' views: sizes and strides are runtime values the kernel reads)."""
    kinds = [*lw.facts().kinds, *["output"] * len(out_dtypes)]
    views = {"broadcast": ((1, 1, 1, 4096), (4096, 4096, 4096, 1)), "broadcast_per_row": ((1, 1, 1), (1, 1, 1))}
    return [rt.placeholder(d, 4096).as_strided(*views[kind]) if kind in views else rt.placeholder(d, 4096)
            for d, kind in zip((*in_dtypes, *out_dtypes), kinds)]


def _split_constexprs(vec: int, cfg: dict) -> tuple:
    return (vec, cfg["threads"], cfg["chunks"], cfg["lds_floats"], lw.facts().key)


def _split_compile_args(in_dtypes, out_dtypes, vec: int, cfg: dict) -> tuple:
    """What the split-row path compiles: _compile_args' tensor slots, the fp32 partials, the row strides, M, N /
    vec, the loop count, G and the iterations per workgroup (runtime values), then its constexprs."""
    tensors = _placeholders(in_dtypes, out_dtypes)
    return (*lw.short_slots(tensors), rt.placeholder("fp32", 4096), *lw.short_slots([1] * len(tensors)), 1, 1, 1, 2,
            1, *_split_constexprs(vec, cfg))


class _Split:
    """A looped signature's split-row launch (split()), prepared on its first split call: the compiled launcher of
    the signature's dtypes and plan, and the partials buffers [M, G, slots] fp32, one per (M, G, stream)."""

    __slots__ = ("cfg", "cus", "slots", "make", "launch", "partials")

    def __init__(self, cfg: dict, make):
        self.cfg, self.cus, self.slots = cfg, rt.COMPUTE_UNITS, max(1, len(lw.facts().reductions))
        self.make, self.launch, self.partials = make, None, {}

    def __call__(self, x, m: int, groups: int, per: int, tensors, slot_ldvs, nv: int, iters: int) -> None:
        import torch

        launch = self.launch
        if launch is None:
            launch = self.launch = self.make()
        key = (m, groups, launch.stream(launch.device))
        partials = self.partials.get(key)
        if partials is None:
            partials = self.partials[key] = torch.empty(m * groups * self.slots, dtype=torch.float32, device=x.device)
        launch(*tensors, partials, *slot_ldvs, m, nv, iters, groups, per)


def _prepare(inputs, out):
    """A signature's first call, or a refused one: host.py's checks, the buffer limits, the vector width, the plan,
    the launch.

    Its facts: the largest M whose tensors this signature keeps under the 2 GiB a buffer addresses (the exact bound
    of the checks below, so a call needs one comparison), N / vec, the slots' row strides in vectors, the loop
    count, the outputs' torch dtypes, the split launch, and each row input's row stride in elements: everything
    but M, the pointers and the outputs that the launch takes, fixed by the signature."""
    f = lw.facts()
    op = f.module.SOURCE
    host.check_count(op, inputs, len(f.inputs))
    if inputs[f.x].dim() > 2:  # an x [*lead, N] as run() passes it (contiguous): checked as the [M, N] rows it holds
        inputs, out = host.flat_rows(f.module, inputs, out)
    x = inputs[f.x]
    m, n, _ = host.rows_of(op, x)
    n //= f.widths[f.x]  # the row length N: a wide x is [M, r*N]
    _, outs = host.lowered_operands(f.module, inputs, out, host.lowered_out_shapes(f.module, m, n),
                                    rows_contiguous=False)
    rows = [(name, t, w) for name, kind, t, w in zip(f.inputs, f.kinds, inputs, f.widths) if kind == "row"]
    lds = [host.rows_of(f"{op} ({name})", t)[2] for name, t, _ in rows]
    for (name, t, w), ld in zip(rows, lds):
        if ((m - 1) * ld + w * n) * t.element_size() >= MAX_BYTES:
            raise ValueError(f"{op}: {name} spans 2 GiB or more; buffer accesses address under 2 GiB")
    broadcast = [t for t, kind in zip(inputs, f.kinds) if kind.startswith("broadcast")]  # a view's span, not numel
    if any(_span(t) * t.element_size() >= MAX_BYTES for t in broadcast):
        raise ValueError(f"{op}: a broadcast input spans 2 GiB or more; buffer accesses address under 2 GiB")
    lw.check_buffer_range([*(t for t, kind in zip(inputs, f.kinds) if not kind.startswith("broadcast")), *outs])
    wide = [*(inputs[i] for i in f.loaded), *(o for o, k in zip(outs, f.outputs) if k == "row")]  # a mask: vec bytes
    strides = [*lds, *(s for t, kind in zip(inputs, f.kinds) if kind == "broadcast"  # a broadcast row starts at a
                       for s in t.stride()[:3])]  # vector too (one value per row is read alone)
    vec = lw.pick_vec(lw.widest_bytes(wide), n, strides, [(t.data_ptr(), t.element_size()) for t in wide])
    cfg = _plan(n, vec)
    dtypes = [lw.dtype_name(t) for t in (*inputs, *outs)]
    fn = rt.compiled(_compiled, (*dtypes, *_constexprs(vec, cfg)), LAUNCHERS[lw.launch_slots(len(dtypes))],
                     lambda: _compile_args(dtypes[:len(inputs)], dtypes[len(inputs):], vec, cfg))
    ldvs = [ld // vec for ld in lds]
    slot_ldvs = lw.short_slots([ldvs.pop(0) if k == "row" else 0 for k in f.kinds] + [0] * len(outs))
    splits = None  # a looped row that some M splits (split() of one row): its split launch, prepared when first used
    if split(1, cfg)[0] > 1:
        key = (*dtypes, "split", *_split_constexprs(vec, cfg))
        launcher = SPLIT_LAUNCHERS[lw.launch_slots(len(dtypes))]
        splits = _Split(cfg, lambda: rt.Launch(op, rt.compiled(_compiled, key, launcher, lambda: _split_compile_args(
            dtypes[:len(inputs)], dtypes[len(inputs):], vec, cfg)), _split_constexprs(vec, cfg), x.get_device()))
    below = [(MAX_BYTES // t.element_size() - 1 - w * n) // ld + 1 for (_, t, w), ld in zip(rows, lds)]  # a span
    below += [(MAX_BYTES // t.element_size() - 1) // (t.numel() // m) for t in  # M values, or M rows of k
              (*(t for t, kind in zip(inputs, f.kinds) if kind == "per_row"), *outs)]
    facts = (min(below), n // vec, slot_ldvs, cfg["iters"], tuple(o.dtype for o in outs), splits, tuple(lds))
    return rt.Launch(op, fn, _constexprs(vec, cfg), x.get_device(), facts)


def _span(t) -> int:
    """Elements from a view's first to its last one (a stride-0 dim adds none)."""
    return 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))


def _packed(inputs, out) -> bool:
    """Whether an x of rank 3 or more and the tensors that share its rows (row and per-row inputs, a given out) are
    contiguous: then each is its M rows in row-major order, and run() launches on them as they are (1-D views of
    their storage), with no [M, N] views of host.rows_nd."""
    for i in _H.with_rows:
        if not inputs[i].is_contiguous():
            return False
    return out is None or all(o.is_contiguous() for o in host.lowered_outputs(out))


def _run_rows(*inputs, out=None):
    """lowered.compute over the rows of x on the current stream: one output tensor, or a tuple (OUTPUTS order).

    inputs in lowered.INPUTS order, the function's own (softmax: run(x); rmsnorm: run(x, weight); x the first row
    input, [M, N] or of rank 3 or more: rows of its last dim); a mask bool, a scalar one element; `out` one tensor
    or a tuple/list in OUTPUTS order. This is run() itself for a program whose rows are x's own (see run below), and
    the hot path.

    An x [*lead, N] of rank 3 or more (a model's [B, S, D]) with its row inputs, per-row inputs and any out
    contiguous (_packed) runs here as it is: each such tensor is its M rows in row-major order, so the launch's 1-D
    views of their storage are what [M, N] rows would give, the outputs are made in x's leading shape, and
    _prepare checks them as those rows (host.flat_rows). Any other layout (strided, 1-D) goes through
    host.rows_nd, which calls back with 2-D rows.

    The signature picks the prepared launch, M is free. It holds everything the plan and the compiled code depend on
    that FlyDSL's call does not check: N and x's rank; each tensor's dtype, device and 16-byte phase; each row
    input's width and strides (beside an x of rank 3 or more its width alone: it is contiguous; a lone row's last
    stride alone: its row stride is never read); a vector's or scalar's shape and strides; a one value per row
    input's strides; a given output's dtype, device, phase, shape past M (its rank beside an N-D x) and contiguity.
    So a call checks only what M changes, against the prepared launch: every tensor's M (its leading shape beside
    an N-D x), and M under the bound that keeps each of them under the 2 GiB a buffer addresses (one comparison).
    Anything else goes back to _prepare: host.py refuses it in its own words. Then 1-D views of the rows and the
    launch (see flydsl_runtime.py).

    Host cost: a FlyDSL call checks nothing itself, so these checks are run()'s to make on every call, in Python:
    what the program fixes (which inputs are rows, the views) is worked out once (_hot), and what a signature
    fixes once per signature (_prepare's facts)."""
    h = _H
    if len(inputs) != h.count:
        _prepare(inputs, out)  # raises, in host.py's words
    shape = inputs[h.x].shape
    lead = None  # x's leading shape ([B, S] of [B, S, D]) when it is not 2-D rows
    if len(shape) != 2:  # a 1-D x, or one strided or empty: host.rows_nd calls back with 2-D rows
        if len(shape) < 3 or not shape[-1] or not _packed(inputs, out):
            return host.rows_nd(h.module, _run_rows, inputs, out)
        lead = shape[:-1]
    if h.views:
        inputs = h.views(inputs)  # a mask as its bytes, a 0-d scalar as [1], one value per row as its M: free views
    x = inputs[h.x]
    m = shape[0] if lead is None else x.numel() // shape[-1]
    n = shape[-1] // h.x_width  # the row length N: a wide x is [M, r*N]
    signature = [n, len(shape)]
    for t in inputs:
        signature += (t.dtype, t.get_device(), t.data_ptr() & 15)
    if lead is None:
        for i in h.rows:  # its width, and its strides (their count: its rank); a lone row's row stride is never read
            t = inputs[i]
            signature += (t.shape[-1], t.stride()) if m > 1 else (t.shape[-1], t.dim(), t.stride(-1))
    else:  # contiguous (_packed): its width; its leading shape is x's (below)
        for i in h.rows:
            signature.append(inputs[i].shape[-1])
    for i in h.others:
        t = inputs[i]
        signature += (t.shape, t.stride())
    for i in h.per_rows:
        signature.append(inputs[i].stride())
    outs = None if out is None else host.lowered_outputs(out)
    if outs is not None:
        for o in outs:
            signature += (o.dtype, o.get_device(), o.data_ptr() & 15, o.shape[1:] if lead is None else o.dim(),
                          o.is_contiguous())
    launch = _launches.get(tuple(signature))
    if launch is None:
        launch = _launches[tuple(signature)] = _prepare(inputs, out)
    max_m, nv, slot_ldvs, iters, out_dtypes, splits, lds = launch.facts
    fits = 0 < m <= max_m
    if lead is None:
        for i in h.m_inputs:
            fits = fits and inputs[i].shape[0] == m
    else:  # each row input of x's leading shape, each per-row input (viewed flat) M long
        for i in h.m_inputs:
            t = inputs[i]
            fits = fits and (t.shape[:-1] == lead if t.dim() > 1 else t.shape[0] == m)
    if outs is None:  # [M, r*N], [M] or [M, 1]; beside an N-D x in its leading shape: [B, S, r*N], [B, S], ...
        if h.like_x and (lead is not None or m > 1 and lds[0] == h.x_width * n):  # x's shape, dtype and packed
            outs = tuple(h.empty_like(x) for _ in out_dtypes)  # rows: empty_like, 0.9 against torch.empty's 1.7 us
        else:
            device, rows = x.device, (m,) if lead is None else lead
            outs = tuple(h.empty(rows + ((r * n,) if r else tail), dtype=dtype, device=device)
                         for (r, tail), dtype in zip(h.out_forms, out_dtypes))
    else:
        fits = fits and len(outs) == h.out_count
        if lead is None:
            for o in outs:
                fits = fits and o.shape[0] == m
        else:
            for o, (r, tail) in zip(outs, h.out_forms):
                fits = fits and o.shape == lead + ((r * n,) if r else tail)
    if not fits:  # host.py refuses it in its own words
        launch = _prepare(inputs, outs)
        max_m, nv, slot_ldvs, iters, out_dtypes, splits, lds = launch.facts
    tensors = list(inputs)
    for i, w, ld in zip(h.rows, h.row_widths, lds):
        tensors[i] = inputs[i].as_strided(((m - 1) * ld + w * n,), (1,))
    tensors += [o.view(-1) for o in outs]
    if h.pad:
        tensors += tensors[:1] * h.pad  # lw.short_slots: the first again (never read)
    if splits is not None and 2 * m < splits.cus:  # few long rows: maybe the split-row path (split())
        groups, per = split(m, splits.cfg, splits.cus)
        if groups > 1:
            splits(x, m, groups, per, tensors, slot_ldvs, nv, iters)
            return outs[0] if len(outs) == 1 else outs
    launch(*tensors, *slot_ldvs, m, nv, iters)
    return outs[0] if len(outs) == 1 else outs


def _hot() -> SimpleNamespace:
    """run()'s constants of this workspace's program (lowered.py), worked out once: which inputs are rows (with their
    widths), one value per row, or neither (vectors, scalars); the views the inputs need; and whether x's rows are
    its own (no heads, nothing broadcast), so that a 2-D x goes straight to _run_rows."""
    import torch

    f = lw.facts()
    kinds = f.kinds
    rows = tuple(i for i, k in enumerate(kinds) if k == "row")
    return SimpleNamespace(
        module=f.module, count=len(kinds), x=f.x, x_width=f.widths[f.x], rows=rows,
        row_widths=tuple(f.widths[i] for i in rows), per_rows=tuple(i for i, k in enumerate(kinds) if k == "per_row"),
        others=tuple(i for i, k in enumerate(kinds) if k not in ("row", "per_row")),
        m_inputs=tuple(i for i, k in enumerate(kinds) if k in ("row", "per_row") and i != f.x),  # each M long
        with_rows=tuple(i for i, k in enumerate(kinds) if k in ("row", "per_row")),  # x among them
        # each output's shape past its rows (host.OUTPUT_SHAPES): (r, ()) for a row output r*N long, else (0, its
        # tail: () or (1,))
        out_forms=tuple((r, ()) if kind == "row" else (0, host.OUTPUT_SHAPES[kind](1, 1)[1:])
                        for kind, r in zip(f.outputs, f.out_widths)),
        out_count=len(f.outputs),
        # the launcher's tensor slots past the inputs and outputs (lw.short_slots)
        pad=lw.launch_slots(len(kinds) + len(f.outputs)) - len(kinds) - len(f.outputs),
        # every output a row of x's width and dtype: made by torch.empty_like(x) when x is packed (run())
        like_x=all(kind == "row" and r == f.widths[f.x] and d == "input"
                   for kind, r, d in zip(f.outputs, f.out_widths, f.out_dtypes)),
        views=host.lowered_viewer(f.module), empty=torch.empty, empty_like=torch.empty_like,
        heads_view=host.heads_viewer(f.module),
        nd=bool(f.module.HEADS or {"broadcast", "broadcast_per_row"} & set(kinds)))


def _through_rows_nd(*inputs, out=None):
    """run() of a program whose rows are not x's own 2-D rows (heads of c, broadcast inputs): host.rows_nd views
    the inputs as 2-D rows and calls _run_rows on them. Heads of c with q contiguous skip those views: each row
    input gets the function's own view [*lead, H, c] (host.heads_viewer), whose storage is the T*H rows of c, and
    the outputs come in the function's shape."""
    if _H.heads_view:
        viewed = _H.heads_view(inputs, out)
        if viewed is not None:
            return _run_rows(*viewed, out=out)
    return host.rows_nd(_H.module, _run_rows, inputs, out)


_H = _hot()
# run(*inputs, out=None) (_run_rows says how): a program whose rows are x's own takes the hot path itself, with no
# frame in front of it; heads (HEADS) and broadcast inputs go through _through_rows_nd first.
run = _through_rows_nd if _H.nd else _run_rows


def _case_shape(case: dict | None) -> tuple[int, int, int]:
    """(M, N, row stride) of a case as the kernel runs it; no case means the headline 32768 x 8192. Rows as
    host.lowered_lengths makes them: a case [M, N] of a program with a wide first row output (RoPE's row of N = r
    pieces) runs rows of N / r, one that views x's rows as heads of c (HEADS) M*N/c rows of c."""
    if not case:
        return 32768, 8192, 8192
    dims = case.get("dims") or [case["vars"]["M"], case["vars"]["N"]]
    m, n = int(dims[0]), int(dims[-1])
    f = lw.facts()
    heads = f.module.HEADS
    rows = host.lowered_lengths(n, heads, next((r for r, kind in zip(f.out_widths, f.outputs) if kind == "row"), 1))[0]
    m, n = m * n // rows if heads else m, rows
    return m, n, int(case.get("row_stride") or n)


def _variant(m: int, n: int, ld: int, dtype: str) -> tuple[int, dict, str]:
    """The vector width and plan run() picks for M rows of 16-byte-aligned tensors of compile_only's dtypes
    (lw.placeholder_dtypes), with the split-row path's G and per (cfg["groups"], cfg["per"]: split(); G = 1 when it
    does not split), and the ISA file tag."""
    vec = lw.compile_vec(dtype)
    while vec > 1 and (n % vec or ld % vec):
        vec //= 2
    cfg = _plan(n, vec)
    cfg["groups"], cfg["per"] = split(m, cfg)
    tag = f"n{n}_{'split' if cfg['groups'] > 1 else 'looped' if cfg['looped'] else 'rows'}"
    if vec < lw.compile_vec(dtype):
        tag += f"_vec{vec}"
    return vec, cfg, tag


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", dtype: str | None = None,
                 arch: str | None = None) -> str:
    """Compile the variant run() would pick for the case, for `arch` (default op.json's target), with no GPU.

    Writes and returns the AMDGPU ISA (kernel_<op>_<dtype>_n<N>_<rows|looped|split>[_vec<k>].<arch>.s; the split-row
    path's kernels A and B in one file)."""
    dtype = dtype or OP_SPEC["dtype"]
    m, n, ld = _case_shape(case)
    return rt.compile_isa(_emit_isa, f"{OP}_{dtype}_{_variant(m, n, ld, dtype)[2]}", [dtype, n, ld, m], arch, out_dir)


def _emit_isa(dtype: str, n: str, ld: str, m: str) -> None:
    """Child side of compile_only: compile what run() compiles for this variant (COMPILE_ONLY: nothing launched)."""
    vec, cfg, _ = _variant(int(m), int(n), int(ld), dtype)
    ins, outs = lw.placeholder_dtypes(dtype)
    if cfg["groups"] > 1:
        flyc.compile(SPLIT_LAUNCHERS[lw.launch_slots(len(ins) + len(outs))],
                     *_split_compile_args(ins, outs, vec, cfg))
    else:
        flyc.compile(LAUNCHERS[lw.launch_slots(len(ins) + len(outs))], *_compile_args(ins, outs, vec, cfg))


def describe(case: dict) -> dict:
    """Launch configuration of a case, for the plan and the report."""
    dtype = OP_SPEC["dtype"]
    f = lw.facts()
    m, n, ld = _case_shape(case)
    vec, cfg, _ = _variant(m, n, ld, dtype)
    groups = cfg["groups"]
    grid = m if cfg["looped"] else -(-m // cfg["rows"])
    waves_per_row = max(1, cfg["tpr"] // WAVE)
    bits = vec * _BYTES[dtype] * 8
    reads = passes() if cfg["looped"] else 1
    plural = "es" if passes() != 1 else ""
    if groups > 1:
        path = (f"split rows ({groups} workgroups per row, {cfg['per']} loop iteration(s) each; "
                + (f"{reduction_passes()} kernel(s) writing partials, then one combining them and storing"
                   if f.reductions else "one kernel, no partials") + f", {passes()} pass{plural})")
    elif cfg["looped"]:
        path = f"looped (one workgroup per row, {passes()} pass{plural})"
    else:
        path = "register-resident rows"
    described = {
        "path": path,
        "vector_elements": vec,
        "vector_bits": bits,
        "lanes_per_row": cfg["tpr"] * groups,
        "waves_per_row": waves_per_row * groups if cfg["tpr"] >= WAVE else f"1/{WAVE // cfg['tpr']}",
        "chunks_per_lane": cfg["chunks"] if not cfg["looped"] else
        f"{cfg['chunks']} per iteration x {cfg['per'] if groups > 1 else cfg['iters']}",
        "rows_per_workgroup": cfg["rows"],
        "threads_per_cta": cfg["threads"],
        "waves_per_workgroup": cfg["threads"] // WAVE,
        "lds_bytes": 4 * cfg["lds_floats"],
        "grid": [groups, m, 1] if groups > 1 else [grid, 1, 1],
        "grid_blocks": grid * groups,
        "data_movement": f"HBM -> VGPRs with {bits}-bit buffer loads, fp32 compute() and reduce in VGPRs"
        + (", DPP within the wave" if cfg["tpr"] > 1 else " (one lane per row: no cross-lane step)")
        + (", LDS across waves (one s_barrier per reduction)" if cfg["tpr"] > WAVE and f.reductions else "")
        + ", then VGPRs -> HBM"
        + ("; every input is read once and kept in VGPRs through every reduce()" if not cfg["looped"]
           else "; every input is read once, in one pass" if reads <= 1 else
           f"; every input is read {reads} times: {reduction_passes()} reduction pass(es)"
           + (" (online max and sum in one)" if any(m is not None for m in f.online) else "")
           + " and one that stores (later passes expected from L2 / Infinity Cache)")
        + (f"; each row split across {groups} workgroups, which write one fp32 partial per reduction to a "
           f"[M, {groups}, {max(1, len(f.reductions))}] global buffer per pass and combine the row's partials "
           "in the next kernel (stream order)" if groups > 1 and f.reductions else
           f"; each row split across {groups} workgroups" if groups > 1 else "")
        + (f"; bool masks as their bytes, {vec} per access" if "bool" in f.dtypes else "")
        + ("; scalar inputs one load per lane" if "scalar" in f.kinds else "")
        + _wide_movement(vec),
    }
    if groups > 1:
        described["workgroups_per_row"] = groups
        described["kernels"] = reduction_passes() + 1
    return described


def _wide_movement(vec: int) -> str:
    """describe()'s words for the wide inputs' loads (flydsl_lowered.plan_loads), the broadcast inputs' rows and the
    wide outputs' stores (host.lowered_stores), "" when there are none."""
    f = lw.facts()
    words = [f"; {f.inputs[i]} broadcast over x's rows: its row found by two integer divisions per row"
             for i, kind in enumerate(f.kinds) if kind == "broadcast"]
    for i, how in dict.fromkeys((i, how) for i, how, _ in f.loads if how != "whole"):
        r = f.widths[i]
        words.append(f"; {f.inputs[i]} {r}N wide " + (
            "in parts, each its own load from column j*N" if how == "part" else
            f"as {r} lanes: {r * vec} contiguous elements per chunk ({r} loads), deinterleaved in registers"))
    for o, how in dict.fromkeys((o, how) for o, how, _ in f.stores if how != "whole"):
        r = f.out_widths[o]
        words.append(f"; output {o} [M, {r}N] " + (
            "in parts, each its own store to column j*N" if how == "part" else
            f"as {r} lanes interleaved in registers: {r * vec} contiguous elements per chunk ({r} stores)"))
    return "".join(words)


if __name__ == "__main__":
    rt.child_main(_emit_isa)
