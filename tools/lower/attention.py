"""Decode attention in the user's traced function: recognise it, lower its variant, check it ("Your attention").

Runs in the tracing child (tools/lower/capture.py calls ``lower`` first for a function of four or more tensors).
A decode-attention function takes one query token per sequence and its KV cache:

    q [B, Hq, D]   k_cache, v_cache [B, S, Hkv, D]   seq_lens [B] int32   (the query sits at position len - 1)

plus, optionally, vectors with one value per query head [Hq] (ALiBi slopes, sinks) or per sequence [B]
(annotated ``"[B]"``) and Python constants with defaults. Its parameters may come in any order and under any names:
``roles`` finds which is which by calling the function on small tensors of distinct sizes (B, Hkv, G, S, D =
3, 2, 5, 7, 11: primes, so that any view of them is told apart by its size), and the dataflow tells K from V
(K meets q in the first product, V meets the probabilities in the second).

The lowering, on an aten graph traced at those sizes (``F.scaled_dot_product_attention`` is traced as its math,
``SDPA_MATH``, so it reads like the hand-written forms):

    scores = (q . k) [* scale]  ->  pointwise work on the scores, masks  ->  softmax over the keys
             [(with a sink logit concatenated, then dropped)]  ->  P . V  ->  shape ops and casts only

becomes a small program over fp32 scalars, whose leaves are the score ``s`` and the indices of one (sequence,
query head, key): ``b``, ``h``, ``kpos``, ``length`` (= seq_lens[b]) and the vectors' values at h (or b). Index
tensors (``torch.arange(S)``, ``seq_lens[:, None] - 1``) are values of those leaves, so ``kpos > length - 1 -
window`` is one comparison per key, as the kernel evaluates it. From that program:

- ``scale``: the constant factor on q . k (``/ math.sqrt(D)``, ``* scaling``, SDPA's ``scale=``), folded into q by
  the kernel; one that depends on the head dim is fitted as k * D^p from a second trace at D = 13;
- ``score``: the rest of the pointwise work (softcap, ALiBi, biases), or None;
- ``keep``: the masks (``masked_fill``/``where`` to -inf or the dtype's min, an additive -inf mask, SDPA's boolean
  ``attn_mask``), as conjuncts peeled off the score's root;
- ``range``: each conjunct that bounds kpos by a function of the sequence alone (``kpos < length``, a window
  ``kpos > length - 1 - W``) becomes a key bound lo <= kpos < hi (``bounds``), so the kernel never loads the keys
  outside; the conjunct ``kpos < length`` is the kernel's own bound and must be there (stale cache slots);
- ``sink``: a logit per head concatenated to the scores before the softmax and dropped after it.

Anything else is refused in one line with the torch op and the user's line: a second softmax, a softmax over
another dim, a reduction of the scores, a table lookup, random ops, work on q or the keys before q . k, an output
epilogue. ``verify`` then runs the program (``interpret``) against the function itself in float64 at sizes the
trace did not see: GQA groups G = 1, 4, 8 and 16, head dims 64 and 128, mixed sequence lengths, stale cache slots
that ruin any read past a sequence's length.
"""

from __future__ import annotations

import inspect
import itertools
import math
from pathlib import Path

import torch

from tools.lower.convert import Refused
from tools.lower.decode import ORDER, value
from tools.lower.ir import ATEN, VOCABULARY

aten = torch.ops.aten

ROLES = ("q", "k", "v", "lens")
TRACE = {"B": 3, "Hkv": 2, "G": 5, "S": 7, "D": 11}  # primes: every product of a subset is a distinct size
SECOND_D = 13  # the second trace's head dim: a constant that changes with it is fitted as k * D^p
CHECKS = [  # verify's sizes: G = 1, 4, 8, 16; D = 64, 128; mixed lengths, one full, one of length 1
    {"B": 3, "Hkv": 2, "G": 4, "S": 40, "D": 64, "lens": [1, 23, 40]},
    {"B": 2, "Hkv": 1, "G": 8, "S": 33, "D": 128, "lens": [33, 9]},
    {"B": 2, "Hkv": 4, "G": 1, "S": 29, "D": 64, "lens": [17, 29]},
    {"B": 2, "Hkv": 1, "G": 16, "S": 48, "D": 128, "lens": [48, 5]},
]
WINDOW_PROBE = (1, 2, 7, 100, 1000, 4096, 32768, 1 << 20)  # lengths at which a key range's width is measured
LENGTH_NAMES = ("len", "seq", "lens", "lengths", "seqlen", "seqlens")
MINUS_INF = -1e30  # a mask value at or below this is -inf to the softmax (torch.finfo(bf16/fp16/fp32).min too)
SHAPE_OPS = {"view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "expand", "permute", "transpose", "t",
             "clone", "alias", "contiguous", "detach", "lift_fresh_copy", "_to_copy", "expand_copy", "view_copy",
             "repeat", "_reshape_alias", "broadcast_to", "slice", "select", "numpy_T"}
CONSTANT_MAKERS = {"full", "full_like", "zeros", "zeros_like", "ones", "ones_like", "scalar_tensor", "new_full",
                   "new_zeros", "new_ones", "empty_like"}
PRODUCTS = {"bmm", "mm", "baddbmm"}  # baddbmm(bias, q, k): beta * bias + alpha * q.k (BLOOM's ALiBi)
REDUCTIONS = ("amax", "amin", "max", "min", "sum", "mean", "logsumexp", "prod", "var", "std", "cumsum")
RANDOM = ("rand", "randn", "bernoulli", "dropout", "native_dropout", "randint", "normal", "uniform", "multinomial")


def _name(node) -> str:
    """An aten node's op name, an in-place form by its functional name (`add_` -> `add`: on values the function
    made, which is all a trace has)."""
    target = node.target
    name = getattr(getattr(target, "overloadpacket", None), "__name__", getattr(target, "__name__", str(target)))
    return name[:-1] if name.endswith("_") and not name.startswith("_") else name


# --- which parameter is which ------------------------------------------------------------------------------------


def looks_like(fn, hints: dict | None = None) -> bool:
    """Worth probing as decode attention: four or more tensor parameters."""
    from tools.lower.capture import _signature

    try:
        tensors, _ = _signature(fn, hints)
    except ValueError:
        return False
    return len(tensors) >= 4


def mentions_softmax(fn) -> bool:
    """A cheap test before the probe: the function's file computes a softmax (or calls SDPA) somewhere."""
    try:
        text = Path(inspect.getsourcefile(fn)).read_text()
    except (OSError, TypeError):
        return True
    return "softmax" in text or "scaled_dot_product_attention" in text


