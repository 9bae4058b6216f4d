"""FlyDSL compile-only: every FlyDSL cell compiles to gfx942 and gfx950 ISA on the CPU with its promised markers.

FlyDSL and CuTe DSL each ship their own MLIR Python bindings, and loading both into one process aborts it
(nanobind: duplicate type registration). So this file never imports flydsl: every compile runs in a child
process (compile_only itself starts one more, with the environment from tools/rocm_env.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import flydsl_batch
import isa_metrics
import pytest
import rocm_env
from tools import registry, scaffold

HAVE_FLYDSL = importlib.util.find_spec("flydsl") is not None  # finds the package without loading its MLIR libraries
needs_flydsl = pytest.mark.skipif(not HAVE_FLYDSL, reason="flydsl is not installed here (CI installs flydsl==0.4.2 "
                                  "and apt packages lld-19 rocm-device-libs); the FlyDSL compile checks need it")

FLYDSL_PATTERNS = sorted(pattern for pattern, framework in registry.cells() if framework == "flydsl")
# What CI compiles per arch: each cell's default case (shape "", the pattern's first built-in representative
# shape: the workspace's own --compile-only checks the cell spec's markers on it) and the cell's other paths, with
# what their ISA must show. In the elementwise and reduction cells every built-in op is a program run through the
# cell's one path (its lowered.py), so each op compiles here once per arch, each on a path of its own where it can.
# benchmarks/flydsl_compile.py sweeps the rest.
COMPILES = {
    "elementwise": [("silu_mul", "bf16", "", []), ("gelu", "fp16", "", []),  # gelu: erf from the device libs
                    ("add", "bf16", "4096", ["buffer_load_dwordx4"]),  # below SMALL_N: one vector per lane
                    ("mul", "fp32", "", []), ("silu", "fp16", "", []),
                    ("relu", "bf16", "1000x1001", ["buffer_load_dwordx4"])],  # 2-D, small, N not a multiple of 8
    "reduction": [("softmax", "bf16", "", []),
                  ("softmax", "bf16", "512x131072", ["buffer_load_dwordx4", "s_barrier"]),  # looped, online max/sum
                  ("softmax", "bf16", "8x131072", ["buffer_load_dwordx4", "s_barrier", "buffer_load_dword "]),  # split
                  ("rmsnorm", "fp32", "512x131072", ["buffer_load_dwordx4", "s_barrier"]),  # looped, x and weight
                  ("max", "fp16", "4096x7", ["buffer_load_ushort"]),  # N = 7: one element per access
                  ("sum", "fp32", "512x131072", ["buffer_load_dwordx4", "buffer_store_dword"]),  # looped, [M] only
                  ("mean", "bf16", "1000x4096@4160", ["buffer_load_dwordx4", "s_barrier", "buffer_store_short"])],
    "gemm": [("matmul", "bf16", "", []), ("matmul", "fp16", "4095x4097x4096", ["buffer_store_short"])],
    "decode_attention": [("gqa", "bf16", "", []), ("gqa", "fp16", "4x16x1x2048x128@mixed", ["v_mfma"])],
}
LOOP_CHUNKS = 4  # the reduction cell's vectors per lane per loop iteration, one load (x) taking them all


def make_workspace(tmp_path: Path, pattern: str, op: str, dtype: str, target: str, shape: str = "") -> Path:
    return scaffold.compile_workspace(tmp_path / "ws", pattern, op, dtype, target, shape)


def compile_in_child(ws: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    code = "import json, kernel; print(json.dumps(kernel.compile_only(kernel.OP_SPEC['cases'][0], 'build')))"
    return subprocess.run([sys.executable, "-c", code], cwd=ws, capture_output=True, text=True, timeout=900, env=env)


def metadata(isa: str, key: str) -> list[int]:
    """A numeric field of each kernel's code-object metadata, e.g. '.vgpr_count:     52' -> [52]."""
    return isa_metrics.amd_metadata(isa, f".{key}")


def compile_variants(dest_of, variants: list) -> dict:
    """{variant: ISA} of each (pattern, op, dtype, arch, shape)'s default case, compiled in one child per arch, both
    cores at once (flydsl_batch); dest_of() gives each workspace a fresh folder (called here, not in the threads)."""
    spaces = {v: make_workspace(dest_of(), v[0], v[1], v[2], v[3], v[4]) for v in variants}
    jobs = [[(ws, json.loads((ws / "op.json").read_text())["cases"][0]) for v, ws in spaces.items() if v[3] == arch]
            for arch in ("gfx942", "gfx950")]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        compiled = {ws: text for batch in pool.map(flydsl_batch.isa_of, [j for j in jobs if j]) for ws, text in
                    batch.items()}
    for (_, op, dtype, arch, _), ws in spaces.items():
        files = list((ws / "build").glob(f"kernel_{op}_{dtype}*.{arch}.s"))
        assert len(files) == 1 and files[0].read_text() == compiled[ws], files
    return {v: compiled[ws] for v, ws in spaces.items()}


