"""TFLOPS, GB/s and % of the cited dense peaks for one measured kernel run; where it sits on the roofline.

    python tools/compute_utilization.py --gpu H200 --dtype bf16 \\
        --flops-expr '5*268435456' --bytes-expr '3*268435456*2' --time-ms 0.384 --grid-blocks 131072

Expressions may use numbers, + - * / // % **, parentheses, min/max (two or more arguments), ceil/floor (one),
and names given with --var NAME=VALUE (e.g. --var numel=268435456 --var elem_bytes=2 with --flops-expr
'5*numel'). They are parsed with `ast`, every node is checked against that list, and only then evaluated, node
by node, with an explicit stack (no recursion, so a long sum cannot overflow Python's). Nothing is ever passed
to eval, so text such as "__import__('os').system(...)" is refused before anything runs.

Every value the evaluation meets (a number, a name, each intermediate result) must be a finite real number
within +-1e30, and a power is checked *before* it is computed: 1e30 FLOP would take 30 million years at
1 PFLOP/s, so nothing a kernel does is larger, and `((10**64)**64)**64` is refused at once instead of growing
an integer without bound. The totals must be >= 0 FLOP and > 0 bytes.

The command-line numbers are checked as they are parsed: --time-ms and --copy-gbps must be finite and > 0,
--grid-blocks an integer >= 1. --gpu and --dtype are names from reference/gpu_specs.json, spelled exactly
as the template's `gpu=` and `dtype=` inputs spell them (H200, bf16): the template refuses `h200`, so this
tool does too, and says which name was meant.

Peaks come from reference/gpu_specs.json: dense (no-sparsity) vendor figures, each with its source. Run inside a
workspace whose op.json is about this GPU and names a gpu-wiki that is present, each peak also names the wiki's
source for it (tools/wiki_route.py): agreed, disagreed (both figures shown), or the wiki's own where ours has none.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import math
import operator
import re
import sys
from pathlib import Path

import files
import wiki_route

SPECS_PATH = Path(__file__).resolve().parent.parent / "reference" / "gpu_specs.json"

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
# name: (function, fewest arguments, most arguments or None)
_FUNCS = {"min": (min, 2, None), "max": (max, 2, None), "ceil": (math.ceil, 1, 1), "floor": (math.floor, 1, 1)}
_ALLOWED = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.Call, *_BINOPS, *_UNARY)
MAX_ABS = 1e30  # no kernel run computes or moves more: 1e30 FLOP is 30 million years at 1 PFLOP/s


class ExprError(ValueError):
    """A refused expression or input; str() is the one-line reason."""


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _parse(expr: str) -> ast.Expression:
    """The expression's tree, with every node checked against the allowed kinds before anything is evaluated."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise ExprError(f"'{_short(expr)}' is not an arithmetic expression ({err.msg})") from None
    except (RecursionError, MemoryError):  # Python's parser gives up on chains of a few thousand operators
        raise ExprError(f"'{_short(expr)}' is nested too deeply to parse; write a long sum as a product "
                        f"(5000*x, not x+x+...) or pass parts with --var NAME=VALUE") from None
    for node in ast.walk(tree):  # ast.walk is iterative
        ok = isinstance(node, _ALLOWED) and not (
            isinstance(node, ast.Constant) and type(node.value) not in (int, float)) and not (
            isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS
                                            or node.keywords))
        if not ok:
            what = ast.get_source_segment(expr.strip(), node) or type(node).__name__
            raise ExprError(f"'{_short(what)}' is not allowed in '{_short(expr)}': only numbers, names, arithmetic "
                            f"and {', '.join(_FUNCS)}")
        if isinstance(node, ast.Call):
            _fn, fewest, most = _FUNCS[node.func.id]
            if len(node.args) < fewest or (most is not None and len(node.args) > most):
                want = f"{fewest} or more" if most is None else str(fewest)
                raise ExprError(f"{node.func.id}() takes {want} argument(s), got {len(node.args)} in '{_short(expr)}'")
    return tree


