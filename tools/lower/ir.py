"""The lowering IR: a straight-line program over one row of the user's op (or over a GEMM's accumulator), and its
float64 interpreter.

Template-side, and plain data: tools/lower/convert.py builds it from the traced graph, op.json keeps it (``lowered``),
tools/lower/codegen.py writes it out as the workspace's ``lowered.py``, and ``interpret`` runs it in torch for the
checks that the lowering is the user's function.

A program (a dict, JSON as it is)::

    inputs    [{"name": "x", "kind": "row"}, {"name": "weight", "kind": "vector"}, ...]
                row: x's shape [M, N] (x is always the first row input); vector: [N], broadcast over the rows;
                scalar: one element; per_row: one value per row ([M], [M, 1], or x's leading dims' ``names``)
    nodes     [{"id": "t3", "op": "rsqrt", "args": ["t2"], "line": 8}, ...]   in evaluation order
                an arg is a reference (an input's name, an earlier node's id, or "n": the row length N as a float)
                or a float constant; `attr` holds an op's static argument (a cast's target dtype)
    outputs   [{"value": "t7", "shape": "row" | "reduced" | "reduced_keepdim", "dtype": "input" | "fp32"}]
                a wide row output (RoPE's, r*N wide) has "value" [r references] and "how": "part" (its pieces side
                by side: torch.cat) or "lane" (interleaved: torch.stack(..., -1).flatten(-2))
    heads     c, when the function views x's rows [.., N] as heads [.., N/c, c] (a QK-norm): rows of c
              N-D inputs (x annotated "[B, S, H, D]") carry "names"; one with fewer names than x is broadcast over
              the missing dims (``broadcast``)
    class     "elementwise" (no reduction), "reduction" (one or more reductions over the last dim) or "gemm"

A GEMM program (class "gemm") also has ``head: "matmul"``: its first two inputs are the matmul's operands, kinds
"a" [M, K] and "b" [N, K] (both K-major), and the nodes are the epilogue on ``acc`` = a @ b^T [M, N] (fp32), a
reference like an input's name. Its other inputs are "row" [M, N], "vector" [N] or "per_row" [M] (one value per
row of C); each GEMM input carries ``dims``, the shape the function takes it in (``GEMM_DIMS``; a per-row input
annotated "[M, 1]" keeps that shape), which every tool that makes or sizes the tensors reads. Its one output is C's
shape [M, N], and ``n`` is N.

Every value is one of three kinds, which is all the kernels need to know: per element (a row input's or a vector
input's values, and anything computed from them), per row (the result of a reduction, and anything computed from
it and constants), or constant (floats, and ``n``). Arithmetic broadcasts between them as torch's does between
[M, N], [M, 1] and scalars. In a GEMM epilogue every input, and so every value but a constant, is per element:
the thread holds bias[n] or row_scale[m] beside each accumulator element (m, n).
"""

from __future__ import annotations

import math
import operator
from typing import Callable, NamedTuple

class Op(NamedTuple):
    """One op of the lowering's vocabulary: everything the converter, the interpreter and the code generator know
    of it. ``aten`` holds the aten/prims packet names that lower to it (an in-place form, ``add_``, is matched by
    its functional name); ``torch`` is the interpreter's function (``torch.<name>``); ``code`` is what codegen
    writes, ``{0}``, ``{1}`` ... standing for the operands (``pw.<name>(...)`` calls name dsl/<dsl>/pointwise.py's
    functions, which every DSL implements: tests/test_lowering.py checks it); ``fold`` folds constants."""

    arity: int
    aten: tuple[str, ...]
    torch: str
    code: str
    boolean: bool = False  # a boolean result (a comparison, a logical op, isnan)
    fold: Callable | None = None


def _pw(name: str, arity: int = 1) -> str:
    return f"pw.{name}({', '.join('{%d}' % i for i in range(arity))})"


def _unary(name: str, *aten: str, fold=None, torch_name: str | None = None, boolean: bool = False) -> Op:
    return Op(1, (name, *aten), torch_name or name, _pw(name), boolean, fold)


