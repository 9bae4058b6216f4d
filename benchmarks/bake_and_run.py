"""Bake workspaces through the template on a GPU machine, let each one's post-gen hook run the V0 flow, and tabulate.

    python benchmarks/bake_and_run.py --out /tmp/bake gemm:matmul:bf16 gemm:matmul:fp16 reduction:softmax:bf16
    python benchmarks/bake_and_run.py --out /tmp/bake --summarize          # re-render from an earlier run

Each spec is pattern:op:dtype[:shapes]. The kernel-vs-torch ratios come from each workspace's own V0 run
(results/results.json: kernel and torch timed in one process, one method: CUDA events, cold L2, median);
the achieved TFLOP/s and GB/s are the op.json formulas over that latency. Writes <out>/summary.md and
<out>/summary.json, and each workspace's bake log.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "{{cookiecutter.op_name}}" / "tools"))  # the workspace tools

import compute_utilization  # noqa: E402


def bake(out: Path, spec: str) -> Path:
    pattern, op, dtype, *rest = spec.split(":")
    name = f"{pattern}_{op}_{dtype}"
    pairs = [f"pattern={pattern}", f"op={op}", f"dtype={dtype}", "gpu=H200", f"op_name={name}", "run_baseline=yes"]
    if rest:
        pairs.append(f"shapes={rest[0]}")
    done = subprocess.run([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(out), *pairs],
                          capture_output=True, text=True)
    (out / f"{name}.bake.log").write_text(done.stdout + done.stderr)
    return out / name


def rows_of(ws: Path) -> list[dict]:
    op = json.loads((ws / "op.json").read_text())
    results = json.loads((ws / "results" / "results.json").read_text())
    copy = results.get("device_copy", {}).get("gbps")
    cases = {c["name"]: c for c in op["cases"]}
    rows = []
    for rec in results.get("cases", []):
        row = {"workspace": ws.name, "pattern": op["pattern"], "op": op["op"], "dtype": op["dtype"],
               "case": rec["name"], "role": rec.get("role"), "status": rec["status"], "rel_err": rec.get("rel_err"),
               "error": rec.get("error")}
        if "latency_us" in rec:
            flops, nbytes = compute_utilization.case_work(op, cases[rec["name"]])
            seconds = rec["latency_us"] * 1e-6
            row.update(latency_us=rec["latency_us"], torch_latency_us=rec["torch_latency_us"],
                       speedup_vs_torch=rec["speedup_vs_torch"], tflops=flops / seconds / 1e12,
                       gbps=nbytes / seconds / 1e9, copy_gbps=copy,
                       pct_copy=100 * nbytes / seconds / 1e9 / copy if copy else None)
        rows.append(row)
    return rows


def artifacts(ws: Path) -> dict:
    """What the V0 flow left behind: the roofline PNG, the report's ISA table, memory's ISA progress, the commit."""
    report = (ws / "baseline_report.md").read_text() if (ws / "baseline_report.md").is_file() else ""
    memory = json.loads((ws / "memory" / "v0.json").read_text()) if (ws / "memory" / "v0.json").is_file() else {}
    log = subprocess.run(["git", "log", "--format=%s"], cwd=ws, capture_output=True, text=True).stdout
    return {"workspace": ws.name, "roofline_png": (ws / "results" / "roofline.png").is_file(),
            "report_embeds_png": "![roofline](results/roofline.png)" in report,
            "isa_table": "## ISA metrics and targets" in report and "| metric |" in report,
            "isa_progress_rows": len(memory.get("isa_metric_progress", [])),
            "isa_met": sum(1 for r in memory.get("isa_metric_progress", []) if r.get("met") is True),
            "quality_gate": memory.get("quality_gate", {}).get("result"),
            "v0_commit": "V0: baseline kernel" in log}


def render(summary: dict) -> str:
    lines = [f"GPU: {summary.get('device')}; torch {summary.get('torch')}; same-run device copy per workspace in "
             f"the '% copy' column's denominator.", "",
             "| workspace | case | status | rel_err | kernel µs | torch µs | vs torch | TFLOP/s | GB/s | % copy |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary["rows"]:
        err = f"{r['rel_err']:.2e}" if r.get("rel_err") is not None else "-"
        if "latency_us" in r:
            perf = (f"{r['latency_us']:.1f} | {r['torch_latency_us']:.1f} | {r['speedup_vs_torch']:.3f}x | "
                    f"{r['tflops']:.1f} | {r['gbps']:.0f} | {r['pct_copy']:.1f}%" if r.get("pct_copy") else "-")
        else:
            perf = "- | - | - | - | - | -"
        lines.append(f"| {r['workspace']} | {r['case']} | {r['status']} | {err} | {perf} |")
    lines += ["", "| workspace | roofline.png | report embeds it | ISA table | ISA targets met | quality gate | "
              "V0 commit |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {a['workspace']} | {a['roofline_png']} | {a['report_embeds_png']} | {a['isa_table']} | "
              f"{a['isa_met']}/{a['isa_progress_rows']} | {a['quality_gate']} | {a['v0_commit']} |"
              for a in summary.get("artifacts", [])]
    failed = [r for r in summary["rows"] if r["status"] != "PASS"]
    lines += ["", f"{len(summary['rows']) - len(failed)}/{len(summary['rows'])} cases PASS."]
    lines += [f"- {r['workspace']} {r['case']}: {r['status']} {r.get('error') or ''}" for r in failed]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("specs", nargs="*", help="pattern:op:dtype[:shapes]")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--summarize", action="store_true", help="re-render from the workspaces in --out (no GPU)")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.summarize:
        for spec in args.specs:
            ws = bake(args.out, spec)
            print(f"{spec}: {'baked' if ws.is_dir() else 'bake FAILED, see the log'}", flush=True)
    rows, meta, arts = [], {}, []
    for ws in sorted(d for d in args.out.iterdir() if (d / "results" / "results.json").is_file()):
        rows += rows_of(ws)
        arts.append(artifacts(ws))
        res = json.loads((ws / "results" / "results.json").read_text())
        meta = {"device": res.get("device"), "torch": res.get("torch")}
    summary = {**meta, "rows": rows, "artifacts": arts}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / "summary.md").write_text(render(summary))
    print(render(summary))
    return 0 if rows and all(r["status"] == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
