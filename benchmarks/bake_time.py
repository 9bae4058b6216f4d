"""Time the bake on a machine without a GPU: the default Hopper bake, and the FlyDSL compile of an AMD bake.

    python benchmarks/bake_time.py                                  # 5 Hopper bakes + 3 MI300X bakes of this tree
    python benchmarks/bake_time.py --template /tmp/orig --runs 5    # the same for another checkout (a before/after)
    python benchmarks/bake_time.py --json benchmarks/results/2026-12-01-bake-time.json

Each bake is `python -m cookiecutter <template> --no-input -o <fresh dir>` exactly as a user types it (the
default inputs: GEMM matmul bf16 for H200; `gpu=MI300X` for the AMD one), run from a directory outside the
template, timed wall-clock from start to exit. For the AMD bake the compile step's own line ("compile step took
X s") and results/compile_only.json's compile seconds are read back. The load average is recorded before and
after, since the machine may be shared: prints a markdown table, and writes the raw numbers with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def bake(template: Path, work: Path, pairs: list[str]) -> dict:
    out = Path(tempfile.mkdtemp(dir=work))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cookiecutter", str(template), "--no-input", "-o", str(out), *pairs],
                          cwd=work, capture_output=True, text=True, env=env, timeout=600)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bake failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    row = {"wall_s": round(wall, 3), "load_1min": os.getloadavg()[0]}
    took = re.search(r"compile step took ([0-9.]+) s", done.stdout)
    if took:
        row["compile_step_s"] = float(took.group(1))
    for check in out.glob("*/results/compile_only.json"):
        row["compile_s"] = round(json.loads(check.read_text())["seconds"], 3)
    return row


def summary(rows: list[dict], key: str) -> str:
    values = [r[key] for r in rows if key in r]
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Time the default Hopper bake and an AMD bake's compile, no GPU.")
    p.add_argument("--template", type=Path, default=ROOT, help="the template checkout to bake (default: this one)")
    p.add_argument("--runs", type=int, default=5, help="Hopper bakes (default 5)")
    p.add_argument("--amd-runs", type=int, default=3, help="MI300X bakes (default 3; 0 to skip)")
    p.add_argument("--json", type=Path, help="write the raw numbers here")
    args = p.parse_args(argv)
    template = args.template.resolve()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=template, capture_output=True,
                            text=True).stdout.strip()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kb-bake-time-") as tmp:
        work = Path(tmp)
        hopper = [bake(template, work, []) for _ in range(args.runs)]
        amd = [bake(template, work, ["gpu=MI300X"]) for _ in range(args.amd_runs)]
    load_after = os.getloadavg()
    info = {"date": date.today().isoformat(), "template": str(template), "commit": commit, "cpu": cpu_model(),
            "cores": os.cpu_count(), "python": platform.python_version(),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after],
            "hopper": hopper, "amd": amd}
    print(f"{info['date']}, {info['cpu']}, {info['cores']} cores, Python {info['python']}, template {commit}; "
          f"load average before {info['load_before']}, after {info['load_after']}\n")
    print("| bake | runs | wall s, median (min, max) | FlyDSL compile step s | compile s (compile_only.json) |")
    print("|---|---:|---|---|---|")
    print(f"| default (gemm matmul bf16, H200) | {len(hopper)} | {summary(hopper, 'wall_s')} | - | - |")
    if amd:
        print(f"| gpu=MI300X (gemm matmul bf16) | {len(amd)} | {summary(amd, 'wall_s')} | "
              f"{summary(amd, 'compile_step_s')} | {summary(amd, 'compile_s')} |")
    print("\nper run:", ", ".join(f"{r['wall_s']:.2f}" for r in hopper),
          "| AMD:", ", ".join(f"{r['wall_s']:.2f}" for r in amd))
    if args.json:
        args.json.write_text(json.dumps(info, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