# The vocabulary: adding an op to the lowering is one entry here, then its `pw.` function in each
# dsl/<dsl>/pointwise.py (README, "Adding an op to the lowering").
VOCABULARY: dict[str, Op] = {
    # unary
    "neg": Op(1, ("neg",), "neg", "-{0}", fold=operator.neg),
    "exp": _unary("exp", fold=math.exp),
    "exp2": _unary("exp2"),
    "log": _unary("log", fold=math.log),
    "log2": _unary("log2"),
    "log1p": _unary("log1p"),
    "expm1": _unary("expm1"),
    "sqrt": _unary("sqrt", fold=math.sqrt),
    "rsqrt": _unary("rsqrt", fold=lambda a: 1.0 / math.sqrt(a)),
    "tanh": _unary("tanh"),
    "sigmoid": _unary("sigmoid"),
    "erf": _unary("erf"),
    "sin": _unary("sin", fold=math.sin),
    "cos": _unary("cos", fold=math.cos),
    "abs": _unary("abs", fold=abs),
    "reciprocal": _unary("reciprocal", fold=lambda a: 1.0 / a),
    "round": _unary("round", torch_name="round"),  # half to even, as torch.round
    "floor": _unary("floor", fold=math.floor),
    "ceil": _unary("ceil", fold=math.ceil),
    "trunc": _unary("trunc", "fix", fold=math.trunc),
    "not": Op(1, ("logical_not", "bitwise_not"), "logical_not", "pw.logical_not({0})", True),
    "isnan": Op(1, ("isnan",), "isnan", "{0} != {0}", True),
    "to_float": Op(1, (), "to_float", "pw.to_float({0})"),  # a boolean as 1.0 / 0.0 (a cast made it)
    # binary
    "add": Op(2, ("add",), "add", "{0} + {1}", fold=operator.add),
    "sub": Op(2, ("sub", "subtract"), "sub", "{0} - {1}", fold=operator.sub),
    "mul": Op(2, ("mul", "multiply"), "mul", "{0} * {1}", fold=operator.mul),
    "div": Op(2, ("div", "true_divide"), "div", "{0} / {1}", fold=operator.truediv),
    "pow": Op(2, ("pow",), "pow", "pw.pow({0}, {1})", fold=operator.pow),
    "maximum": Op(2, ("maximum", "fmax"), "maximum", "pw.maximum({0}, {1})", fold=max),
    "minimum": Op(2, ("minimum", "fmin"), "minimum", "pw.minimum({0}, {1})", fold=min),
    "lt": Op(2, ("lt",), "lt", "{0} < {1}", True),
    "le": Op(2, ("le",), "le", "{0} <= {1}", True),
    "gt": Op(2, ("gt",), "gt", "{0} > {1}", True),
    "ge": Op(2, ("ge",), "ge", "{0} >= {1}", True),
    "eq": Op(2, ("eq",), "eq", "{0} == {1}", True),
    "ne": Op(2, ("ne",), "ne", "{0} != {1}", True),
    "and": Op(2, ("logical_and", "bitwise_and"), "logical_and", "pw.logical_and({0}, {1})", True),
    "or": Op(2, ("logical_or", "bitwise_or"), "logical_or", "pw.logical_or({0}, {1})", True),
    # ternary, casts and reductions (codegen and the interpreter give these their own forms)
    "where": Op(3, ("where",), "where", "pw.where({0}, {1}, {2})"),
    "cast": Op(1, (), "cast", 'pw.cast({0}, "{attr}")'),
    "sum": Op(1, (), "sum", 'reduce("sum", {0})'),
    "max": Op(1, (), "amax", 'reduce("max", {0})'),
    "min": Op(1, (), "amin", 'reduce("min", {0})'),
}
REDUCE = ("sum", "max", "min")
OPS = tuple(VOCABULARY)
UNARY = tuple(k for k, op in VOCABULARY.items() if op.arity == 1 and k not in (*REDUCE, "cast"))
BINARY = tuple(k for k, op in VOCABULARY.items() if op.arity == 2)
COMPARE = tuple(k for k, op in VOCABULARY.items() if op.boolean)  # boolean results
# aten/prims packet name -> IR op, for the converter (derived: one declaration per op above)
ATEN = {name: op for op, spec in VOCABULARY.items() for name in spec.aten}
# The `pw.` functions a generated lowered.py may call: every DSL's pointwise.py defines each one, plus those codegen
# writes itself: full_like, and exp_shifted for an exp(a - m) of a row's m (codegen._Writer.expression)
PW_FUNCTIONS = tuple(sorted({code.split("(")[0][3:] for code in (spec.code for spec in VOCABULARY.values())
                             if code.startswith("pw.")} | {"full_like", "exp_shifted"}))
