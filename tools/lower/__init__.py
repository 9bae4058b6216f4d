"""Lower the user's own PyTorch function into the pattern's kernel ("Your op, not ours"): the template-side entry.

    trace -> IR -> lowered.py

- ``lower(path, function)`` traces the function in a child process (tools/lower/capture.py: it runs the user's
  code, so it gets a timeout and its own process group, killed whole at the end) and returns ``{"ok": True, "ir": program}``, or ``{"ok": False,
  "stage": ..., "error": one line}``. The result is cached per file version, since the inputs are checked twice
  (while prompting, then for op.json).
- ``lower_builtin(path, function)`` lowers a built-in op's program (tools/patterns/<pattern>/programs.py) in this
  process, once per template version and torch: the IR is kept on disk, so a built-in bake imports no torch after
  the first.
- ``op_spec(program)`` is the lowered op's entry in op.json, in the same form as a built-in op's (tools/patterns/):
  its inputs, outputs, math and FLOP/byte formulas.
- ``tensors(case, program)`` the tensors a case allocates (the shape checks' memory and index limits).
- ``phase1(program, base)`` the plan's Phase-1 semantics of the lowered op.
Each has a GEMM form (``ir.is_gemm``): the head's 2*M*N*K FLOP and its operands' bytes, plus the epilogue's
steps per element of C and each epilogue input's bytes by its kind (row M*N, vector N, per row M).
- codegen.generate writes the program as lowered.py; ir.interpret runs it in torch.
"""

from __future__ import annotations

import hashlib
import json
import math
from fractions import Fraction
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from tools.lower import decode, ir

TIMEOUT_S = float(os.environ.get("KBASELINE_TRACE_TIMEOUT", "120"))
ROOT = Path(__file__).resolve().parents[2]
_CACHE: dict = {}


def _key(path: str, function: str) -> tuple:
    stat = os.stat(path)
    return os.path.abspath(path), stat.st_mtime_ns, stat.st_size, function


def lower(path: str, function: str, timeout: float = TIMEOUT_S) -> dict:
    """Trace and lower `function` of the file at `path` in a child process (see the module docstring)."""
    key = _key(path, function)
    if key not in _CACHE:
        _CACHE[key] = _run_child(path, function, timeout)
    return _CACHE[key]


def lower_here(path: str, function: str, hints: dict | None = None) -> dict:
    """lower(), traced in this process: for code this process trusts already (the tests' corpus), where a child per
    function would cost a torch import each. A bake never calls it, but a scaffold in this process after it finds its
    result under lower()'s key and starts no child. `hints` ({parameter: annotation}) stand in for annotations the
    source lacks (real model code, copied as it is); a lowering with hints has a key of its own."""
    from tools.lower import capture

    key = (*_key(path, function), tuple(sorted(hints.items()))) if hints else _key(path, function)  # lower()'s own
    if key not in _CACHE:
        _CACHE[key] = capture.lower(path, function, hints)
    return _CACHE[key]


CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kbaseline" / "programs"


def lower_builtin(path: Path, function: str) -> dict:
    """lower_here() of a built-in op's program (tools/patterns/<pattern>/programs.py), kept on disk under CACHE by
    what decides it: the program's file and its pattern's spec, the lowering's own sources, torch's version. The
    first bake of an op traces it (importing torch: seconds); later bakes read the IR back and import no torch.
    A cache that cannot be read or written is passed by, never an error."""
    from importlib import metadata

    digest = hashlib.sha256(metadata.version("torch").encode())
    for source in (path, path.parent / "__init__.py", *sorted(Path(__file__).parent.glob("*.py"))):
        digest.update(source.read_bytes())
    kept = CACHE / f"{path.parent.name}-{function}-{digest.hexdigest()[:24]}.json"
    try:
        return json.loads(kept.read_text())
    except (OSError, ValueError):
        pass
    got = lower_here(str(path), function)
    if got["ok"]:
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=kept.parent, delete=False, suffix=".tmp") as f:
                json.dump(got, f)
            os.replace(f.name, kept)
        except OSError:
            pass
    return got


