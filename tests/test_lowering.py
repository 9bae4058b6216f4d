"""The user's own op: tracing, the IR, the generated lowered.py and the bake around them (tools/lower/), on the CPU.

The corpus (tests/lowering_corpus/ops.py) holds what kernel engineers write: each function must lower to the
expected class and outputs, or be refused in one line that names the torch op and the source line. A lowering is
then held to the function itself: the IR, interpreted in float64 at shapes the trace never saw (odd N, N = 1,
one row), must give the function's outputs, shapes included (keepdim or not, broadcasting of the [N] vectors).
The generated file must be deterministic and ruff-clean. The child process that runs the user's code must turn a
hang, a crash or an exit at import into one line. Compiling the lowered kernels is tests/test_lowered_compile.py.

The GEMM class (ops.GEMM_EXPECT) is held to the same: its programs against the functions at unseen M, N, K (M = 1
and N = 1 included), its refusals, its files, four of which are tests/lowered_examples/lowered_gemm_<name>.py byte
for byte (`python tests/test_lowering.py` rewrites them after a change to the corpus or the generator).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import warnings

import pytest
import readme  # the workspace's tools/readme.py (pyproject's pythonpath)
import torch
from helpers import ROOT, bake_cli, read_json

from tools import lower, spec, validate
from tools.lower import capture, codegen, ir

CORPUS = ROOT / "tests" / "lowering_corpus" / "ops.py"
import ops  # noqa: E402

LOWERED = [name for name, (kind, _) in ops.EXPECT.items() if kind != "refused"]
REFUSED = [name for name, (kind, _) in ops.EXPECT.items() if kind == "refused"]
SHAPES = [(3, 7), (2, 1), (1, 33), (4, 64)]  # odd N, N = 1, one row, a power of two
GEMM = [name for name, (kind, _) in ops.GEMM_EXPECT.items() if kind != "refused"]
GEMM_REFUSED = [name for name, (kind, _) in ops.GEMM_EXPECT.items() if kind == "refused"]
GEMM_SIZES = [(3, 7, 5), (1, 9, 8), (4, 1, 3), (2, 64, 16)]  # (M, N, K): odd, one row, one column, powers of two
EXAMPLES = ROOT / "tests" / "lowered_examples"
GEMM_EXAMPLES = ("bias_gelu_tanh", "bias_relu_squared", "residual_add", "col_scale_bf16")  # the cells' examples


@pytest.fixture(scope="module")
def lowered() -> dict:
    """name -> capture.lower's result for every corpus function (in this process: the child is tested below)."""
    return {name: capture.lower(str(CORPUS), name) for name in [*ops.EXPECT, *ops.GEMM_EXPECT]}


def test_the_corpus_is_large_enough():
    assert len(LOWERED) >= 30 and len(REFUSED) >= 8


@pytest.mark.parametrize("name", LOWERED)
def test_each_lowers_to_its_class(lowered, name):
    result = lowered[name]
    assert result["ok"], result
    kind, outputs = ops.EXPECT[name]
    assert (result["ir"]["class"], len(result["ir"]["outputs"])) == (kind, outputs)
    assert (kind == "reduction") == bool(ir.reductions(result["ir"]))


@pytest.mark.parametrize("name", GEMM)
def test_each_gemm_lowers_to_a_head_and_an_epilogue(lowered, name):
    result = lowered[name]
    assert result["ok"], result
    program = result["ir"]
    assert (program["class"], len(program["outputs"]), program["head"]) == (*ops.GEMM_EXPECT[name], "matmul")
    assert [i["kind"] for i in program["inputs"][:2]] == ["a", "b"] and not ir.reductions(program)
    assert program["head_line"].startswith("ops.py:")


@pytest.mark.parametrize("name", REFUSED + GEMM_REFUSED)
def test_each_refusal_is_one_line_naming_the_op_and_line(lowered, name):
    result = lowered[name]
    assert not result["ok"] and result["stage"] in ("lower", "call")
    assert {**ops.EXPECT, **ops.GEMM_EXPECT}[name][1] in result["error"] and "\n" not in result["error"]
    if name != "variadic":  # refused from its signature, before any line runs
        assert "ops.py:" in result["error"] and "(`" in result["error"], result["error"]