CAST_TARGETS = ("input", "bf16", "fp16")  # "input": the workspace's dtype (x's); a cast to fp32 or wider is a no-op
OUTPUT_SHAPES = ("row", "reduced", "reduced_keepdim")
# An output's dtype: "input" (x's), or one of these, with its bytes per element and torch's name. int8 and fp8 are a
# quantizer's storage: the function's final `.to(torch.int8)` / `.to(torch.float8_e4m3fn)`, done by the store.
OUT_BYTES = {"fp32": 4, "int8": 1, "fp8": 1}
OUT_TORCH = {"fp32": "float32", "int8": "int8", "fp8": "float8_e4m3fn"}
# The parameter rule's names: a tensor parameter so named (or ending in _weight / _bias) is a [N] vector; op.json
# carries them (``lowering_rule``) for the workspace README, which states the rule.
VECTOR_NAMES = ("weight", "bias", "gamma", "beta", "scale", "shift", "w", "b", "g")
# A GEMM's per-row names: a tensor parameter so named (or ending in _row_scale) is one value per row [M].
PER_ROW_NAMES = ("row_scale", "scale_m")
HEAD = "matmul"  # a GEMM program's head: acc[M, N] = a[M, K] @ b[N, K]^T, accumulated in fp32
ACC = "acc"  # the reference to the head's result in a GEMM program's nodes
# A GEMM input's kind -> the shape it is made in, by size name (M, N, K); a per-row input annotated "[M, 1]" has
# ["M", 1] instead. Only the first two inputs are the operands.
GEMM_DIMS = {"a": ["M", "K"], "b": ["N", "K"], "row": ["M", "N"], "vector": ["N"], "per_row": ["M"]}


def references(node: dict) -> list[str]:
    return [a for a in node["args"] if isinstance(a, str)]


def reductions(program: dict) -> list[str]:
    """The reduction kinds, in the order compute() calls them."""
    return [node["op"] for node in program["nodes"] if node["op"] in REDUCE]


def schedule(program: dict) -> tuple[list[int], list[int | None]]:
    """(passes, online): when a row too long for the registers (the looped path) can compute each reduction.

    A reduction whose argument depends on no other reduction's result runs in pass 0; one that needs earlier results
    runs one pass after the last of them, so independent reductions share a pass. One pair is folded into a single
    pass, the online softmax: a sum of exp(a - m), where m = max(a) of the same a. Each thread carries its running
    max m_t and rescales its running sum by exp(m_old - m_new) when m_t grows; the row combines the threads' pairs
    at the end (sum_t s_t * exp(m_t - M)). ``online[q]`` is that max's reduction number for such a sum, else None.
    softmax, log_softmax and a logsumexp thus take 2 passes over a long row (both reductions, then the outputs),
    not 3. The register path ignores both lists: the whole row is in registers."""
    red = [node for node in program["nodes"] if node["op"] in REDUCE]
    number = {node["id"]: q for q, node in enumerate(red)}
    by_id = {node["id"]: node for node in program["nodes"]}
    needs: dict = {}  # node id -> the reduction numbers its value depends on
    arg_needs = []  # per reduction: what its argument depends on
    for node in program["nodes"]:
        got = set().union(*(needs.get(a, set()) for a in references(node)))
        if node["op"] in REDUCE:
            arg_needs.append(got)
            got = {number[node["id"]]}
        needs[node["id"]] = got
    passes, online = [], []
    for q, node in enumerate(red):
        partner = _online_partner(node, by_id, number)
        online.append(partner)
        passes.append(passes[partner] if partner is not None else
                      1 + max(passes[d] for d in arg_needs[q]) if arg_needs[q] else 0)
    return passes, online