def _run_child(path: str, function: str, timeout: float) -> dict:
    request = json.dumps({"path": os.path.abspath(path), "function": function})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "CUDA_VISIBLE_DEVICES": os.environ.get("KBASELINE_TRACE_CUDA", "")}  # the trace needs no GPU
    name = Path(path).name
    code, stdout, stderr = _run_group([sys.executable, "-m", "tools.lower.capture", request], Path(path).parent, env,
                                      timeout)
    if code is None:
        return {"ok": False, "stage": "import", "error": f"tracing {function} in {name} did not finish in {timeout:g} s "
                                                          "(does importing the file or calling the function hang?); "
                                                          "fix it, or raise KBASELINE_TRACE_TIMEOUT"}
    last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    try:
        return json.loads(last)
    except json.JSONDecodeError:
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        how = (f"was killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() else
               f"ended with exit code {code} before giving a result"
               + (": the file or the function ends the process itself (os._exit?); remove that" if code == 0 else ""))
        return {"ok": False, "stage": "import", "error": f"tracing {function} in {name} {how} ({tail[:300]})"}


OUTPUT_TAIL = 1 << 20  # what is read back of the child's output: its result is the last line


def _run_group(argv: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int | None, str, str]:
    """Run the user's code in its own process group (session), with its output in temp files, not pipes: the wait is
    for the child itself, so a grandchild that keeps the output open cannot stretch it. At the end, or at the timeout,
    the whole group is killed, so nothing it started outlives the bake. (returncode or None at timeout, out, err)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                                 start_new_session=True)
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child.wait()

        def tail(f) -> str:
            f.seek(max(0, f.seek(0, os.SEEK_END) - OUTPUT_TAIL))
            return f.read().decode(errors="replace")

        return code, tail(out), tail(err)


GEMM_ELEMENTS = {"a": "M*K", "b": "N*K", "row": "M*N", "vector": "N", "per_row": "M"}  # each kind's elements


def _gemm_spec(program: dict) -> dict:
    """op_spec of a GEMM: the head and each epilogue input counted once, C written once."""
    steps = ir.flops_per_element(program)
    out = program["outputs"][0]
    elements = [GEMM_ELEMENTS[i["kind"]] for i in program["inputs"]]
    if out["dtype"] == "input":
        elements.append("M*N")
    counted = {e: elements.count(e) for e in ("M*K", "N*K", "M*N", "N", "M") if e in elements}
    read = " + ".join(e if c == 1 else f"{c}*{e}" for e, c in counted.items())
    return {"inputs": [i["name"] for i in program["inputs"]],
            "flops": "2*M*N*K" + (f" + {steps}*M*N" if steps else ""),
            "bytes": f"({read})*elem_bytes" + (" + M*N*4" if out["dtype"] == "fp32" else ""),
            "out": "[M, N]" + (" fp32" if out["dtype"] == "fp32" else ""),
            "math": f"c[M, N] = epilogue(a[M, K] @ b[N, K]^T): the user's `{program['function']}` "
                    f"({program['file']}), lowered: the matmul head (fp32 accumulation) and {len(program['nodes'])} "
                    "epilogue steps",
            "flops_note": "one multiply-add (2 FLOP) per (m, n, k), and one FLOP per epilogue step per element of C "
                          "(a transcendental counts as one)",
            "bytes_note": "a, b and each epilogue input read once (a [N] or [M] vector once per launch), C written "
                          "once: the compulsory traffic (re-reads served by L2 are not counted)",
            "params": {}}


def signature(program: dict) -> str:
    """The lowered function in the user's words: `name(x [M, N], mask [M, N] bool, alpha []) -> [M, N], [M]`."""
    def shape(spec: dict) -> str:
        dims = spec.get("names") or spec.get("dims") or {"row": ["M", "N"], "vector": ["N"], "scalar": []}.get(
            spec["kind"], [])
        return f"[{', '.join(map(str, dims))}]" + (" bool" if spec.get("dtype") == "bool" else "")

    outs = {"row": "[M, N]", "reduced": "[M]", "reduced_keepdim": "[M, 1]"}
    return (f"{program['function']}({', '.join(i['name'] + ' ' + shape(i) for i in program['inputs'])}) -> "
            + ", ".join(outs[o["shape"]] + (f" {o['dtype']}" if o["dtype"] != "input" else "")
                        for o in program["outputs"]))


