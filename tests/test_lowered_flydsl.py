"""FlyDSL cells on the lowered op: each lowered_examples/ file compiles, in its cell, to gfx942 and gfx950 ISA on
the CPU with the cell's data movement intact (128-bit buffer accesses, no scratch, the reductions' barriers), and so
does MASK_SCALAR, the input model's other kinds (a runtime scalar first, so x is not input 0, and a bool mask), PER_ROW
(one value per row, a scale and a mask),
QUANT, a quantizer whose row output is int8 or fp8 e4m3fn (converted by the store, 8 bytes per access), ROPE (halves
or lanes of q, cos and sin broadcast over q's rows, a row output written in two pieces) and HEADS (rows of a head).

A workspace is baked for the cell's built-in op, then turned into a lowered-op workspace as the template does
(op.json "op": "lowered" and "inputs": lowered.INPUTS, the example copied in as lowered.py beside kernel.py and
pointwise.py). Compiles run in children (FlyDSL must not share this process with CuTe DSL), one per target
(tests/flydsl_batch.py); each distinct variant is compiled once. Compiled only: no AMD GPU runs these kernels here.
The reduction cell's run() itself (its signature, checks and launch slots) runs on the CPU with the HIP call stubbed
out (test_reduction_run_hands_flydsl_the_rows).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import flydsl_batch
from lowered_sources import (BROADCAST_PER_ROW, HEADS, LANES, MASK_SCALAR, MASK_SCALAR_ELEMENTWISE, PARTS, PER_ROW, QUANT,
                              QUANT_ELEMENTWISE, QUANT_FP8, QUANT_FP8_ELEMENTWISE, ROPE, ROPE_LANES)
import pytest
from helpers import ROOT, lowered_constants, make_lowered
from test_flydsl_compile import HAVE_FLYDSL, kernel_bodies, metadata, needs_flydsl, partial_accesses
from tools import scaffold

EXAMPLES = Path(__file__).resolve().parent / "lowered_examples"
BUILTIN = {"elementwise": "silu_mul", "reduction": "softmax"}  # the op a workspace is baked for, then replaced
LOWERED_UNROLL = 2  # the elementwise cell's dwordx4 accesses per lane per tensor at 2^24 elements and more ...
SMALL_N = 1 << 24  # ... and 1 below (kernel.unroll_for)

SOURCES = {"mask_scalar": MASK_SCALAR, "mask_scalar_elementwise": MASK_SCALAR_ELEMENTWISE,  # beside EXAMPLES' files
           "parts": PARTS, "lanes": LANES, "quant": QUANT, "quant_fp8": QUANT_FP8,
           "quant_elementwise": QUANT_ELEMENTWISE, "quant_fp8_elementwise": QUANT_FP8_ELEMENTWISE, "rope": ROPE,
           "rope_lanes": ROPE_LANES, "heads": HEADS, "per_row": PER_ROW,
           "broadcast_per_row": BROADCAST_PER_ROW}
NARROW = ("int8", "fp8")  # OUT_DTYPES stored as one byte: vec bytes per access (dwordx2 beside a bf16 x)

# (pattern, example, dtype, dims, path): the elementwise example with N a multiple of the vector and not (the
# vector input then gathers one element at a time), the reduction examples on a register-path row and a
# looped one (512 long rows: enough to fill the GPU, so not split); MASK_SCALAR in each cell and on each path; PARTS
# and LANES (dims: [M, N], x [M, 2N]) on each path; ROPE (dims: [M, D], the output row: q's halves of D/2) on each
# path, ROPE_LANES on the register path; HEADS with [64, 4096]: 2048 rows of 128; layer norm on 8 long rows, split
# across workgroups (kernel.split: its mean pass, its variance pass that needs the mean, the stores: 3 kernels).
VARIANTS = [
    ("elementwise", "lowered_gelu_tanh_mul_bias.py", "bf16", [8192, 8192], "vector loads"),
    ("elementwise", "lowered_gelu_tanh_mul_bias.py", "bf16", [1000, 1001], "vector gathers"),
    *[("reduction", example, "bf16", dims, path)
      for example in ("lowered_softmax_temp_lse.py", "lowered_layer_norm.py", "lowered_fused_add_rmsnorm.py")
      for dims, path in (([4096, 8192], "rows"), ([512, 131072], "looped"))],
    ("reduction", "lowered_layer_norm.py", "bf16", [8, 131072], "split"),
    ("elementwise", "mask_scalar_elementwise", "bf16", [8192, 8192], "vector loads"),
    ("reduction", "mask_scalar", "bf16", [4096, 8192], "rows"),
    ("reduction", "mask_scalar", "bf16", [512, 131072], "looped"),
    *[("reduction", wide, "bf16", dims, path) for wide in ("parts", "lanes")
      for dims, path in (([64, 7168], "rows"), ([512, 65536], "looped"))],
    *[("reduction", quant, "bf16", [64, 8192], "rows") for quant in ("quant", "quant_fp8")],
    *[("elementwise", quant, "bf16", [8192, 8192], "vector loads")
      for quant in ("quant_elementwise", "quant_fp8_elementwise")],
    ("reduction", "rope", "bf16", [64, 128], "rows"),
    ("reduction", "rope_lanes", "bf16", [64, 128], "rows"),
    ("reduction", "rope", "bf16", [512, 131072], "looped"),
    ("reduction", "heads", "bf16", [64, 4096], "rows"),
    ("reduction", "per_row", "bf16", [4096, 8192], "rows"),
    ("reduction", "broadcast_per_row", "bf16", [4096, 8192], "rows"),
]
MASK_VARIANTS = [v for v in VARIANTS if v[1].startswith("mask_scalar")]
PER_ROW_VARIANTS = [v for v in VARIANTS if v[1].endswith("per_row")]
ROPE_VARIANTS = [v for v in VARIANTS if v[1].startswith("rope")]
HEADS_VARIANTS = [v for v in VARIANTS if v[1] == "heads"]
SPLIT_VARIANTS = [v for v in VARIANTS if v[4] == "split"]
WIDE_VARIANTS = [v for v in VARIANTS if v[1] in ("parts", "lanes")]
QUANT_VARIANTS = [v for v in VARIANTS if v[1].startswith("quant")]
ARCHS = ("gfx942", "gfx950")


def source(example: str) -> str:
    """The lowered.py text of an example: a file of lowered_examples/ or one of this test's SOURCES."""
    return SOURCES[example] if example in SOURCES else (EXAMPLES / example).read_text()


