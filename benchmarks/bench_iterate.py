"""Two real iterations of one baked workspace on the GPU, through its own tools/iterate.py, collected into --out.

    python benchmarks/bench_iterate.py --out /tmp/bench_iterate                   # on the H200 (device setup first)
    python benchmarks/bench_iterate.py --out /tmp/bench_iterate --pattern reduction --op rmsnorm --shapes 32768x8192

What it does, in a workspace baked through this template (`cookiecutter --no-input ... run_baseline=no`):

1. V0 from a de-tuned kernel: kernel.py gets a block appended that makes run() launch the kernel twice (the output
   is the same), and `python tools/run_baseline.py` runs and commits V0 as usual. The de-tuning is what gives the
   next step a gain known in advance: this script shows the loop's machinery, not a kernel optimization;
2. V1, faster: the block is removed (one launch per run()), then `python tools/iterate.py --action ... --category
   launch_config`: every case, the A/B against V0's kernel read back from its commit, launch by launch, ISA
   progress, profile evidence (ncu with --clock-control none where it can read the counters, else torch.profiler,
   said which), the gate, memory/v1.json, the commit "V1: ...";
3. V2, a deliberate regression: run() launches the kernel three times; iterate.py records it masked (the gate fails
   on the slowdown beyond the spread) and does not commit it.

Collected into --out: each step's log, memory/v*.json, reports/v*_report.md, results/v*.json, results/versions.png,
the README's Versions table, `git log`, and summary.md (speedups with their intervals, the masked reason, the profile
tool and bottleneck of each version). Nothing is judged here beyond what iterate.py's own gate says.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "# --- bench_iterate: de-tuning block ---"


def launches(times: int) -> str:
    """A block appended to kernel.py: run() launches the kernel `times` times (the same output each time)."""
    return (f"\n\n{MARK}\n_run_once = run\n\n\ndef run(*inputs, out=None):\n"
            f"    \"\"\"bench_iterate.py's de-tuning: the kernel launched {times} times (same output).\"\"\"\n"
            f"    for _ in range({times - 1}):\n        out = _run_once(*inputs, out=out)\n"
            "    return _run_once(*inputs, out=out)\n")


def set_launches(ws: Path, times: int) -> None:
    kernel = ws / "kernel.py"
    text = kernel.read_text().split(f"\n\n{MARK}")[0]
    kernel.write_text(text + (launches(times) if times > 1 else ""))


def step(ws: Path, out: Path, name: str, *cmd: str) -> int:
    done = subprocess.run([sys.executable, *cmd], cwd=ws, capture_output=True, text=True)
    (out / f"{name}.log").write_text(f"$ python {' '.join(cmd)}\nexit {done.returncode}\n{done.stdout}{done.stderr}")
    print(f"{name}: exit {done.returncode}", flush=True)
    return done.returncode


def summary(ws: Path, codes: dict) -> str:
    lines = [f"# Two iterations of `{ws.name}` through tools/iterate.py", "",
             *[f"- {k}: exit {v}" for k, v in codes.items()], "",
             "| version | masked | gate | reason | speedup vs parent [95%] | GPU us | eager x | compile x | profile tool "
             "| bottleneck |", "|---|---|---|---|---|---|---|---|---|---|"]
    for path in sorted((ws / "memory").glob("v*.json")) + sorted((ws / "memory" / "masked").glob("v*.json")):
        r = json.loads(path.read_text())
        ab, perf, prof = r.get("versus_parent") or {}, r["performance"], r["profile_evidence"]
        sp = f"{ab['speedup']:.3f}x [{ab['speedup_low']:.3f}, {ab['speedup_high']:.3f}]" if ab.get("speedup") else "-"
        lines.append(f"| {r['version']} ({path.name}) | {r['masked']} | {r['quality_gate']['result']} | "
                     f"{r['quality_gate'].get('failure_reason') or '-'} | {sp} | {perf.get('latency_us')} | "
                     f"{perf.get('speedup_vs_torch')} | {perf.get('speedup_vs_torch_compile')} | {prof.get('tool')} | "
                     f"{prof.get('bottleneck')} |")
    log = subprocess.run(["git", "log", "--format=%h %s"], cwd=ws, capture_output=True, text=True).stdout
    return "\n".join(lines + ["", "```", log.strip(), "```", "", "![versions](versions.png)", ""])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="the logs, records, reports, plot and summary")
    p.add_argument("--work", type=Path, help="where the workspace is baked (default: a new temporary folder), so "
                                               "that --out holds only what is worth bringing back")
    p.add_argument("--pattern", default="elementwise")
    p.add_argument("--op", default="silu_mul")
    p.add_argument("--shapes", default="16777216;4096x14336", help="the workspace's timed shapes (its grammar)")
    args = p.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    name = f"iter_{args.op}"
    work = (args.work or Path(tempfile.mkdtemp(prefix="kb-iterate-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    ws = work / name
    if ws.exists():
        sys.exit(f"bench_iterate: error: {ws} exists; give another --work (nothing was changed)")
    done = subprocess.run([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(work),
                           f"pattern={args.pattern}", f"op={args.op}", "gpu=H200", "run_baseline=no",
                           f"op_name={name}", f"shapes={args.shapes}"], capture_output=True, text=True)
    (out / "bake.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        sys.exit(f"bench_iterate: error: the bake failed: {(done.stdout + done.stderr).strip()[-300:]}")
    codes = {}
    set_launches(ws, 2)
    codes["v0 (de-tuned: two launches per run)"] = step(ws, out, "v0", "tools/run_baseline.py")
    set_launches(ws, 1)
    codes["v1 (one launch per run)"] = step(ws, out, "v1", "tools/iterate.py", "--action",
                                            "one launch per run() (the de-tuning removed)", "--category",
                                            "launch_config")
    set_launches(ws, 3)
    codes["v2 (deliberate regression: three launches)"] = step(ws, out, "v2", "tools/iterate.py", "--action",
                                                               "deliberate regression: three launches per run()",
                                                               "--category", "other")
    for rel in ("memory", "reports"):
        if (ws / rel).is_dir():
            shutil.copytree(ws / rel, out / rel, dirs_exist_ok=True)
    for f in (ws / "results").glob("*"):
        if f.is_file():
            shutil.copy2(f, out / f.name)
    (out / "summary.md").write_text(summary(ws, codes))
    print((out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
