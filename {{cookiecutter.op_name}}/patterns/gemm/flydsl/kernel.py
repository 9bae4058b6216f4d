"""GEMM kernel in FlyDSL for AMD CDNA3 (gfx942) and CDNA4 (gfx950): C = A . B^T on the matrix cores (MFMA).

A compute-bound kernel: each 256-lane workgroup (4 waves, 2 x 2 over the tile) owns a 256 x 128 tile of C
(64 x 64 when big tiles would leave CUs idle) and walks K 64 at a time. Operands go HBM -> VGPRs with
128-bit buffer loads, VGPRs -> LDS into XOR-swizzled tiles (no bank conflicts, no padding), LDS -> VGPRs
as MFMA operands; the next K tile's loads are in flight while the MFMAs work on the current one. The
operands are swapped (B rows feed MFMA's X) so each lane ends with 8 consecutive columns of one C row:
one 16-byte store, no LDS round trip. Edges never pad: out-of-range chunks get an offset past the buffer
descriptor's num_records, so loads read 0 and stores are dropped; the tile order is renumbered per XCD.
The same tile loop serves fp8 e4m3 (a K tile of 128 one-byte elements: the same 128-byte LDS rows) and the
user's own epilogue (op "lowered": lowered.compute on the fp32 accumulators before the stores).

What it computes
    out[M, N] = a[M, K] @ b[N, K].T (nn.Linear, ``a @ b.T``): both operands K-major (row-major A [M, K] and
    B [N, K]), bf16 or fp16; the products are accumulated in fp32 by the matrix cores (MFMA) and C [M, N]
    (row-major) is rounded once (round-to-nearest-even) to the input dtype. Any M, N >= 1 and any K >= 1 with
    K * 2 bytes a multiple of 16 (K % 8 == 0), every tensor 16-byte aligned and under 2 GiB. Every performance number
    below is arithmetic from datasheet peaks, not a timing.
    fp8 (op.json dtype "fp8"): C [M, N] bf16 = scale_a * scale_b * (a @ b.T), a and b e4m3 with K % 16 == 0, the
    two per-tensor fp32 scales applied to the fp32 accumulators (section "fp8 e4m3").
    op "lowered": C = lowered.compute(acc, *epilogue inputs) (section "Your own epilogue").

Why this shape (roofline, peaks from reference/gpu_specs.json)
    gfx942 (MI300X): 304 CUs, 1307 dense bf16/fp16 TFLOP/s, 5.3 TB/s HBM3: ridge point 1307 / 5.3 = 247 FLOP/B.
    8192^3 does 2*M*N*K = 1.1 PFLOP on 3 x 128 MiB: 2731 FLOP/byte, 11x right of the ridge; 4096^3 1365, the
    LLM shapes ~1500-1900: compute-bound, so the job is to keep every SIMD's MFMA pipe busy. Per CU that is
    1307 / 304 = 4.3 TFLOP/s = 2048 FLOP/clk at 2.1 GHz = one 16x16x16 MFMA (8192 FLOP) every 16 clk per SIMD.
    What feeds it, per workgroup tile TM x TN and each 64-deep K step: (TM + TN) * 64 * 2 bytes come from
    L2 / Infinity Cache for 2 * TM * TN * 64 FLOP, i.e. TM*TN/(TM+TN) FLOP/byte:
        128 x 128 ->  64 FLOP/B -> 67 GB/s per CU, 20.4 TB/s over 304 CUs
        256 x 128 ->  85 FLOP/B -> 50 GB/s per CU, 15.3 TB/s          <- this kernel
        256 x 256 -> 128 FLOP/B -> 34 GB/s per CU, 10.2 TB/s
    against ~34 TB/s of L2 (8 XCDs x 16 channels x 128 B/clk at 2.1 GHz) and ~17 TB/s of Infinity Cache.
    256 x 256 would need less, but (a) its A+B tile is 64 KiB, all of gfx942's LDS, (b) its accumulators are
    256 fp32 registers per lane, the whole arch-VGPR file of a wave before any operand or address (it spills),
    and (c) it quantizes worse on 304 CUs: 8192^3 makes 1024 tiles = 3.37 waves (the last one 37%
    full: 84% of the CU-slots busy) where 256 x 128 makes 2048 = 6.74 waves (96%); 4096^3 is 84% either way
    (256 vs 512 tiles), 4096x14336x4096 98%. gfx950 (MI355X): 256 CUs, 2517 dense TFLOP/s, 8 TB/s (ridge ~315
    FLOP/B); the same 256 x 128 tile gives 512 / 2048 / 1792 tiles = exactly 2 / 8 / 7 waves.
    Skinny M (16/64/128 x 8192 x 8192) is memory-bound instead (~16-124 FLOP/B; B alone is 128 MiB = 25 us
    at 5.3 TB/s): 256 x 128 tiles would give 32-64 workgroups for 304 CUs, so choose_config switches to
    64 x 64 tiles whenever the big tiles make less than one wave over op.json's compute_units (M = 16/64:
    128 workgroups, M = 128: 256).

CDNA facts it rests on (contrast: the CuTe DSL cell for Hopper)
    - Waves are 64 lanes (a CUDA warp is 32). A CU has 4 SIMDs; the 256-thread workgroup is 4 waves, one per
      SIMD. The CU count comes from op.json (compile_only, describe) or from the device (run).
    - No TMA and no asynchronous MMA from shared memory. Each lane computes its own buffer offsets; MFMA
      reads its operands from VGPRs, so the data goes HBM -> VGPRs -> LDS -> VGPRs -> MFMA (the Hopper cell:
      TMA -> SMEM -> wgmma). No mbarriers or clusters: a workgroup-wide s_barrier orders LDS reuse, and
      there is no multicast (the L2 serves the re-reads).
    - LDS per CU: 64 KiB on gfx942, 160 KiB on gfx950 (Hopper: 228 KiB of SMEM per SM). One 256 x 128 x 64
      stage is (256 + 128) * 64 * 2 B = 48 KiB, so it gets ONE LDS stage and the next K tile waits in VGPRs;
      the 64 x 64 tile (16 KiB a stage) gets two. The cell plans with gfx942's 64 KiB on both targets
      (LDS_BUDGET): gfx950 could hold two 256 x 128 stages (96 KiB, Config(stages=2)), the first variant to
      time there. 1 workgroup per CU.
    - Registers: 512 per lane per SIMD, shared between arch VGPRs and accumulation VGPRs (AGPRs); waves per
      SIMD = 512 / (VGPRs per lane), at most 8. The 256 x 128 tile holds 128 fp32 accumulators per lane plus
      a prefetched K tile (12 x 16 B) and the MFMA operands: over 256 registers, so 1 wave per SIMD, matching
      the one workgroup per CU that its LDS allows; the 64 x 64 tile needs about a third of that. The compiled
      counts (arch VGPRs, AGPRs, spills) are in benchmarks/flydsl_compile.md.
    - MFMA shapes used: gfx942 v_mfma_f32_16x16x16_bf16 / _f16 (LLVM intrinsic 16x16x16bf16_1k); gfx950
      v_mfma_f32_16x16x32_bf16 / _f16 (CDNA4 doubles K per instruction). The 32x32x8 (gfx942) / 32x32x16
      (gfx950) forms would also do; 16x16 keeps the result lane map (4 values per lane) simple. fp8: gfx942
      v_mfma_f32_16x16x32_fp8_fp8, gfx950 v_mfma_scale_f32_16x16x128_f8f6f4 (below); every 16x16 MFMA has the
      same result lane map, so the epilogue is one code for all of them.
    - Buffer loads: a 128-bit resource descriptor (base, num_records = tensor bytes, format flags) in 4
      SGPRs plus a 32-bit per-lane byte offset; the hardware checks every access against num_records:
      out-of-range loads return 0 and out-of-range stores are dropped. That bound is the WHOLE tensor, so a
      K tail or an N edge inside the tensor would read the next row: the kernel masks explicitly (below).
    - 8 XCDs (chiplets) on MI300X and MI355X, each with its own 4 MiB L2; the dispatcher hands workgroup i
      to XCD i % 8, so the tile order is renumbered (xcd_remap) to give each XCD one contiguous run of
      neighbouring tiles, grouped 8 tile rows at a time (raster) like the Hopper cell's group_m.

Tiling and thread/value layout (256 x 128 x 64 tile; the 64 x 64 tile is the same with 32 x 32 per wave)
            N: 128 = 2 waves x 64
         +---------+---------+     wave w: rows (w // 2) * 128 .., columns (w % 2) * 64 ..
      M  | wave 0  | wave 1  |     each wave: 8 MFMA rows of 16 x 2 column pairs of 32
     256 +---------+---------+              = 8 x 4 MFMA tiles of 16 x 16 = 32 accumulators of 4 fp32
         | wave 2  | wave 3  |                (128 fp32 per lane)
         +---------+---------+
    MFMA lane map (FlyDSL's CDNA3 MFMA TV layout): lane l = 16 g + i (g = l // 16, i = l % 16). Operand X: lane
    l holds row i, K values KPT*g .. KPT*g + KPT-1 (KPT = 4 on 16x16x16, 8 on 16x16x32); operand Y: column i,
    the same K values; result: lane l, register r = D[4 g + r][i]. The kernel feeds X = rows of B and Y = rows
    of A, so D is a tile of C^T and each lane holds 4 consecutive N of one C row. For the 16 N rows of MFMA
    tile t (0, 1) of column pair p the kernel picks B rows n(t, i) = 32 p + 8 (i // 4) + 4 t + i % 4, so lane
    (g, i) ends with C[m + i][32 p + 8 g + 0 .. 7] over t = 0, 1: 8 consecutive bf16 = ONE 16-byte store.
    K: each 32-deep step, lane group g reads K values 8 g .. 8 g + 7 of the step with one ds_read_b128 per
    MFMA row / column. gfx950 feeds them to one 16x16x32; gfx942 splits them into two 16x16x16 (K 8g..8g+3,
    then 8g+4..8g+7). The same lane -> K mapping on both operands is all a dot product needs.

Data movement and pipeline (per K tile of 64)
    global -> VGPR: thread t loads 16-byte chunk t % 8 of tile rows t // 8 + 32 q: 8 buffer_load_dwordx4 for
      A and 4 for B per K tile; a wave reads 8 whole 128-byte rows per instruction (coalesced).
    VGPR -> LDS: ds_write_b128 into [rows][64] tiles; LDS -> VGPR: ds_read_b128 (12 per wave per 32-K step).
    one LDS stage (256x128):  load(0); write; barrier; for kt: [load(kt+1) -> VGPRs; MFMAs on LDS; barrier;
                              write VGPRs -> LDS; barrier]; MFMAs on the last tile.
    two LDS stages (64x64):   the same, but tile kt+1 goes to the other buffer (its last readers passed the
                              previous barrier), so one barrier per K tile and the LDS writes overlap the MFMAs.
    Either way the next tile's global loads are in flight during a whole tile of MFMAs (2048 clk on gfx942,
    ~1 us). LDS traffic on gfx942: 48 KiB of ds_read per 32-K step (1024 clk of MFMA) + 48 KiB of ds_write
    per tile = ~72 of the 128 B/clk a CU's LDS delivers. Epilogue: fp32 -> dtype in registers, 16 stores of
    16 bytes per lane straight to HBM (no LDS round trip: the operand swap above did the transposition).

LDS bank conflicts: XOR swizzle
    A tile row is 64 elements = 128 bytes = the 32 banks x 4 bytes once, so the 8 16-byte chunks of a row
    each own 4 banks; on the usual model ds_read_b128 / ds_write_b128 serve 8 lanes (128 bytes) per cycle,
    which must hit 8 different chunk slots (the analysis assumes gfx942's 32 banks).
    Chunk c of row r is stored in slot c ^ (r % 8) ^ 4 * ((r // 8) % 2):
    - ds_write: 8 lanes write the 8 chunks of one row -> 8 slots.
    - ds_read of A: 8 lanes read one chunk of 8 consecutive rows -> r % 8 differs -> 8 slots.
    - ds_read of B: the 8 lanes read rows 32p + 4t + {0..3} and 32p + 8 + 4t + {0..3}; r % 8 repeats, the
      (r // 8) % 2 term moves the second four to the other half -> 8 slots (a plain r % 8 swizzle is 2-way).
    Checked for every access by a lane-level numpy re-trace of this index math (benchmarks/models/
    gemm_flydsl.py, see Verification); no padding, so LDS is exactly 48 KiB (256 x 128) / 32 KiB (64 x 64).

Boundary handling (no padding; any M, N; K % 8 == 0)
    - Loads: a chunk is valid iff its row < M (A) / < N (B) and its K column < K. K % 8 == 0, so a 16-byte
      chunk is all valid or all invalid. An invalid chunk's byte offset is replaced by 0x80000000, past
      num_records of any tensor under 2 GiB, so the hardware returns zeros without touching memory. Zeros
      only ever meet zeros (K tail: both operands are zero) or land in rows / columns that are not stored.
    - Stores, N % 8 == 0: the 16-byte chunk (row, col .. col + 7), col % 8 == 0, is stored iff row < M and
      col < N (then all 8 columns are < N); otherwise its offset becomes 0x80000000 and the store is dropped,
      so nothing spills into the next row.
    - Stores, N % 8 != 0: C rows are no longer 16-byte aligned, so a second compiled variant (tag "_st16")
      stores the 8 values as 8 two-byte buffer_store_short, each kept iff row < M and col + e < N.
    Walk-throughs: 129x8x8 -> 64 x 64 tiles, 3 workgroups, 1 K tile: only K chunk 0 is loaded (chunks 1-7 are
    K >= 8 -> zeros), B rows >= 8 zeros, A rows >= 129 of the last workgroup zeros; the only stored chunk per
    row is col 0 (N = 8, dwordx4 path). 1x4096x4096 -> 64 workgroups, only A row 0 is read and only lanes with
    row 0 store. 1000x1000x64 -> 256 workgroups; the last tile row/column keeps rows/cols < 1000 (1000 % 8 == 0:
    dwordx4 stores, chunk 992..999 kept, 1000.. dropped). 4095x4097x4096 -> 528 256x128 workgroups with the
    _st16 epilogue; the last column tile holds one real column (4096). 16x8192x8192 -> 128 workgroups, 48 of
    every 64 A rows are zero-filled (no memory traffic), 128 K tiles.

fp8 e4m3 (op.json dtype "fp8"): two formats, one per target
    Both are 1 sign, 4 exponent, 3 mantissa bits, but they read the same byte differently:
        gfx942 (CDNA3, MI300X/MI308X): e4m3 "FNUZ", torch.float8_e4m3fnuz: exponent bias 8, max 240, no -0 and
            no infinities; the one NaN is 0x80 (the bit pattern of -0 elsewhere).
        gfx950 (CDNA4, MI355X): OCP e4m3 ("FN"), torch.float8_e4m3fn (also Hopper's): bias 7, max 448, +-0, no
            infinities, NaN = S.1111.111.
    So the same byte is worth half as much on gfx942 (0x38 = 0.5 there, 1.0 on gfx950): the MFMA of each target
    reads only its own format, and run() refuses the other one (FP8_FORMAT; host.fp8_format) instead of
    computing with it. A gfx942 workspace expects float8_e4m3fnuz inputs, a gfx950 one float8_e4m3fn.
    Tile: K tile = 128 elements = the same 128-byte LDS rows, 16-byte chunks, XOR swizzle, dwordx4 loads and
    ds_read_b128 as the 16-bit types, so everything above holds byte for byte; per K tile a workgroup moves
    (256 + 128) * 128 bytes for 2 * 256 * 128 * 128 FLOP = 170 FLOP/byte, twice the 16-bit tile's, which is
    what the doubled fp8 MFMA rate needs (MI300X 2615 dense fp8 TFLOP/s, MI355X 5033): the L2 and LDS bytes
    per clock stay those of the bf16 kernel. MFMAs, per lane and 16-byte LDS chunk (16 K-values):
        gfx942: two v_mfma_f32_16x16x32_fp8_fp8 (8 K-values, one i64 per operand), 16 clk each at the peak.
        gfx950: v_mfma_scale_f32_16x16x128_f8f6f4 takes 32 K-values per lane (8 dwords): the lane's two chunks
            of the tile (K bytes 16g .. 16g + 15 and 64 + 16g ..) in one instruction, format 0 (e4m3) for both
            operands and both E8M0 block scales 127 = 2^0, i.e. the plain product (FlyDSL 0.4.2 exposes only
            the scaled form; LLVM keeps it: the ISA shows v_mfma_scale_...). gfx950 also has 16x16x32_fp8_fp8,
            at a quarter of the K per instruction; FlyDSL's own gfx950 fp8 GEMMs use the f8f6f4 form too.
    Any K permutation applied to both operands leaves a dot product unchanged, which is why only "the same K
    positions in both operands" matters, not which lane holds which K. Scales: scale_a and scale_b (fp32, one
    element each, on the GPU: read by the kernel, never by the host) are loaded once per lane and multiply the
    fp32 accumulators before anything else in the epilogue; C is rounded once to bf16.

Your own epilogue: the lowered path (op.json "op": "lowered", tests/lowered_examples/CONTRACT_GEMM.md)
    The template traces the user's function into lowered.py: HEAD = "matmul" (this tile loop), INPUTS with
    KINDS ("a", "b", then "row" [M, N] | "vector" [N] | "per_row" [M] or [M, 1]), one "row" output and compute(acc,
    *epilogue values, n, reduce). The epilogue keeps the store layout: lane (g, i) holds C[row, col .. col + 7]
    per (M tile t, column pair p), so it calls compute once per such chunk with 8-wide fp32 vectors: the
    accumulators (times scale_a * scale_b for fp8), a "row" input's [row, col .. col + 7] (one 16-byte load),
    a "vector" input's [col .. col + 7] (loaded once per column pair, before the tile loop's stores), a
    "per_row" input's [row] (once per M tile, broadcast). The result is rounded to C's dtype (OUT_DTYPES:
    a's, bf16 for fp8, or fp32: two dwordx4) and stored as above. Out of range: the 16-byte loads take the
    stores' rule (a chunk with row >= M or col >= N gets offset 0x80000000: not read); when N % 8 != 0 (the
    _st16 variant) every epilogue element is one load at its own offset, kept iff row < M and its col < N.
    epilogue_kernel has flydsl_lowered.SLOTS tensor slots (A, B, the epilogue inputs, [scale_a, scale_b,] C)
    and the lowered.py hash as a Constexpr; the built-in matmul_kernel is compiled from the same tile loop and
    its ISA is unchanged by all of this.

Verification: compiled to gfx942/gfx950 ISA on a CPU (MFMA, dwordx4 buffer loads, ds_read/ds_write, no
scratch, no spills); it has not run on AMD hardware. The index math above (offsets, OOB redirects, swizzle,
MFMA lane maps, epilogue, tile renumbering) is re-traced lane by lane in numpy by benchmarks/models/
gemm_flydsl.py in the template repository, for boundary cases with exact integer inputs: C matches exactly,
every C element is written exactly once, and no LDS access has a bank conflict. That checks the arithmetic,
not the compiler or the hardware. Host side: argument checks from host.py, op.json, the targets and
compile-only from flydsl_runtime.py.

Interface (the same in every kbaseline cell):
    run(a, b, out=None)         -> out         a [M,K], b [N,K] contiguous ROCm bf16/fp16; out [M,N]; compiles once
                                               per (Config, dtype), prepares a launch once per argument signature.
    run(a, b, scale_a, scale_b, out=None)      fp8: a, b of the target's e4m3; C bf16
    run(*lowered.INPUTS, out=None)             op "lowered" (fp8 too: INPUTS, then scale_a, scale_b)
    compile_only(case, out_dir) -> ISA text    compile the config run() picks for `case` on op.json's target
                                               (gfx942 | gfx950) with no GPU, in a child process
                                               (flydsl_runtime.py, tools/rocm_env.py); writes
                                               kernel_<matmul | lowered>_<dtype>_<tile tag>.<gfx>.s
    describe(case)              -> dict         tile, stages, LDS bytes, threads, grid, for the report
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import SimpleNamespace

import flydsl.compiler as flyc
import flydsl.expr as fx
import flydsl_lowered as lw
import flydsl_runtime as rt
import host
from flydsl.expr import const_expr, range_constexpr, rocdl
from flydsl.runtime.device import get_rocm_arch
from flydsl_runtime import COMPUTE_UNITS, MAX_BYTES, WAVE, target

OP_SPEC = host.OP
OP = OP_SPEC["op"]
DTYPE = OP_SPEC.get("dtype")

THREADS = 256  # 4 waves of 64 lanes, arranged 2 (M) x 2 (N) over the tile
ROW_BYTES = 128  # one LDS row of a tile = the 32 banks x 4 bytes: 64 bf16/fp16 or 128 fp8 of K
ACCESS = 16  # bytes per access (dwordx4 buffer load, ds_write_b128, ds_read_b128, dwordx4 store)
TILE_K = ROW_BYTES // 2  # 64: the K tile of bf16/fp16 (fp8: ROW_BYTES = 128, see Config.tile_k)
CHUNK = ACCESS // 2  # 8 bf16/fp16 per 16-byte access; also the C columns a lane holds per column pair
OOB = -(2**31)  # byte offset 0x80000000: past num_records of any tensor < 2 GiB -> load reads 0, store dropped
LDS_BYTES = {"gfx942": 65536, "gfx950": 163840}  # per CU
LDS_BUDGET = 65536  # what this cell plans with on both targets (gfx942's LDS); see the docstring
NUM_XCDS = 8  # chiplets; the dispatcher hands workgroup i to XCD i % 8 (each XCD has its own L2)
FP8_FORMAT = {"gfx942": "float8_e4m3fnuz", "gfx950": "float8_e4m3fn"}  # the e4m3 each target's MFMA reads
E8M0_ONE = 127  # the E8M0 block scale 2^0: gfx950's scaled fp8 MFMA with both scales 1 is the plain product


@dataclass(frozen=True)
class Config:
    """Static configuration: one compiled kernel per (Config, dtype, arch)."""

    tile_m: int = 256
    tile_n: int = 128
    stages: int = 1  # LDS buffers: 1 = prefetch the next K tile into VGPRs only; 2 = also double-buffer LDS
    vec_store: bool = True  # N % 8 == 0: 16-byte C stores; otherwise one 2-byte store per element
    group_m: int = 8  # tile raster: groups of group_m tile rows, for L2 reuse
    elem_bytes: int = 2  # bytes of an A/B element: 2 (bf16, fp16) or 1 (fp8); the K tile is one LDS row of them

    @property
    def tile_k(self) -> int:
        return ROW_BYTES // self.elem_bytes

    @property
    def stage_bytes(self) -> int:
        return (self.tile_m + self.tile_n) * ROW_BYTES

    @property
    def lds_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def tag(self) -> str:
        return f"{self.tile_m}x{self.tile_n}x{self.tile_k}_s{self.stages}" + ("" if self.vec_store else "_st16")


def stages_for(tile_m: int, tile_n: int, arch: str) -> int:
    """Two LDS buffers when they fit the LDS budget, else one (256 x 128: one; 64 x 64: two)."""
    return 2 if 2 * (tile_m + tile_n) * ROW_BYTES <= min(LDS_BYTES[arch], LDS_BUDGET) else 1


DEFAULT_TILE = (256, 128)
SMALL_TILE = (64, 64)


def big_tiles(m: int, n: int, cus: int) -> bool:
    """Whether 256x128 tiles make at least one full wave of workgroups over `cus` compute units."""
    return -(-m // DEFAULT_TILE[0]) * -(-n // DEFAULT_TILE[1]) >= cus


def config_for(big: bool, vec_store: bool, arch: str, elem_bytes: int = 2) -> Config:
    """The Config of one choice: 256x128 tiles (big) or 64x64, 16-byte C stores (N % 8 == 0) or 2-byte ones."""
    tm, tn = DEFAULT_TILE if big else SMALL_TILE
    return Config(tile_m=tm, tile_n=tn, stages=stages_for(tm, tn, arch), vec_store=vec_store, elem_bytes=elem_bytes)


def choose_config(m: int, n: int, arch: str, cus: int | None = None, elem_bytes: int = 2) -> Config:
    """256x128 tiles when they make at least one full wave of workgroups over the CUs; otherwise (skinny M,
    small problems: memory-bound) 64x64 tiles, so that more CUs stream their share of the operands."""
    return config_for(big_tiles(m, n, cus or COMPUTE_UNITS), n % CHUNK == 0, arch, elem_bytes)


# ---------------------------------------------------------------- index math (plain ints or fx.Int32)


def lds_swizzle(row):
    """XOR key (0..7) of the 16-byte chunks of LDS row `row`: chunk c is stored at slot c ^ key."""
    return (row & 7) ^ (((row >> 3) & 1) * 4)


def lds_offset(row, chunk, elem_bytes: int = 2):
    """Element offset of 16-byte chunk `chunk` (0..7) of row `row` in a [rows, 128 bytes] LDS tile."""
    return row * (ROW_BYTES // elem_bytes) + (chunk ^ lds_swizzle(row)) * (ACCESS // elem_bytes)


def b_tile_row(p, t, i):
    """Row of the B tile (an N index) that MFMA row i (0..15) of N-subtile t (0, 1) of column pair p reads.
    Chosen so that lane group g of the MFMA result holds columns 32p + 8g .. 32p + 8g + 7 (t = 0: +0..3,
    t = 1: +4..7): 8 consecutive columns per lane, one 16-byte store."""
    return 32 * p + 8 * (i >> 2) + 4 * t + (i & 3)


def xcd_remap(pid, total):
    """Workgroup pid runs on XCD pid % 8; renumber so that each XCD works on one contiguous block of tiles
    (its L2 then sees neighbouring tiles). A bijection of 0..total-1."""
    per = (total + NUM_XCDS - 1) // NUM_XCDS
    tall = total - (per - 1) * NUM_XCDS  # XCDs that get `per` workgroups; the others get per - 1
    xcd = pid % NUM_XCDS
    local = pid // NUM_XCDS
    return xcd * per + local - _max0(xcd - tall)


def _max0(x):
    """max(x, 0) for a plain int or an fx.Int32."""
    return max(x, 0) if isinstance(x, int) else (x > 0).select(x, 0)


def raster(pid, tiles_m, tiles_n, group_m):
    """Tile index -> (tile row, tile column), walking groups of group_m tile rows column by column."""
    width = group_m * tiles_n
    group = pid // width
    first_m = group * group_m
    rows = tiles_m - first_m
    rows = min(rows, group_m) if isinstance(rows, int) else (rows < group_m).select(rows, group_m)
    r = pid - group * width
    return first_m + r % rows, r // rows


# ---------------------------------------------------------------- kernel: MFMAs


def _mfma(x, y, acc, wide: bool, dtype):
    """acc[i][j] += sum_k x[i][k] * y[k][j] over one MFMA tile (16 x 16 x 32 on gfx950, 16 x 16 x 16 on gfx942).

    x, y: this lane's 8 K-values of its MFMA row (x) / column (y), as vector<8 x dtype>. gfx942's 16x16x16
    instruction takes 4 K-values per lane, so the 8 are split into two instructions (same lane -> K mapping
    for both operands, hence the sum covers all 32 K-values of the lane groups exactly once)."""
    f32x4 = fx.Vector.make_type(4, fx.Float32)
    if wide:
        op = rocdl.mfma_f32_16x16x32_bf16 if dtype is fx.BFloat16 else rocdl.mfma_f32_16x16x32_f16
        return fx.Vector(op(f32x4, [x, y, acc, 0, 0, 0]))
    op = rocdl.mfma_f32_16x16x16bf16_1k if dtype is fx.BFloat16 else rocdl.mfma_f32_16x16x16f16
    as_ty = fx.Int16 if dtype is fx.BFloat16 else dtype  # the gfx942 bf16 intrinsic takes <4 x i16>
    for s in range(2):
        half = list(range(4 * s, 4 * s + 4))
        xs = x.shuffle(x, half).bitcast(as_ty)
        ys = y.shuffle(y, half).bitcast(as_ty)
        acc = fx.Vector(op(f32x4, [xs, ys, acc, 0, 0, 0]))
    return acc


def _mfma_fp8(xs, ys, acc, wide: bool):
    """acc += x . y over this lane's fp8 K-values: xs / ys are its 16-byte LDS chunks (16 e4m3 each) of its MFMA
    row (x, a B row) / column (y, an A row), the same K positions in both.

    gfx942: v_mfma_f32_16x16x32_fp8_fp8 takes 8 K-values (one i64) per lane, so each chunk is two instructions
    (FNUZ e4m3). gfx950: v_mfma_scale_f32_16x16x128_f8f6f4 (format 0 = OCP e4m3 for both operands, both E8M0
    scales 2^0) takes 32 K-values (8 dwords) per lane: the lane's two chunks of the tile in one instruction."""
    f32x4 = fx.Vector.make_type(4, fx.Float32)
    if wide:
        x = xs[0].shuffle(xs[1], list(range(2 * ACCESS))).bitcast(fx.Int32)
        y = ys[0].shuffle(ys[1], list(range(2 * ACCESS))).bitcast(fx.Int32)
        one = fx.Int32(E8M0_ONE)
        return fx.Vector(rocdl.mfma_scale_f32_16x16x128_f8f6f4(f32x4, [x, y, acc, 0, 0, 0, one, 0, one]))
    for x, y in zip(xs, ys):
        x64, y64 = x.bitcast(fx.Int64), y.bitcast(fx.Int64)
        for h in range(2):
            acc = fx.Vector(rocdl.mfma_f32_16x16x32_fp8_fp8(f32x4, [x64[h], y64[h], acc, 0, 0, 0]))
    return acc


