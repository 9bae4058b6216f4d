"""On a GPU machine: a baked workspace passes its own harness on the device. Skipped cleanly without a CUDA GPU."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import bake_cli, read_json

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


GRAPH_CHILD = """
import math, sys
import torch
sys.path.insert(0, "..")
import ws  # the workspace as a package: its modules, and its custom op torch.ops.ws.run
from ws import kernel, reference
op = ws.OP
dtype = getattr(torch, op["torch_dtype"])
case = min(op["cases"], key=lambda c: math.prod(c["dims"]))
inputs = reference.make_inputs(case, dtype, "cuda", 0)

def check(out, what):
    ref = reference.reference(*[t.double() if t.is_floating_point() else t for t in inputs])
    err = ((out.double() - ref).norm() / ref.norm()).item()
    assert err < op["tolerance"], f"{what}: rel_err {err}"

out = kernel.run(*inputs)
torch.cuda.synchronize()
check(out, "eager")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    out_side = kernel.run(*inputs)
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()
check(out_side, "side stream")
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    out_graph = kernel.run(*inputs)
for t in inputs:  # new values in the captured buffers: the replay must read them
    if t.is_floating_point():
        t.copy_(torch.randn_like(t))
graph.replay()
torch.cuda.synchronize()
check(out_graph, "graph replay")
compiled = torch.compile(lambda *xs: torch.ops.ws.run(*xs), fullgraph=True)
check(compiled(*inputs), "torch.compile through the custom op")
bad_calls = {"a CPU tensor": lambda: kernel.run(*[t.cpu() if i == 0 else t for i, t in enumerate(inputs)]),
             "an out of the wrong shape": lambda: kernel.run(*inputs, out=torch.empty(3, dtype=dtype, device="cuda"))}
for what, call in bad_calls.items():
    try:
        call()
    except (TypeError, ValueError) as err:
        assert str(err).startswith(op["op"]), f"{what}: refusal not in host.py's words: {err}"
    else:
        raise AssertionError(f"{what} was not refused")
print("ok", case["name"])
"""


@pytest.mark.parametrize("pattern", ["elementwise", "reduction", "gemm", "decode_attention"])
def test_run_is_capturable_in_a_cuda_graph(tmp_path, pattern):
    """Every Hopper cell's run(): correct eagerly, on a side stream, replayed from a CUDA graph with new inputs, and
    inside torch.compile(fullgraph=True) as the workspace package's custom op (torch.ops.ws.run); a bad call is
    refused in host.py's words (the TVM-FFI wrapper's refusal is re-explained)."""
    done = bake_cli(tmp_path, f"pattern={pattern}", "op_name=ws", "run_baseline=no")
    assert done.returncode == 0, done.stderr
    run = subprocess.run([sys.executable, "-c", GRAPH_CHILD], cwd=tmp_path / "ws", capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0 and run.stdout.startswith("ok"), run.stdout + run.stderr