def declared(example: str) -> dict:
    """The example's module-level constants (INPUTS, KINDS, OUTPUTS, REDUCTIONS, ...), read without importing it."""
    return lowered_constants(source(example))


def lowered_workspace(dest: Path, pattern: str, example: str, dtype: str, arch: str) -> Path:
    """A workspace of the cell turned into a lowered-op one, as the template's bake does."""
    ws = scaffold.compile_workspace(dest / "ws", pattern, BUILTIN[pattern], dtype, arch)
    return make_lowered(ws, source(example), "flydsl")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Every (variant, arch)'s ISA and describe() plan, compiled once: one child per target, both cores at once."""
    if not HAVE_FLYDSL:
        return {}
    spaces = {(i, arch): lowered_workspace(tmp_path_factory.mktemp("lowered"), v[0], v[1], v[2], arch)
              for i, v in enumerate(VARIANTS) for arch in ARCHS}
    jobs = {arch: [(ws, {"dims": VARIANTS[i][3], "vars": {"numel": VARIANTS[i][3][0] * VARIANTS[i][3][1]}})
                   for (i, a), ws in spaces.items() if a == arch] for arch in ARCHS}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = dict(zip(ARCHS, pool.map(lambda j: flydsl_batch.run(j, describe=True), jobs.values())))
    failed = {str(ws): r["error"] for done in results.values() for ws, r in done.items() if "error" in r}
    assert not failed, failed
    out = {}
    for (i, arch), ws in spaces.items():
        _, example, dtype, _, path = VARIANTS[i]
        files = list((ws / "build").glob(f"kernel_lowered_{dtype}*.{arch}.s"))
        assert len(files) == 1 and files[0].read_text() == results[arch][ws]["isa"], files
        out[(example, path, arch)] = results[arch][ws]
    return out


