"""The FlyDSL GEMM cell's epilogues and fp8 (issue 15), compiled to gfx942 and gfx950 ISA on the CPU.

Every variant of tests/flydsl_gemm_builds.py (the four generated GEMM epilogues, the fp8 matmul, fp8 composed with a
hand-written epilogue at N % 8 != 0) compiled once in the background; here its ISA is read instruction by instruction:
the target's MFMA (by its exact name), the A/B tile loop's dwordx4 traffic unchanged, the epilogue inputs read with
16-byte loads by (row, column) (or one load per element), C's stores, and no scratch or spills. The built-in matmul's
own ISA is pinned in tests/test_flydsl_compile.py. Compiled only: no AMD GPU runs these kernels here.
"""

from __future__ import annotations

import re

import flydsl_gemm_builds as builds
import pytest
from helpers import WS_TEMPLATE, load_module
from test_flydsl_compile import metadata, needs_flydsl

# Per 256 x 128 tile, lane and K tile: 8 dwordx4 loads of A and 4 of B; the ISA has the prologue's and the loop's.
TILE_LOADS = 2 * (8 + 4)
CHUNKS = 8 * 2  # (M tiles t) x (column pairs p): the lane's 8-column chunks of C, one 16-byte store each (bf16)
MFMA_16BIT = {"gfx942": "v_mfma_f32_16x16x16_bf16", "gfx950": "v_mfma_f32_16x16x32_bf16"}
# fp8, in the prologue's K tile and the loop's: gfx942 8 x 4 tiles x 4 (two chunks of 16 K-values, two MFMAs of 8
# each); gfx950 8 x 4 x 1 (both chunks in one 16x16x128)
MFMA_FP8 = {"gfx942": ("v_mfma_f32_16x16x32_fp8_fp8", 2 * 8 * 4 * 4),
            "gfx950": ("v_mfma_scale_f32_16x16x128_f8f6f4", 2 * 8 * 4)}
VARIANTS = [(name, arch) for name, _, _, _, archs in builds.VARIANTS for arch in archs]


def compiled(name: str, arch: str) -> dict:
    result = builds.start()["compiled"].result()[(name, arch)]
    assert "error" not in result, result["error"][-3000:]
    text = result["isa"]
    assert f'.amdgcn_target "amdgcn-amd-amdhsa-unknown-{arch}"' in text and len(metadata(text, "wavefront_size")) == 1
    assert "scratch_" not in text and metadata(text, "private_segment_fixed_size") == [0], "scratch memory per lane"
    assert metadata(text, "vgpr_spill_count") == [0] and metadata(text, "sgpr_spill_count") == [0]
    assert metadata(text, "group_segment_fixed_size") == [48 * 1024]  # one 256 x 128 stage of 128-byte rows
    return result


def mfmas(text: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for op in re.findall(r"^\s*(v_mfma\w*)", text, re.M):
        found[op] = found.get(op, 0) + 1
    return found


@needs_flydsl
@pytest.mark.parametrize(("name", "arch"), [v for v in VARIANTS if v[0].startswith("lowered_gemm_")])
def test_lowered_epilogue_isa(name, arch):
    """bf16 GEMM + the user's epilogue: the 16-bit MFMA, the tile loop's loads, then per kind: a vector input is one
    dwordx4 per column pair (2), a row input one per chunk (16); C one dwordx4 per chunk."""
    result = compiled(name, arch)
    text, kinds = result["isa"], builds.declared(next(v[1] for v in builds.VARIANTS if v[0] == name))["KINDS"][2:]
    assert list(mfmas(text)) == [MFMA_16BIT[arch]]
    assert text.count("buffer_load_dwordx4") == TILE_LOADS + 2 * kinds.count("vector") + CHUNKS * kinds.count("row")
    assert text.count("buffer_store_dwordx4") == CHUNKS
    assert "buffer_load_ushort" not in text and "buffer_store_short" not in text
    assert result["files"] == [f"kernel_lowered_bf16_256x128x64_s1.{arch}.s"]
    assert any("lowered compute" in step for step in result["describe"]["epilogue"])


@needs_flydsl
@pytest.mark.parametrize("arch", builds.ARCHS)
def test_fp8_matmul_isa(arch):
    """fp8: only the target's fp8 MFMA, a 128-deep K tile in the same 128-byte rows (the same dwordx4 loads), the two
    scales read once (buffer_load_dword), C in bf16 with one dwordx4 per chunk."""
    result = compiled("fp8_matmul", arch)
    text = result["isa"]
    op, count = MFMA_FP8[arch]
    assert mfmas(text) == {op: count}
    assert text.count("buffer_load_dwordx4") == TILE_LOADS and text.count("buffer_store_dwordx4") == CHUNKS
    assert text.count("buffer_load_dword ") == 2
    assert result["files"] == [f"kernel_matmul_fp8_256x128x128_s1.{arch}.s"]
    assert result["describe"]["mfma"] == op and result["describe"]["tile_mnk"] == [256, 128, 128]


@needs_flydsl
def test_fp8_with_an_epilogue_one_element_at_a_time():
    """fp8 scales, then the user's compute with a row and a per_row input and an fp32 C, at N % 8 != 0: every row
    element is its own 2-byte load and every C element its own 4-byte store (each kept iff in range), the per_row
    value one load per M tile."""
    text = compiled("fp8_row_scale_residual_st16", "gfx950")["isa"]
    assert mfmas(text) == {MFMA_FP8["gfx950"][0]: MFMA_FP8["gfx950"][1]}
    assert text.count("buffer_load_ushort") == CHUNKS * 8 + 8
    assert text.count("buffer_store_dword ") == CHUNKS * 8 and "buffer_store_dwordx4" not in text
    assert text.count("buffer_load_dword ") == 2  # the scales


def test_an_fp8_workspace_refuses_the_other_e4m3():
    """host.fp8_format, which the cell calls with its target's e4m3 (FP8_FORMAT): a gfx942 workspace takes
    float8_e4m3fnuz only, and names it."""
    torch = pytest.importorskip("torch")
    host = load_module(WS_TEMPLATE / "host.py", "host_fp8_format")
    a = torch.zeros(16, 32, dtype=torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="float8_e4m3fnuz .this GPU's fp8 e4m3"):
        host.fp8_format("matmul", (a, a), torch.float8_e4m3fnuz)
    host.fp8_format("matmul", (a, a), torch.float8_e4m3fn)
