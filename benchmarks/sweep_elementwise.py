"""H200 sweep of the CuTe DSL elementwise cell against torch eager (and torch.compile) over sizes: where it loses.

    python3 benchmarks/sweep_elementwise.py --out benchmarks/results/DATE-h200-elementwise-sweep  # on the H200, < 2 min
    python3 benchmarks/sweep_elementwise.py --out ... --op add --numel 1024 268435456 --no-compile  # a slice
    python3 benchmarks/sweep_elementwise.py --out ... --list                                       # points, CPU
    python3 benchmarks/sweep_elementwise.py --out ... --render                                     # table + PNGs again

Grid: numel in 2^10, 2^12, ..., 2^28 (1-D, contiguous) for silu_mul and add, bf16: 10 sizes per op, 20 points. A
size above the pattern's int32 limit (2^31 - 2^20 elements, where cases() refuses it) would be skipped with that
reason; none of the grid is. A CTA of 128 threads covers 8192 elements for add and 2048 for silu_mul, so up to 2^20
(add) or 2^18 (silu_mul) the grid has fewer CTAs than the 132 SMs: launch latency. 2^28 is the elementwise page's
headline.

Method, per point: sweep_reduction.py's (sweep_common.MemorySweep and measure), on these ops:
- Workspace: one per op through tools.scaffold.workspace (H200, bf16, no V0 run); the case from the pattern's
  cases(), the inputs from reference.make_inputs, the peer reference.baseline (torch eager: `x + y`, and
  `F.silu(x) * y`, two kernels, both counted).
- Check: ours on copy 0 into a NaN-poisoned out, relative Frobenius error against reference.reference on fp32
  copies, < 1e-2; a failing point is not timed.
- L2: copies of (x, y, out) rotated, >= 256 MB a round, at most 256 copies: a call finds its inputs in L2 only
  below ~200 KB a copy (2^14 elements and smaller: launch-bound, the same for both sides).
- GPU time: torch.profiler CUDA kernel time of 20 calls, summed over every kernel a call launches, divided by 20,
  after one warm-up call per copy. ratio = torch eager / ours (> 1: ours is faster).
- torch.compile column: inductor, fullgraph, one graph per op with numel dynamic, compiled and autotuned at 2^28
  (the points run from the largest size down); at most 60 s of compile warm-up (--compile-budget-s).
- Ours compiles once per op (the cell compiles once per op, dtype and rank).
- Points still left when --deadline-s (180 s) has passed are recorded as not run.

Writes <out>.json (rewritten after every point) and one heatmap PNG per op, <out>-<op>.png: one row per peer (torch
eager / ours, torch.compile / ours), one column per size; red below 0.9, the issue's threshold, orange below 1.0.
Prints a markdown table. Exit 1 when a measured point disagrees or fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heatmap import ORANGE_BAND, heatmap  # noqa: E402
from sweep_common import ROOT, MemorySweep, cell, fmt, skipped_row  # noqa: E402

sys.path.insert(0, str(ROOT))
from tools.patterns.elementwise import MAX_NUMEL  # noqa: E402

OPS = ("silu_mul", "add")
SIZES = tuple(2**k for k in range(10, 29, 2))
COMPILE_BUDGET_S = 60.0
DEADLINE_S = 180.0
TARGET = 0.9  # the issue's threshold: no point below 0.9x torch eager in GPU time
PEERS = (("ratio", "torch eager / ours"), ("compile_ratio", "torch.compile / ours"))


def points(ops=OPS, sizes=SIZES) -> list[dict]:
    """Every (op, numel) in measuring order (per op, the largest first: torch.compile's graph is compiled there),
    with the reason when it is skipped."""
    return [{"op": op, "numel": n, "skip": f"{n} elements: above the cell's int32 limit of {MAX_NUMEL} (cases() "
             f"refuses it)" if n > MAX_NUMEL else None} for op in ops for n in sorted(sizes, reverse=True)]


def label(numel: int) -> str:
    return f"2^{numel.bit_length() - 1}" if numel & (numel - 1) == 0 else str(numel)


def plan(kernel, case: dict) -> dict:
    d = kernel.describe(case)
    return {"tile_elements": d["tile_elements"], "grid_blocks": d["grid_blocks"]}


def table(rows: list[dict]) -> str:
    lines = ["| op | numel | CTAs | copies | ours us | eager us | compile us | ours GB/s | eager / ours | "
             "compile / ours | rel_err |", "|" + "---|" * 11]
    for r in sorted(rows, key=lambda r: (OPS.index(r["op"]) if r["op"] in OPS else 99, r["numel"])):
        head = f"| {r['op']} | {label(r['numel'])} |"
        lines.append(head + (skipped_row(r, 9) or
                             f" {r['grid_blocks']} | {r['copies']} | {fmt(r['ours_us'])} | {fmt(r['eager_us'])} | "
                             f"{fmt(r.get('compile_us'))} | {fmt(r['ours_gbps'], '.0f')} | "
                             f"{fmt(r['ratio'], '.2f', TARGET)} | {fmt(r.get('compile_ratio'), '.2f', TARGET)} | "
                             f"{r['rel_err']:.1e} |"))
    return "\n".join(lines)


def heatmaps(rows: list[dict], out: Path) -> list[Path]:
    """Per op: one row per peer (torch eager, torch.compile), one column per size."""
    paths = []
    for op in sorted({r["op"] for r in rows}, key=lambda op: OPS.index(op) if op in OPS else 99):
        mine = {r["numel"]: r for r in rows if r["op"] == op}
        sizes = sorted(mine)
        grid = [[cell(mine[n], key) for n in sizes] for key, _ in PEERS]
        paths.append(heatmap(grid, [label(n) for n in sizes], [name for _, name in PEERS],
                             f"{op} bf16: torch GPU time / ours\n(red < {TARGET}, orange < 1.0)",
                             out.with_name(f"{out.name}-{op}.png"), bounds=(TARGET, 1.0), colours=ORANGE_BAND,
                             x_name="numel", size=(max(6.0, 1.1 * len(sizes) + 3), 3.0)))
    return paths


SWEEP = MemorySweep("elementwise", OPS, shape=lambda pt: str(pt["numel"]),
                    name=lambda pt: f"{pt['op']} {label(pt['numel'])}",
                    compile_key=lambda pt: (pt["numel"] == 1,), compile_graphs="op with numel dynamic",
                    plan=plan, table=table, heatmaps=heatmaps, target=TARGET)


def main(argv=None) -> int:
    p = SWEEP.parser(__doc__, COMPILE_BUDGET_S, DEADLINE_S)
    p.add_argument("--numel", type=int, nargs="+", default=list(SIZES))
    args = p.parse_args(argv)
    return SWEEP.main(args, points(args.op, args.numel))


if __name__ == "__main__":
    sys.exit(main())