def _too_large(what: str, expr: str) -> ExprError:
    return ExprError(f"'{_short(what)}' is beyond 1e30 in magnitude in '{_short(expr)}'; no kernel run computes or "
                     f"moves that much, so check the formula and its --var values")


def _checked(value, what: str, expr: str):
    """value, if it is a finite real number within +-MAX_ABS; else the refusal naming the sub-expression."""
    if isinstance(value, complex):
        raise ExprError(f"'{_short(what)}' is not a real number in '{_short(expr)}'")
    if (isinstance(value, float) and not math.isfinite(value)) or abs(value) > MAX_ABS:
        raise _too_large(what, expr)
    return value


def _power(base, exponent, what: str, expr: str):
    """base ** exponent, refused before it is computed when the result is not real or would pass MAX_ABS."""
    if base < 0 and exponent != int(exponent):
        raise ExprError(f"'{_short(what)}' is not a real number (a negative base to a fractional power) "
                        f"in '{_short(expr)}'")
    if base != 0 and abs(base) != 1 and exponent * math.log10(abs(base)) > math.log10(MAX_ABS):
        raise _too_large(what, expr)
    return base ** exponent


def evaluate(expr: str, names: dict[str, float] | None = None) -> float:
    """Evaluate an arithmetic expression safely: only numbers, known names, arithmetic and min/max/ceil/floor.

    Post-order over an explicit stack: a node is visited once to push its operands, and once more to combine
    their values, so the depth of the expression never becomes the depth of Python's call stack.
    """
    names = names or {}
    tree = _parse(expr)
    text = expr.strip()
    stack: list[tuple[ast.AST, bool]] = [(tree.body, False)]
    values: list = []
    try:
        while stack:
            node, operands_done = stack.pop()
            if isinstance(node, ast.Constant):
                values.append(_checked(node.value, ast.get_source_segment(text, node) or repr(node.value), expr))
                continue
            if isinstance(node, ast.Name):
                if node.id not in names:
                    known = ", ".join(sorted(names)) or "none (pass --var NAME=VALUE)"
                    raise ExprError(f"unknown name '{node.id}' in '{_short(expr)}'; known names: {known}")
                values.append(_checked(names[node.id], node.id, expr))
                continue
            operands = ([node.left, node.right] if isinstance(node, ast.BinOp) else
                        [node.operand] if isinstance(node, ast.UnaryOp) else node.args)
            if not operands_done:
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(operands))
                continue
            args = values[len(values) - len(operands):]
            del values[len(values) - len(operands):]
            what = ast.get_source_segment(text, node) or ""
            if isinstance(node, ast.BinOp):
                op = type(node.op)
                value = _power(*args, what, expr) if op is ast.Pow else _BINOPS[op](*args)
            elif isinstance(node, ast.UnaryOp):
                value = _UNARY[type(node.op)](*args)
            else:
                value = _FUNCS[node.func.id][0](*args)
            values.append(_checked(value, what, expr))
    except ZeroDivisionError:
        raise ExprError(f"division by zero in '{_short(expr)}'") from None
    return values.pop()


@functools.cache
def _cited(specs_path: str, gpu: str) -> str:
    ws = Path(specs_path).parent.parent
    return json.dumps(wiki_route.cited_specs(load_specs(Path(specs_path)), wiki_route.workspace_op(ws, gpu)))


def cited_specs(gpu: str) -> dict:
    """This workspace's gpu_specs.json, its figures for `gpu` checked against the gpu-wiki of its op.json when op.json
    is about that GPU (tools/wiki_route.py); as it is otherwise. Worked out once per process."""
    return json.loads(_cited(str(SPECS_PATH), gpu.strip().lower()))


