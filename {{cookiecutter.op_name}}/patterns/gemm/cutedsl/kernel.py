"""GEMM V0 kernel in CuTe DSL for Hopper (sm_90a): C[M,N] = A[M,K] . B[N,K]^T (nn.Linear, ``a @ b.T``).

A warp-specialised, persistent TMA + WGMMA kernel: 128x256x64 tiles on a grid of 2x1 CTA clusters that
multicast the shared B tile; one producer warpgroup streams A and B by TMA into a 4-stage mbarrier ring
in shared memory, two consumer warpgroups issue wgmma m64n256k16 from it into fp32 register
accumulators, and the epilogue goes registers -> stmatrix -> SMEM -> TMA store. Each cluster walks its
tiles in L2-friendly groups along M, so the producer prefetches the next tile during the epilogue.
Skinny, memory-bound problems switch regime (choose_config): 64-row tiles that spread B over every SM
(M <= 128); for M <= 64 the kernel computes C^T = B . A^T on 64-row tiles of B, so A's few rows pad an MMA of
16-64 columns instead of 64 rows (split over K when those tiles leave SMs idle); a CUDA-core GEMV for M <= 4.

What it computes
    Both operands are K-major (row-major A [M,K], row-major B [N,K]), bf16, fp16 or fp8 e4m3; the products
    are accumulated in fp32 registers and C [M,N] (row-major) is rounded once to the input dtype (bf16 for
    fp8). Any M, N, K >= 1 with K a multiple of 16 bytes of elements (the TMA row-stride rule) works: tiles
    that stick out of the matrix are zero-filled by TMA on the way in and clipped on the way out. Between
    the accumulators and the store runs an epilogue: fp8's per-tensor scales and/or the user's own pointwise
    function (see "Epilogue inputs" below); the built-in bf16/fp16 matmul has none, and its code is exactly
    what it was before epilogues existed.

Why this shape (roofline; worked with the H200's cited peaks: 989 TFLOP/s dense bf16, 4.8 TB/s, 132 SMs)
    8192^3 does 2*M*N*K = 1.1 PFLOP on 3 * 128 MiB of data: ~2700 FLOP/byte, far right of the ridge
    point (989 TFLOP/s / 4.8 TB/s ~ 206 FLOP/byte), so the kernel must keep the tensor cores fed and
    nothing else. Two bandwidths limit that:
    - shared memory -> tensor cores. One ``wgmma.mma_async`` m64nNk16 reads A (64x16) and B (Nx16)
      from SMEM. Per CTA tile TMxTN, each K-step of 64 reads (TM + TN) * 64 * 2 bytes for
      2 * TM * TN * 64 FLOP, i.e. TM*TN/(TM+TN) FLOP/byte: 128x128 -> 64, 128x256 -> 85. At 989 TFLOP/s
      / 132 SMs = 7.5 TFLOP/s per SM, 128x128 needs 117 GB/s of L2->SMEM per SM (15.4 TB/s in total),
      128x256 needs 88 GB/s per SM (11.6 TB/s), and 58 GB/s (7.7 TB/s) with the 2x1 multicast below:
      the larger tile is what lets the L2 keep up.
    - registers. A 128x256 fp32 accumulator is 128 KiB = 256 threads x 128 registers, so the tile is
      split over TWO consumer warpgroups (64x256 each, 128 accumulator registers per thread, 232
      registers allowed by ``setmaxnreg``); a 256x256 tile would need 4 warpgroups and spill.
    Tile = 128 x 256 x 64 (BK = 64 bf16 = 128 bytes = one 128-byte swizzle row, bank-conflict free).

Cluster 2x1 and TMA multicast
    The two CTAs of a cluster compute vertically adjacent tiles (same N column), so they need the same
    B tile. Each CTA loads half of it (128x64) and multicasts it to both SMEMs: L2->SMEM traffic per
    CTA per K-step drops from 16 KiB (A) + 32 KiB (B) = 48 KiB to 16 + 16 = 32 KiB (-33%).
    1x2 would share A (the smaller operand) and save only 8 KiB. With a single M tile the peer CTA
    would only compute an out-of-range tile, so those shapes use 1x1.

Stages from the 227 KB SMEM budget (232448 bytes per CTA)
    one stage = A 128x64x2 B (16 KiB) + B 256x64x2 B (32 KiB) = 48 KiB
    epilogue  = 4 buffers of a 128x32 C subtile x 2 B = 4 x 8 KiB = 32 KiB
    4 stages  = 192 KiB + 32 KiB + 1 KiB (mbarriers, 1024-byte alignment) = 225 KiB  <= 227 KiB
    5 stages would need 273 KiB. 4 stages keep 3 K-steps (3 x 64 x 2 x 128 x 256 = 12.6 MFLOP,
    ~1.7 us per SM at 7.5 TFLOP/s) of loads in flight, several times the ~1 us L2/HBM latency.
    One CTA per SM (occupancy 1): the persistent grid makes up for it.
    fp8 (e4m3, 1 byte): BK = 128 elements keeps the row at 128 bytes, so the same 128-byte swizzle and
    one stage = A 128x128x1 B (16 KiB) + B 256x128x1 B (32 KiB) = 48 KiB: 4 stages again next to the same
    bf16 C buffers (225 KiB). Each K-step is 4 x wgmma m64n256k32 (e4m3 x e4m3 -> fp32): twice bf16's
    FLOP per byte of SMEM, and against twice the tensor-core peak (1979 TFLOP/s dense fp8, 15 TFLOP/s per
    SM) the 3 K-steps in flight now cover ~1.7 us / 2 of loads, still above the L2/HBM latency.

Warp specialisation, pipeline (384 threads = 3 warpgroups)
    warpgroup 0 = producer. It gives registers away (``setmaxnreg.dec`` 40) and one warp issues the
        TMA loads (``cp.async.bulk.tensor``): wait "empty[s]", arm "full[s]" with the stage's byte
        count, load A and (multicast) B into stage s. TMA completes the bytes on full[s].
    warpgroups 1, 2 = consumers (``setmaxnreg.inc`` 232). Wait full[s], issue 4 x wgmma m64n256k16 from
        SMEM, commit, ``wgmma.wait_group 1`` (one K-step of MMAs stays in flight), then release the
        PREVIOUS stage: arrive on empty[s-1] of both CTAs of the cluster (the peer multicast into it).
    The stage ring is ``PipelineTmaAsync``: 2 x STAGES mbarriers with phase bits.

Persistent tile scheduler (written here: ``_tile_coords``)
    Grid = as many clusters as fit at once (the device is queried at run time; describe() assumes
    op.json's compute_units / 2: 66 clusters of 2 CTAs on 132 SMs); cluster c walks the cluster tiles
    c, c + 66, ... so the producer prefetches the next tile's K-steps while the consumers run the
    epilogue of the current one, and there is no launch tail per tile. Tiles are ordered in groups of
    GROUP_M clusters (16 M tiles = 2048 rows) along M, then along N: the 66 clusters in flight touch
    ~2048 rows of A and ~2048 rows of B instead of all 8192 rows of A, halving the re-reads from HBM
    (the 50 MB L2 holds one such band per K-step with room to spare).

Epilogue
    Per 128x32 subtile: fp32 accumulators -> input dtype in registers -> ``stmatrix`` into a swizzled
    SMEM buffer -> ``fence.proxy.async`` -> ONE named barrier of the 256 consumer threads -> one elected
    lane issues a TMA store (``cp.async.bulk.tensor`` shared -> global, clipped at the matrix edge).
    4 buffers rotate: before the barrier the storing lane waits until at most 2 stores still read SMEM,
    so the buffer written after the barrier is free (one barrier per subtile, not two). The store must
    sit under ``elect_one``: issued by a whole warp, each of the 32 lanes writes the tile again.
    When N*2 bytes is not a multiple of 16, TMA cannot describe C, and a second compiled variant
    stores each accumulator with a predicated ``st.global`` instead (e.g. N = 4097).

The four regimes (choose_config; describe() names the one a shape takes, and why)
    When M is small, 2*M*N*K FLOP over ~N*K*2 bytes of B is ~M FLOP/byte, far left of the ridge point: the
    kernel must read B once, at HBM bandwidth, from every SM (N = K = 8192: 128 MiB, ~28 us at 4.8 TB/s),
    and the tensor cores hardly matter. What changes with M is how to spread B over the SMs.
    1. Large tiles: 128x256 tiles make at least one wave over SM_COUNT (op.json's compute_units) SMs.
    2. Smaller tiles: fewer 128x256 tiles than SMs (M = 65..128 with N = 8192: 32 tiles for 132 SMs). The
       tile of least modelled time (_tile_cost: waves x MMA work / the tile's SMEM-bound MMA rate) is used:
       a 64-row tile with ONE consumer warpgroup, 64x128 or 64x64, for the memory-bound skinny shapes (M = 128,
       N = 8192: 64x128 with a 2x1 cluster, 128 CTAs, every SM streaming its share of B), and 128x128 with two
       warpgroups where M makes the problem compute-heavy (M = 512, N = 4096: one full wave of 128 tiles, where
       64-row tiles would take two waves at half the MMA rate). Stages come from the same SMEM budget:
       24 KiB/stage -> 8 stages next to the epilogue buffers, 16 KiB/stage -> 13, 32 KiB/stage (128x128) -> 6.
    3. Swapped skinny tiles (GEMV_MAX_M < M <= SWAP_MAX_M = 64; _swapped). A 64-row tile of A would hold 16 real rows
       at M = 16: the wgmma m64n128k16 would do 4x the work and read 4x the SMEM operand bytes it needs, and
       N = 8192 would give only 64 tiles of 64x128, half the SMs, so K had to be split and the partials met in a
       fix-up (0.86x cuBLAS at 16x8192x8192). So the kernel computes C^T = B . A^T instead: B [N, K] is the MMA's
       A operand, A [M, K] its B operand (both K-major, so nothing is transposed in memory), and C and the
       epilogue's (M, N) views are read through transposed layouts (_launch), so the kernel's (row, column) is C's
       (column, row). The tile is 64 rows of B x W columns, W = 16, 32 or 64 (SWAP_WIDTHS; A's M rows padded
       only to W, by TMA's zero fill): wgmma m64nWk16, one consumer warpgroup, 8-32 accumulator registers per
       thread, and 10 KiB stages (W = 16): 22 of them, ~200 KiB of B in flight per SM. N = 8192 makes 128 tiles,
       one per SM, each streaming 64 rows of B over all of K (1 MiB) with no split and no fix-up, and the 2x1
       cluster multicasts A's tile, the operand both CTAs share. This is also what cuBLAS runs there (ncu:
       nvjet_sm90_tst_64x16_64x16_2x1, 128 CTAs). C is stored by predicated st.global (C^T's rows are C's
       columns: a TMA box of C would have to be transposed), a few hundred KiB at most.
       Split-K, in the swapped frame, when the 64-row tiles leave at least half the SMs idle (N = 4096: 64 tiles,
       S = 2; N = 256: 4 tiles, S = 16): the K loop of each tile is split over S CTAs, S = SM_COUNT // tiles, with
       at least MIN_SPLIT_K_TILES K-tiles per split (split_count). The work units (tile, split) replace tiles in
       the persistent loop; the producer loads only its split's K-tiles. S is a run-time argument: one compile
       serves every S.
       The fix-up is deterministic and has no spin-wait: every consumer thread stores its fp32 partial
       fragment into workspace[s] (S x rows x columns_pad of the frame, rows past the matrix skipped) and then
       increments its own counter (tile, thread) with ``atom.add.acq_rel.gpu``; the thread that sees S-1 arrived
       is the last, and its acquire makes every other split's release (their stores, then their increment)
       visible. It re-reads the S partials in split order 0..S-1 (its own too) and stores C: the sum never
       depends on which split finished last, and no split waits for another (no co-residency assumption). The
       same thread index of each split holds the same (row, column) fragment, so no CTA barrier is
       needed. The last thread stores 0 back into its counter, so the workspace and the counters belong to
       the shape: allocated (and zeroed) once by its first call, reset by every launch for the next one or a
       CUDA-graph replay, and run() allocates nothing. The price: two calls of one shape must not run at the
       same time on two streams. The cost next to the stream of B: S partials of 64 x W fp32 per tile, in L2.
    4. GEMV (M <= GEMV_MAX_M = 4): a 64-row tile would be >= 94% padding (a swapped 16-column one 75%), so a separate kernel uses the
       CUDA cores. Warp w of a CTA owns COLS = 2 output columns (rows of B); its 32 lanes stride along K
       in 16-byte chunks (ld.global.v4), UNROLL x COLS chunks of B issued before any arithmetic so each
       lane keeps up to 256 bytes in flight; the rows of A (a tiny, L1/L2-resident operand) are loaded
       beside them; bf16 -> fp32 products are summed in fp32, then a butterfly ``shfl.sync.bfly``
       reduction across the warp and lane 0 stores C. M is bucketed (1, 2, 4: M = 3 runs the 4-row
       kernel with row 3 masked), so three compiles cover every M; a K tail (K not a multiple of
       32 x 8 x UNROLL) runs one predicated block; a column past N re-reads row N-1 and is not stored.

Epilogue inputs (op.json "op": "lowered"; fp8's scales) -- tests/lowered_examples/CONTRACT_GEMM.md
    The template traces the user's function (say ``gelu(linear(x, w, bias))``) into lowered.py: INPUTS (a, b,
    then the epilogue's inputs), KINDS ("a", "b", then "row" [M, N] | "vector" [N] | "per_row" [M]) and
    compute(acc, *extras, n, reduce), straight-line fp32 math on pointwise.py's `pw.` functions. An Epilogue
    (part of the compile key, so the built-in op keeps its PTX byte for byte) runs it on the fp32 accumulators
    before they are rounded, in every path:

        TMA store (large, skinny)  per 128x32 subtile: 16 accumulators -> [x scale] -> compute -> bf16 -> stmatrix
        st.global (N*2 % 16 != 0)  16 accumulators at a time -> [x scale] -> compute -> predicated st.global
        split-K                    the last split's fixed-order fp32 sum, then as st.global
        GEMV                       lane 0's ROWS x COLS warp-reduced sums -> [x scale] -> compute -> st.global

    - Coordinates: every extra becomes an (M, N) tensor whose strides broadcast it (row (N, 1), vector (0, 1),
      per_row (1, 0)) and is partitioned exactly as the accumulators (partition_C, then the stmatrix copy's
      retile on the TMA path), beside an identity tensor partitioned the same way: element i of each fragment
      is the extra's value at accumulator i's (row, column), masked where that is outside the matrix. On the
      swapped path the views are transposed with C (_launch), so the same code reads C's (column, row).
    - Vector loads: a WGMMA fragment holds adjacent column pairs (2i, 2i+1) of one row, so with N even (the
      TMA path) one predicate covers a pair and its two loads merge: ld.global.b32 for a bf16 residual or bias,
      64-bit for fp32.
    - Broadcast extras are read once per address (_load_plan): the fragment holds each column at two rows (r and
      r + 8), so a bias or column scale takes half the loads, registers and bf16 -> fp32 conversions of a
      residual, and a per-row scale 2 loads per subtile. Known while tracing, from the broadcast strides.
    - Latency: the extras of as many subtiles as EPI_PREFETCH_REGS registers hold (8 per subtile and bf16 extra:
      a whole tile of one bf16 residual or bias) are loaded during the main loop, so their HBM latency and bytes
      hide under the WGMMAs. Vectors and per_row scales (a few KiB, L2-resident) are loaded after the first K-step;
      a row extra one subtile at a time, after K-steps stride, 2 stride, ... (stride = (K-steps - 1) / depth):
      the persistent CTAs start their tiles nearly together, and a whole tile of residual each at once would be a
      burst of 132 x 64 KiB in front of the first K-steps. The K loop is cut into depth + 1 consecutive loops for
      that, so no K-step tests whether it loads. With more extras, each subtile refills the buffer it has just
      read, that many subtiles ahead, under the epilogue's own work.
    - fp8: scale_a * scale_b (one fp32 element each, read once per thread) multiplies the accumulators first,
      then the lowered compute if there is one. The e4m3 tensors cross TVM-FFI as they are: DLPack has
      float8_e4m3fn, torch exports it, and CuTe DSL's TVM-FFI builder maps Float8E4M3FN to that same name, so
      the wrapper checks the fp8 dtype itself and no uint8 view is needed.
    - C's dtype: the input dtype, bf16 for fp8, fp32 when the lowered function returns fp32 (which stores by
      st.global: stmatrix moves 16-bit values).

Levers not used here
    A ping-pong schedule (two consumer warpgroups on different tiles, hiding the epilogue under MMAs),
    stream-K for shapes of a few waves plus a fraction (4096x14336x4096; M = 64 with N = 14336: 224 swapped
    64-row tiles on 132 SMs, 1.7 waves), split-K over several waves.

Measured TFLOP/s against cuBLAS, per shape and dtype, and the cluster / tile / raster sweep:
benchmarks/2026-11-30-h200-gemm.md.

Launch (host side; the general story is in cutedsl_runtime.py)
    gemm_launch is compiled once per (Config, dtype), through TVM-FFI, on fake tensors A [M,K], B [N,K] and
    C [M,N] whose M, N, K are symbols shared between them, so one compile serves every shape of its Config
    and the wrapper checks on each call that the three tensors agree, are row-major and contiguous
    (row stride = K or N), 16-byte aligned, with K (and N, for the TMA store) a multiple of 8 elements.
    Inside, gemm_launch rebuilds the row-major layouts from the tensors' base pointers and those extents,
    and builds the TMA descriptors from them. run() keeps one entry per (dtype, a.shape, b.shape, cfg):
    the first call of a signature runs host.py's checks and choose_config, later calls are a dict lookup
    and the TVM-FFI call on torch's current stream; a call the wrapper refuses goes back to host.py's checks,
    which say what is wrong. gemm_splitk_launch takes the workspace, the counters, S and k_per besides;
    gemv_launch takes only the three tensors. The *_epi_launch variants add the Epilogue (a constexpr) and its
    tensors at the end; the key adds the Epilogue, C's dtype and the extras' dtypes (an fp32 bias is its own
    compile). All three share one launch structure: a signature-dict lookup, then one TVM-FFI call (split-K's
    scratch comes with the signature's entry).

Interface (the same in every kbaseline cell):
    run(a, b, out=None)         -> out         a [M,K], b [N,K] contiguous CUDA bf16/fp16; out [M,N]
    run(a, b, scale_a, scale_b) -> out         fp8 e4m3 a, b; fp32 scales of shape (1,); out [M,N] bf16
    run(*lowered.INPUTS)        -> out         a lowered op: a, b, then its extras (then the scales for fp8)
    compile_only(case, out_dir) -> PTX text     compile for sm_90a with no GPU (fake tensors)
    describe(case)              -> dict         the regime ("path") and why, tile, splits, stages, grid
"""

