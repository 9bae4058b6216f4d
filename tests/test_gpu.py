"""On a GPU machine: a baked workspace passes its own harness on the device. Skipped cleanly without a CUDA GPU."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import bake_cli, read_json

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or bool(getattr(torch.version, "hip", None)),
                       reason="needs an NVIDIA GPU (the Hopper cells run with CuTe DSL)"),
]


@pytest.mark.parametrize("pattern,op,dtype", [
    ("elementwise", "silu_mul", "bf16"), ("elementwise", "gelu", "fp16"), ("elementwise", "add", "fp32"),
    ("gemm", "matmul", "fp16"), ("reduction", "rmsnorm", "fp32"), ("reduction", "max", "fp16"),
    ("decode_attention", "gqa", "fp16"),
])
def test_workspace_passes_on_the_gpu(tmp_path, pattern, op, dtype):
    done = bake_cli(tmp_path, f"pattern={pattern}", f"op={op}", f"dtype={dtype}", "op_name=ws", "run_baseline=no")
    assert done.returncode == 0, done.stderr
    ws = tmp_path / "ws"
    run = subprocess.run([sys.executable, "test_kernel.py", "--no-timing"], cwd=ws, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    results = read_json(ws / "results" / "results.json")
    assert results["ran"] and results["all_passed"]
    assert {c["status"] for c in results["cases"]} == {"PASS"}
    assert results["max_rel_err"] < read_json(ws / "op.json")["tolerance"]