# ---------------------------------------------------------------- kernel: the tile loop (every variant)


def _shared_storage(dtype, a_elems: int, b_elems: int):
    """The LDS struct of the A and B stages, 16-byte aligned (annotations built here: this module's
    `from __future__ import annotations` would leave them strings in a helper)."""
    return fx.struct(type("SharedStorage", (), {"__annotations__": {"a": fx.Array[dtype, a_elems, 16],
                                                                      "b": fx.Array[dtype, b_elems, 16]}}))


def _tile_loop(A, B, m, n, k, tile_m, tile_n, stages, group_m, epilogue_tensors):
    """One workgroup's C tile: the tile choice, the buffer resources, the LDS, and the K loop as three calls
    that every kernel body makes (FlyDSL rewrites `for kt in range(...)` into a dynamic scf.for only in a
    kernel's own body, so the loop statement itself lives there):

        tl = _tile_loop(...); acc, step = tl.start(), tl.step
        for kt in range(0, tl.k_tiles - 1):
            acc = step(acc, kt)   # not tl.step(...): the rewriter carries a name whose method is called
        acc = tl.finish(acc)

    Besides: what an epilogue needs (the tile origin, this lane's place in the MFMA result, the buffer resources
    of `epilogue_tensors`, made where the built-in kernel has always made C's)."""
    dtype = A.element_type
    eb = dtype.width // 8  # 2: bf16 / fp16; 1: fp8
    tile_k, chunk = ROW_BYTES // eb, ACCESS // eb  # K per tile, elements per 16-byte access
    wide = get_rocm_arch().startswith("gfx950")  # CDNA4's MFMA shapes (16x16x32 16-bit, 16x16x128 fp8)
    per_mfma = 2 if eb == 1 and wide else 1  # LDS chunks per MFMA operand (gfx950 fp8: 32 bytes per lane)
    wave_m, wave_n = tile_m // 2, tile_n // 2  # each wave: a (wave_m x wave_n) block of C
    mt, npairs = wave_m // 16, wave_n // 32  # MFMA tiles along M; pairs of 16-column MFMA tiles along N
    rows_per_load = THREADS // (ROW_BYTES // ACCESS)  # 32 tile rows per dwordx4 load instruction
    loads_a, loads_b = tile_m // rows_per_load, tile_n // rows_per_load
    a_elems, b_elems = tile_m * tile_k, tile_n * tile_k

    tid = fx.thread_idx.x
    lane, wave = tid & (WAVE - 1), tid >> 6
    g, i = lane >> 4, lane & 15  # MFMA lane group (K slice / result rows) and MFMA row / column
    wm, wn = wave >> 1, wave & 1

    # ---- which C tile: XCD-contiguous, grouped raster
    tiles_m = (m + tile_m - 1) // tile_m
    tiles_n = (n + tile_n - 1) // tile_n
    pid = xcd_remap(fx.block_idx.x, tiles_m * tiles_n)
    pid_m, pid_n = raster(pid, tiles_m, tiles_n, group_m)
    m0 = pid_m * tile_m
    n0 = pid_n * tile_n

    # ---- buffer resources: num_records = tensor bytes (hardware bound for the OOB offset below)
    rsrc_a = rocdl.get_buffer_rsrc(fx.get_iter(rocdl.make_buffer_tensor(A, max_size=False)))
    rsrc_b = rocdl.get_buffer_rsrc(fx.get_iter(rocdl.make_buffer_tensor(B, max_size=False)))
    rsrc_e = [rocdl.get_buffer_rsrc(fx.get_iter(rocdl.make_buffer_tensor(t, max_size=False)))
              for t in epilogue_tensors]
    zero = fx.as_ir_value(fx.Int32(0))

    smem = fx.SharedAllocator().allocate(_shared_storage(dtype, stages * a_elems, stages * b_elems))
    s_a = smem.a.peek().ptr
    s_b = smem.b.peek().ptr
    v_chunk = fx.Vector.make_type(chunk, dtype)
    i32x4 = fx.Vector.make_type(4, fx.Int32)

    # ---- global -> VGPR plan: thread tid loads chunk c_t of tile rows q * 32 + r_t (q = 0, 1, ...)
    r_t, c_t = tid >> 3, tid & 7
    a_rows = [q * rows_per_load + r_t for q in range(loads_a)]
    b_rows = [q * rows_per_load + r_t for q in range(loads_b)]
    row_bytes = k * eb
    a_base = [(m0 + r) * row_bytes + c_t * 16 for r in a_rows]
    b_base = [(n0 + r) * row_bytes + c_t * 16 for r in b_rows]
    a_ok = [m0 + r < m for r in a_rows]
    b_ok = [n0 + r < n for r in b_rows]

    def load_tile(kt):
        """K tile kt of A and B -> VGPRs (dwordx4 each). A chunk outside the matrix (row >= M / N, or
        K column >= K) gets byte offset 0x80000000, past num_records: the hardware returns zeros."""
        k_ok = kt * tile_k + c_t * chunk < k  # K * bytes % 16 == 0: a 16-byte chunk is all in or all out
        k_bytes = kt * ROW_BYTES
        regs = []
        for base, ok in zip(a_base, a_ok):
            off = (ok & k_ok).select(base + k_bytes, OOB)
            regs.append(rocdl.raw_ptr_buffer_load(i32x4, rsrc_a, off, zero))
        for base, ok in zip(b_base, b_ok):
            off = (ok & k_ok).select(base + k_bytes, OOB)
            regs.append(rocdl.raw_ptr_buffer_load(i32x4, rsrc_b, off, zero))
        return regs

    def store_tile(regs, stage):
        """VGPRs -> LDS buffer `stage` (ds_write_b128), XOR-swizzled chunks."""
        for q, r in enumerate(a_rows):
            fx.ptr_store(fx.Vector(regs[q]).bitcast(dtype), s_a + stage * a_elems + lds_offset(r, c_t, eb))
        for q, r in enumerate(b_rows):
            fx.ptr_store(fx.Vector(regs[loads_a + q]).bitcast(dtype),
                         s_b + stage * b_elems + lds_offset(r, c_t, eb))

    a_row = [wm * wave_m + 16 * t + i for t in range(mt)]  # A rows this lane feeds to the MFMAs
    b_row = [wn * wave_n + b_tile_row(p, t, i) for p in range(npairs) for t in range(2)]

    def mma(x, y, acc):
        return _mfma_fp8(x, y, acc, wide) if eb == 1 else _mfma(x[0], y[0], acc, wide, dtype)

    def compute_tile(acc, stage):
        """All MFMAs of one K tile (128 bytes of K) from LDS buffer `stage`: 2 steps of 64 bytes; lane group g
        reads 16-byte chunk 4 * step + g of each MFMA row / column (one ds_read_b128 each). gfx950 fp8 takes
        both steps' chunks in one MFMA, so it reads both, then multiplies."""
        for kk in fx.range_constexpr(2 // per_mfma):
            chunks = [4 * (per_mfma * kk + s) + g for s in range(per_mfma)]
            av = [[fx.ptr_load(s_a + stage * a_elems + lds_offset(r, c, eb), result_type=v_chunk) for c in chunks]
                  for r in a_row]
            bv = [[fx.ptr_load(s_b + stage * b_elems + lds_offset(r, c, eb), result_type=v_chunk) for c in chunks]
                  for r in b_row]
            # MFMA operand x = B rows (N), y = A rows (M): the result tile is C^T, so each lane ends up
            # holding 4 consecutive N columns of one C row (see b_tile_row for the 8-column pairing).
            acc = [mma(bv[j], av[t], acc[t * len(b_row) + j]) for t in range(mt) for j in range(len(b_row))]
        return acc

    # ---- the K loop's three parts; the kernel body runs them (see _tile_loop's docstring)
    def start():
        store_tile(load_tile(0), 0)
        fx.gpu.barrier()
        return [fx.Vector.from_elements([fx.Float32(0.0)] * 4, fx.Float32) for _ in range(mt * 2 * npairs)]

    def step(acc, kt):
        """K tile kt's MFMAs while tile kt + 1 goes HBM -> VGPRs -> LDS."""
        nxt = load_tile(kt + 1)
        if fx.const_expr(stages == 1):
            acc = compute_tile(acc, 0)
            fx.gpu.barrier()  # every wave is done reading the LDS tile
            store_tile(nxt, 0)
            fx.gpu.barrier()  # the next tile is in LDS
        else:
            acc = compute_tile(acc, kt & 1)
            store_tile(nxt, (kt + 1) & 1)  # the other buffer: last read before the previous barrier
            fx.gpu.barrier()
        return acc

    k_tiles = (k + tile_k - 1) // tile_k
    return SimpleNamespace(start=start, step=step, k_tiles=k_tiles,
                           finish=lambda acc: compute_tile(acc, 0 if stages == 1 else (k_tiles - 1) & 1),
                           m0=m0, n0=n0, wm=wm, wn=wn, wave_m=wave_m, wave_n=wave_n, g=g, i=i, mt=mt,
                           npairs=npairs, rsrc=rsrc_e, zero=zero)


# ---------------------------------------------------------------- kernel: epilogues


def _for_lane_chunks(acc, lane, m, body):
    """body(t, p, row, row_ok, col, values) for lane (g, i)'s C[row, col .. col + 7] of every (M tile t, column
    pair p): the 8 fp32 values of MFMA tiles 2p and 2p + 1 joined (b_tile_row). row / col may lie past M / N."""
    for t in range_constexpr(lane.mt):
        row = lane.m0 + lane.wm * lane.wave_m + 16 * t + lane.i
        row_ok = row < m
        for p in range_constexpr(lane.npairs):
            col = lane.n0 + lane.wn * lane.wave_n + 32 * p + 8 * lane.g
            lo, hi = acc[t * 2 * lane.npairs + 2 * p], acc[t * 2 * lane.npairs + 2 * p + 1]
            body(t, p, row, row_ok, col, lo.shuffle(hi, list(range(CHUNK))))


def _store_c(rsrc, values, dtype, row, col, row_ok, n, vec_store: bool, zero):
    """Round C[row, col .. col + 7] (8 fp32) to dtype and store it: 16-byte stores (N % 8 == 0: the chunk is all
    in or all out) or one store per element, each kept iff row < M and its column < N (others: offset OOB)."""
    out = values.to(dtype)
    eb = dtype.width // 8
    if const_expr(vec_store):
        if const_expr(eb == 2):
            off = (row_ok & (col < n)).select((row * n + col) * 2, OOB)
            rocdl.raw_ptr_buffer_store(fx.as_ir_value(out.bitcast(fx.Int32)), rsrc, fx.as_ir_value(off), zero)
        else:  # fp32 C: the 32 bytes as two dwordx4
            ok = row_ok & (col < n)
            words = out.bitcast(fx.Int32)
            for h in range_constexpr(2):
                off = ok.select((row * n + col) * 4 + ACCESS * h, OOB)
                rocdl.raw_ptr_buffer_store(fx.as_ir_value(words.shuffle(words, list(range(4 * h, 4 * h + 4)))),
                                           rsrc, fx.as_ir_value(off), zero)
    else:
        bits = out.bitcast(fx.Int16 if eb == 2 else fx.Int32)
        for e in range_constexpr(CHUNK):
            off = (row_ok & (col + e < n)).select((row * n + col + e) * eb, OOB)
            rocdl.raw_ptr_buffer_store(fx.as_ir_value(bits[e]), rsrc, fx.as_ir_value(off), zero)


def _load_cols(rsrc, dtype, first, ok, vec: bool, oks, zero):
    """Elements first .. first + 7 of a 1-D view of a tensor, as 8 fp32: 16-byte loads when vec (the 8 are all in
    or all out: `ok`), else one load per element (`oks[e]`); what is out of range is never read (offset OOB)."""
    eb = dtype.width // 8
    if const_expr(vec):
        i32x4 = fx.Vector.make_type(4, fx.Int32)
        parts = [fx.Vector(rocdl.raw_ptr_buffer_load(i32x4, rsrc, ok.select(first * eb + ACCESS * h, OOB), zero))
                 for h in range(CHUNK * eb // ACCESS)]
        words = parts[0] if len(parts) == 1 else parts[0].shuffle(parts[1], list(range(8)))
        return words.bitcast(dtype).to(fx.Float32)
    elems = [rocdl.raw_ptr_buffer_load(dtype.ir_type, rsrc, oks[e].select((first + e) * eb, OOB), zero)
             for e in range(CHUNK)]
    return fx.Vector.from_elements([dtype(v) for v in elems], dtype).to(fx.Float32)


def _load_scalar(rsrc, dtype, index, ok, zero):
    """Element `index` of a 1-D tensor as an fp32 scalar; when `ok` is false it is not read (0)."""
    off = index * (dtype.width // 8)
    if const_expr(ok is not None):
        off = ok.select(off, OOB)
    return dtype(rocdl.raw_ptr_buffer_load(dtype.ir_type, rsrc, off, zero)).to(fx.Float32)


def _epilogue(acc, lane, tensors, kinds, scaled: bool, lowered: bool, m, n, vec_store: bool):
    """C = compute(scale_a * scale_b * acc, *extras) per lane chunk, then the stores of _store_c.

    tensors: the epilogue inputs (KINDS[2:] order), then scale_a and scale_b when scaled, then C; lane.rsrc holds
    their buffer resources. Per kind, for C[row, col .. col + 7]: "row" residual[row, col ..] (16-byte loads, or
    one per element when N % 8 != 0), "vector" v[col ..] (loaded once per column pair), "per_row" v[row]
    (loaded once per M tile, broadcast)."""
    rs, zero = lane.rsrc, lane.zero
    dtypes = [t.element_type for t in tensors]
    nf = fx.Float32(n)
    scale = None
    if const_expr(scaled):
        scale = (_load_scalar(rs[len(kinds)], fx.Float32, fx.Int32(0), None, zero)
                 * _load_scalar(rs[len(kinds) + 1], fx.Float32, fx.Int32(0), None, zero))
    cols = {}  # (extra, pair) -> the 8 values of a "vector" extra, loaded once per column pair
    for x, kind in enumerate(kinds):
        if const_expr(kind == "vector"):
            for p in range_constexpr(lane.npairs):
                col = lane.n0 + lane.wn * lane.wave_n + 32 * p + 8 * lane.g
                cols[x, p] = _load_cols(rs[x], dtypes[x], col, col < n, vec_store,
                                        [col + e < n for e in range(CHUNK)], zero)
    rows = {}  # (extra, M tile) -> the fp32 scalar of a "per_row" extra, loaded once per M tile

    def chunk(t, p, row, row_ok, col, values):
        extras = []
        for x, kind in enumerate(kinds):
            if const_expr(kind == "row"):
                oks = [row_ok & (col + e < n) for e in range(CHUNK)]
                extras.append(_load_cols(rs[x], dtypes[x], row * n + col, row_ok & (col < n), vec_store, oks, zero))
            elif const_expr(kind == "vector"):
                extras.append(cols[x, p])
            else:
                if const_expr((x, t) not in rows):
                    rows[x, t] = _load_scalar(rs[x], dtypes[x], row, row_ok, zero)
                extras.append(fx.Vector.filled(values.shape, rows[x, t], fx.Float32))
        if const_expr(scaled):
            values = values * scale
        if const_expr(lowered):
            (values,) = lw.compute([values, *extras], nf, None)
        _store_c(rs[-1], values, dtypes[-1], row, col, row_ok, n, vec_store, zero)

    _for_lane_chunks(acc, lane, m, chunk)


# ---------------------------------------------------------------- kernels and launchers


@flyc.kernel
def matmul_kernel(
    A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, m: fx.Int32, n: fx.Int32, k: fx.Int32,
    tile_m: fx.Constexpr[int], tile_n: fx.Constexpr[int], stages: fx.Constexpr[int],
    vec_store: fx.Constexpr[bool], group_m: fx.Constexpr[int],
):
    """The built-in op: C = A . B^T, bf16 / fp16 in and out."""
    lane = _tile_loop(A, B, m, n, k, tile_m, tile_n, stages, group_m, [C])
    acc, step = lane.start(), lane.step  # a plain name: a method call in the loop would make `lane` loop state
    for kt in range(0, lane.k_tiles - 1):
        acc = step(acc, kt)
    acc = lane.finish(acc)
    _for_lane_chunks(acc, lane, m, lambda t, p, row, row_ok, col, values: _store_c(
        lane.rsrc[0], values, A.element_type, row, col, row_ok, n, vec_store, lane.zero))


@flyc.jit
def matmul_launch(
    A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, m: fx.Int32, n: fx.Int32, k: fx.Int32,
    tile_m: fx.Constexpr[int], tile_n: fx.Constexpr[int], stages: fx.Constexpr[int],
    vec_store: fx.Constexpr[bool], group_m: fx.Constexpr[int],
    stream: fx.Stream = fx.Stream(None),
):
    """Host side: one workgroup of 256 lanes per (tile_m x tile_n) tile of C."""
    tiles = ((m + tile_m - 1) // tile_m) * ((n + tile_n - 1) // tile_n)
    matmul_kernel(A, B, C, m, n, k, tile_m, tile_n, stages, vec_store, group_m).launch(
        grid=(tiles, 1, 1), block=(THREADS, 1, 1), stream=stream,
    )


def _epilogue_kinds(key: str) -> tuple:
    """The epilogue inputs' kinds: lowered.KINDS[2:] for a lowered op (key = its hash), none for fp8's matmul."""
    return lw.facts().kinds[2:] if key else ()


@flyc.kernel
def epilogue_kernel(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, m: fx.Int32, n: fx.Int32, k: fx.Int32,
    tile_m: fx.Constexpr[int], tile_n: fx.Constexpr[int], stages: fx.Constexpr[int],
    vec_store: fx.Constexpr[bool], group_m: fx.Constexpr[int], scaled: fx.Constexpr[bool], key: fx.Constexpr[str],
):
    """fp8 and/or a lowered epilogue: slots A, B, the epilogue inputs, [scale_a, scale_b,] C (then unused)."""
    kinds = _epilogue_kinds(key)
    tensors = [T0, T1, T2, T3, T4, T5, T6, T7][2:2 + len(kinds) + (2 if scaled else 0) + 1]
    lane = _tile_loop(T0, T1, m, n, k, tile_m, tile_n, stages, group_m, tensors)
    acc, step = lane.start(), lane.step  # a plain name: a method call in the loop would make `lane` loop state
    for kt in range(0, lane.k_tiles - 1):
        acc = step(acc, kt)
    acc = lane.finish(acc)
    _epilogue(acc, lane, tensors, kinds, scaled, bool(key), m, n, vec_store)


@flyc.jit
def epilogue_launch(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, m: fx.Int32, n: fx.Int32, k: fx.Int32,
    tile_m: fx.Constexpr[int], tile_n: fx.Constexpr[int], stages: fx.Constexpr[int],
    vec_store: fx.Constexpr[bool], group_m: fx.Constexpr[int], scaled: fx.Constexpr[bool], key: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """Host side of epilogue_kernel: the same grid as matmul_launch."""
    tiles = ((m + tile_m - 1) // tile_m) * ((n + tile_n - 1) // tile_n)
    epilogue_kernel(T0, T1, T2, T3, T4, T5, T6, T7, m, n, k, tile_m, tile_n, stages, vec_store, group_m, scaled,
                    key).launch(grid=(tiles, 1, 1), block=(THREADS, 1, 1), stream=stream)


# ---------------------------------------------------------------- host side


def _constexprs(cfg: Config) -> tuple:
    return cfg.tile_m, cfg.tile_n, cfg.stages, cfg.vec_store, cfg.group_m


def _epilogue_constexprs(cfg: Config, scaled: bool, key: str) -> tuple:
    return (*_constexprs(cfg), scaled, key)


_compiled: dict = {}  # (Config, dtypes[, scaled, key]) -> compiled launcher; M, N, K are runtime values
_launches: dict = {}  # run()'s signature (dtypes, devices, the config choice) -> rt.Launch


def _compile_args(dtype: str, cfg: Config) -> tuple:
    """What run() and compile_only compile: 1-D CPU placeholders for A, B, C, placeholder M, N, K (runtime values),
    then the constexprs of the config."""
    x = rt.placeholder(dtype, 64 * 64)
    return (x, x.clone(), x.clone(), 64, 64, 64, *_constexprs(cfg))


def _epilogue_compile_args(dtypes, cfg: Config, scaled: bool, key: str) -> tuple:
    """The same for epilogue_launch: placeholders of `dtypes` (torch names: A, B, the epilogue inputs, [scale_a,
    scale_b,] C) in the tensor slots."""
    return (*lw.slots([rt.placeholder(d, 64 * 64) for d in dtypes]), 64, 64, 64,
            *_epilogue_constexprs(cfg, scaled, key))


def _prepare(a, b, out, choice):
    """A signature's first call, or a refused one: host.py's checks, the 2 GiB limit, the config, the launch.

    `choice` is a Config (the caller's) or run()'s (big tiles, 16-byte stores) pair for this device's CUs.
    Its facts: the element count every tensor must stay under (2-byte elements, bytes under 2 GiB)."""
    dtype, m, n, k, out = host.matmul_dims(a, b, out, "dwordx4 buffer loads")
    if max(t.numel() * t.element_size() for t in (a, b, out)) >= MAX_BYTES:
        raise ValueError("matmul: every tensor must be under 2 GiB (32-bit buffer offsets)")
    if len({t.get_device() for t in (a, b, out)}) != 1:
        raise ValueError("matmul: a, b and out must be on one GPU")
    arch = rt.device_target("matmul")
    cfg = choice if isinstance(choice, Config) else config_for(*choice, arch)
    fn = rt.compiled(_compiled, (cfg, dtype), matmul_launch, lambda: _compile_args(dtype, cfg))
    return rt.Launch("matmul", fn, _constexprs(cfg), a.get_device(), MAX_BYTES // a.element_size())


def run(*inputs, out=None, cfg: Config | None = None):
    """out[M,N] = a[M,K] @ b[N,K].T on the current stream (bf16/fp16 in and out, fp32 accumulation); fp8 and a
    lowered op take their own inputs (see _run_epilogue).

    The hot path is the config choice (integer arithmetic on M, N and the device's CU count), a dict lookup,
    the checks FlyDSL's call does not make (shapes, K % 8, contiguity, alignment, the 2 GiB limit), 1-D views
    and the launch; see flydsl_runtime.py."""
    if EPILOGUE:
        return _run_epilogue(inputs, out, cfg)
    host.check_count("matmul", inputs, 2)
    a, b = inputs
    if a.dim() != 2 or b.dim() != 2:
        _prepare(a, b, out, cfg)  # raises, in host.py's words
    (m, k), n = a.shape, b.shape[0]
    if out is None:
        out = a.new_empty((m, n))
    device = a.get_device()
    choice = cfg or (big_tiles(m, n, rt.device_compute_units(device)), not n % CHUNK)
    signature = (a.dtype, b.dtype, out.dtype, device, b.get_device(), out.get_device(), choice)
    launch = _launches.get(signature)
    if launch is None:
        launch = _launches[signature] = _prepare(a, b, out, choice)
    limit = launch.facts
    if not (b.shape[1] == k and out.shape == (m, n) and 0 < m * k < limit and 0 < n * k < limit and m * n < limit
            and not k % CHUNK and a.is_contiguous() and b.is_contiguous() and out.is_contiguous()
            and not (a.data_ptr() | b.data_ptr() | out.data_ptr()) & 15):
        launch = _prepare(a, b, out, choice)  # raises, in host.py's words ...
        if not m * n * k:
            return out.zero_()  # ... unless M, N or K is 0: an empty product
    launch(a.view(-1), b.view(-1), out.view(-1), m, n, k)
    return out


# ---- fp8 and the lowered epilogue


EPILOGUE = OP == "lowered" or DTYPE == "fp8"  # run() goes through epilogue_kernel
SCALED = DTYPE == "fp8"


def _epilogue_spec():
    """(lowered module or None, the epilogue inputs' kinds, the hash key) of this workspace's epilogue."""
    if OP != "lowered":
        return None, (), ""
    f = lw.facts()
    return f.module, f.kinds[2:], f.key


def _prepare_epilogue(inputs, out, choice):
    """A signature's first call of the fp8 / lowered path, or a refused one: host.py's GEMM checks (the CuTe DSL
    cell's too), the 2 GiB limit, one GPU, the config and the launch.

    Its facts: (element limit per tensor, C's torch dtype)."""
    lowered, kinds, key = _epilogue_spec()
    name = lowered.SOURCE if lowered else "matmul"
    arch = rt.device_target(name)
    out, m, n = _check_epilogue_operands(name, lowered, kinds, inputs, out)
    tensors = (*inputs, out)
    if len(tensors) > lw.SLOTS:
        raise ValueError(f"{name}: {len(tensors)} tensors (inputs, scales, C) exceed the launcher's {lw.SLOTS} "
                         "tensor slots (flydsl_lowered.SLOTS)")
    lw.check_buffer_range(tensors)
    if len({t.get_device() for t in tensors}) != 1:
        raise ValueError(f"{name}: every tensor must be on one GPU")
    elem = inputs[0].element_size()
    cfg = choice if isinstance(choice, Config) else config_for(*choice, arch, elem)
    dtypes = tuple(str(t.dtype).removeprefix("torch.") for t in tensors)
    fn = rt.compiled(_compiled, (cfg, dtypes, SCALED, key), epilogue_launch,
                     lambda: _epilogue_compile_args(dtypes, cfg, SCALED, key))
    return rt.Launch(name, fn, _epilogue_constexprs(cfg, SCALED, key), inputs[0].get_device(),
                     (MAX_BYTES // max(t.element_size() for t in tensors), out.dtype))


def _check_epilogue_operands(name, lowered, kinds, inputs, out):
    """(C, M, N) once host.py's GEMM checks (the CuTe DSL cell's too) pass: the count, a and b (fp8: of this GPU's
    e4m3), C of OUT_DTYPES[0] ("input": a's dtype, bf16 for fp8; "fp32"), the epilogue inputs by KINDS, the
    scales."""
    import torch

    n_in = len(kinds) + 2
    host.check_count(name, inputs, n_in + 2 * SCALED)
    a, b = inputs[:2]
    if SCALED:
        host.fp8_format(name, (a, b), _torch_dtype(FP8_FORMAT[rt.device_target(name)]))
    else:  # an fp8 a in a bf16 / fp16 workspace has no scales to go with it
        host.dtype_of(a, name, ("bf16", "fp16"))
    like = torch.bfloat16 if SCALED else a.dtype
    c_dtype = torch.float32 if lowered and lowered.OUT_DTYPES[0] == "fp32" else like
    _, m, n, _, out = host.matmul_dims(a, b, out, "dwordx4 buffer loads", out_dtype=c_dtype)
    host.epilogue_operands(name, lowered.INPUTS[2:] if lowered else (), kinds, inputs[2:n_in], m, n, like, a.device)
    if SCALED:
        host.scale_operands(name, inputs[n_in:], a.device)
    return out, m, n


def _run_epilogue(inputs, out, cfg):
    """run(a, b, *epilogue inputs[, scale_a, scale_b], out=None): the inputs in lowered.INPUTS order (fp8's
    matmul: a, b, scale_a, scale_b; fp8 with a lowered op: INPUTS, then the two scales) -> C [M, N]."""
    lowered, kinds, _ = _epilogue_spec()
    if len(inputs) < 2 or inputs[0].dim() != 2 or inputs[1].dim() != 2:
        _prepare_epilogue(inputs, out, cfg)  # raises, in host.py's words
    a, b = inputs[0], inputs[1]
    (m, k), n = a.shape, b.shape[0]
    device = a.get_device()
    choice = cfg or (big_tiles(m, n, rt.device_compute_units(device)), not n % CHUNK)
    signature = (tuple((t.dtype, t.get_device()) for t in inputs), out is None or (out.dtype, out.get_device()),
                 choice)
    launch = _launches.get(signature)
    if launch is None:
        launch = _launches[signature] = _prepare_epilogue(inputs, out, choice)
    limit, c_dtype = launch.facts
    if out is None:
        out = a.new_empty((m, n), dtype=c_dtype)
    shapes = [host.sized(d, m, n) for d in host.epilogue_dims(lowered.INPUTS[2:] if lowered else ())]
    if not (len(inputs) == 2 + len(kinds) + 2 * SCALED and b.shape[1] == k and out.shape == (m, n)
            and 0 < m * k < limit and 0 < n * k < limit and 0 < m * n < limit and not (k * a.element_size()) % 16
            and all(t.shape == shape for t, shape in zip(inputs[2:], shapes))
            and all(t.is_contiguous() and not t.data_ptr() & 15 for t in (*inputs[:2 + len(kinds)], out))
            and all(t.numel() == 1 for t in inputs[2 + len(kinds):])):
        launch = _prepare_epilogue(inputs, out, choice)  # raises, in host.py's words ...
        if not m * n:
            return out  # ... unless C is empty
    launch(*lw.slots([t.view(-1) for t in (*inputs, out)]), m, n, k)
    return out


def _torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def _epilogue_dtypes(arch: str) -> list[str]:
    """The torch dtypes compile_only compiles the epilogue kernel for: A and B (op.json's dtype; fp8: the target's
    e4m3), each epilogue input in the epilogue dtype (A's, bf16 for fp8), the scales fp32, C per OUT_DTYPES."""
    lowered, kinds, _ = _epilogue_spec()
    ab = FP8_FORMAT[arch] if SCALED else {"bf16": "bfloat16", "fp16": "float16"}[DTYPE]
    like = "bfloat16" if SCALED else ab
    c = "float32" if lowered and lowered.OUT_DTYPES[0] == "fp32" else like
    return [ab, ab, *[like] * len(kinds), *["float32"] * (2 * SCALED), c]


def _case_dims(case: dict | None) -> tuple[int, int, int]:
    v = (case or {}).get("vars") or {}
    return int(v.get("M", 8192)), int(v.get("N", 8192)), int(v.get("K", 8192))


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", op: str = OP,
                 dtype: str | None = None, arch: str | None = None) -> str:
    """Compile the config run() would pick for `case` on `arch` (default op.json's target), with no GPU;
    write kernel_<op>_<dtype>_<tile tag>.<arch>.s under out_dir (op: matmul | lowered) and return the ISA text."""
    dtype = dtype or OP_SPEC["dtype"]
    arch = target(arch)
    m, n, _ = _case_dims(case)
    if op == "lowered" or dtype == "fp8":
        cfg = choose_config(m, n, arch, elem_bytes=1 if dtype == "fp8" else 2)
        _, _, key = _epilogue_spec()
        return rt.compile_isa(_emit_isa, f"{op}_{dtype}_{cfg.tag}",
                              ["epilogue", ",".join(_epilogue_dtypes(arch)), SCALED, key, *_constexprs(cfg),
                               cfg.elem_bytes], arch, out_dir)
    cfg = choose_config(m, n, arch)
    return rt.compile_isa(_emit_isa, f"{op}_{dtype}_{cfg.tag}", [dtype, *_constexprs(cfg)], arch, out_dir)


def _config(tile_m: str, tile_n: str, stages: str, vec_store: str, group_m: str, elem_bytes: str = "2") -> Config:
    return Config(tile_m=int(tile_m), tile_n=int(tile_n), stages=int(stages), vec_store=vec_store == "True",
                  group_m=int(group_m), elem_bytes=int(elem_bytes))


def _emit_isa(dtype: str, *args: str) -> None:
    """Child side of compile_only: compile what run() compiles for this config (COMPILE_ONLY: nothing launched)."""
    if dtype == "epilogue":
        dtypes, scaled, key, *cfg = args
        flyc.compile(epilogue_launch, *_epilogue_compile_args(dtypes.split(","), _config(*cfg), scaled == "True", key))
        return
    flyc.compile(matmul_launch, *_compile_args(dtype, _config(*args)))


def describe(case: dict) -> dict:
    """Launch configuration of a case, for the plan and the report."""
    m, n, k = _case_dims(case)
    arch = target()
    cfg = choose_config(m, n, arch, elem_bytes=1 if SCALED else 2)
    tiles = -(-m // cfg.tile_m) * -(-n // cfg.tile_n)
    lowered, kinds, _ = _epilogue_spec()
    if SCALED:
        mfma = "v_mfma_scale_f32_16x16x128_f8f6f4" if arch == "gfx950" else "v_mfma_f32_16x16x32_fp8_fp8"
    else:
        mfma = "v_mfma_f32_16x16x32" if arch == "gfx950" else "v_mfma_f32_16x16x16"
    store = ("buffer_store_dwordx4" if cfg.vec_store else "buffer_store_short") + " to HBM"
    steps = (["scale_a * scale_b (fp32)"] if SCALED else []) + (
        [f"lowered compute({', '.join(f'{name} ({kind})' for name, kind in zip(lowered.INPUTS[2:], kinds))})"]
        if lowered else [])
    return {
        "tile_mnk": [cfg.tile_m, cfg.tile_n, cfg.tile_k],
        "wave_tile_mn": [cfg.tile_m // 2, cfg.tile_n // 2],
        "stages": cfg.stages,
        "lds_bytes": cfg.lds_bytes,
        "tiles": tiles,
        "waves": round(tiles / COMPUTE_UNITS, 2),
        "k_tiles": -(-k // cfg.tile_k),
        "threads_per_cta": THREADS,
        "waves_per_workgroup": THREADS // WAVE,
        "grid": [tiles, 1, 1],
        "grid_blocks": tiles,
        "mfma": mfma,
        "c_store": "dwordx4" if cfg.vec_store else "2-byte (N % 8 != 0)",
        "data_movement": "HBM -> VGPRs (buffer_load_dwordx4, next K tile prefetched during the MFMAs) -> LDS "
        "(ds_write_b128, XOR swizzle) -> MFMA operands (ds_read_b128) -> fp32 accumulators -> "
        + "".join(f"{s} -> " for s in steps)
        + (f"epilogue inputs read by (row, col) ({'16-byte loads' if cfg.vec_store else 'one load per element'}) "
           "-> " if kinds else "") + store,
        **({"epilogue": steps} if steps else {}),
    }


if __name__ == "__main__":
    rt.child_main(_emit_isa)
