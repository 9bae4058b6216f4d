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

Output: ``{"ok": true, "ir": {...}}`` or ``{"ok": false, "stage": "import" | "call" | "lower", "error": "..."}``.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import linecache
import sys
import traceback
from pathlib import Path

from tools.lower.ir import VECTOR_NAMES

ROW_ANNOTATIONS = ("[M,N]", "[...,N]", "row")
VECTOR_ANNOTATIONS = ("[N]", "N", "vector")
TRACE_SHAPE, CHECK_SHAPE = (6, 16), (5, 40)
VERIFY_TOLERANCE = 1e-5  # relative: the function itself may compute in fp32 (`.float()`) on the float64 inputs


def parameters(fn) -> tuple[list[dict], dict]:
    """(tensor inputs [{name, kind, why}], constants {name: default}) by the rule above; ValueError to refuse."""
    inputs, constants = [], {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"`{'*' if p.kind == p.VAR_POSITIONAL else '**'}{p.name}` has no fixed inputs: name "
                             "each tensor parameter")
        if p.default is not p.empty:
            constants[p.name] = p.default
            continue
        note = str(p.annotation).replace(" ", "").strip("'\"") if p.annotation is not p.empty else ""
        if note in VECTOR_ANNOTATIONS:
            kind, why = "vector", f"annotated {note!r}"
        elif note in ROW_ANNOTATIONS:
            kind, why = "row", f"annotated {note!r}"
        elif p.name in VECTOR_NAMES or p.name.endswith(("_weight", "_bias")):
            kind, why = "vector", "by its name"
        else:
            kind, why = "row", "x's shape (the default)"
        inputs.append({"name": p.name, "kind": kind, "why": why})
    rows = [i for i in inputs if i["kind"] == "row"]
    if not rows:
        raise ValueError("no parameter has x's shape [M, N] (every tensor parameter is a [N] vector by its name or "
                         "annotation); annotate the main input `x: \"[M, N]\"`")
    return [*rows, *(i for i in inputs if i["kind"] == "vector")], constants


def example(inputs: list[dict], shape, dtype, seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    return {i["name"]: torch.randn(shape if i["kind"] == "row" else shape[-1:], generator=g).to(dtype)
            for i in inputs}


def trace(fn, inputs, constants, folder: str):
    """make_fx over the function, each aten node tagged with the user's file:line that made it."""
    import torch
    import torch.fx.traceback as fx_traceback
    from torch._decomp import get_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.overrides import TorchFunctionMode

    from tools.lower.convert import DECOMPOSE

    class SourceLines(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            frame = sys._getframe(1)
            while frame is not None and not frame.f_code.co_filename.startswith(folder):
                frame = frame.f_back
            if frame is not None:
                fx_traceback.current_meta["stack_trace"] = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
            return func(*args, **(kwargs or {}))

    names = [i["name"] for i in inputs]

    def call(*tensors):
        with SourceLines():
            return fn(**dict(zip(names, tensors)), **constants)

    args = list(example(inputs, TRACE_SHAPE, torch.bfloat16, 0).values())
    with fx_traceback.preserve_node_meta():
        gm = make_fx(call, decomposition_table=get_decompositions(DECOMPOSE), tracing_mode="symbolic")(*args)
    lines = {n.name: n.meta["stack_trace"] for n in gm.graph.nodes if n.meta.get("stack_trace")}
    return gm, lines


def source_text(folder: str, loc: str) -> str:
    name, _, line = loc.rpartition(":")
    return linecache.getline(str(Path(folder) / name), int(line)).strip()


def lower(path: str, function: str) -> dict:
    import torch

    from tools.lower import ir
    from tools.lower.convert import Refused, convert

    folder = str(Path(path).resolve().parent) + "/"
    try:
        sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(Path(path).stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        fn = getattr(module, function)
    except BaseException as err:  # noqa: BLE001 -- the user's import may raise anything, SystemExit included
        tb = traceback.extract_tb(err.__traceback__)
        where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(tb) if f.filename.startswith(folder)),
                     Path(path).name)
        return {"ok": False, "stage": "import", "error": f"importing {Path(path).name} failed at {where}: "
                                                         f"{type(err).__name__}: {err}".strip()}
    try:
        inputs, constants = parameters(fn)
    except ValueError as err:
        return {"ok": False, "stage": "lower", "error": str(err)}
    described = ", ".join(f"{i['name']} {'[M, N]' if i['kind'] == 'row' else '[N]'}" for i in inputs)
    try:
        gm, lines = trace(fn, inputs, constants, folder)
    except Exception as err:  # noqa: BLE001 -- whatever the user's function raised while traced
        tb = traceback.extract_tb(err.__traceback__)
        where = next((f" at {Path(f.filename).name}:{f.lineno} (`{f.line}`)" for f in reversed(tb)
                      if f.filename.startswith(folder)), "")
        message = str(err).strip().splitlines()[0] if str(err).strip() else ""
        return {"ok": False, "stage": "call",
                "error": f"calling {function}({described}) failed{where}: {type(err).__name__}: {message}; if a "
                         "parameter is a [N] vector, name it weight/bias or annotate it `w: \"[N]\"`"}
    try:
        nodes, outputs = convert(gm, inputs, torch.bfloat16, lines)
    except Refused as err:
        where = f" at {err.line} (`{source_text(folder, err.line)}`)" if err.line else ""
        return {"ok": False, "stage": "lower", "error": f"{err}{where}"}
    program = {"function": function, "file": Path(path).name, "inputs": inputs,
               "constants": {k: v for k, v in constants.items() if isinstance(v, (int, float))},
               "nodes": nodes, "outputs": outputs}
    program["class"] = "reduction" if ir.reductions(program) else "elementwise"
    program["source"] = {loc: source_text(folder, loc) for loc in sorted({n["line"] for n in nodes if n["line"]})}
    ir.check(program)
    err = verify(fn, program, inputs, constants)
    if err:
        return {"ok": False, "stage": "lower", "error": err}
    return {"ok": True, "ir": program}


def verify(fn, program, inputs, constants) -> str | None:
    """The lowered program against the function itself, float64, at a shape the trace did not see: None if equal."""
    import torch

    from tools.lower import ir

    values = example(inputs, CHECK_SHAPE, torch.float64, 1)
    want = fn(**values, **constants)
    got = ir.interpret(program, values)
    want, got = (want if isinstance(want, (tuple, list)) else (want,)), (got if isinstance(got, tuple) else (got,))
    for i, (w, g) in enumerate(zip(want, got)):
        w = w.double()
        if w.shape != g.shape:
            return f"output {i} has shape {list(w.shape)} at another size, the lowering {list(g.shape)}"
        both = torch.isfinite(w) & torch.isfinite(g)
        if not torch.equal(torch.isfinite(w), torch.isfinite(g)) or \
                (w[both] - g[both]).norm() > VERIFY_TOLERANCE * max(1e-30, w[both].norm().item()):
            return (f"the lowering does not reproduce output {i} at another shape {list(CHECK_SHAPE)} (it depends on "
                    "the sizes in a way the trace fixed); please report it")
    return None


def main() -> None:
    request = json.loads(sys.argv[1])
    try:
        result = lower(request["path"], request["function"])
    except Exception as err:  # noqa: BLE001 -- a lowering bug must still come back as one line
        result = {"ok": False, "stage": "lower", "error": f"internal error while lowering: {type(err).__name__}: "
                                                          f"{err}".splitlines()[0]}
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
