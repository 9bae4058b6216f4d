"""The CuTe DSL GEMM cell's small-M regimes, compiled for sm_90a on the CPU: each path's PTX shows what makes it.

choose_config sends a shape to one of five paths (large tiles, 128x128 tiles, skinny 64-row tiles, swapped skinny
tiles with or without split-K, GEMV); these tests pin which shapes take which path, and compile the small-M paths
to check the instructions they are built on: wgmma m64n16k16 with A's rows on the MMA's N (C^T = B . A^T), the
2x1 multicast of A, C stored transposed by st.global, the acq_rel counter of the split-K fix-up, and 128-bit loads
+ warp shuffles (no tensor cores) for the GEMV, none of them with local-memory spills. The large-tile and skinny
paths keep their PTX (see test_compile_only.py and benchmarks/kernel_hashes.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from helpers import load_package


def _case(shape: str) -> dict:
    m, n, k = (int(x) for x in shape.split("x"))
    return {"vars": {"M": m, "N": n, "K": k}}


@pytest.fixture(scope="module")
def gemm(workspace_of):
    ws = workspace_of("H200", "matmul")
    return load_package(ws, "gemm_regimes").kernel


def _no_spills(ptx_path) -> None:
    """ptxas (when installed) allocates the PTX's registers: no stack frame, no spill stores or loads."""
    if not shutil.which("ptxas"):
        return
    done = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(ptx_path), "-o", "/dev/null"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert re.search(r"0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", done.stderr), done.stderr


@pytest.mark.parametrize("shape,path,splits,width", [
    ("8192x8192x8192", "large tiles", 1, 256), ("4096x14336x4096", "large tiles", 1, 256),
    ("128x8192x8192", "skinny 64-row tiles", 1, 128), ("65x8192x8192", "skinny 64-row tiles", 1, 128),
    ("512x4096x4096", "128x128 tiles", 1, 128), ("512x8192x8192", "large tiles", 1, 256),
    ("512x14336x4096", "large tiles", 1, 256),
    # M <= 64: C^T = B . A^T, A's rows padded to 16 / 32 / 64 columns; 128 tiles of 64 rows of B for N = 8192
    ("16x8192x8192", "swapped skinny tiles", 1, 16), ("5x14336x8192", "swapped skinny tiles", 1, 16),
    ("32x8192x8192", "swapped skinny tiles", 1, 32), ("64x8192x8192", "swapped skinny tiles", 1, 64),
    # ... and split over K when the 64-row tiles leave half the SMs idle (64 tiles: S = 2; 4 tiles: S = 16)
    ("64x4096x4096", "swapped skinny tiles", 2, 64), ("16x256x8192", "swapped skinny tiles", 16, 16),
    ("1x4096x4096", "GEMV", 1, None), ("4x8192x8192", "GEMV", 1, None),
])
def test_describe_names_the_path(gemm, shape, path, splits, width):
    d = gemm.describe(_case(shape))
    assert d["path"].startswith(path) and d.get("splits", 1) == splits
    assert width is None or d["tile_mnk"][1] == width
    assert ("K is split" in d["path"]) == (splits > 1)


@pytest.mark.parametrize("k", [64, 520, 4136, 8192, 14336])
@pytest.mark.parametrize("n", [256, 4097, 8192])
def test_split_count_covers_k_without_empty_splits(gemm, n, k):
    """Every split owns >= 1 K-tile, the splits together own exactly the K loop, one wave of work units (in the
    swapped frame: N rows of B by M = 16 columns)."""
    cfg = gemm.Config(tile_m=64, tile_n=16, cluster_m=1, tma_store=False, split_k=True, swap_ab=True)
    splits, k_per = gemm.split_count(n, 16, k, cfg)
    k_tiles = -(-k // 64)
    assert 1 <= splits and (splits - 1) * k_per < k_tiles <= splits * k_per
    tiles = -(-n // cfg.tile_m)
    assert splits == 1 or tiles * splits <= gemm.SM_COUNT


def test_swapped_ptx(gemm, tmp_path):
    """16x8192x8192: 128 tiles of 64 rows of B by A's 16 rows, no split: wgmma m64n16k16, A multicast to the 2x1
    cluster, C stored transposed by st.global (no TMA store, no atomics)."""
    ptx = gemm.compile_only(_case("16x8192x8192"), tmp_path)
    (path,) = tmp_path.glob("*64x16_c2x1_swap_stg*.ptx")
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n16k16\.f32\.bf16\.bf16", ptx)
    assert "multicast::cluster" in ptx and "cp.async.bulk.tensor" in ptx
    assert "atom." not in ptx and "st.global.b16" in ptx and "cp.async.bulk.global.shared" not in ptx
    assert ".local" not in ptx
    _no_spills(path)


def test_split_k_ptx(gemm, tmp_path):
    ptx = gemm.compile_only(_case("16x4096x4096"), tmp_path)
    (path,) = tmp_path.glob("*splitk*.ptx")
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n16k16\.f32\.bf16\.bf16", ptx), "bf16 WGMMA, fp32 acc"
    assert "cp.async.bulk.tensor" in ptx and "mbarrier" in ptx, "TMA loads into the mbarrier ring"
    # the fix-up: one gpu-scope (the default scope) acq_rel increment per thread, no other atomics, no spin loop
    assert re.findall(r"atom\.[a-z0-9_.]*", ptx) == ["atom.global.acq_rel.add.u32"]
    assert re.search(r"st\.global(\.[a-z0-9]+)*\s+\[[^]]+\],\s*0;", ptx), "the last split resets its counter to 0"
    assert "ld.global.v2" in ptx and "st.global.v2" in ptx, "fp32 partials stored and re-read as pairs"
    assert ".local" not in ptx
    _no_spills(path)


@pytest.mark.parametrize("shape,rows,unroll", [("1x4096x4096", 1, 8), ("3x4097x4104", 4, 4)])
def test_gemv_ptx(gemm, tmp_path, shape, rows, unroll):
    ptx = gemm.compile_only(_case(shape), tmp_path)
    (path,) = tmp_path.glob(f"*gemv_r{rows}*.ptx")
    cols = gemm.Gemv(rows=rows).cols
    # main block: unroll x cols loads of B and unroll x rows of A, all 128-bit; the K-tail block as many again
    assert ptx.count("ld.global.v4") == 2 * unroll * (cols + rows)
    assert ptx.count("shfl.sync.bfly") == 5 * rows * cols, "one 32-lane butterfly per output"
    assert "wgmma" not in ptx and "cp.async.bulk" not in ptx and ".local" not in ptx
    _no_spills(path)


def test_128x128_tiles_ptx(gemm, tmp_path):
    """The compute-heavy sub-wave path: two consumer warpgroups on 64x128 each, 2x1 multicast, TMA store."""
    ptx = gemm.compile_only(_case("512x4096x4096"), tmp_path)
    (path,) = tmp_path.glob("*128x128_c2x1*.ptx")
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.bf16\.bf16", ptx)
    assert "cp.async.bulk.tensor" in ptx and "setmaxnreg" in ptx and ".local" not in ptx
    _no_spills(path)


def test_large_shapes_have_no_split_or_gemv_code(gemm, tmp_path):
    ptx = gemm.compile_only(_case("8192x8192x8192"), tmp_path)
    assert "atom." not in ptx and "shfl.sync.bfly" not in ptx
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16", ptx)
