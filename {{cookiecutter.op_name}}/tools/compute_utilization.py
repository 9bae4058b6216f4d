"""TFLOPS, GB/s and % of the cited dense peaks for one measured kernel run; where it sits on the roofline.

    python tools/compute_utilization.py --gpu H200 --dtype bf16 \\
        --flops-expr '5*268435456' --bytes-expr '3*268435456*2' --time-ms 0.384 --grid-blocks 131072

Expressions may use numbers, + - * / // % **, parentheses, min/max/ceil/floor, and names given with
--var NAME=VALUE (e.g. --var numel=268435456 --var elem_bytes=2 with --flops-expr '5*numel'). They are
parsed with `ast` and evaluated node by node; nothing is ever passed to eval, so text such as
"__import__('os').system(...)" is refused before anything runs.

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

import wiki_route

SPECS_PATH = Path(__file__).resolve().parent.parent / "reference" / "gpu_specs.json"

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCS = {"min": min, "max": max, "ceil": math.ceil, "floor": math.floor}


class ExprError(ValueError):
    pass


def evaluate(expr: str, names: dict[str, float] | None = None) -> float:
    """Evaluate an arithmetic expression safely: only numbers, known names, arithmetic and min/max/ceil/floor."""
    names = names or {}
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise ExprError(f"'{expr}' is not an arithmetic expression ({err.msg})") from None

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                known = ", ".join(sorted(names)) or "none (pass --var NAME=VALUE)"
                raise ExprError(f"unknown name '{node.id}' in '{expr}'; known names: {known}")
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 64:
                raise ExprError(f"exponent {right} too large in '{expr}'")
            return _BINOPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](ev(node.operand))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                and not node.keywords and node.args):
            return _FUNCS[node.func.id](*[ev(a) for a in node.args])
        raise ExprError(f"'{ast.unparse(node)}' is not allowed in '{expr}': only numbers, names, arithmetic "
                        f"and {', '.join(_FUNCS)}")

    try:
        return ev(tree)
    except ZeroDivisionError:
        raise ExprError(f"division by zero in '{expr}'") from None


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
    return json.loads((path or SPECS_PATH).read_text())


def gpu_spec(gpu: str, specs: dict | None = None) -> tuple[str, dict]:
    """Case-insensitive lookup: 'h200' -> ('H200', spec)."""
    specs = specs or load_specs()
    for name, spec in specs["gpus"].items():
        if name.lower() == gpu.strip().lower():
            return name, spec
    raise ExprError(f"unknown GPU '{gpu}'; choose one of {', '.join(specs['gpus'])}")


def roofline(gpu: str, dtype: str, flops: float, nbytes: float, specs: dict | None = None) -> dict:
    """Where a workload sits on the GPU's roofline: ridge point, bound, and the floor time no kernel beats.

    With no cited dense peak for the dtype (MI308X publishes none), the ridge and the bound are None and the
    floor is the bandwidth floor alone.
    """
    name, spec = gpu_spec(gpu, specs)
    peak_tflops = spec["dense_tflops"].get(dtype, {}).get("value")
    peak_gbps = spec["hbm_bandwidth_gbps"]["value"]
    intensity = flops / nbytes if nbytes else math.inf
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
    if time_ms <= 0:
        raise ExprError(f"--time-ms must be > 0, got {time_ms}")
    specs = specs or cited_specs(gpu)
    name, spec = gpu_spec(gpu, specs)
    peaks = spec["dense_tflops"]
    if dtype not in peaks:
        raise ExprError(f"no dense peak for dtype '{dtype}' on {name}; known: {', '.join(peaks)}")
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
        f"({r['peak_tflops_kind']}, dense)",
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="TFLOPS, GB/s and % of cited dense peaks for a measured kernel.")
    p.add_argument("--gpu", required=True, help="H200, H100, H20, MI300X, MI308X or MI355X (any case)")
    p.add_argument("--dtype", required=True, help="bf16, fp16, fp32 or fp8: picks the dense compute peak")
    p.add_argument("--flops-expr", required=True, help="total FLOP, e.g. '2*M*N*K'")
    p.add_argument("--bytes-expr", required=True, help="total bytes moved through HBM, e.g. '3*numel*2'")
    p.add_argument("--time-ms", required=True, type=float, help="measured kernel latency in milliseconds")
    p.add_argument("--grid-blocks", type=int, default=None, help="CTAs (workgroups) launched: gives waves")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE", help="a name the expressions use")
    p.add_argument("--copy-gbps", type=float, default=None, help="measured device-copy bandwidth, for a second %%")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = p.parse_args(argv)
    try:
        names = parse_vars(args.var)
        result = compute(args.gpu, args.dtype.lower(), evaluate(args.flops_expr, names), evaluate(args.bytes_expr, names),
                         args.time_ms, args.grid_blocks, args.copy_gbps)
    except ExprError as err:
        print(f"compute_utilization: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else format_result(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