def load_specs(path: Path | None = None) -> dict:
    """gpu_specs.json: `path`, or this workspace's reference/gpu_specs.json."""
    return files.load_json(path or SPECS_PATH)


def _did_you_mean(text: str, known) -> str:
    """' (did you mean H200?)' when `text` is a known name in another case; names are exact, as in the template."""
    same = [k for k in known if k.lower() == text.strip().lower()]
    return f" (did you mean {same[0]}? names are case-sensitive, as in the template)" if same else ""


def gpu_spec(gpu: str, specs: dict | None = None) -> tuple[str, dict]:
    """'H200' -> ('H200', spec). The names are gpu_specs.json's, spelled exactly as the template's gpu= spells
    them (tests/test_registry.py keeps the two lists equal), so a name one refuses the other refuses too."""
    specs = specs or load_specs()
    if gpu in specs["gpus"]:
        return gpu, specs["gpus"][gpu]
    raise ExprError(f"unknown GPU '{gpu}'{_did_you_mean(gpu, specs['gpus'])}; choose one of "
                    f"{', '.join(specs['gpus'])}")


def check_work(flops: float, nbytes: float) -> None:
    """A run's totals: FLOP >= 0 (a copy does none) and bytes > 0 (every kernel moves some)."""
    if flops < 0:
        raise ExprError(f"the FLOP count is {flops:g}; --flops-expr must count the work done, so it is >= 0")
    if nbytes <= 0:
        raise ExprError(f"the byte count is {nbytes:g}; --bytes-expr must count the bytes moved through HBM, "
                        f"so it is > 0")


def roofline(gpu: str, dtype: str, flops: float, nbytes: float, specs: dict | None = None) -> dict:
    """Where a workload sits on the GPU's roofline: ridge point, bound, and the floor time no kernel beats.

    With no cited dense peak for the dtype (MI308X publishes none), the ridge and the bound are None and the
    floor is the bandwidth floor alone.
    """
    check_work(flops, nbytes)
    name, spec = gpu_spec(gpu, specs)
    peak_tflops = spec["dense_tflops"].get(dtype, {}).get("value")
    peak_gbps = spec["hbm_bandwidth_gbps"]["value"]
    intensity = flops / nbytes
    ridge = peak_tflops * 1e12 / (peak_gbps * 1e9) if peak_tflops else None
    floors = [nbytes / (peak_gbps * 1e9)] + ([flops / (peak_tflops * 1e12)] if peak_tflops else [])
    return {"gpu": name, "peak_tflops": peak_tflops, "peak_bandwidth_gbps": peak_gbps,
            "arithmetic_intensity": intensity, "ridge_point": ridge,
            "bound": None if ridge is None else "memory" if intensity < ridge else "compute",
            "roofline_floor_us": max(floors) * 1e6}


def case_work(op: dict, case: dict) -> tuple[float, float]:
    """(FLOP, bytes) of one op.json case: the op's formulas evaluated with the case's variables."""
    return evaluate(op["formulas"]["flops"], case["vars"]), evaluate(op["formulas"]["bytes"], case["vars"])


def headline_case(op: dict) -> dict:
    """The case the README, the report and the memory lead with: the timed case that moves the most bytes."""
    timed = [c for c in op["cases"] if c["timed"]] or op["cases"]
    return max(timed, key=lambda c: case_work(op, c)[1])


def command(op: dict, case: dict, time_ms: float, grid_blocks: int | None = None, copy_gbps: float | None = None) -> str:
    """This tool's command line for one case of an op: the formulas, the variables they use, the latency."""
    formulas = op["formulas"]
    used = [k for k in case["vars"] if re.search(rf"\b{k}\b", formulas["flops"] + " " + formulas["bytes"])]
    return (f"python tools/compute_utilization.py --gpu {op['gpu']} --dtype {op['dtype']} "
            f"--flops-expr '{formulas['flops']}' --bytes-expr '{formulas['bytes']}' "
            + " ".join(f"--var {k}={case['vars'][k]}" for k in used) + f" --time-ms {time_ms:.6g}"
            + (f" --grid-blocks {grid_blocks}" if grid_blocks else "") + (f" --copy-gbps {copy_gbps:.0f}" if copy_gbps else ""))