def bake_time_isa(matrix, op, dtype, arch) -> str | None:
    """The ISA the matrix's bake compiled for this (op, dtype) on the first GPU of `arch`, when it baked that."""
    baked = matrix.get((registry.first_gpu(arch), op))
    if baked is None or json.loads((baked.project_path / "op.json").read_text())["dtype"] != dtype:
        return None
    check = json.loads((baked.project_path / "results" / "compile_only.json").read_text())
    return (baked.project_path / "build" / check["isa_file"]).read_text()


VARIANTS = [(p, op, dtype, arch, shape) for p in COMPILES for op, dtype, shape, _ in COMPILES[p]
            for arch in ("gfx942", "gfx950")]


@pytest.fixture(scope="module")
def isa(matrix, tmp_path_factory):
    """Every VARIANT's ISA, compiled once: the default cases the matrix already compiled at bake time are read from
    its workspaces, the rest compile here (compile_variants)."""
    if not HAVE_FLYDSL:
        return {}
    found = {v: bake_time_isa(matrix, v[1], v[2], v[3]) if not v[4] else None for v in VARIANTS}
    found.update(compile_variants(lambda: tmp_path_factory.mktemp("fly"), [v for v, text in found.items() if not text]))
    return found


def test_every_flydsl_cell_is_compiled_here():
    assert sorted(COMPILES) == FLYDSL_PATTERNS


@pytest.mark.parametrize("pattern", ["elementwise", "reduction"])
def test_every_built_in_program_is_compiled_here(pattern):
    """Every built-in op of a program pattern runs through the cell's one path (its lowered.py): each compiles here,
    to both targets (VARIANTS)."""
    assert {op for op, *_ in COMPILES[pattern]} == set(registry.pattern(pattern).OPS)


@needs_flydsl
@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
@pytest.mark.parametrize(("pattern", "op", "dtype", "shape", "expect"),
                         [(p, *c) for p in FLYDSL_PATTERNS for c in COMPILES[p]])
def test_isa_markers(isa, arch, pattern, op, dtype, shape, expect):
    """The cell's promised markers (the cell spec's, the list the workspace's --compile-only checks) on its default
    case, the listed markers on the other paths, and everywhere: no scratch, no spills, LDS within gfx942's 64 KiB."""
    isa = isa[(pattern, op, dtype, arch, shape)]
    assert f'.amdgcn_target "amdgcn-amd-amdhsa-unknown-{arch}"' in isa
    kernels = len(metadata(isa, "wavefront_size"))
    assert kernels >= 1 and metadata(isa, "wavefront_size") == [64] * kernels
    markers = registry.cell(pattern, "flydsl")["isa_markers"]
    for marker in markers["required"] if not shape else [{"text": t, "meaning": "this path"} for t in expect]:
        assert marker["text"] in isa, f"missing {marker['text']!r}: {marker['meaning']}"
    for marker in markers["forbidden"]:
        assert marker["text"] not in isa, f"found {marker['text']!r}: {marker['meaning']}"
    assert metadata(isa, "private_segment_fixed_size") == [0] * kernels
    assert metadata(isa, "vgpr_spill_count") == [0] * kernels and metadata(isa, "sgpr_spill_count") == [0] * kernels
    lds = max(metadata(isa, "group_segment_fixed_size"))
    assert lds <= 64 * 1024, f"{lds} bytes of LDS: more than gfx942's 64 KiB per workgroup"
    if pattern in ("gemm", "decode_attention"):
        assert re.search(r"^\s*v_mfma_f32_\w+", isa, re.M), "no MFMA instruction"
    if pattern == "gemm":
        assert lds > 0 and re.search(r"^\s*ds_read", isa, re.M), "GEMM operands must be staged through LDS"


# sha256 of the built-in matmul's ISA on its two gemm paths above (16-byte and 2-byte C stores), as it was before the
# cell grew its fp8 and lowered epilogues (issue 15: the built-in op keeps its ISA byte for byte). A change here is
# a change to the built-in kernel: make it on purpose, then update the hashes.
MATMUL_ISA_SHA256 = {
    ("bf16", "", "gfx942"): "9b36e94cb4027f0d1b9dfc9ec588d496eafe99c5aff8bb5a89afaa8ea5552f29",
    ("bf16", "", "gfx950"): "77fe41b5689b238f4e0c36a644ed50023aa878b7af95b48b3f058037f892f35e",
    ("fp16", "4095x4097x4096", "gfx942"): "1225996f2c2aaece6b03288c4418c505b5e8cd1e5e96a0fbc939b47a94636f2e",
    ("fp16", "4095x4097x4096", "gfx950"): "840efac5179f76f973278a108b2d1eb2c7722e8251bb70fb3fa2cefec99eb737",
}