def _words(program: dict) -> dict:
    """The title and semantics of a lowered op in op.json: what the README, the plan and the report call it."""
    reductions = ir.reductions(program)
    return {"title": f"{program['function']} (lowered from {program['file']})",
            "semantics": f"Your function, `{signature(program)}`, runs as this workspace's kernel: "
                         + (f"rows over the last dim N, {len(reductions)} reduction(s) over each row "
                            f"({', '.join(reductions)}), each output as the function returns it."
                            if reductions else "every element computed where it lies, each output as the function "
                            "returns it.") if not ir.is_gemm(program) else
                         "C = a @ b^T on the tensor cores, then your epilogue on the fp32 accumulators before the "
                         "store."}


def op_spec(program: dict) -> dict:
    """The lowered op in the form of a built-in op's OPS entry (tools/patterns/<pattern>/__init__.py)."""
    if decode.is_decode(program):
        return decode.op_spec(program)
    if ir.is_gemm(program):
        return {**_gemm_spec(program), **_words(program)}
    # Bytes per case, in the case's variables: numel = M*N elements of the output's rows (a wide output's N is r
    # pieces of the kernel's row), so an input r pieces wide moves r/ow of them; an input broadcast over some of x's
    # dims moves its own dims' product (RoPE's cos [S, D]); a vector its N; heads of c (a QK-norm) rows of c.
    ow, heads = out_width(program), program.get("heads")

    def per(width: int, what: str) -> str:
        k = Fraction(width, ow)
        return what if k == 1 else f"{k.numerator}*{what}" if k.denominator == 1 else f"{k}*{what}"

    terms = []
    for i in program["inputs"]:
        size = 1 if i.get("dtype") == "bool" else "elem_bytes"
        if i["kind"] == "row" and ir.broadcast(program, i):
            terms.append(per(i.get("width", 1), "*".join([*i["names"][:-1], "N"])) + f"*{size}")
        elif i["kind"] == "row":
            terms.append(per(i.get("width", 1), "numel") + f"*{size}")
        elif i["kind"] == "vector":
            terms.append(f"{heads}*{size}" if heads else per(i.get("width", 1), "N") + f"*{size}")
        elif i["kind"] == "per_row" and ir.broadcast_per_row(program, i):  # its own dims' values ([B] over NCHW)
            terms.append("*".join([*(d for d in i["names"] if d != "1"), str(size)]))
        elif i["kind"] == "per_row":
            terms.append(f"(numel/N)*{size}")
    for o in program["outputs"]:
        size = ir.OUT_BYTES.get(o["dtype"], "elem_bytes")
        terms.append(per(ir.out_width(o), "numel") + f"*{size}" if o["shape"] == "row" else
                     f"(numel/{heads or 'N'})*{size}")
    elem = " + ".join(t.replace("*1*", "*").removesuffix("*1") for t in terms)
    shapes = ", ".join(f"{o['shape']}" + (f" {o['dtype']}" if o["dtype"] != "input" else "") for o in program["outputs"])
    flops = f"{ir.flops_per_element(program)}*numel" + (f"/{ow}" if ow > 1 else "")
    return {"inputs": [i["name"] for i in program["inputs"]],
            "flops": flops,
            "bytes": elem,
            "out": shapes,
            "math": f"the user's `{program['function']}` ({program['file']}), lowered: "
                    f"{len(program['nodes'])} steps, reductions: {', '.join(ir.reductions(program)) or 'none'}",
            "flops_note": "one FLOP per per-element step of the lowered program (a transcendental counts as one)",
            "bytes_note": "each input read once (a [N] vector once per launch, a bool mask one byte per element, an "
                          "input read in r parts r times the output's row, one value per row M of them, a scalar not "
                          "counted), each output written once in its dtype: the minimum traffic",
            "params": {}, **_words(program)}