def compute(gpu: str, dtype: str, flops: float, nbytes: float, time_ms: float, grid_blocks: int | None = None,
            copy_gbps: float | None = None, specs: dict | None = None) -> dict:
    """All utilization figures for one run. flops and nbytes are totals; time_ms is the kernel's latency.
    specs: gpu_specs.json as wiki_route.cited_specs leaves it (default: cited_specs(gpu))."""
    _check_measured(time_ms, grid_blocks, copy_gbps)
    specs = specs or cited_specs(gpu)
    name, spec = gpu_spec(gpu, specs)
    peaks = spec["dense_tflops"]
    if dtype not in peaks:
        raise ExprError(f"no dense peak for dtype '{dtype}' on {name}{_did_you_mean(dtype, peaks)}; "
                        f"known: {', '.join(peaks)}")
    if peaks[dtype]["value"] is None:
        raise ExprError(f"{name} has no cited dense {dtype} peak ({peaks[dtype].get('note', 'no vendor figure')}); "
                        f"utilization against it would be a guess")
    roof = roofline(name, dtype, flops, nbytes, specs)
    seconds = time_ms / 1e3
    tflops = flops / seconds / 1e12
    gbps = nbytes / seconds / 1e9
    units = spec["compute_units"]["value"]
    result = {
        **roof, "dtype": dtype, "time_ms": time_ms, "latency_us": time_ms * 1e3,
        "flops": flops, "bytes": nbytes, "tflops": tflops, "bandwidth_gbps": gbps,
        "peak_tflops_kind": peaks[dtype]["kind"],
        "tflops_peak_utilization_pct": 100 * tflops / roof["peak_tflops"],
        "bandwidth_peak_utilization_pct": 100 * gbps / roof["peak_bandwidth_gbps"],
        "roofline_utilization_pct": 100 * roof["roofline_floor_us"] / (time_ms * 1e3),
        "sources": {"compute": peaks[dtype]["source"], "bandwidth": spec["hbm_bandwidth_gbps"]["source"],
                    "compute_units": spec["compute_units"]["source"]},
        "citations": wiki_route.peak_lines(spec, dtype),
    }
    if grid_blocks is not None:
        result.update(grid_blocks=grid_blocks, compute_units=units, unit_name=spec["compute_units"]["name"],
                      waves=grid_blocks / units)
    if copy_gbps:
        result.update(measured_copy_gbps=copy_gbps, copy_bandwidth_utilization_pct=100 * gbps / copy_gbps)
    return result


def format_result(r: dict) -> str:
    lines = [
        f"GPU {r['gpu']}  dtype {r['dtype']}  latency {r['latency_us']:.2f} us",
        f"  TFLOPS      {r['tflops']:10.3f}   {r['tflops_peak_utilization_pct']:6.2f}% of {r['peak_tflops']:g} "
        f"({r['peak_tflops_kind']})",  # gpu_specs.json's own label, e.g. 'BF16 Tensor Core, dense'
        f"  GB/s        {r['bandwidth_gbps']:10.1f}   {r['bandwidth_peak_utilization_pct']:6.2f}% of "
        f"{r['peak_bandwidth_gbps']:g} (HBM)",
    ]
    if "copy_bandwidth_utilization_pct" in r:
        lines.append(f"              {'':10}   {r['copy_bandwidth_utilization_pct']:6.2f}% of {r['measured_copy_gbps']:g} "
                     f"(measured device copy)")
    lines.append(f"  intensity   {r['arithmetic_intensity']:10.3f} FLOP/byte vs ridge {r['ridge_point']:.1f}: "
                 f"{r['bound']}-bound; roofline floor {r['roofline_floor_us']:.2f} us "
                 f"({r['roofline_utilization_pct']:.1f}% of roofline)")
    if "waves" in r:
        lines.append(f"  waves       {r['waves']:10.2f}   ({r['grid_blocks']} blocks / {r['compute_units']} {r['unit_name']})")
    lines.append(f"  sources: compute: {r['sources']['compute']['title']}; bandwidth: {r['sources']['bandwidth']['title']}")
    lines += [f"  {line}" for line in r.get("citations", [])]
    return "\n".join(lines)