@needs_flydsl
@pytest.mark.parametrize(("dtype", "shape", "arch"), list(MATMUL_ISA_SHA256))
def test_builtin_matmul_isa_is_pinned(isa, dtype, shape, arch):
    text = isa[("gemm", "matmul", dtype, arch, shape)]
    assert hashlib.sha256(text.encode()).hexdigest() == MATMUL_ISA_SHA256[(dtype, shape, arch)], (
        "the built-in matmul's ISA changed")


@needs_flydsl
@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
@pytest.mark.parametrize(("op", "shape", "unroll"), [("silu_mul", "", 2), ("add", "4096", 1)])
def test_elementwise_access_counts(isa, arch, op, shape, unroll):
    """x and y bf16, instruction by instruction: unroll dwordx4 per tensor on the full tile, short accesses on the tail;
    2 at 2^28 elements, 1 below SMALL_N = 2^24 (4096: one vector per lane, more workgroups)."""
    n_inputs = 2
    isa = isa[("elementwise", op, "bf16", arch, shape)]
    assert isa.count("buffer_load_dwordx4") == unroll * n_inputs
    assert isa.count("buffer_store_dwordx4") == unroll
    # the partial-tile path: one-element 16-bit accesses, bounded by the descriptor's num_records
    assert isa.count("buffer_load_ushort ") == unroll * 8 * n_inputs
    assert isa.count("buffer_store_short ") == unroll * 8
    assert metadata(isa, "group_segment_fixed_size") == [0]


@needs_flydsl
@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_long_softmax_reads_the_row_twice(isa, arch):
    """softmax on 512 rows of 131072 (the looped path: enough rows to fill the GPU): lowered.PASSES (0, 0) and ONLINE
    (None, 0) put its max and sum in one online pass, so x is read twice (reductions, then outputs). Each pass is a
    loop over the whole slices
    (unpredicated, unmasked) and the partial last slice (predicated), each LOOP_CHUNKS dwordx4 loads per lane: 2 x 2 x
    LOOP_CHUNKS loads (one per reduce() call in its own pass would be 3 x 2 x 4 = 24), 2 x LOOP_CHUNKS dwordx4 stores
    (the last pass's two), one barrier per reduction."""
    text = isa[("reduction", "softmax", "bf16", arch, "512x131072")]
    assert text.count("buffer_load_dwordx4") == 2 * 2 * LOOP_CHUNKS, "x is not read in exactly 2 passes"
    assert text.count("buffer_store_dwordx4") == 2 * LOOP_CHUNKS
    assert text.count("s_barrier") == 2


def kernel_bodies(isa: str) -> dict[str, str]:
    """{kernel symbol: its code} of an ISA file: from each top-level label (not a .L one) to its .Lfunc_end."""
    return {name: body for name, body in re.findall(r"^([A-Za-z_]\w*):\n(.*?)^\.Lfunc_end", isa, re.M | re.S)}


def partial_accesses(body: str, op: str) -> int:
    """The fp32 values a kernel moves with 32- and 64-bit buffer loads or stores ("load" | "store"): the split path's
    partials (gfx950's LLVM merges lane 0's two adjacent partial stores into one dwordx2)."""
    return sum(int(x or 1) for x in re.findall(rf"^\s*buffer_{op}_dword(?:x([2]))?\s", body, re.M))


@needs_flydsl
@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_few_long_softmax_rows_are_split(isa, arch):
    """softmax on 8 rows of 131072 (8 workgroups would leave most of the CUs idle: kernel.split) is split across G
    workgroups per row in two kernels. Kernel A (the online max/sum pass over its slice: whole slices and the
    partial last one, LOOP_CHUNKS dwordx4 loads each) folds its lanes (DPP, two barriers) and stores its two fp32
    partials; kernel B loads the row's partials (one dword per reduction per lane), combines them through the
    workgroup (two barriers), re-reads its slice and stores it (2 x LOOP_CHUNKS dwordx4 each)."""
    bodies = kernel_bodies(isa[("reduction", "softmax", "bf16", arch, "8x131072")])
    assert list(bodies) == ["split_kernel_0", "split_kernel_1"], list(bodies)
    a, b = bodies.values()
    assert a.count("buffer_load_dwordx4") == 2 * LOOP_CHUNKS and "buffer_store_dwordx4" not in a
    assert (partial_accesses(a, "load"), partial_accesses(a, "store")) == (0, 2), "kernel A: max and sum partials"
    assert a.count("s_barrier") == 2 and "row_bcast:31" in a
    assert b.count("buffer_load_dwordx4") == 2 * LOOP_CHUNKS and b.count("buffer_store_dwordx4") == 2 * LOOP_CHUNKS
    assert (partial_accesses(b, "load"), partial_accesses(b, "store")) == (2, 0), "kernel B: the row's partials"
    assert b.count("s_barrier") == 2 and "row_bcast:31" in b