@pytest.fixture(scope="module")
def isa(compiled):
    """Every (variant, arch)'s ISA text."""
    return {key: result["isa"] for key, result in compiled.items()}


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("pattern", "example", "dtype", "dims", "path"),
                         [v for v in VARIANTS if v not in HEADS_VARIANTS + SPLIT_VARIANTS])  # a head: one wave
def test_lowered_isa(isa, arch, pattern, example, dtype, dims, path):
    """128-bit loads of the inputs and stores of the row outputs (a quantizer's int8 / fp8 row: the same vec elements,
    64-bit), no scratch or spills, the reductions' LDS step."""
    text = isa[(example, path, arch)]
    facts = declared(example)
    kernels = len(metadata(text, "wavefront_size"))
    assert f'.amdgcn_target "amdgcn-amd-amdhsa-unknown-{arch}"' in text and kernels == 1
    assert "buffer_load_dwordx4" in text, "no 128-bit buffer loads"
    rows_out = [d for kind, d in zip(facts["OUTPUTS"], facts["OUT_DTYPES"]) if kind == "row"]
    store = "buffer_store_dwordx2" if set(rows_out) <= set(NARROW) else "buffer_store_dwordx4"
    assert rows_out and store in text, f"no vector buffer stores ({store}) of the row output"
    assert "scratch_" not in text
    assert metadata(text, "private_segment_fixed_size") == [0], "scratch memory per lane (spills or a stack)"
    assert metadata(text, "vgpr_spill_count") == [0] and metadata(text, "sgpr_spill_count") == [0]
    assert metadata(text, "vgpr_count")[0] <= 128, "over 128 VGPRs: a 1024-lane workgroup could not launch"
    if pattern == "elementwise":
        kinds = list(zip(facts["KINDS"], facts["DTYPES"]))
        rows = kinds.count(("row", "float"))  # a mask's accesses are its vec bytes: dwordx2 beside a bf16 x
        vectors = kinds.count(("vector", "float"))
        # full tile: every input's chunks as dwordx4; the tail: the vector inputs' chunks stay dwordx4 (always in
        # range) when N is a multiple of the vector, else every vector element is a 16-bit gather
        fast = path == "vector loads"
        unroll = LOWERED_UNROLL if dims[0] * dims[1] >= SMALL_N else 1  # [1000, 1001]: one vector per lane
        expected = unroll * (rows + vectors * (2 if fast else 0))
        assert text.count("buffer_load_dwordx4") == expected
        assert text.count(store) == unroll * len(facts["OUTPUTS"])
        assert metadata(text, "group_segment_fixed_size") == [0]
    else:
        # every reduce() is a row spanning several waves here: DPP, then one barrier and its own LDS slot
        reductions = len(facts["REDUCTIONS"])
        assert text.count("s_barrier") == reductions
        assert metadata(text, "group_segment_fixed_size")[0] >= 4 * reductions * 2
        if path == "looped":
            assert "s_cbranch_scc" in text or "s_cbranch_vccnz" in text, "no loop over the row"


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("pattern", "example", "dtype", "dims", "path"), MASK_VARIANTS)
def test_masks_and_scalars_keep_their_kinds(isa, arch, pattern, example, dtype, dims, path):
    """MASK_SCALAR: x (the second input) keeps its dwordx4 loads; the bool mask is loaded as its bytes, 8 per access
    beside bf16 x (dwordx2, as many as x's loads); the scalar is one 16-bit load per lane (outside the looped
    path's passes), never a row; pw.round is the hardware's round-half-to-even (v_rndne_f32); no scratch."""
    text = isa[(example, path, arch)]
    assert "scratch_" not in text and metadata(text, "private_segment_fixed_size") == [0]
    assert metadata(text, "vgpr_spill_count") == [0] and metadata(text, "sgpr_spill_count") == [0]
    assert "v_rndne_f32" in text, "pw.round is not a rounding instruction"
    x4, x2, x1 = (text.count(f"buffer_load_{w}") for w in ("dwordx4", "dwordx2", "ushort"))
    if pattern == "elementwise":
        # full tile: x's and w's chunks as dwordx4 and the mask's as dwordx2; the tail: w's chunks stay dwordx4 (N
        # a multiple of the vector), x and the mask one element per load; alpha one ushort
        assert (x4, x2) == (LOWERED_UNROLL * 3, LOWERED_UNROLL)
        assert text.count("buffer_load_ubyte") == LOWERED_UNROLL * 8, "the tail's mask bytes"
        assert x1 in (LOWERED_UNROLL * 8 + 1, LOWERED_UNROLL * 8 + 2), "x's tail elements and alpha"
    else:
        # every pass loads x, the mask and w once per chunk (rows: 2 chunks; looped: 1 chunk per pass, the
        # reductions' passes (lowered.PASSES; without it one per reduce() call: 2) and one for the row output, each
        # pass twice: its loop over the whole slices and its partial last slice)
        passes = declared(example).get("PASSES")
        chunks = 2 if path == "rows" else 2 * ((max(passes) + 1 if passes else 2) + 1)
        assert (x4, x2) == (2 * chunks, chunks), (x4, x2)
        assert x1 == 1, "alpha: one load per lane"
        assert text.count("s_barrier") == 2


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("pattern", "example", "dtype", "dims", "path"), PER_ROW_VARIANTS)
def test_one_value_per_row_is_one_load_per_lane(compiled, arch, pattern, example, dtype, dims, path):
    """PER_ROW: the per-row scale (bf16) and keep mask (a byte) are one buffer load each per lane, at the lane's row
    (outside the looped path's passes), never a row: x and w keep their dwordx4 loads (one per chunk on the register
    path); no scratch."""
    text, plan = compiled[(example, path, arch)]["isa"], compiled[(example, path, arch)]["describe"]
    assert "scratch_" not in text and metadata(text, "private_segment_fixed_size") == [0]
    assert metadata(text, "vgpr_spill_count") == [0] and metadata(text, "sgpr_spill_count") == [0]
    singles = [d for k, d in zip(declared(example)["KINDS"], declared(example)["DTYPES"]) if k.endswith("per_row")]
    assert text.count("buffer_load_ushort") == singles.count("float"), "a per-row bf16 value: one load per lane"
    assert text.count("buffer_load_ubyte") == singles.count("bool"), "a per-row mask byte: one load per lane"
    rows = sum(k in ("row", "vector") for k in declared(example)["KINDS"])  # x, a [N] vector: dwordx4 per chunk
    if path == "rows":
        assert text.count("buffer_load_dwordx4") == rows * plan["chunks_per_lane"]
    assert "buffer_load_dwordx4" in text


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("pattern", "example", "dtype", "dims", "path"), WIDE_VARIANTS)
def test_wide_inputs_are_read_once_with_vector_loads(isa, arch, pattern, example, dtype, dims, path):
    """PARTS / LANES: x [M, 2N] read in two N-wide parts (a dwordx4 load each per chunk, one from column N) or as
    interleaved lanes (one 2*vec-wide register tensor per chunk: two dwordx4 loads, deinterleaved in registers),
    beside w's one dwordx4 per chunk: every byte of x once, 128-bit loads only; the [M, N] output's chunks stored
    with dwordx4; no scratch. Rows of 7168: 3 loads share the budget (21 values: two chunks per lane, 7 waves per
    row); looped rows of 65536: one chunk per iteration, one pass (no reduce()), its loop over the whole slices and
    its partial last slice each loading it."""
    text = isa[(example, path, arch)]
    assert "scratch_" not in text and metadata(text, "private_segment_fixed_size") == [0]
    assert metadata(text, "vgpr_spill_count") == [0] and metadata(text, "sgpr_spill_count") == [0]
    chunks = 2 if path == "rows" else 2 * 1  # looped: the whole slices' loop and the partial last slice
    assert text.count("buffer_load_dwordx4") == (2 + 1) * chunks  # x's two parts (or its lane pair) and w
    assert text.count("buffer_store_dwordx4") == chunks
    narrow = [w for w in ("dwordx2", "dword ", "dword\t", "ushort", "short_d16", "ubyte") if f"buffer_load_{w}" in text]
    assert not narrow, f"x or w read with narrower loads: {narrow}"
    assert text.count("s_barrier") == 0


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("pattern", "example", "dtype", "dims", "path"), QUANT_VARIANTS)
def test_quantizer_outputs_are_converted_by_the_store(isa, arch, pattern, example, dtype, dims, path):
    """QUANT: x's dwordx4 loads; pw.round is v_rndne_f32; the row's int8 / fp8 bytes stored with one 8-byte buffer store
    (dwordx2) per chunk of 8 bf16 x values, converted once by the store: int8 by v_cvt_i32_f32 (truncation toward
    zero, as torch's .to()), fp8 by v_cvt_pk_fp8_f32 (two values each), which on gfx942 writes FNUZ e4m3, so the
    cell converts v / 2 clamped to +-224 (v_med3_f32: 448, saturated as torch does) and the bytes are OCP e4m3fn's;
    no 16-byte stores, no scratch.
    Rows of 8192 in the reduction cell: 256 lanes per row, 4 chunks; the fp32 scale one dword store per row. The
    elementwise cell: 2 chunks per lane on a full tile, the tail one element (a byte) per store."""
    text = isa[(example, path, arch)]
    facts = declared(example)
    assert "scratch_" not in text and metadata(text, "private_segment_fixed_size") == [0]
    assert metadata(text, "vgpr_spill_count") == [0] and metadata(text, "sgpr_spill_count") == [0]
    assert "v_rndne_f32" in text, "pw.round is not a rounding instruction"
    chunks = 4 if pattern == "reduction" else LOWERED_UNROLL
    assert text.count("buffer_load_dwordx4") == chunks, "x: one 16-byte load per chunk"
    assert text.count("buffer_store_dwordx2") == chunks, "the int8 / fp8 row: one 8-byte store per chunk"
    assert "buffer_store_dwordx4" not in text
    if pattern == "reduction":
        assert text.count("buffer_store_dword ") + text.count("buffer_store_dword\t") == 1, "the fp32 scale"
    else:
        assert text.count("buffer_store_byte") == LOWERED_UNROLL * 8, "the tail: one byte per store"
    if facts["OUT_DTYPES"][0] == "int8":
        assert "v_cvt_i32_f32" in text, "no float -> int conversion"
        assert "v_cvt_pk_fp8_f32" not in text
    else:
        assert text.count("v_cvt_pk_fp8_f32") == chunks * 8 // 2 * (1 if pattern == "reduction" else 2), \
            "one converter per two values (the elementwise tail converts its own)"
        assert ("v_med3_f32" in text) == (arch == "gfx942"), "gfx942's FNUZ converter needs the clamp of v / 2"


