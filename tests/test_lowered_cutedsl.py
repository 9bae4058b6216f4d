"""The CuTe DSL cells run a generated lowered.py: every example of tests/lowered_examples compiles for sm_90a on the
CPU, and its PTX keeps the cell's data movement (128-bit accesses, the shuffle/smem reduction, no local memory).

Each test workspace is the built-in op's, arranged by tools/scaffold.py, with op.json switched to "op": "lowered"
and an example copied in as lowered.py, as the template's tracer does for a user's function. Two more lowered.py
files are the test's own: PW_ALL, every pointwise.py function on every operand kind it takes (vectors, scalars,
Python floats, booleans), and ROW_RANGE, min and max reductions with reduced outputs only ([M, 1] and [M]).
"""

from __future__ import annotations

import functools
import math
import re
import shutil
import subprocess

import pytest
from helpers import ROOT, load_package, lowered_constants, make_lowered
from lowered_sources import (BROADCAST_PER_ROW, HEADS, HEADS_RESIDUAL, LANES, MASK_SCALAR, MASK_SCALAR_ELEMENTWISE,
                             PARTS, PER_ROW, PER_ROW_ELEMENTWISE, QUANT, QUANT_FP8, ROPE, ROPE_LANES)
from tools import scaffold, spec

EXAMPLES = ROOT / "tests" / "lowered_examples"

PW_ALL = '''
import pointwise as pw

SOURCE = "test:pw_all"
INPUTS = ("x", "w")
KINDS = ("row", "vector")
DTYPES = ("float", "float")
WIDTHS = (1, 1)
ARGS = ((0, "whole", 0), (1, "whole", 0))
OUTPUTS = ("row", "row")
OUT_WIDTHS = (1, 1)
OUT_HOW = ("whole", "whole")
DIMS = ()
HEADS = None
RANK = None
OUT_DTYPES = ("input", "fp32")
REDUCTIONS = ()
PASSES = ()
ONLINE = ()
LATE = ()
USES_N = True


def compute(x, w, n, reduce):
    s = n * 0.001
    v = x
    for f in (pw.exp, pw.exp2, pw.log, pw.log2, pw.log1p, pw.expm1, pw.sqrt, pw.rsqrt, pw.tanh, pw.sigmoid, pw.erf,
              pw.abs, pw.reciprocal, pw.round, pw.floor, pw.ceil, pw.trunc, pw.sin, pw.cos):
        v = v + f(pw.abs(x) + 0.5) + f(s) + f(0.25)
    for f in (pw.pow, pw.maximum, pw.minimum):
        v = v + f(pw.abs(x), w) + f(x, 1.5) + f(1.5, w) + f(s, x) + f(x, s) + f(s, 0.5) + f(s, s)
    c = x > w
    d = s > 0.5
    v = v + pw.where(c, x, w) + pw.where(c, 1.0, w) + pw.where(c, s, 2.0) + pw.where(d, x, s) + pw.where(d, s, 1.0)
    v = v + pw.where(True, x, 1.0) + pw.where(pw.logical_and(c, x < 1.0), x, w) + pw.where(pw.logical_or(c, d), x, w)
    v = v + pw.to_float(pw.logical_not(c)) + pw.to_float(pw.logical_and(d, s < 2.0)) + pw.to_float(pw.logical_not(d))
    v = v + pw.to_float(pw.logical_or(True, c)) + pw.to_float(pw.logical_and(c, False))
    v = v + pw.cast(x, "bf16") + pw.cast(w, "fp16") + pw.cast(s, "bf16") + pw.full_like(x, s) + pw.full_like(x, 2.0)
    v = v + (1.0 - x) * (s / x) - 2.0 / w + (-x) + s * x + x / s
    return (v, pw.minimum(v, 3.0))
'''

ROW_RANGE = '''
import pointwise as pw

SOURCE = "test:row_range"
INPUTS = ("x",)
KINDS = ("row",)
DTYPES = ("float",)
WIDTHS = (1,)
ARGS = ((0, "whole", 0),)
OUTPUTS = ("reduced_keepdim", "reduced")
OUT_WIDTHS = (1, 1)
OUT_HOW = ("whole", "whole")
DIMS = ()
HEADS = None
RANK = None
OUT_DTYPES = ("input", "fp32")
REDUCTIONS = ("min", "max")
PASSES = (0, 1)
ONLINE = (None, None)
LATE = ()
USES_N = False


def compute(x, n, reduce):
    lo = reduce("min", x)
    hi = reduce("max", pw.exp(x - lo))
    return (lo, pw.log(hi) + lo)
'''
SOURCES = {"pw_all": PW_ALL, "row_range": ROW_RANGE, "mask_scalar": MASK_SCALAR,
           "mask_scalar_elementwise": MASK_SCALAR_ELEMENTWISE, "parts": PARTS, "lanes": LANES, "quant": QUANT,
           "quant_fp8": QUANT_FP8, "rope": ROPE, "rope_lanes": ROPE_LANES, "heads": HEADS,
           "heads_residual": HEADS_RESIDUAL, "per_row": PER_ROW,
           "per_row_elementwise": PER_ROW_ELEMENTWISE, "broadcast_per_row": BROADCAST_PER_ROW}  # the test's own
