"""On a GPU machine: a baked workspace passes its own harness on the device. Skipped cleanly without a CUDA GPU."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import ROOT, bake_cli, make_lowered, read_json
from lowered_sources import MASK_SCALAR, MASK_SCALAR_ELEMENTWISE

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
    and print "ok" first. The child imports the workspace as a user does, as the package `ws` from the folder that
    holds it (first on PYTHONPATH), in a process of its own, so no two workspaces' modules meet."""
    done = bake_cli(tmp_path, *pairs, "op_name=ws", "run_baseline=no")
    assert done.returncode == 0, done.stderr
    run_child(tmp_path, child)


def run_child(tmp_path, child: str) -> None:
    """Run the script `child` in the workspace tmp_path/ws, imported as the package `ws`, in a process of its own;
    require it to end well and print "ok" first."""
    run = subprocess.run([sys.executable, "-c", child], cwd=tmp_path / "ws", capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))})
    assert run.returncode == 0 and run.stdout.startswith("ok"), run.stdout + run.stderr


GRAPH_CHILD = """
import math
import torch
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
import torch
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


SPECIAL_ROWS_CHILD = """
import math
import torch
from ws import kernel
inf, nan, n = math.inf, math.nan, {n}


def special_rows(m):
    cfg = kernel.plan(n, 8, m)
    x = torch.randn(m, n, device="cuda") * 4
    x[0, :n * 53 // 100] = -inf  # a masked prefix longer than one slice of the loop, or than one CTA's share
    x[1, n // 26] = nan  # one NaN: the whole row NaN, as torch
    x[2] = -inf  # all -inf: NaN, as torch
    x[3, n * 76 // 100:] = -inf  # a masked suffix
    x[4] *= 30  # exp would overflow without the max
    x[6, :n * 53 // 100] = -inf  # a masked prefix, then values whose exp underflows: exp(-inf - m) rescales
    x[6, n * 53 // 100:] -= 200
    rows = [0, 3, 4, 5, 6, *range(8, m)]
    if cfg["cluster"] > 1:  # row 7: CTA 0's share of the row all -inf, the rest near -200
        vector = torch.arange(n, device="cuda") // 8
        x[7, (vector // cfg["tpr"]) % cfg["cluster"] == 0] = -inf
        x[7] -= 200
        rows.append(7)
    return x.to(torch.bfloat16), rows, cfg


# 8 rows, then (where plans() has more than one) each next plan from its first M (the many-rows plan; at 8192 the
# plan of any M after the one below a wave), then 8 rows again: one signature whose entry steps from plan to plan and
# back. Rows in registers run three times: with the max and the sum exchanged one after the other, then as one online
# pair (the ONLINE_EXCHANGE knob), then with the many-rows plan's pair sent by every warp (MANY_ROWS_DIRECT)
sizes = [8, *(start for start, _ in kernel.plans(n, 8)[1:]), 8]
knobs = [(False, False), (True, False), (True, True)] if not kernel.plan(n, 8)["looped"] else [(False, False)]
for online, many_direct in knobs:
    kernel.ONLINE_EXCHANGE, kernel.MANY_ROWS_DIRECT = online, many_direct
    kernel._compiled.clear()
    kernel._launches.clear()
    for m in sizes:
        x, rows, cfg = special_rows(m)
        want = torch.{fn}(x.float(), -1)
        got = kernel.run(x).float()
        assert torch.equal(torch.isnan(got), torch.isnan(want)), ("NaN where torch has none, or the other way", m)
        assert torch.equal(got == -inf, want == -inf), ("-inf where torch has none, or the other way", m)
        for r in rows:
            ok = torch.isfinite(want[r])
            err = ((got[r][ok] - want[r][ok]).norm() / want[r][ok].norm()).item()
            assert err < (1e-2 if "{fn}" == "softmax" else 1e-4), (online, many_direct, m, r, err)  # bf16 out, or fp32
        held = 0 if "{fn}" == "softmax" else -inf  # what the masked prefix and suffix come out as
        assert (got[0, :n * 53 // 100] == held).all() and (got[3, n * 76 // 100:] == held).all()
    entry, = kernel._launches.values()
    assert (entry[3] is not None) == (len(sizes) > 2), "one entry, linked to the many-rows plan's where there is one"
print("ok", sizes, [kernel.plan(n, 8, m) for m in sizes])
"""


@pytest.mark.parametrize("n", [512, 1024, 8192, 32000, 131072, 262144, 1 << 20])
def test_long_softmax_matches_torch_on_special_rows(tmp_path, n):
    """softmax on rows of every path: 512 and 1024 rows of half a warp and of one warp, several rows a CTA (reduced by
    shuffles alone); 8192 a row of one CTA (512 threads below one wave of rows, then 256: kernel._sub_wave_plans);
    32000 and 131072 split each row across a thread-block cluster (2 CTAs with a partial last chunk; 8), whose CTAs
    exchange their max and sum through DSMEM (each warp's, the direct exchange; 262144 takes the many-rows plan at
    every M); 2**20 takes the looped path, whose one reduction pass is the online softmax (lowered.ONLINE). A masked
    -inf prefix gives 0 there and the right row elsewhere (not NaN), also when the rest of the row lies near -200
    (where a shifted -inf would rescale by exp(200) = inf) and when one CTA of the cluster holds only -inf; a NaN
    makes the row NaN, an all -inf row is NaN, large values do not overflow: torch's softmax on every row, with the
    max and sum exchanged one after the other and as one online pair (kernel.ONLINE_EXCHANGE), and with the
    many-rows plan's pair sent by every warp (kernel.MANY_ROWS_DIRECT). The cluster rows run on 8 rows, then (the
    H200's workspace: kernel.plans) on as many as start the many-rows plan, then on 8 again through the same
    signature."""
    run_child_in_baked(tmp_path, SPECIAL_ROWS_CHILD.replace("{n}", str(n)).replace("{fn}", "softmax"),
                       "pattern=reduction", "op=softmax", "gpu=H200")


def test_long_log_softmax_matches_torch_on_special_rows(tmp_path):
    """log_softmax (a user's function, tests/lowering_corpus/ops.py) on the special rows above at N = 131072, under
    both exchanges: with the online pair, its `x - m`, written again after reduce("rebase") (tools/lower/ir.py
    rebases), takes the row's max, not the warp's. -inf and NaN where torch has them, the rest within 1e-4 (its
    output is fp32: the ops.py function returns F.log_softmax(x.float()))."""
    run_child_in_baked(tmp_path, SPECIAL_ROWS_CHILD.replace("{n}", "131072").replace("{fn}", "log_softmax"),
                       f"pytorch_logic={ROOT / 'tests/lowering_corpus/ops.py'}:log_softmax", "gpu=H200")


CLUSTER_REDUCED_CHILD = """
import math
import torch
from ws import kernel
assert kernel.plan(131072, 8)["cluster"] > 1
x = torch.randn(5, 131072, device="cuda").to(torch.bfloat16)
x[1, 123457] = math.nan  # one CTA's share holds a NaN: the row's max is NaN in every CTA
x[2] = -math.inf
x[3, :100000] = -math.inf
got = kernel.run(x)
torch.testing.assert_close(got, x.amax(-1), rtol=0, atol=0, equal_nan=True)
print("ok")
"""


def test_cluster_max_equals_torch_amax(tmp_path):
    """A reduced output of a cluster row (one value per row, stored once by rank 0's thread 0) is torch.amax's, bit
    for bit: max is order-free, and NaN survives the DSMEM exchange (max.NaN.f32 in every combine)."""
    run_child_in_baked(tmp_path, CLUSTER_REDUCED_CHILD, "pattern=reduction", "op=max")


CLUSTER_GRAPH_CHILD = """
import torch
from ws import kernel
assert kernel.plan(131072, 8)["cluster"] > 1
x = torch.randn(8, 131072, device="cuda").to(torch.bfloat16)
out = torch.empty_like(x)
kernel.run(x, out=out)  # compiled and planned outside the capture
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    kernel.run(x, out=out)
x.copy_(torch.randn_like(x) * 3)
graph.replay()
torch.cuda.synchronize()
want = torch.softmax(x.float(), -1)
err = ((out.float() - want).norm() / want.norm()).item()
assert err < 1e-2, err
print("ok")
"""


def test_cluster_row_replays_in_a_cuda_graph(tmp_path):
    """A cluster launch (softmax rows of 131072: 16 CTAs per row) is captured in a CUDA graph and replays on new
    values in the same buffers."""
    run_child_in_baked(tmp_path, CLUSTER_GRAPH_CHILD, "pattern=reduction", "op=softmax")


RELOAD_CHILD = """
import torch
from ws import kernel, reference
kernel.RELOAD = True
for values in (32, 64):  # the default split, then quack's (a cluster of 2 at N = 32768)
    kernel.VALUES_PER_THREAD = values
    kernel._compiled.clear()
    kernel._launches.clear()
    for m, n in [(1024, 32768), (1000, 28672), (300, 12288), (133, 5120), (5, 8192)]:
        x = torch.randn(m, n, device="cuda").to(torch.bfloat16)
        w = torch.randn(n, device="cuda").to(torch.bfloat16)
        want = reference.reference(x.double(), w.double()).float()
        got = kernel.run(x, w).float()
        err = ((got - want).norm() / want.norm()).item()
        assert err < 1e-2, (values, m, n, kernel.plan(n, 8, m), err)
print("ok")
"""


def test_rmsnorm_reload_matches_the_reference(tmp_path):
    """kernel.RELOAD (off; benchmarks/cluster_ab.sh fullsm times it): rmsnorm with x read again after the reduction
    and the weight loaded after it, under the default split (32 values a thread) and quack's (64), on rows split
    across clusters of 2 and 4 (N = 32768, 28672, the last chunk partial), rows of one CTA (12288, 5120) and below
    one wave (5 rows): the float64 reference's output, within bf16's error."""
    run_child_in_baked(tmp_path, RELOAD_CHILD, "pattern=reduction", "op=rmsnorm", "gpu=H200")


LATE_LOADS_CHILD = """
import torch
import torch.nn.functional as F
from ws import kernel
assert kernel.plan(8192, 8, 1000)["tpr"] == 256  # 1000 rows: x alone holds the register budget, 4 chunks of 8
for m, n in [(1001, 64), (1000, 8192), (3, 5000)]:
    for offset in (0, 1, 0):  # aligned, then a view 2 bytes in (its own plan), then aligned again
        x = torch.randn(m, n + 8, device="cuda").to(torch.bfloat16)[:, offset:offset + n]  # row stride n + 8
        w, b = (torch.randn(n + 1, device="cuda").to(torch.bfloat16)[offset:offset + n] for _ in range(2))
        want = F.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
        for _ in range(2):
            got = kernel.run(x, w, b).float()
            err = ((got - want).norm() / want.norm()).item()
            assert err < 1e-2, (m, n, offset, err)
print("ok")
"""


def test_layer_norm_loads_weight_and_bias_after_the_reductions(tmp_path):
    """F.layer_norm as the user's op: weight and bias are loaded after the row's reductions (lowered.LATE), the last
    CTA of short rows (N = 64: 16 rows a CTA, M = 1001) reads row M - 1 for its rows past M and stores nothing, a
    partial last chunk (N = 5000) and rows of stride N + 8; a view 2 bytes off alignment is refused by the plan that
    assumed it and runs again under its own, and aligned calls after it keep theirs."""
    run_child_in_baked(tmp_path, LATE_LOADS_CHILD, f"pytorch_logic={ROOT / 'tests/lowering_corpus/ops.py'}:layer_norm")


LEADING_DIMS_CHILD = """
import torch
import ws
from ws import kernel, reference
dtype = getattr(torch, ws.OP["torch_dtype"])


def each(t):
    return tuple(t) if isinstance(t, (tuple, list)) else (t,)


def check(got, inputs, what):
    want = each(reference.reference(*[t.double() if t.is_floating_point() else t for t in inputs]))
    for g, w in zip(each(got), want, strict=True):
        assert g.shape == w.shape, (what, g.shape, w.shape)
        err = ((g.double() - w).norm() / w.norm()).item()
        assert err < ws.OP["tolerance"], (what, err)


cases = [c for c in ws.OP["cases"] if c.get("lead") or kernel.lowered.HEADS]  # [*lead, N] inputs; heads: all
assert len(cases) > 5, ws.OP["cases"]
for case in cases:
    inputs = reference.make_inputs(case, dtype, "cuda", 0)
    got = kernel.run(*inputs)
    check(got, inputs, ("as it is", case["dims"]))
    out = tuple(torch.full_like(g, float("nan")) for g in each(got))
    kernel.run(*inputs, out=out if len(out) > 1 else out[0])
    check(out, inputs, ("out=", case["dims"]))
    x = inputs[0]  # a last-dim slice of a wider x: not contiguous, so [M, N] views through host.rows_nd
    wide = torch.zeros(*x.shape[:-1], x.shape[-1] + 64, dtype=x.dtype, device=x.device)
    wide[..., :x.shape[-1]] = x
    strided = [wide[..., :x.shape[-1]], *inputs[1:]]
    check(kernel.run(*strided), strided, ("strided", case["dims"]))
assert any(key[-2] > 1 for key in kernel._compiled), "no launcher compiled on x's leading dims"
if kernel.lowered.HEADS:  # q as the model passes it, a strided one as a contiguous copy: never [M, N] views
    assert all(key[-2] > 1 for key in kernel._compiled), list(kernel._compiled)
else:
    assert any(key[-2] == 1 for key in kernel._compiled), "no launcher compiled on [M, N] rows"
print("ok")
"""

LEADING_DIMS_REDUCED_CHILD = """
import torch
from ws import kernel
for shape in [(2, 3, 5, 4096), (3, 7, 1000), (2, 2, 131072), (1, 2, 1 << 20)]:
    x = torch.randn(shape, device="cuda").to(torch.bfloat16)
    x[(0,) * (len(shape) - 1)][7] = 1e4  # one row's max, at a known place
    got = kernel.run(x)
    torch.testing.assert_close(got, x.amax(-1), rtol=0, atol=0)
    out = torch.full(shape[:-1], float("nan"), device="cuda", dtype=x.dtype)
    kernel.run(x, out=out)
    torch.testing.assert_close(out, x.amax(-1), rtol=0, atol=0)
x = torch.randn(1, 6, 4096, device="cuda").to(torch.bfloat16).transpose(0, 1)  # [6, 1, D], dim 1's stride 6*D
assert x.is_contiguous() and x.stride(1) == 6 * 4096
torch.testing.assert_close(kernel.run(x), x.amax(-1), rtol=0, atol=0)
print("ok")
"""


PER_ROW_AS_TAKEN_CHILD = """
import torch
import ws
from ws import kernel, reference
dtype = getattr(torch, ws.OP["torch_dtype"])


def check(got, inputs, what):
    want = reference.reference(*[t.double() for t in inputs])
    err = ((got.double() - want).norm() / want.norm()).item()
    assert got.shape == want.shape and err < ws.OP["tolerance"], (what, got.shape, err)


cases = [c for c in ws.OP["cases"] if not c.get("lead")]
for case in cases:
    x, shared, gate = reference.make_inputs(case, dtype, "cuda", 0)
    assert gate.shape == (x.shape[0], 1), gate.shape
    check(kernel.run(x, shared, gate), (x, shared, gate), ("[M, 1]", case["dims"]))
    flat = gate.view(-1)
    check(kernel.run(x, shared, flat), (x, shared, gate), ("[M]", case["dims"]))
    out = torch.full_like(x, float("nan"))
    kernel.run(x, shared, gate, out=out)
    check(out, (x, shared, gate), ("out=", case["dims"]))
    if x.shape[0] > 1:  # a [M, 1] column of a wider matrix: refused in one line, first or after the contiguous gate
        wide = torch.cat([gate, gate], dim=1)
        try:
            kernel.run(x, shared, wide[:, :1])
        except ValueError as exc:
            assert "contiguous" in str(exc) and len(str(exc).splitlines()) == 1, exc
        else:
            raise AssertionError("a strided [M, 1] gate ran")
assert {key[-1] for key in kernel._compiled} == {(1,), (2,)}, list(kernel._compiled)
print("ok")
"""


def test_a_per_row_input_goes_as_the_function_takes_it(tmp_path):
    """Qwen2-MoE's shared-expert gate [T, 1] over [T, D] rows (annotated.py) on its 2-D cases: the launcher is
    compiled on the gate's own rank, [T, 1] or [T] (no view per call), both match the function in float64, with
    out= too; a strided column is refused in one line (the gate's strides are in run()'s signature, so it meets the
    checks even after a contiguous gate compiled its rank)."""
    run_child_in_baked(tmp_path, PER_ROW_AS_TAKEN_CHILD,
                       f"pytorch_logic={ROOT / 'tests/lowering_corpus/annotated.py'}:qwen2_moe_shared_expert_combine")


@pytest.mark.parametrize("function", ["esm_embeddings_norm_mask", "llama_rope", "sd35_ada_layer_norm_zero_x",
                                      "dac_snake1d", "qwen3_q_norm"])
def test_rows_of_a_models_leading_dims_run_as_they_are(tmp_path, function):
    """Real models' functions on their own cases of rank 3 and 4 (annotated.py: ESM's LayerNorm with its [B, S]
    padding mask; Llama's RoPE of q and k [B, S, H, D] with cos and sin [S, D]; SD3.5's adaLN with [B, D] shifts and
    scales; DAC's snake with alpha [1, C, 1]): every tensor reaches a launcher compiled on x's leading dims as the
    model passes it (no reshape, no as_strided view), with out= too; a last-dim slice of a wider x takes the [M, N]
    views instead. Both match the function in float64. Qwen3's QK-norm (q [T, H*128] viewed as heads inside the
    function) runs every case through a launcher on q as the model passes it, which views it as the function does,
    [T, H, 128]; a strided q goes to it as a contiguous copy."""
    run_child_in_baked(tmp_path, LEADING_DIMS_CHILD, f"pytorch_logic={ROOT / 'tests/lowering_corpus/annotated.py'}:{function}")


def test_reduced_rows_of_rank_3_and_4_equal_torch_amax(tmp_path):
    """max over the last dim of x [B, S, H, D] and [B, S, D] on every path (rows, a cluster, the looped one), and of
    a seq-first decode step transposed ([1, B, D] -> [B, 1, D]: contiguous, with a stride of its extent-1 dim that
    is not the row length): [*lead] outputs, bit for bit torch.amax's."""
    run_child_in_baked(tmp_path, LEADING_DIMS_REDUCED_CHILD, "pattern=reduction", "op=max")


MASKS_CHILD = """
import torch
from ws import kernel
pattern = {pattern!r}
gen = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(64, 1000, device="cuda", generator=gen).to(torch.bfloat16)
w = torch.randn(1000, device="cuda", generator=gen).to(torch.bfloat16)
alpha = torch.tensor(0.5, device="cuda", dtype=torch.bfloat16)
mask = torch.rand(64, 1000, device="cuda", generator=gen) > 0.3
s = torch.where(mask, x.double() * 0.5 + w.double(), torch.tensor(-1e30, dtype=torch.float64, device="cuda"))
if pattern == "elementwise":  # m = 0, z = 2 (lowered_sources.MASK_SCALAR_ELEMENTWISE)
    want = (torch.round(torch.exp(s) * 0.5 * 127.0),)
else:
    m = s.amax(-1, keepdim=True)
    e = torch.exp(s - m)
    z = e.sum(-1, keepdim=True)
    want = (torch.round(e / z * 127.0), (m + torch.log(z)).squeeze(-1))
for on in (False, True):  # BOOL_MASKS: the mask viewed as uint8 per call, then as it is to a launcher on bool
    kernel.BOOL_MASKS = on
    kernel._VIEWS = kernel._viewer()
    kernel._compiled.clear()
    kernel._launches.clear()
    for given in (mask, mask.view(torch.uint8), mask, mask.view(torch.uint8)):  # bool, its bytes, and back again
        got = kernel.run(alpha, x, given, w)
        got = got if isinstance(got, tuple) else (got,)
        for g, ref in zip(got, want, strict=True):
            err = ((g.double() - ref).norm() / ref.norm()).item()
            assert err < 1e-2, (on, given.dtype, err)
    assert (kernel._VIEWS([alpha, x, mask, w])[2] is mask) == on, "with BOOL_MASKS a mask goes as it is"
print("ok")
"""


@pytest.mark.parametrize("pattern", ["elementwise", "reduction"])
def test_bool_masks_reach_the_launcher_as_they_are(tmp_path, pattern):
    """A bool mask (lowered_sources.MASK_SCALAR: a scalar, x, a row mask and a vector, in the user's order), viewed
    as uint8 per call (BOOL_MASKS off), and with BOOL_MASKS (the default) reaching a launcher compiled on bool as it
    is, which reads its bytes (rt.masks_as_bytes). Both cells match torch in float64 both ways, with the mask as bool
    and as its bytes (uint8; with BOOL_MASKS run() views it as bool after the wrapper refuses it), in either order."""
    op = {"elementwise": "silu_mul", "reduction": "rmsnorm"}[pattern]
    done = bake_cli(tmp_path, f"pattern={pattern}", f"op={op}", "op_name=ws", "run_baseline=no")
    assert done.returncode == 0, done.stderr
    make_lowered(tmp_path / "ws", MASK_SCALAR_ELEMENTWISE if pattern == "elementwise" else MASK_SCALAR, "cutedsl")
    run_child(tmp_path, MASKS_CHILD.format(pattern=pattern))