NARROW_ACCESSES = ("dwordx2", "dword ", "dword\t", "ushort", "short", "ubyte", "byte")


def _no_scratch(text: str) -> None:
    assert "scratch_" not in text and metadata(text, "private_segment_fixed_size") == [0]
    assert metadata(text, "vgpr_spill_count") == [0] and metadata(text, "sgpr_spill_count") == [0]


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("pattern", "example", "dtype", "dims", "path"), ROPE_VARIANTS)
def test_rope_reads_halves_and_broadcast_rows_and_writes_whole_rows(compiled, arch, pattern, example, dtype, dims,
                                                                    path):
    """RoPE (a case's N is the output row, D; the kernel's rows are its halves of D/2): q's two halves (or one 2*vec
    register tensor of lane pairs per chunk), cos and sin broadcast over B and H, each found through its [L0, L1, L2]
    view's runtime sizes and strides (two integer divisions of the row index per input, once per row: v_cvt_f32_u32
    + v_rcp_f32 each), and the output row written whole: halves to two places, lanes interleaved in registers. Loads
    6 and stores 2 per chunk either way, every access 128 bits (one chunk per lane: six loads share the registers,
    and the looped path's iteration is one chunk); no scratch."""
    result = compiled[(example, path, arch)]
    text, plan = result["isa"], result["describe"]
    _no_scratch(text)
    assert plan["vector_elements"] == 8
    chunks = 1 if path == "looped" else plan["chunks_per_lane"]
    assert chunks == 1 and plan["lanes_per_row"] == (512 if path == "looped" else 8)
    copies = 2 if path == "looped" else 1  # the whole slices' loop and the partial last slice
    assert text.count("buffer_load_dwordx4") == 6 * chunks * copies
    assert text.count("buffer_store_dwordx4") == 2 * chunks * copies
    narrow = [w for w in NARROW_ACCESSES for op in ("load", "store") if f"buffer_{op}_{w}" in text]
    assert not narrow, f"narrower accesses: {narrow}"
    assert text.count("v_cvt_f32_u32") == 2 * 2, "the broadcast rows: two divisions per broadcast input"
    assert text.count("s_barrier") == 0


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("pattern", "example", "dtype", "dims", "path"), HEADS_VARIANTS)
def test_heads_run_rows_of_the_head(compiled, arch, pattern, example, dtype, dims, path):
    """A QK-norm over heads of 128: a case [64, 4096] runs 2048 rows of 128 (4 lanes of 4 chunks of 8 bf16 each, 64
    rows per workgroup), one reduction per head: DPP within the 4-lane group, no LDS and no barrier; x and the weight
    one dwordx4 load each per chunk, the row one dwordx4 store per chunk; no scratch."""
    result = compiled[(example, path, arch)]
    text, plan = result["isa"], result["describe"]
    _no_scratch(text)
    assert plan["lanes_per_row"] * plan["vector_elements"] * plan["chunks_per_lane"] == 128
    assert plan["grid_blocks"] * plan["rows_per_workgroup"] >= 64 * 4096 // 128
    chunks = plan["chunks_per_lane"]
    assert text.count("buffer_load_dwordx4") == 2 * chunks and text.count("buffer_store_dwordx4") == chunks
    assert "quad_perm" in text, "no DPP step across the head's lanes"
    assert text.count("s_barrier") == 0 and metadata(text, "group_segment_fixed_size") == [0]


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("pattern", "example", "dtype", "dims", "path"), SPLIT_VARIANTS)
def test_split_rows_run_each_pass_as_a_kernel(compiled, arch, pattern, example, dtype, dims, path):
    """Layer norm on 8 rows of 131072 (x, weight and bias: one chunk per lane per iteration) split across G
    workgroups per row (describe: the grid [G, M]), one kernel per pass (lowered.PASSES (0, 1): the variance needs
    the mean) and one that stores: kernel A0 folds sum(x) over its slice (x only: whole slices and the partial last
    one) and stores its partial; A1 loads the row's G mean partials and combines them (one barrier), folds
    sum((x - mean)^2) and stores that partial; B loads and combines both (two barriers), then reads x, weight and
    bias and stores its slice of the row (dwordx4). No scratch, no spills, on every kernel."""
    result = compiled[(example, path, arch)]
    text, plan = result["isa"], result["describe"]
    assert "scratch_" not in text and metadata(text, "private_segment_fixed_size") == [0] * 3
    assert metadata(text, "vgpr_spill_count") == [0] * 3 and metadata(text, "sgpr_spill_count") == [0] * 3
    groups = plan["workgroups_per_row"]
    assert plan["path"].startswith(f"split rows ({groups} workgroups per row") and groups > 1 and plan["kernels"] == 3
    assert plan["grid"] == [groups, dims[0], 1] and plan["lanes_per_row"] == 512 * groups
    bodies = kernel_bodies(text)
    assert list(bodies) == ["split_kernel_0", "split_kernel_1", "split_kernel_2"], list(bodies)
    got = [(b.count("buffer_load_dwordx4"), partial_accesses(b, "load"), partial_accesses(b, "store"),
            b.count("s_barrier"), b.count("buffer_store_dwordx4")) for b in bodies.values()]
    assert got == [(2, 0, 1, 1, 0), (2, 1, 1, 2, 0), (6, 2, 0, 2, 2)], got