def rebases(program: dict) -> dict[str, tuple[str, str, list[str]]]:
    """{sum id: (max id, exp id, redone ids)}: what compute() moves into the row max's frame after each online pair.

    A cell may reduce an online pair (schedule) in one step, as quack's softmax does: its max call hands compute()
    a partial max m_p (a warp's), compute() takes exp(a - m_p), and the sum call combines the (m_p, sum) pairs into
    the row's max M and its sum in M's frame. Right after that sum, compute() calls
    ``m, e = reduce("rebase", (m, e))``: such a cell returns (M, e * exp(m_p - M)), one exp a thread and one
    multiply a value; every other cell returns them as they are. The statements between the max and the sum that
    used m (besides the exp) and are still needed after the sum are then written again on the rebased m: log_softmax's
    ``x - m``, one subtraction a value, which the compilers merge with the first where nothing was rebased
    (the same PTX and ISA as before the rebase: benchmarks/2026-12-06-online-pair-cpu.md)."""
    red = [node for node in program["nodes"] if node["op"] in REDUCE]
    position = {node["id"]: k for k, node in enumerate(program["nodes"])}
    made = {}
    for q, m in enumerate(schedule(program)[1]):
        if m is None:
            continue
        top, total = red[m], red[q]
        exp = total["args"][0]
        between = program["nodes"][position[top["id"]] + 1:position[total["id"]]]
        tainted = {top["id"]}
        for node in between:  # what depends on the max, in program order
            if tainted & set(references(node)):
                tainted.add(node["id"])
        needed = {a for node in program["nodes"][position[total["id"]] + 1:] for a in references(node)}
        needed |= {v for out in program["outputs"] for v in output_refs(out) if isinstance(v, str)}
        redone = []
        for node in reversed(between):  # a statement needed after the sum, or by one written again
            if node["id"] in tainted and node["id"] != exp and node["id"] in needed:
                redone.insert(0, node["id"])
                needed |= set(references(node))
        made[total["id"]] = (top["id"], exp, redone)
    return made


def late(program: dict) -> list[int]:
    """compute()'s arguments (positions in arguments()) that no reduction depends on, when there are reductions: the
    register path loads them after the row's reductions, so that they hold no registers across them (LayerNorm's
    weight and bias, fused_add_rmsnorm's weight). Empty for a program without reductions: nothing to wait for."""
    reds = [node for node in program["nodes"] if node["op"] in REDUCE]
    if not reds:
        return []
    names = arguments(program)
    uses: dict = {}  # node id -> the argument names its value depends on
    for node in program["nodes"]:
        uses[node["id"]] = set().union(*(uses.get(a, {a} if a in names else set()) for a in references(node)))
    reached = set().union(*(uses[a] if a in uses else {a} for node in reds for a in references(node)))
    return [k for k, name in enumerate(names) if name not in reached]


def _online_partner(node: dict, by_id: dict, number: dict) -> int | None:
    """The max m of a reduction sum(exp(a - m)) with m = max(a) of the same a (schedule's online pair), else None."""
    arg = by_id.get(node["args"][0]) if node["op"] == "sum" and isinstance(node["args"][0], str) else None
    inner = by_id.get(arg["args"][0]) if arg and arg["op"] == "exp" and isinstance(arg["args"][0], str) else None
    if not inner or inner["op"] != "sub" or not all(isinstance(a, str) for a in inner["args"]):
        return None
    a, m = inner["args"]
    top = by_id.get(m)
    return number[m] if top and top["op"] == "max" and top["args"][0] == a else None


def x_input(program: dict) -> dict:
    """The input whose shape the program's rows take (x): a GEMM's a, else the first "row" input in signature
    order (the inputs keep the user's parameter order; x need not be the first)."""
    return program["inputs"][0] if is_gemm(program) else next(i for i in program["inputs"] if i["kind"] == "row")


def arguments(program: dict) -> list[str]:
    """compute()'s value arguments in order: each epilogue input's name, except that a wide input (``width`` r > 1:
    [M, r*N], read through its parts) gives the parts the program uses, ``<input>_part<j>`` (columns [j*N, (j+1)*N))
    or ``<input>_lane<j>`` (columns j, j + r, ...): the program's ``views``."""
    made = []
    for i in epilogue_inputs(program):
        if i.get("width", 1) > 1:
            made += [v["name"] for v in program.get("views", []) if v["input"] == i["name"]]
        else:
            made.append(i["name"])
    return made


def pattern(program: dict) -> str:
    """The cell a program runs in: its class, except that an elementwise program with wide inputs, inputs broadcast
    over some of x's dims, one value per row or rows viewed as heads runs in the row (reduction) cell, whose rows
    carry their own strides, column offsets, layouts and row index; the flat elementwise cell has none of them."""
    if program["class"] == "decode_attention":
        return program["class"]
    rows = any(i.get("width", 1) > 1 or broadcast(program, i) or i["kind"] == "per_row" for i in program["inputs"]) \
        or program.get("heads")
    return "reduction" if rows and program["class"] == "elementwise" else program["class"]