# lowered.py files, beside the examples

REDUCTION_EXAMPLES = ["lowered_fused_add_rmsnorm.py", "lowered_layer_norm.py", "lowered_softmax_temp_lse.py"]


@pytest.fixture(scope="module")
def lowered_ws(tmp_path_factory):
    """(pattern, an example's file name or a SOURCES key) -> a workspace running it, arranged once per module."""
    made = {}

    def get(pattern: str, example: str):
        if (pattern, example) not in made:
            source = SOURCES[example] if example in SOURCES else (EXAMPLES / example).read_text()
            dest = tmp_path_factory.mktemp("lowered") / f"{pattern}_{example.removesuffix('.py')}"
            op = {"elementwise": "silu_mul", "reduction": "rmsnorm"}[pattern]
            scaffold.workspace(dest, spec.context(pattern=pattern, op=op, gpu="H200", dtype="bf16", op_name=dest.name,
                                                  run_baseline="no"))
            made[(pattern, example)] = (make_lowered(dest, source, "cutedsl"), lowered_constants(source))
        return made[(pattern, example)]

    return get


@functools.cache
def _compiled(ws, dims: tuple, dtype: str) -> tuple[str, dict]:
    """compile_only's PTX for a case of `dims` in the workspace (and describe's plan of it), once per case."""
    kernel = load_package(ws, f"{ws.name}_{'x'.join(map(str, dims))}_{dtype}").kernel
    case = {"dims": list(dims), "vars": {"numel": math.prod(dims)}}
    ptx = kernel.compile_only(case, ws / "build", dtype=dtype)
    assert ".target sm_90a" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx, "local memory: registers spilled or an array went to memory"
    return ptx, kernel.describe(case)


def _no_spills(ptx: str, tmp_path) -> None:
    """ptxas (when installed) allocates the PTX's registers without spilling."""
    if not shutil.which("ptxas"):
        return
    (tmp_path / "k.ptx").write_text(ptx)
    done = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    spills = re.findall(r"(\d+) bytes spill stores", done.stderr)
    assert spills and not any(int(b) for b in spills), done.stderr


