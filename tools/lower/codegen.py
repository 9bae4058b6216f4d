"""Write a lowered program (tools/lower/ir.py) out as the workspace's ``lowered.py``: the user's op, as kernel code.

The file is the compute half of the pattern's kernel: kernel.py (hand-written, per DSL) moves the data -- loads,
the reduction hierarchy, registers holding the row, predication, the tail -- and calls ``compute`` with this
thread's values; ``compute`` is the user's function, one statement per IR node, each beside the source line it came
from. It imports only ``pointwise`` (the DSL's own pointwise library, dsl/<dsl>/pointwise.py), so one generator
serves both DSLs. The output is deterministic (the same program gives the same bytes) and ruff-clean.
The contract between this file and the cells is tests/lowered_examples/CONTRACT.md.

A GEMM's file (tests/lowered_examples/CONTRACT_GEMM.md) is the same file with a head: ``HEAD = "matmul"``, the
operands a and b first in INPUTS/KINDS, and ``compute(acc, <epilogue inputs>, n, reduce)``, whose first argument
is this thread's fp32 accumulator values of C = a @ b^T; the cell runs it on the accumulator before its store.

A decode-attention variant's file (tests/lowered_examples/CONTRACT_DECODE.md, ``decode_text``) has no compute: it
defines the few functions the decode cells call around their online softmax -- ``scale(d)``, ``score``, ``keep``,
``key_range`` and ``sink`` -- each on fp32 scalars, with flags that tell a cell which of them to call.
"""

from __future__ import annotations

import keyword
import math

from tools.lower import ir

RESERVED = {"n", "reduce", "pw", "math", "compute"}
SMALL_POWERS = {1.0: "{a}", 2.0: "{a} * {a}", 3.0: "{a} * {a} * {a}", 4.0: "{a} * {a} * {a} * {a}",
                0.5: "pw.sqrt({a})", -0.5: "pw.rsqrt({a})", -1.0: "pw.reciprocal({a})",
                -2.0: "pw.reciprocal({a} * {a})"}
WIDTH = 120


def _tuple(rendered) -> str:
    """A tuple of already-written items as ruff format writes it: a trailing comma for one item."""
    rendered = list(rendered)
    return f"({rendered[0]},)" if len(rendered) == 1 else f"({', '.join(rendered)})"  # () when empty


def _strings(items) -> str:
    """A tuple of strings as ruff format writes it: double quotes, a trailing comma for one item."""
    return _tuple(f'"{s}"' for s in items)


def _kind(program: dict, spec: dict) -> str:
    """An input's KINDS entry: its kind, or "broadcast" / "broadcast_per_row" for a row / one value per row that the
    function broadcasts over some of x's leading dims (the cells find its row through strides)."""
    if ir.broadcast(program, spec):
        return "broadcast"
    return "broadcast_per_row" if ir.broadcast_per_row(program, spec) else spec["kind"]


def _float(v: float) -> str:
    if math.isinf(v):
        return "math.inf" if v > 0 else "-math.inf"
    if math.isnan(v):  # a NaN the function writes (float("nan"), xlogy's NaN for a NaN y)
        return "math.nan"
    return repr(float(v))