def _inputs(program: dict, m: int, n: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {i["name"]: torch.randn((m, n) if i["kind"] == "row" else (n,), generator=g, dtype=torch.float64)
            for i in program["inputs"]}


@pytest.mark.parametrize("name", LOWERED)
def test_the_ir_is_the_function(lowered, name):
    """IR interpreted in float64 == the function on the same float64 inputs, at shapes the trace never saw."""
    program = lowered[name]["ir"]
    fn = getattr(ops, name)
    for k, (m, n) in enumerate(SHAPES):
        values = _inputs(program, m, n, seed=k)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # var() over one element: torch's own warning, its inf
            want = fn(**values, **program["constants"])
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        got = ir.interpret(program, values)
        got = list(got) if isinstance(got, tuple) else [got]
        assert len(got) == len(want)
        for w, g in zip(want, got):
            assert g.shape == w.shape, (name, (m, n), g.shape, w.shape)
            w = w.double()
            assert torch.equal(torch.isnan(w), torch.isnan(g)) and torch.equal(torch.isinf(w), torch.isinf(g)), name
            fin = torch.isfinite(w)
            if fin.any():
                scale = max(w[fin].abs().max().item(), 1e-12)
                assert (w[fin] - g[fin]).abs().max().item() <= 1e-5 * scale, (name, (m, n))


def _gemm_inputs(program: dict, m: int, n: int, k: int, seed: int) -> dict:
    return capture.example(program["inputs"], {"M": m, "N": n, "K": k}, torch.float64, seed)


@pytest.mark.parametrize("name", GEMM)
def test_the_gemm_ir_is_the_function(lowered, name):
    """The head and epilogue interpreted in float64 == the function, at sizes the trace never saw; where the
    function rounds its own result (`.to(torch.bfloat16)`), within that rounding (capture.tolerance)."""
    program = lowered[name]["ir"]
    fn = getattr(ops, name)
    for seed, (m, n, k) in enumerate(GEMM_SIZES):
        values = _gemm_inputs(program, m, n, k, seed)
        want = fn(**values, **program["constants"])
        got = ir.interpret(program, values)
        assert got.shape == want.shape == (m, n), (name, (m, n, k), got.shape, want.shape)
        tol, want, got = capture.tolerance(want.dtype), want.double(), got.to(want.dtype).double()
        assert torch.isfinite(want).all() and torch.isfinite(got).all()
        assert (want - got).norm() <= tol * want.norm(), (name, (m, n, k))


def test_the_gemm_interpreter_can_fail(lowered):
    """A dropped epilogue input (the residual read as zero) is caught at the sizes above."""
    program = lowered["residual_bias_silu"]["ir"]
    values = _gemm_inputs(program, 3, 7, 5, 0)
    good = ir.interpret(program, values)
    assert torch.allclose(good, ops.residual_bias_silu(**values), rtol=1e-6)
    assert not torch.allclose(ir.interpret(program, {**values, "residual": 0 * values["residual"]}), good, rtol=1e-3)


def gemm_example(lowered: dict, name: str) -> str:
    return codegen.generate(lowered[name]["ir"], "bf16")


def test_the_gemm_examples_are_what_codegen_writes(lowered):
    """tests/lowered_examples/lowered_gemm_<name>.py, the GEMM cells' examples, are codegen's own output for the
    corpus's functions, byte for byte (rewrite them with `python tests/test_lowering.py`)."""
    for name in GEMM_EXAMPLES:
        assert (EXAMPLES / f"lowered_gemm_{name}.py").read_text() == gemm_example(lowered, name), name
    bare = gemm_example(lowered, "bare_matmul")
    assert "def compute(acc, n, reduce):" in bare and bare.rstrip().endswith("return (acc,)")
    assert 'HEAD = "matmul"' in bare and "import pointwise" not in bare


def test_the_interpreter_can_fail(lowered):
    """A changed constant is caught: the comparison above is not one that always passes."""
    program = json.loads(json.dumps(lowered["softmax_temperature"]["ir"]))
    node = next(n for n in program["nodes"] if any(isinstance(a, float) for a in n["args"]))
    node["args"] = [a * 1.01 if isinstance(a, float) else a for a in node["args"]]
    values = _inputs(program, 3, 7, 0)
    assert not torch.allclose(ir.interpret(program, values), ops.softmax_temperature(**values), rtol=1e-5)


def _on_tensors(fn):
    """fn with its Python-float operands as float64 0-d tensors (torch.maximum and friends take tensors only)."""
    return lambda *a: fn(*(v if isinstance(v, torch.Tensor) else torch.tensor(float(v), dtype=torch.float64)
                           for v in a))


# `pointwise` in torch, for a generated lowered.py on the CPU: each pw. function is the one ir.interpret runs for its
# op (VOCABULARY's torch name); casts do not round here (float64), a boolean becomes 1.0 / 0.0
PW_TORCH = {op.code.split("(")[0][3:]: _on_tensors(getattr(torch, op.torch)) for op in ir.VOCABULARY.values()
            if op.code.startswith("pw.") and hasattr(torch, op.torch)}
PW_TORCH.update(full_like=lambda v, s: torch.full_like(v, s), exp_shifted=lambda a, b: torch.exp(a - b),
                cast=lambda v, dtype: v, to_float=lambda c: c.double())


class _WholeRow:
    """reduce() of a cell whose every call is the row's result (values [W, k]: one row, W warps of k values)."""

    def __call__(self, kind, v):
        if kind == "rebase":
            return v
        return {"sum": torch.sum, "max": torch.amax, "min": torch.amin}[kind](v)


class _WarpPairs(_WholeRow):
    """reduce() of a cell that reduces an online pair a warp at a time, as the CuTe DSL cell's ONLINE_EXCHANGE does:
    the max call hands out each warp's max m_w (0 while -inf), the sum call combines the (m_w, sum) pairs into the
    row's max M and its sum in M's frame, and the rebase returns (M, e * exp(m_w - shift(M))). rebase=False: a
    cell that forgot it, as a check that the comparison can fail."""

    def __init__(self, pair, rebase=True):
        self.pair, self.rebase, self.calls, self.frame, self.top = pair, rebase, 0, None, None

    @staticmethod
    def shift(m):
        return torch.where(m == -torch.inf, torch.zeros_like(m), m)

    def __call__(self, kind, v):
        if kind == "rebase":
            m, e = v
            if self.frame is None or not self.rebase:
                return v
            scale, self.frame = torch.exp(self.frame - self.shift(self.top)), None
            return self.top, e * scale
        q, self.calls = self.calls, self.calls + 1
        if q == self.pair[0]:
            self.frame = torch.amax(v, -1, keepdim=True)
            return self.shift(self.frame)
        if q == self.pair[1]:
            self.top = torch.amax(self.frame)
            return torch.sum(torch.sum(v, -1, keepdim=True) * torch.exp(self.frame - self.shift(self.top)))
        return super().__call__(kind, v)


def _rows_for_pairs(warps: int, k: int) -> list:
    """Rows of W warps of k values that stress a pair's frames: random, a NaN, a warp of only -inf beside values
    near -200 (exp(-M) would overflow), a -inf prefix, +inf, values far apart. Not a row of only -inf: there the
    pair follows the online rules the looped path follows (its sum is 0, a logsumexp -inf), where a whole-row max
    gives exp(-inf - -inf) = NaN."""
    g = torch.Generator().manual_seed(0)
    base = [torch.randn(warps, k, generator=g, dtype=torch.float64) * 4 for _ in range(6)]
    base[1][1, 2] = torch.nan
    base[2][0] = -torch.inf
    base[2][1:] = base[2][1:] - 200
    base[3][: warps // 2] = -torch.inf
    base[4][2, 1] = torch.inf
    base[5][0] = base[5][0] + 60
    return base


def _load_with_torch_pw(path):
    """A generated lowered.py imported with PW_TORCH as its `pointwise`."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    pw = type(sys)("pointwise")
    pw.__dict__.update(PW_TORCH)
    saved, sys.modules["pointwise"] = sys.modules.get("pointwise"), pw
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop("pointwise") if saved is None else sys.modules.__setitem__("pointwise", saved)
    return module


def test_an_online_pair_rebased_a_warp_at_a_time_computes_the_function(lowered, tmp_path):
    """ir.rebases: after an online pair's sum, compute() calls reduce("rebase", (m, e)). A cell that reduces the pair
    a warp at a time (_WarpPairs) then computes what a cell whose every call is the row's result (_WholeRow)
    computes, for every lowered corpus op of rows with a pair, on rows whose warps see different maxes, NaN, +-inf
    and maxes far below -88; without the rebase, it does not."""
    checked = []
    for name in LOWERED:
        program = lowered[name]["ir"]
        pairs = [(m, q) for q, m in enumerate(ir.schedule(program)[1]) if m is not None]
        assert bool(ir.rebases(program)) == bool(pairs), name
        if not pairs or any(i["kind"] != "row" for i in program["inputs"]):
            continue  # this model holds rows only
        path = tmp_path / f"lowered_{name}.py"
        path.write_text(codegen.generate(program, "bf16"))
        module, broke = _load_with_torch_pw(path), False
        for rows in zip(*[_rows_for_pairs(4, 8) for _ in program["inputs"]]):
            n = torch.tensor(float(rows[0].numel()), dtype=torch.float64)
            want = module.compute(*rows, n, _WholeRow())
            got = module.compute(*rows, n, _WarpPairs(pairs[0]))
            for w, g in zip(want, got):
                w, g = torch.broadcast_to(w, rows[0].shape), torch.broadcast_to(g, rows[0].shape)
                assert torch.equal(w.isnan(), g.isnan()) and torch.equal(w.isinf(), g.isinf()), name
                ok = torch.isfinite(w)
                assert torch.allclose(g[ok], w[ok], rtol=1e-9, atol=1e-12), name
            forgot = module.compute(*rows, n, _WarpPairs(pairs[0], rebase=False))
            broke |= any(not torch.allclose(torch.nan_to_num(f), torch.nan_to_num(w), rtol=1e-6)
                         for f, w in zip(forgot, want))
        assert broke, f"{name}: without the rebase some row must come out wrong"
        checked.append(name)
    assert {"log_softmax", "softmax_temperature", "softmax_and_lse"} <= set(checked), checked


def test_generated_files_are_deterministic_and_ruff_clean(lowered, tmp_path):
    for name in LOWERED + GEMM:
        text = codegen.generate(lowered[name]["ir"], "bf16")
        assert text == codegen.generate(json.loads(json.dumps(lowered[name]["ir"])), "bf16")
        assert f"`{name}` in ops.py" in text.splitlines()[0]
        body = text.split("def compute(")[1]
        assert all("# ops.py:" in line for line in body.splitlines()[3:] if "= " in line and "return" not in line)
        (tmp_path / f"lowered_{name}.py").write_text(text)
    assert capture.trace is not None
    again = {name: capture.lower(str(CORPUS), name)["ir"] for name in ("layer_norm", "fused_add_rmsnorm",
                                                                       "bias_gelu_tanh")}
    assert all(again[n] == lowered[n]["ir"] for n in again), "the same function lowers to the same program"
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(tmp_path)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "--no-cache", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_exp_of_a_value_less_its_rows_is_one_shifted_exp(lowered):
    """codegen writes exp(a - m), m one value a row, as pw.exp_shifted(a, m), which the CuTe DSL cell computes as one
    FFMA a value, and writes no subtraction that only such exps use (softmax(x / T), logsumexp); log_softmax's output
    needs x - m, which is written on the rebased m after the online pair's sum."""
    for name in ("softmax_temperature", "logsumexp"):
        body = codegen.generate(lowered[name]["ir"], "bf16").split("def compute(")[1]
        assert body.count("pw.exp_shifted(") == 1 and "pw.exp(" not in body, name
        assert not re.search(r"= \w+ - t\d+  #", body), name  # no a - m statement
    body = codegen.generate(lowered["log_softmax"]["ir"], "bf16").split("def compute(")[1]
    lines = [line.split("  #")[0].strip() for line in body.splitlines()]
    assert "t2 = pw.exp_shifted(x, t0)" in lines
    assert lines.index('t0, t2 = reduce("rebase", (t0, t2))') < lines.index("t1 = x - t0")


def test_a_composite_reduces_once(lowered):
    """F.layer_norm's decomposition sums the row for its mean twice; the lowering keeps one sum of x."""
    program = lowered["layer_norm"]["ir"]
    assert ir.reductions(program) == ["sum", "sum"]
    assert [n["args"][0] for n in program["nodes"] if n["op"] == "sum"][0] == "x"


@pytest.mark.parametrize("name,late", [("layer_norm", ["weight", "bias"]), ("layer_norm_by_hand", ["weight", "bias"]),
                                       ("fused_add_rmsnorm", ["weight"]), ("rms_norm_functional", ["weight"]),
                                       ("softmax_temperature", []), ("bias_gelu", [])])
def test_late_arguments_are_those_no_reduction_needs(lowered, name, late):
    """ir.late: the arguments a register path may load after the reductions (LayerNorm's weight and bias); none
    without reductions (bias_gelu), none when every argument feeds one (softmax)."""
    program = lowered[name]["ir"]
    assert [ir.arguments(program)[k] for k in ir.late(program)] == late


@pytest.mark.parametrize("name,rank", [("mean_center", 2), ("layer_norm", None), ("softmax_temperature", None),
                                       ("sum_by_hand_divided", None)])
def test_a_function_naming_a_dim_by_position_holds_at_its_traced_rank(lowered, name, rank):
    """capture.bound_rank: x.mean(dim=1) is x's last dim at rank 2 only (the program's "rank"; RANK in lowered.py,
    and run() refuses x of rank 3); dim=-1, x.shape[-1] and F.layer_norm (whose aten graph names its dims by
    position) hold at any rank."""
    assert lowered[name]["ir"].get("rank") == rank
    assert f"\nRANK = {rank!r}\n" in codegen.generate(lowered[name]["ir"], "bf16")
    x_line = readme.input_rows(lowered[name]["ir"])[0]  # the workspace README's line for x
    assert ("[M, N] only" in x_line) == (rank is not None) and ("any rank" in x_line) == (rank is None)


def test_a_split_by_position_is_bound_and_one_from_the_end_is_not(tmp_path):
    """The same gated MLP split by x.chunk(2, 1) and by x.chunk(2, -1): at rank 3 the first splits another dim."""
    (tmp_path / "glu.py").write_text("import torch.nn.functional as F\n\n\n"
                                     "def by_position(x):\n    a, b = x.chunk(2, 1)\n    return F.silu(a) * b\n\n\n"
                                     "def from_the_end(x):\n    a, b = x.chunk(2, -1)\n    return F.silu(a) * b\n")
    got = {name: lower.lower_here(str(tmp_path / "glu.py"), name) for name in ("by_position", "from_the_end")}
    assert all(g["ok"] for g in got.values()), got
    assert got["by_position"]["ir"].get("rank") == 2 and got["from_the_end"]["ir"].get("rank") is None


# torch functions whose aten op has no kernel form of its own but decomposes into the vocabulary (convert.DECOMPOSE,
# or the converter's own steps): each lowers, and the float64 check holds the lowering to torch's own function
DECOMPOSED = {
    "-F.logsigmoid(x)": "elementwise", "torch.logit(torch.sigmoid(x), eps=1e-6)": "elementwise",
    "torch.logaddexp(x, y)": "elementwise", "F.threshold(x, 0.1, 20.0)": "elementwise",
    "torch.addcdiv(x, y, y.abs() + 1.0, value=0.5)": "elementwise",
    "F.binary_cross_entropy_with_logits(x, y, reduction='none')": "elementwise",
    "F.smooth_l1_loss(x, y, reduction='none', beta=0.5)": "elementwise",
    "F.huber_loss(x, y, reduction='none', delta=2.0)": "elementwise",
    "F.mse_loss(x, y, reduction='none')": "elementwise",
    "F.soft_margin_loss(x, y, reduction='none')": "elementwise", "F.pairwise_distance(x, y)": "reduction",
    "torch.std_mean(x, dim=-1)[0] * y.mean(-1)": "reduction",
    # sign and sgn: (x > 0) - (x < 0) in the converter (torch's decomposition ends in prims.sign); softshrink uses it
    "torch.sign(x) * y.abs().sqrt()": "elementwise", "torch.sgn(x) + y": "elementwise",
    "F.softshrink(x, 0.5)": "elementwise",
}


def test_what_aten_decomposes_into_the_vocabulary_lowers(tmp_path):
    (tmp_path / "fns.py").write_text("import torch\nimport torch.nn.functional as F\n" + "".join(
        f"\n\ndef f{k}(x, y):\n    return {body}\n" for k, body in enumerate(DECOMPOSED)))
    for k, (body, cls) in enumerate(DECOMPOSED.items()):
        got = lower.lower_here(str(tmp_path / "fns.py"), f"f{k}")
        assert got["ok"] and got["ir"]["class"] == cls, (body, got.get("error"))
    (tmp_path / "dot.py").write_text('import torch\n\n\ndef f(x, y):\n    return torch.einsum("bd,bd->b", x, y)\n')
    got = lower.lower_here(str(tmp_path / "dot.py"), "f")  # not a decomposition: a product the GEMM head does not take
    assert not got["ok"] and "is a row reduction: `(x * y).sum(-1)`" in got["error"], got


NON_FINITE = ("torch.where(torch.isinf(x), 0.0, x) + torch.isposinf(y).float() - torch.isneginf(y).float()",
              "torch.where(torch.isfinite(x), x, -1.0)", "torch.xlogy(x, y)", "torch.where(x > 1.0, float('nan'), y)",
              "torch.hypot(x, y)", "torch.sinc(x) * torch.cos(y)")


PAIRS = '''import torch


def picked(x, cos, sin):  # gpt-fast's and torchtune's form: x viewed as pairs, picked by index
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    x0, x1 = xs[..., 0], xs[..., 1]
    out = torch.stack([x0 * cos[..., ::2] - x1 * sin[..., ::2], x1 * cos[..., ::2] + x0 * sin[..., ::2]], -1)
    return out.flatten(-2).type_as(x)


def unbound(x):  # diffusers' form on x alone (rows of x viewed as pairs straight from the input: not heads of 2)
    x_real, x_imag = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
    return torch.stack([-x_imag, x_real], dim=-1).flatten(-2) * 2


def halves_unbound(x):  # diffusers' form for Stable Audio, CogView4 and Cosmos: x viewed as [..., 2, N/2]
    x_real, x_imag = x.reshape(*x.shape[:-1], 2, -1).unbind(-2)
    return torch.cat([-x_imag, x_real], dim=-1) * 2


def halves_picked(x: "[M, 2N]", y):
    xs = x.reshape(*x.shape[:-1], 2, -1)
    return torch.cat([xs[..., 1, :] * y, xs[..., 0, :] - y], dim=-1)
'''


def test_a_row_viewed_as_pairs_is_its_interleaved_lanes(tmp_path):
    """x.reshape(*x.shape[:-1], -1, 2) picked by [..., j] or unbound along its last dim is lane j of x (x[..., j::2]),
    read as the lanes the row cell loads, and x.reshape(*x.shape[:-1], 2, -1) picked by [..., j, :] or unbound along
    dim -2 is half j (x.chunk(2, -1)[j]); held to the functions in float64 at a shape the trace never saw, and a
    program with its lanes (halves) swapped is told apart."""
    (tmp_path / "pairs.py").write_text(PAIRS)
    spec = importlib.util.spec_from_file_location("pairs", tmp_path / "pairs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    g = torch.Generator().manual_seed(3)
    for name, how in (("picked", "lane"), ("unbound", "lane"), ("halves_unbound", "part"), ("halves_picked", "part")):
        got = lower.lower_here(str(tmp_path / "pairs.py"), name)
        assert got["ok"] and got["ir"]["class"] == "elementwise", got.get("error")
        program = got["ir"]
        assert program["inputs"][0]["width"] == 2 and program.get("heads") is None
        assert {v["how"] for v in program.get("views", [])} == {how}, program.get("views")
        values = {i["name"]: torch.randn(5, i["width"] * 12, generator=g, dtype=torch.float64)
                  for i in program["inputs"]}
        want = getattr(module, name)(**values)
        assert torch.allclose(ir.interpret(program, values), want, rtol=1e-6, atol=1e-6), name  # x.float(): fp32
        flip = values["x"].view(5, 12, 2).flip(-1) if how == "lane" else values["x"].view(5, 2, 12).flip(1)
        swapped = {**values, "x": flip.reshape(5, 24)}
        assert not torch.allclose(ir.interpret(program, swapped), want, rtol=1e-3), name


def test_inf_and_nan_tests_and_constants_lower_with_torchs_meaning(tmp_path):
    """isinf (|x| == inf), isposinf, isneginf, isfinite, NaN constants (xlogy's for a NaN y, a float('nan') the
    function writes: `math.nan` in lowered.py), hypot (scaled: no square overflows; inf beside a NaN) and sinc (1 at
    0), held to torch on inputs that hold 0, inf, -inf, NaN and 3e30, which the lowering's own check (random normal
    inputs) never sees."""
    (tmp_path / "nf.py").write_text("import torch\n" + "".join(
        f"\n\ndef f{k}(x, y):\n    return {body}\n" for k, body in enumerate(NON_FINITE)))
    special = torch.tensor([0.0, 1.5, -2.0, float("inf"), -float("inf"), float("nan"), 3e30, 0.25], dtype=torch.float64)
    x, y = special.repeat(8).reshape(8, 8), special.repeat(8).reshape(8, 8).T.contiguous()
    spec = importlib.util.spec_from_file_location("nf", tmp_path / "nf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for k, body in enumerate(NON_FINITE):
        got = lower.lower_here(str(tmp_path / "nf.py"), f"f{k}")
        assert got["ok"], (body, got.get("error"))
        want, have = getattr(module, f"f{k}")(x, y).double(), ir.interpret(got["ir"], {"x": x, "y": y}).double()
        assert torch.equal(want.isnan(), have.isnan()), body
        assert torch.allclose(want.nan_to_num(7.0), have.nan_to_num(7.0), rtol=1e-12, atol=1e-12), body
    text = codegen.generate(lower.lower_here(str(tmp_path / "nf.py"), "f3")["ir"], "bf16")
    assert "math.nan" in text and "import math" in text
    # an infinite default is a named constant written `-math.inf` (MinPLogitsWarper's filter_value): math imported
    (tmp_path / "fill.py").write_text("def f(x, filter_value: float = -float('inf')):\n"
                                      "    return x.masked_fill(x < 0, filter_value).softmax(-1)\n")
    text = codegen.generate(lower.lower_here(str(tmp_path / "fill.py"), "f")["ir"], "bf16")
    assert "FILTER_VALUE = -math.inf" in text and "\nimport math\n" in text


def test_booleans_reduced_over_the_row_count_and_any_all_as_torch(lowered):
    """A reduction of booleans (a count, an any, an all, a max) reduces 1.0 / 0.0 and torch.nansum skips NaNs: ops.py's
    counted_row_stats held to torch on rows that random normal inputs never give: one with a NaN (nansum, and the
    count that includes it), one with zeros, one with no positive value (any False), one all below -1e4 (all True)."""
    nan, big = float("nan"), -3e4
    x = torch.tensor([[1.0, nan, 2.0, -1.0], [0.0, 0.0, 3.0, -1.0], [-1.0, -2.0, 0.0, -3.0], [big, big, big, big],
                      [big, big, 1.0, big]], dtype=torch.float64)
    program = lowered["counted_row_stats"]["ir"]
    want, got = ops.counted_row_stats(x), ir.interpret(program, {"x": x})
    assert torch.equal(want.isnan(), got.isnan())
    assert torch.allclose(want.nan_to_num(7.0), got.nan_to_num(7.0), rtol=1e-12, atol=1e-12)
    assert (got[2:4] == 0).all() and (got[4] != 0).all() and got[0, 0] == 1.0 - 2.0 / 4  # nansum 2 over 4 nonzero (NaN != 0)
    assert {"to_float", "max", "min"} <= {node["op"] for node in program["nodes"]}


def test_a_constant_made_in_the_inputs_dtype_is_rounded_to_the_workspaces():
    """Gemma's torch.tensor(sqrt(2048), dtype=x.dtype): the bf16 trace holds 45.25, right for bf16 only. The program
    keeps the float32 value and rounds it to the workspace's dtype, as torch does: a cast in bf16 and fp16, the value
    itself in fp32."""
    got = lower.lower_here(str(ROOT / "tests" / "lowering_corpus" / "real_models.py"), "gemma_embed_normalizer")
    assert got["ok"], got
    (const,) = [n for n in got["ir"]["nodes"] if n["op"] == "cast"]
    assert const["attr"] == "input" and const["args"] == [float(torch.tensor(2048**0.5, dtype=torch.float32))]
    for dtype in ("bf16", "fp16"):
        assert f'pw.cast({const["args"][0]!r}, "{dtype}")' in codegen.generate(got["ir"], dtype)
    assert f'= {const["args"][0]!r}  #' in codegen.generate(got["ir"], "fp32")


SIZE_ARITHMETIC = '''import math

import torch.nn.functional as F


def by_pow(x):
    return x * x.shape[-1] ** -0.5 + F.normalize(x, dim=-1) * x.size(-1) ** 0.5


def by_math_sqrt(x):
    assert x.shape[-1] % 2 == 0
    return x / math.sqrt(x.size(-1))
'''


def test_arithmetic_on_the_row_length_is_a_value_of_the_kernel(tmp_path):
    """`head_dim ** -0.5` and `1 / math.sqrt(x.size(-1))` were refused ("calls pow", and a "branch" made of math's
    conversion of the size to the traced number): both are computed on n, the kernel's row length, and held to the
    function at row lengths the trace never saw."""
    (tmp_path / "sizes.py").write_text(SIZE_ARITHMETIC)
    spec = importlib.util.spec_from_file_location("sizes", tmp_path / "sizes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("by_pow", "by_math_sqrt"):
        got = lower.lower_here(str(tmp_path / "sizes.py"), name)
        assert got["ok"], got.get("error")
        assert any("n" in node["args"] for node in got["ir"]["nodes"]), name  # computed from n, not a constant
        for n in (6, 4096):
            x = torch.randn(3, n, dtype=torch.float64)
            assert torch.allclose(ir.interpret(got["ir"], {"x": x}), getattr(module, name)(x), rtol=1e-6), (name, n)


DECORATED = '''import torch


@torch.jit.script
def bias_gelu(bias, y):  # Megatron-LM's fused_bias_gelu, TorchScript upstream
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


@torch.compile
def compiled_silu(x):
    return x * torch.sigmoid(x)
'''


def test_functions_decorated_by_torchscript_or_torch_compile_lower_as_the_python_they_are(tmp_path):
    """A @torch.jit.script function was refused ("no signature found for <ScriptFunction>") and a @torch.compile one
    failed in the trace (FX cannot trace dynamo's frame): the module is imported with TorchScript off and a compiled
    function is read as the function it compiles; each IR is held to the plain function."""
    (tmp_path / "deco.py").write_text(DECORATED)
    spec = importlib.util.spec_from_file_location("deco", tmp_path / "deco.py")
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():  # torch's deprecation of torch.jit.script
        warnings.simplefilter("ignore", DeprecationWarning)
        spec.loader.exec_module(module)
    # the references: the ScriptFunction itself, and the function torch.compile wraps (run eagerly: no compiler here)
    want = {"bias_gelu": module.bias_gelu, "compiled_silu": module.compiled_silu._torchdynamo_orig_callable}
    for name, fn in want.items():
        got = lower.lower_here(str(tmp_path / "deco.py"), name)
        assert got["ok"], got.get("error")
        values = {i["name"]: torch.randn(64 if i["kind"] == "vector" else (3, 64), dtype=torch.float64)
                  for i in got["ir"]["inputs"]}
        assert torch.allclose(ir.interpret(got["ir"], values), fn(**values)), name


def test_round_with_decimals_is_torchs_own_steps(tmp_path):
    """torch.round(x, decimals=d) was refused with a hint to write it out: it lowers as torch computes it, round(x *
    10^d) / 10^d, or round(x / 10^-d) * 10^-d for d < 0, held to torch on values of several magnitudes."""
    (tmp_path / "rd.py").write_text("import torch\n\n\ndef f(x):\n    return x.round(decimals=2) + torch.round(x * "
                                    "1000, decimals=-2)\n")
    got = lower.lower_here(str(tmp_path / "rd.py"), "f")
    assert got["ok"], got.get("error")
    x = torch.randn(4, 64, dtype=torch.float64) * torch.logspace(-2, 3, 64, dtype=torch.float64)
    assert torch.equal(ir.interpret(got["ir"], {"x": x}), x.round(decimals=2) + torch.round(x * 1000, decimals=-2))


def test_floor_division_lowers_as_torchs_floor_division(tmp_path):
    """`x // 2.0` and torch.floor_divide (no decomposition in torch: convert.REWRITES) are div(rounding_mode="floor"),
    held to torch on finite values of both signs."""
    (tmp_path / "fd.py").write_text("import torch\n\n\ndef f(x, y):\n    return x // 2.0 + torch.floor_divide(x, "
                                    "y.abs() + 0.5)\n")
    got = lower.lower_here(str(tmp_path / "fd.py"), "f")
    assert got["ok"], got.get("error")
    x, y = torch.randn(2, 4, 64, dtype=torch.float64) * 10
    want = x // 2.0 + torch.floor_divide(x, y.abs() + 0.5)
    assert torch.equal(ir.interpret(got["ir"], {"x": x, "y": y}), want)


def test_a_shape_of_another_rank_for_a_rank_bound_function_is_refused_in_one_line(tmp_path):
    """mean_center (x.mean(dim=1)) baked with a rank-3 shape: one line naming the rule and the fix, nothing made."""
    done = bake_cli(tmp_path, f"pytorch_logic={CORPUS}:mean_center", "shapes=4x6x1000", "run_baseline=no")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0 and list(tmp_path.iterdir()) == [] and len(lines) == 1, done.stderr
    assert lines[0].startswith("kbaseline: error: shapes: `mean_center` names a dim of x by its position")
    assert "give 2-D shapes (MxN)" in lines[0] and "dim=-1" in lines[0]


@pytest.mark.parametrize("source,words", [
    ("import time\ntime.sleep(600)\n\n\ndef f(x):\n    return x\n", "did not finish in 3 s"),
    ("raise RuntimeError('no GPU here')\n\n\ndef f(x):\n    return x\n",
     "importing slow.py failed at slow.py:1: RuntimeError: no GPU here"),
    ("import sys\nsys.exit(3)\n\n\ndef f(x):\n    return x\n", "importing slow.py failed at slow.py:2: SystemExit: 3"),
    ("import os\nos._exit(9)\n\n\ndef f(x):\n    return x\n", "ended with exit code 9"),
    ("def f(x):\n    raise ValueError('bad input')\n", "calling f(x [M, N]) failed at slow.py:2"),
    # a mask not named as one is traced in x's dtype: the line says how to make it bool
    ("def f(x, keep):\n    return x.masked_fill(keep, 0.0)\n", "a boolean mask is traced as bool when it is named"),
    # a [B, D] modulation made [B, 1, D] by the function, with x traced 2-D: the line says to name the dims
    ("def f(x, mod):\n    return x + mod[:, None]\n", "rank 3 or more names x's dims and those of each input it"),
    # a branch on the row length: the trace holds the small sizes' branch, so the kernel would compute it at every N
    ("def f(x):\n    if x.shape[-1] > 1024:\n        return x * 2\n    return x.softmax(-1)\n",
     "branches on its input sizes: the trace took the branch of its small sizes"),
    # a branch on a tensor's values (T5's `if torch.isinf(x).any():`): no sympy text, the fix instead
    ("import torch\n\n\ndef f(x):\n    if torch.isinf(x).any():\n        x = x.clamp(-1e4, 1e4)\n    return x * 2\n",
     "at slow.py:5 (`if torch.isinf(x).any():`) needs a tensor's values in Python"),
    # what the trace and the reference cannot call, and returns that are not tensors: one line each, at the line
    ("def f(x, w, /):\n    return x * w\n", "`x` is positional-only (the `/` in the def)"),
    ("def f(x):\n    return x.softmax(-1), x.shape[-1]\n", "returns a size or a Python number beside its tensors"),
    ("def f(x):\n    return {'out': x * 2}\n", "returns a dict; an output is a tensor, or a tuple of them at slow.py:2"),
    ("def f(x):\n    return x * 2, None\n", "returns None; an output is a tensor, or a tuple of them at slow.py:2"),
    # a size made a Python number: the trace fixes it to the traced size, a constant wrong at every other
    ("def f(x):\n    return x / float(x.shape[-1])\n", "uses an input size as a Python number"),
    # a GEMM's learned scalar: its epilogue takes rows, vectors and one value per row, never a scalar read as C
    ("import torch\n\n\ndef f(a, b, alpha=torch.tensor(2.0)):\n    return (a @ b.T) * alpha\n",
     "`alpha` (a tensor default) is not an input a GEMM's epilogue takes"),
])
def test_the_child_turns_what_the_users_code_does_into_one_line(tmp_path, source, words):
    (tmp_path / "slow.py").write_text(source)
    result = lower.lower(str(tmp_path / "slow.py"), "f", timeout=3 if "sleep" in source else 120)
    assert not result["ok"] and words in result["error"] and "\n" not in result["error"], result


def test_an_input_broadcast_over_xs_dims_computes_in_its_own_dims_but_is_no_output(tmp_path):
    """adaLN's (1 + scale)[:, None, :]: arithmetic on scale [B, D] before the function broadcasts it lowers (per
    element of its rows, which the kernel pairs with x's); returning such a value is refused in one line."""
    (tmp_path / "ada.py").write_text(
        'def modulate(x: "[B, S, D]", scale: "[B, D]"):\n    return x * (1 + scale)[:, None, :]\n\n\n'
        'def returns_it(x: "[B, S, D]", scale: "[B, D]"):\n    t = 1 + scale\n    return x * t[:, None, :], t\n')
    assert lower.lower_here(str(tmp_path / "ada.py"), "modulate")["ok"]
    got = lower.lower_here(str(tmp_path / "ada.py"), "returns_it")
    assert not got["ok"] and "an input's own dims (broadcast over x's)" in got["error"], got


@pytest.mark.parametrize("note", ["[K, 1]", "[2N]", "[Q]"])
def test_a_shape_annotation_the_row_rule_does_not_take_is_refused_not_read_as_x(note):
    """An annotation was once read as x's shape whatever it said (`s: "[M, 1]"` became a row input): the kernel would
    have taken another tensor than the user's. Any bracketed shape the rule does not know is refused in one line; a
    type annotation (torch.Tensor) is no shape and keeps the rule's default."""
    def f(x, s):
        return x * s

    f.__annotations__ = {"s": note}
    with pytest.raises(ValueError, match="a shape the row rule does not take") as refused:
        capture.parameters(f)
    assert "\n" not in str(refused.value)
    f.__annotations__ = {"x": "torch.Tensor", "s": "Optional[torch.Tensor]"}
    assert [i["kind"] for i in capture.parameters(f)[0]] == ["row", "row"]


@pytest.mark.parametrize("note,says", [("[M] int64", "an integer tensor"), ("long", "an integer tensor"),
                                       ("[M, N] bf16", "whose 'bf16' the rule does not read")])
def test_an_annotation_with_words_the_rule_does_not_read_is_refused(note, says):
    """`labels: "[M] int64"` was once traced as a float [M, N], its words dropped and the name's default taken: a
    cross-entropy lowered as soft labels. Words beside a shape other than `bool` and `float`, and an integer dtype on
    its own, are refused in one line; those two still read as before."""
    def f(x, s):
        return x * s

    f.__annotations__ = {"s": note}
    with pytest.raises(ValueError, match=says) as refused:
        capture.parameters(f)
    assert "\n" not in str(refused.value)
    f.__annotations__ = {"s": "[M, N] bool", "x": "[M, N] float"}
    assert [(i["kind"], i["dtype"]) for i in capture.parameters(f)[0]] == [("row", "float"), ("row", "bool")]


PER_ROW_SOURCE = '''import torch


def token_scale(x, s: "[M]"):
    return x * s[:, None]


def dequant_rmsnorm(x, s: "[M, 1]", weight, eps: float = 1e-6):
    h = x.float() * s
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight, h.pow(2).sum(-1) * s[:, 0]


def padding_mask(hidden_states: "[B, S, D]", attention_mask: "[B, S]"):
    return (hidden_states * attention_mask[:, :, None]).to(hidden_states.dtype)


def gate(h: "[T, D]", g: "[T, 1]", bias: "[D]"):
    return torch.sigmoid(g) * h + bias


def per_row_heads(q: "[T, H]", s: "[T]", w, head_dim: int = 64):
    v = q.view(*q.shape[:-1], -1, head_dim)
    return (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True)) * w).view(q.shape) * s[:, None]
'''


@pytest.mark.parametrize("name,kinds,names", [
    ("token_scale", ["row", "per_row"], [None, None]),
    ("dequant_rmsnorm", ["row", "per_row", "vector"], [None, None, None]),
    ("padding_mask", ["row", "per_row"], [["B", "S", "D"], ["B", "S"]]),
    ("gate", ["row", "per_row", "vector"], [["T", "D"], ["T", "1"], None]),
])
def test_one_value_per_row_is_an_input_of_the_row_cell(tmp_path, name, kinds, names):
    """A per-row input (`s: "[M]"`, `"[M, 1]"`, or x's leading dims' names: a [B, S] padding mask over [B, S, D], a
    [T, 1] gate over [T, D]) lowers as one value per row: kind "per_row", run in the row cell (the flat
    elementwise cell knows no row), its value a scalar of compute()'s; held to the function in float64 by the
    lowering's check, and here once more at rows of another rank and size."""
    (tmp_path / "rows.py").write_text(PER_ROW_SOURCE)
    got = lower.lower_here(str(tmp_path / "rows.py"), name)
    assert got["ok"], got
    program = got["ir"]
    assert [i["kind"] for i in program["inputs"]] == kinds
    assert [i.get("names") for i in program["inputs"]] == names
    assert ir.pattern(program) == "reduction"
    text = codegen.generate(program, "bf16")
    assert f"KINDS = {tuple('broadcast' if ir.broadcast(program, i) else i['kind'] for i in program['inputs'])}" \
        .replace("'", '"') in text
    spec = importlib.util.spec_from_file_location("rows", tmp_path / "rows.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    g = torch.Generator().manual_seed(3)
    lead = (3, 7) if names[0] else (11,)
    values = {}
    for i in program["inputs"]:
        shape = {"row": (*lead, 48), "vector": (48,)}.get(i["kind"])
        if i["kind"] == "per_row":
            shape = (*lead, 1) if str((i.get("names") or i["dims"])[-1]) == "1" else lead
        values[i["name"]] = torch.randn(shape, generator=g, dtype=torch.float64)
        if i.get("dtype") == "bool":  # a mask by its name
            values[i["name"]] = values[i["name"]] > 0
    if names[0] and len(names[0]) == 2:  # [T, D]: one leading dim
        values = {k: v.reshape(21, *v.shape[2:]) if v.dim() > 1 and v.shape[:2] == (3, 7) else v
                  for k, v in values.items()}
    want = getattr(module, name)(**values)
    have = ir.interpret(program, values)
    for w, h in zip(want if isinstance(want, tuple) else (want,), have if isinstance(have, tuple) else (have,)):
        assert w.shape == h.shape  # the function computes in fp32 where it says .float(): agreement to fp32's
        assert (w.double() - h.double()).norm() <= capture.VERIFY_TOLERANCE * w.double().norm()


BROADCAST_PER_ROW = '''import torch


def add_noise(x: "[B, C, H, W]", noise: "[B, C, H, W]", a: "[B]"):
    return (a**0.5)[:, None, None, None] * x + (1 - a)[:, None, None, None].sqrt() * noise


def layer_scale(x: "[B, C, H, W]", gamma: "[C]"):
    return x * gamma.view(1, -1, 1, 1)


def snake_like(x: "[B, C, T]", alpha: "[1, C, 1]"):
    return x + (alpha + 1e-9).reciprocal() * torch.sigmoid(alpha * x)


def returns_it(x: "[B, S, D]", s: "[B]"):
    return x * s[:, None, None], s[:, None, None] * 2
'''


@pytest.mark.parametrize("name,names", [("add_noise", ["B"]), ("layer_scale", ["C"]), ("snake_like", ["1", "C", "1"])])
def test_one_value_per_row_over_some_of_xs_dims_is_broadcast_over_the_others(tmp_path, name, names):
    """A per-sample [B] or per-channel [C] ([1, C, 1]) value over x's rows (the function's unsqueezes place it, its
    arithmetic may run in its own dims first): KINDS "broadcast_per_row", and the program is the function at sizes
    the trace did not see, every dim its own size (a value placed on the wrong dim cannot pass)."""
    (tmp_path / "bpr.py").write_text(BROADCAST_PER_ROW)
    got = lower.lower_here(str(tmp_path / "bpr.py"), name)
    assert got["ok"], got
    program = got["ir"]
    single = next(i for i in program["inputs"] if i["kind"] == "per_row")
    assert single["names"] == names and ir.broadcast_per_row(program, single)
    assert '"broadcast_per_row"' in codegen.generate(program, "bf16").split("KINDS = ")[1].splitlines()[0]
    spec = importlib.util.spec_from_file_location("bpr", tmp_path / "bpr.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x_names = ir.x_input(program)["names"]
    sizes = dict(zip(x_names, (3, 4, 5, 24)[-len(x_names):] if len(x_names) == 4 else (3, 4, 24)), **{"1": 1})
    g = torch.Generator().manual_seed(5)
    values = {i["name"]: torch.randn([sizes[d] for d in i["names"]], generator=g, dtype=torch.float64).abs() * 0.5
              for i in program["inputs"]}
    want, have = getattr(module, name)(**values), ir.interpret(program, values)
    assert want.shape == have.shape and torch.allclose(want, have, rtol=1e-12, atol=1e-12)


def test_one_value_per_row_broadcast_over_some_rows_is_no_output(tmp_path):
    """A value of one per row the same over some of x's dims has no output shape ([M] or [M, 1]): refused in one
    line, never stored as if it were per row."""
    (tmp_path / "bpr.py").write_text(BROADCAST_PER_ROW)
    got = lower.lower_here(str(tmp_path / "bpr.py"), "returns_it")
    assert not got["ok"] and "one value per row" in got["error"] and "\n" not in got["error"], got


def test_one_value_per_row_beside_rows_viewed_as_heads_is_refused(tmp_path):
    """Rows viewed as heads (a QK-norm) are not x's rows: a per-row input there is refused in one line."""
    (tmp_path / "rows.py").write_text(PER_ROW_SOURCE)
    got = lower.lower_here(str(tmp_path / "rows.py"), "per_row_heads")
    assert not got["ok"] and "one value per row" in got["error"] and "\n" not in got["error"], got


def test_x_s_last_dim_alone_is_a_vector_of_an_n_d_function():
    """`w: "[D]"` beside `x: "[B, S, D]"`: x's last dim alone is a [N] vector."""
    def f(x: "[B, S, D]", w: "[D]"):  # noqa: F821
        return x * w

    assert [i["kind"] for i in capture.parameters(f)[0]] == ["row", "vector"]


def test_an_optional_tensor_annotated_with_a_shape_is_an_input():
    """`weight: "[N]" = None` (an optional affine weight): the annotation makes it an input, traced as a tensor, so the
    kernel computes the `weight is not None` branch; unannotated, a None default stays a constant (the documented
    rule), and the function's other branch is what lowers."""
    def f(x, weight: "[N]" = None, eps: float = 1e-6):  # noqa: F821
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        return y if weight is None else y * weight

    inputs, constants = capture.parameters(f)
    assert [(i["name"], i["kind"]) for i in inputs] == [("x", "row"), ("weight", "vector")]
    assert constants == {"eps": 1e-6}
    f.__annotations__ = {}
    inputs, constants = capture.parameters(f)
    assert [i["name"] for i in inputs] == ["x"] and constants == {"weight": None, "eps": 1e-6}


def test_parameters_follow_the_documented_rule():
    """Kinds by annotation, tensor default, then name; the inputs keep the signature's order (x need not be first)."""
    def f(weight, x, residual, gamma, up_bias, w2: "[N]", scale_row: "[M, N]", alpha: "[]", mask,  # noqa: F821
          keep: "[M, N] float", beta=torch.tensor([0.5]), eps=1e-6, flag: bool = True):  # noqa: F821, F722
        return x

    inputs, constants = capture.parameters(f)
    assert [(i["name"], i["kind"], i["dtype"]) for i in inputs] == [
        ("weight", "vector", "float"), ("x", "row", "float"), ("residual", "row", "float"),
        ("gamma", "vector", "float"), ("up_bias", "vector", "float"), ("w2", "vector", "float"),
        ("scale_row", "row", "float"), ("alpha", "scalar", "float"), ("mask", "row", "bool"),
        ("keep", "row", "float"), ("beta", "scalar", "float")]
    assert ir.x_input({"inputs": inputs})["name"] == "x"
    assert constants == {"eps": 1e-6, "flag": True}


def test_inputs_in_signature_order_reach_the_kernel_in_that_order(tmp_path):
    """The function's own parameter order is lowered.py's INPUTS and op.json's inputs, whatever the kinds: a caller
    who passes the inputs as to their own function cannot swap two of them."""
    src = tmp_path / "act.py"
    src.write_text("import torch\n\n\ndef act(alpha_p: '[1]', x, bias, beta: '[]', y):\n"
                   "    return alpha_p * torch.tanh(x) + beta * y + bias\n")
    result = capture.lower(str(src), "act")
    assert result["ok"], result
    names = [i["name"] for i in result["ir"]["inputs"]]
    assert names == ["alpha_p", "x", "bias", "beta", "y"]
    text = codegen.generate(result["ir"], "bf16")
    assert 'INPUTS = ("alpha_p", "x", "bias", "beta", "y")' in text
    assert 'KINDS = ("scalar", "row", "vector", "scalar", "row")' in text
    assert "def compute(alpha_p, x, bias, beta, y, n, reduce):" in text


def test_gemm_parameters_follow_the_documented_rule():
    """The first two tensor parameters are the operands, whatever their names; the others by the rule."""
    def g(bias, weight, residual, up_bias, row_scale, q_row_scale, s1: "[M]", s2: "[M, 1]", c: "[N]",  # noqa: F821
          scale_m, r: "[M, N]", alpha: float = 2.0):  # noqa: F821
        return bias

    inputs, constants = capture.gemm_parameters(g)
    assert [(i["name"], i["kind"], i["dims"]) for i in inputs] == [
        ("bias", "a", ["M", "K"]), ("weight", "b", ["N", "K"]), ("residual", "row", ["M", "N"]),
        ("up_bias", "vector", ["N"]), ("row_scale", "per_row", ["M"]), ("q_row_scale", "per_row", ["M"]),
        ("s1", "per_row", ["M"]), ("s2", "per_row", ["M", 1]), ("c", "vector", ["N"]),
        ("scale_m", "per_row", ["M"]), ("r", "row", ["M", "N"])]
    assert constants == {"alpha": 2.0}
    with pytest.raises(ValueError, match="first two tensor parameters"):
        capture.gemm_parameters(lambda x, eps=1e-6: x)


# ---------------------------------------------------------------------------------------------- the bake


def test_pattern_auto_bakes_the_users_op(tmp_path):
    """pytorch_logic alone: pattern auto (the default), op lowered, op_name the function's name, lowered.py written
    from op.json's program, the plan's Phase 1 from the trace."""
    done = bake_cli(tmp_path, f"pytorch_logic={CORPUS}:fused_add_rmsnorm", "run_baseline=no")
    assert done.returncode == 0, done.stderr
    assert "kbaseline: lowered `fused_add_rmsnorm` into the reduction kernel: 3 input(s), 2 output(s)" in done.stdout
    ws = tmp_path / "fused_add_rmsnorm"
    op = read_json(ws / "op.json")
    assert (op["pattern"], op["op"], op["inputs"]) == ("reduction", "lowered", ["x", "residual", "weight"])
    assert op["kinds"] == {"x": "row", "residual": "row", "weight": "vector"}
    assert op["reference"]["mapping"] == "by name" and op["lowering"]["status"] == "lowered"
    assert (ws / "lowered.py").read_text() == codegen.generate(op["lowered"], "bf16")
    assert (ws / "pointwise.py").is_file()
    plan = (ws / "plans" / "v0_plan.md").read_text()
    assert "traced from `fused_add_rmsnorm`" in plan and "1 reduction(s) over the last dim" in plan
    assert "The kernel computes it too" in (ws / "baseline_report.md").read_text()


def test_pattern_auto_bakes_a_gemm_with_its_epilogue(tmp_path):
    """A matmul head: pattern auto picks gemm; op.json holds the kinds, the program and formulas that count the
    epilogue's inputs; lowered.py is codegen's; the plan's Phase 1 and the README come from the trace."""
    done = bake_cli(tmp_path, f"pytorch_logic={CORPUS}:residual_bias_silu", "gpu=H200", "run_baseline=no")
    assert done.returncode == 0, done.stderr
    assert "lowered `residual_bias_silu` into the gemm kernel: 4 input(s), 1 output(s)" in done.stdout
    ws = tmp_path / "residual_bias_silu"
    op = read_json(ws / "op.json")
    assert (op["pattern"], op["op"], op["inputs"]) == ("gemm", "lowered", ["x", "w", "bias", "residual"])
    assert op["kinds"] == {"x": "a", "w": "b", "bias": "vector", "residual": "row"}
    assert op["output_dtypes"] == ["input"] and op["lowering"]["class"] == "gemm"
    assert op["formulas"]["flops"] == "2*M*N*K + 5*M*N"
    assert op["formulas"]["bytes"] == "(M*K + N*K + 2*M*N + N)*elem_bytes"
    assert (ws / "lowered.py").read_text() == codegen.generate(op["lowered"], "bf16")
    plan = (ws / "plans" / "v0_plan.md").read_text()
    assert "traced from `residual_bias_silu`" in plan and "`residual` [M, N]" in plan
    assert "GEMM" in (ws / "README.md").read_text().split("## Your own op")[1]


def test_a_named_pattern_lowers_a_gemm_only_into_the_gemm_cell():
    """pattern=gemm with a GEMM function is op lowered; another pattern keeps its built-in op and says why."""
    logic = f"{CORPUS}:linear_no_bias"
    lower.lower_here(str(CORPUS), "linear_no_bias")  # the cache the checks read: no child process here
    got = validate.check(spec.context(pattern="gemm", pytorch_logic=logic, gpu="H200"), upto="op")
    assert got["op"] == "lowered"
    got = validate.check(spec.context(pattern="elementwise", pytorch_logic=logic, gpu="H200"), upto="op")
    assert got["op"] != "lowered"
    assert "it is a matmul with an epilogue, not elementwise" in got["pytorch_logic"]["not_lowered"]


def test_pattern_auto_refuses_what_does_not_lower_in_one_line(tmp_path):
    done = bake_cli(tmp_path, f"pytorch_logic={CORPUS}:cumulative")
    assert done.returncode != 0 and list(tmp_path.iterdir()) == []
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("kbaseline: error: pytorch_logic: `cumulative` cannot be lowered")
    assert "torch.cumsum" in lines[0] and "ops.py:" in lines[0]
    assert "name a pattern" not in lines[0], "no pattern's built-in kernel computes a scan: no hint to one"


@pytest.mark.parametrize("name,near", [("sum_over_rows", "reduction"), ("two_matmuls", "gemm"), ("argmax_indices", None)])
def test_a_refusal_hints_at_the_pattern_nearest_it(tmp_path, name, near):
    """The hint names the pattern whose built-in kernel the function is closest to (a GEMM refusal: gemm), not
    always reduction."""
    result = capture.lower(str(CORPUS), name)
    assert not result["ok"] and result["near"] == near


def test_pattern_auto_needs_a_function(tmp_path):
    done = bake_cli(tmp_path, "pattern=auto")
    assert done.returncode != 0 and "pattern: auto infers the pattern from your function" in done.stderr


@pytest.mark.parametrize("pattern,name,why", [
    ("reduction", "cumulative", "torch.cumsum"),
    ("elementwise", "softmax_temperature", "it is a row reduction, not elementwise"),
])
def test_an_explicit_pattern_keeps_its_built_in_kernel_and_says_so(tmp_path, pattern, name, why):
    done = bake_cli(tmp_path, f"pattern={pattern}", f"pytorch_logic={CORPUS}:{name}", "op_name=ws", "run_baseline=no")
    assert done.returncode == 0, done.stderr
    assert f"note: `{name}` is the reference only; the kernel is the built-in" in done.stdout and why in done.stdout
    ws = tmp_path / "ws"
    op = read_json(ws / "op.json")
    assert op["op"] != "lowered" and op["lowering"]["status"] == "not lowered" and why in op["lowering"]["reason"]
    assert f'SOURCE = "{op["op"]}"' in (ws / "lowered.py").read_text()  # the built-in op's own program, not yours
    for record in ("plans/v0_plan.md", "baseline_report.md"):
        assert "which does not implement this function" in (ws / record).read_text(), record
    memory = read_json(ws / "memory" / "v0.json")
    assert any(why in p["pitfall"] for p in memory["pitfalls_and_fixes"])


if __name__ == "__main__":  # rewrite the GEMM cells' examples from the corpus (after a change to it or to codegen)
    found = {name: capture.lower(str(CORPUS), name) for name in GEMM_EXAMPLES}
    for name in GEMM_EXAMPLES:
        (EXAMPLES / f"lowered_gemm_{name}.py").write_text(gemm_example(found, name))
        print(f"wrote {EXAMPLES / f'lowered_gemm_{name}.py'}")