import operator
import os
from dataclasses import dataclass, replace

import cutedsl_runtime as rt  # first: it sets CUTE_DSL_ARCH=sm_90a before cutlass is imported
import host
import torch

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import Int32
from cutlass.cute.nvgpu import cpasync, warpgroup

OP_SPEC = host.OP
LOWERED = OP_SPEC.get("op") == "lowered"
if LOWERED:
    import lowered  # the user's epilogue, generated at the workspace root (tests/lowered_examples/CONTRACT_GEMM.md)

SM_COUNT = OP_SPEC["compute_units"]  # the target GPU's SMs (op.json); run() queries co-resident clusters itself
SMEM_BYTES = 232448  # 227 KiB usable per CTA on sm_90
WG = 128  # threads per warpgroup
PRODUCER_REGS, CONSUMER_REGS = 40, 232  # setmaxnreg: 128*40 + 256*232 = 64512 <= 65536 registers per SM
EPI_BARRIER_ID = 1  # named barrier of the consumer threads (0 is __syncthreads)
STORE_WARP = 4  # first consumer warp: issues the epilogue's TMA stores


@dataclass(frozen=True)
class Config:
    """Static tile configuration (one compiled kernel per Config x dtype)."""

    tile_m: int = 128
    tile_n: int = 256
    tile_k: int = 64
    cluster_m: int = 2  # CTAs of a cluster along M share (multicast) the B tile
    cluster_n: int = 1  # ... along N share the A tile
    epi_n: int = 32  # epilogue subtile is tile_m x epi_n
    epi_stages: int = 4
    group_m: int = 8  # tile raster: groups of group_m clusters along M
    tma_store: bool = True  # False: predicated st.global epilogue (N*2 bytes not a multiple of 16)
    split_k: bool = False  # True: each tile's K loop is split over S CTAs (S is a run-time argument)
    elem_bytes: int = 2  # bytes per A/B element: 2 (bf16/fp16), 1 (fp8 e4m3, with tile_k = 128: 128-byte rows)
    swap_ab: bool = False  # True: the kernel computes C^T = B . A^T (B's rows on the MMA's M, A's few rows on its N)

    def frame(self, m: int, n: int) -> tuple[int, int]:
        """(rows, columns) of the problem as the kernel tiles it: (N, M) when it computes C^T."""
        return (n, m) if self.swap_ab else (m, n)

    @property
    def mma_wgs(self) -> int:  # consumer warpgroups: each owns 64 rows of the tile
        return self.tile_m // 64

    @property
    def threads(self) -> int:  # + one producer warpgroup
        return (1 + self.mma_wgs) * WG

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    @property
    def stage_bytes(self) -> int:
        return (self.tile_m + self.tile_n) * self.tile_k * self.elem_bytes

    @property
    def epi_bytes(self) -> int:
        return self.tile_m * self.epi_n * 2 * self.epi_stages if self.tma_store else 0

    @property
    def stages(self) -> int:  # as many A+B stages as fit next to the epilogue buffers and 1 KiB of mbarriers
        return (SMEM_BYTES - 1024 - self.epi_bytes) // self.stage_bytes

    def smem_bytes(self) -> int:
        return 1024 + self.stages * self.stage_bytes + self.epi_bytes


DEFAULT = Config()
# below one wave of 128x256 tiles: two-warpgroup 128x128 tiles, then one-warpgroup 64-row tiles
SMALLER = (Config(tile_m=128, tile_n=128), Config(tile_m=64, tile_n=128), Config(tile_m=64, tile_n=64))