@needs_flydsl
def test_missing_lld_is_one_line(tmp_path):
    """compile_only with no usable ld.lld fails with rocm_env's one-line error, not a DSL traceback."""
    ws = make_workspace(tmp_path, "elementwise", "relu", "bf16", "gfx942")
    env = {k: v for k, v in os.environ.items() if k != "ROCM_PATH"}
    env.update(KBASELINE_LD_LLD=str(tmp_path / "no-such-ld.lld"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = compile_in_child(ws, env)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "RocmEnvError: rocm_env: no ld.lld" in last and "apt-get install lld-19 rocm-device-libs" in last


IN_ITSELF = """
import json, sys
sys.path.insert(0, "tools")
import kernel, rocm_env

def no_child(*args, **kwargs):
    raise AssertionError("compile_isa started a child")

rocm_env.compile_isa = no_child
case = kernel.OP_SPEC["cases"][0]
first, again = kernel.compile_only(case, "build"), kernel.compile_only(case, "build")
here = [rocm_env.compiles_here("gfx942"), rocm_env.compiles_here("gfx950")]
print(json.dumps([first == again, "gfx942" in first, *here]))
"""


@needs_flydsl
def test_a_process_in_the_compile_environment_compiles_in_itself(tmp_path):
    """Started in rocm_env(gfx942)'s environment (as a test batch and the bake's compile step are), compile_only
    compiles in its own process: no child (compile_isa would raise), the same ISA when a variant is asked twice
    (FlyDSL dumps nothing the second time: compile_here keeps the first), and only for that target."""
    ws = make_workspace(tmp_path, "elementwise", "relu", "bf16", "gfx942")
    done = subprocess.run([sys.executable, "-c", IN_ITSELF], cwd=ws, capture_output=True, text=True, timeout=900,
                          env=rocm_env.rocm_env("gfx942"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True, True, True, False]


def test_rocm_env_error_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("KBASELINE_LD_LLD", raising=False)
    with pytest.raises(rocm_env.RocmEnvError) as err:
        rocm_env.rocm_env("gfx942", environ={}, cache_dir=tmp_path, lld_candidates=[str(tmp_path / "ld.lld")])
    message = str(err.value)
    assert "\n" not in message and "ld.lld" in message and message.endswith(f"fix: {rocm_env.FIX}")
    with pytest.raises(rocm_env.RocmEnvError, match="no AMD device libs"):
        rocm_env.find_amdgcn([str(tmp_path / "nowhere" / "amdgcn")])


def test_rocm_env_refuses_old_lld(tmp_path, monkeypatch):
    """An LLD older than 19 is refused up front (lld-14 would fail later with 'unknown abi version')."""
    old = tmp_path / "ld.lld"
    old.write_text("#!/bin/sh\necho 'Debian LLD 14.0.6 (compatible with GNU linkers)'\n")
    old.chmod(old.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("KBASELINE_LD_LLD", str(old))
    with pytest.raises(rocm_env.RocmEnvError, match="is LLD 14.*unknown abi version"):
        rocm_env.find_lld()


def test_rocm_env_keeps_a_real_rocm_path(tmp_path):
    rocm = tmp_path / "rocm"
    with pytest.raises(rocm_env.RocmEnvError, match="has no llvm/bin/ld.lld"):
        rocm_env.rocm_env("gfx950", environ={"ROCM_PATH": str(rocm)})
    (rocm / "llvm" / "bin").mkdir(parents=True)
    (rocm / "llvm" / "bin" / "ld.lld").write_text("")
    env = rocm_env.rocm_env("gfx950", environ={"ROCM_PATH": str(rocm)})
    assert env == {"ROCM_PATH": str(rocm), "COMPILE_ONLY": "1", "ARCH": "gfx950", "FLYDSL_GPU_ARCH": "gfx950"}
    with pytest.raises(ValueError, match="gfx942, gfx950"):
        rocm_env.rocm_env("gfx90a", environ={})