# run() of the reduction cell on a CPU with the HIP call stubbed (benchmarks/flydsl_launch_cpu.py's Stubs): the kernels
# are compiled for real, then every line of run() runs as on the GPU machine but the launch. PER_ROW with x [B, 3, 512]
# (host.rows_nd: M = 3B rows), a scale [B, 3] and a bool keep [B, 3, 1] one value per row, two outputs; ROPE with q
# [B, 4, 3, 128] and cos/sin [4, 128] broadcast over B and H; HEADS with q [T, 1024] viewed [T, 8, 128].
LAUNCH_ROWS_CHILD = """
import json, os, sys
sys.path[:0] = [sys.argv[1], os.getcwd()]
import flydsl_launch_cpu as fl
stubs = fl.Stubs(counting=True)
import kernel, torch

bf16 = torch.bfloat16
checks = fl.counting_host(kernel, "lowered_operands")
views = fl.counting_host(kernel, "rows_nd")
got = {"abi": [], "shapes": [], "refused": []}


def facts():
    return next(reversed(kernel._launches.values())).facts


def refused(args, words):
    launches = stubs.launches
    try:
        kernel.run(*args)
    except ValueError as exc:
        got["refused"].append(words in str(exc) and stubs.launches == launches)
    else:
        got["refused"].append(False)


if kernel.lw.facts().module.SOURCE == "test:per_row":
    w = torch.randn(512, dtype=bf16)
    for b in (2, 5):  # the second call: other M, the same signature
        x, scale, keep = torch.randn(b, 3, 512, dtype=bf16), torch.randn(b, 3, dtype=bf16), torch.rand(b, 3, 1) > 0.5
        y, r = kernel.run(x, scale, keep, w)
        _, nv, ldvs, iters, *_ = facts()
        slots = kernel.lw.short_slots([x.view(-1), scale.view(-1), keep.view(torch.uint8).view(-1), w, y.view(-1), r])
        got["abi"].append(fl.same_abi(stubs.abi, fl.expect_abi(*slots, *ldvs, 3 * b, nv, iters)))
        got["shapes"].append([list(y.shape), list(r.shape)])
    y2, r2 = torch.empty_like(y), torch.empty(5, 3, dtype=torch.float32)
    assert kernel.run(x, scale, keep, w, out=(y2, r2))[0] is y2  # given outputs: viewed, written, handed back
    _, nv, ldvs, iters, *_ = facts()
    slots = kernel.lw.short_slots([x.view(-1), scale.view(-1), keep.view(torch.uint8).view(-1), w, y2.view(-1),
                                   r2.view(-1)])
    got["abi"].append(fl.same_abi(stubs.abi, fl.expect_abi(*slots, *ldvs, 15, nv, iters)))
    got["prepared"] = len(checks)  # before the refusals, which run host.py's checks to say why
    got["rows_nd"] = len(views)  # none: x [B, 3, 512] and its kin are contiguous, launched as they are
    wide = torch.randn(5, 3, 640, dtype=bf16)[..., :512]  # a strided x: host.rows_nd's [M, N] views
    y3 = kernel.run(wide, scale, keep, w)[0]
    got["strided"] = [len(views), list(y3.shape), fl.same_abi(stubs.abi[:1], [wide.data_ptr()])]
    refused((x, scale[:, :2], keep, w), "scale (per_row) must be a contiguous (15,)")
    refused((x, scale, keep, w[:256]), "weight (vector) must be a contiguous (512,)")
    refused((x.half(), scale, keep, w), "of dtype torch.float16")
elif kernel.lw.facts().module.SOURCE == "test:heads":  # q [T, 8*128] viewed [T, 8, 128] inside the function
    w = torch.randn(128, dtype=bf16)
    for t in (3, 5):
        q = torch.randn(t, 1024, dtype=bf16)
        y = kernel.run(q, w)
        _, nv, ldvs, iters, *_ = facts()
        slots = kernel.lw.short_slots([q.view(-1), w, y.view(-1)])
        got["abi"].append(fl.same_abi(stubs.abi, fl.expect_abi(*slots, *ldvs, 8 * t, nv, iters)))
        got["shapes"].append(list(y.shape))
    got["rows_nd"] = len(views)  # none: the function's own view of a contiguous q is its rows of one head
    got["shapes"].append(list(kernel.run(torch.randn(5, 2048, dtype=bf16)[:, :1024], w).shape))  # strided: views
    got["strided"] = len(views)
    refused((torch.randn(5, 1000, dtype=bf16), w), "not a whole number of heads of 128")
else:
    cos, sin = torch.randn(4, 128, dtype=bf16), torch.randn(4, 128, dtype=bf16)
    for b in (2, 5):
        q = torch.randn(b, 4, 3, 128, dtype=bf16)
        got["shapes"].append(list(kernel.run(q, cos, sin).shape))
    refused((q, cos[:3], sin), "cos's S is 3, x's 4")
got.update(checks=len(checks), launches=stubs.launches, compiled=len(kernel._compiled))
print(json.dumps(got))
"""