def _tile_cost(m: int, n: int, cfg: Config) -> float:
    """Modelled time of a sub-wave problem in units of one 128x256 tile: waves x the tile's MMA work / its MMA rate.

    A CTA's MMA rate is bounded by the SMEM operand bytes per FLOP, TM*TN/(TM+TN) (the roofline in the module
    docstring: 128x256 -> 85, 128x128 -> 64, 64x128 -> 43, 64x64 -> 32 FLOP/byte), relative to 128x256's.
    Memory-bound shapes (M <= 128) come out filling the SMs, as the bandwidth argument wants; compute-heavy ones
    (M = 512, N = 4096: 64 tiles of 128x256 for 132 SMs) come out on 128x128 tiles, a full wave of them."""
    tiles = -(-m // cfg.tile_m) * -(-n // cfg.tile_n)
    big = DEFAULT.tile_m * DEFAULT.tile_n
    rate = (cfg.tile_m * cfg.tile_n / (cfg.tile_m + cfg.tile_n)) / (big / (DEFAULT.tile_m + DEFAULT.tile_n))
    return -(-tiles // SM_COUNT) * (cfg.tile_m * cfg.tile_n) / big / rate


@dataclass(frozen=True)
class Gemv:
    """Static configuration of the GEMV kernel (one compile per row bucket x dtype): `rows` rows of A (M <= rows,
    the rest masked), `cols` output columns per warp, `unroll` 16-byte loads per column and lane in flight."""

    rows: int
    warps: int = 4
    cols: int = 2
    unroll: int = 8


GEMV_MAX_M = 4  # M up to this: CUDA-core GEMV (a 64-row WGMMA tile would be >= 94% padding)
GEMV_ROWS = (1, 2, 4)  # row buckets: M = 3 runs the 4-row kernel
GEMV_LOAD_BITS = 128  # one ld.global.v4 per chunk: 8 bf16/fp16 or 16 fp8 elements
MIN_SPLIT_K_TILES = 8  # each split streams >= 8 x 64 of K: its fp32 partial stays small next to its share of B
SWAP_MAX_M = 64  # GEMV_MAX_M < M <= this: C^T = B . A^T on 64-row tiles of B, A's rows padded to a SWAP_WIDTHS width
SWAP_WIDTHS = (16, 32, 64)  # the MMA's N (wgmma m64nWk16) for A's M rows: three compiles cover M = 5 .. 64


def split_count(m: int, n: int, k: int, cfg: Config) -> tuple[int, int]:
    """(S, K-tiles per split) of an m x n x k problem (the kernel's frame: N x M when it swaps A and B) on cfg's
    tiles: as many splits as keep the tiles x S work units within one wave of SM_COUNT, each split >=
    MIN_SPLIT_K_TILES K-tiles; S is then recounted so that no split is empty."""
    tiles = -(-m // cfg.tile_m) * -(-n // cfg.tile_n)
    k_tiles = -(-k // cfg.tile_k)
    s = max(1, min(SM_COUNT // tiles, k_tiles // MIN_SPLIT_K_TILES))
    k_per = -(-k_tiles // s)
    return -(-k_tiles // k_per), k_per


def choose_config(m: int, n: int, k: int) -> Config | Gemv:
    """M <= GEMV_MAX_M: the GEMV kernel. M <= SWAP_MAX_M: C^T = B . A^T on swapped skinny tiles (_swapped).
    Otherwise 128x256 tiles when they make >= 1 wave; below that, the tile of least modelled time (_tile_cost:
    128x256 still when it nearly fills the SMs, 128x128 for compute-heavy shapes, the 64-row tile that fills
    the SMs for memory-bound ones). 2x1 multicast when there are >= 2 M tiles; TMA store when C rows are 16-byte
    aligned."""
    if m <= GEMV_MAX_M:
        rows = next(r for r in GEMV_ROWS if r >= m)
        return Gemv(rows=rows, unroll=8 if rows <= 2 else 4)  # 4 rows: half the B loads in flight, A's registers
    if m <= SWAP_MAX_M:
        return _swapped(m, n, k)
    base = DEFAULT
    if -(-m // DEFAULT.tile_m) * -(-n // DEFAULT.tile_n) < SM_COUNT:
        base = min((DEFAULT, *SMALLER), key=lambda c: _tile_cost(m, n, c))  # ties: the larger tile (fewer re-reads)
    return replace(base, cluster_m=2 if m > base.tile_m else 1, tma_store=(n * 2) % 16 == 0)


def _swapped(m: int, n: int, k: int) -> Config:
    """The skinny regime as C^T = B . A^T: tiles of 64 rows of B by W = the SWAP_WIDTHS bucket of M columns, so a
    wgmma m64nWk16 pads A's M rows only to W (16 for M = 16) where a 64-row tile of A would pad them to 64 and spend
    four times the MMA work and operand bytes of SMEM. N / 64 tiles (128 for N = 8192) fill the SMs with no split:
    each CTA streams its 64 rows of B over all of K, and the 2x1 cluster multicasts A's tile, the operand both CTAs
    share. With fewer tiles than half the SMs (N = 4096: 64), K is split over S CTAs (split_count, in this frame)."""
    width = next(w for w in SWAP_WIDTHS if w >= m)
    cfg = Config(tile_m=64, tile_n=width, tma_store=False, swap_ab=True)
    if split_count(n, m, k, cfg)[0] > 1:
        return replace(cfg, cluster_m=1, split_k=True)
    return replace(cfg, cluster_m=2 if n > cfg.tile_m else 1)


@dataclass(frozen=True)
class Epilogue:
    """What runs on the fp32 accumulators before they are rounded and stored (part of the compile key; None: the
    built-in matmul, whose code is untouched). `scaled`: multiply by scale_a * scale_b (fp8's per-tensor scales)
    first; `lowered`: then lowered.compute(acc, *extras, n, None), with one extra input per entry of `kinds`
    (lowered.KINDS[2:]: "row" [M, N], "vector" [N], "per_row" [M])."""

    kinds: tuple = ()
    lowered: bool = False
    scaled: bool = False


# ---------------------------------------------------------------- static layouts


def _smem_layouts(dtype, cfg: Config, c_dtype=None):
    """Staged, swizzled SMEM layouts: A (TM,TK,S), B (TN,TK,S) of dtype, C subtile (TM,EPI_N,EPI_S) of c_dtype
    (C's dtype: dtype itself, or bf16 for fp8 inputs). fp8 rows of tile_k = 128 are 128 bytes, as bf16's 64."""
    c_dtype = c_dtype or dtype
    k_atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, dtype)  # 8 rows x 128 B
    sA = cute.tile_to_shape(k_atom, (cfg.tile_m, cfg.tile_k, cfg.stages), order=(0, 1, 2))
    sB = cute.tile_to_shape(k_atom, (cfg.tile_n, cfg.tile_k, cfg.stages), order=(0, 1, 2))
    c_kind = sm90_utils.get_smem_layout_atom(cutlass.tensor_utils.LayoutEnum.ROW_MAJOR, c_dtype, cfg.epi_n)
    c_atom = warpgroup.make_smem_layout_atom(c_kind, c_dtype)  # 32 bf16 = 64 B rows -> 64-byte swizzle
    sC = cute.tile_to_shape(c_atom, (cfg.tile_m, cfg.epi_n, cfg.epi_stages), order=(0, 1, 2))
    return sA, sB, sC


def _shared_storage(dtype, cfg: Config, sA, sB, sC, c_dtype=None):
    c_dtype = c_dtype or dtype

    @cute.struct
    class SharedStorage:
        mbar: cute.struct.MemRange[cutlass.Int64, cfg.stages * 2]  # full[s], empty[s]
        a: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(sA)], 1024]
        b: cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(sB)], 1024]
        c: cute.struct.Align[cute.struct.MemRange[c_dtype, cute.cosize(sC) if cfg.tma_store else 8], 1024]

    return SharedStorage


def _tiled_mma(dtype, cfg: Config):
    """2 warpgroups stacked along M, each issuing wgmma m64n{tile_n}k16 with A and B from SMEM."""
    return sm90_utils.make_trivial_tiled_mma(
        dtype, dtype, cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.K, cutlass.Float32,
        (cfg.tile_m // 64, 1, 1), tiler_mn=(64, cfg.tile_n),
    )


# ---------------------------------------------------------------- tile scheduler


@cute.jit
def _tile_coords(t: Int32, clusters_m: Int32, clusters_n: Int32, group_m: cutlass.Constexpr[int]):
    """Cluster-tile index -> (cluster row, cluster column), in groups of group_m cluster rows (L2 reuse)."""
    per_group = clusters_n * group_m
    g = t // per_group
    first = g * group_m
    rows = cutlass.min(clusters_m - first, group_m)
    r = t - g * per_group
    return first + r % rows, r // rows


@cute.jit
def _unit_coords(t: Int32, clusters_m: Int32, clusters_n: Int32, k_tiles: Int32, group_m: cutlass.Constexpr[int],
                 split: cutlass.Constexpr):
    """Split-K work unit t -> (cluster row, cluster column, split, first K-tile, K-tiles): the S splits of a tile are
    consecutive units, split s owns K-tiles [s * k_per, min((s + 1) * k_per, k_tiles))."""
    cm, cn = _tile_coords(t // split.splits, clusters_m, clusters_n, group_m)
    s = t % split.splits
    k_lo = s * split.k_per
    return cm, cn, s, k_lo, cutlass.min(split.k_per, k_tiles - k_lo)


# ---------------------------------------------------------------- kernels


class SplitK:
    """What the split-K variant adds to the kernel body: the fp32 workspace (S, M, N_pad) of partial tiles, the
    arrival counters (one per tile and consumer thread, zero at the launch and reset by the kernel), the split
    count S and the K-tiles per split. A trace-time bundle of kernel arguments, not an argument itself: `None` means no split."""

    def __init__(self, ws: cute.Tensor, count: cute.Tensor, splits: Int32, k_per: Int32):
        self.ws, self.count, self.splits, self.k_per = ws, count, splits, k_per


EPI_CHUNK = 16  # accumulators per lowered-epilogue step on the st.global paths (one 128x32 subtile's share on TMA)


def _epi_chunk(cfg: Config) -> int:
    """Accumulators per lowered-epilogue step on the st.global paths: EPI_CHUNK, or the whole fragment when a thread
    holds fewer (a swapped 64x16 tile: 64 x 16 fp32 over 128 consumer threads = 8)."""
    return min(EPI_CHUNK, cfg.tile_m * cfg.tile_n // (cfg.mma_wgs * WG))
EPI_PREFETCH_REGS = 64  # TMA path: 32-bit registers per consumer thread that hold extras loaded ahead of their use


def _epi_depth(ext, epi: Epilogue, per_sub: int, n_sub: int) -> int:
    """Subtiles whose extras are loaded ahead: as many as EPI_PREFETCH_REGS registers hold (a subtile takes per_sub
    elements of every extra: 8 registers per bf16 extra), at least one, at most the tile's subtiles. With 128
    accumulators per thread, 128 + 64 stay under the 232 of setmaxnreg with room for the addresses: one bf16
    residual or bias (8 subtiles x 8 registers) is prefetched whole, two extras half a tile ahead. The count is an
    upper bound: a broadcast extra holds half of it or less (_load_plan)."""
    regs = sum(per_sub * t.element_type.width // 32 for t in ext[:len(epi.kinds)])
    return max(1, min(n_sub, EPI_PREFETCH_REGS // max(1, regs)))


def _epi_views(ext, epi: Epilogue, m, n):
    """The extra inputs as (M, N) tensors whose strides broadcast them, so one partitioning serves every kind:
    "row" (N, 1), "vector" (0, 1): bias[col], "per_row" (1, 0): scale[row]; then the two fp8 scales as they are."""
    strides = {"row": (n, 1), "vector": (0, 1), "per_row": (1, 0)}
    views = [cute.make_tensor(t.iterator, cute.make_layout((m, n), stride=strides[kind]))
             for t, kind in zip(ext, epi.kinds)]
    return (*views, *ext[len(epi.kinds):])


def _epi_scale(ext, epi: Epilogue):
    """scale_a * scale_b as an fp32 scalar (read once per thread), or None without fp8 scales."""
    return ext[len(epi.kinds)][0] * ext[len(epi.kinds) + 1][0] if epi.scaled else None


def _epi_frags(ext, epi: Epilogue, thr_mma, tm, tn, cfg: Config):
    """Each extra's tile (tm, tn) partitioned as the accumulators are (partition_C): element i of a fragment is the
    extra's value at accumulator element i's (row, column)."""
    return [thr_mma.partition_C(cute.local_tile(v, (cfg.tile_m, cfg.tile_n), (tm, tn))) for v in ext[:len(epi.kinds)]]


def _load_plan(frag: cute.Tensor, base: int, count: int, step: int) -> list:
    """For each group of `step` elements (v, ..., v + step - 1) of frag[base:base + count]: None (load them) or the
    elements whose values they copy. A vector's (0, 1) and a per-row scale's (1, 0) broadcast strides are static, so
    elements that read the same address are known while tracing; a residual's row stride is N, a run-time value,
    and every group of it loads."""
    first, plan = {}, []
    for v in range(0, count, step):
        offs = [cute.crd2idx(base + v + i, frag.layout) for i in range(step)]
        static = all(isinstance(o, int) for o in offs)
        if static and all(o in first for o in offs):
            plan.append([first[o] for o in offs])
        else:
            plan.append(None)
            if static:
                for i, o in enumerate(offs):
                    first.setdefault(o, v + i)
    return plan


@cute.jit
def _epi_load(dst, frags, coord: cute.Tensor, base: cutlass.Constexpr[int], m_left, n_left,
              pairs: cutlass.Constexpr[bool]):
    """dst[j][v] = frags[j][base + v] for the elements inside the matrix (coord: their (row, col) in the tile);
    the others stay 0 and are never stored. `pairs`: elements (2i, 2i+1) are adjacent columns of one row (the
    WGMMA fragment) with N even, so one predicate covers both and the two loads of a pair merge into one 32-bit
    (bf16) or 64-bit (fp32) load.

    A broadcast extra is read once per address (_load_plan): the WGMMA fragment holds each column at two rows
    (r and r + 8), so a bias's second element is a copy of the first (half the loads, registers and conversions),
    and a per-row scale's 16 elements of a subtile are 2 loads. The copy is safe under the mask: the element
    loaded shares the copy's address and comes first in the fragment, so it has the same column and a smaller
    row (a vector) or the same row and a smaller column (a per-row scale); the mask is monotone in both, so when
    the loaded element is masked out, so is its copy."""
    step = 2 if cutlass.const_expr(pairs) else 1
    for j in cutlass.range_constexpr(len(dst)):
        dst[j].fill(0.0)
        plan = _load_plan(frags[j], base, cute.size(dst[j]), step)
        for g in cutlass.range_constexpr(len(plan)):
            v = g * step
            if cutlass.const_expr(plan[g] is not None):
                for i in cutlass.range_constexpr(step):
                    dst[j][v + i] = dst[j][plan[g][i]]
            else:
                if cute.elem_less(coord[base + v + step - 1], (m_left, n_left)):
                    for i in cutlass.range_constexpr(step):
                        dst[j][v + i] = frags[j][base + v + i]


def _epi_compute(vals: cute.Tensor, loaded, n, scale, epi: Epilogue):
    """vals (fp32 registers) <- lowered.compute(vals * scale, *extras, n, None): the epilogue, in place. vals is
    seen flat (a compact rmem tensor: flat index v is vals[v]), the shape of the extras' buffers."""
    vals = cute.make_tensor(vals.iterator, cute.make_layout(cute.size(vals)))
    v = vals.load()
    if epi.scaled:
        v = v * scale
    if epi.lowered:
        v = lowered.compute(v, *(r.load().to(cutlass.Float32) for r in loaded), cutlass.Float32(n), None)[0]
    vals.store(v)


def _epi_buffers(epi: Epilogue, ext, count: int):
    """One register buffer of `count` values per extra input, in the extra's own dtype."""
    return [cute.make_rmem_tensor((count,), t.element_type) for t in ext[:len(epi.kinds)]]


@cute.jit
def _store_direct(acc: cute.Tensor, thr_mma, mC_direct: cute.Tensor, tm: Int32, tn: Int32, cfg: cutlass.Constexpr,
                  dtype: cutlass.Constexpr, epi: cutlass.Constexpr = None, ext=(), scale=None):
    """Predicated st.global of the accumulators (rounded to dtype) into C, clipped at the matrix edge. With an
    epilogue, EPI_CHUNK accumulators at a time: their extras loaded (masked), the epilogue applied, then stored."""
    gC_tile = cute.local_tile(mC_direct, (cfg.tile_m, cfg.tile_n), (tm, tn))
    tCgC = thr_mma.partition_C(gC_tile)
    cC = thr_mma.partition_C(cute.make_identity_tensor((cfg.tile_m, cfg.tile_n)))
    m_left = mC_direct.shape[0] - tm * cfg.tile_m
    n_left = mC_direct.shape[1] - tn * cfg.tile_n
    if cutlass.const_expr(epi is None):
        for i in cutlass.range_constexpr(cute.size(acc)):
            if cute.elem_less(cC[i], (m_left, n_left)):
                tCgC[i] = acc[i].to(dtype)
    else:
        frags = _epi_frags(ext, epi, thr_mma, tm, tn, cfg)
        chunk = _epi_chunk(cfg)
        assert cute.size(acc) % chunk == 0 and cute.size(acc) >= chunk
        vals = cute.make_rmem_tensor((chunk,), cutlass.Float32)
        loaded = _epi_buffers(epi, ext, chunk)
        for c in cutlass.range_constexpr(cute.size(acc) // chunk):
            _epi_load(loaded, frags, cC, c * chunk, m_left, n_left, False)
            for v in cutlass.range_constexpr(chunk):
                vals[v] = acc[c * chunk + v]
            _epi_compute(vals, loaded, mC_direct.shape[0 if cfg.swap_ab else 1], scale, epi)
            for v in cutlass.range_constexpr(chunk):
                if cute.elem_less(cC[c * chunk + v], (m_left, n_left)):
                    tCgC[c * chunk + v] = vals[v].to(dtype)


@cute.jit
def _split_fixup(acc: cute.Tensor, thr_mma, mC_direct: cute.Tensor, tm: Int32, tn: Int32, s: Int32, tiles_n: Int32,
                 ctid: Int32, split: cutlass.Constexpr, cfg: cutlass.Constexpr, dtype: cutlass.Constexpr,
                 epi: cutlass.Constexpr = None, ext=(), scale=None):
    """Split-K epilogue, per consumer thread: publish my fp32 partial, and if I am the last of the S splits to
    arrive at my fragment of this tile, sum the S partials in split order and store C.

    Protocol (one counter per (tile, consumer thread), zero at the launch): my partial goes to
    workspace[s] (only the rows < M), then ``atom.add.acq_rel.gpu`` on my counter. Release: my stores are
    visible before the increment; acquire: the thread that reads S-1 sees every other split's stores, since
    they all released into the same counter before it. The same thread position of every split covers the same
    (row, column) fragment, so no CTA-wide barrier is needed. The last thread re-reads all S partials, its own
    included, and adds them in the fixed order 0, 1, ..., S-1: the result does not depend on which split
    finished last (deterministic). The epilogue (fp8 scale, lowered compute) runs on that sum, in _store_direct.
    The last thread then stores 0 into the counter: no other thread of this launch touches it again, and the next
    launch on the stream finds it reset."""
    cC = thr_mma.partition_C(cute.make_identity_tensor((cfg.tile_m, cfg.tile_n)))
    m_left = mC_direct.shape[0] - tm * cfg.tile_m
    tCgW = thr_mma.partition_C(cute.local_tile(split.ws[(s, None, None)], (cfg.tile_m, cfg.tile_n), (tm, tn)))
    mine = cutlass.Boolean(False)
    for i in cutlass.range_constexpr(cute.size(acc)):
        if cC[i][0] < m_left:
            tCgW[i] = acc[i]
            mine = cutlass.Boolean(True)
    last = cutlass.Boolean(False)
    count, slot = split.count, (tm * tiles_n + tn) * (cfg.mma_wgs * WG) + ctid
    if mine:  # threads whose rows are all >= M write nothing and take no part in the count
        arrived = cute.arch.atomic_add(count.iterator + slot, Int32(1), sem="acq_rel", scope="gpu")
        last = arrived == split.splits - 1
    if last:
        count[slot] = Int32(0)  # reset for the next launch (or CUDA-graph replay) of this shape
        tCgW0 = thr_mma.partition_C(cute.local_tile(split.ws[(0, None, None)], (cfg.tile_m, cfg.tile_n), (tm, tn)))
        for i in cutlass.range_constexpr(cute.size(acc)):
            if cC[i][0] < m_left:
                acc[i] = tCgW0[i]
        for j in cutlass.range(1, split.splits, 1, unroll=1):
            tCgWj = thr_mma.partition_C(cute.local_tile(split.ws[(j, None, None)], (cfg.tile_m, cfg.tile_n), (tm, tn)))
            for i in cutlass.range_constexpr(cute.size(acc)):
                if cC[i][0] < m_left:
                    acc[i] = acc[i] + tCgWj[i]
        _store_direct(acc, thr_mma, mC_direct, tm, tn, cfg, dtype, epi, ext, scale)


@cute.kernel
def gemm_kernel(
    tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
    tma_c: cute.CopyAtom, mC: cute.Tensor, tiled_mma: cute.TiledMma, mC_direct: cute.Tensor,
    tiles_m: Int32, tiles_n: Int32, k_tiles: Int32, cfg: cutlass.Constexpr, dtype: cutlass.Constexpr,
    epi: cutlass.Constexpr = None, ext=(),
):
    _gemm_body(tma_a, mA, tma_b, mB, tma_c, mC, tiled_mma, mC_direct, tiles_m, tiles_n, k_tiles, cfg, dtype, None,
               epi, ext)


@cute.kernel
def gemm_splitk_kernel(
    tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
    tma_c: cute.CopyAtom, mC: cute.Tensor, tiled_mma: cute.TiledMma, mC_direct: cute.Tensor,
    tiles_m: Int32, tiles_n: Int32, k_tiles: Int32, mWS: cute.Tensor, mCount: cute.Tensor, splits: Int32,
    k_per: Int32, cfg: cutlass.Constexpr, dtype: cutlass.Constexpr, epi: cutlass.Constexpr = None, ext=(),
):
    _gemm_body(tma_a, mA, tma_b, mB, tma_c, mC, tiled_mma, mC_direct, tiles_m, tiles_n, k_tiles, cfg, dtype,
               SplitK(mWS, mCount, splits, k_per), epi, ext)


@cute.jit
def _gemm_body(
    tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
    tma_c: cute.CopyAtom, mC: cute.Tensor, tiled_mma: cute.TiledMma, mC_direct: cute.Tensor,
    tiles_m: Int32, tiles_n: Int32, k_tiles: Int32, cfg: cutlass.Constexpr, dtype: cutlass.Constexpr,
    split: cutlass.Constexpr, epi: cutlass.Constexpr = None, ext=(),
):
    """The persistent TMA + WGMMA kernel; `split` (a SplitK, or None) turns each tile into S K-range work units
    whose partials meet in _split_fixup; `epi` (an Epilogue, or None) runs on the accumulators before the store,
    with `ext` its inputs (_epi_views). dtype is A's and B's; C's may differ (bf16 for fp8 inputs)."""
    c_dtype = mC_direct.element_type
    tidx, _, _ = cute.arch.thread_idx()
    bidx, bidy, _ = cute.arch.block_idx()
    gdimx, _, _ = cute.arch.grid_dim()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    wg = cute.arch.make_warp_uniform(tidx // WG)
    if warp == 0:
        cpasync.prefetch_descriptor(tma_a)
        cpasync.prefetch_descriptor(tma_b)
        if cutlass.const_expr(cfg.tma_store):
            cpasync.prefetch_descriptor(tma_c)

    # ---- cluster geometry: which CTA of the cluster am I, and who shares my loads
    cta_layout = cute.make_layout((cfg.cluster_m, cfg.cluster_n, 1))
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    ccoord = cta_layout.get_flat_coord(rank)
    a_mask = cute.make_layout_image_mask(cta_layout, ccoord, mode=1) if cfg.cluster_n > 1 else 0
    b_mask = cute.make_layout_image_mask(cta_layout, ccoord, mode=0) if cfg.cluster_m > 1 else 0

    # ---- shared memory and the TMA -> WGMMA stage ring
    sA_l, sB_l, sC_l = _smem_layouts(dtype, cfg, c_dtype)
    storage = cutlass.memory.SmemAllocator().allocate(_shared_storage(dtype, cfg, sA_l, sB_l, sC_l, c_dtype))
    sA = storage.a.get_tensor(sA_l.outer, swizzle=sA_l.inner)
    sB = storage.b.get_tensor(sB_l.outer, swizzle=sB_l.inner)
    sC = storage.c.get_tensor(sC_l.outer, swizzle=sC_l.inner)
    stage_bytes = (cfg.tile_m + cfg.tile_n) * cfg.tile_k * dtype.width // 8
    # Each consumer warp arrives once on "empty" of every CTA that wrote into the stage.
    arrivals = (cfg.cluster_m + cfg.cluster_n - 1) * cfg.mma_wgs * 4
    ring = pipeline.PipelineTmaAsync.create(
        barrier_storage=storage.mbar.data_ptr(), num_stages=cfg.stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, arrivals),
        tx_count=stage_bytes, cta_layout_vmnk=cute.make_layout((1, *cta_layout.shape)), defer_sync=True,
    )
    pipeline.pipeline_init_arrive(cluster_shape_mn=(cfg.cluster_m, cfg.cluster_n), is_relaxed=True)

    # ---- global tiles: (TM, TK, tiles_m, k_tiles) etc., and the TMA view of my slice of each
    gA = cute.local_tile(mA, (cfg.tile_m, cfg.tile_k), (None, None))
    gB = cute.local_tile(mB, (cfg.tile_n, cfg.tile_k), (None, None))
    tAsA, tAgA = cpasync.tma_partition(
        tma_a, ccoord[1], cute.make_layout(cfg.cluster_n), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
    tBsB, tBgB = cpasync.tma_partition(
        tma_b, ccoord[0], cute.make_layout(cfg.cluster_m), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))

    clusters_m = (tiles_m + cfg.cluster_m - 1) // cfg.cluster_m
    clusters_n = (tiles_n + cfg.cluster_n - 1) // cfg.cluster_n
    num_cluster_tiles = clusters_m * clusters_n
    if cutlass.const_expr(split is not None):
        num_cluster_tiles = num_cluster_tiles * split.splits  # work units: (tile, split)
    cluster_id = bidx // cfg.cluster_m
    num_clusters = gdimx // cfg.cluster_m

    pipeline.pipeline_init_wait(cluster_shape_mn=(cfg.cluster_m, cfg.cluster_n))

    if wg == 0:
        # ================= producer warpgroup: one warp issues every TMA load
        cute.arch.setmaxregister_decrease(PRODUCER_REGS)
        if warp == 0:
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, cfg.stages)
            t = cluster_id
            while t < num_cluster_tiles:
                if cutlass.const_expr(split is None):
                    cm, cn = _tile_coords(t, clusters_m, clusters_n, cfg.group_m)
                    k_lo, k_n = 0, k_tiles
                else:
                    cm, cn, _s, k_lo, k_n = _unit_coords(t, clusters_m, clusters_n, k_tiles, cfg.group_m, split)
                tm = cm * cfg.cluster_m + ccoord[0]
                tn = cn * cfg.cluster_n + ccoord[1]
                for kt in range(k_n):
                    ring.producer_acquire(state)  # wait until both CTAs' consumers freed the stage
                    bar = ring.producer_get_barrier(state)
                    s = state.index
                    kg = kt if cutlass.const_expr(split is None) else k_lo + kt  # the K-tile in the matrix
                    cute.copy(tma_a, tAgA[(None, tm, kg)], tAsA[(None, s)], tma_bar_ptr=bar, mcast_mask=a_mask)
                    cute.copy(tma_b, tBgB[(None, tn, kg)], tBsB[(None, s)], tma_bar_ptr=bar, mcast_mask=b_mask)
                    ring.producer_commit(state)  # no-op for TMA: the bytes arrive on full[s]
                    state.advance()
                t += num_clusters
            ring.producer_tail(state)  # do not exit while a peer may still signal our barriers
    else:
        # ================= consumer warpgroups: WGMMA main loop + epilogue
        cute.arch.setmaxregister_increase(CONSUMER_REGS)
        ctid = tidx - WG  # 0..255 among the consumers
        thr_mma = tiled_mma.get_slice(ctid)
        tCsA = thr_mma.partition_A(sA)
        tCsB = thr_mma.partition_B(sB)
        tCrA = tiled_mma.make_fragment_A(tCsA)  # SMEM descriptors, not registers
        tCrB = tiled_mma.make_fragment_B(tCsB)
        gC = cute.local_tile(mC_direct, (cfg.tile_m, cfg.tile_n), (None, None))
        acc = cute.make_rmem_tensor(thr_mma.partition_C(gC[(None, None, 0, 0)]).shape, cutlass.Float32)
        k_blocks = cute.size(tCrA, mode=[2])
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, cfg.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, cfg.stages)
        epi_barrier = pipeline.NamedBarrier(barrier_id=EPI_BARRIER_ID, num_threads=cfg.mma_wgs * WG)

        if cutlass.const_expr(cfg.tma_store):
            r2s = cute.make_tiled_copy_C_atom(
                cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), c_dtype), tiled_mma)
            r2s = cute.make_tiled_copy_S(sm90_utils.sm90_get_smem_store_op(
                cutlass.tensor_utils.LayoutEnum.ROW_MAJOR, elem_ty_d=c_dtype, elem_ty_acc=cutlass.Float32), r2s)
            thr_r2s = r2s.get_slice(ctid)
            tRS_sC = thr_r2s.partition_D(sC)  # (R2S, R2S_M, R2S_N, EPI_STAGES)
            tRS_acc = r2s.retile(acc)
            rD_shape = cute.shape(thr_r2s.partition_S(sC))[:3]
            rD = cute.make_rmem_tensor(rD_shape, cutlass.Float32)
            rD_out = cute.make_rmem_tensor(rD_shape, c_dtype)
            per_sub = cute.size(rD)
            n_sub = cfg.tile_n // cfg.epi_n
            if cutlass.const_expr(epi is not None):
                # The extras of the first `depth` subtiles are loaded during the main loop (a row extra spread over
                # its K-steps), the others `depth` subtiles ahead in the epilogue: their HBM latency and bytes hide
                # under the WGMMAs, not in front of the epilogue (where every CTA of the wave would read at once).
                depth = _epi_depth(ext, epi, per_sub, n_sub)
                rows = [j for j, kind in enumerate(epi.kinds) if kind == "row"]
                small = [j for j, kind in enumerate(epi.kinds) if kind != "row"]
                tRS_cC = r2s.retile(thr_mma.partition_C(cute.make_identity_tensor((cfg.tile_m, cfg.tile_n))))
                epi_bufs = [_epi_buffers(epi, ext, per_sub) for _ in range(depth)]
        prefetch = epi is not None and cfg.tma_store and split is None  # the extras are loaded in the main loop
        scale = None
        if cutlass.const_expr(epi is not None):
            scale = _epi_scale(ext, epi)
        epi_count = Int32(0)

        t = cluster_id
        while t < num_cluster_tiles:
            if cutlass.const_expr(split is None):
                cm, cn = _tile_coords(t, clusters_m, clusters_n, cfg.group_m)
                k_n = k_tiles
            else:
                cm, cn, ks, _k_lo, k_n = _unit_coords(t, clusters_m, clusters_n, k_tiles, cfg.group_m, split)
            tm = cm * cfg.cluster_m + ccoord[0]
            tn = cn * cfg.cluster_n + ccoord[1]

            # ---- main loop: keep one K-step of WGMMAs in flight, free the stage behind it.
            # K-step 0 is peeled: its first wgmma overwrites the accumulators (scale-d = 0), so no zero fill.
            # consumer_try_wait peeks at the next stage's barrier early; consumer_wait then often returns at once.
            ring.consumer_wait(read, ring.consumer_try_wait(read))
            warpgroup.fence()
            tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
            for kb in cutlass.range_constexpr(k_blocks):
                cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, read.index)], tCrB[(None, None, kb, read.index)], acc)
                tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            warpgroup.commit_group()
            chunks = 1  # the K loop below runs as `chunks` consecutive loops, with row extras loaded between them
            if cutlass.const_expr(prefetch):
                m_left = mC_direct.shape[0] - tm * cfg.tile_m
                n_left = mC_direct.shape[1] - tn * cfg.tile_n
                tRS_e = [r2s.retile(f) for f in _epi_frags(ext, epi, thr_mma, tm, tn, cfg)]
                for e in cutlass.range_constexpr(depth):  # vectors, per_row: a few KiB, L2-resident: now
                    _epi_load([epi_bufs[e][j] for j in small], [tRS_e[j] for j in small], tRS_cC, e * per_sub,
                              m_left, n_left, True)
                if cutlass.const_expr(rows):
                    # A row extra (a residual: a whole tile from HBM) is loaded one subtile at a time, after K-steps
                    # stride, 2 stride, ...: the persistent CTAs start their tiles nearly together, and a whole
                    # tile each in one burst would stall their first K-steps. The K loop is cut into depth + 1
                    # loops instead of testing the K-step in its body: nothing is added to a K-step's path.
                    chunks = depth + 1
                    stride = cutlass.max(Int32(1), (k_n - 1) // depth)
            read.advance()
            ready = ring.consumer_try_wait(read)
            for c in cutlass.range_constexpr(chunks):
                lo, hi = Int32(1), k_n
                if cutlass.const_expr(chunks > 1):
                    lo = cutlass.min(k_n, 1 + c * stride)
                    if cutlass.const_expr(c < depth):
                        hi = cutlass.min(k_n, 1 + (c + 1) * stride)
                for _kt in cutlass.range(lo, hi, 1, unroll=1):
                    ring.consumer_wait(read, ready)
                    warpgroup.fence()
                    for kb in cutlass.range_constexpr(k_blocks):
                        s = read.index
                        cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, s)], tCrB[(None, None, kb, s)], acc)
                    warpgroup.commit_group()
                    warpgroup.wait_group(1)  # the previous K-step's wgmmas are done reading their stage
                    ring.consumer_release(release)
                    release.advance()
                    read.advance()
                    ready = cutlass.Boolean(True)
                    if _kt + 1 < k_n:
                        ready = ring.consumer_try_wait(read)
                if cutlass.const_expr(c < chunks - 1):
                    _epi_load([epi_bufs[c][j] for j in rows], [tRS_e[j] for j in rows], tRS_cC, c * per_sub,
                              m_left, n_left, True)
            warpgroup.wait_group(0)
            ring.consumer_release(release)
            release.advance()

            # ---- epilogue
            if cutlass.const_expr(split is not None):
                _split_fixup(acc, thr_mma, mC_direct, tm, tn, ks, tiles_n, ctid, split, cfg, c_dtype, epi, ext, scale)
            elif cutlass.const_expr(cfg.tma_store):
                gC_tile = cute.local_tile(mC, (cfg.tile_m, cfg.tile_n), (tm, tn))
                gC_epi = cute.zipped_divide(gC_tile, (cfg.tile_m, cfg.epi_n))  # ((TM, EPI_N), (1, TN/EPI_N))
                bSG_sC, bSG_gC = cpasync.tma_partition(
                    tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2), gC_epi)
                for e in cutlass.range_constexpr(n_sub):
                    for v in cutlass.range_constexpr(per_sub):
                        rD[v] = tRS_acc[e * per_sub + v]
                    if cutlass.const_expr(epi is not None):
                        _epi_compute(rD, epi_bufs[e % depth], mC_direct.shape[1], scale, epi)
                        if cutlass.const_expr(e + depth < n_sub):  # refill the buffer just read, depth ahead
                            _epi_load(epi_bufs[e % depth], tRS_e, tRS_cC, (e + depth) * per_sub, m_left, n_left,
                                      True)
                    rD_out.store(rD.load().to(c_dtype))
                    buf = epi_count % cfg.epi_stages
                    cute.copy(r2s, rD_out, tRS_sC[(None, None, None, buf)])
                    cute.arch.fence_proxy("async.shared", space="cta")  # make stmatrix visible to TMA
                    if warp == STORE_WARP:
                        # At most EPI_STAGES-2 stores (e-1 ... e-EPI_STAGES+2) may still read SMEM, so the
                        # buffer written right after this barrier, (e+1) % EPI_STAGES, is free: one barrier
                        # per subtile instead of two.
                        cute.arch.cp_async_bulk_wait_group(cfg.epi_stages - 2, read=True)
                    epi_barrier.arrive_and_wait()
                    if warp == STORE_WARP:
                        with cute.arch.elect_one():  # one lane: a TMA store issued by 32 lanes writes C 32 times
                            cute.copy(tma_c, bSG_sC[(None, buf)], bSG_gC[(None, (0, e))])
                            cute.arch.cp_async_bulk_commit_group()
                    epi_count += 1
            else:
                _store_direct(acc, thr_mma, mC_direct, tm, tn, cfg, c_dtype, epi, ext, scale)
            t += num_clusters

        if cutlass.const_expr(cfg.tma_store):
            if warp == STORE_WARP:
                cute.arch.cp_async_bulk_wait_group(0, read=True)  # SMEM must outlive the last bulk store's reads


@cute.jit
def _launch(mA_in: cute.Tensor, mB_in: cute.Tensor, mC_in: cute.Tensor, max_ctas: Int32, stream, cfg: cutlass.Constexpr,
            split_in: cutlass.Constexpr, epi: cutlass.Constexpr = None, ext_in=()):
    """Host side of both TMA kernels: rebuild row-major tensors and TMA descriptors from the tensors' pointers and
    M, N, K, then launch a persistent grid of clusters (split_in: None, or (workspace, counters, S, k_per); epi:
    None, or the Epilogue whose inputs are ext_in)."""
    dtype = mA_in.element_type
    m, k = mA_in.shape
    n = mB_in.shape[0]
    k = cute.assume(k, divby=128 // dtype.width)  # TMA: row strides are multiples of 16 bytes
    n_c = cute.assume(n, divby=128 // mC_in.element_type.width) if cfg.tma_store else n
    mA = cute.make_tensor(mA_in.iterator, cute.make_layout((m, k), stride=(k, 1)))
    mB = cute.make_tensor(mB_in.iterator, cute.make_layout((n, k), stride=(k, 1)))
    mC = cute.make_tensor(mC_in.iterator, cute.make_layout((m, n_c), stride=(n_c, 1)))
    views = () if epi is None else _epi_views(ext_in, epi, m, n_c)
    if cutlass.const_expr(cfg.swap_ab):
        # C^T = B . A^T: B [N, K] is the MMA's A operand, A [M, K] its B operand (both K-major, as before), and C and
        # the epilogue's (M, N) views are read transposed: the kernel's (row, column) is C's (column, row).
        mA, mB, m, n = mB, mA, n, m
        mC = _transposed(mC)
        if cutlass.const_expr(epi is not None):
            views = (*(_transposed(v) for v in views[:len(epi.kinds)]), *views[len(epi.kinds):])

    sA_l, sB_l, sC_l = _smem_layouts(dtype, cfg, mC_in.element_type)
    with_epi = () if epi is None else (epi, views)  # kernel names spell their arguments
    a_op = cpasync.CopyBulkTensorTileG2SMulticastOp() if cfg.cluster_n > 1 else cpasync.CopyBulkTensorTileG2SOp()
    b_op = cpasync.CopyBulkTensorTileG2SMulticastOp() if cfg.cluster_m > 1 else cpasync.CopyBulkTensorTileG2SOp()
    tma_a, tA = cpasync.make_tiled_tma_atom(
        a_op, mA, cute.slice_(sA_l, (None, None, 0)), (cfg.tile_m, cfg.tile_k), num_multicast=cfg.cluster_n)
    tma_b, tB = cpasync.make_tiled_tma_atom(
        b_op, mB, cute.slice_(sB_l, (None, None, 0)), (cfg.tile_n, cfg.tile_k), num_multicast=cfg.cluster_m)
    if cutlass.const_expr(cfg.tma_store):
        tma_c, tC = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), mC, cute.slice_(sC_l, (None, None, 0)), (cfg.tile_m, cfg.epi_n))
    else:
        tma_c, tC = tma_a, tA  # unused placeholders: this variant stores with st.global

    tiles_m = (m + cfg.tile_m - 1) // cfg.tile_m
    tiles_n = (n + cfg.tile_n - 1) // cfg.tile_n
    k_tiles = (k + cfg.tile_k - 1) // cfg.tile_k
    cluster_tiles = ((tiles_m + cfg.cluster_m - 1) // cfg.cluster_m) * ((tiles_n + cfg.cluster_n - 1) // cfg.cluster_n)
    mma = _tiled_mma(dtype, cfg)
    launch = dict(block=[cfg.threads, 1, 1], cluster=[cfg.cluster_m, cfg.cluster_n, 1], stream=stream,
                  min_blocks_per_mp=1)
    if cutlass.const_expr(split_in is None):
        clusters = cutlass.min(cluster_tiles, max_ctas)
        gemm_kernel(tma_a, tA, tma_b, tB, tma_c, tC, mma, mC, tiles_m, tiles_n, k_tiles, cfg, dtype, *with_epi).launch(
            grid=[clusters * cfg.cluster_m, cfg.cluster_n, 1], **launch)
    else:
        ws_in, count, splits, k_per = split_in
        n_pad = tiles_n * cfg.tile_n  # workspace rows padded to whole tiles: partial tiles need no column clip
        mWS = cute.make_tensor(ws_in.iterator, cute.make_layout((splits, m, n_pad), stride=(m * n_pad, n_pad, 1)))
        ctas = cutlass.min(cluster_tiles * splits, max_ctas)
        gemm_splitk_kernel(tma_a, tA, tma_b, tB, tma_c, tC, mma, mC, tiles_m, tiles_n, k_tiles, mWS, count, splits,
                           k_per, cfg, dtype, *with_epi).launch(grid=[ctas, 1, 1], **launch)


def _transposed(t: cute.Tensor) -> cute.Tensor:
    """The (rows, cols) tensor t seen as (cols, rows): its modes swapped, the same memory."""
    return cute.make_tensor(t.iterator, cute.make_layout((t.shape[1], t.shape[0]), stride=(t.stride[1], t.stride[0])))


@cute.jit
def gemm_launch(
    mA_in: cute.Tensor, mB_in: cute.Tensor, mC_in: cute.Tensor, max_clusters: Int32, stream, cfg: cutlass.Constexpr,
):
    """The large and skinny tile configs: one tile per work unit, a persistent grid of max_clusters at most."""
    _launch(mA_in, mB_in, mC_in, max_clusters, stream, cfg, None)


@cute.jit
def gemm_splitk_launch(
    mA_in: cute.Tensor, mB_in: cute.Tensor, mC_in: cute.Tensor, ws: cute.Tensor, count: cute.Tensor, splits: Int32,
    k_per: Int32, max_ctas: Int32, stream, cfg: cutlass.Constexpr,
):
    """Split-K: ws holds S x M x N_pad fp32 partials, count tiles x consumer-threads int32 zeros."""
    _launch(mA_in, mB_in, mC_in, max_ctas, stream, cfg, (ws, count, splits, k_per))


@cute.jit
def gemm_epi_launch(
    mA_in: cute.Tensor, mB_in: cute.Tensor, mC_in: cute.Tensor, max_clusters: Int32, stream, cfg: cutlass.Constexpr,
    epi: cutlass.Constexpr, *ext: cute.Tensor,
):
    """gemm_launch with an Epilogue: ext = its extra inputs (lowered.KINDS[2:] order), then scale_a, scale_b."""
    _launch(mA_in, mB_in, mC_in, max_clusters, stream, cfg, None, epi, ext)


@cute.jit
def gemm_splitk_epi_launch(
    mA_in: cute.Tensor, mB_in: cute.Tensor, mC_in: cute.Tensor, ws: cute.Tensor, count: cute.Tensor, splits: Int32,
    k_per: Int32, max_ctas: Int32, stream, cfg: cutlass.Constexpr, epi: cutlass.Constexpr, *ext: cute.Tensor,
):
    """gemm_splitk_launch with an Epilogue (run by the last split on the fixed-order sum)."""
    _launch(mA_in, mB_in, mC_in, max_ctas, stream, cfg, (ws, count, splits, k_per), epi, ext)


# ---------------------------------------------------------------- GEMV (M <= GEMV_MAX_M): CUDA cores, no tiles


@cute.jit
def _gemv_block(mA: cute.Tensor, mB: cute.Tensor, acc: cute.Tensor, chunk0: Int32, col0: Int32,
                cfg: cutlass.Constexpr, predicated: cutlass.Constexpr):
    """One block of K: UNROLL x COLS 16-byte loads of B issued first (all in flight), then the A vectors of each
    row, converted to fp32, dotted with them. Lane l reads chunks chunk0 + 32 u; `predicated` (the K tail) skips
    chunks past the end, whose registers stay 0."""
    dtype = mB.element_type
    vec = GEMV_LOAD_BITS // dtype.width
    kc, n, m = mB.shape[1], mB.shape[2], mA.shape[2]
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=128)
    rB = cute.make_rmem_tensor((vec, cfg.unroll, cfg.cols), dtype)
    if cutlass.const_expr(predicated):
        rB.fill(0.0)
    for c in cutlass.range_constexpr(cfg.cols):
        row = cutlass.min(col0 + c, n - 1)  # past N: re-read row N-1, never stored
        for u in cutlass.range_constexpr(cfg.unroll):
            if cutlass.const_expr(predicated):
                if chunk0 + u * 32 < kc:
                    cute.copy(atom, mB[None, chunk0 + u * 32, row], rB[None, u, c])
            else:
                cute.copy(atom, mB[None, chunk0 + u * 32, row], rB[None, u, c])
    for r in cutlass.range_constexpr(cfg.rows):
        a_row = cutlass.min(r, m - 1)  # rows past M (a padded bucket) re-read row M-1, never stored
        for u in cutlass.range_constexpr(cfg.unroll):
            rA = cute.make_rmem_tensor((vec,), dtype)
            if cutlass.const_expr(predicated):
                rA.fill(0.0)
                if chunk0 + u * 32 < kc:
                    cute.copy(atom, mA[None, chunk0 + u * 32, a_row], rA)
            else:
                cute.copy(atom, mA[None, chunk0 + u * 32, a_row], rA)
            a = rA.load().to(cutlass.Float32)
            for c in cutlass.range_constexpr(cfg.cols):
                acc[r, c] = acc[r, c] + (a * rB[None, u, c].load().to(cutlass.Float32)).reduce(
                    cute.ReductionOp.ADD, 0.0, 0)


@cute.kernel
def gemv_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, cfg: cutlass.Constexpr,
                epi: cutlass.Constexpr = None, ext=()):
    """Warp w of CTA b owns the COLS output columns from (b * WARPS + w) * COLS, for every row of A; its 32 lanes
    stride along K in 16-byte chunks, then a butterfly shuffle sums each dot product across the warp. With an
    Epilogue, lane 0 runs it on its ROWS x COLS sums (ext: _epi_views), extras read by (row, column)."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    lane = tidx % 32
    warp = cute.arch.make_warp_uniform(tidx // 32)
    col0 = (bidx * cfg.warps + warp) * cfg.cols
    m, n = mC.shape
    kc = mB.shape[1]
    acc = cute.make_rmem_tensor((cfg.rows, cfg.cols), cutlass.Float32)
    acc.fill(0.0)
    step = 32 * cfg.unroll
    full = kc // step
    for it in cutlass.range(full, unroll=1):
        _gemv_block(mA, mB, acc, it * step + lane, col0, cfg, False)
    if full * step < kc:
        _gemv_block(mA, mB, acc, full * step + lane, col0, cfg, True)
    if cutlass.const_expr(epi is None):
        for r in cutlass.range_constexpr(cfg.rows):
            for c in cutlass.range_constexpr(cfg.cols):
                total = cute.arch.warp_reduction(acc[r, c], operator.add, threads_in_group=32)
                if lane == 0:
                    if r < m:
                        if col0 + c < n:
                            mC[r, col0 + c] = total.to(mC.element_type)
    else:
        count = cfg.rows * cfg.cols
        vals = cute.make_rmem_tensor((count,), cutlass.Float32)
        for r in cutlass.range_constexpr(cfg.rows):
            for c in cutlass.range_constexpr(cfg.cols):
                vals[r * cfg.cols + c] = cute.arch.warp_reduction(acc[r, c], operator.add, threads_in_group=32)
        if lane == 0:
            loaded = _epi_buffers(epi, ext, count)
            for j in cutlass.range_constexpr(len(epi.kinds)):
                loaded[j].fill(0.0)
                for r in cutlass.range_constexpr(cfg.rows):
                    for c in cutlass.range_constexpr(cfg.cols):
                        if r < m:
                            if col0 + c < n:
                                loaded[j][r * cfg.cols + c] = ext[j][r, col0 + c]
            _epi_compute(vals, loaded, n, _epi_scale(ext, epi), epi)
            for r in cutlass.range_constexpr(cfg.rows):
                for c in cutlass.range_constexpr(cfg.cols):
                    if r < m:
                        if col0 + c < n:
                            mC[r, col0 + c] = vals[r * cfg.cols + c].to(mC.element_type)


@cute.jit
def _gemv_launch(mA_in: cute.Tensor, mB_in: cute.Tensor, mC_in: cute.Tensor, stream, cfg: cutlass.Constexpr,
                 epi: cutlass.Constexpr, ext):
    """A [M,K] and B [N,K] seen as (VEC elements, K/VEC chunks, row): each chunk is one 128-bit load (16-byte rows)."""
    m, k = mA_in.shape
    n = mB_in.shape[0]
    vec = GEMV_LOAD_BITS // mA_in.element_type.width
    k = cute.assume(k, divby=vec)
    kc = k // vec
    mA = cute.make_tensor(mA_in.iterator, cute.make_layout((vec, kc, m), stride=(1, vec, k)))
    mB = cute.make_tensor(mB_in.iterator, cute.make_layout((vec, kc, n), stride=(1, vec, k)))
    mC = cute.make_tensor(mC_in.iterator, cute.make_layout((m, n), stride=(n, 1)))
    cols_per_cta = cfg.warps * cfg.cols
    with_epi = () if epi is None else (epi, _epi_views(ext, epi, m, n))  # the kernel's name spells its arguments
    gemv_kernel(mA, mB, mC, cfg, *with_epi).launch(grid=[(n + cols_per_cta - 1) // cols_per_cta, 1, 1],
                                                   block=[cfg.warps * 32, 1, 1], stream=stream)


@cute.jit
def gemv_launch(mA_in: cute.Tensor, mB_in: cute.Tensor, mC_in: cute.Tensor, stream, cfg: cutlass.Constexpr):
    """The GEMV of the built-in matmul."""
    _gemv_launch(mA_in, mB_in, mC_in, stream, cfg, None, ())


@cute.jit
def gemv_epi_launch(mA_in: cute.Tensor, mB_in: cute.Tensor, mC_in: cute.Tensor, stream, cfg: cutlass.Constexpr,
                    epi: cutlass.Constexpr, *ext: cute.Tensor):
    """The GEMV with an Epilogue: ext = its extra inputs (lowered.KINDS[2:] order), then scale_a, scale_b."""
    _gemv_launch(mA_in, mB_in, mC_in, stream, cfg, epi, ext)


# ---------------------------------------------------------------- host API

_compiled: dict = {}  # (Config, dtype[, Epilogue, C dtype, extras' dtypes]) -> compiled launcher, for every M, N, K
_launches: dict = {}  # (torch dtype, a.shape, b.shape, cfg[, extras' dtypes]) -> _Launch, for the hot path
_max_clusters: dict = {}  # cluster size -> co-resident clusters on this GPU


@dataclass(frozen=True)
class _Launch:
    """What run() needs per argument signature: the compiled launcher, the scalars it takes after the tensors (grid
    cap; split-K: S, k_per, grid cap), the output's shape, and split-K's scratch (the fp32 workspace and the int32
    counters, owned by the signature). launcher None: an empty problem (M, N or K = 0), where out is only
    zero-filled."""

    launcher: object
    args: tuple
    out_shape: tuple
    scratch: tuple = ()
    out_dtype: object = None  # None: a's dtype (the built-in bf16/fp16 matmul)


def _compile_args(dtype: str, cfg, epi: Epilogue | None = None, c_dtype: str | None = None,
                  extra_dtypes: tuple = ()) -> tuple:
    """Fake A [M,K], B [N,K], C [M,N], row-major and 16-byte aligned, sharing the M, N, K symbols (the wrapper
    checks that the three agree and are contiguous); split-K adds a 1-D fp32 workspace and int32 counters and
    the scalars S, k_per; the TMA paths a placeholder grid cap; then the env stream and cfg. With an Epilogue:
    epi, then its extra inputs (row [M, N], vector [N], per_row [M] or [M, 1] as op.json has them, on the same
    symbols, of extra_dtypes) and the fp8 scales (one fp32 element each); C is c_dtype (default: dtype)."""
    c_dtype = c_dtype or dtype
    row = 128 // host.DTYPE_BITS[dtype]  # elements per 16 bytes: TMA's row-stride rule
    m, n, k = rt.dim(), rt.dim(128 // host.DTYPE_BITS[c_dtype] if getattr(cfg, "tma_store", False) else 1), rt.dim(row)
    a, b, c = (rt.tensor(t, shape, (stride, 1))
               for t, shape, stride in ((dtype, (m, k), k), (dtype, (n, k), k), (c_dtype, (m, n), n)))
    tail = ()
    if epi is not None:
        extras = [rt.tensor(t, host.sized(dims, m, n), (n, 1) if kind == "row" else (1,) * len(dims))
                  for kind, t, dims in zip(epi.kinds, extra_dtypes,
                                           host.epilogue_dims(lowered.INPUTS[2:]) if epi.kinds else ())]
        scales = [rt.tensor("fp32", (1,), (1,), align=4) for _ in range(2 * epi.scaled)]
        tail = (epi, *extras, *scales)
    if isinstance(cfg, Gemv):
        return a, b, c, rt.STREAM, cfg, *tail
    if cfg.split_k:
        ws, count = rt.tensor("fp32", (rt.dim(),), (1,)), rt.tensor("int32", (rt.dim(),), (1,))
        return a, b, c, ws, count, Int32(2), Int32(1), Int32(1), rt.STREAM, cfg, *tail
    return a, b, c, Int32(1), rt.STREAM, cfg, *tail


def _launcher_of(cfg, epi: Epilogue | None = None):
    if epi is not None:
        return gemv_epi_launch if isinstance(cfg, Gemv) else gemm_splitk_epi_launch if cfg.split_k else gemm_epi_launch
    return gemv_launch if isinstance(cfg, Gemv) else gemm_splitk_launch if cfg.split_k else gemm_launch


def epilogue_of(dtype: str) -> Epilogue | None:
    """This workspace's Epilogue for A of `dtype`: the lowered compute (op "lowered"), the fp8 scales, both, or
    None (the built-in bf16/fp16 matmul)."""
    if not LOWERED and dtype != "fp8":
        return None
    return Epilogue(kinds=tuple(lowered.KINDS[2:]) if LOWERED else (), lowered=LOWERED, scaled=dtype == "fp8")


def c_dtype_of(dtype: str) -> str:
    """C's dtype: A's (bf16/fp16), bf16 for fp8 inputs; fp32 where the lowered function returns fp32."""
    if LOWERED and lowered.OUT_DTYPES[0] == "fp32":
        return "fp32"
    return "bf16" if dtype == "fp8" else dtype


def config_for(m: int, n: int, k: int, dtype: str = "bf16") -> Config | Gemv:
    """choose_config's regime and tile, adapted to the dtypes: fp8 A/B take tile_k = 128 (128-byte rows: the same
    128-byte swizzle, 48 KiB stages and stage count as bf16's 64), and an fp32 C takes the st.global epilogue
    (stmatrix moves 16-bit values). The GEMV reads 16 fp8 per 16-byte load; nothing else changes."""
    cfg = choose_config(m, n, k)
    if isinstance(cfg, Gemv):
        return cfg
    if dtype == "fp8":
        cfg = replace(cfg, tile_k=128, elem_bytes=1)
    if host.DTYPE_BITS[c_dtype_of(dtype)] != 16:
        cfg = replace(cfg, tma_store=False)
    return cfg


def _co_resident_clusters(cluster_size: int) -> int:
    if cluster_size not in _max_clusters:
        from cutlass.utils import HardwareInfo

        _max_clusters[cluster_size] = HardwareInfo().get_max_active_clusters(cluster_size)
    return _max_clusters[cluster_size]


def _check_epilogue_inputs(a, b, rest, out_dtype, m: int, n: int) -> tuple:
    """host.py's checks of run()'s inputs after a and b: the lowered op's extras (lowered.INPUTS[2:]) and, for fp8,
    scale_a and scale_b; returns the extras' op.json dtype names (part of the compile key)."""
    names = lowered.INPUTS[2:] if LOWERED else ()
    op = lowered.SOURCE if LOWERED else "matmul"
    kinds = tuple(lowered.KINDS[2:]) if LOWERED else ()
    extras = rest[:len(kinds)]
    host.epilogue_operands(op, names, kinds, extras, m, n, out_dtype, a.device)
    if host.is_fp8(a):
        host.scale_operands(op, rest[len(kinds):], a.device)
    return tuple(host.dtype_of(t, op) for t in extras)