def _unroll(dims, rows: int) -> int:
    """The cell's vectors per thread and row input (kernel.unroll_for): 2, at most 4 for all row inputs together,
    and 1 below 2^24 elements."""
    return 1 if math.prod(dims) < 1 << 24 else max(1, min(2, 4 // rows))


@pytest.mark.parametrize("dims,dtype", [((8192, 8192), "bf16"), ((4096, 4096), "fp32"), ((3, 5, 1024), "bf16")])
def test_elementwise_example_vectorizes(lowered_ws, tmp_path, dims, dtype):
    """gelu_tanh_mul_bias: x and y with 128-bit loads, the bias (N % VEC == 0) one 128-bit load per chunk too."""
    ws, lowered = lowered_ws("elementwise", "lowered_gelu_tanh_mul_bias.py")
    ptx, plan = _compiled(ws, dims, dtype)
    unroll = int(plan["values_per_thread"].split()[0])
    assert unroll == _unroll(dims, lowered["KINDS"].count("row"))
    assert ptx.count("ld.global.v4") == unroll * len(lowered["INPUTS"])  # rows and the vector's chunks
    assert ptx.count("st.global.v4") == unroll
    assert "max.NaN.f32" in ptx  # pw.maximum propagates NaN
    _no_spills(ptx, tmp_path)


def test_elementwise_vector_gathers_when_n_is_not_a_multiple_of_vec(lowered_ws):
    """N = 1001: the rows keep their 128-bit loads, the bias is read by scalar gathers (fast tile and tail)."""
    ws, lowered = lowered_ws("elementwise", "lowered_gelu_tanh_mul_bias.py")
    ptx, plan = _compiled(ws, (16, 1001), "bf16")
    unroll = _unroll((16, 1001), lowered["KINDS"].count("row"))
    assert ptx.count("ld.global.v4") == unroll * lowered["KINDS"].count("row")
    assert ptx.count("st.global.v4") == unroll
    assert "scalar gathers" in plan["data_movement"]


def test_every_pointwise_function_compiles_on_every_operand_kind(lowered_ws):
    """PW_ALL: one compile traces every pw function on vectors, scalars, floats and booleans; the fp32 output of a
    bf16 op is stored as two 128-bit stores per vector. (Some 200 transcendentals per element: ptxas may spill
    a few bytes here, which no generated op comes near, so only the PTX is checked.)"""
    ws, _ = lowered_ws("elementwise", "pw_all")
    ptx, plan = _compiled(ws, (1024, 4096), "bf16")
    unroll = int(plan["values_per_thread"].split()[0])
    assert ptx.count("ld.global.v4") == 2 * unroll
    assert ptx.count("st.global.v4") == unroll + 2 * unroll  # bf16 out, then fp32 out
    assert "max.NaN.f32" in ptx and "min.NaN.f32" in ptx


# N = 8192: every input's row in registers, loaded once. N = 131072: the same split across a cluster of 16 CTAs that
# exchange each reduce() result through DSMEM, for a program of one or two loads (plan); with three, the looped path,
# which a one-load program takes from N = 2**20.
_PATHS = [(example, n) for example in REDUCTION_EXAMPLES for n in (8192, 131072)]
_PATHS += [(example, 1 << 20) for example in REDUCTION_EXAMPLES if "softmax" in example]


@pytest.mark.parametrize("example,n", _PATHS)
def test_reduction_example_compiles(lowered_ws, tmp_path, example, n):
    """Each example on each path of the plan (_PATHS)."""
    ws, lowered = lowered_ws("reduction", example)
    ptx, plan = _compiled(ws, (64, n), "bf16")
    loads = len(lowered["INPUTS"])  # one load per input in these examples
    looped = n == 1 << 20 or (n == 131072 and loads > 2)
    assert plan["path"].startswith("looped") == looped
    assert (plan["cluster"] > 1) == (n == 131072 and loads <= 2)
    chunks = plan["chunks_per_thread"] if not looped else int(plan["chunks_per_thread"].split()[0])
    assert plan["vector_elements"] == 8
    if plan["cluster"] > 1:  # one send per reduce() call, each completing on its own mbarrier; an online pair's two
        # calls (max, then the sum of exp(x - max)) share one (a cluster of 16: the plan's "pair")
        pair = any(m is not None and m == q - 1 for q, m in enumerate(lowered["ONLINE"]))
        assert ptx.count("st.async.shared::cluster") == len(lowered["REDUCTIONS"]) - pair and "mapa" in ptx
    if not looped:  # HBM read once: one 128-bit load per input and chunk, one store per row output and chunk
        assert ptx.count("ld.global.v4") == len(lowered["INPUTS"]) * chunks
        assert ptx.count("st.global.v4") == lowered["OUTPUTS"].count("row") * chunks
    else:  # one load per input, chunk and pass (the slice loop may be unrolled further)
        passes = (max(lowered["PASSES"]) + 1 if lowered["PASSES"] else 0) + ("row" in lowered["OUTPUTS"])
        assert ptx.count("ld.global.v4") >= len(lowered["INPUTS"]) * chunks * passes
        assert ptx.count("st.global.v4") >= lowered["OUTPUTS"].count("row") * chunks
        assert f"{passes} passes" in plan["path"]
    assert "shfl.sync.bfly" in ptx
    if "max" in lowered["REDUCTIONS"]:
        assert "max.NaN.f32" in ptx
    _no_spills(ptx, tmp_path)


@pytest.mark.parametrize("example,late", [("lowered_layer_norm.py", 2), ("lowered_fused_add_rmsnorm.py", 1)])
def test_loads_no_reduction_needs_come_after_the_reductions(lowered_ws, example, late):
    """LATE: with three loads, those no reduce() needs (LayerNorm's weight and bias, the fused add's weight) are
    issued after the last barrier of the row reduction, and the register budget goes to the loads held across it:
    x gets 32 values, 256 threads of 4 chunks at N = 8192 (where x, weight and bias shared 21: 512 of 2), from
    more rows than SMs on (below, the plan of twice the threads: kernel._sub_wave_plans)."""
    ws, lowered = lowered_ws("reduction", example)
    ptx, plan = _compiled(ws, (1024, 8192), "bf16")
    assert (plan["threads_per_row"], plan["chunks_per_thread"]) == (256, 4)
    after = ptx[ptx.rindex("bar.sync"):]
    assert after.count("ld.global.v4") == late * 4
    assert ptx.count("ld.global.v4") == len(lowered["INPUTS"]) * 4


@pytest.mark.parametrize("dims,path", [((64, 8192), "register-resident rows, twice the threads: no more rows than the "
                                                     "132 SMs"),
                                       ((64, 131072), "register-resident rows, each split across a cluster of 16 CTAs"),
                                       ((64, 1 << 20), "looped (one CTA per row, 2 passes)"),
                                       ((4, 64, 8192), "register-resident rows")])
def test_reduction_min_max_and_reduced_outputs_only(lowered_ws, tmp_path, dims, path):
    """ROW_RANGE: NaN-propagating min and max; with no row output the looped path makes one pass per reduce(). Its
    [B, S, 1] and [B, S] outputs of an x [B, S, D] are written through their own strides."""
    ws, _ = lowered_ws("reduction", "row_range")
    ptx, plan = _compiled(ws, dims, "bf16")
    assert "min.NaN.f32" in ptx and "max.NaN.f32" in ptx and "shfl.sync.bfly" in ptx
    assert "ld.global.v4" in ptx and "st.global.v4" not in ptx
    assert plan["path"] == path
    _no_spills(ptx, tmp_path)


def test_reduction_unaligned_rows_fall_back_to_narrow_vectors(lowered_ws):
    """N = 1002 is not a multiple of 8: VEC 2 (32-bit accesses), still correct and compiled for every input."""
    ws, _ = lowered_ws("reduction", "lowered_fused_add_rmsnorm.py")
    ptx, plan = _compiled(ws, (64, 1002), "bf16")
    assert plan["vector_elements"] == 2 and "ld.global.v4" not in ptx and "ld.global.b32" in ptx


@pytest.mark.parametrize("pattern,example", [("elementwise", "lowered_gelu_tanh_mul_bias.py"),
                                             ("reduction", "lowered_layer_norm.py")])
def test_run_refuses_cpu_tensors_in_host_words(lowered_ws, pattern, example):
    """run() checks its arguments in host.py before compiling anything: CPU tensors are refused, by name."""
    torch = pytest.importorskip("torch")
    ws, lowered = lowered_ws(pattern, example)
    kernel = load_package(ws, f"run_{ws.name}").kernel
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    inputs = [x if kind == "row" else x[0].clone() for kind in lowered["KINDS"]]
    with pytest.raises(ValueError, match="GPU"):
        kernel.run(*inputs)


@pytest.mark.parametrize("pattern,dims", [("reduction", (64, 4096)), ("reduction", (4, 131072)),
                                          ("elementwise", (1024, 4096))])
def test_masks_and_scalars_keep_their_kinds(lowered_ws, pattern, dims):
    """MASK_SCALAR: x is the second input (the user's order), the bool mask is loaded as its bytes (VEC bytes per
    access: 64-bit for bf16) beside x's 128-bit loads, and the scalar is one load per thread, never a row."""
    ws, _ = lowered_ws(pattern, "mask_scalar" if pattern == "reduction" else "mask_scalar_elementwise")
    ptx, plan = _compiled(ws, dims, "bf16")
    assert "ld.global.v2.b32" in ptx or "ld.global.v2.u32" in ptx or "ld.global.u64" in ptx or "ld.global.b64" in ptx \
        or "ld.global.v2" in ptx, "the mask's 8 bytes per access"
    assert "cvt.rni.f32.f32" in ptx  # pw.round: to nearest, halves to even
    assert "ld.global.v4" in ptx


@pytest.mark.parametrize("pattern", ["elementwise", "reduction"])
def test_a_launcher_on_bool_masks_compiles_to_the_same_kernel(lowered_ws, tmp_path, pattern):
    """BOOL_MASKS: a launcher compiled on a bool mask (run() passes it as the model does, with no uint8 view) reads
    its bytes through rt.masks_as_bytes, so its kernel's PTX is the uint8 launcher's, line for line: only the TVM-FFI
    wrapper's dtype check differs (bool: DLPack code 6, 8 bits, torch.bool's)."""
    ws, _ = lowered_ws(pattern, "mask_scalar" if pattern == "reduction" else "mask_scalar_elementwise")
    kernel = load_package(ws, f"{ws.name}_bool_masks").kernel
    assert kernel.BOOL_MASKS is True
    ptx = {}
    try:
        for on in (False, True):
            kernel.BOOL_MASKS = on
            kernel._compiled.clear()
            ptx[on] = kernel.compile_only({"dims": [64, 1000], "vars": {"numel": 64000}}, tmp_path / str(on))
    finally:
        kernel.BOOL_MASKS = True
        kernel._compiled.clear()
    assert ptx[True] == ptx[False]
    assert re.search(r"ld\.global(\.nc)?\.(v2\.)?[bu]8|ld\.global(\.nc)?\.[bu]16|ld\.global(\.nc)?\.[bu]64", ptx[True])


@pytest.mark.parametrize("source,dims", [("per_row", (64, 4096)), ("per_row", (8, 131072)), ("per_row", (4, 1 << 20)),
                                         ("per_row", (4, 16, 4096)), ("per_row", (2, 4, 131072)),
                                         ("per_row", (2, 2, 2, 1 << 20)),
                                         ("per_row_elementwise", (64, 4096)), ("broadcast_per_row", (64, 4096)),
                                         ("broadcast_per_row", (4, 1 << 20)), ("broadcast_per_row", (2, 3, 4, 4096))])
def test_one_value_per_row_is_one_load_per_thread(lowered_ws, source, dims):
    """PER_ROW: each per-row input (a bf16 scale, a mask's byte) is one scalar load per thread, at the thread's row,
    on the register path, a cluster's and the looped one; x and w keep their 128-bit loads; no local memory. So is
    BROADCAST_PER_ROW's per-sample and per-channel value, through its [L0, L1, L2] view. A case of rank 3 or 4
    compiles what run() launches for such an x: every tensor with rows as the 2-D rows its contiguous storage holds
    (_rows_mode: no div/mod of the row index), a per-sample [B] and a per-channel [C] on their own dims by name
    (_broadcast_mode)."""
    ws, facts = lowered_ws("reduction", source)
    ptx, plan = _compiled(ws, dims, "bf16")
    singles = [d for k, d in zip(facts["KINDS"], facts["DTYPES"]) if k.endswith("per_row")]
    assert len(re.findall(r"ld\.global(\.nc)?\.[bu]16\b", ptx)) == singles.count("float"), "a bf16 per-row value"
    assert len(re.findall(r"ld\.global(\.nc)?\.[bu]8\b", ptx)) == singles.count("bool"), "a per-row mask byte"
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx
    if not plan["path"].startswith("looped"):
        assert ptx.count("ld.global.v4") == sum(k in ("row", "vector") for k in facts["KINDS"]) * plan["chunks_per_thread"]
    if source == "per_row":  # rows of [B, S, D] are [M, D] rows: no decode of the row index
        assert not re.search(r"(div|rem)\.(u|s)32", ptx)


def _record_launches(kernel) -> tuple[list, list]:
    """(calls, plans): kernel.run() on the CPU with a no-op launcher of an unbounded plan in place of the first
    call's checks and compile (_prepare); each launch's tensors go to `calls`, each plan's input shapes to `plans`."""
    calls, plans = [], []

    def prepare(inputs, out):
        plans.append(tuple(t.shape for t in inputs))
        return (lambda iters, *tensors: calls.append(tensors), 1, 2**31, None), None

    kernel._prepare = prepare
    return calls, plans


def test_run_steps_between_the_plans_of_few_rows_and_many(workspace_of):
    """run() on the CPU, a signature's first call (_prepare) stubbed with the chain it builds where an N has two
    plans (kernel.plans): later calls pick the launcher by M alone, from the few-rows plan's to the many-rows plan's
    and back, with no new prepare; an M past the int32 bound prepares again (where host.py would refuse it)."""
    torch = pytest.importorskip("torch")
    kernel = load_package(workspace_of("H200", "softmax"), "softmax_steps").kernel
    ran, prepared = [], []

    def prepare(inputs, out):
        prepared.append(inputs[0].shape[0])  # the int32 bound stands at 300 rows, or at the M that asks for more
        many = (lambda iters, *t: ran.append(("many", iters)), 2, max(300, inputs[0].shape[0]), None)
        return (lambda iters, *t: ran.append(("few", iters)), 1, 99, many), None

    kernel._prepare = prepare
    for m in (8, 99, 100, 300, 8, 250):
        kernel.run(torch.empty(m, 4096, dtype=torch.bfloat16))
    assert ran == [("few", 1), ("few", 1), ("many", 2), ("many", 2), ("few", 1), ("many", 2)]
    assert prepared == [8]
    first = torch.empty(100, 4096, dtype=torch.bfloat16)
    kernel._launches.clear()
    kernel.run(first)  # a first call of many rows: the chain is stored, the many-rows launcher runs
    kernel.run(first[:8])
    assert ran[-2:] == [("many", 2), ("few", 1)] and prepared == [8, 100]
    kernel.run(torch.empty(301, 4096, dtype=torch.bfloat16))  # past the last entry's rows: prepared again
    assert prepared == [8, 100, 301] and ran[-1] == ("many", 2)


def test_x_of_rank_3_runs_as_it_is_and_a_strided_one_as_rows(lowered_ws):
    """run() on the CPU with the launcher recorded: a contiguous x [B, S, D] and its per-row inputs [B, S] reach the
    launcher as they are (no reshape: the kernel indexes the rows they hold), the outputs come back [B, S, D] and
    [B, S] as the function returns them, and the signature counts no leading extent (a new S is no new plan). A
    strided x goes through host.rows_nd, as [M, N] views; so does an out [M, N] that the launcher refuses beside x
    [B, S, N] (host.py takes it: the same rows)."""
    torch = pytest.importorskip("torch")
    ws, _ = lowered_ws("reduction", "per_row")
    kernel = load_package(ws, f"rank3_{ws.name}").kernel
    calls, plans = _record_launches(kernel)
    for s in (16, 17):
        x, scale = torch.randn(4, s, 1024, dtype=torch.bfloat16), torch.randn(4, s, dtype=torch.bfloat16)
        y, r = kernel.run(x, scale, scale > 0, torch.randn(1024, dtype=torch.bfloat16))
        assert calls[-1][0] is x and calls[-1][1] is scale and calls[-1][2].shape == (4, s)
        assert (y.shape, r.shape, r.dtype) == ((4, s, 1024), (4, s), torch.float32)
        assert calls[-1][4] is y and calls[-1][5] is r
    assert len(plans) == 1, "the leading extents are not in the signature"
    wide = torch.randn(4, 16, 2048, dtype=torch.bfloat16)[..., :1024]
    y, r = kernel.run(wide, scale[:, :16], scale[:, :16] > 0, torch.randn(1024, dtype=torch.bfloat16))
    assert calls[-1][0].shape == (64, 1024) and calls[-1][0].stride() == (2048, 1)
    assert (y.shape, r.shape) == ((4, 16, 1024), (4, 16))
    for out in (None, (y, r)):  # too few inputs: the count check's one line, with or without out=
        with pytest.raises(ValueError, match=r"takes 4 input\(s\), got 1"):
            kernel.run(x, out=out)

    def refusing(iters, *tensors):  # the TVM-FFI wrapper: an out of another rank than x's is not what it compiled
        if tensors[0].dim() != tensors[4].dim():
            raise TypeError("ndim mismatch")
        calls.append(tensors)

    kernel._prepare = lambda inputs, out: ((refusing, 1, 2**31, None), None)
    kernel._launches.clear()
    flat = torch.empty(4 * 17, 1024, dtype=torch.bfloat16)  # out [M, N] beside x [B, S, N]: host.py takes it
    r = torch.empty(4, 17, dtype=torch.float32)
    got = kernel.run(x, scale, scale > 0, torch.randn(1024, dtype=torch.bfloat16), out=(flat, r))
    assert got[0] is flat and got[1] is r, "the given out tensors, handed back"
    assert calls[-1][0].shape == (68, 1024) and calls[-1][4].data_ptr() == flat.data_ptr(), "the [M, N] views"


def test_broadcast_inputs_of_q_s_rank_reach_the_launcher_as_they_are(lowered_ws):
    """RoPE's run() on the CPU, launcher recorded: q [B, S, H, D] and cos, sin [S, D] as the model passes them reach
    the launcher untouched (no as_strided view per call: _broadcast_mode walks them by name), and the output is q's
    shape; a strided q (a slice of a wider projection) takes host.rows_nd's views, and a strided cos goes as it is.
    run() is _run_rows itself: a q flattened to [M, D] gets host.rows_nd's words, not a loop back into it."""
    torch = pytest.importorskip("torch")
    ws, _ = lowered_ws("reduction", "rope")
    kernel = load_package(ws, f"bcast_{ws.name}").kernel
    calls, _ = _record_launches(kernel)
    q = torch.randn(2, 16, 8, 128, dtype=torch.bfloat16)
    cos, sin = torch.randn(16, 128, dtype=torch.bfloat16), torch.randn(16, 128, dtype=torch.bfloat16)
    got = kernel.run(q, cos, sin)
    assert calls[-1][0] is q and calls[-1][1] is cos and calls[-1][2] is sin and got.shape == q.shape
    got = kernel.run(torch.randn(2, 16, 8, 256, dtype=torch.bfloat16)[..., :128], cos, sin)
    assert calls[-1][0].shape == (256, 128) and calls[-1][1].dim() == 4, "[M, N] rows, [L0, L1, L2, W] cos"
    assert got.shape == q.shape
    wide_cos = torch.randn(16, 256, dtype=torch.bfloat16)[:, :128]  # a strided cos: walked by its own strides
    kernel.run(q, wide_cos, sin)
    assert calls[-1][0] is q and calls[-1][1] is wide_cos
    with pytest.raises(ValueError, match=r"must be \[.*\] as the function names its dims"):
        kernel.run(q.view(-1, 128), cos, sin)  # rows flattened past cos's S: host.rows_nd's one line


@pytest.mark.parametrize("source,dims", [("parts", (64, 7168)), ("lanes", (64, 7168)), ("parts", (4, 65536)),
                                         ("lanes", (16, 1001))])
def test_wide_inputs_are_read_once_with_vector_loads(lowered_ws, source, dims):
    """x [M, 2N] read in two N-wide parts (two 128-bit loads per chunk, one from column j*N) or as interleaved lanes
    (one 2*VEC-wide fragment per chunk: two 128-bit loads, deinterleaved in registers): every byte of x once, with
    128-bit loads, and the output's row stored with 128-bit stores."""
    ws, _ = lowered_ws("reduction", source)
    ptx, plan = _compiled(ws, dims, "bf16")
    looped = plan["path"].startswith("looped")
    chunks = plan["chunks_per_thread"] if not looped else int(plan["chunks_per_thread"].split()[0])
    if dims[1] % 8:  # an odd N: one element per vector, a lane pair one 32-bit load (x's row stride 2N is even)
        assert plan["vector_elements"] == 1 and "ld.global.b32" in ptx
        return
    if not looped:
        assert ptx.count("ld.global.v4") == (2 + 1) * chunks  # x's two parts (or a lane pair) and the vector w
        assert ptx.count("st.global.v4") == chunks
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx


@pytest.mark.parametrize("source,dims", [("rope", (64, 128)), ("rope_lanes", (64, 128)), ("rope", (4, 131072)),
                                         ("rope", (2, 16, 8, 128)), ("rope_lanes", (2, 3, 4, 131072))])
def test_rope_reads_halves_and_broadcast_rows_and_writes_whole_rows(lowered_ws, source, dims):
    """RoPE (a case's N is the output row, D): q's two halves (or one 2*VEC fragment of lane pairs), cos and sin
    broadcast over B and H, found through their [L0, L1, L2] row layouts (integer div/rem of the row index, once per
    row), and the output row written whole with 128-bit stores: halves from two places, lanes interleaved in
    registers. Loads 6 and stores 2 per chunk either way; nothing goes to local memory. A case of q's own rank
    [B, S, H, D] compiles what run() launches for it: cos and sin [S, D] as they are, walked by their dims' names."""
    ws, _ = lowered_ws("reduction", source)
    ptx, plan = _compiled(ws, dims, "bf16")
    assert plan["vector_elements"] == 8
    if plan["path"].startswith("looped"):
        assert ptx.count("ld.global.v4") >= 6 and ptx.count("st.global.v4") >= 2
        return
    chunks = plan["chunks_per_thread"]
    assert ptx.count("ld.global.v4") == 6 * chunks
    assert ptx.count("st.global.v4") == 2 * chunks
    assert re.search(r"(div|rem)\.(u|s)32", ptx), "the broadcast rows are found by the layout's div/rem"


def test_heads_run_rows_of_the_head(lowered_ws):
    """A QK-norm over heads of 128: a case [64, 4096] runs 2048 rows of 128 (16 threads of 8 bf16 each), one
    reduction per head."""
    ws, _ = lowered_ws("reduction", "heads")
    ptx, plan = _compiled(ws, (64, 4096), "bf16")
    assert plan["threads_per_row"] * plan["vector_elements"] * plan["chunks_per_thread"] == 128
    assert plan["grid_blocks"] * plan["rows_per_cta"] >= 64 * 32
    assert ptx.count("ld.global.v4") == 2 * plan["chunks_per_thread"] and "shfl.sync.bfly" in ptx


def test_heads_reach_the_launcher_as_the_model_passes_them(lowered_ws):
    """run() on the CPU, launcher recorded: q [T, H*128] (and [B, S, H*128], [H*128]) reaches the launcher as it is
    (the launcher views it as the function does, [.., H, 128]: _as_heads), the output is that view's shape, a new T
    or H is no new plan, and a given out [T, H, 128] is written in place. A given out of q's own shape [T, H*128] is
    written through that view of it; a strided q (a slice of a fused projection) goes as a contiguous copy; a last
    dim that is no whole number of heads, or an out of another size, is refused in host.py's words."""
    torch = pytest.importorskip("torch")
    ws, _ = lowered_ws("reduction", "heads")
    kernel = load_package(ws, f"heads_{ws.name}").kernel
    checks = kernel._prepare
    calls, plans = _record_launches(kernel)
    w = torch.randn(128, dtype=torch.bfloat16)
    for t, h in ((16, 8), (17, 8), (17, 4)):
        q = torch.randn(t, h * 128, dtype=torch.bfloat16)
        got = kernel.run(q, w)
        assert calls[-1][0] is q and calls[-1][1] is w
        assert got.shape == (t, h, 128) and calls[-1][2] is got
    assert len(plans) == 1, "T and H are not in the signature"
    q = torch.randn(17, 1024, dtype=torch.bfloat16)
    out = torch.empty(17, 8, 128, dtype=torch.bfloat16)
    assert kernel.run(q, w, out=out) is out and calls[-1][2] is out
    flat = torch.empty(17, 1024, dtype=torch.bfloat16)  # an out of q's shape: written through its [T, H, c] view
    assert kernel.run(q, w, out=flat) is flat and calls[-1][2].shape == (17, 8, 128)
    assert calls[-1][2].data_ptr() == flat.data_ptr()
    with pytest.raises(ValueError, match=r"out must be contiguous, of the function's view of x's heads \[17, 8, 128\]"):
        kernel.run(q, w, out=torch.empty(17, 512, dtype=torch.bfloat16))
    q3 = torch.randn(2, 3, 1024, dtype=torch.bfloat16)
    assert kernel.run(q3, w).shape == (2, 3, 8, 128) and calls[-1][0] is q3
    q1 = torch.randn(1024, dtype=torch.bfloat16)  # one token
    assert kernel.run(q1, w).shape == (8, 128) and calls[-1][0] is q1
    got = kernel.run(torch.randn(16, 2048, dtype=torch.bfloat16)[:, :1024], w)
    assert calls[-1][0].shape == (16, 1024) and calls[-1][0].is_contiguous() and got.shape == (16, 8, 128)
    with pytest.raises(ValueError, match="not a whole number of heads of 128"):  # host.rows_nd's words
        kernel.run(torch.randn(16, 2048, dtype=torch.bfloat16)[:, :1000], w)
    kernel._prepare = checks  # a new signature's first call: host.py's checks
    with pytest.raises(ValueError, match="not a whole number of heads of 128"):
        kernel.run(torch.randn(1, 2, 2, 1000, dtype=torch.bfloat16), w)


def test_heads_row_inputs_share_their_last_dim(lowered_ws):
    """Heads over two row inputs (x + residual, then the norm): the launcher's fake tensors give both [T, H*c] one
    last-dim symbol, so the wrapper refuses a residual with another H, as it did when both came viewed [T, H, c]
    with H shared; the launcher compiles, and run() passes both as the model does."""
    torch = pytest.importorskip("torch")
    ws, _ = lowered_ws("reduction", "heads_residual")
    kernel = load_package(ws, f"heads2_{ws.name}").kernel
    cfg = kernel.plan(128, 8, 64)
    x, residual = kernel._compile_args("bf16", 8, cfg, 2)[-4:-2]
    assert x.shape[-1] is residual.shape[-1], (x.shape, residual.shape)
    assert ".target sm_90a" in kernel.compile_only({"dims": [64, 4096], "vars": {"numel": 64 * 4096}}, ws / "build")
    calls, _ = _record_launches(kernel)
    q, r, w = torch.randn(16, 1024), torch.randn(16, 1024), torch.randn(128)
    assert kernel.run(q, r, w).shape == (16, 8, 128) and calls[-1][0] is q and calls[-1][1] is r


@pytest.mark.parametrize("source,marker", [("quant", "cvt.rzi.s16.f32"), ("quant_fp8", "e4m3")])
def test_quantized_outputs_are_stored_narrow(lowered_ws, source, marker):
    """The int8 (fp8) values leave the registers converted once by the store (cvt.rzi truncates toward zero, as
    torch's .to(torch.int8); e4m3 rounds to nearest), VEC bytes per access: half the bytes of a bf16 row."""
    ws, _ = lowered_ws("reduction", source)
    ptx, plan = _compiled(ws, (64, 8192), "bf16")
    assert marker in ptx
    assert "st.global.v2" in ptx or "st.global.b64" in ptx or "st.global.u64" in ptx, "8 bytes per store"
    assert "ld.global.v4" in ptx and "cvt.rni.f32.f32" in ptx