@needs_flydsl
@pytest.mark.parametrize("example", ["per_row", "rope", "heads"])
def test_reduction_run_hands_flydsl_the_rows(tmp_path, example):
    """The reduction cell's run() on a CPU, HIP stubbed: N-D rows, one value per row (a bool mask as its bytes) and
    inputs broadcast over the rows reach FlyDSL's launch slots as the kernel reads them (the ABI: each tensor's
    pointer and 1-D size, the row strides, M, N / vec, the loop count); a contiguous x [B, S, D] with its kin
    reaches them with no host.rows_nd views, a strided one through them, and so does a QK-norm's q [T, H*128] as
    the function's own view [T, H, 128]; a call of another M reuses the signature's
    launch (host.py's checks once, one compile); given outputs are written and handed back; a wrong M, length or
    dtype is refused in host.py's words and launches nothing."""
    import flydsl_launch_cpu  # benchmarks/, on the tests' import path

    ws = lowered_workspace(tmp_path, "reduction", example, "bf16", "gfx942")
    done = subprocess.run([sys.executable, "-c", LAUNCH_ROWS_CHILD, str(ROOT / "benchmarks")], cwd=ws,
                          env=flydsl_launch_cpu.child_env(ws), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if example == "per_row":
        assert got["shapes"] == [[[2, 3, 512], [2, 3]], [[5, 3, 512], [5, 3]]] and got["abi"] == [True] * 3, got
        assert (got["prepared"], got["launches"], got["compiled"]) == (2, 4, 1), got  # given outputs: a signature;
        # the fourth launch is the strided x's
        assert got["refused"] == [True] * 3, got
        assert got["rows_nd"] == 0 and got["strided"] == [1, [5, 3, 512], True], got
    elif example == "heads":  # q [T, 1024] as [T, 8, 128], one launch per T, no host.rows_nd views but the strided q's
        assert got["shapes"] == [[3, 8, 128], [5, 8, 128], [5, 8, 128]] and got["abi"] == [True] * 2, got
        assert (got["rows_nd"], got["strided"], got["refused"], got["compiled"]) == (0, 1, [True], 1), got
    else:  # the broadcast views' shapes are in the signature: another B is a new launch, not a new compile
        assert got["shapes"] == [[2, 4, 3, 128], [5, 4, 3, 128]] and got["refused"] == [True], got
        assert (got["launches"], got["compiled"]) == (2, 1), got