def example(roles: list[str], sizes: dict, dtype, seed: int, lens: list[int] | None = None) -> list:
    """Inputs for `roles` at `sizes`: stale cache slots (past each length) hold large values, so reading them shows."""
    gen = torch.Generator().manual_seed(seed)
    b, hkv, g, s, d = (sizes[k] for k in ("B", "Hkv", "G", "S", "D"))
    lens = lens or [max(1, s - 3 * i) for i in range(b)]
    seq = torch.tensor(lens, dtype=torch.int32)
    stale = torch.arange(s)[None, :] >= seq[:, None].long()
    made = []
    for role in roles:
        if role == "q":
            made.append(torch.randn(b, hkv * g, d, generator=gen, dtype=torch.float64).to(dtype))
        elif role in ("k", "v"):
            cache = torch.randn(b, s, hkv, d, generator=gen, dtype=torch.float64)
            cache[stale] = 8.0 if role == "k" else 1000.0
            made.append(cache.to(dtype))
        elif role == "lens":
            made.append(seq.clone())
        elif role.startswith("table:"):
            named = {"B": b, "Hq": hkv * g, "H": hkv * g, "Hkv": hkv, "S": s, "D": d}
            dims = [named.get(x.strip(), 1) for x in role[len("table:"):].strip("[]").split(",")]
            made.append(torch.randn(*dims, generator=gen, dtype=torch.float64).to(dtype))
        else:  # a vector in q's dtype, as a model holds it
            made.append((torch.rand(hkv * g if role == "head" else b, generator=gen, dtype=torch.float64) * 0.5
                         + 0.1).to(dtype))
    return made


def roles(fn, hints: dict | None = None) -> tuple[list[dict], dict] | None:
    """([{name, role}] in signature order, constants) of a decode-attention function, or None: the first role
    assignment under which the function runs on small tensors and returns [B, Hq, D]. Names only order the
    attempts (a parameter named like lengths is tried as seq_lens first); which cache is K is decided later, by the
    dataflow, so the two caches are taken in signature order here."""
    from tools.lower.capture import _signature

    tensors, constants = _signature(fn, hints)
    names = [t[0] for t in tensors]
    notes = {t[0]: t[1] for t in tensors}
    n = len(names)

    def lensy(i: int) -> int:
        return 0 if any(w in names[i].lower() for w in LENGTH_NAMES) else 1

    def query(i: int) -> int:
        return 0 if names[i].lower() in ("q", "query", "xq", "q_states", "query_states") else 1

    tried = 0
    for lens_i in sorted(range(n), key=lensy):
        for q_i in sorted((i for i in range(n) if i != lens_i), key=query):
            rest = [i for i in range(n) if i not in (lens_i, q_i)]
            for k_i, v_i in itertools.combinations(rest, 2):
                vec = [i for i in rest if i not in (k_i, v_i)]
                for kinds in itertools.product(*[_vector_kinds(notes[names[i]]) for i in vec]):
                    tried += 1
                    if tried > 400:
                        return None
                    assign = {lens_i: "lens", q_i: "q", k_i: "k", v_i: "v", **dict(zip(vec, kinds))}
                    order = [assign[i] for i in range(n)]
                    if _runs(fn, names, order, constants):
                        return [{"name": names[i], "role": order[i]} for i in range(n)], constants
    return None


def _vector_kinds(note: str) -> tuple[str, ...]:
    shape = note.replace(" ", "")
    if shape.count(",") >= 1:  # a tensor of 2+ dims beside the four: a table ([S, S] biases), refused by name later
        return ("table:" + shape,)
    if shape in ("[B]", "B", "batch", "per_batch"):
        return ("batch",)
    if shape in ("[Hq]", "[H]", "Hq", "head", "per_head"):
        return ("head",)
    return ("head", "batch")


def _runs(fn, names: list[str], order: list[str], constants: dict) -> bool:
    args = example(order, TRACE, torch.bfloat16, 0)
    try:
        with torch.no_grad():
            out = fn(**dict(zip(names, args)), **constants)
    except Exception:  # noqa: BLE001 -- not this assignment
        return False
    t = TRACE
    return isinstance(out, torch.Tensor) and tuple(out.shape) == (t["B"], t["Hkv"] * t["G"], t["D"])


# --- the trace ---------------------------------------------------------------------------------------------------