class _Writer:
    def __init__(self, program: dict, dtype: str):
        self.p, self.dtype = program, dtype
        self.by_id = {node["id"]: node for node in program["nodes"]}
        self.gemm = ir.is_gemm(program)
        self.names = {name: self._safe(name, self.gemm) for name in ir.arguments(program)}
        self.constants = self._constants()
        self.needs_math = False
        self.stored = self._stored_casts()
        self.rebases = {} if self.gemm else ir.rebases(program)  # online pair's sum -> what is rebased after it
        self.scalars = {i["name"] for i in program["inputs"] if i.get("kind") in ("scalar", "per_row")}  # in compute()
        self.folded = self._folded()

    def shifted(self, node: dict) -> dict | None:
        """The subtraction a - m of an exp(a - m) whose m is one value a row, which codegen writes as
        pw.exp_shifted(a, m); None for any other node."""
        arg = self.by_id.get(node["args"][0]) if node["op"] == "exp" and isinstance(node["args"][0], str) else None
        return arg if arg and arg["op"] == "sub" and self.kind_of(arg["args"][1]) == "row" else None

    def _folded(self) -> set[str]:
        """The subtractions that only shifted exps use (up to the online pair's sum that writes them again, if one
        does): not written, as the exp computes its own."""
        position = {node["id"]: k for k, node in enumerate(self.p["nodes"])}
        after = {r: position[total] for total, (_, _, redone) in self.rebases.items() for r in redone}
        outputs = {v for out in self.p["outputs"] for v in ir.output_refs(out) if isinstance(v, str)}
        folded = set()
        for sub in {arg["id"] for arg in map(self.shifted, self.p["nodes"]) if arg}:
            users = [node for node in self.p["nodes"] if sub in ir.references(node)]
            if all(self.shifted(u) or position[u["id"]] > after.get(sub, len(position)) for u in users) and \
                    (sub in after or sub not in outputs):
                folded.add(sub)
        return folded

    def kind_of(self, ref) -> str:
        """A value's kind (ir.py): "element", "row" (one value a row: a reduction's result, a scalar or per-row
        input) or "const"."""
        if not isinstance(ref, str):
            return "const"
        if ref in self.by_id:
            return self.by_id[ref].get("kind", "element")
        return "row" if ref in self.scalars else "element"  # an input (or a GEMM's accumulator)

    def _stored_casts(self) -> dict[str, str]:
        """Casts the store makes anyway: an output that is a cast to the dtype it is stored in (``.to(x.dtype)`` at
        the end of the function) is stored from the cast's argument, since rounding once to that dtype is what the
        store does; a cast used by nothing else is not written. {cast id: its argument}."""
        used = {a for node in self.p["nodes"] for a in ir.references(node)}
        made = {}
        for out in self.p["outputs"]:
            stored = self.dtype if out["dtype"] == "input" else out["dtype"]
            for value in ir.output_refs(out):
                node = self.by_id.get(value) if isinstance(value, str) else None
                if node and node["op"] == "cast" and value not in used and isinstance(node["args"][0], str) and \
                        (self.dtype if node["attr"] == "input" else node["attr"]) == stored:
                    made[value] = node["args"][0]
        return made

    @staticmethod
    def _safe(name: str, gemm: bool = False) -> str:
        if name in RESERVED or gemm and name == ir.ACC or keyword.iskeyword(name) or (name[:1] == "t" and name[1:].isdigit()):
            return f"{name}_in"
        return name

    def _constants(self) -> dict[float, str]:
        """The user's float defaults (eps, temperature, ...) that the graph uses, by value -> their names."""
        used = {a for node in self.p["nodes"] for a in node["args"] if not isinstance(a, str)}
        named = {}
        for name, value in sorted(self.p.get("constants", {}).items()):
            if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value) in used:
                named.setdefault(float(value), name.upper() if name.upper() not in RESERVED else f"{name.upper()}_")
        return named

    def operand(self, a) -> str:
        if isinstance(a, str):
            return self.names.get(a, a)
        if math.isinf(a) or math.isnan(a):  # written math.inf / math.nan, here or in its named constant's line
            self.needs_math = True
        return self.constants[a] if a in self.constants else _float(a)

    def expression(self, node: dict) -> str:
        """One IR node as Python: its vocabulary entry's code (ir.VOCABULARY), except where the kernels want a
        cheaper form (a division, a small power, an exp of a value less its row's) or a static argument (a cast's
        dtype)."""
        op, args = node["op"], [self.operand(a) for a in node["args"]]
        shifted = self.shifted(node)
        if shifted:  # exp(a - m) with m one value a row (softmax's max): the cells' one-FFMA form
            return f"pw.exp_shifted({', '.join(self.operand(a) for a in shifted['args'])})"
        if op == "div":
            return self.division(node, args)
        if op == "pow":
            exponent = node["args"][1]
            if not isinstance(exponent, str) and float(exponent) in SMALL_POWERS:
                return SMALL_POWERS[float(exponent)].format(a=args[0])
        if op == "cast":
            target = self.dtype if node["attr"] == "input" else node["attr"]
            return args[0] if target == "fp32" else f'pw.cast({args[0]}, "{target}")'
        return ir.VOCABULARY[op].code.format(*args)

    def division(self, node: dict, args: list[str]) -> str:
        """a / b as the kernels want it: an IEEE fp32 division is a multi-instruction sequence per element (enough
        to make a bandwidth kernel compute-bound), so a constant divisor becomes a multiplication by its reciprocal
        and any other divisor a multiplication by pw.reciprocal (the hardware's approximate reciprocal, ~1 ulp);
        a divisor per row (a reduction's result) is inverted once per row, not per element. Only a division of
        constants (n - 1.0, ...) stays a division."""
        divisor = node["args"][1]
        if isinstance(divisor, float) and divisor != 0.0 and math.isfinite(divisor):
            named = self.constants.get(divisor)  # TEMPERATURE: folded by Python when the kernel is traced
            return f"{args[0]} * (1.0 / {named})" if named else f"{args[0]} * {_float(1.0 / divisor)}"
        if node["kind"] == "const":
            return f"{args[0]} / {args[1]}"
        return f"{args[0]} * pw.reciprocal({args[1]})"

    def statements(self) -> list[str]:
        lines, seen = [], set()
        steps = []
        for node in self.p["nodes"]:
            if node["id"] not in self.stored and node["id"] not in self.folded:
                steps.append((f"    {node['id']} = {self.expression(node)}", node.get("line") or ""))
            if node["id"] in self.rebases:  # an online pair's sum: its max and exp into the row max's frame
                m, e, redone = self.rebases[node["id"]]
                steps.append((f'    {m}, {e} = reduce("rebase", ({m}, {e}))', node.get("line") or ""))
                steps += [(f"    {r} = {self.expression(self.by_id[r])}", self.by_id[r].get("line") or "")
                          for r in redone if r not in self.stored]
        if self.gemm:  # the head, which the cell computes, as a comment on the user's line of it
            a, b = (i["name"] for i in self.p["inputs"][:2])
            steps.insert(0, (f"    # {ir.ACC} = {a} @ {b}.T, in fp32 by the cell",
                             self.p.get("head_line") or ""))
        masks = [(f"    {self.names[i['name']]} = {self.names[i['name']]} != 0.0", "")
                 for i in ir.epilogue_inputs(self.p) if i.get("dtype") == "bool" and i["name"] in self.names]
        if masks:  # a mask arrives as 0.0 / 1.0 like every value; the function's own logic wants it boolean
            lines.append("    # the boolean masks, which the cell loads as 0.0 / 1.0")
        return [*lines, *(self.commented(code, loc, seen) for code, loc in [*masks, *steps])]

    def commented(self, code: str, loc: str, seen: set) -> str:
        """A statement beside the user's line it came from (`file:line`, its text the first time it is seen), cut to
        WIDTH."""
        if not loc:
            return code
        comment = f"  # {loc}"
        if loc not in seen:
            seen.add(loc)
            text = self.p.get("source", {}).get(loc, "")
            if text:
                comment += f"  {text}"
        if len(code) + len(comment) > WIDTH:
            comment = comment[: max(WIDTH - len(code) - 3, 4)].rstrip() + "..."
        return code + comment

    def constant_lines(self) -> list[str]:
        """The user's named constants as module globals (then a blank line), or nothing."""
        if not self.constants:
            return []
        return [*(f"{name} = {_float(value)}  # {self.p['file']}: the default of `{name.lower().rstrip('_')}`"
                  for value, name in sorted(self.constants.items(), key=lambda kv: kv[1])), ""]

    def outputs(self) -> str:
        kinds = {node["id"]: node["kind"] for node in self.p["nodes"]}
        first = ir.ACC if self.gemm else self.names[next(a for a in ir.arguments(self.p) if a not in self.scalars)]
        values = []
        for out in self.p["outputs"]:
            for value in ir.output_refs(out):  # a wide output's pieces, in order
                value = self.stored.get(value, value) if isinstance(value, str) else value
                ref = self.operand(value)
                element = value in self.names or value == first or kinds.get(value) == "element"
                values.append(ref if element or out["shape"] != "row" else f"pw.full_like({first}, {ref})")
        return f"    return ({', '.join(values)},)" if len(values) == 1 else f"    return ({', '.join(values)})"

    def _arg(self, name: str) -> str:
        """compute()'s argument `name` as the cell reads it: (input index, "whole" | "part" | "lane", j)."""
        index = {i["name"]: k for k, i in enumerate(self.p["inputs"])}
        view = next((v for v in self.p.get("views", []) if v["name"] == name), None)
        return (f'({index[view["input"]]}, "{view["how"]}", {view["index"]})' if view else
                f'({index[name]}, "whole", 0)')

    def _dims(self) -> str:
        """DIMS: each input's dim names when x has them (an N-D function), a [N] vector x's last, a scalar none."""
        x = ir.x_input(self.p)
        if "names" not in x:
            return "()"
        return _tuple(_strings(i.get("names") or (x["names"][-1:] if i["kind"] == "vector" else []))
                      for i in self.p["inputs"])

    @staticmethod
    def _shape(spec: dict) -> str:
        """An input's shape in the docstring: "[M, N] (a row input)", "[N] (a vector)", a GEMM's by its dims."""
        if "dims" in spec:
            words = {"a": "the matmul's a", "b": "the matmul's b", "row": "a row input", "vector": "a vector",
                     "per_row": "one value per row", "scalar": "a runtime scalar, loaded once"}[spec["kind"]]
            shape = f"[{', '.join(map(str, spec['dims']))}] ({words})"
        elif "names" in spec and spec["kind"] == "per_row":
            shape = f"[{', '.join(spec['names'])}] (one value per row of x)"
        elif "names" in spec:
            shape = f"[{', '.join(spec['names'])}] (a row input: rows of its last dim)"
        else:
            shape = "[M, N] (a row input)" if spec["kind"] == "row" else "[N] (a vector)"
        if spec.get("width", 1) > 1:
            shape += f", {spec['width']} pieces of N per row"
        return shape + (", boolean" if spec.get("dtype") == "bool" else "")

    def text(self) -> str:
        p = self.p
        body = self.statements()
        ret = self.outputs()
        lines = sorted({int(loc.rpartition(":")[2]) for loc in p.get("source", {}) if loc.startswith(p["file"] + ":")})
        span = f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}" if lines else "its source"
        params = ", ".join([*([ir.ACC] if self.gemm else []), *(self.names[a] for a in ir.arguments(p)),
                            "n", "reduce"])
        input_lines = "\n".join(f"    {i['name']}: {self._shape(i)}, {i['why']}" for i in p["inputs"])
        shape, of = ("row [M, N]", "a") if self.gemm else (None, "x")
        pieces = {"part": "{r} halves side by side", "lane": "{r} interleaved lanes"}
        out_lines = "\n".join(
            f"    output {k}: {shape or o['shape']} ({of + chr(39) + 's dtype' if o['dtype'] == 'input' else o['dtype']})"
            + (f", {ir.out_width(o)}N wide: {pieces[o['how']].format(r=ir.out_width(o))}" if "how" in o else "")
            for k, o in enumerate(p["outputs"]))
        reductions = ir.reductions(p)
        schedule = ir.schedule(p)
        if self.gemm:
            about = [
                "Do not edit it by hand: re-bake the workspace (or edit the function and re-bake) to change it. kernel.py "
                "computes the",
                "head, acc = a @ b^T in fp32 on the tensor cores, and calls `compute` on the accumulator values this "
                "thread holds, with",
                "each epilogue input's values at the same (row, column); every statement below is one step of the "
                "traced function,",
                "beside the source line it came from.",
            ]
            steps = "Epilogue: pointwise, on C [M, N]; no reductions."
        else:
            about = [
                "Do not edit it by hand: re-bake the workspace (or edit the function and re-bake) to change it. kernel.py "
                "moves the data",
                "(loads, the reduction hierarchy, the tail) and calls `compute` with the fp32 values this thread holds; "
                "every statement",
                "below is one step of the traced function, beside the source line it came from.",
            ]
            steps = f"Reductions over the last dim, in order: {', '.join(reductions) if reductions else 'none (elementwise)'}."
            if self.rebases:
                steps += ("\nAfter an online pair (a max m, then the sum of exp(a - m)), reduce(\"rebase\", (m, e)) "
                          "gives m and those exps\nin the frame of the row's max, for a kernel that reduced the pair "
                          "a warp at a time.")
        head = [
            f'"""Generated by kbaseline from `{p["function"]}` in {p["file"]} ({span}): the compute of this workspace\'s '
            "kernel.",
            "",
            *about,
            "",
            "Inputs (the parameters' shapes, by the rule in the README's \"Your own op\"):",
            input_lines,
            "Outputs:",
            out_lines,
            steps,
            f"Precision: inputs loaded in {self.dtype}, all math in fp32, casts where the function casts, one rounding "
            "per output.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
        ]
        if self.needs_math:
            head += ["import math", ""]
        if any("pw." in line for line in [*body, ret]):
            head += ["import pointwise as pw", ""]
        head += [
            f'SOURCE = "{p["function"] if p.get("builtin") else p["file"] + ":" + p["function"]}"',
            *([f'HEAD = "{p["head"]}"'] if self.gemm else []),
            f"INPUTS = {_strings(i['name'] for i in p['inputs'])}",
            f"KINDS = {_strings(_kind(p, i) for i in p['inputs'])}",
            f"DTYPES = {_strings(i.get('dtype', 'float') for i in p['inputs'])}",
            f"WIDTHS = {_tuple(str(i.get('width', 1)) for i in p['inputs'])}",
            f"ARGS = {_tuple(self._arg(a) for a in ir.arguments(p))}",
            f"OUTPUTS = {_strings(o['shape'] for o in p['outputs'])}",
            f"OUT_WIDTHS = {_tuple(str(ir.out_width(o)) for o in p['outputs'])}",
            f"OUT_HOW = {_strings(o.get('how', 'whole') for o in p['outputs'])}",
            f"DIMS = {self._dims()}",
            f"HEADS = {p.get('heads')!r}",
            f"RANK = {p.get('rank')!r}",
            f"OUT_DTYPES = {_strings(o['dtype'] for o in p['outputs'])}",
            f"REDUCTIONS = {_strings(reductions)}",
            *([] if self.gemm else [f"PASSES = {_tuple(str(k) for k in schedule[0])}",
                                    f"ONLINE = {_tuple(str(k) for k in schedule[1])}",
                                    f"LATE = {_tuple(str(k) for k in ir.late(p))}"]),
            f"USES_N = {ir.uses_n(p)!r}",
            "",
        ]
        head += [*self.constant_lines(), "", f"def compute({params}):"]
        if self.gemm:
            head += [
                '    """This thread\'s accumulator values (fp32) and each epilogue input\'s values at the same (row, '
                'column) in, the',
                '    output\'s values out. `n` is N (C\'s row length); `reduce` is None (a GEMM epilogue has no '
                'reductions)."""',
            ]
        else:
            head += [
                '    """This thread\'s values of each input (fp32) in, each output\'s values out. `n` is the row length N; '
                '`reduce(kind, v)`',
                '    is the cell\'s reduction of v over the whole row (every thread of the row gets the result)."""',
            ]
        return "\n".join([*head, *body, ret]) + "\n"


