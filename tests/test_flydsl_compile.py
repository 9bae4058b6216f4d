"""FlyDSL compile-only: the elementwise cell compiles to gfx942 and gfx950 ISA on the CPU with the expected markers.

FlyDSL and CuTe DSL each ship their own MLIR Python bindings, and loading both into one process aborts it
(nanobind: duplicate type registration). So this file never imports flydsl: every compile runs in a child
process (compile_only itself starts one more, with the environment from tools/rocm_env.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import rocm_env
from conftest import ROOT

CELL = ROOT / "{{cookiecutter.op_name}}" / "cells" / "flydsl" / "elementwise" / "kernel.py"
HAVE_FLYDSL = importlib.util.find_spec("flydsl") is not None  # finds the package without loading its MLIR libraries
needs_flydsl = pytest.mark.skipif(not HAVE_FLYDSL, reason="flydsl is not installed here (CI installs flydsl==0.4.2 "
                                  "and apt packages lld-19 rocm-device-libs); the FlyDSL compile checks need it")

UNROLL = {"add": 4, "mul": 4, "silu": 2, "gelu": 2, "relu": 2, "silu_mul": 2}


def make_workspace(tmp_path: Path, op: str, dtype: str, target: str) -> Path:
    """A minimal AMD workspace: kernel.py + op.json + tools/rocm_env.py, as the scaffold lays them out."""
    ws = tmp_path / "ws"
    (ws / "tools").mkdir(parents=True)
    shutil.copy(CELL, ws / "kernel.py")
    shutil.copy(ROOT / "tools" / "rocm_env.py", ws / "tools" / "rocm_env.py")
    case = {"name": "n1m", "role": "representative", "dims": [1 << 20], "vars": {"numel": 1 << 20}}
    (ws / "op.json").write_text(json.dumps({"op": op, "dtype": dtype, "target": target, "cases": [case]}))
    return ws


def compile_in_child(ws: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    code = "import json, kernel; print(json.dumps(kernel.compile_only(kernel.OP_SPEC['cases'][0], 'build')))"
    return subprocess.run([sys.executable, "-c", code], cwd=ws, capture_output=True, text=True, timeout=600, env=env)


def metadata(isa: str, key: str) -> int:
    """A numeric field of the code object's metadata, e.g. '.vgpr_count:     52' -> 52."""
    values = [line.split(":", 1)[1].strip() for line in isa.splitlines() if line.strip().startswith(f".{key}:")]
    assert len(values) == 1, f"{key}: {values}"
    return int(values[0])


@needs_flydsl
@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
@pytest.mark.parametrize(("op", "dtype"), [("silu_mul", "bf16"), ("gelu", "fp16")])  # gelu: erf from device libs
def test_isa_markers(tmp_path, arch, op, dtype):
    ws = make_workspace(tmp_path, op, dtype, arch)
    done = compile_in_child(ws)
    assert done.returncode == 0, done.stdout + done.stderr
    isa = json.loads(done.stdout.strip().splitlines()[-1])
    assert (ws / "build" / f"kernel_{op}_{dtype}.{arch}.s").read_text() == isa
    assert f'.amdgcn_target "amdgcn-amd-amdhsa-unknown-{arch}"' in isa
    assert metadata(isa, "wavefront_size") == 64
    n_inputs = 2 if op in ("add", "mul", "silu_mul") else 1
    # the full-tile path: UNROLL 128-bit buffer loads per input and UNROLL 128-bit stores (16-bit types: the
    # tail's one-element accesses cannot merge into these; for fp32 LLVM merges them, so the counts double)
    assert isa.count("buffer_load_dwordx4") == UNROLL[op] * n_inputs
    assert isa.count("buffer_store_dwordx4") == UNROLL[op]
    # the partial-tile path: one-element 16-bit accesses, bounded by the descriptor's num_records
    assert isa.count("buffer_load_ushort ") == UNROLL[op] * 8 * n_inputs
    assert isa.count("buffer_store_short ") == UNROLL[op] * 8
    # no spills to scratch memory, no LDS
    assert "scratch_" not in isa
    assert metadata(isa, "private_segment_fixed_size") == 0
    assert metadata(isa, "vgpr_spill_count") == 0 and metadata(isa, "sgpr_spill_count") == 0
    assert metadata(isa, "group_segment_fixed_size") == 0


@needs_flydsl
def test_missing_lld_is_one_line(tmp_path):
    """compile_only with no usable ld.lld fails with rocm_env's one-line error, not a DSL traceback."""
    ws = make_workspace(tmp_path, "relu", "bf16", "gfx942")
    env = {k: v for k, v in os.environ.items() if k != "ROCM_PATH"}
    env.update(KBASELINE_LD_LLD=str(tmp_path / "no-such-ld.lld"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = compile_in_child(ws, env)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "RocmEnvError: rocm_env: no ld.lld" in last and "apt-get install lld-19 rocm-device-libs" in last


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
