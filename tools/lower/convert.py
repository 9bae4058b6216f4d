"""Lower a traced aten graph to the IR of tools/lower/ir.py, or refuse with the torch op and the user's line.

Runs in the tracing child (tools/lower/capture.py), where torch is imported. The graph comes from ``make_fx`` with
symbolic shapes and a small decomposition table (``DECOMPOSE``), so composites arrive as the few aten and prims
ops below: F.layer_norm as var + sum + rsqrt, softmax as amax + exp + sum + div, gelu as erf or tanh arithmetic.
Each value is classified by its traced shape against x's symbols [M, N]:

    (M, N) row    (N,) or (1, N) vector    (M,) or (M, 1) per row    () or (1,) scalar (must be a constant)

and carries its kind for the kernel (per element, per row, constant). A reduction must run over the last dim of a
row value; an output must be a row or a per-row value. Anything else is refused with one line naming the torch op
and the source line it came from.

A GEMM (``convert(..., gemm=True)``, ``GemmConverter``) starts from the head: the graph's ``mm(a, t(b))`` or
``addmm(bias, a, t(b))`` (F.linear with a bias) becomes the reference ``acc`` (its bias the first epilogue step),
and the rest lowers as above, with C [M, N] in x's place: the shapes are classified against (M, N) = (a.shape[0],
b.shape[0]), so a per-row input [M] (or [M, 1]) is one more per-element value, and ``n`` is N. The operands have no
value of their own in the epilogue; a reduction, a second product or a second output is refused. The checks made
on the user's own calls during the trace (tools/lower/capture.py, matmul_check) come first and name the user's
call; the ones here back them up on the graph.

Precision: the kernels compute in fp32 and round once on the store, as torch.compile's fused kernels do. A cast the
graph holds (the user's ``.to(x.dtype)``, or one a decomposition inserts, as torch's own composites round their
result) rounds there as well; casts to fp32 or wider are no-ops.
"""

from __future__ import annotations

import math
import operator

import torch

from tools.lower.ir import ACC, ATEN, REDUCE, VOCABULARY, output_refs

aten, prims = torch.ops.aten, torch.ops.prims