def generate(program: dict, dtype: str) -> str:
    """The text of lowered.py for `program`, in a workspace of `dtype` (what a cast to the input's dtype rounds to)."""
    if program["class"] == "decode_attention":
        return decode_text(program, dtype)
    return _Writer(program, dtype).text()


DECODE_INDICES = ("b", "h", "kpos", "length")  # the index arguments of score/keep, as fp32 scalars
DECODE_NAMES = ("SOURCE", "INPUTS", "ROLES", "VECTORS", "SCORE", "MASK", "RANGE", "WINDOW", "SINK")  # module names


def decode_text(program: dict, dtype: str) -> str:
    """lowered.py of a decode variant: each function is the statements its result needs, in program order, each
    beside the user's line it came from."""
    w = _Writer(program, dtype)
    vectors = [i["name"] for i in program["inputs"] if i["role"] in ("head", "batch")]
    w.names.update({v: f"{v}_in" for v in vectors if v in (*DECODE_INDICES, "s", "d")})  # not an index's name
    w.constants = {value: f"{name}_" if name in DECODE_NAMES else name for value, name in w.constants.items()}
    vec = [w.names[v] for v in vectors]
    nodes = {n["id"]: n for n in program["nodes"]}

    def needed(refs) -> list[dict]:
        need, todo = set(), [r for r in refs if isinstance(r, str)]
        while todo:
            ref = todo.pop()
            if ref in nodes and ref not in need:
                need.add(ref)
                todo += [a for a in nodes[ref]["args"] if isinstance(a, str)]
        return [n for n in program["nodes"] if n["id"] in need]

    def body(refs, result: str) -> list[str]:
        seen: set = set()
        return [*(w.commented(f"    {node['id']} = {w.expression(node)}", node.get("line") or "", seen)
                  for node in needed(refs)), f"    return {result}"]

    keep = program["keep"]
    keep_result = (w.operand(keep[0]) if len(keep) == 1 else _and(w, keep)) if keep else "True"
    lo, hi = program["range"]["lo"], program["range"]["hi"]
    sink = program["sink"]
    window = program.get("window")
    scale = program["scale"]
    scale_text = (_float(scale["k"]) if scale["p"] == 0 else
                  f"{_float(scale['k'])} * d ** {_float(scale['p'])}" if scale["k"] != 1.0 else f"d ** {_float(scale['p'])}")
    index_args = ", ".join([*DECODE_INDICES, *vec])
    roles = {"q": "q [B, Hq, D]", "k": "the key cache [B, S, Hkv, D]", "v": "the value cache [B, S, Hkv, D]",
             "lens": "seq_lens [B] int32", "head": "one value per query head [Hq]", "batch": "one value per sequence [B]"}
    out = [
        f'"""Generated by kbaseline from `{program["function"]}` in {program["file"]}: this decode-attention '
        "workspace's variant.",
        "",
        "Do not edit it by hand: re-bake the workspace (or edit the function and re-bake) to change it. kernel.py "
        "streams the",
        "KV cache (split-KV, GQA head groups, the online softmax, the merge) and calls these functions on fp32 "
        "scalars; every",
        "statement below is one step of the traced function, beside the source line it came from "
        "(tests/lowered_examples/",
        "CONTRACT_DECODE.md).",
        "",
        "Inputs (told apart by the dataflow: K meets q in the first product, V the probabilities in the second):",
        *[f"    {i['name']}: {roles[i['role']]}" for i in program["inputs"]],
        "Output: [B, Hq, D] in q's dtype. Scores, the softmax and P.V in fp32.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    bodies = {"score": body([program["score"]], w.operand(program["score"])), "keep": body(keep, keep_result),
              "key_range": body([lo, hi], f"({w.operand(lo) if lo is not None else '0.0'}, "
                                          f"{w.operand(hi) if hi is not None else 'length'})"),
              "sink": body([sink], w.operand(sink) if sink is not None else "0.0")}
    if w.needs_math:
        out += ["import math", ""]
    out += ["import pointwise as pw" + ("" if any("pw." in x for x in sum(bodies.values(), [])) else
                                        "  # noqa: F401 -- every lowered.py imports it"), ""]
    out += [
        f'SOURCE = "{program["file"]}:{program["function"]}"',
        f"INPUTS = {_strings(i['name'] for i in program['inputs'])}",
        f"ROLES = {_strings(i['role'] for i in program['inputs'])}",
        f"VECTORS = {_strings(vectors)}",
        f"SCORE = {program['score'] != 's'!r}",
        f"MASK = {bool(keep)!r}",
        f"RANGE = {lo is not None or hi is not None!r}",
        f"WINDOW = {window!r}",
        f"SINK = {sink is not None!r}",
        "",
    ]
    out += [
        *w.constant_lines(),
        "",
        "def scale(d):",
        '    """The factor on q . k (d: the head dim), which the kernel folds into q."""',
        f"    return {scale_text}",
        "",
        "",
        f"def score(s, {index_args}):",
        '    """The score of one (key, query head) from s = (q . k) * scale(d), in natural-log units."""',
        *bodies["score"],
        "",
        "",
        f"def keep({index_args}):",
        '    """False drops the key (its score becomes -inf); kpos < length is the kernel\'s own bound."""',
        *bodies["keep"],
        "",
        "",
        "def key_range(b, length):",
        '    """(lo, hi), integer valued: the keys outside [lo, hi) are never kept, so the kernel never reads them."""',
        *bodies["key_range"],
        "",
        "",
        f"def sink(b, h{''.join(', ' + v for v in vec)}):",
        '    """The logit that joins head h\'s softmax denominator (no value row), or nothing when SINK is False."""',
        *bodies["sink"],
    ]
    return "\n".join(out) + "\n"


def _and(w: _Writer, refs: list) -> str:
    text = w.operand(refs[0])
    for ref in refs[1:]:
        text = f"pw.logical_and({text}, {w.operand(ref)})"
    return text