def _prepare(a, b, rest, out, cfg) -> _Launch:
    """A signature's first call, or a refused one: host.py's checks, the config, the compiled launcher."""
    dtype = host.dtype_of(a, "matmul", ("bf16", "fp16", "fp8"))
    n_rest = (len(lowered.INPUTS) - 2 if LOWERED else 0) + 2 * (dtype == "fp8")  # extras, then the fp8 scales
    host.check_count(lowered.SOURCE if LOWERED else "matmul", (a, b, *rest), 2 + n_rest)
    c_dtype = c_dtype_of(dtype)
    out_dtype = None if c_dtype == dtype else getattr(torch, host.TORCH_DTYPES[c_dtype])  # None: a's dtype
    _, m, n, k, _ = host.matmul_dims(a, b, out, "TMA", out_dtype=out_dtype)
    epi = epilogue_of(dtype)
    extra_dtypes = _check_epilogue_inputs(a, b, rest, out_dtype or a.dtype, m, n) if epi is not None else ()
    if min(m, n, k) == 0:
        return _Launch(None, (), (m, n), out_dtype=out_dtype)
    cfg = cfg or config_for(m, n, k, dtype)
    if isinstance(cfg, Gemv) and m > cfg.rows:
        raise ValueError(f"matmul: the GEMV config of {cfg.rows} rows cannot take M = {m}")
    key = (cfg, dtype) if epi is None else (cfg, dtype, epi, c_dtype, extra_dtypes)
    launcher = rt.compiled(_compiled, key, _launcher_of(cfg, epi),
                           lambda: _compile_args(dtype, cfg, epi, c_dtype, extra_dtypes))
    if isinstance(cfg, Gemv):
        return _Launch(launcher, (), (m, n), out_dtype=out_dtype)
    if cfg.split_k:
        rows, cols = cfg.frame(m, n)  # as the kernel tiles the problem (C^T's when it swaps A and B)
        splits, k_per = split_count(rows, cols, k, cfg)
        tiles_m, tiles_n = -(-rows // cfg.tile_m), -(-cols // cfg.tile_n)
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError("matmul: the first call of a split-K shape allocates its scratch; make it before "
                               "CUDA-graph capture")
        scratch = (a.new_empty(splits * rows * tiles_n * cfg.tile_n, dtype=torch.float32),
                   a.new_zeros(tiles_m * tiles_n * cfg.mma_wgs * WG, dtype=torch.int32))
        return _Launch(launcher, (splits, k_per, _co_resident_clusters(1)), (m, n), scratch, out_dtype)
    return _Launch(launcher, (_co_resident_clusters(cfg.cluster_size),), (m, n), out_dtype=out_dtype)


def run(a, b, *rest, out=None, cfg=None):
    """out[M,N] = epilogue(a[M,K] @ b[N,K].T) on the current CUDA stream (fp32 accumulation).

    The built-in matmul: run(a, b) with bf16/fp16 a, b, out in their dtype. fp8: run(a, b, scale_a, scale_b), a and
    b float8_e4m3fn, the scales one-element fp32 tensors, out bf16 = scale_a * scale_b * (a @ b.T). A lowered op
    (op.json "op": "lowered"): run(*inputs) in lowered.INPUTS order (a, b, then its extras), out =
    lowered.compute(acc, ...) in its OUT_DTYPES; with fp8 a and b, scale_a and scale_b follow the extras.

    The hot path is a dict lookup on (dtype, shapes, device, cfg[, the extras' dtypes]) and the TVM-FFI call, which
    checks dtypes, shapes, contiguity, device and alignment itself; see cutedsl_runtime.py. Split-K's workspace and
    counters belong to the signature (the kernel resets the counters), so a run() allocates nothing but `out`, and a
    CUDA graph replays correctly; two calls of one split-K shape must not run concurrently on two streams."""
    signature = (a.dtype, a.shape, b.shape, a.device, cfg) if not rest else (
        a.dtype, a.shape, b.shape, a.device, cfg, tuple(t.dtype for t in rest))
    launch = _launches.get(signature)
    if launch is None:
        launch = _launches[signature] = _prepare(a, b, rest, out, cfg)
    if launch.launcher is None:  # nothing to multiply: out = epilogue(0) is not defined here; out = 0
        return host.matmul_dims(a, b, out, "TMA", out_dtype=launch.out_dtype)[-1].zero_()
    if out is None:
        out = a.new_empty(launch.out_shape) if launch.out_dtype is None else a.new_empty(launch.out_shape,
                                                                                          dtype=launch.out_dtype)
    try:
        launch.launcher(a, b, out, *launch.scratch, *launch.args, *rest)
    except (TypeError, ValueError):  # the wrapper refused the call before launching
        _prepare(a, b, rest, out, cfg)  # host.py says why in the words every cell uses ...
        raise  # ... and the wrapper's own message stands if host.py finds nothing wrong
    return out


def _case_dims(case: dict | None) -> tuple[int, int, int]:
    v = (case or {}).get("vars") or {}
    return int(v.get("M", 8192)), int(v.get("N", 8192)), int(v.get("K", 8192))


def _tag(cfg) -> str:
    if isinstance(cfg, Gemv):
        return f"gemv_r{cfg.rows}"
    split = "_splitk" if cfg.split_k else ""
    swap = "_swap" if cfg.swap_ab else ""
    return f"{cfg.tile_m}x{cfg.tile_n}_c{cfg.cluster_m}x{cfg.cluster_n}{swap}{split}{'' if cfg.tma_store else '_stg'}"


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", dtype: str | None = None) -> str:
    """Compile run()'s launcher for sm_90a without a GPU (fake tensors); write and return the PTX.

    The case's M, N, K pick the Config, as in run(); any other M, N, K of that Config shares the PTX. A lowered op
    (or fp8) compiles its Epilogue variant, its extras in C's dtype (run() compiles an fp32 vector's own variant)."""
    dtype = dtype or OP_SPEC["dtype"]
    cfg = config_for(*_case_dims(case), dtype)
    epi = epilogue_of(dtype)
    if epi is None:
        return rt.dump_ptx(_launcher_of(cfg), _compile_args(dtype, cfg), out_dir, f"matmul_{dtype}_{_tag(cfg)}")
    c_dtype = c_dtype_of(dtype)
    extras = (c_dtype,) * len(epi.kinds)
    return rt.dump_ptx(_launcher_of(cfg, epi), _compile_args(dtype, cfg, epi, c_dtype, extras), out_dir,
                       f"{'lowered' if epi.lowered else 'matmul'}_{dtype}_{_tag(cfg)}")


def _describe_epilogue(dtype: str, cfg) -> dict:
    """describe()'s words for the Epilogue of this workspace and dtype (nothing for the built-in bf16/fp16 matmul)."""
    epi = epilogue_of(dtype)
    if epi is None:
        return {}
    steps = ["fp32 accumulators x (scale_a * scale_b)"] if epi.scaled else []
    if epi.lowered:
        reads = ", ".join(f"{name} ({kind})" for name, kind in zip(lowered.INPUTS[2:], epi.kinds)) or "no extra inputs"
        steps.append(f"{lowered.SOURCE}'s compute on them ({reads}, each read at the accumulator's (row, column), "
                     "masked at the matrix edge)")
    where = ("per 128x32 subtile before stmatrix, its extras loaded one subtile ahead (the first under the last "
             "WGMMAs)" if not isinstance(cfg, Gemv) and cfg.tma_store else
             "on the warp-reduced sums in lane 0" if isinstance(cfg, Gemv) else
             f"{_epi_chunk(cfg)} accumulators at a time before the "
             "st.global" + (" of C transposed" if cfg.swap_ab else "")
             + (" (after the fixed-order split-K sum)" if cfg.split_k else ""))
    return {"epilogue": "; then ".join(steps) + f"; {where}; C in {c_dtype_of(dtype)}",
            **({"fp8": "e4m3 A and B (K-major), wgmma m64nNk32 e4m3 x e4m3 -> fp32, 128-element (128-byte) K-tiles"
                if not isinstance(cfg, Gemv) else "e4m3 A and B, 16 per 16-byte load, fp32 FMA on the CUDA cores"}
               if dtype == "fp8" else {})}


def describe(case: dict) -> dict:
    """Launch configuration of a case, for the plan and the report; "path" says which regime and why."""
    m, n, k = _case_dims(case)
    dtype = OP_SPEC.get("dtype", "bf16")
    cfg = config_for(m, n, k, dtype)
    if isinstance(cfg, Gemv):
        ctas = -(-n // (cfg.warps * cfg.cols))
        return {**_describe_epilogue(dtype, cfg),
            "path": f"GEMV: M = {m} <= {GEMV_MAX_M} rows would fill {m} of a 64-row tensor-core tile, so each warp "
                    f"dots {cfg.cols} rows of B with the {cfg.rows}-row bucket of A on the CUDA cores, streaming B "
                    f"once with 128-bit loads",
            "threads_per_cta": cfg.warps * 32, "grid": [ctas, 1, 1], "grid_blocks": ctas,
            "data_movement": f"ld.global.v4 of B ({cfg.unroll} x {cfg.cols} 16-byte loads in flight per lane) and A; "
                             "fp32 FMA; warp shuffle reduction; st.global of C",
        }
    rows, cols = cfg.frame(m, n)  # the problem as the kernel tiles it (N x M when it computes C^T)
    tiles = -(-rows // cfg.tile_m) * -(-cols // cfg.tile_n)
    cluster_tiles = -(-rows // (cfg.tile_m * cfg.cluster_m)) * -(-cols // (cfg.tile_n * cfg.cluster_n))
    splits, k_per = split_count(rows, cols, k, cfg) if cfg.split_k else (1, -(-k // cfg.tile_k))
    units = cluster_tiles * splits
    clusters = min(units, SM_COUNT // cfg.cluster_size)
    if cfg.swap_ab:
        path = (f"swapped skinny tiles: M = {m} <= {SWAP_MAX_M}, so the kernel computes C^T = B . A^T on tiles of "
                f"64 rows of B x {cfg.tile_n} columns (A's {m} rows padded to {cfg.tile_n}, not to 64: wgmma "
                f"m64n{cfg.tile_n}k16), {tiles} tiles over {SM_COUNT} SMs"
                + (f"; too few to fill them, so K is split: S = {splits} splits of {k_per} K-tiles meet in a "
                   "deterministic fp32 fix-up" if cfg.split_k else
                   ", each streaming its rows of B over all of K (no split, no fix-up)"))
    elif (cfg.tile_m, cfg.tile_n) == (DEFAULT.tile_m, DEFAULT.tile_n):
        path = f"large tiles: {tiles} tiles of {cfg.tile_m}x{cfg.tile_n} make at least one wave over {SM_COUNT} SMs"
    else:
        kind = "skinny 64-row tiles" if cfg.tile_m == 64 else "128x128 tiles"
        path = (f"{kind}: 128x256 tiles would make less than one wave over {SM_COUNT} SMs, and {tiles} tiles of "
                f"{cfg.tile_m}x{cfg.tile_n} have the least modelled time (waves x MMA work / the tile's MMA rate) "
                f"without splitting K")
    return {
        "path": path,
        "tile_mnk": [cfg.tile_m, cfg.tile_n, cfg.tile_k],
        "cluster_mn": [cfg.cluster_m, cfg.cluster_n],
        "splits": splits,
        "stages": cfg.stages,
        "smem_bytes": cfg.smem_bytes(),
        "tiles": tiles,
        "waves": round(units * cfg.cluster_size / (clusters * cfg.cluster_size), 2),
        "threads_per_cta": cfg.threads,
        "warpgroups": f"1 TMA producer + {cfg.mma_wgs} WGMMA consumer(s) (64 x {cfg.tile_n} each)",
        "swap_ab": cfg.swap_ab,
        "grid": [clusters * cfg.cluster_m, cfg.cluster_n, 1],
        "grid_blocks": clusters * cfg.cluster_size,
        "data_movement": "global -> SMEM by TMA"
        + ((" (A multicast across the 2-CTA cluster)" if cfg.swap_ab else " (B multicast across the 2-CTA cluster)")
           if cfg.cluster_m > 1 else "")
        + f" into a {cfg.stages}-stage mbarrier ring; WGMMA reads SMEM, accumulates fp32 in registers; "
        + ("fp32 partials -> workspace, last split sums them in order -> st.global"
           if cfg.split_k else "stmatrix -> SMEM -> TMA store" if cfg.tma_store else "predicated st.global"),
        **_describe_epilogue(dtype, cfg),
    }
