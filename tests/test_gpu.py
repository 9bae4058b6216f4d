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


def run_child_in_baked(tmp_path, child: str, *pairs: str) -> None:
    """Bake a workspace `ws` (run_baseline=no) with `pairs`, run the script `child` in it, and require it to end well
    and print "ok" first."""
    done = bake_cli(tmp_path, *pairs, "op_name=ws", "run_baseline=no")
    assert done.returncode == 0, done.stderr
    run = subprocess.run([sys.executable, "-c", child], cwd=tmp_path / "ws", capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0 and run.stdout.startswith("ok"), run.stdout + run.stderr


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
    run_child_in_baked(tmp_path, GRAPH_CHILD, f"pattern={pattern}")


STRIDED_Q_CHILD = """
import sys
import torch
sys.path.insert(0, "..")
import ws
from ws import kernel, reference
case = {"dims": [5, 32, 8, 3001, 128], "seq_lens": [1, 2494, 1023, 1897, 3001]}
q, k, v, lens = reference.make_inputs(case, torch.bfloat16, "cuda", 0)
B, Hq, D = q.shape
qkv = torch.randn(B, (Hq + 2 * k.shape[2]) * D, dtype=q.dtype, device="cuda")  # a fused QKV projection's output
qkv[:, :Hq * D] = q.reshape(B, -1)
view = qkv[:, :Hq * D].view(B, Hq, D)
want = kernel.run(q, k, v, lens)
for _ in range(2):  # the view's first call prepares its signature, the second takes the hot path
    got = kernel.run(view, k, v, lens)
    assert torch.equal(got, want) and got.is_contiguous()
assert torch.equal(torch.ops.ws.run(view, k, v, lens), want)
heads_apart = q.transpose(0, 1).contiguous().transpose(0, 1)  # strides (D, B * D, 1): heads not contiguous
try:
    kernel.run(heads_apart, k, v, lens)
except ValueError as err:
    assert str(err).startswith(ws.OP["op"]) and "strides" in str(err), err
else:
    raise AssertionError("a q whose heads are not contiguous was not refused")
print("ok")
"""


def test_decode_takes_q_as_a_view_of_the_fused_qkv_output(tmp_path):
    """Decode attention reads q through its batch stride: a view of a fused QKV output gives the same bits as the
    contiguous q (mixed lengths), eagerly and through the custom op, with no copy; a q whose heads are not
    contiguous is refused in host.py's words."""
    run_child_in_baked(tmp_path, STRIDED_Q_CHILD, "pattern=decode_attention")


ONLINE_CHILD = """
import math, sys
import torch
sys.path.insert(0, "..")
from ws import kernel
inf, nan = math.inf, math.nan
x = torch.randn(7, 131072, device="cuda") * 4
x[0, :70000] = -inf  # a masked prefix longer than one slice of the loop
x[1, 5000] = nan  # one NaN: the whole row NaN, as torch
x[2] = -inf  # all -inf: NaN, as torch
x[3, 100000:] = -inf  # a masked suffix
x[4] *= 30  # exp would overflow without the max
x[6, :70000] = -inf  # a masked prefix, then values whose exp underflows: exp(-inf - m) rescales, never 0 * inf
x[6, 70000:] -= 200
x = x.to(torch.bfloat16)
want = torch.softmax(x.float(), -1)
got = kernel.run(x).float()
assert torch.equal(torch.isnan(got), torch.isnan(want)), "NaN where torch has none, or the other way round"
for r in (0, 3, 4, 5, 6):
    err = ((got[r] - want[r]).norm() / want[r].norm()).item()
    assert err < 1e-2, (r, err)
assert (got[0, :70000] == 0).all() and (got[3, 100000:] == 0).all()
print("ok")
"""


def test_long_softmax_online_pass_matches_torch_on_special_rows(tmp_path):
    """softmax rows of 131072 take the looped path, whose one reduction pass is the online softmax (lowered.ONLINE):
    a masked -inf prefix longer than a slice gives 0 there and the right row elsewhere (not NaN), also when the rest
    of the row lies near -200 (where a shifted -inf would rescale by exp(200) = inf), a NaN makes the row NaN, an
    all -inf row is NaN, large values do not overflow: torch's softmax on every row."""
    run_child_in_baked(tmp_path, ONLINE_CHILD, "pattern=reduction", "op=softmax")
