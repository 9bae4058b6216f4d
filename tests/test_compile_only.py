"""Compile-only: the elementwise kernel compiles for sm_90a on the CPU and its PTX shows 128-bit global accesses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ELEMENTWISE_OPS, load_module, read_json


@pytest.mark.parametrize("op", ELEMENTWISE_OPS)
def test_compile_only_markers(matrix, op):
    ws = matrix[("H200", op)].project_path
    done = subprocess.run([sys.executable, "test_kernel.py", "--compile-only"], cwd=ws, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    report = read_json(ws / "results" / "compile_only.json")
    assert report["ok"] and report["target"] == "sm_90a"
    ptx = (ws / "build" / report["isa_file"]).read_text()
    assert ".target sm_90a" in ptx
    n_inputs = 2 if op in ("add", "mul", "silu_mul") else 1
    unroll = 8 if op in ("add", "mul") else 2
    # the fast path: UNROLL vectors per input and per output, each one 128-bit access
    assert ptx.count("ld.global.v4") == unroll * n_inputs
    assert ptx.count("st.global.v4") == unroll
    assert ".local" not in ptx


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_other_dtypes_vectorize(matrix, tmp_path, dtype):
    ws = matrix[("H200", "silu_mul")].project_path
    kernel = load_module(ws / "kernel.py", f"kernel_{dtype}")
    ptx = kernel.compile_only(None, tmp_path, op="silu_mul", dtype=dtype)
    assert ptx.count("ld.global.v4") == 4 and ptx.count("st.global.v4") == 2


def test_marker_check_can_fail(matrix, tmp_path):
    """The check is not a tautology: a marker the PTX lacks makes --compile-only exit 1."""
    src = matrix[("H200", "relu")].project_path
    ws = tmp_path / "ws"
    subprocess.run(["cp", "-r", str(src), str(ws)], check=True)
    spec = read_json(ws / "op.json")
    spec["isa_markers"]["required"].append({"text": "wgmma.mma_async", "meaning": "not in an elementwise kernel"})
    (ws / "op.json").write_text(json.dumps(spec))
    done = subprocess.run([sys.executable, "test_kernel.py", "--compile-only"], cwd=ws, capture_output=True, text=True)
    assert done.returncode == 1 and "MISSING" in done.stdout