class Refused(Exception):
    """Cannot be lowered. str() is one line; `line` is the user's source line (or None)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


DECOMPOSE = [aten._softmax, aten._log_softmax, aten.native_layer_norm, aten.var.correction, aten.std.correction,
             aten.var_mean.correction, aten.std_mean.correction, aten.linalg_vector_norm, aten.logsumexp, aten.silu,
             aten.softplus, aten.leaky_relu, aten.hardtanh, aten.gelu, aten.mish, aten.elu, aten.hardsigmoid,
             aten.hardswish, aten.square, aten.rms_norm, aten.mean.dim, aten.addcmul, aten.lerp, aten.relu6, aten.celu,
             aten.selu, aten.xlogy, aten.sigmoid_backward, aten.softmax.int, aten.log_softmax.int, aten.frac, aten.glu,
             aten.log_sigmoid_forward, aten.logit, aten.logaddexp, aten.threshold, aten.addcdiv, aten.norm,
             # per-element losses (reduction="none"): pointwise maps of two inputs
             aten.binary_cross_entropy_with_logits, aten.smooth_l1_loss, aten.huber_loss, aten.mse_loss,
             aten.soft_margin_loss,
             aten.sinc,  # torch's own form: sin(pi x) / (pi x), 1 at 0
             aten.nansum,  # sum(where(isnan(x), 0, x)): TypicalLogitsWarper's entropy
             # in-place activations on a value the function made (timm's inplace=True): the functional form, copied
             aten.silu_, aten.hardswish_, aten.hardsigmoid_, aten.leaky_relu_, aten.elu_, aten.hardtanh_, aten.mish_,
             aten.celu_, aten.selu_, aten.threshold_,
             aten.nan_to_num, aten.logaddexp2,
             aten.aminmax, aten.rad2deg, aten.deg2rad]  # torch.aminmax(x, dim=-1): the row's min and max
# Ops torch has no decomposition for into the vocabulary, written here in its ops (each in float64 too, the
# lowering's check): log10 (a spectrogram's decibels), erfc, sinh by expm1 (no cancellation near 0), cosh,
# floor_divide (`x // 2.0`: torch's div(rounding_mode="floor")) and logical_xor by and / or / not.
REWRITES = {aten.log10.default: lambda x: torch.log2(x) * math.log10(2.0),
            aten.erfc.default: lambda x: 1.0 - torch.erf(x),
            aten.sinh.default: lambda x: (torch.expm1(x) - torch.expm1(-x)) * 0.5,
            aten.cosh.default: lambda x: (torch.exp(x) + torch.exp(-x)) * 0.5,
            **dict.fromkeys((aten.floor_divide.default, aten.floor_divide.Scalar),  # x // 2.0, as torch
                            lambda a, b: torch.div(a, b, rounding_mode="floor")),
            aten.logical_xor.default: lambda a, b: torch.logical_and(torch.logical_or(a, b),
                                                                     torch.logical_not(torch.logical_and(a, b)))}

ELEMENT, ROW, CONST = "element", "row", "const"  # a value's kind: per element, per row, constant
# A row's r pieces viewed along a new dim, by the "shape" of their Value: lanes [*lead, N, r] (torch.stack(..., -1), or
# x.reshape(*x.shape[:-1], -1, 2)) and parts [*lead, r, N] (x.reshape(*x.shape[:-1], 2, -1)); the dim a pick
# ([..., j] or [..., j, :], unbind) takes a piece from, counted from the end.
PIECE_VIEWS = {"stacked": 1, "halved": 2}

# The ops a value's node may name beyond the vocabulary (tools/lower/ir.py VOCABULARY, whose `aten` names the converter
# matches): views, constants, casts and reductions, handled below, and the selections, refused by name.
SCANS = ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin")  # running ops along the row, refused by name
SELECTIONS = ("topk", "sort", "argsort", "kthvalue", "median", "nanmedian", "mode", "multinomial", "unique",
              "unique_consecutive", "nonzero", "masked_select", "index_select", "gather", "scatter", "scatter_add",
              "take", "take_along_dim", "index", "searchsorted", "bucketize", "argmax", "argmin", "histc", "bincount", "randperm", "bernoulli", "rand", "randn",
              "rand_like", "randn_like", "randint", "exponential", "uniform", "normal")
SHAPE_ONLY = {"expand", "broadcast_in_dim", "unsqueeze", "squeeze", "view", "reshape", "_unsafe_view", "alias",
              "clone", "contiguous", "detach", "expand_as", "lift_fresh_copy", "_assert_tensor_metadata", "copy"}
# The narrow dtypes an output may be stored in (ir.OUT_BYTES): torch's own conversion, done by the cell's store.
STORED = {torch.int8: "int8", torch.float8_e4m3fn: "fp8"}
SYM_OPS = {operator.mul: "mul", operator.truediv: "div", operator.add: "add", operator.sub: "sub",
           operator.neg: "neg", operator.pow: "pow", operator.floordiv: None, operator.mod: None}


def _hint(size) -> int:
    """A size's value in the trace (a SymInt's hint): what slices and parts are measured with; the float64 check at
    another size then holds the lowering to it."""
    if isinstance(size, torch.fx.Node):
        size = size.meta["val"]
    return size if isinstance(size, int) else int(size.node.hint)


def _derived(size, of) -> bool:
    """Whether a traced size is computed from the size `of` alone (N // 2 from x's 2N), not another input's."""
    if isinstance(size, int) or isinstance(of, int):
        return False
    return bool(size.node.expr.free_symbols) and size.node.expr.free_symbols <= of.node.expr.free_symbols


class Value:
    """What an fx node lowers to: `ref` (an IR reference or a float), its kernel kind, its shape class, bool-ness."""

    def __init__(self, ref, kind: str, shape: str, boolean: bool = False, why: str = "", operand: str | None = None,
                 wide: tuple | None = None, store: str | None = None, parts: list | None = None, how: str = ""):
        self.ref, self.kind, self.shape, self.boolean = ref, kind, shape, boolean
        self.parts, self.how = parts, how  # a computed row r*N wide: its r pieces, "part" (halves) or "lane" (::r)
        self.store = store  # an output's narrow storage (int8, fp8): usable only as an output
        self.wide = wide  # (input name, ratio): a row input r*N wide, usable only through its slices (views)
        self.why = why  # with ref None: a value that has no kernel form, refused (with this reason) only if used
        self.operand = operand  # a GEMM's "a", "b" or "bT" (b transposed): the head's, with no epilogue value


class Converter:
    def __init__(self, gm, inputs: list[dict], in_dtype, lines: dict, exact: dict | None = None):
        self.gm, self.inputs, self.in_dtype, self.lines = gm, inputs, in_dtype, lines
        self.nodes: list[dict] = []
        self.env: dict = {}
        self.views: dict = {}  # a wide input's parts that the function uses (Converter.part)
        self.own_shapes: set = set()  # the traced shapes of the inputs broadcast over some of x's dims (shape_class)
        self.m = self.n = self.xshape = None
        self.line = None
        self.how = "part"  # how a wide row used whole splits into N-wide pieces (domain_width decides)
        self.narrow = 1  # r while a wide node is lowered piece by piece (componentwise): r*N counts as N
        self.heads = None  # c when the function views x's rows [.., N] as heads [.., N/c, c] (a QK-norm)
        self.exact = exact or {}  # a constant made in the input's dtype -> its unrounded value (constant_attr)

    # -------------------------------------------------------------------- helpers
    def refuse(self, message: str):
        raise Refused(message, self.line)

    def shape_class(self, val) -> str:
        if isinstance(val, (int, float, bool, torch.SymInt, torch.SymFloat)) or val is None:
            return "scalar"
        if isinstance(val, (tuple, list)):  # max(dim) and min(dim): (values, indices), classified when unpacked
            return "per_row" if all(self.shape_class(v) == "per_row" for v in val) else "other"
        shape, lead = tuple(val.shape), self.xshape[:-1]
        if shape and self.narrow > 1 and shape[-1] == self.narrow * self.n:  # a wide value's piece
            shape = (*shape[:-1], self.n)
        if shape == self.xshape:
            return "row"
        if shape and shape[-1] == self.n and all(s == 1 for s in shape[:-1]):
            return "vector"
        if shape in (lead, (*lead, 1)):
            return "per_row"
        if all(s == 1 for s in shape):
            return "scalar"
        if self.of_rows(shape, lead):  # [B], [B, 1, 1, 1] over [B, C, H, W]: one value per row, over some of them
            return "per_row"
        if self.broadcasts(shape, self.xshape):  # an N-D input broadcast over some leading dims ([S, 1, D])
            return "row"
        if tuple(map(str, shape)) in self.own_shapes:  # such an input in its own dims, before the function makes
            return "row"  # it broadcast ((1 + scale)[:, None, :]): per element of its rows, which the kernel pairs
        return "other"

    @staticmethod
    def of_rows(shape, lead) -> bool:
        """Whether `shape`, less its 1s, is some of x's leading dims `lead` in their order (each traced dim has its
        own size symbol, so a dim is known by it): a value per row, the same for the rows of the dims it lacks.
        Where it sits among x's dims is the function's business (its unsqueezes); the float64 check holds it."""
        kept, dims = [str(s) for s in shape if str(s) != "1"], [str(d) for d in lead]
        return bool(kept) and all(d in dims for d in kept) and kept == [d for d in dims if d in kept]

    @staticmethod
    def broadcasts(shape, to) -> bool:
        """Whether `shape` broadcasts to `to` (right-aligned, each dim 1 or to's) with the same last dim."""
        return bool(shape) and len(shape) <= len(to) and shape[-1] == to[-1] and all(
            s == 1 or s == t for s, t in zip(shape[::-1], to[::-1]))

    def wide_width(self, val) -> int:
        """r when `val` is a row r*N wide (a whole RoPE q, a gated MLP's input, a torch.cat of N-wide pieces)."""
        shape = tuple(getattr(val, "shape", ()))
        if not shape or _hint(shape[-1]) <= _hint(self.n):
            return 1
        r = _hint(shape[-1]) // _hint(self.n)
        whole = (*self.xshape[:-1], shape[-1])
        return r if r * _hint(self.n) == _hint(shape[-1]) and (shape == whole or self.broadcasts(shape, whole)) else 1

    def emit(self, op: str, args: list, kind: str, shape: str, boolean: bool = False, attr=None) -> Value:
        """A new IR node (or a folded constant when every argument is one)."""
        fold = VOCABULARY[op].fold if op in VOCABULARY else None
        if kind == CONST and fold is not None and all(isinstance(a, float) for a in args):
            try:
                folded = fold(*args)
                if isinstance(folded, (int, float)):
                    return Value(float(folded), CONST, "scalar")
            except (ValueError, TypeError, ZeroDivisionError, OverflowError):  # complex, inf: keep the node
                pass
        node = {"id": f"t{len(self.nodes)}", "op": op, "args": args, "line": self.line, "kind": kind}
        if attr is not None:
            node["attr"] = attr
        self.nodes.append(node)
        return Value(node["id"], kind, shape, boolean)

    def arg(self, a) -> Value:
        if isinstance(a, torch.fx.Node):
            if a not in self.env:
                self.refuse(f"uses {a.name}, which could not be lowered")
            if self.env[a].shape == "unsplit":
                self.refuse(f"uses `{self.env[a].ref}` whole beside its view as heads of {self.heads}; view every use "
                            "of it the same way")
            if self.env[a].ref is None or self.env[a].store:
                self.refuse(self.env[a].why)
            return self.env[a]
        if isinstance(a, bool):
            return Value(float(a), CONST, "scalar", boolean=True)
        if isinstance(a, (int, float)):
            return Value(float(a), CONST, "scalar")
        self.refuse(f"takes an argument of type {type(a).__name__} ({a!r}), which has no kernel form")

    @staticmethod
    def kind_of(*values: Value) -> str:
        kinds = {v.kind for v in values}
        return ELEMENT if ELEMENT in kinds else ROW if ROW in kinds else CONST

    def binary(self, op: str, a: Value, b: Value, shape: str, boolean=False) -> Value:
        return self.emit(op, [a.ref, b.ref], self.kind_of(a, b), shape, boolean)

    def last_dim(self, dims, src: Value, val) -> None:
        rank = len(val.shape) if hasattr(val, "shape") else 0
        dims = [dims] if isinstance(dims, int) else list(dims or [])
        if src.shape != "row" or len(dims) != 1 or dims[0] % max(rank, 1) != rank - 1:
            self.refuse("reduces over a dim other than the last one of x (only last-dim row reductions lower: "
                        f"dim=-1 over [M, N]; got dim={dims or 'all'} over a {src.shape} value)")

    # -------------------------------------------------------------------- the graph
    def start(self, placeholders) -> None:
        """x's shape (the first row input's: rows over its last dim N), which the shapes are classified against, and
        each input's value: a row or vector per element, a scalar input one value for all (kind ROW: the kernels
        hand it to compute() as a scalar), a mask boolean. A row or vector r times as wide as the domain's N is
        read through its pieces only (``width``; Converter.pieces), and a function that views x's row as heads
        ([.., N] -> [.., N/c, c], a QK-norm) runs over rows of c (``heads``; Converter.split_heads)."""
        x = next(node for node, spec in zip(placeholders, self.inputs) if spec["kind"] == "row")
        self.xshape = tuple(x.meta["val"].shape)
        self.split_heads(x)
        self.n, self.how = self.domain_width(self.xshape)
        self.xshape = (*self.xshape[:-1], self.n)
        for node, spec in zip(placeholders, self.inputs):
            kind, shape = {"row": (ELEMENT, "row"), "vector": (ELEMENT, "vector"), "scalar": (ROW, "scalar"),
                           "per_row": (ROW, "per_row")}[spec["kind"]]
            one = spec["kind"] in ("scalar", "per_row")  # one value per row (or for all): never split into pieces
            last = node.meta["val"].shape[-1] if not one else 1
            ratio = max(1, _hint(last) // _hint(self.n)) if not one else 1
            if self.heads and spec["kind"] == "row":  # x's rows, viewed as heads by the function (split_heads)
                self.env[node] = Value(spec["name"], ELEMENT, "unsplit", boolean=spec.get("dtype") == "bool")
                continue
            if self.heads and spec["kind"] == "per_row":
                self.refuse(f"takes `{spec['name']}` one value per row of x beside a view of x's rows as heads of "
                            f"{self.heads}, whose rows are not x's; give it at x's shape, or keep that step in PyTorch")
            if not one and _hint(last) != ratio * _hint(self.n):
                self.refuse(f"takes `{spec['name']}` with a last dim that is not a whole multiple of the output's "
                            f"row length; a wider input must be read as equal parts of it (x.chunk(2, -1), x[..., ::2])")
            spec["width"] = ratio
            if ratio > 1:  # read through its pieces only: each is a view, one of compute()'s arguments
                self.env[node] = Value(None, ELEMENT, "wide", why=f"uses `{spec['name']}` in a way its pieces cannot "
                                       "express", wide=(spec["name"], ratio), boolean=spec.get("dtype") == "bool")
            else:
                self.env[node] = Value(spec["name"], kind, shape, boolean=spec.get("dtype") == "bool")
                if spec["kind"] == "row" and spec.get("names") and len(spec["names"]) < len(self.xshape):  # broadcast
                    self.own_shapes.add(tuple(map(str, node.meta["val"].shape)))

    def split_heads(self, x) -> None:
        """A view of x [.., N] as [.., N/c, c] with c a constant (``q.view(*q.shape[:-1], -1, head_dim)``): the
        rows become x's heads, c long, and every row input must be viewed the same way before it is used."""
        for node in x.users:
            base = getattr(getattr(node.target, "overloadpacket", None), "__name__", "")
            shape = tuple(getattr(node.meta.get("val"), "shape", ()))
            literal = list(node.args[1])[-1] if base in ("view", "reshape", "_unsafe_view") else None
            picks = [u for u in node.users if self._packet(u) != "sym_size"]
            lanes = picks and all(self._selects(u) for u in picks)  # pairs picked by [..., j]: lanes, not heads
            if isinstance(literal, int) and len(shape) == len(self.xshape) + 1 and shape[:-2] == self.xshape[:-1] \
                    and _hint(shape[-1]) == literal > 1 and _hint(shape[-2]) * literal == _hint(self.xshape[-1]) \
                    and not lanes:
                self.heads, self.xshape = literal, shape
                return

    def domain_width(self, xshape) -> tuple:
        """(N, how): the row length the kernel runs over, and how a row wider than N splits. N is x's last dim,
        or an output's narrower one when the function slices its inputs into equal parts (a gated MLP's
        x.chunk(2, -1): [M, 2N] in, [M, N] out), or, when input and output are as wide but the function works on
        halves or interleaved lanes of the row (RoPE's rotate_half; x[..., ::2] and x[..., 1::2]), that piece's
        width: then a row used whole is its pieces, "part" (halves) or "lane" (::r) as the function slices."""
        nodes = list(self.gm.graph.nodes)
        lanes = any(self._packet(n) == "slice" and self._last(n) and (list(n.args) + [None] * 5)[4] not in (None, 1)
                    for n in nodes) or any(self._packet(n) == "stack" and self._last(n) for n in nodes) or any(
            self._selects(n) for n in nodes)
        how = "lane" if lanes else "part"
        out = next(n for n in nodes if n.op == "output").args[0]
        for node in (out if isinstance(out, (list, tuple)) else [out]):
            val = getattr(node, "meta", {}).get("val")
            shape = tuple(getattr(val, "shape", ()))
            if len(shape) == len(xshape) and shape[:-1] == xshape[:-1] and 1 < _hint(shape[-1]) < _hint(xshape[-1]) \
                    and _hint(xshape[-1]) % _hint(shape[-1]) == 0 and _derived(shape[-1], xshape[-1]):
                return shape[-1], how  # a part of x's row (x.chunk(2, -1)), not a per-row [M, 1] or another size
        for node in nodes:  # the pieces a row as wide as x is sliced into
            for from_end, how_picked in ((1, "lane"), (2, "part")):  # x viewed as [*lead, N/r, r] or [*lead, r, N/r]
                if self._selects(node, from_end) and len(node.args[0].meta["val"].shape) == len(xshape) + 1:
                    view = node.args[0].meta["val"].shape
                    r, width = view[-from_end], view[from_end - 3]  # the picked dim's size, the other's: N/r wide
                    if _hint(r) * _hint(width) == _hint(xshape[-1]) and _hint(r) > 1 and _derived(width, xshape[-1]):
                        return width, how_picked
            if self._packet(node) in ("slice", "split", "split_with_sizes", "stack") and self._last(node):
                piece = node.meta["val"][0] if isinstance(node.meta["val"], (list, tuple)) else node.meta["val"]
                width = piece.shape[-1 if self._packet(node) != "stack" else -2]
                src = node.args[0][0] if self._packet(node) == "stack" else node.args[0]
                full = src.meta["val"].shape[-1] if self._packet(node) != "stack" else width
                if self._packet(node) == "stack" and 2 <= len(node.args[0]) and _hint(xshape[-1]) == \
                        len(node.args[0]) * _hint(width):
                    return width, how
                if _hint(full) == _hint(xshape[-1]) and 1 < _hint(xshape[-1]) // max(1, _hint(width)) and \
                        _hint(xshape[-1]) % max(1, _hint(width)) == 0 and _derived(width, xshape[-1]):
                    return width, how
        return xshape[-1], how

    def piece_view(self, val, r: int, how: str) -> bool:
        """Whether a traced value is x's rows viewed as their r pieces along a new dim (PIECE_VIEWS), with N the kernel's
        row length: r interleaved lanes [*lead, N, r] (``x.reshape(*x.shape[:-1], -1, 2)``: gpt-fast's and
        torchtune's RoPE) or r contiguous parts [*lead, r, N] (``x.reshape(*x.shape[:-1], 2, -1)``: diffusers' RoPE
        for Stable Audio, CogView4 and Cosmos)."""
        shape = tuple(getattr(val, "shape", ()))
        inner = (_hint(self.n), r) if how == "lane" else (r, _hint(self.n))
        return len(shape) == len(self.xshape) + 1 and (_hint(shape[-2]), _hint(shape[-1])) == inner

    @staticmethod
    def _packet(node) -> str:
        return getattr(getattr(node.target, "overloadpacket", None), "__name__", "") if node.op == "call_function" \
            else ""

    @staticmethod
    def _selects(node, from_end: int = 1) -> bool:
        """Whether a node picks along its source's last dim (or, from_end=2, the one before it): a select
        (``t[..., j]``, ``t[..., j, :]``) or an unbind (``t.unbind(-1)``, ``t.unbind(-2)``)."""
        if Converter._packet(node) not in ("select", "unbind") or not isinstance(node.args[0], torch.fx.Node):
            return False
        rank = len(node.args[0].meta["val"].shape)
        return rank >= from_end and (list(node.args) + [0])[1] % rank == rank - from_end

    def folded(self, node) -> Value | None:
        """An op outside the vocabulary on constants alone (Gemma 3n's ``Normal(0, 1).icdf(0.95)``, an erfinv of a
        number): its value, computed by torch at the bake in the dtypes the function computes it in, or None when an
        argument is not a constant."""
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.numel() != 1:
            return None

        def constant(a):
            if not isinstance(a, torch.fx.Node):
                return a
            v = self.env.get(a)
            if not isinstance(v, Value) or v.kind != CONST or not isinstance(v.ref, float):
                raise LookupError
            return torch.tensor(v.ref, dtype=a.meta["val"].dtype)  # in the function's dtype (its float32 erfinv)

        try:
            args = [constant(a) for a in node.args]
            kwargs = {k: constant(a) for k, a in node.kwargs.items()}
        except LookupError:
            return None
        out = node.target(*args, **kwargs)
        return Value(float(out.item()), CONST, "scalar", out.dtype == torch.bool)

    @staticmethod
    def _last(node) -> bool:
        """Whether a slice / split / stack node works along the last dim (a stack: a new last dim)."""
        args = list(node.args) + [None] * 3
        val = node.meta.get("val")
        rank = len((val[0] if isinstance(val, (list, tuple)) else val).shape) if val is not None else 0
        dim = args[2] if Converter._packet(node) in ("split", "split_with_sizes") else args[1]
        dim = 0 if dim is None else dim
        return rank > 0 and dim % rank == rank - 1

    def run(self) -> tuple[list[dict], list[dict]]:
        self.start([n for n in self.gm.graph.nodes if n.op == "placeholder"])
        outputs = None
        for node in self.gm.graph.nodes:
            self.line = self.lines.get(node.name)
            if node.op == "call_function" and not node.users and not self._packet(node).endswith("_"):
                continue  # dead and not in place: a check's result nothing reads (torch.distributions' validation)
            if node.op == "call_function":
                self.env[node] = self.call(node)
            elif node.op == "get_attr":
                self.env[node] = self.constant_attr(node)
            elif node.op == "output":
                outputs = node.args[0]
        return self.nodes, self.outputs(outputs)

    def constant_attr(self, node) -> Value:
        """A one-element tensor constant: its value, or, for one made in the input's dtype (Gemma's
        ``torch.tensor(hidden_size**0.5, dtype=x.dtype)``), its unrounded value rounded to the workspace's dtype
        in the kernel (a cast): the trace's bf16 value (45.25 for 2048**0.5) is right for a bf16 workspace only."""
        t = getattr(self.gm, node.target)
        if node.target in self.exact:
            return self.emit("cast", [self.exact[node.target]], CONST, "scalar", attr="input")
        if isinstance(t, torch.Tensor) and t.numel() == 1:
            return Value(float(t.item()), CONST, "scalar", t.dtype == torch.bool)
        self.refuse("captures a tensor constant with more than one element (pass it as an argument instead)")

    def outputs(self, outs) -> list[dict]:
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        specs = []
        for out in outs:
            self.line = self.lines.get(getattr(out, "name", ""), self.line)
            if not isinstance(out, torch.fx.Node):  # a dict, None, a constant
                inside = [v for v in (out.values() if isinstance(out, dict) else []) if isinstance(v, torch.fx.Node)]
                what = "a dict" if isinstance(out, dict) else "None" if out is None else f"a {type(out).__name__}"
                raise Refused(f"returns {what}; an output is a tensor, or a tuple of them",
                              self.lines.get(inside[0].name) if inside else self.line)
            v, val = self.env[out], out.meta["val"]
            if not isinstance(val, torch.Tensor):  # x.shape[-1], a size: the caller has it
                raise Refused("returns a size or a Python number beside its tensors; an output is a tensor: return "
                              "the tensors alone", self.line)
            if self.is_wide(v) and v.shape not in PIECE_VIEWS:  # a row r*N wide, stored piece by piece
                parts = self.pieces(v, v.how or self.how)
                if v.boolean or not (val.dtype.is_floating_point or v.store) or any(p.kind != ELEMENT for p in parts):
                    raise Refused(f"returns a wide {val.dtype} row; outputs are floating point", self.line)
                specs.append({"value": [p.ref for p in parts], "shape": "row", "how": v.how or self.how,
                              "dtype": v.store or ("input" if val.dtype == self.in_dtype else "fp32")})
                continue
            if v.shape == "unsplit":
                raise Refused(f"returns `{v.ref}` as it came in", self.line)
            if v.boolean or not (val.dtype.is_floating_point or v.store):
                raise Refused(f"returns a {val.dtype} tensor; outputs are floating point, or int8 / fp8 e4m3 by a "
                              "final cast", self.line)
            keepdim = len(val.shape) == len(self.xshape)
            shape = {"row": "row", "per_row": "reduced_keepdim" if keepdim else "reduced"}.get(self.shape_class(val))
            if shape not in (None, "row") and tuple(val.shape) not in (self.xshape[:-1], (*self.xshape[:-1], 1)):
                shape = None  # one value per row broadcast over some rows ([B, 1, 1, 1]): not an output's shape
            if shape is None or (shape != "row" and v.kind == ELEMENT):
                raise Refused(f"returns a tensor of shape {self.words(val.shape)}; an output must have x's shape "
                              f"{self.words(self.xshape)} or one value per row", self.line)
            if shape == "row" and tuple(map(str, val.shape)) in self.own_shapes:
                raise Refused(f"returns a tensor of shape {self.words(val.shape)}, an input's own dims (broadcast "
                              f"over x's); an output must have x's shape {self.words(self.xshape)} or one value per "
                              "row", self.line)
            if v.kind == CONST:
                raise Refused("returns a constant, which needs no kernel", self.line)
            dtype = v.store or ("input" if val.dtype == self.in_dtype else "fp32")
            specs.append({"value": v.ref, "shape": shape, "dtype": dtype})
        return specs

    def call(self, node) -> Value:
        target, args, kw = node.target, node.args, node.kwargs
        val = node.meta.get("val")
        if target in SYM_OPS:  # arithmetic on sizes: only N (as a float) has a kernel form
            op = SYM_OPS[target]
            if op is None and isinstance(val, torch.SymInt) and _hint(val) % _hint(self.n) == 0:  # N, or r*N
                ratio = _hint(val) // _hint(self.n)
                return Value("n", CONST, "scalar") if ratio == 1 else self.emit("mul", ["n", float(ratio)], CONST,
                                                                                 "scalar")
            if op is None:  # a size for a slice or a split: read from its traced value where it is used
                return Value(None, CONST, "scalar", why="computes with an integer division of sizes (a value, not a "
                                                        "slice bound); write it with / on floats")
            return self.emit(op, [self.arg(a).ref for a in args], CONST, "scalar")
        if target is operator.getitem:
            src = self.env.get(args[0])
            if isinstance(src, tuple):
                return src[args[1]]
            self.refuse("indexes a tensor")
        name = getattr(target, "__name__", str(target))
        if name.startswith("sym_float") or name == "sym_float":
            return self.arg(args[0])
        if not hasattr(target, "overloadpacket"):
            self.refuse(f"calls {name}, which has no kernel form")
        packet = target.overloadpacket.__name__
        base = packet.removesuffix("_")  # an in-place op (add_) lowers as its functional form ...
        if packet.endswith("_"):  # ... unless it writes an input
            if args and isinstance(args[0], torch.fx.Node) and args[0].op == "placeholder":
                self.refuse(f"modifies its input `{self.env[args[0]].ref}` in place"
                            + ("" if base == "copy" else f" (torch.{base}_)")
                            + "; the kernel cannot write its inputs: write it out of place")
        if base in SCANS:
            self.refuse(f"torch.{base} is a running (prefix) op along the row, not a pointwise map or a row "
                        "reduction, which these kernels do not lower: keep it in PyTorch and lower the rest as its "
                        "own function")
        if base in SELECTIONS:
            self.refuse(f"torch.{base} selects, orders or draws elements (not a pointwise map or a row reduction), "
                        "which these kernels do not lower: keep it in PyTorch and lower the rest as its own function")
        first = self.env.get(args[0]) if args and isinstance(args[0], torch.fx.Node) else None
        if base == "slice" and isinstance(first, Value) and self.full_slice(node):  # x[:, None]'s `:`: x itself,
            return first  # whatever its shape (a [B, D] shift before its [:, None] makes it broadcast over x's S)
        if isinstance(first, Value) and (first.wide or first.parts is not None and first.shape not in PIECE_VIEWS) \
                and base in ("split", "split_with_sizes", "slice", "alias", "clone", "contiguous", "detach"):
            return self.part(base, node)
        if isinstance(first, Value) and first.shape == "unsplit" and base in SHAPE_ONLY:
            if tuple(val.shape) != self.xshape:
                self.refuse(f"views `{first.ref}` other than as heads of {self.heads} ({self.words(self.xshape)})")
            return Value(first.ref, ELEMENT, "row", first.boolean)
        if base in ("cat", "concat", "stack"):
            return self.joined(base, node)
        if base in ("transpose", "permute", "t", "swapaxes", "swapdims", "movedim"):
            self.refuse(f"torch.{base} reorders dims; the kernel writes its rows in x's order: return the result "
                        "untransposed and transpose it after the call (a free view)")
        wide = [a for a in self.tensor_args(node) if self.is_wide(self.env.get(a))]
        if wide and base != "sym_size":
            return self.componentwise(base, node, wide)
        shape = self.shape_class(val)
        if shape == "other" and isinstance(val, (list, tuple)):
            self.refuse(f"torch.{base} splits a tensor into {len(val)} pieces of shape {self.words(val[0].shape)}, "
                        f"which are neither x's rows {self.words(self.xshape)} nor its halves or lanes")
        if shape == "other" and base in ("sum", "amax", "amin", "max", "min", "var", "mean", "std", "prod") and \
                isinstance(args[0], torch.fx.Node) and len(args) > 1 and isinstance(args[1], (int, list, tuple)):
            self.last_dim(args[1], self.arg(args[0]), args[0].meta["val"])  # ConvNeXt's x.mean(1) of [B, C, H, W]
        if shape == "other":
            self.refuse(f"torch.{base} makes a tensor of shape {self.words(val.shape)}, which is neither x's "
                        f"{self.words(self.xshape)}, a vector [N] over the last dim, nor one value per row"
                        + ("; a function of rank 3 or more names x's dims and those of each input it broadcasts "
                           "(`x: \"[B, S, N]\"`, `shift: \"[B, N]\"`)" if len(val.shape) > len(self.xshape) else ""))
        if base == "sym_size":
            if args[1] in (len(self.xshape) - 1, -1):  # the row length N, or a wide input's r*N
                ratio = _hint(val) // _hint(self.n)
                return Value("n", CONST, "scalar") if ratio == 1 else self.emit("mul", ["n", float(ratio)], CONST,
                                                                                 "scalar")
            return Value(None, CONST, "scalar", why="computes with the number of rows M (x.shape[0]); only the row "
                                                    "length N lowers")  # fine as a size (broadcasts, views)
        if base in ATEN:
            return self.vocabulary(ATEN[base], node, shape)
        if base == "rsub":
            a, b = self.arg(args[0]), self.arg(args[1])
            return self.binary("sub", b, a, shape)
        if base == "masked_fill":
            a, mask, fill = (self.arg(a) for a in args)
            return self.emit("where", [mask.ref, fill.ref, a.ref], self.kind_of(a, mask, fill), shape)
        if base == "hypot":  # m * sqrt(1 + (n / m)^2), m = max(|a|, |b|), n = min: no square overflows (a bf16
            # 1e20 squared is past fp32's range), 0 for two zeros, inf for an inf (with a NaN beside it too, as C's)
            a, b = (self.emit("abs", [self.arg(v).ref], self.arg(v).kind, shape) for v in args[:2])
            big, small = self.binary("maximum", a, b, shape), self.binary("minimum", a, b, shape)
            zero, inf = Value(0.0, CONST, "scalar"), Value(math.inf, CONST, "scalar")
            ratio = self.emit("where", [self.binary("eq", big, zero, shape, True).ref, 0.0,
                                        self.binary("div", small, big, shape).ref], big.kind, shape)
            root = self.emit("sqrt", [self.binary("add", Value(1.0, CONST, "scalar"),
                                                  self.binary("mul", ratio, ratio, shape), shape).ref], big.kind, shape)
            either = self.binary("or", self.binary("eq", a, inf, shape, True), self.binary("eq", b, inf, shape, True),
                                 shape, True)
            return self.emit("where", [either.ref, math.inf, self.binary("mul", big, root, shape).ref], big.kind,
                             shape)
        if base in ("isinf", "isposinf", "isneginf"):  # |x| == inf, x == inf, x == -inf: false for NaN, as torch
            a = self.arg(args[0])
            a = self.emit("abs", [a.ref], a.kind, shape) if base == "isinf" else a
            return self.binary("eq", a, Value(-math.inf if base == "isneginf" else math.inf, CONST, "scalar"), shape,
                               True)
        if base in ("sign", "sgn"):  # (x > 0) - (x < 0): 0 for 0 and NaN, as torch.sign
            a, zero = self.arg(args[0]), Value(0.0, CONST, "scalar")
            pos, neg = (self.emit("to_float", [self.binary(op, a, zero, shape, True).ref], a.kind, shape)
                        for op in ("gt", "lt"))
            return self.binary("sub", pos, neg, shape)
        if base in ("prelu", "_prelu_kernel"):  # x where x > 0, else weight * x
            a, w = self.arg(args[0]), self.arg(args[1])
            pos = self.binary("gt", a, Value(0.0, CONST, "scalar"), shape, True)
            return self.emit("where", [pos.ref, a.ref, self.binary("mul", w, a, shape).ref], self.kind_of(a, w), shape)
        if base in ("clamp", "clamp_min", "clamp_max", "clip"):  # kept whole (not decomposed): NaN-propagating
            # maximum / minimum are one instruction each, where torch's decomposition adds a NaN test and a select
            a = self.arg(args[0])
            lo = kw.get("min", args[1] if len(args) > 1 and base != "clamp_max" else None)
            hi = kw.get("max", args[2] if len(args) > 2 else args[1] if base == "clamp_max" else None)
            for op, bound in (("maximum", lo), ("minimum", hi)):  # NaN-propagating, as torch.clamp
                if bound is not None:
                    a = self.binary(op, a, self.arg(bound), shape)
            return a
        if base == "relu":
            a = self.arg(args[0])
            return self.binary("maximum", a, Value(0.0, CONST, "scalar"), shape)
        if base in ("_to_copy", "convert_element_type", "to", "type_as"):
            return self.cast(node, self.arg(args[0]), kw.get("dtype", args[1] if len(args) > 1 else None), shape)
        if base in ("scalar_tensor", "full", "full_like", "zeros_like", "ones_like", "zeros", "ones", "new_full",
                    "new_zeros", "new_ones"):
            fill = {"zeros_like": 0.0, "ones_like": 1.0, "zeros": 0.0, "ones": 1.0, "new_zeros": 0.0,
                    "new_ones": 1.0}.get(base)
            if fill is None:
                fill = args[0] if base == "scalar_tensor" else args[1] if base in ("full", "full_like") else args[2]
            v = self.arg(fill)
            return Value(v.ref, v.kind, shape, v.boolean)
        if base == "select" and isinstance(args[0], torch.fx.Node) and \
                args[0].meta["val"].shape[args[1]] == 1:  # s[:, 0] of a [M, 1]: the one element of its dim, a view
            src = self.arg(args[0])
            return Value(src.ref, src.kind, shape, src.boolean)
        if base in SHAPE_ONLY:
            if base == "_assert_tensor_metadata":
                return None
            src = self.arg(args[0])
            if src.shape == "vector" and shape == "per_row" or src.shape == "per_row" and shape == "vector":
                self.refuse(f"torch.{base} turns a [{'N' if src.shape == 'vector' else 'M'}] tensor into the other "
                            "axis (a transpose), which does not lower")
            if base == "copy":
                src = self.arg(args[1])
            return Value(src.ref, src.kind, shape, src.boolean)
        if base in ("sum", "amax", "amin", "max", "min", "var", "prod", "mean", "std", "argmax", "argmin", "any",
                    "all"):
            return self.reduction(base, node, shape)
        folded = self.folded(node)
        if folded is not None:
            return folded
        pointwise = sorted(k for k in VOCABULARY if k not in (*REDUCE, "cast", "to_float"))
        self.refuse(f"torch.{base} ({target}) has no kernel form here: the kernels compute {', '.join(pointwise)}, "
                    "row sums, maxima and minima, and what torch decomposes into those (softmax, layer_norm, gelu, "
                    "softplus, the per-element losses, ...); write it with them")

    @staticmethod
    def is_wide(v) -> bool:
        return isinstance(v, Value) and (v.wide is not None or v.parts is not None)

    @staticmethod
    def tensor_args(node) -> list:
        """The fx nodes among a node's arguments (one level of lists: torch.where's, cat's)."""
        flat = []
        for a in [*node.args, *node.kwargs.values()]:
            flat += [b for b in (a if isinstance(a, (list, tuple)) else [a]) if isinstance(b, torch.fx.Node)
                     and isinstance(b.meta.get("val"), torch.Tensor)]
        return flat

    def pieces(self, v: Value, how: str) -> list[Value]:
        """A wide value's N-wide pieces, `how` ("part": columns [j*N, (j+1)*N); "lane": columns j, j + r, ...)."""
        if v.parts is not None:
            if v.how != how:
                self.refuse("mixes halves of the row with its interleaved lanes in one step; the kernel reads a wide "
                            "row one way per step")
            return v.parts
        name, ratio = v.wide
        return [Value(self.view(name, how, j, ratio).ref, ELEMENT, "row", v.boolean) for j in range(ratio)]

    def componentwise(self, base: str, node, wide: list) -> Value:
        """A step on rows r*N wide (a whole RoPE q times cos, a gated input scaled before its chunks): lowered once per
        N-wide piece, the pieces of each wide operand in its place; a reduction over the row reduces all its
        pieces (combined first, so it stays one reduction); shape-only steps keep the value."""
        val = node.meta.get("val")
        srcs = {a: self.env[a] for a in wide}
        viewed = [v for v in srcs.values() if v.shape in PIECE_VIEWS]
        if viewed:  # a row's pieces along a new dim: picked one by one, or (lanes) flattened back into the row
            v = viewed[0]
            if base in ("select", "unbind") and len(srcs) == 1 and self._selects(node, PIECE_VIEWS[v.shape]):
                return v.parts[node.args[2]] if base == "select" else tuple(v.parts)
            if v.shape == "stacked" and base in SHAPE_ONLY and len(srcs) == 1 and self.wide_width(val) == len(v.parts):
                return Value(None, ELEMENT, "row", parts=v.parts, how="lane",  # torch.stack(pieces, -1).flatten(-2)
                             why="uses a stacked row other than as its output")
            self.refuse(f"uses a row viewed as its {len(v.parts)} pieces along a new dim in torch.{base}; it lowers "
                        "only through its pieces ([..., j], [..., j, :], .unbind) or, stacked, flattened back into "
                        "the row (.flatten(-2))")
        hows = {v.how for v in srcs.values() if v.parts is not None} or {self.how}
        widths = {len(v.parts) if v.parts is not None else v.wide[1] for v in srcs.values()}
        if len(hows) > 1 or len(widths) > 1:
            self.refuse("combines rows split in different ways (halves and interleaved lanes, or different widths)")
        how, r = hows.pop(), widths.pop()
        if base in SHAPE_ONLY and hasattr(val, "shape") and self.wide_width(val) == r:
            return srcs[wide[0]]
        if base in SHAPE_ONLY and len(srcs) == 1 and self.piece_view(val, r, how):
            return Value(None, ELEMENT, "stacked" if how == "lane" else "halved", parts=self.pieces(srcs[wide[0]], how),
                         how=how, why="uses a row viewed as its pieces along a new dim other than through them")
        if base in ("sum", "amax", "amin", "max", "min", "var", "mean", "std"):
            if base not in ("sum", "amax", "amin", "max", "min"):
                self.refuse(f"torch.{base} over a row read in pieces does not lower (sum, max and min do)")
            parts = self.pieces(srcs[node.args[0]], how)
            op = {"sum": "add", "amax": "maximum", "max": "maximum"}.get(base, "minimum")
            whole = parts[0]
            for part in parts[1:]:
                whole = self.binary(op, whole, part, "row")
            self.env[node.args[0]] = whole
            try:
                return self.reduction(base, node, self.shape_class(val))
            finally:
                self.env.update(srcs)
        split = {a: self.pieces(v, how) for a, v in srcs.items()}
        made = []
        self.narrow = r
        try:
            for j in range(r):
                for a in wide:
                    self.env[a] = split[a][j]
                made.append(self.call(node))
        finally:
            self.env.update(srcs)
            self.narrow = 1
        if not all(isinstance(v, Value) for v in made):
            self.refuse(f"torch.{base} on a row read in pieces does not lower")
        return Value(None, ELEMENT, "row", made[0].boolean, parts=made, how=how, store=made[0].store,
                     why=f"uses a row {r}N wide (torch.{base}) in a way its pieces cannot express")

    def joined(self, base: str, node) -> Value:
        """torch.cat of N-wide pieces along the last dim (rotate_half's ``cat((-x2, x1), -1)``): a row of r pieces,
        "part"; torch.stack of them along a new last dim: "stacked", which .flatten(-2) makes the row's lanes."""
        items, dim = node.args[0], (list(node.args) + [0])[1]
        rank = len(node.meta["val"].shape)
        if dim % rank != rank - 1:
            self.refuse(f"torch.{base} along a dim other than the last one does not lower")
        made = []
        for item in items:
            v = self.env.get(item)
            if base != "stack" and self.is_wide(v):
                made += self.pieces(v, "part")
            elif isinstance(v, Value) and v.ref is not None and v.shape in ("row", "vector") and \
                    _hint(item.meta["val"].shape[-1]) == _hint(self.n):
                made.append(v)
            else:
                self.refuse(f"torch.{base} of pieces that are not each the row's N = {self.words([self.n])} columns "
                            "does not lower")
        if base == "stack":
            return Value(None, ELEMENT, "stacked", parts=made, how="lane",
                         why="uses torch.stack's result other than flattened back into the row")
        return made[0] if len(made) == 1 else Value(None, ELEMENT, "row", parts=made, how="part",
                                                    why="uses a concatenated row in a way its pieces cannot express")

    def part(self, base: str, node):
        """A slice or split of a wide input along the last dim into N-wide parts: contiguous parts j (columns
        [j*N, (j+1)*N): x.chunk(2, -1), x[..., :d], x[..., d:]) or lanes j of r (x[..., j::r]). Each part is a view,
        one of compute()'s arguments, named `<input>_part<j>` or `<input>_lane<j>`."""
        src, args = self.env[node.args[0]], list(node.args) + [None] * 5
        name, ratio = src.wide or (None, len(src.parts))
        rank = len(node.args[0].meta["val"].shape)
        if base in ("alias", "clone", "contiguous", "detach"):
            return src
        dim = args[2] if base in ("split", "split_with_sizes") else args[1]
        if dim is None or dim % rank != rank - 1:
            self.refuse(f"torch.{base} splits `{name}` along a dim other than the last one")
        n = _hint(self.n)
        if base in ("split", "split_with_sizes"):
            sizes = [_hint(s) for s in args[1]] if base == "split_with_sizes" else [_hint(args[1])] * ratio
            if any(size != n for size in sizes) or len(sizes) * n != ratio * n:
                self.refuse(f"torch.{base} splits `{name}` into parts that are not all the output's row length N")
            return tuple(self.pieces(src, "part"))
        start, end, step = (_hint(v) if v is not None else None for v in args[2:5])
        start, step = start or 0, step or 1
        width = ratio * n
        end = width if end is None or end > width else end
        if step == 1 and start % n == 0 and end - start == n:
            return self.view(name, "part", start // n, ratio) if name else self.pieces(src, "part")[start // n]
        if step == ratio and start < ratio and end >= width - ratio + start + 1:
            return self.view(name, "lane", start, ratio) if name else self.pieces(src, "lane")[start]
        name = name or "a computed row"
        self.refuse(f"slices `{name}` ([..., {start}:{end}:{step}] of a row {ratio}N wide) into something other "
                    f"than one of its {ratio} equal parts or {ratio} interleaved lanes")

    def view(self, name: str, how: str, j: int, ratio: int) -> Value:
        ref = f"{name}_{how}{j}"
        if ref not in self.views:
            self.views[ref] = {"name": ref, "input": name, "how": how, "index": j, "ratio": ratio}
        spec = next(i for i in self.inputs if i["name"] == name)
        return Value(ref, ELEMENT, "vector" if spec["kind"] == "vector" else "row", spec.get("dtype") == "bool")

    def vocabulary(self, op: str, node, shape: str) -> Value:
        """A node of the vocabulary (ir.VOCABULARY): its operands, then one IR node; torch's keyword variants
        (add's alpha, div's rounding_mode, round's decimals) become their own steps."""
        spec, args, kw = VOCABULARY[op], node.args, node.kwargs
        decimals = kw.get("decimals", args[1] if len(args) > 1 else 0) if op == "round" else 0
        if decimals:  # torch's own steps: round(x * 10^d) / 10^d, or round(x / 10^-d) * 10^-d for d < 0
            x, scale = self.arg(args[0]), Value(10.0 ** abs(decimals), CONST, "scalar")
            scaled = self.binary("mul" if decimals > 0 else "div", x, scale, shape)
            rounded = self.emit("round", [scaled.ref], scaled.kind, shape)
            return self.binary("div" if decimals > 0 else "mul", rounded, scale, shape)
        vals = [self.arg(a) for a in args[:spec.arity]]
        if op in ("add", "sub") and kw.get("alpha", 1) != 1:
            vals[1] = self.binary("mul", vals[1], self.arg(kw["alpha"]), shape)
        out = self.emit(op, [v.ref for v in vals], self.kind_of(*vals), shape, spec.boolean)
        mode = kw.get("rounding_mode") if op == "div" else None
        if mode is not None:  # "trunc" or "floor": the quotient, then its rounding
            out = self.emit(mode, [out.ref], out.kind, shape)
        return out

    def words(self, shape) -> str:
        """A traced shape in the user's words: x's dims by name (N the last; M, or x.shape[i], the leading ones),
        other sizes as numbers, or "a size computed from the inputs": never a tracer's symbol (s75)."""
        names = {str(self.n): "N"}
        lead = self.xshape[:-1]
        for i, d in enumerate(lead):
            names.setdefault(str(d), "M" if len(lead) == 1 else f"x.shape[{i}]")
        return "[" + ", ".join(str(int(d)) if str(d).isdigit() else names.get(str(d), "a size computed from the "
                                                                             "inputs") for d in shape) + "]"

    @staticmethod
    def full_slice(node) -> bool:
        """aten.slice over a whole dim with step 1 (what `x[:, None]` records): the tensor itself."""
        args = list(node.args) + [None] * 5
        src, dim, start, end, step = args[:5]
        size = src.meta["val"].shape[dim if dim is not None else 0]
        return start in (0, None) and (step in (1, None)) and (end is None or isinstance(end, int) and end >= 2**62
                                                               or end is size)

    def cast(self, node, src: Value, dtype, shape: str) -> Value:
        if dtype is None or dtype == torch.float32 or dtype == torch.float64:
            if src.boolean:
                return self.emit("to_float", [src.ref], src.kind, shape)
            return Value(src.ref, src.kind, shape)
        if dtype == torch.bool:
            return self.binary("ne", src, Value(0.0, CONST, "scalar"), shape, True)
        stored = STORED.get(dtype)
        if stored and not src.boolean and src.kind != CONST:  # an output's storage (a quantizer's int8 / fp8 values)
            return Value(src.ref, src.kind, shape, why=f"computes with a value cast to {dtype}; a cast to {dtype} "
                         "lowers only as an output's storage (the last step before a `return`)", store=stored)
        if not dtype.is_floating_point:
            self.refuse(f"casts to {dtype}; only floating-point casts lower, and {', '.join(map(str, STORED))} as "
                        "an output's storage")
        if src.boolean:
            return self.emit("to_float", [src.ref], src.kind, shape)
        target = "input" if dtype == self.in_dtype else {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype)
        if target is None:
            self.refuse(f"casts to {dtype}, which the kernels do not compute in")
        if src.kind == CONST:
            return src
        return self.emit("cast", [src.ref], src.kind, shape, attr=target)

    def reduction(self, base: str, node, shape: str, src: Value | None = None) -> Value:
        args, kw = node.args, node.kwargs
        src_node = args[0]
        src = src or self.arg(src_node)
        val = src_node.meta["val"]
        dims = args[1] if len(args) > 1 else kw.get("dim")
        if base in ("argmax", "argmin", "prod"):
            self.refuse(f"torch.{base} does not lower (the reductions are sum, nansum, mean, max, min, var, std, any "
                        "and all)")
        self.last_dim(dims, src, val)
        if src.kind != ELEMENT:
            self.refuse(f"reduces a value that is the same along the row (torch.{base})")
        if base in ("any", "all"):  # of the values' truth: a max or min of booleans
            truth = src if src.boolean else self.emit("ne", [src.ref, 0.0], ELEMENT, src.shape, boolean=True)
            return self.reduction("amax" if base == "any" else "amin", node, shape, truth)
        if src.boolean:  # reduced as 1.0 / 0.0: a sum is a count ((x != 0).sum(-1)), a max or min an any or an all
            reduced = self.reduction(base, node, shape, self.emit("to_float", [src.ref], ELEMENT, src.shape))
            if base == "sum":
                return reduced
            truth = self.emit("ne", [(reduced[0] if isinstance(reduced, tuple) else reduced).ref, 0.0], ROW, shape,
                              boolean=True)  # a boolean again, as torch's max of booleans
            return (truth, reduced[1]) if isinstance(reduced, tuple) else truth
        if base in ("max", "min") and isinstance(node.meta.get("val"), (tuple, list)):  # max(dim) -> (values, indices)
            v = self.emit(base, [src.ref], ROW, "per_row")
            return (v, Value(None, CONST, "scalar", why=f"uses the indices of {base}(dim) (an argmax); only the "
                                                          "values lower"))
        if base == "sum":
            return self.emit("sum", [src.ref], ROW, shape)
        if base in ("amax", "amin"):
            return self.emit(base[1:], [src.ref], ROW, shape)
        if base == "var":  # prims.var(x, dims, correction): two passes, on the row held in registers
            correction = float(args[2] if len(args) > 2 else kw.get("correction", 1.0) or 0.0)
            total = self.emit("sum", [src.ref], ROW, "per_row")
            mean = self.emit("div", [total.ref, "n"], ROW, "per_row")
            dev = self.emit("sub", [src.ref, mean.ref], ELEMENT, "row")
            sq = self.emit("mul", [dev.ref, dev.ref], ELEMENT, "row")
            ss = self.emit("sum", [sq.ref], ROW, "per_row")
            denom = self.emit("sub", ["n", correction], CONST, "scalar") if correction else Value("n", CONST, "scalar")
            return self.emit("div", [ss.ref, denom.ref], ROW, shape)
        self.refuse(f"torch.{base} in this form does not lower")


TRANSPOSES = ("t", "permute", "transpose", "numpy_T", "swapaxes", "swapdims", "adjoint")
NO_OPS = ("alias", "clone", "contiguous", "detach", "lift_fresh_copy")
PRODUCTS = ("bmm", "baddbmm", "addbmm", "matmul", "einsum", "mv", "addmv", "dot", "vdot", "outer", "ger", "addr",
            "_unsafe_view", "tensordot", "kron")


class GemmConverter(Converter):
    """The GEMM class: the head (a @ b^T, and F.linear's bias) to ``acc``, then the epilogue as the elementwise
    class lowers it (see the module docstring)."""

    def start(self, placeholders) -> None:
        a, b = placeholders[0].meta["val"], placeholders[1].meta["val"]
        self.m, self.k, self.n = a.shape[0], a.shape[1], b.shape[0]
        self.xshape = (self.m, self.n)  # C's shape: what the epilogue's shapes are classified against
        self.head, self.base = None, ""
        for node, spec in zip(placeholders, self.inputs):  # the operands first, then row, vector, per_row inputs
            operand = spec["kind"] in ("a", "b")
            self.env[node] = Value(None if operand else spec["name"], ELEMENT, spec["kind"],
                                   operand=spec["kind"] if operand else None)
        self.names = {spec["kind"]: spec["name"] for spec in self.inputs[:2]}

    def arg(self, a) -> Value:
        if self.operand(a):
            name = self.names[self.env[a].operand[0]]
            self.refuse(f"uses `{name}`, an operand of the matmul, beside it (torch.{self.base}): a GEMM's epilogue "
                        "sees only C = a @ b^T and its own inputs; pass what it needs as another parameter")
        return super().arg(a)

    def operand(self, a) -> str | None:
        return self.env[a].operand if isinstance(a, torch.fx.Node) and isinstance(self.env.get(a), Value) else None

    def call(self, node) -> Value:
        target, args = node.target, node.args
        self.base = getattr(getattr(target, "overloadpacket", None), "__name__", getattr(target, "__name__", ""))
        self.base = self.base.removesuffix("_")
        if self.base == "sym_size":
            size = node.meta["val"]
            if str(size) == str(self.n):
                return Value("n", CONST, "scalar")
            which = "M (a.shape[0])" if str(size) == str(self.m) else "K (a.shape[1])"
            return Value(None, CONST, "scalar", why=f"computes with {which}; only N, C's row length, lowers")
        kind = self.operand(args[0]) if args else None
        if kind and self.base in NO_OPS:
            return self.env[args[0]]
        if kind == "b" and self.base in TRANSPOSES:
            return Value(None, ELEMENT, "operand", operand="bT")
        if self.base in ("mm", "addmm"):
            return self.matmul(node)
        if self.base in PRODUCTS:
            self.refuse(f"torch.{self.base} is a second or batched matrix product; a GEMM lowers one 2-D matmul at "
                        "the head and a pointwise epilogue")
        return super().call(node)

    def matmul(self, node) -> Value:
        args, kw = node.args, node.kwargs
        if self.head is not None:
            self.refuse(f"torch.{self.base} is a second matmul; a GEMM lowers one, at the head")
        first, second = (args[0], args[1]) if self.base == "mm" else (args[1], args[2])
        if self.operand(first) != "a" or self.operand(second) != "bT":
            self.refuse(f"torch.{self.base} is not the head a @ b.T on the first two tensor parameters as they come "
                        "in")
        self.head = acc = Value(ACC, ELEMENT, "row")
        if self.base == "addmm":  # beta * bias + alpha * (a @ b^T)
            alpha, beta = kw.get("alpha", 1), kw.get("beta", 1)
            if alpha != 1:
                acc = self.binary("mul", acc, self.arg(alpha), "row")
            bias = self.arg(args[0])
            if beta != 1:
                bias = self.binary("mul", bias, self.arg(beta), bias.shape)
            acc = self.binary("add", acc, bias, "row")
        return acc

    def reduction(self, base: str, node, shape: str) -> Value:
        self.refuse(f"torch.{base} is a reduction; a GEMM's epilogue is pointwise (a row reduction over C is "
                    "another kernel: lower it as its own function)")

    def outputs(self, outs) -> list[dict]:
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        if len(outs) != 1:
            self.line = self.lines.get(getattr(outs[0], "name", ""), self.line)
            raise Refused(f"returns {len(outs)} outputs; a GEMM lowers one, C [M, N] (return the others from their "
                          "own functions)", self.line)
        out = outs[0]
        if isinstance(out, torch.fx.Node) and out in self.env and self.shape_class(out.meta["val"]) != "row":
            raise Refused(f"returns a tensor of shape {list(out.meta['val'].shape)}; a GEMM's output is C's shape "
                          "[M, N]", self.lines.get(out.name, self.line))
        if self.head is None:
            raise Refused("multiplies no matrices here: a GEMM's output must come from its matmul")
        if isinstance(out, torch.fx.Node) and isinstance(self.env.get(out), Value) and self.env[out].store:
            raise Refused(f"stores C as {self.env[out].store}; a GEMM's C is stored in a's dtype or fp32",
                          self.lines.get(out.name, self.line))
        return super().outputs(outs)


def prune(nodes: list[dict], outputs: list[dict]) -> tuple[list[dict], list[dict]]:
    """Merge repeated computations (layer_norm's decomposition sums the row twice: once for its mean, once for the
    variance's), drop the nodes no output needs (a composite's unused results: layer_norm's mean and rstd) and number
    the rest t0, t1, ... in order, so that the same function always lowers to the same program, with no reduction
    done twice."""
    alias, seen, merged = {}, {}, []
    for node in nodes:
        node["args"] = [alias.get(a, a) if isinstance(a, str) else a for a in node["args"]]
        key = (node["op"], tuple(node["args"]), node.get("attr"))
        if key in seen:
            alias[node["id"]] = seen[key]
            continue
        seen[key] = node["id"]
        merged.append(node)
    def each(value, f):  # an output's value: one reference, or a wide output's list of them
        return [f(v) for v in value] if isinstance(value, list) else f(value)

    nodes, outputs = merged, [{**o, "value": each(o["value"], lambda v: alias.get(v, v))} for o in outputs]
    live = {v for o in outputs for v in output_refs(o) if isinstance(v, str)}
    for node in reversed(nodes):
        if node["id"] in live:
            live |= {a for a in node["args"] if isinstance(a, str)}
    kept = [node for node in nodes if node["id"] in live]
    rename = {node["id"]: f"t{i}" for i, node in enumerate(kept)}
    for node in kept:
        node["id"] = rename[node["id"]]
        node["args"] = [rename.get(a, a) if isinstance(a, str) else a for a in node["args"]]
    return kept, [{**o, "value": each(o["value"], lambda v: rename.get(v, v))} for o in outputs]


def convert(gm, inputs: list[dict], in_dtype, lines: dict, gemm: bool = False, exact: dict | None = None
            ) -> tuple[list[dict], list[dict], list[dict], int | None]:
    """(nodes, outputs, views, heads) of the IR for a traced graph (a GEMM's when `gemm`), or Refused. `views` are
    the pieces of wide inputs the program reads (Converter.part), in input order; `heads` is c when the function
    views x's rows as heads of c (Converter.split_heads), else None. `exact`: the unrounded values of the one-element
    constants the function made in the input's dtype, by their graph names (Converter.constant_attr)."""
    converter = (GemmConverter if gemm else Converter)(gm, inputs, in_dtype, lines, exact)
    nodes, outputs = prune(*converter.run())
    if gemm and not any(o["value"] == ACC for o in outputs) and not any(ACC in n["args"] for n in nodes):
        raise Refused("does not use its matmul's result in its output; a GEMM's output is C = a @ b^T with a "
                      "pointwise epilogue")
    used = {a for n in nodes for a in n["args"] if isinstance(a, str)} | {ref for o in outputs for ref in output_refs(o)}
    order = {i["name"]: k for k, i in enumerate(inputs)}
    views = sorted((v for v in converter.views.values() if v["name"] in used),
                   key=lambda v: (order[v["input"]], v["how"], v["index"]))
    return nodes, outputs, views, converter.heads
