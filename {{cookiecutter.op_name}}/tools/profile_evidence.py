"""Profile evidence for one case of this workspace's kernel: Nsight Compute where it can read the counters, else
torch.profiler's kernel table. The evidence always says which tool made it.

    python tools/profile_evidence.py [--case NAME]     # on the GPU; prints memory's `profile_evidence` as JSON

Nsight Compute runs this file again as its child (`--child`), which loads the workspace as a package (its
__init__.py), runs the case's kernel three times to compile and warm it, and then once inside the NVTX range
`kb_profile`, which is the only range ncu profiles. The command is fixed, so that two versions' evidence compares:

    ncu --clock-control none --nvtx --nvtx-include kb_profile/ --section SpeedOfLight
        --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --csv --page details ...

- `--clock-control none` leaves the GPU's clocks as they are. ncu's default locks them to base clocks, whose
  durations then disagree with the harness's timings of the same kernel;
- the four sections are speed of light (the share of peak memory and compute throughput the kernel reaches),
  memory workload (bandwidth and hit rates per level), warp state (what the warps wait on) and launch (grid,
  block, registers, shared memory, waves). Every metric of those sections is kept, as
  "k<i> <section>/<metric> [<unit>]" for the i-th kernel of the launch (decode attention launches two).
  `bottleneck` compares speed of light's memory and compute throughput.

Where ncu is not on PATH, or cannot read the performance counters (ERR_NVGPUCTRPERM: the driver keeps them for
admins unless NVreg_RestrictProfilingToAdminUsers=0), the evidence is torch.profiler's table of the kernels one
call launches (name, calls, mean GPU time) and says why ncu was not used. That table has times only, so its
bottleneck is "not measured".
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import compute_utilization

WS = Path(__file__).resolve().parent.parent
SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "WarpStateStats", "LaunchStats")
NVTX_RANGE = "kb_profile"
MARK = "KB_PROFILE "  # the child's one line of JSON for the torch.profiler table
TIMEOUT_S = 600


def ncu_command(ncu: str, case: str) -> list[str]:
    sections = [arg for name in SECTIONS for arg in ("--section", name)]
    return [ncu, "--clock-control", "none", "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/", *sections, "--csv",
            "--page", "details", sys.executable, str(Path(__file__).resolve()), "--child", "--case", case]


def _number(text: str):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text or None


def parse_ncu(text: str) -> tuple[dict, str]:
    """(metrics, bottleneck) from ncu's `--csv --page details` output."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return {}, "not measured (ncu printed no metrics)"
    metrics, kernels, sol = {}, {}, {}
    for row in csv.DictReader(lines[start:]):
        if not row.get("Metric Name"):
            continue
        index = kernels.setdefault(row["ID"], len(kernels))
        unit = f" [{row['Metric Unit']}]" if row.get("Metric Unit") else ""
        value = _number(row.get("Metric Value", ""))
        metrics[f"k{index} {row['Section Name']}/{row['Metric Name']}{unit}"] = value
        if index == 0 and row["Section Name"] == "GPU Speed Of Light Throughput" and isinstance(value, float):
            sol[row["Metric Name"]] = value
        if index == 0:
            metrics.setdefault("k0 kernel", row.get("Kernel Name", "")[:200])
    mem, sm = sol.get("Memory Throughput"), sol.get("Compute (SM) Throughput")
    if mem is None or sm is None:
        return metrics, "not measured (no speed-of-light throughput in ncu's output)"
    if max(mem, sm) < 60:
        return metrics, (f"latency: neither memory ({mem:.0f}% of peak) nor compute ({sm:.0f}%) throughput is above "
                         "60% (warp state says what the warps wait on)")
    side = "memory" if mem >= sm else "compute"
    return metrics, f"{side}: memory throughput {mem:.0f}% of peak, compute (SM) {sm:.0f}% (ncu speed of light)"


