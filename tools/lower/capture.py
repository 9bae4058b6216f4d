"""The tracing child: import the user's file, trace their function, lower it, print the result as one JSON line.

Started by tools/lower/__init__.py (``python -m tools.lower.capture``) with a timeout, because tracing runs the
user's code: an import that hangs, crashes or exits takes this process down, never the bake, and the parent turns
what happened into one line. Nothing here writes a file.

The parameters become the kernel's inputs by this rule (the workspace README repeats it):
- a parameter with a default (``eps=1e-6``, ``temperature: float = 0.7``) is a constant of the kernel, traced at
  its default value;
- a tensor parameter is a row input of x's shape [M, N], except a vector [N] (broadcast over the rows) when its
  annotation says so (``w: "[N]"``; ``"[M, N]"`` forces a row) or, with no such annotation, when its name is one of
  ``ir.VECTOR_NAMES`` or ends in ``_weight``/``_bias``;
- ``*args`` and ``**kwargs`` are refused: each input needs a name.
The first row parameter is x; the function is traced on [M, N] = [6, 16] in bf16 with symbolic sizes (so that
``x.shape[-1]`` stays N), and the lowering is then checked against the function itself in float64 at another shape.

A GEMM (the class of a function that calls a matmul) is found by that same trace: its first matmul-family call
stops it (``MatmulFound``), and the function is traced again by the GEMM rule (``gemm_parameters``): the first two
tensor parameters are the operands a [M, K] and b [N, K], the others epilogue inputs, a row [M, N] by default, a
vector [N] as above, or one value per row [M] when annotated ``"[M]"`` (``"[M, 1]"``: traced in that shape) or
named in ``ir.PER_ROW_NAMES`` or ``*_row_scale``; any other annotation, a scalar's included, is refused. Sizes M, N,
K = 6, 16, 24, symbolic. The second trace watches the user's own calls (``SourceLines``): a matmul that is not the
first step on a and b^T as they come in, a second one, a batched one or one that is not K-major is refused there, on
the user's line, in the user's words (``a @ b``, not ``aten.mm``); tools/lower/convert.py then lowers the graph's head
and epilogue.

Output: ``{"ok": true, "ir": {...}}`` or ``{"ok": false, "stage": "import" | "call" | "lower", "error": "..."}``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import linecache
import math
import re
import sys
import traceback
import warnings
from pathlib import Path

from tools.lower.ir import GEMM_DIMS, PER_ROW_NAMES, VECTOR_NAMES

ROW_ANNOTATIONS = ("[M,N]", "[...,N]", "row")
SCALAR_ANNOTATIONS = ("[]", "[1]", "scalar")
VECTOR_ANNOTATIONS = ("[N]", "N", "vector")
PER_ROW_ANNOTATIONS = {"[M]": ["M"], "M": ["M"], "per_row": ["M"], "[M,1]": ["M", 1]}
TRACE_SHAPE, CHECK_SHAPE = (6, 16), (5, 40)
GEMM_TRACE, GEMM_CHECK = {"M": 6, "N": 16, "K": 24}, {"M": 5, "N": 40, "K": 12}  # distinct: a swap cannot trace
# The user-level torch functions that multiply matrices (their __name__ as a TorchFunctionMode sees them; `a @ b`
# arrives as Tensor.matmul): the GEMM head is one of HEADS; the others are refused by name.
HEADS = ("matmul", "__matmul__", "__rmatmul__", "mm", "addmm", "linear")
OTHER_PRODUCTS = ("bmm", "baddbmm", "addbmm", "einsum", "tensordot", "mv", "addmv", "dot", "vdot", "inner", "outer",
                  "ger", "addr", "chain_matmul", "multi_dot", "bilinear", "kron")
TRANSPOSES = ("t", "transpose", "permute", "swapaxes", "swapdims", "adjoint", "__get__")  # __get__: .T and .mT


class MatmulFound(Exception):
    """Raised by the first trace at a matmul-family call: the function is a GEMM, traced again by its rule."""
VERIFY_TOLERANCE = 1e-5  # relative: the function itself may compute in fp32 (`.float()`) on the float64 inputs


def tolerance(dtype) -> float:
    """The relative agreement the float64 check asks of an output of `dtype`: VERIFY_TOLERANCE, or one rounding of
    a narrower float when the function casts its result to one itself (`.to(torch.bfloat16)` stays bf16 on float64
    inputs, so the program's output is compared rounded to it)."""
    import torch

    return max(VERIFY_TOLERANCE, torch.finfo(dtype).eps if dtype.is_floating_point else 0.0)


def _annotation(p) -> str:
    """A parameter's annotation as its text without spaces or quotes ("" when it has none)."""
    return str(p.annotation).replace(" ", "").strip("'\"") if p.annotation is not p.empty else ""


def _signature(fn, hints: dict | None = None) -> tuple[list[tuple[str, str, object]], dict]:
    """([(name, annotation, tensor default or None)] of the tensor parameters in signature order, {name: default} of
    the constants), or ValueError for *args/**kwargs: what both parameter rules start from. `hints` ({name:
    annotation}) stand in for annotations the source lacks (the tests' corpus of real model code)."""
    import torch

    tensors, constants = [], {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"`{'*' if p.kind == p.VAR_POSITIONAL else '**'}{p.name}` has no fixed inputs: name "
                             "each tensor parameter")
        if p.kind == p.POSITIONAL_ONLY:  # the trace, the checks and the workspace's reference pass them by name
            raise ValueError(f"`{p.name}` is positional-only (the `/` in the def): the function is called with its "
                             "parameters by name; remove the `/`")
        note = (hints or {}).get(p.name, _annotation(p)).replace(" ", "")
        optional = p.default is None and SHAPE.fullmatch(_shape(note))  # w: "[N]" = None: an input, not a constant
        if p.default is not p.empty and not isinstance(p.default, torch.Tensor) and not optional:
            constants[p.name] = p.default
        else:
            tensors.append((p.name, note, p.default if p.default is not p.empty else None))
    return tensors, constants


NAME = re.compile(r"[A-Za-z_]\w*")
SHAPE = re.compile(r"\[.*\]")  # a shape annotation's bracket (a type annotation, torch.Tensor, is none)


def _shape(note: str) -> str:
    """An annotation's shape alone, without the dtype words it may carry ("[M, N] bool" -> "[M,N]")."""
    return note.replace("bool", "").replace("float", "")


INTEGER = re.compile(r"(torch\.)?(u?int(8|16|32|64)?|long|short)")  # an integer dtype word ("[M] int64", "long")


def _words(name: str, note: str) -> None:
    """Refuses (ValueError) an annotation with words the rule does not read, which it would otherwise drop and take
    the parameter by its name or as x's shape (`labels: "[M] int64"` was traced as float [M, N] soft labels): beside a
    shape it reads `bool` (a mask) or `float`; an integer dtype, with or without a shape, has no kernel form."""
    words = re.sub(r"^\[[^\]]*\]", "", note) if note.startswith("[") else note
    if INTEGER.fullmatch(words):
        raise ValueError(f"`{name}` is annotated {note!r}, an integer tensor (token ids, class indices), which no "
                         "kernel here reads: keep the step that uses it in PyTorch (a lookup such as "
                         "`logits.gather(-1, labels[:, None])`) and pass its result in, one value per row `\"[M]\"`")
    if note.startswith("[") and words not in ("", "bool", "float"):
        raise ValueError(f"`{name}` is annotated {note!r}, whose {words!r} the rule does not read: beside a shape it "
                         "takes `bool` (a mask) or `float`; write the shape alone (`\"[M, N]\"`) for the workspace's "
                         "dtype")


def _names(shape: str) -> list[str] | None:
    """The dim names of a shape annotation, "[B,S,H,D]" -> ["B", "S", "H", "D"] (the user's own names, at least two
    of them, none a number or "..."), or None: what N-D inputs are declared with (the module docstring's rule)."""
    found = re.fullmatch(r"\[([^\]]*)\]", shape)
    names = found.group(1).split(",") if found else []
    return names if len(names) >= 2 and all(NAME.fullmatch(n) or n == "1" for n in names[:-1]) and \
        NAME.fullmatch(names[-1]) and names != ["M", "N"] else None


def _dim_names(shape: str) -> list[str] | None:
    """Any bracket of dim names, "[B,S,1]" -> ["B", "S", "1"] (names or 1s, at least one name), or None: the form
    every N-D annotation takes, x's leading dims for one value per row included (``named`` sorts them out)."""
    found = re.fullmatch(r"\[([^\]]*)\]", shape)
    names = found.group(1).split(",") if found else []
    return names if names and all(NAME.fullmatch(n) or n == "1" for n in names) and any(
        NAME.fullmatch(n) for n in names) else None


def _width(shape: str) -> int:
    """r of a row annotated r times as wide as the output's rows, "[M, 2N]" (a gated MLP's input): 1 otherwise."""
    found = re.fullmatch(r"\[(M|\.\.\.),(\d+)\*?N\]", shape)
    return int(found.group(2)) if found else 1


def _mask_name(name: str) -> bool:
    return name == "mask" or name.endswith("_mask") or name.startswith("mask_")


def _not_epilogue(name: str, given: str) -> str:
    """The GEMM rule's refusal of a parameter its epilogue cannot take."""
    return (f"`{name}` ({given}) is not an input a GEMM's epilogue takes: C's shape `\"[M, N]\"`, a vector `\"[N]\"` "
            "or one value per row `\"[M]\"` / `\"[M, 1]\"`; a scalar (CLIP's logit_scale) is a float parameter, a "
            "constant of the kernel, or a `\"[M]\"` of one value")


def _kind(name: str, note: str, default: tuple[str, str], per_row: bool) -> tuple[str, str]:
    """(kind, why) of a tensor parameter (not a GEMM operand): its annotation first, then its name, else `default`;
    `per_row` (a GEMM's epilogue input) may be one value per row, and is refused (ValueError) as a scalar or any shape
    other than a row, a vector or one value per row."""
    _words(name, note)
    shape = _shape(note)
    if per_row and (shape in SCALAR_ANNOTATIONS or SHAPE.fullmatch(shape) and shape not in (
            *ROW_ANNOTATIONS, *VECTOR_ANNOTATIONS, *PER_ROW_ANNOTATIONS)):  # never read as C's shape
        raise ValueError(_not_epilogue(name, f"annotated {note!r}"))
    if shape in VECTOR_ANNOTATIONS:
        return "vector", f"annotated {note!r}"
    if shape in SCALAR_ANNOTATIONS:
        return "scalar", f"annotated {note!r}"
    if shape in PER_ROW_ANNOTATIONS:
        return "per_row", f"annotated {note!r}"
    if shape in ROW_ANNOTATIONS or _width(shape) > 1:
        return "row", f"annotated {note!r}"
    if SHAPE.fullmatch(shape) and _dim_names(shape) is None:  # never taken for x's shape
        raise ValueError(f"`{name}` is annotated {note!r}, a shape the row rule does not take: a row input is "
                         "`\"[M, N]\"` (or its dims' names, `\"[B, S, D]\"`), a vector `\"[N]\"`, a scalar "
                         "`\"[]\"`, one value per row `\"[M]\"` or `\"[M, 1]\"` (or x's leading dims' names, "
                         "`\"[B, S]\"`)")
    if SHAPE.fullmatch(shape):  # dim names ("[B, S, D]", "[B, S]"): `named` gives the kind
        return "row", f"annotated {note!r}"
    if name in VECTOR_NAMES or name.endswith(("_weight", "_bias")):
        return "vector", "by its name"
    if per_row and (name in PER_ROW_NAMES or name.endswith("_row_scale")):
        return "per_row", "by its name"
    return default


def parameters(fn, hints: dict | None = None) -> tuple[list[dict], dict]:
    """(tensor inputs [{name, kind, why, dtype}] in signature order, constants {name: default}) by the rule above;
    ValueError to refuse."""
    import torch

    tensors, constants = _signature(fn, hints)
    inputs = []
    for name, note, default in tensors:
        if default is not None:  # a tensor default (a learned scalar, `alpha=torch.tensor(1.0)`): a runtime input
            kind, why = ("scalar", "a one-element tensor default") if default.numel() == 1 else (
                "vector", "a [N] tensor default") if default.dim() == 1 else ("row", "a tensor default")
        else:
            kind, why = _kind(name, note, ("row", "x's shape (the default)"), per_row=False)
        mask = "bool" in note or (_mask_name(name) and "float" not in note) or (
            default is not None and default.dtype == torch.bool)
        spec = {"name": name, "kind": kind, "why": why + (", a boolean mask" + (
            " by its name" if "bool" not in note else "") if mask else ""), "dtype": "bool" if mask else "float"}
        if kind == "scalar":  # a 0-d tensor, or one of shape [1]: the shape the function takes it in
            spec["dims"] = [1] if "[1]" in note or default is not None and default.dim() == 1 else []
        if kind == "per_row":  # [M] or [M, 1]: the shape the function takes it in
            spec["dims"] = list(PER_ROW_ANNOTATIONS[_shape(note)])
        if _width(_shape(note)) > 1:  # traced [M, rN]; the output's rows are N
            spec["width"] = _width(_shape(note))
        inputs.append(spec)
    if not any(i["kind"] == "row" for i in inputs):
        raise ValueError("no parameter has x's shape [M, N] (every tensor parameter is a [N] vector or a scalar by its "
                         "name, default or annotation); annotate the main input `x: \"[M, N]\"`")
    named(inputs, {name: note for name, note, _ in tensors})
    return inputs, constants


def named(inputs: list[dict], notes: dict) -> None:
    """The N-D rule, in place: when x is annotated with dim names (``q: "[B, S, H, D]"``), its rows are its last dim
    D over the leading dims (M = B*S*H), and every input annotated with names is one of x's dims: the same names are
    another row input; fewer, in x's order and ending in D (``cos: "[S, D]"``), a row input broadcast over the
    missing dims (the names say which: the trace gives each dim its own size, so a function that broadcasts
    otherwise fails there or in the float64 check), and a dim written 1 is one of size 1 (an attention mask's
    ``"[B, 1, S, N]"``), broadcast the same way; ``[D]`` alone is a vector. Each such input keeps its ``names``."""
    x = next(i for i in inputs if i["kind"] == "row")
    dims = _names(_shape(notes.get(x["name"], "")))
    for spec in inputs:
        shape = _shape(notes.get(spec["name"], ""))
        names = _dim_names(shape)
        if names is None or spec is x or spec["kind"] != "row" or shape in ROW_ANNOTATIONS or _width(shape) > 1:
            continue
        kept = [n for n in names if n != "1"]
        if dims is not None and kept and dims[-1] not in kept and kept == [n for n in dims[:-1] if n in kept]:
            # x's leading dims, or some of them in x's order (1s where the function keeps a dim of size 1): one
            # value per row, the same for the rows of the dims it leaves out ([B] over [B, C, H, W])
            left = [n for n in dims[:-1] if n not in kept]
            spec.update(kind="per_row", names=names, why=f"annotated {notes[spec['name']]!r}, one value per row"
                        + (f", broadcast over {', '.join(left)}" if left else ""))
            continue
        if dims is not None and names == dims[-1:]:  # x's last dim alone: a vector
            spec.update(kind="vector", why=f"annotated {notes[spec['name']]!r}")
            continue
        if _names(_shape(notes[spec["name"]])) is None:
            raise ValueError(f"`{spec['name']}` is annotated {notes[spec['name']]!r}, a shape the row rule does not "
                             "take: neither x's dims with some left out (ending in its last dim) nor x's leading dims "
                             f"(one value per row: {_lead_words(x, dims)})")
        if dims is None:
            raise ValueError(f"`{spec['name']}` is annotated with dim names {notes[spec['name']]!r} but x "
                             f"(`{x['name']}`) is not: annotate x with all its dims, e.g. `{x['name']}: "
                             f"\"[{', '.join(['B', *names[-2:]] if names[0] != 'B' else ['T', *names])}]\"`")
        extra = [n for n in names if n not in dims and n != "1"]  # "1": a dim of size 1, broadcast like a missing one
        if extra:
            raise ValueError(f"`{spec['name']}` {notes[spec['name']]} has dims that x (`{x['name']}` "
                             f"{notes[x['name']]}) does not have ({', '.join(extra)}); every tensor of the kernel is "
                             "x's rows or broadcast over some of x's dims: tensors with other dims (a GQA k with "
                             "fewer heads than q) are separate calls, one workspace each")
        kept = [n for n in dims if n in names]
        if kept != [n for n in names if n != "1"] or names[-1] != dims[-1]:
            raise ValueError(f"`{spec['name']}` {notes[spec['name']]} is not x's dims {notes[x['name']]} with some left "
                             f"out: name its dims as x does, in x's order, ending in {dims[-1]} (its rows are x's "
                             "last dim)")
        spec.update(kind="row", names=names, why=f"annotated {notes[spec['name']]!r}" + (
            f", broadcast over {', '.join(n for n in dims if n not in names)}" if names != dims else ""))
    if dims is not None:
        if len(dims) > 5:
            raise ValueError(f"x (`{x['name']}`) has {len(dims)} dims; at most 5 lower (rows over 4 leading dims)")
        x["names"] = dims
        for spec in inputs:
            if spec["kind"] == "row" and "names" not in spec:
                spec["names"] = dims


def _lead_words(x: dict, dims: list | None) -> str:
    """How to annotate one value per row of x, in x's own dim names when it has them."""
    if dims is None:
        return f"`\"[M]\"` or `\"[M, 1]\"` beside x (`{x['name']}`) of [M, N]"
    lead = ", ".join(dims[:-1])
    return f"`\"[{lead}]\"` or `\"[{lead}, 1]\"` beside x (`{x['name']}`) of [{', '.join(dims)}]"


def _lengths(constants: dict) -> list[int]:
    """The function's integer constants that may be lengths along the row (``head_dim=128``), longest first."""
    return sorted({v for v in constants.values() if isinstance(v, int) and not isinstance(v, bool) and 2 <= v <= 1024},
                  reverse=True)


def sizes_of(inputs: list[dict], constants: dict, check: bool = False, heads: int | None = None) -> dict:
    """The sizes an example is made at: M and N, each of x's named dims its own (2, 3, 5, 7 in the trace; 4, 3, 2, 5
    in the check: no two alike, so a broadcast over the wrong dim cannot pass), N a multiple of the function's
    integer constants (``head_dim=64``: a view that splits the row into heads works at both sizes), and with
    `heads` its [N] vectors one head long ("V")."""
    multiple = math.lcm(8, *_lengths(constants))
    multiple = multiple if multiple <= 4096 else 8
    m, n = (CHECK_SHAPE if check else TRACE_SHAPE)[0], (5 if check else 2) * multiple
    made = {"M": m, "N": n, "1": 1, **({"V": heads} if heads else {})}
    x = next(i for i in inputs if i["kind"] == "row")
    for k, name in enumerate(x.get("names", [])[:-1]):
        made[name] = (4, 3, 2, 5)[k] if check else (2, 3, 5, 7)[k]
    if "names" in x:
        made[x["names"][-1]] = n
        made["M"] = math.prod(made[d] for d in x["names"][:-1])
    return made


def gemm_parameters(fn, hints: dict | None = None) -> tuple[list[dict], dict]:
    """A GEMM's (tensor inputs [{name, kind, why, dims}], constants) by the GEMM rule above; ValueError to refuse."""
    tensors, constants = _signature(fn, hints)
    if len(tensors) < 2:
        raise ValueError(f"a matmul needs its operands as the first two tensor parameters, a [M, K] and b [N, K]; "
                         f"{fn.__name__} has {len(tensors)}")
    inputs = [{"name": tensors[0][0], "kind": "a", "why": "the first tensor parameter", "dims": list(GEMM_DIMS["a"])},
              {"name": tensors[1][0], "kind": "b", "why": "the second tensor parameter", "dims": list(GEMM_DIMS["b"])}]
    for name, note, default in tensors[2:]:
        if default is not None:  # a learned scalar (`alpha=torch.tensor(1.0)`): not an epilogue input (_kind)
            raise ValueError(_not_epilogue(name, "a tensor default"))
        kind, why = _kind(name, note, ("row", "C's shape (the default)"), per_row=True)
        dims = PER_ROW_ANNOTATIONS.get(note, GEMM_DIMS[kind]) if kind == "per_row" else GEMM_DIMS[kind]
        inputs.append({"name": name, "kind": kind, "why": why, "dims": list(dims)})
    return inputs, constants


def dims_text(spec: dict) -> str:
    """An input's shape in words: "[M, N]", "[N]", or a GEMM input's dims ("[M, 1]")."""
    dims = spec.get("names") or spec.get("dims") or (["M", "N"] if spec["kind"] == "row" else ["N"])
    return f"[{', '.join(map(str, dims))}]"


def example(inputs: list[dict], sizes: dict, dtype, seed: int):
    """Standard-normal tensors for `inputs` at `sizes` ({"M", "N"[, "K"]}): each input's dims, or its kind's."""
    import torch

    g = torch.Generator().manual_seed(seed)
    made = {}
    for i in inputs:
        dims = i.get("names") or (i["dims"] if "dims" in i else ["M", "N"] if i["kind"] == "row" else
                                  ["V" if "V" in sizes else "N"])
        shape = [sizes[d] if isinstance(d, str) else d for d in dims]
        if i.get("width", 1) > 1:  # a wide row: [M, r*N]
            shape[-1] *= i["width"]
        t = torch.randn(shape, generator=g)
        made[i["name"]] = t > 0 if i.get("dtype") == "bool" else t.to(dtype)
    return made


def matmul_check(func, args, kwargs, operands, state) -> None:
    """At a matmul-family call of a GEMM's trace: refuse (convert.Refused, the user's line set by the caller)
    unless it is the first one and multiplies the parameters a and b^T as they come in. `operands` is the traced
    (a, b) and their names; `state` holds the transposes of b made so far and the matmuls seen."""
    from tools.lower.convert import Refused

    (a, b), (a_name, b_name) = operands
    name = getattr(func, "__name__", str(func))
    shown = {"linear": "F.linear", "matmul": "torch.matmul (`@`)", "__matmul__": "`@`", "__rmatmul__": "`@`"}.get(
        name, f"torch.{name}")
    state["matmuls"] += 1
    if state["matmuls"] > 1:
        raise Refused(f"{shown} is a second matmul; a GEMM lowers one matmul, at the head, and a pointwise epilogue "
                      "on its result: split the function (one workspace per matmul)")
    if name not in HEADS:
        raise Refused(f"{shown} is a batched or other matrix product; the GEMM head is one 2-D product "
                      f"{a_name} [M, K] @ {b_name} [N, K]^T: write `{a_name} @ {b_name}.T` or F.linear({a_name}, "
                      f"{b_name})" + ("; a dot product per row (`\"bd,bd->b\"`) is a row reduction: `(x * y).sum(-1)`"
                                      if name == "einsum" else ""))
    args = list(args) + list((kwargs or {}).values())
    first, second = (args[1], args[0]) if name == "__rmatmul__" else (args[1], args[2]) if name == "addmm" else \
        (args[0], args[1])
    transposed = any(second is t for t in state["transposes"])
    if name == "linear":  # F.linear(a, b) multiplies by b^T itself
        transposed, second = second is b, None if second is b else second
    if first is a and transposed:
        return
    if first is a and (second is b or name == "linear"):
        raise Refused(f"{shown} multiplies by {b_name} as it comes in, which is not K-major: {b_name} is [N, K] "
                      f"(nn.Linear's weight layout) and the product is {a_name} @ {b_name}.T; pass the [K, N] weight "
                      "transposed (w.T.contiguous(), once) and write the matmul on it")
    raise Refused(f"{shown} is not at the head: a GEMM's first step multiplies its first two tensor parameters as "
                  f"they come in (here `{a_name} @ {b_name}.T`, or F.linear with them), and everything after it is "
                  "the epilogue; reorder the parameters or move this work after the matmul")


def calls_a_matmul(fn, inputs, constants) -> bool:
    """Whether the function reaches a matmul-family call when every tensor parameter is a matrix: the second probe,
    for a function the first trace could not run (`w @ x.T` fails on a `w` given as a vector by its name)."""
    import torch
    from torch.overrides import TorchFunctionMode

    class Probe(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") in HEADS + OTHER_PRODUCTS:
                raise MatmulFound(func.__name__)
            return func(*args, **(kwargs or {}))

    tensors = {i["name"]: torch.randn(TRACE_SHAPE) for i in inputs}
    try:
        with Probe():
            fn(**tensors, **constants)
    except MatmulFound:
        return True
    except Exception:  # noqa: BLE001 -- not a GEMM either: the first trace's error stands
        return False
    return False


def head_sizes(inputs: list[dict], constants: dict) -> list[int]:
    """The head lengths a function may view its rows as (its integer constants, ``head_dim=128``), longest first:
    the [N] vectors of a function that normalises heads are one head long ([c]), so the first trace, which makes
    them x's row long, fails, and the trace is tried again with them [c] (Converter.split_heads finds the view)."""
    return _lengths(constants) if any(i["kind"] == "vector" for i in inputs) else []


def user_line(folder: str) -> str | None:
    """The user's `file:line` that made the torch call being traced (the innermost frame of a file in `folder`), also
    set as the stack trace of the aten nodes the call makes; None when no user frame is on the stack. Called from a
    TorchFunctionMode's __torch_function__."""
    import torch.fx.traceback as fx_traceback

    frame = sys._getframe(1)
    while frame is not None and not frame.f_code.co_filename.startswith(folder):
        frame = frame.f_back
    loc = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}" if frame is not None else None
    if loc:
        fx_traceback.current_meta["stack_trace"] = loc
    return loc


@contextlib.contextmanager
def _plain_python():
    """The user's module imported with TorchScript off, so that a ``@torch.jit.script`` function (Megatron's
    bias_gelu) is the Python function it was written as, which the trace reads (a ScriptFunction has no signature)."""
    import torch.jit._state as jit_state

    jit_state.disable()
    try:
        with warnings.catch_warnings():  # torch's deprecation of torch.jit.script, about the user's code, not to them
            warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated", category=DeprecationWarning)
            yield
    finally:
        jit_state.enable()


@contextlib.contextmanager
def _sizes_stay_symbolic():
    """math.sqrt of a size (``1 / math.sqrt(x.size(-1))``) traced as ``size ** 0.5``, a value of the kernel: math's
    own turns the symbolic size into the traced number, a constant that would be wrong at every other size."""
    import torch

    sqrt = math.sqrt
    math.sqrt = lambda v: v ** 0.5 if isinstance(v, (torch.SymInt, torch.SymFloat)) else sqrt(v)
    try:
        yield
    finally:
        math.sqrt = sqrt


def trace(fn, inputs, constants, folder: str, gemm: bool = False, heads: int | None = None, dtype=None):
    """make_fx over the function on bf16 inputs (or `dtype`'s), each aten node tagged with the user's file:line that
    made it. Not `gemm`: a matmul-family call raises MatmulFound; `gemm`: each one goes through matmul_check."""
    import torch
    import torch.fx.traceback as fx_traceback
    from torch._decomp import get_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.overrides import TorchFunctionMode

    from tools.lower.convert import DECOMPOSE, REWRITES, SELECTIONS, Refused

    names = [i["name"] for i in inputs]
    state = {"transposes": [], "matmuls": 0, "operands": None}

    class SourceLines(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            loc = user_line(folder)
            name = getattr(func, "__name__", "")
            if name.removesuffix("_") in SELECTIONS or name == "embedding":  # before it runs on traced values
                raise Refused(f"torch.{name} selects, orders or draws elements (not a pointwise map or a row "
                              "reduction), which these kernels do not lower: keep it in PyTorch and lower the rest "
                              "as its own function", loc)
            if name == "prelu" and not gemm:  # F.prelu's own decomposition fails on symbolic sizes (numel())
                x, weight = (list(args) + list((kwargs or {}).values()))[:2]
                if weight.dim() == 1 and x.dim() > 2:  # one weight per channel, dim 1: not the row's last dim
                    raise Refused("F.prelu with a weight per channel of a rank > 2 tensor (dim 1, not the row) does "
                                  "not lower; pass x as [M, C] rows", loc)
                return torch.where(x > 0, x, weight * x)
            if name in HEADS or name in OTHER_PRODUCTS:
                if not gemm:
                    raise MatmulFound(name)
                try:
                    matmul_check(func, args, kwargs, state["operands"], state)
                except Refused as err:
                    err.line = loc
                    raise
            out = func(*args, **(kwargs or {}))
            b = state["operands"][0][1] if gemm else None
            if gemm and name in TRANSPOSES and args and args[0] is b and getattr(out, "shape", None) is not None \
                    and tuple(out.shape) == tuple(b.shape)[::-1]:
                state["transposes"].append(out)  # held, so that its id is not reused
            return out

    def call(*tensors):
        if gemm:
            state["operands"] = (tensors[:2], names[:2])
        with SourceLines(), _sizes_stay_symbolic():
            return fn(**dict(zip(names, tensors)), **constants)

    sizes = GEMM_TRACE if gemm else sizes_of(inputs, constants, heads=heads)
    args = list(example(inputs, sizes, dtype or torch.bfloat16, 0).values())
    with fx_traceback.preserve_node_meta():
        table = get_decompositions(DECOMPOSE) | REWRITES
        gm = make_fx(call, decomposition_table=table, tracing_mode="symbolic")(*args)
    lines = {n.name: n.meta["stack_trace"] for n in gm.graph.nodes if n.meta.get("stack_trace")}
    return gm, lines


def exact_constants(gm, retrace) -> dict:
    """{graph name: value} of the one-element constants the function made in its input's dtype
    (``torch.tensor(hidden_size**0.5, dtype=x.dtype)``, Gemma's embedding normalizer), to float32 precision: the bf16
    trace holds them rounded to bf16, which is right for a bf16 workspace only, so `retrace()` traces the function
    once more on float32 inputs and its constants of the same names are read there. {} when there are none, or when
    the second trace does not make the same constants (the float64 check then holds the bf16 values to account)."""
    import torch

    def scalars(module, dtype) -> dict:
        found = {n.target: getattr(module, n.target) for n in module.graph.nodes if n.op == "get_attr"}
        return {k: t for k, t in found.items() if isinstance(t, torch.Tensor) and t.numel() == 1 and t.dtype == dtype}

    rounded = scalars(gm, torch.bfloat16)
    if not rounded:
        return {}
    try:
        wide = scalars(retrace(), torch.float32)
    except Exception:  # noqa: BLE001 -- the function may refuse float32 inputs; the bf16 values stand
        return {}
    if set(wide) != set(rounded) or any(float(wide[k].to(torch.bfloat16)) != float(rounded[k]) for k in rounded):
        return {}
    return {k: float(v) for k, v in wide.items()}


def source_text(folder: str, loc: str) -> str:
    name, _, line = loc.rpartition(":")
    return linecache.getline(str(Path(folder) / name), int(line)).strip()


def lower(path: str, function: str, hints: dict | None = None) -> dict:
    """Trace and lower `function` (module docstring). A refusal also says which built-in pattern is nearest
    (`near`: the class the trace reached, or None for a selection, which no pattern computes), for the hint."""
    result = _lower(path, function, hints)
    if not result["ok"] and "near" not in result:
        result["near"] = None
    if not result["ok"] and ("selects, orders or draws" in result["error"] or "running (prefix) op" in
                             result["error"]):
        result["near"] = None  # no pattern computes a selection or a scan
    return result


def _near(gm) -> str:
    """The pattern nearest a traced graph that did not lower: reduction if it reduces over a dim, else elementwise."""
    reduces = ("sum", "amax", "amin", "max", "min", "mean", "var", "std", "prod", "logsumexp")
    return "reduction" if any(getattr(getattr(n.target, "overloadpacket", None), "__name__", "") in reduces
                              for n in gm.graph.nodes) else "elementwise"


def _lower(path: str, function: str, hints: dict | None = None) -> dict:
    folder = str(Path(path).resolve().parent) + "/"
    try:
        sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(Path(path).stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        with _plain_python():
            spec.loader.exec_module(module)
        fn = getattr(module, function)
        fn = getattr(fn, "_torchdynamo_orig_callable", fn)  # @torch.compile: the function it compiles
    except BaseException as err:  # noqa: BLE001 -- the user's import may raise anything, SystemExit included
        tb = traceback.extract_tb(err.__traceback__)
        where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(tb) if f.filename.startswith(folder)),
                     Path(path).name)
        return {"ok": False, "stage": "import", "error": f"importing {Path(path).name} failed at {where}: "
                                                         f"{type(err).__name__}: {err}".strip()}
    from tools.lower import attention

    decode = attention.lower(fn, function, path, folder, hints)  # decode attention has its own rule (its docstring)
    if decode is not None:
        return decode
    if attention.looks_like(fn, hints) and attention.mentions_softmax(fn):  # attention, but not in the decode layout
        result = _rows(fn, function, path, folder, hints)
        if not result["ok"] and result["stage"] == "call":
            result["error"] += (f"; if `{function}` is decode attention, its tensors are q [B, Hq, D], k_cache and "
                                "v_cache [B, S, Hkv, D] and seq_lens [B] int32, in any order (a paged cache or "
                                "prefill is not served yet)")
        return result
    return _rows(fn, function, path, folder, hints)


def _rows(fn, function: str, path: str, folder: str, hints: dict | None):
    """The row and GEMM rules (the module docstring) for a function that is not decode attention."""
    import torch

    from tools.lower import ir
    from tools.lower.convert import Refused, convert

    try:
        inputs, constants = parameters(fn, hints)
        rule_error = None
    except ValueError as err:  # no row input: still a GEMM if it calls a matmul (the probe below treats all as rows)
        rule_error = f"{err}{_where(fn, folder)}"
        try:
            inputs, constants = gemm_parameters(fn, hints)
        except ValueError:
            return {"ok": False, "stage": "lower", "error": rule_error}
        inputs = [{"name": i["name"], "kind": "row", "why": ""} for i in inputs]
    gemm, heads = False, None
    try:
        with warnings.catch_warnings():  # `w.T` on a GEMM operand that this first rule takes for a [N] vector
            warnings.filterwarnings("ignore", message="The use of `x.T` on tensors of dimension other than 2")
            gm, lines = trace(fn, inputs, constants, folder)
    except MatmulFound:
        gemm = True
    except Refused as err:  # a call the trace refuses by name (a selection, F.prelu per channel)
        return {**refused(err, folder), "near": None}
    except Exception as err:  # noqa: BLE001 -- whatever the user's function raised while traced
        gemm = calls_a_matmul(fn, inputs, constants)  # it may have failed on a GEMM operand named like a vector
        gm = None
        for c in head_sizes(inputs, constants) if not gemm and rule_error is None else []:
            try:  # its vectors one head long: a QK-norm's weight [head_dim]
                gm, lines = trace(fn, inputs, constants, folder, heads=c)
                heads = c
                break
            except Exception:  # noqa: BLE001 -- not this head length; the first error stands
                continue
        if not gemm and gm is None:
            return called(function, inputs, folder, err) if rule_error is None else {
                "ok": False, "stage": "lower", "error": rule_error}
    if rule_error is not None and not gemm:
        return {"ok": False, "stage": "lower", "error": rule_error}
    if gemm:
        try:
            inputs, constants = gemm_parameters(fn, hints)
        except ValueError as err:  # the GEMM parameter rule's refusal
            return {"ok": False, "stage": "lower", "error": f"{err}{_where(fn, folder)}"}
        try:
            gm, lines = trace(fn, inputs, constants, folder, gemm=True)
        except Refused as err:
            return {**refused(err, folder), "near": "gemm"}
        except Exception as err:  # noqa: BLE001 -- as above
            return {**called(function, inputs, folder, err), "near": "gemm"}
    branch = size_branch(gm, folder)
    if branch:
        return {**refused(branch, folder), "near": None}
    exact = exact_constants(gm, lambda: trace(fn, inputs, constants, folder, gemm=gemm, heads=heads,
                                              dtype=torch.float32)[0])
    try:
        nodes, outputs, views, heads = convert(gm, inputs, torch.bfloat16, lines, gemm=gemm, exact=exact)
    except Refused as err:
        return {**refused(err, folder), "near": "gemm" if gemm else _near(gm)}
    program = {"function": function, "file": Path(path).name, "inputs": inputs, "views": views,
               "constants": {k: v for k, v in constants.items() if isinstance(v, (int, float))},
               "nodes": nodes, "outputs": outputs, **({"heads": heads} if heads else {})}
    if gemm:  # the head, and the user's line that made it (the matmul node of the graph)
        program["head"] = ir.HEAD
        program["head_line"] = next((lines.get(n.name) for n in gm.graph.nodes if getattr(n.target, "__name__", "")
                                     in ("mm.default", "addmm.default")), None)
    program["class"] = "gemm" if gemm else "reduction" if ir.reductions(program) else "elementwise"
    program["source"] = {loc: source_text(folder, loc) for loc in sorted({n["line"] for n in nodes if n["line"]}
                                                                         | {program.get("head_line")} - {None})}
    ir.check(program)
    err = verify(fn, program, inputs, constants)
    if err:
        return {"ok": False, "stage": "lower", "error": err}
    rank = bound_rank(fn, program, inputs, constants)
    if rank:
        program["rank"] = rank
    return {"ok": True, "ir": program}


SCALED = (64, 1024)  # what size_branch multiplies the traced sizes by: N from 16 to 16384, and M with it


def size_branch(gm, folder: str):
    """A convert.Refused for a function that branches on its sizes (``if x.shape[-1] > 1024:``), or None. The trace
    holds one branch, and the shape environment the guard that chose it, made on the user's line (N <= 1024); every
    size scaled by SCALED keeps the ratios and divisibility their views need, so such a guard that fails there is a
    choice the function makes by size, which one kernel for every size cannot follow. Guards torch makes inside a
    view or a split (a head length equal to a vector's) are its own, not the user's, and are not read."""
    import sympy

    from tools.lower.convert import Refused

    env = getattr(gm, "shape_env", None)
    traced = getattr(env, "backed_var_to_val", None) or getattr(env, "var_to_val", {})  # each size symbol's value
    for guard in env.guards if env is not None else []:
        frame = getattr(guard.sloc, "framework_loc", None)
        if not str(getattr(frame, "filename", "")).startswith(folder):  # torch's own (a view's sizes), not a branch
            continue
        for k in SCALED:
            if guard.expr.xreplace({s: traced[s] * k for s in guard.expr.free_symbols}) is sympy.false:
                line = f"{Path(frame.filename).name}:{frame.lineno}"
                if isinstance(guard.expr, sympy.Eq) and any(a.is_number for a in guard.expr.args):  # N == 40
                    return Refused("uses an input size as a Python number (float(d), int(d), a math function of "
                                   "it), which the trace fixes to the traced size, a constant that is wrong at every "
                                   "other size; compute it with arithmetic on the size (`x.shape[-1] * 1.0`, `x.shape[-1] ** "
                                   "0.5`, math.sqrt), which the kernel evaluates at each size", line)
                return Refused("branches on its input sizes: the trace took the branch of its small sizes, and larger "
                               "ones take another, which one kernel for every size cannot follow; make the choice a "
                               "parameter with a default (a constant of the kernel), or lower each branch as its own "
                               "function", line)
    return None


def _where(fn, folder: str) -> str:
    """" at file:line (`def ...`)": the user's def line, for a refusal of the parameters themselves."""
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return ""
    file = inspect.getsourcefile(fn) or ""
    return f" at {Path(file).name}:{start} (`{lines[0].strip()}`)" if file.startswith(folder) else ""


def refused(err, folder: str) -> dict:
    """The one line for a convert.Refused: its words, then the user's line and its text."""
    where = f" at {err.line} (`{source_text(folder, err.line)}`)" if err.line else ""
    return {"ok": False, "stage": "lower", "error": f"{err}{where}"}


def called(function: str, inputs: list[dict], folder: str, err: Exception) -> dict:
    """The one line for an exception the user's function raised while traced."""
    described = ", ".join(f"{i['name']} {dims_text(i)}" for i in inputs)
    tb = traceback.extract_tb(err.__traceback__)
    where = next((f" at {Path(f.filename).name}:{f.lineno} (`{f.line}`)" for f in reversed(tb)
                  if f.filename.startswith(folder)), "")
    message = str(err).strip().splitlines()[0] if str(err).strip() else ""
    message = re.sub(r"\bs\d+\b", "<size>", message)[:300]  # the tracer's size symbols (s75) mean nothing to a user
    if "data-dependent" in message:  # `if torch.isinf(x).any():`, `.item()` used as a number: one trace, no values
        return {"ok": False, "stage": "call",
                "error": f"calling {function}({described}){where} needs a tensor's values in Python (a branch on them, "
                         "or a number made of them), which a kernel traced once cannot follow: compute both sides and "
                         "choose with torch.where, or keep that step in PyTorch"}
    integer = re.search(r"int(32|64)", message) and "index" in message.lower()  # gather's, cross_entropy's labels
    ranks = "unpack" in message or "dimension" in message.lower() or "index" in message.lower() or \
        "invalid for input" in message
    hint = ("every parameter is traced as a float (or bool) tensor: an integer input (token ids, class indices) has no "
            "kernel form; keep the step that reads it in PyTorch (`logits.gather(-1, labels[:, None])`) and pass its "
            "result in, one value per row `\"[M]\"`" if integer else "the parameters are traced as [M, N] rows, [N] vectors (by name or `w: \"[N]\"`) and one-element scalars "
            "(`alpha: \"[]\"`); an input read in parts beside [N] vectors is annotated `x: \"[M, 2N]\"`; a function "
            "of rank 3 or more names x's dims (`q: \"[B, S, H, D]\"`) and those of each input it broadcasts "
            "(`cos: \"[S, D]\"`)"
            if ranks else "a boolean mask is traced as bool when it is named `mask` or `*_mask`, or annotated "
            "`m: bool`" if "bool" in message.lower() else "if a parameter is a [N] vector, name it weight/bias or "
            "annotate it `w: \"[N]\"`; a one-element scalar, `alpha: \"[]\"`")
    return {"ok": False, "stage": "call",
            "error": f"calling {function}({described}) failed{where}: {type(err).__name__}: {message}; {hint}"}


def verify(fn, program, inputs, constants) -> str | None:
    """The lowered program against the function itself, float64, at a shape the trace did not see: None if equal."""
    import torch

    from tools.lower import ir

    sizes = GEMM_CHECK if ir.is_gemm(program) else sizes_of(inputs, constants, check=True, heads=program.get("heads"))
    values = example(inputs, sizes, torch.float64, 1)
    try:
        want = fn(**values, **constants)
    except Exception as err:  # noqa: BLE001 -- the user's code: it traced, yet fails on real float64 tensors
        return (f"the function traced, but calling it on float64 inputs of sizes {sizes} (the lowering's check) "
                f"failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
    got = ir.interpret(program, values)
    want, got = (want if isinstance(want, (tuple, list)) else (want,)), (got if isinstance(got, tuple) else (got,))
    for i, (w, g) in enumerate(zip(want, got)):
        if w.shape != g.shape:
            return f"output {i} has shape {list(w.shape)} at another size, the lowering {list(g.shape)}"
        if _differs(w, g):
            return (f"the lowering does not reproduce output {i} at other sizes {sizes} (it depends on "
                    "the sizes in a way the trace fixed); please report it")
    return None


def _differs(want, got) -> bool:
    """Whether the lowering's output `got` is not the function's `want` (same shape), in float64: the same
    non-finite places, and the finite rest within the tolerance of want's dtype (relative, by norm)."""
    import torch

    tol, w, g = tolerance(want.dtype), want.double(), got.to(want.dtype).double()
    both = torch.isfinite(w) & torch.isfinite(g)
    return not torch.equal(torch.isfinite(w), torch.isfinite(g)) or \
        bool((w[both] - g[both]).norm() > tol * max(1e-30, w[both].norm().item()))


def bound_rank(fn, program, inputs, constants) -> int | None:
    """x's traced rank (2) when the function computes other rows at rank 3, else None.

    run() takes x [..., N] of any rank as rows of its last dim (host.rows_nd), which is what the function does when it
    names dims from the end (``x.mean(-1)``, ``x[..., :d]``). One that names them by position (``x.mean(dim=1)``,
    ``x[:, :d]``) reduces or slices another dim when x has one more: its program holds for the traced rank only, and
    the cells refuse x of another (lowered.RANK). The test is the function itself, float64, on the check sizes' rows
    with a leading dim split off ([M, N] as [2, M/2, N]): it must raise, or give the lowering's rows in x's leading
    shape (as host.rows_nd returns them). The dims in the traced graph cannot tell: aten writes x[..., :d] and
    F.layer_norm's reduction with positional dims too."""
    import torch

    from tools.lower import decode, ir

    if ir.is_gemm(program) or decode.is_decode(program) or any("names" in i for i in inputs):
        return None  # a GEMM's operands are 2-D; inputs with named dims have the rank the user wrote
    sizes = sizes_of(inputs, constants, check=True, heads=program.get("heads"))
    values = example(inputs, sizes, torch.float64, 2)
    got = ir.interpret(program, values)
    got = got if isinstance(got, tuple) else (got,)
    m = sizes["M"]
    lead = (2, m // 2) if m % 2 == 0 else (1, m)
    stacked = {i["name"]: values[i["name"]].reshape(*lead, -1) if i["kind"] == "row" else values[i["name"]]
               for i in inputs}
    try:
        want = fn(**stacked, **constants)
    except Exception:  # noqa: BLE001 -- the function does not take x of rank 3 (x.T, a 2-D view): rank-bound
        return 2
    want = want if isinstance(want, (tuple, list)) else (want,)
    for w, g in zip(want, got):  # each output as run() returns it at rank 3: x's leading dims, then the row's
        if not isinstance(w, torch.Tensor) or tuple(w.shape) != (*lead, *g.shape[1:]) or \
                _differs(w.reshape(g.shape), g):
            return 2
    return None


def main() -> None:
    request = json.loads(sys.argv[1])
    try:
        result = lower(request["path"], request["function"])
    except Exception as err:  # noqa: BLE001 -- a lowering bug must still come back as one line, with the user's line
        folder = str(Path(request["path"]).resolve().parent) + "/"
        where = next((f" at {Path(f.filename).name}:{f.lineno} (`{f.line}`)" for f in
                      reversed(traceback.extract_tb(err.__traceback__)) if f.filename.startswith(folder)), "")
        result = {"ok": False, "stage": "lower", "error": f"internal error while lowering{where} (please report it): "
                                                          f"{type(err).__name__}: {err}".splitlines()[0]}
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