def broadcast(program: dict, spec: dict) -> bool:
    """Whether an input is a row input broadcast over some of x's leading dims (its ``names`` fewer than x's)."""
    names = x_input(program).get("names")
    return spec["kind"] == "row" and names is not None and spec.get("names", names) != names


def broadcast_per_row(program: dict, spec: dict) -> bool:
    """Whether an input is one value per row broadcast over some of x's leading dims: its ``names`` (less the 1s)
    are not all of them (a per-sample [B] over [B, C, H, W], a per-channel [1, C, 1] over [B, C, T])."""
    names = x_input(program).get("names")
    return spec["kind"] == "per_row" and names is not None and \
        [n for n in spec.get("names", names[:-1]) if n != "1"] != names[:-1]


def output_refs(out: dict) -> list:
    """An output's values: its one reference (or constant), or a wide output's r pieces."""
    return out["value"] if isinstance(out["value"], list) else [out["value"]]


def out_width(out: dict) -> int:
    """An output's width in N: r for a wide output (its r pieces), else 1."""
    return len(output_refs(out))


def is_gemm(program: dict) -> bool:
    return program.get("head") == HEAD


def epilogue_inputs(program: dict) -> list[dict]:
    """The inputs compute() takes after acc (a GEMM: all but the operands) or, for the other classes, all."""
    return program["inputs"][2:] if is_gemm(program) else program["inputs"]


def sizes(program: dict, inputs: dict) -> dict:
    """{"M", "N", "K"} of a GEMM's inputs (name -> tensor)."""
    (m, k), n = inputs[program["inputs"][0]["name"]].shape, inputs[program["inputs"][1]["name"]].shape[0]
    return {"M": m, "N": n, "K": k}


def uses_n(program: dict) -> bool:
    return any("n" in references(node) for node in program["nodes"])


def interpret(program: dict, inputs: dict, dtype=None):
    """Run the program in torch on `inputs` (name -> tensor: x [M, N], vectors [N]; a GEMM's a [M, K], b [N, K] and
    its epilogue inputs in their ``dims``); return the outputs as torch would (a tensor, or a tuple of them), in
    float64 unless the values come in lower.

    `dtype` is the torch dtype a cast to "input" rounds to (None: casts do not round, the float64 reading of the
    function, as the harness's reference is evaluated)."""
    import torch

    spec = x_input(program)
    inputs = dict(inputs)
    heads = program.get("heads")
    for i in program["inputs"]:
        if heads and i["kind"] == "row":  # rows of c: the function's own view of x as heads
            inputs[i["name"]] = inputs[i["name"]].reshape(*inputs[i["name"]].shape[:-1], -1, heads)
        elif broadcast(program, i):  # [S, D] against x's [B, S, H, D]: as [1, S, 1, D], which torch broadcasts
            inputs[i["name"]] = inputs[i["name"]].reshape(
                [inputs[i["name"]].shape[i["names"].index(d)] if d in i["names"] else 1 for d in spec["names"]])
    x = inputs[spec["name"]]
    n = x.shape[-1] // spec.get("width", 1)  # the row length: a wide x is r*N
    env = {**inputs, "n": float(n)}
    for v in program.get("views", []):  # a wide input's parts
        whole = inputs[v["input"]]
        env[v["name"]] = whole[..., v["index"] * n:(v["index"] + 1) * n] if v["how"] == "part" else \
            whole[..., v["index"]::v["ratio"]]
    x = x[..., :n]  # the outputs' shape
    for i in program["inputs"]:  # a scalar input as a 0-d tensor, a mask as booleans, whatever way it came in
        if i["kind"] == "scalar":
            env[i["name"]] = inputs[i["name"]].reshape(())
        if i["kind"] == "per_row" and not is_gemm(program):  # one value per row: [*x's leading dims, 1], 1 where
            names = spec.get("names")  # it is broadcast over a dim of x's ([B] over [B, C, H, W]: [B, 1, 1, 1])
            lead = [size if not names or d in i.get("names", names) else 1
                    for d, size in zip((names or [None] * x.dim())[:-1], x.shape[:-1])]
            env[i["name"]] = inputs[i["name"]].reshape(*lead, 1)
        if i.get("dtype") == "bool":
            env[i["name"]] = env[i["name"]] != 0
    if is_gemm(program):  # the head; per-row inputs as [M, 1], so that they broadcast over C's columns as in torch
        a, b = x, inputs[program["inputs"][1]["name"]]
        x = env[ACC] = a @ b.T
        env["n"] = float(b.shape[0])
        env.update({i["name"]: inputs[i["name"]].reshape(-1, 1) for i in program["inputs"] if i["kind"] == "per_row"})
    like = x.double() if x.dtype != torch.float64 else x

    def value(arg):
        got = env[arg] if isinstance(arg, str) else arg
        if isinstance(got, torch.Tensor):
            return got if got.dtype == torch.bool or got.is_floating_point() else got.to(like.dtype)
        return torch.tensor(float(got), dtype=like.dtype)

    for node in program["nodes"]:
        op, args = node["op"], [value(a) for a in node["args"]]
        if op in REDUCE:
            out = getattr(torch, VOCABULARY[op].torch)(args[0], dim=-1, keepdim=True)
        elif op == "cast":
            target = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(node["attr"], dtype)
            out = args[0].to(target).to(args[0].dtype) if target is not None else args[0]
        elif op == "to_float":
            out = args[0].to(like.dtype)
        elif op in VOCABULARY:
            out = getattr(torch, VOCABULARY[op].torch)(*args)
        else:
            raise ValueError(f"unknown IR op {op!r}")
        env[node["id"]] = out
    outs = []
    for spec in program["outputs"]:
        if isinstance(spec["value"], list):  # a wide output: its pieces side by side (halves) or interleaved (lanes)
            pieces = [value(ref).expand(x.shape) for ref in spec["value"]]
            v = torch.cat(pieces, -1) if spec["how"] == "part" else torch.stack(pieces, -1).flatten(-2)
            outs.append(v.contiguous())
            continue
        v = value(spec["value"])
        if spec["dtype"] in ("int8", "fp8"):  # the store's conversion, as torch's .to()
            v = v.to(getattr(torch, OUT_TORCH[spec["dtype"]]))
        if spec["shape"] == "row":
            v = v.expand(x.shape)
        else:
            v = v.expand(*x.shape[:-1], 1)
            v = v if spec["shape"] == "reduced_keepdim" else v.squeeze(-1)
        outs.append(v.contiguous())
    return outs[0] if len(outs) == 1 else tuple(outs)