def _torch_profiler(case: str, why: str) -> dict:
    """The fallback: torch.profiler's kernel table for one call, from a child (this file with --child --table)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--table", "--case", case]
    done = subprocess.run(cmd, cwd=WS, capture_output=True, text=True, timeout=TIMEOUT_S)
    line = next((x for x in done.stdout.splitlines() if x.startswith(MARK)), None)
    if line is None:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return {"tool": "none", "command": " ".join(cmd), "bottleneck": "not measured", "metrics": {},
                "notes": f"{why}; torch.profiler's fallback failed too: {tail}"}
    table = json.loads(line[len(MARK):])
    metrics = {f"k{i} {k['name'][:120]} [us mean of {k['calls']}]": round(k["us"], 3) for i, k in enumerate(table)}
    return {"tool": "torch.profiler", "command": " ".join(cmd), "bottleneck": "not measured (torch.profiler gives "
            "kernel times only)", "metrics": metrics, "notes": f"{why}; torch.profiler's kernel table instead"}


def evidence(case: str) -> dict:
    """memory's profile_evidence for `case`: ncu's fixed sections where it can read the counters, else the fallback."""
    ncu = shutil.which("ncu")
    if not ncu:
        return _torch_profiler(case, "ncu is not on PATH")
    cmd = ncu_command(ncu, case)
    try:
        done = subprocess.run(cmd, cwd=WS, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return _torch_profiler(case, f"ncu did not finish in {TIMEOUT_S} s")
    out = done.stdout + done.stderr
    if "ERR_NVGPUCTRPERM" in out:
        return _torch_profiler(case, "ncu cannot read the GPU's performance counters here (ERR_NVGPUCTRPERM)")
    metrics, bottleneck = parse_ncu(done.stdout)
    if not metrics:
        tail = (out.strip().splitlines() or ["no output"])[-1][:300]
        return _torch_profiler(case, f"ncu gave no metrics (exit {done.returncode}: {tail})")
    return {"tool": "ncu", "command": " ".join(cmd[:-4] + ["<this case>"]), "bottleneck": bottleneck,
            "metrics": metrics, "notes": f"sections {', '.join(SECTIONS)}; clocks not locked (--clock-control none)"}


def _child(case_name: str, table: bool) -> int:
    """Run the case's kernel: warm-up, then one call in the NVTX range (ncu), or a torch.profiler table of 10 calls."""
    spec = importlib.util.spec_from_file_location("kb_profiled", WS / "__init__.py", submodule_search_locations=[str(WS)])
    ws = importlib.util.module_from_spec(spec)
    sys.modules["kb_profiled"] = ws
    spec.loader.exec_module(ws)
    import torch

    case = next(c for c in ws.OP["cases"] if c["name"] == case_name)
    inputs = ws.reference.make_inputs(case, getattr(torch, ws.OP["torch_dtype"]), "cuda", 3000)
    out = ws.run(*inputs)
    for _ in range(3):
        ws.run(*inputs, out=out)
    torch.cuda.synchronize()
    if not table:
        torch.cuda.nvtx.range_push(NVTX_RANGE)
        ws.run(*inputs, out=out)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        return 0
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            ws.run(*inputs, out=out)
        torch.cuda.synchronize()
    rows = [{"name": e.key, "calls": e.count, "us": e.device_time_total / max(e.count, 1)}
            for e in prof.key_averages() if e.device_time_total > 0]
    print(MARK + json.dumps(sorted(rows, key=lambda r: -r["us"])[:8]), flush=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Profile evidence for one case (ncu, else torch.profiler).")
    p.add_argument("--case", default=None, help="a case of op.json (default: the headline case)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--table", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    op = json.loads((WS / "op.json").read_text())
    names = [c["name"] for c in op["cases"]]
    case = args.case or compute_utilization.headline_case(op)["name"]
    if case not in names:
        p.exit(2, f"profile: error: --case {case}: not a case of op.json; known cases: {', '.join(names)}\n")
    if args.child:
        return _child(case, args.table)
    print(json.dumps(evidence(case), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