def parse_vars(items: list[str]) -> dict[str, float]:
    names = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ExprError(f"--var '{item}' is not NAME=VALUE")
        names[key.strip()] = evaluate(value)
    return names


def _positive(value, integer: bool = False) -> bool:
    """The rule for a measured figure: a finite number > 0 (a latency, a bandwidth), or an integer >= 1 (blocks)."""
    if integer:
        return isinstance(value, int) and value >= 1
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _check_measured(time_ms, grid_blocks, copy_gbps) -> None:
    if not _positive(time_ms):
        raise ExprError(f"--time-ms must be a finite number > 0, got {time_ms}")
    if grid_blocks is not None and not _positive(grid_blocks, integer=True):
        raise ExprError(f"--grid-blocks must be an integer >= 1, got {grid_blocks}")
    if copy_gbps is not None and not _positive(copy_gbps):
        raise ExprError(f"--copy-gbps must be a finite number > 0, got {copy_gbps}")


def positive_float(text: str) -> float:
    """argparse type for --time-ms and --copy-gbps: 'nan', 'inf', '0' and '-100' are refused as they are parsed."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not _positive(value):
        raise argparse.ArgumentTypeError(f"'{text}' is not a finite number > 0")
    return value


def positive_int(text: str) -> int:
    """argparse type for --grid-blocks: a count of blocks, so an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not _positive(value, integer=True):
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer >= 1")
    return value


def gpu_name(text: str) -> str:
    """argparse type for --gpu: a name in reference/gpu_specs.json, exact (see gpu_spec)."""
    try:
        return gpu_spec(text)[0]
    except ExprError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


class _Parser(argparse.ArgumentParser):
    """argparse, with a refusal as this tool's one line (no usage block): the argument, the problem, the fix."""

    def error(self, message):
        self.exit(2, f"compute_utilization: error: {message} (see --help)\n")


def main(argv=None) -> int:
    gpus = ", ".join(load_specs()["gpus"])
    p = _Parser(description="TFLOPS, GB/s and % of cited dense peaks for a measured kernel.")
    p.add_argument("--gpu", required=True, type=gpu_name,
                   help=f"one of {gpus} (reference/gpu_specs.json; exact, as the template spells it)")
    p.add_argument("--dtype", required=True, help="bf16, fp16, fp32 or fp8: picks the dense compute peak")
    p.add_argument("--flops-expr", required=True, help="total FLOP, e.g. '2*M*N*K'")
    p.add_argument("--bytes-expr", required=True, help="total bytes moved through HBM, e.g. '3*numel*2'")
    p.add_argument("--time-ms", required=True, type=positive_float,
                   help="measured kernel latency in milliseconds (finite, > 0)")
    p.add_argument("--grid-blocks", type=positive_int, default=None,
                   help="CTAs (workgroups) launched, >= 1: gives waves")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE", help="a name the expressions use")
    p.add_argument("--copy-gbps", type=positive_float, default=None,
                   help="measured device-copy bandwidth (finite, > 0), for a second %%")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = p.parse_args(argv)
    try:
        names = parse_vars(args.var)
        result = compute(args.gpu, args.dtype, evaluate(args.flops_expr, names), evaluate(args.bytes_expr, names),
                         args.time_ms, args.grid_blocks, args.copy_gbps)
    except ExprError as err:
        print(f"compute_utilization: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else format_result(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