ORDERINGS = ("lt", "le", "gt", "ge")  # the comparisons that decide by a threshold


def rounded_thresholds(program: dict) -> int:
    """How many threshold decisions (<, <=, >, >=) compare a value the function rounded (a cast to its dtype on the
    way: ``probs = softmax(x)`` in bf16, then ``probs < min_p * probs.max()``). The float64 reference does not round,
    so an element within one rounding of the threshold may be decided the other way by the kernel (which rounds where
    the function does): the harness allows a few such elements for these programs, and counts them."""
    rounded, count = set(), 0
    for node in program["nodes"]:
        if node["op"] == "cast" or any(a in rounded for a in references(node)):
            rounded.add(node["id"])
        if node["op"] in ORDERINGS and any(a in rounded for a in references(node)):
            count += 1
    return count


def flops_per_element(program: dict) -> int:
    """Arithmetic nodes per element of x (a node per row counts as 0): the FLOP formula's coefficient. At least one
    for the other classes (a kernel that only copies still moves each element); a GEMM's epilogue may have none."""
    steps = sum(1 for node in program["nodes"] if node.get("kind") == "element")
    return steps if is_gemm(program) else max(1, steps)


def check(program: dict) -> None:
    """Raise ValueError when the program is not well formed (each reference defined before use, ops known)."""
    known = set(arguments(program)) | {"n"} | ({ACC} if is_gemm(program) else set())
    if is_gemm(program) and ([i["kind"] for i in program["inputs"][:2]] != ["a", "b"] or len(program["outputs"]) != 1
                             or reductions(program)):
        raise ValueError("a GEMM program takes a and b first, has no reductions and one output")
    for node in program["nodes"]:
        if node["op"] not in OPS:
            raise ValueError(f"unknown IR op {node['op']!r}")
        missing = [a for a in references(node) if a not in known]
        if missing:
            raise ValueError(f"{node['id']} uses {missing} before they are defined")
        known.add(node["id"])
    for out in program["outputs"]:
        if out["shape"] not in OUTPUT_SHAPES or any(isinstance(v, str) and v not in known for v in output_refs(out)) or (
                isinstance(out["value"], list) and (out["shape"] != "row" or out.get("how") not in ("part", "lane"))):
            raise ValueError(f"bad output {out}")