def out_width(program: dict) -> int:
    """r of the first row output (RoPE's, 2 halves), else 1: a case's last dim is the output row's, r*N."""
    return next((ir.out_width(o) for o in program["outputs"] if o["shape"] == "row"), 1)


def split_rows(m: int, parts: int) -> list[int]:
    """M rows as `parts` leading dims, the inner ones small (2, 3, 4, ... where they divide M), the first the rest:
    the rank an N-D function's rows need, with dims that differ where M allows."""
    made = []
    for _ in range(parts - 1):
        size = next((d for d in (4, 3, 2) if m % d == 0 and d not in made), 1)
        made.insert(0, size)
        m //= size
    return [m, *made]


def fit_case(program: dict, case: dict) -> dict:
    """A row-cell case made to fit a lowered program: its rows as x's rank (an N-D function's ``lead``, split from
    M when the case has none), its N a whole number of heads of c for a function that views rows as heads, or of
    a wide output's r pieces (the label follows), and the named dims as formula variables (RoPE's S, for cos
    [S, D]'s bytes)."""
    if decode.is_decode(program):
        return decode.fit_case(program, case)
    names = ir.x_input(program).get("names")
    case = dict(case)
    m, n = case["dims"]
    heads = program.get("heads")
    unit = heads or out_width(program)  # N is whole heads of c, or whole rows of a wide output's r pieces
    if n % unit:
        n = max(unit, n // unit * unit)
        case["name"] = f"{case['name']}_n{n}"
        case["dims"] = [m, n]
        case["vars"] = {**case["vars"], "N": n, "numel": m * n}
        if case.get("row_stride", n) < n:
            del case["row_stride"]
    if names and len(case.get("lead", [m])) != len(names) - 1:
        case["lead"] = split_rows(m, len(names) - 1)
        case["name"] = f"{case['name']}_as_{'x'.join(map(str, case['lead']))}x{n}"
    if names:
        case["vars"] = {**case["vars"], **dict(zip(names[:-1], case["lead"])), names[-1]: n}
    return case


def tensors(case: dict, program: dict) -> dict[str, tuple[int, int]]:
    """Every tensor a case of the lowered op allocates: name -> (elements, bytes per element)."""
    v = case["vars"]
    if decode.is_decode(program):
        return decode.tensors(case, program)
    if ir.is_gemm(program):
        size = {"M": v["M"], "N": v["N"], "K": v["K"]}
        found = {i["name"]: (math.prod(size[d] if isinstance(d, str) else d for d in i["dims"]), v["elem_bytes"])
                 for i in program["inputs"]}
        return {**found, "out0": (v["M"] * v["N"], 4 if program["outputs"][0]["dtype"] == "fp32" else v["elem_bytes"])}
    case = fit_case(program, case) if v.get("N") else case
    v = case["vars"]
    numel, n, eb = v["numel"], v.get("N", v["numel"]), v["elem_bytes"]
    ow, heads = out_width(program), program.get("heads")
    unit = n if heads else n // ow  # a row input's length per unit of width (lowered_lengths in the workspace)

    def row(i: dict) -> int:  # a padded row stride (reduction cases) allocates the padding too
        width = i.get("width", 1)
        if ir.broadcast(program, i):
            return math.prod(v[d] for d in i["names"][:-1]) * width * unit
        return numel // n * max(case.get("row_stride", n), width * unit)

    def per_row(i: dict) -> int:  # M values, or its own dims' when broadcast over some of x's ([B] over NCHW)
        return math.prod(v[d] for d in i["names"] if d != "1") if ir.broadcast_per_row(program, i) else numel // n

    found = {i["name"]: ({"row": row(i) if i["kind"] == "row" else 0, "vector": (heads or unit) * i.get("width", 1),
                          "per_row": per_row(i) if i["kind"] == "per_row" else 0}.get(i["kind"], 1),
                         1 if i.get("dtype") == "bool" else eb) for i in program["inputs"]}
    for k, o in enumerate(program["outputs"]):
        size = ir.OUT_BYTES.get(o["dtype"], eb)
        found[f"out{k}"] = (numel // ow * ir.out_width(o) if o["shape"] == "row" else numel // (heads or n), size)
    return found


def phase1(program: dict, base: dict) -> dict:
    """The plan's Phase-1 semantics of a lowered op (workflow step 1.1), from the traced program; the pattern's own
    entries (`base`) stand for what the cell decides (shapes it takes, boundaries it handles)."""
    if ir.is_gemm(program):
        return _gemm_phase1(program, base)
    if decode.is_decode(program):
        return decode.phase1(program, base)
    shapes_of = {"row": "x's shape [M, N]", "vector": "[N], broadcast over the rows",
                 "scalar": "one value (a runtime scalar, loaded once)",
                 "per_row": "one value per row of x, loaded once per row"}
    inputs = "; ".join(f"`{i['name']}` {shapes_of[i['kind']]}" + (", boolean" if i.get("dtype") == "bool" else "")
                       + f" ({i['why']})" for i in program["inputs"])
    outs = "; ".join(f"output {k}: {o['shape'].replace('_', ' ')} in {'x' + chr(39) + 's dtype' if o['dtype'] == 'input' else o['dtype']}"
                     for k, o in enumerate(program["outputs"]))
    casts = sum(node["op"] == "cast" for node in program["nodes"])
    reductions = ir.reductions(program)
    constants = ", ".join(f"{k} = {v!r}" for k, v in sorted(program.get("constants", {}).items()))
    return {
        **base,
        "inputs": f"traced from `{program['function']}` ({program['file']}): {inputs}. {outs}.",
        "precision": "inputs loaded in the dtype; every step and every accumulation in fp32; "
                     f"{casts} cast(s) round where the function casts (`.to(...)`, or inside a torch composite); one "
                     "rounding per output on the store.",
        "masks": (f"{len(reductions)} reduction(s) over the last dim, in order: {', '.join(reductions)}; each result "
                  "broadcast back over its row (keepdim)." if reductions else "none: elementwise, no reduction.")
                 + (f" Constants from the function's defaults: {constants}." if constants else ""),
        "special": "NaN propagates through max/min as in torch; the program was checked against the function itself "
                   "in float64 at a shape the trace did not see.",
    }


def _gemm_phase1(program: dict, base: dict) -> dict:
    """phase1 of a GEMM: the operands and each epilogue input by its kind, from the trace."""
    words = {"a": "the matmul's a, K-major", "b": "the matmul's b, K-major (nn.Linear's weight layout)",
             "row": "C's shape", "vector": "one value per column, broadcast over the rows",
             "per_row": "one value per row, broadcast over the columns"}
    inputs = "; ".join(f"`{i['name']}` [{', '.join(map(str, i['dims']))}] ({words[i['kind']]}; {i['why']})"
                       for i in program["inputs"])
    out = program["outputs"][0]
    casts = sum(node["op"] == "cast" for node in program["nodes"])
    constants = ", ".join(f"{k} = {v!r}" for k, v in sorted(program.get("constants", {}).items()))
    return {
        **base,
        "inputs": f"traced from `{program['function']}` ({program['file']}): {inputs}. Output C [M, N] in "
                  f"{'a' + chr(39) + 's dtype' if out['dtype'] == 'input' else 'fp32'}, row-major.",
        "precision": "a and b loaded in the dtype, products accumulated in fp32 by the tensor cores; the epilogue "
                     f"({len(program['nodes'])} steps) in fp32 on the accumulator, {casts} cast(s) where the function "
                     "casts; one rounding on the store.",
        "masks": f"none: a pointwise epilogue on C = a @ b^T, no reduction (lowered.py, {len(program['nodes'])} steps)."
                 + (f" Constants from the function's defaults: {constants}." if constants else ""),
        "special": "NaN/Inf propagate through the dot products and the epilogue as in torch; the program was checked "
                   "against the function itself in float64 at sizes the trace did not see.",
    }
