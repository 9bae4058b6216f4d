"""H200 sweep of the CuTe DSL reduction cell against torch eager (and torch.compile) over M x N: where it loses.

    python3 benchmarks/sweep_reduction.py --out benchmarks/results/DATE-h200-reduction-sweep    # on the H200, < 5 min
    python3 benchmarks/sweep_reduction.py --out ... --op softmax --m 1 4096 --n 4096 --no-compile  # a slice
    python3 benchmarks/sweep_reduction.py --out ... --list                                         # points, CPU
    python3 benchmarks/sweep_reduction.py --out ... --render                                       # table + PNGs again

Grid: M in {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536} x N in {1000, 4096, 8192, 32000, 131072}, for softmax,
rmsnorm and sum (the row sum), bf16: 45 points per op, 135 in all. Two per op are skipped, the row says why: x above
8 GB (65536 x 131072: 17 GB), and x of 2^31 elements or more (16384 x 131072: the cell's offsets are int32 and the
pattern's cases() refuses it); 129 are measured. N = 1000 and 32000 take the register path with predicated chunks,
4096 and 8192 the full one, 131072 the looped path (one CTA a row); small M launches fewer CTAs than the 132 SMs.

Method, per point (sweep_common.MemorySweep and measure):
- Workspace: one per op, baked through this template (tools.scaffold.workspace for the H200, bf16, no V0 run); its
  kernel.py and reference.py loaded afresh. The case comes from the pattern's cases(), the inputs from the
  workspace's reference.make_inputs; the peer is reference.baseline (torch eager, the expression its harness times).
- Check: ours on copy 0 into a NaN-poisoned out; relative Frobenius error against reference.reference on fp32
  copies, < 1e-2. A failing point is not timed.
- L2: enough copies of (x, weight, out) are rotated that a round holds >= 256 MB (5x the 50 MB L2), at most 256
  copies. A call finds its inputs in L2 only when a copy is under ~200 KB (M x N below ~50K elements, ~100K for
  sum): launch-bound points, where both sides see the same.
- GPU time: torch.profiler CUDA kernel time of 20 calls, summed over every kernel a call launches (ours one, torch
  one or more), divided by 20, after one warm-up call per copy. ratio = torch eager / ours (> 1: ours is faster).
  The GPU time of small points is launch latency; that is what counts. Ours is timed as run(x, ...), allocating
  its output from torch's caching allocator as eager does (where the output lives moves a memory-bound kernel's
  time: sweep_common.measure); run(..., out=) into each copy's buffer is recorded beside it as ours_out_us.
- torch.compile column: inductor, fullgraph, one graph per (op, N) with M dynamic (N picks the code and M is free,
  as in the cell) and a static one for M = 1. Each graph is compiled and autotuned at the largest M of its N (the
  points run from the largest M down). At most 100 s of compile warm-up (--compile-budget-s): later new graphs are
  noted, not timed.
- Ours compiles once per (op, vector width, plan): five times per op.
- Points still left when --deadline-s (240 s) has passed are recorded as not run.

Writes <out>.json (rewritten after every point) and two heatmap PNGs per op: <out>-<op>.png (M down, N across, the
ratio torch eager / ours in each cell; red below 0.9, the issue's threshold, orange below 1.0) and
<out>-<op>-compile.png (the same against torch.compile). Prints a markdown table. Exit 1 when a measured point
disagrees or fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heatmap import ORANGE_BAND, heatmap  # noqa: E402
from sweep_common import ROOT, MemorySweep, cell, fmt, skipped_row  # noqa: E402

sys.path.insert(0, str(ROOT))

OPS = ("softmax", "rmsnorm", "sum")
M_GRID = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536)
N_GRID = (1000, 4096, 8192, 32000, 131072)
ELEM_BYTES = 2  # bf16
MAX_X_BYTES = 8e9
COMPILE_BUDGET_S = 100.0
DEADLINE_S = 240.0
TARGET = 0.9  # the issue's threshold: no point below 0.9x torch eager in GPU time


def points(ops=OPS, ms=M_GRID, ns=N_GRID) -> list[dict]:
    """Every (op, N, M) in measuring order (per op and N, the largest M first: torch.compile's graph of an N is
    compiled there), with the reason when it is skipped."""
    out = []
    for op in ops:
        for n in ns:
            for m in sorted(ms, reverse=True):
                x_bytes = m * n * ELEM_BYTES
                skip = (f"x is {x_bytes / 1e9:.1f} GB, above the sweep's 8 GB cap" if x_bytes > MAX_X_BYTES else
                        "x has >= 2^31 elements: beyond the cell's int32 offsets (cases() refuses it)"
                        if m * n >= 2**31 else None)
                out.append({"op": op, "M": m, "N": n, "x_bytes": x_bytes, "skip": skip})
    return out


def plan(kernel, case: dict) -> dict:
    d = kernel.describe(case)
    return {"path": d["path"].split(" (")[0], "threads_per_row": d["threads_per_row"], "vec": d["vector_elements"],
            "grid_blocks": d["grid_blocks"]}


def table(rows: list[dict]) -> str:
    lines = ["| op | M | N | path | TPR | CTAs | copies | ours us | eager us | compile us | ours GB/s | eager / ours | "
             "compile / ours | rel_err |", "|" + "---|" * 14]
    for r in sorted(rows, key=lambda r: (OPS.index(r["op"]) if r["op"] in OPS else 99, r["M"], r["N"])):
        head = f"| {r['op']} | {r['M']} | {r['N']} |"
        lines.append(head + (skipped_row(r, 11) or
                             f" {r['path']} | {r['threads_per_row']} | {r['grid_blocks']} | {r['copies']} | "
                             f"{fmt(r['ours_us'])} | {fmt(r['eager_us'])} | {fmt(r.get('compile_us'))} | "
                             f"{fmt(r['ours_gbps'], '.0f')} | {fmt(r['ratio'], '.2f', TARGET)} | "
                             f"{fmt(r.get('compile_ratio'), '.2f', TARGET)} | {r['rel_err']:.1e} |"))
    return "\n".join(lines)


def heatmaps(rows: list[dict], out: Path) -> list[Path]:
    """Per op: M down, N across; one PNG against torch eager and, when any point has one, one against torch.compile."""
    paths = []
    for op in sorted({r["op"] for r in rows}, key=lambda op: OPS.index(op) if op in OPS else 99):
        mine = {(r["M"], r["N"]): r for r in rows if r["op"] == op}
        ms, ns = sorted({m for m, _ in mine}), sorted({n for _, n in mine})
        for key, peer, suffix in (("ratio", "torch eager", ""), ("compile_ratio", "torch.compile", "-compile")):
            if key == "compile_ratio" and not any("compile_ratio" in r for r in mine.values()):
                continue
            grid = [[cell(mine.get((m, n)), key) for n in ns] for m in ms]
            paths.append(heatmap(grid, ns, ms, f"{op} bf16: {peer} GPU time / ours\n(red < {TARGET}, orange < 1.0)",
                                 out.with_name(f"{out.name}-{op}{suffix}.png"), bounds=(TARGET, 1.0),
                                 colours=ORANGE_BAND, x_name="N", y_name="M"))
    return paths


SWEEP = MemorySweep("reduction", OPS, shape=lambda pt: f"{pt['M']}x{pt['N']}",
                    name=lambda pt: f"{pt['op']} {pt['M']}x{pt['N']}",
                    compile_key=lambda pt: (pt["N"], pt["M"] == 1),
                    compile_graphs="(op, N) with M dynamic, one for M = 1",
                    plan=plan, table=table, heatmaps=heatmaps, target=TARGET)


def main(argv=None) -> int:
    p = SWEEP.parser(__doc__, COMPILE_BUDGET_S, DEADLINE_S)
    p.add_argument("--m", type=int, nargs="+", default=list(M_GRID))
    p.add_argument("--n", type=int, nargs="+", default=list(N_GRID))
    args = p.parse_args(argv)
    return SWEEP.main(args, points(args.op, args.m, args.n))


if __name__ == "__main__":
    sys.exit(main())