def sdpa_math(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention as the math it computes (torch's documented reference), so that its graph
    reads like the hand-written forms: q . k^T * scale, the mask (boolean: False drops the key; float: added), the
    softmax over the keys, P . V."""
    if dropout_p:
        raise Refused("F.scaled_dot_product_attention with dropout_p > 0 draws random numbers, which a decode kernel "
                      "does not; pass dropout_p=0.0 for inference")
    if is_causal:
        raise Refused("F.scaled_dot_product_attention(is_causal=True) with one query token attends to key 0 only "
                      "(its mask is aligned to the top left); pass attn_mask built from positions instead")
    factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa and key.size(-3) != query.size(-3):
        key = key.repeat_interleave(query.size(-3) // key.size(-3), -3)
        value = value.repeat_interleave(query.size(-3) // value.size(-3), -3)
    scores = torch.matmul(query, key.transpose(-2, -1)) * factor
    if attn_mask is not None:
        scores = scores.masked_fill(attn_mask.logical_not(), float("-inf")) if attn_mask.dtype == torch.bool \
            else scores + attn_mask
    return torch.matmul(torch.softmax(scores, dim=-1), value)


def trace(fn, inputs: list[dict], constants: dict, folder: str, d: int):
    """make_fx of the function at TRACE's sizes with head dim `d` (fake tensors, concrete sizes), each aten node
    tagged with the user's file:line; SDPA traced as sdpa_math; a random op refused by name at the call."""
    import torch.fx.traceback as fx_traceback
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.overrides import TorchFunctionMode

    from tools.lower.capture import user_line
    from tools.lower.convert import SELECTIONS

    class SourceLines(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            loc = user_line(folder)
            name = getattr(func, "__name__", "")
            kwargs = kwargs or {}
            try:
                if name == "scaled_dot_product_attention":
                    return sdpa_math(*args, **kwargs)
                if name in ("dropout", "dropout1d", "dropout2d", "alpha_dropout"):
                    training = kwargs.get("training", args[2] if len(args) > 2 else True)
                    if training and kwargs.get("p", args[1] if len(args) > 1 else 0.5) > 0:
                        raise Refused(f"torch.{name} in training mode draws random numbers, which a decode kernel "
                                      "does not; pass training=False (inference)")
                    return args[0] if args else kwargs["input"]  # inference: the identity
                if name.removesuffix("_") in RANDOM:
                    raise Refused(f"torch.{name} draws random numbers, which a decode kernel does not")
                if name.removesuffix("_") in SELECTIONS or name == "embedding":
                    raise Refused(f"torch.{name} selects or gathers elements, which a decode kernel's scores do not "
                                  "(they are computed from positions, per-head vectors and constants)")
            except Refused as err:
                err.line = err.line or loc
                raise
            return func(*args, **kwargs)

    names = [i["name"] for i in inputs]
    args = example([i["role"] for i in inputs], {**TRACE, "D": d}, torch.bfloat16, 0)

    def call(*tensors):
        with SourceLines():
            return fn(**dict(zip(names, tensors)), **constants)

    with fx_traceback.preserve_node_meta():
        gm = make_fx(call, tracing_mode="fake")(*args)
    lines = {n.name: n.meta["stack_trace"] for n in gm.graph.nodes if n.meta.get("stack_trace")}
    return gm, lines


# --- the graph, as a decode program --------------------------------------------------------------------------------


def _shape(node) -> tuple:
    val = node.meta.get("val")
    return tuple(val.shape) if isinstance(val, torch.Tensor) else ()


class Converter:
    """The decode structure of one traced graph (module docstring), as a program over the index leaves."""

    def __init__(self, gm, inputs: list[dict], lines: dict):
        self.gm, self.lines = gm, lines
        self.sizes = {"S": TRACE["S"], "Hq": TRACE["Hkv"] * TRACE["G"], "B": TRACE["B"]}
        places = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.role = {p: i["role"] for p, i in zip(places, inputs)}
        self.input_name = {p: i["name"] for p, i in zip(places, inputs)}
        self.nodes: list[dict] = []
        self.memo: dict = {}
        self.scale = 1.0
        self.q_factors: list = []  # graph nodes that multiply q: per-sequence or per-head factors (llama4's)

    def refuse(self, text: str, node=None):
        raise Refused(text, self.lines.get(node.name) if node is not None else None)

    # the graph's landmarks
    def ancestors(self, node, stop=()) -> set:
        seen, todo = set(), [node]
        while todo:
            n = todo.pop()
            if n in seen or n in stop:
                continue
            seen.add(n)
            todo += [a for a in n.all_input_nodes]
        return seen

    def structure(self):
        nodes = list(self.gm.graph.nodes)
        soft = [n for n in nodes if _name(n) in ("_softmax", "softmax")]
        logsoft = [n for n in nodes if _name(n) in ("_log_softmax", "log_softmax")]
        if logsoft:
            self.refuse("a log_softmax of the scores is not attention's softmax (P must sum to 1); use torch.softmax",
                        logsoft[0])
        if not soft:
            self.refuse("no softmax over the keys was found (decode attention is softmax(q.k^T) . v; a hand-written "
                        "exp/sum is not recognised: use torch.softmax)")
        if len(soft) > 1:
            self.refuse("a second softmax: one decode kernel computes one softmax over the keys", soft[1])
        self.softmax = soft[0]
        s = self.sizes["S"]
        dim = self.softmax.args[1] % len(_shape(self.softmax))
        self.sink_width = 1 if _shape(self.softmax)[dim] == s + 1 else 0
        if _shape(self.softmax)[dim] not in (s, s + 1):
            self.refuse(f"a softmax over a dim of size {_shape(self.softmax)[dim]}, not over the keys (S): decode "
                        "attention normalises each head's scores over the keys", self.softmax)
        self.sdim = dim
        products = [n for n in nodes if _name(n) in PRODUCTS]
        first = [p for p in products if self.softmax not in self.ancestors(p)]
        second = [p for p in products if self.softmax in self.ancestors(p)]
        if len(first) != 1 or len(second) != 1:
            where = (first[1:] + second[1:] or products or [self.softmax])[0]
            self.refuse(f"{len(products)} matrix products where decode attention has two (q.k^T before the softmax, "
                        "P.v after it)", where)
        self.p1, self.p2 = first[0], second[0]
        caches = [p for p, r in self.role.items() if r in ("k", "v")]
        q = next(p for p, r in self.role.items() if r == "q")
        in_p1 = [c for c in caches if c in self.ancestors(self.p1)]
        in_p2 = [c for c in caches if c in self.ancestors(self.p2, stop={self.softmax})]
        if q not in self.ancestors(self.p1) or len(in_p1) != 1 or len(in_p2) != 1 or in_p1 == in_p2:
            self.refuse("the first product must be q with one cache (K) and the second the probabilities with the "
                        "other (V)", self.p1)
        self.k, self.v, self.q = in_p1[0], in_p2[0], q
        self.check_operands()

    def check_operands(self):
        """q, K and V reach the products through views, casts and GQA expansions only; a constant factor on q is
        the scale."""
        for start, leaf in ((self.p1, self.q), (self.p1, self.k), (self.p2, self.v)):
            for arg in start.all_input_nodes:
                if leaf in self.ancestors(arg):
                    self._operand(arg, leaf)

    def _operand(self, node, leaf):
        while node is not leaf:
            name = _name(node)
            if name in SHAPE_OPS:
                if name in ("slice", "select") and node.args[0] is leaf:
                    self.refuse("a slice of q or of a cache before the product (one decode kernel reads whole heads)",
                                node)
                node = node.args[0]
            elif name in ("mul", "div") and leaf is self.q:
                other = node.args[1]
                factor = self.constant(other)
                if factor is None and hasattr(other, "op") and not ({self.q, self.k, self.v} & self.ancestors(other)) \
                        and _shape(other)[-1:] in ((), (1,)):  # one value per (sequence, head): a factor on the score
                    self.q_factors.append(other if name == "mul" else ("reciprocal", other))
                elif factor is None:
                    self.refuse("work on q before q.k^T other than a scale per sequence or head (RoPE, a norm) is "
                                "not part of the decode kernel: apply it before the call", node)
                else:
                    self.scale *= factor if name == "mul" else 1.0 / factor
                node = node.args[0]
            else:
                what = "q" if leaf is self.q else "the keys" if leaf is self.k else "the values"
                self.refuse(f"torch op {name} on {what} before its product is not part of the decode kernel: "
                            "apply it before the call (the kernel reads the cache as it is)", node)

    def constant(self, arg):
        """A Python number, or a graph node that is one (a scalar_tensor, a one-element lifted constant)."""
        if isinstance(arg, (int, float)) and not isinstance(arg, bool):
            return float(arg)
        if hasattr(arg, "op"):
            name = _name(arg)
            if name in ("scalar_tensor", "full") and arg.args:
                value = arg.args[0] if name == "scalar_tensor" else arg.args[1]
                return float(value) if isinstance(value, (int, float)) else None
            if name in ("lift_fresh_copy", "_to_copy", "clone") and arg.args:
                return self.constant(arg.args[0])
            if arg.op == "get_attr":
                t = getattr(self.gm, arg.target)
                return float(t.reshape(-1)[0]) if isinstance(t, torch.Tensor) and t.numel() == 1 else None
        return None

    # the score region as a program
    def emit(self, op: str, args: list, node) -> object:
        spec = VOCABULARY[op]
        if op in ORDER and isinstance(args[0], str) and not isinstance(args[1], str):
            folded = self.decided(op, args, node)
            if folded is not None:
                return folded
        if all(not isinstance(a, str) for a in args) and spec.fold is not None:
            try:
                return float(spec.fold(*args))
            except (ValueError, ZeroDivisionError, OverflowError):
                pass
        ident = f"t{len(self.nodes)}"
        const = all(not isinstance(a, str) for a in args)
        self.nodes.append({"id": ident, "op": op, "args": args, "line": self.lines.get(node.name) if node is not
                           None else None, "kind": "const" if const else "element"})
        return ident

    def decided(self, op: str, args: list, node):
        """where(c, a, b) <op> t with constants a, b, t is c itself or its negation (Falcon compares its own
        additive mask: `causal_mask < -1`), so that the mask stays a condition on the positions."""
        where = _node(self.nodes, args[0])
        if where is None or where["op"] != "where" or any(isinstance(x, str) for x in where["args"][1:]):
            return None
        a, b = (ORDER[op](x, args[1]) for x in where["args"][1:])
        if a and not b:
            return where["args"][0]
        if b and not a:
            return _not(self.nodes, where["args"][0])
        return None

    def value(self, arg):
        """An aten argument as a program reference or a float."""
        c = self.constant(arg)
        if c is not None:
            return c
        if not hasattr(arg, "op"):
            self.refuse(f"an argument {arg!r} the lowering does not understand")
        if arg not in self.memo:
            self.memo[arg] = self._value(arg)
        return self.memo[arg]

    def _value(self, node):
        name = _name(node)
        if node is self.p1:
            ref = "s"
            for factor in self.q_factors:  # (c q) . k = c (q . k): a per-sequence or per-head factor on q
                if isinstance(factor, tuple):
                    ref = self.emit("div", [ref, self.value(factor[1])], node)
                else:
                    ref = self.emit("mul", [ref, self.value(factor)], node)
            if _name(node) == "baddbmm":  # beta * bias + alpha * (q . k)
                beta, alpha = node.kwargs.get("beta", 1.0), node.kwargs.get("alpha", 1.0)
                ref = self.emit("add", [self.emit("mul", [self.value(node.args[0]), float(beta)], node),
                                        self.emit("mul", [ref, float(alpha)], node)], node)
            return ref
        if node.op == "placeholder":
            role = self.role[node]
            if role == "lens":
                return "length"
            if role in ("head", "batch"):
                return self.input_name[node]
            if role.startswith("table:"):
                self.refuse(f"`{self.input_name[node]}` {role[6:]} is a table of the scores (a learned [S, S] or "
                            "per-position bias): a decode kernel computes its scores from positions, per-head or "
                            "per-sequence vectors and constants, not a table lookup", node)
            self.refuse(f"{self.input_name[node]} is used outside its product", node)
        if name == "arange":
            return self.arange(node)
        if name in SHAPE_OPS:
            if name in ("slice", "select"):
                self.whole_slice(node)
            if name == "_to_copy" and node.kwargs.get("dtype") == torch.bool:
                return self.emit("ne", [self.value(node.args[0]), 0.0], node)
            return self.value(node.args[0])
        if name in CONSTANT_MAKERS:
            value = node.args[1] if name in ("full", "full_like", "new_full") else \
                1.0 if "ones" in name else 0.0 if name != "empty_like" else None
            if value is None:
                self.refuse("torch.empty_like holds no values", node)
            return float(value)
        if name == "masked_fill":
            x, mask, fill = node.args[:3]
            return self.emit("where", [self.value(mask), self.value(fill), self.value(x)], node)
        if name in REDUCTIONS:
            self.refuse(f"a reduction ({name}) of the scores besides the softmax is not one decode kernel", node)
        if name in ("floor_divide",) or (name == "div" and node.kwargs.get("rounding_mode") == "floor"):
            a, b = (self.value(x) for x in node.args[:2])
            return self.emit("floor", [self.emit("div", [a, b], node)], node)
        if name == "div" and node.kwargs.get("rounding_mode") == "trunc":
            a, b = (self.value(x) for x in node.args[:2])
            return self.emit("trunc", [self.emit("div", [a, b], node)], node)
        if name in ("add", "sub") and len(node.args) == 2 and node.kwargs.get("alpha", 1) != 1:
            a, b = (self.value(x) for x in node.args[:2])
            return self.emit(name, [a, self.emit("mul", [b, float(node.kwargs["alpha"])], node)], node)
        if name in ("index", "gather", "index_select", "take", "embedding"):
            self.refuse(f"a table lookup ({name}) in the scores: a decode kernel computes its scores from the "
                        "positions, per-head or per-sequence vectors and constants, not a learned [S, S] table", node)
        if name in PRODUCTS or name in ("_softmax",):
            self.refuse(f"{name} inside the scores: one decode kernel has one q.k^T and one softmax", node)
        if name.removesuffix("_") in RANDOM:
            self.refuse(f"{name} draws random numbers, which a decode kernel does not", node)
        if name in ATEN and ATEN[name] in VOCABULARY and ATEN[name] not in ("cast", "sum", "max", "min"):
            op = ATEN[name]
            args = [self.value(a) for a in node.args[:VOCABULARY[op].arity]]
            if len(args) != VOCABULARY[op].arity:
                self.refuse(f"{name} with {len(args)} operands", node)
            return self.emit(op, args, node)
        if name == "clamp":
            x, lo, hi = (list(node.args) + [None, None])[:3]
            out = self.value(x)
            if lo is not None:
                out = self.emit("maximum", [out, self.value(lo)], node)
            if hi is not None:
                out = self.emit("minimum", [out, self.value(hi)], node)
            return out
        self.refuse(f"torch op {name} in the scores is not in the lowering's vocabulary", node)

    def arange(self, node):
        args = [a for a in node.args if isinstance(a, (int, float))]
        start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
        size = math.ceil((end - start) / step)
        leaf = {self.sizes["S"]: "kpos", self.sizes["Hq"]: "h", self.sizes["B"]: "b"}.get(size)
        if leaf is None:
            self.refuse(f"torch.arange of {size} values: a decode kernel's positions are the keys' (S), the heads' "
                        "(Hq) or the sequences' (B)", node)
        out = leaf if step == 1 else self.emit("mul", [leaf, float(step)], node)
        return out if start == 0 else self.emit("add", [out, float(start)], node)

    def whole_slice(self, node):
        if _name(node) == "select":
            if _shape(node.args[0])[node.args[1]] != 1:
                self.refuse("an element selected from an index tensor (x[..., i]) does not lower", node)
            return
        dim, start, end = (list(node.args[1:]) + [0, None, None])[:3]
        size = _shape(node.args[0])[dim]
        step = node.args[4] if len(node.args) > 4 else 1
        if (start or 0) != 0 or (end is not None and end < size) or step != 1:
            self.refuse("a slice of the scores or of the positions does not lower (it shifts which key is which)",
                        node)

    # the softmax's input: sinks, a max subtracted, masks
    def logits(self):
        """(score reference, sink reference or None) of the softmax's input."""
        x = self.softmax.args[0]
        x = self._through(x, {"_to_copy", "clone", "alias", "contiguous"})
        if _name(x) == "sub":  # x - max(x): a shift the softmax does not see (gpt-oss subtracts its row max)
            a, b = x.args[:2]
            b0 = self._through(b, (SHAPE_OPS - {"slice"}) | {"getitem"})  # max(...).values is a getitem
            if hasattr(b0, "op") and _name(b0) in ("amax", "max") and self._through(b0.args[0], SHAPE_OPS - {"slice"}) \
                    is self._through(a, SHAPE_OPS - {"slice"}):
                x = a
        x = self._through(x, {"_to_copy", "clone", "alias", "contiguous"})
        sink = None
        if self.sink_width:
            if _name(x) != "cat" or len(x.args[0]) != 2:
                self.refuse("the softmax runs over S + 1 values but not a cat of the scores and one sink logit", x)
            scores, column = x.args[0]
            if _shape(column)[self.sdim] != 1:
                self.refuse("a cat of the scores with more than one extra logit per head", x)
            sink = self.value(column)
            x = scores
            if self.refs(sink) & {"s", "kpos"}:
                self.refuse("a sink logit that depends on the keys (it joins the denominator once per head)", column)
        return self.value(x), sink

    def _through(self, node, ops):
        while hasattr(node, "op") and _name(node) in ops and node.args:
            node = node.args[0]
        return node

    def after(self):
        """The probabilities reach P.V through casts and views (and the sink column's drop); the output is P.V
        through views and casts: anything else is an op the kernel does not run."""
        for arg in self.p2.all_input_nodes:
            if self.softmax not in self.ancestors(arg):
                continue
            node, dropped = arg, 0
            while node is not self.softmax:
                name = _name(node)
                if name == "slice" and self.sink_width:
                    dropped += 1
                elif name in ("native_dropout", "dropout") or name.removesuffix("_") in RANDOM:
                    self.refuse("dropout on the probabilities draws random numbers: pass training=False / "
                                "dropout_p=0.0 for inference", node)
                elif name not in SHAPE_OPS:
                    self.refuse(f"torch op {name} between the softmax and P.v is not part of a decode kernel", node)
                node = node.args[0]
            if self.sink_width and dropped != 1:
                self.refuse("the sink column must be dropped after the softmax ([..., :-1]) before P.v", self.p2)
        out = next(n for n in self.gm.graph.nodes if n.op == "output")
        node = out.args[0]
        node = node[0] if isinstance(node, (tuple, list)) else node
        while node is not self.p2:
            name = _name(node)
            whole = name == "select" and _shape(node.args[0])[node.args[1]] == 1 or name == "slice" and \
                _shape(node.args[0]) == _shape(node)  # the query's dim of size 1, or a slice that keeps all
            if name not in SHAPE_OPS - {"slice", "select"} and not whole:
                self.refuse(f"an output epilogue ({name} after P.v) is not lowered into the decode kernel: apply it "
                            "after the call", node)
            node = node.args[0]

    def refs(self, ref) -> set:
        """The leaves a reference depends on."""
        if not isinstance(ref, str):
            return set()
        if not ref.startswith("t") or not ref[1:].isdigit():
            return {ref}
        node = self.nodes[int(ref[1:])]
        return set().union(*(self.refs(a) for a in node["args"]))

    def program(self) -> dict:
        self.structure()
        self.after()
        score, sink = self.logits()
        return {"nodes": self.nodes, "score": score, "sink": sink, "scale": self.scale}


# --- masks, bounds and the scale ----------------------------------------------------------------------------------


def _node(nodes: list[dict], ref):
    return nodes[int(ref[1:])] if isinstance(ref, str) and ref[:1] == "t" and ref[1:].isdigit() else None


def peel(nodes: list[dict], root) -> tuple[object, list]:
    """(score root, keep conjuncts): masks to -inf peeled off the root, through steps that keep -inf at -inf (a
    positive factor, an added finite term)."""
    conjuncts = []
    while True:
        node = _node(nodes, root)
        if node is None:
            return root, conjuncts
        op, args = node["op"], node["args"]
        if op == "where" and _minus_inf(args[2]):
            conjuncts.append(args[0])
            root = args[1]
        elif op == "where" and _minus_inf(args[1]):
            conjuncts.append(_not(nodes, args[0]))
            root = args[2]
        elif op == "add" and any(_mask_term(nodes, a) is not None for a in args):
            k = next(i for i, a in enumerate(args) if _mask_term(nodes, a) is not None)
            keep, rest = _mask_term(nodes, args[k])
            conjuncts.append(keep)
            root = args[1 - k] if rest == 0.0 else _emit(nodes, "add", [args[1 - k], rest])
        elif op in ("mul", "div") and not isinstance(args[1], str) and args[1] > 0:  # a positive factor keeps -inf
            inner, more = peel(nodes, args[0])
            if not more:
                return root, conjuncts
            conjuncts += more
            root = _emit(nodes, op, [inner, args[1]])
        else:
            return root, conjuncts


def _minus_inf(a) -> bool:
    return not isinstance(a, str) and a <= MINUS_INF


NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}


def _not(nodes: list[dict], ref) -> str:
    """not(ref), simplified: not(not a) = a, not(a < b) = a >= b (no NaN among the indices), De Morgan for or."""
    node = _node(nodes, ref)
    if node is not None and node["op"] == "not":
        return node["args"][0]
    if node is not None and node["op"] in NEGATED:
        nodes.append({**node, "id": f"t{len(nodes)}", "op": NEGATED[node["op"]]})
        return nodes[-1]["id"]
    if node is not None and node["op"] == "or":
        a, b = (_not(nodes, x) for x in node["args"])
        nodes.append({**node, "id": f"t{len(nodes)}", "op": "and", "args": [a, b]})
        return nodes[-1]["id"]
    nodes.append({"id": f"t{len(nodes)}", "op": "not", "args": [ref], "line": None, "kind": "element"})
    return nodes[-1]["id"]


def _mask_term(nodes: list[dict], ref):
    """(keep condition, the term where kept) of an additive term that is -inf where a key is dropped: where(c, y,
    -inf) or where(c, -inf, y) (an additive mask has y = 0; Falcon's ALiBi bias is masked in place), else None."""
    node = _node(nodes, ref)
    if node is None or node["op"] != "where":
        return None
    c, a, b = node["args"]
    if _minus_inf(b) and not _minus_inf(a):
        return c, a
    if _minus_inf(a) and not _minus_inf(b):
        return _not(nodes, c), b
    return None


def split_and(nodes: list[dict], refs: list) -> list:
    out = []
    for ref in refs:
        node = _node(nodes, ref)
        if node is not None and node["op"] == "and":
            out += split_and(nodes, node["args"])
        elif node is not None and node["op"] == "not" and _node(nodes, node["args"][0]) is not None and \
                _node(nodes, _not(nodes, node["args"][0]))["op"] != "not":
            out += split_and(nodes, [_not(nodes, node["args"][0])])
        else:
            out.append(ref)
    return out


def _linear(nodes: list[dict], ref, batch: set):
    """ref as a * kpos + sum(coef * term) + c, with terms functions of the sequence alone (length, b, per-sequence
    vectors, nodes of those): (a, {term: coef}, c), or None."""
    if not isinstance(ref, str):
        return 0.0, {}, float(ref)
    if ref == "kpos":
        return 1.0, {}, 0.0
    deps = _leaves(nodes, ref)
    if "kpos" not in deps:
        return (0.0, {ref: 1.0}, 0.0) if deps <= batch else None
    node = _node(nodes, ref)
    if node is None:
        return None
    op, args = node["op"], node["args"]
    parts = [_linear(nodes, a, batch) for a in args]
    if any(p is None for p in parts):
        return None
    if op in ("add", "sub"):
        sign = 1.0 if op == "add" else -1.0
        (a1, t1, c1), (a2, t2, c2) = parts
        terms = dict(t1)
        for k, v in t2.items():
            terms[k] = terms.get(k, 0.0) + sign * v
        return a1 + sign * a2, terms, c1 + sign * c2
    if op == "neg":
        a, t, c = parts[0]
        return -a, {k: -v for k, v in t.items()}, -c
    if op in ("mul", "div") and not isinstance(args[1], str) or op == "mul" and not isinstance(args[0], str):
        (a, t, c), f = (parts[0], float(args[1])) if not isinstance(args[1], str) else (parts[1], float(args[0]))
        f = 1.0 / f if op == "div" else f
        return a * f, {k: v * f for k, v in t.items()}, c * f
    return None


def _leaves(nodes: list[dict], ref) -> set:
    if not isinstance(ref, str):
        return set()
    node = _node(nodes, ref)
    return {ref} if node is None else set().union(*(_leaves(nodes, a) for a in node["args"]))


def bounds(nodes: list[dict], conjuncts: list, batch: set) -> tuple[list, list, list]:
    """(lo refs, hi refs, the conjuncts left for keep): each conjunct linear in kpos with the rest a function of
    the sequence alone becomes an exact integer bound, lo <= kpos < hi (kpos is an integer, so floor/ceil make it
    exact), emitted as new nodes."""
    lo, hi, rest = [], [], []
    for ref in conjuncts:
        node = _node(nodes, ref)
        got = None
        if node is not None and node["op"] in ("lt", "le", "gt", "ge"):
            left, right = (_linear(nodes, a, batch) for a in node["args"])
            if left is not None and right is not None:
                a = left[0] - right[0]
                terms = dict(left[1])
                for k, v in right[1].items():
                    terms[k] = terms.get(k, 0.0) - v
                c = left[2] - right[2]
                if a != 0.0:
                    got = (node["op"], a, terms, c)
        if got is None:
            rest.append(ref)
            continue
        op, a, terms, c = got
        # a*kpos + T + c  <op>  0  ->  kpos <op'> x,  x = -(T + c) / a  (the comparison flips when a < 0)
        f = -1.0 / a
        x = c * f
        for term, coef in terms.items():
            x = _emit(nodes, "add", [_emit(nodes, "mul", [term, coef * f]), x])
        whole = float(c * f).is_integer() and all(_integer(nodes, t) and float(k * f).is_integer()
                                                  for t, k in terms.items())
        floor = x if whole else _emit(nodes, "floor", [x])  # an integer x is its own floor and ceil
        ceil = x if whole else _emit(nodes, "ceil", [x])
        op = op if a > 0 else {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}[op]
        if op == "lt":  # kpos < x  <=>  kpos < ceil(x)
            hi.append(ceil)
        elif op == "le":  # kpos <= x  <=>  kpos < floor(x) + 1
            hi.append(_emit(nodes, "add", [floor, 1.0]))
        elif op == "gt":  # kpos > x  <=>  kpos >= floor(x) + 1
            lo.append(_emit(nodes, "add", [floor, 1.0]))
        else:  # kpos >= x  <=>  kpos >= ceil(x)
            lo.append(ceil)
    return lo, hi, rest


def _integer(nodes: list[dict], ref) -> bool:
    """Whether a value is an integer for every sequence: the indices, integer constants, and sums, differences,
    products and roundings of them."""
    if not isinstance(ref, str):
        return float(ref).is_integer()
    node = _node(nodes, ref)
    if node is None:
        return ref in ("length", "b", "h", "kpos")
    return node["op"] in ("floor", "ceil", "trunc", "round") or \
        node["op"] in ("add", "sub", "mul", "neg") and all(_integer(nodes, a) for a in node["args"])


def _emit(nodes: list[dict], op: str, args: list):
    spec = VOCABULARY[op]
    if all(not isinstance(a, str) for a in args) and spec.fold is not None:
        return float(spec.fold(*args))
    if op == "mul" and 1.0 in args:
        return args[1 - args.index(1.0)]
    if op == "add" and 0.0 in args:
        return args[1 - args.index(0.0)]
    nodes.append({"id": f"t{len(nodes)}", "op": op, "args": args, "line": None,
                  "kind": "element"})
    return nodes[-1]["id"]


def fold_scale(nodes: list[dict], score) -> tuple[object, float]:
    """(score root, factor): the constant factors of the chain of multiplications and divisions that starts at s
    (s * c, s / c, c * s, (s * x) * c: they commute) are folded out of the program into the kernel's q pre-scale.
    The chain goes on while each step has one user; a folded step reads its operand instead."""
    factor, ref = 1.0, "s"
    while True:
        users = [n for n in nodes if ref in n["args"]]
        if len(users) != 1 or users[0]["op"] not in ("mul", "div") or users[0]["args"] == [ref, ref]:
            break
        node = users[0]
        k = node["args"].index(ref)
        other = node["args"][1 - k]
        if node["op"] == "div" and k == 1:
            break
        if not isinstance(other, str) and other > 0.0:  # fold it: this step becomes its operand
            factor *= other if node["op"] == "mul" else 1.0 / other
            for n in nodes:
                n["args"] = [ref if a == node["id"] else a for a in n["args"]]
            score = ref if score == node["id"] else score
            node["args"] = [ref, 1.0]  # dead (pruned)
            node["op"] = "mul"
            continue
        ref = node["id"]
    return score, factor


def prune(nodes: list[dict], roots: list) -> list[dict]:
    """The nodes the roots need, renumbered t0.. in order, with every reference rewritten."""
    need, todo = set(), [r for r in roots if isinstance(r, str)]
    while todo:
        ref = todo.pop()
        node = _node(nodes, ref)
        if node is None or ref in need:
            continue
        need.add(ref)
        todo += [a for a in node["args"] if isinstance(a, str)]
    kept = [n for n in nodes if n["id"] in need]
    rename = {n["id"]: f"t{k}" for k, n in enumerate(kept)}
    out = [{**n, "id": rename[n["id"]], "args": [rename.get(a, a) if isinstance(a, str) else a for a in n["args"]]}
           for n in kept]
    return out, rename


# --- the whole lowering ---------------------------------------------------------------------------------------------


def lower(fn, function: str, path: str, folder: str, hints: dict | None = None) -> dict | None:
    """The decode program of `fn`, a refusal ({"ok": False, ...}), or None when fn is not decode attention."""
    if not looks_like(fn, hints) or not mentions_softmax(fn):
        return None
    found = roles(fn, hints)
    if found is None:
        return None
    inputs, constants = found
    try:
        gm, lines = trace(fn, inputs, constants, folder, TRACE["D"])
        if not is_attention(gm):  # it ran on decode-shaped inputs, but computes no softmax between two products
            return None
        first = Converter(gm, inputs, lines)
        got = first.program()
        gm2, lines2 = trace(fn, inputs, constants, folder, SECOND_D)
        again = Converter(gm2, inputs, lines2).program()
    except Refused as err:
        from tools.lower.capture import refused

        return {**refused(err, folder), "near": "decode_attention"}
    if first.role[first.k] != "k":  # the dataflow says which cache is K: the one q meets
        for i in inputs:
            i["role"] = {"k": "v", "v": "k"}.get(i["role"], i["role"])
    try:
        program = assemble(got, inputs, constants, function, path, folder)
        second = assemble(again, [dict(i) for i in inputs], constants, function, path, folder)
    except Refused as err:
        return {"ok": False, "stage": "lower", "error": str(err), "near": "decode_attention"}
    fitted = fit_scale(program, second)
    if isinstance(fitted, str):
        return {"ok": False, "stage": "lower", "error": fitted, "near": "decode_attention"}
    program["scale"] = fitted
    program["window"] = key_width(program)
    err = verify(fn, program, inputs, constants)
    if err:
        return {"ok": False, "stage": "lower", "error": err, "near": "decode_attention"}
    return {"ok": True, "ir": program}


def is_attention(gm) -> bool:
    """Whether a traced graph has attention's shape at all: a softmax and two matrix products (anything else that
    happens to run on decode-shaped inputs is left to the row and GEMM rules)."""
    names = [_name(n) for n in gm.graph.nodes]
    return any(n in ("_softmax", "softmax", "_log_softmax") for n in names) and sum(n in PRODUCTS for n in names) >= 2


def assemble(got: dict, inputs: list[dict], constants: dict, function: str, path: str, folder: str) -> dict:
    """The program of one trace: the scale folded, masks peeled into keep conjuncts, bounds found, nodes pruned."""
    from tools.lower.capture import source_text

    nodes = [dict(n) for n in got["nodes"]]
    score, factor = fold_scale(nodes, got["score"])
    root, conjuncts = peel(nodes, score)
    conjuncts = split_and(nodes, conjuncts)
    batch = {"length", "b"} | {i["name"] for i in inputs if i["role"] == "batch"}
    lo, hi, rest = bounds(nodes, conjuncts, batch)
    if not any(_at_most(nodes, r, lambda n: float(n)) for r in hi):
        raise Refused("the function does not mask the keys at or past seq_lens[b] (they hold stale cache slots); "
                      "mask them, e.g. scores.masked_fill(arange(S) >= seq_lens[:, None, None], -inf)")
    lo_ref = _reduce(nodes, "maximum", [r for r in lo if not _at_most(nodes, r, lambda n: 0.0)])
    hi_ref = _reduce(nodes, "minimum", [r for r in hi if not _at_most(nodes, lambda n: float(n), r)])
    roots = [root, got["sink"], lo_ref, hi_ref, *rest]
    kept, rename = prune(nodes, roots)

    def new(ref):
        return rename.get(ref, ref) if isinstance(ref, str) else ref

    program = {
        "class": "decode_attention", "function": function, "file": Path(path).name,
        "inputs": [{"name": i["name"], "role": i["role"], "kind": i["role"]} for i in inputs],
        "constants": {k: v for k, v in constants.items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
        "nodes": kept, "score": new(root), "keep": [new(r) for r in rest], "sink": new(got["sink"]),
        "range": {"lo": new(lo_ref), "hi": new(hi_ref)}, "scale": {"k": got["scale"] * factor, "p": 0.0},
        "outputs": [{"value": None, "shape": "[B, Hq, D]", "dtype": "input"}],
    }
    program["source"] = {loc: source_text(folder, loc) for loc in sorted({n["line"] for n in kept if n["line"]})}
    return program


def _at_most(nodes: list[dict], a, b) -> bool:
    """a(length) <= b(length) at every probed length (each side a reference or a function of the length): a bound
    the kernel's own (0 <= kpos < length) already implies."""
    sides = [side for side in (a, b) if not callable(side)]
    if any(_leaves(nodes, side) - {"length", "b"} for side in sides):
        return False
    return all((a(n) if callable(a) else value({"nodes": nodes}, a, {"length": float(n), "b": 0.0}))
               <= (b(n) if callable(b) else value({"nodes": nodes}, b, {"length": float(n), "b": 0.0}))
               for n in WINDOW_PROBE)


def _reduce(nodes: list[dict], op: str, refs: list):
    if not refs:
        return None
    out = refs[0]
    for r in refs[1:]:
        out = _emit(nodes, op, [out, r])
    return out


def fit_scale(program: dict, second: dict) -> dict | str:
    """{"k", "p"} of the scale, k * D^p, from the two traces (D = 11 and 13), or the one line that refuses: the
    rest of the program must not depend on the head dim."""
    strip = ("source",)
    a = {k: v for k, v in program.items() if k not in (*strip, "scale")}
    b = {k: v for k, v in second.items() if k not in (*strip, "scale")}
    if a != b:
        return ("the scores depend on the head dim D other than through a constant factor on q.k^T; compute the "
                "scale once (e.g. scale=1/math.sqrt(D)) and apply it to the product")
    c1, c2 = program["scale"]["k"], second["scale"]["k"]
    if c1 == c2:
        return {"k": c1, "p": 0.0}
    p = math.log(c2 / c1) / math.log(SECOND_D / TRACE["D"]) if c1 > 0 and c2 > 0 else float("nan")
    for want in (-1.0, -0.5, 0.5, 1.0):
        if abs(p - want) < 1e-6:
            return {"k": c1 / TRACE["D"] ** want, "p": want}
    return "the softmax scale depends on the head dim D other than as k * D^p (p = -1, -1/2, 1/2, 1)"


# --- the program in torch ---------------------------------------------------------------------------------------------


def scale_of(program: dict, d: int) -> float:
    return program["scale"]["k"] * d ** program["scale"]["p"]


def evaluate(program: dict, ref, env: dict, dtype=torch.float64):
    """The value of a reference over broadcastable index tensors, computed in `dtype` (float64 for the checks;
    float32 where a peer evaluates it inside its own kernel, FlexAttention's score_mod)."""
    if not isinstance(ref, str):
        return float(ref)
    if ref in env:
        return env[ref]
    node = _node(program["nodes"], ref)
    args = [evaluate(program, a, env, dtype) for a in node["args"]]
    spec = VOCABULARY[node["op"]]

    def num(a):
        return a.to(dtype) if isinstance(a, torch.Tensor) and a.dtype != dtype else a

    if node["op"] == "where":
        out = torch.where(args[0] if isinstance(args[0], torch.Tensor) else torch.tensor(bool(args[0])),
                          num(args[1]), num(args[2]))
    elif node["op"] in ("and", "or", "not"):
        out = getattr(torch, spec.torch)(*[a if isinstance(a, torch.Tensor) else torch.tensor(bool(a)) for a in args])
    elif node["op"] == "to_float":
        out = num(args[0])
    else:
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        tensors = [num(a) if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=dtype, device=first.device
                                                                            if first is not None else None)
                   for a in args]
        out = getattr(torch, spec.torch)(*tensors)
    env[ref] = out
    return out


def interpret(program: dict, tensors: dict) -> torch.Tensor:
    """The program on inputs by name (q [B, Hq, D], caches [B, S, Hkv, D], seq_lens [B], vectors), in float64, as
    the kernel computes it: the kernel's own bound kpos < len, the key range, keep, score, sinks."""
    by_role = {i["role"]: tensors[i["name"]] for i in program["inputs"] if i["role"] in ROLES}
    q, k, v, lens = (by_role[r] for r in ROLES)
    b_, hq, d = q.shape
    s_max, hkv = k.shape[1], k.shape[2]
    g = hq // hkv
    q, k, v = q.double(), k.double(), v.double()
    kk = k.repeat_interleave(g, dim=2)  # [B, S, Hq, D]: query head h reads KV head h // G
    vv = v.repeat_interleave(g, dim=2)
    s = torch.einsum("bhd,bshd->bhs", q, kk) * scale_of(program, d)
    env = {"s": s, "b": torch.arange(b_, dtype=torch.float64)[:, None, None],
           "h": torch.arange(hq, dtype=torch.float64)[None, :, None],
           "kpos": torch.arange(s_max, dtype=torch.float64)[None, None, :],
           "length": lens.double()[:, None, None]}
    for i in program["inputs"]:
        if i["role"] == "head":
            env[i["name"]] = tensors[i["name"]].double()[None, :, None]
        elif i["role"] == "batch":
            env[i["name"]] = tensors[i["name"]].double()[:, None, None]
    scores = evaluate(program, program["score"], env).expand(b_, hq, s_max).clone()
    keep = env["kpos"] < env["length"]
    for ref in program["keep"]:
        keep = keep & evaluate(program, ref, env).bool()
    if program["range"]["lo"] is not None:
        keep = keep & (env["kpos"] >= evaluate(program, program["range"]["lo"], env))
    if program["range"]["hi"] is not None:
        keep = keep & (env["kpos"] < evaluate(program, program["range"]["hi"], env))
    scores = scores.masked_fill(~keep, float("-inf"))
    if program["sink"] is not None:
        sink = evaluate(program, program["sink"], {k2: v2[..., :1] if k2 in ("s", "kpos") else v2
                                                  for k2, v2 in env.items()}).expand(b_, hq, 1)
        probs = torch.softmax(torch.cat([scores, sink], -1), -1)[..., :-1]
    else:
        probs = torch.softmax(scores, -1)
    return torch.einsum("bhs,bshd->bhd", probs, vv)


def key_width(program: dict) -> int | None:
    """WINDOW: the most keys [lo, hi) can hold whatever the length, when that is a constant (a sliding window),
    else None (also for a bound that reads a per-sequence vector: no width is known on the host). Measured on the
    program at lengths up to 2^20."""
    lo, hi = program["range"]["lo"], program["range"]["hi"]
    if lo is None or any(i["role"] == "batch" for i in program["inputs"]):
        return None
    widths = {(value(program, hi, {"b": 0.0, "length": float(n)}) if hi is not None else float(n))
              - value(program, lo, {"b": 0.0, "length": float(n)}) for n in WINDOW_PROBE}
    width = widths.pop()
    return int(width) if not widths and width >= 1 else None


def verify(fn, program: dict, inputs: list[dict], constants: dict) -> str | None:
    """The program against the function itself, float64, at CHECKS' sizes (G = 1, 4, 8, 16; D = 64, 128; mixed
    lengths): None when they agree."""
    names = [i["name"] for i in inputs]
    for k, sizes in enumerate(CHECKS):
        values = example([i["role"] for i in inputs], sizes, torch.float64, 10 + k, sizes["lens"])
        try:
            want = fn(**dict(zip(names, values)), **constants)
        except Exception as err:  # noqa: BLE001 -- the user's function at other sizes
            return f"the function fails at other sizes {sizes}: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
        got = interpret(program, dict(zip(names, values)))
        want = want.double()
        if want.shape != got.shape:
            return f"the output has shape {list(want.shape)} at other sizes, the lowering {list(got.shape)}"
        if not torch.isfinite(want).all() or (want - got).norm() > 1e-6 * max(1e-30, want.norm().item()):
            err = (want - got).norm().item() / max(1e-30, want.norm().item())
            return (f"the lowering does not reproduce the function at {sizes} (rel. error {err:.2e}): it differs from "
                    "one decode kernel (GQA head h reads KV head h // G; one query at position len - 1); please report "
                    "it if the function is decode attention")
    return None
