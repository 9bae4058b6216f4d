"""The kernel demo on the H200, through the template's V0 flow: each workspace baked with a `kernel_demo`, its own
`tools/run_baseline.py` run, and one summary of the demo's rows beside V0's and torch's.

    source benchmarks/device_setup.sh && python3 benchmarks/bench_demo.py --out /tmp/demo     # bake, run, summarize
    python3 benchmarks/bench_demo.py --out /tmp/demo --bake-only                               # bake only (any CPU)
    python3 benchmarks/bench_demo.py --out /tmp/demo --summarize                               # re-render a run

--out holds the five workspaces as well as summary.md and summary.json: on the device machine give it a folder
outside $OUT and copy the two summaries into $OUT (a run's returned files are limited in number).

The bakes (`cookiecutter --no-input ... run_baseline=no`, gpu=H200, bf16):
  triton_fused_add_rmsnorm  a Triton fused add + RMSNorm (tests/demos/fused_add_rmsnorm_triton.py) beside its PyTorch
                            function (tests/demos/fused_add_rmsnorm_torch.py, lowered into the row cell): a peer
  quack_rmsnorm             quack's rmsnorm (benchmarks/demos/quack_rmsnorm.py; pip quack-kernels) as the demo of the
                            built-in rmsnorm (pattern=reduction op=rmsnorm, no PyTorch function): the reference
  disagrees                 an RMSNorm that forgets its weight (benchmarks/demos/rmsnorm_no_weight.py) beside the
                            PyTorch RMSNorm (benchmarks/demos/rmsnorm_torch.py): DISAGREE on every case, V0 PASS
  raises                    an RMSNorm that raises on rows wider than 4096 (benchmarks/demos/rmsnorm_raises.py),
                            beside the same function: ERROR on those cases, AGREE on the others, V0 PASS
  missing_package           a demo importing a package that is not installed (rmsnorm_missing_package.py), as the
                            built-in rmsnorm's reference: MISSING_PACKAGE on every case, V0 judged by the expression
Then `python tools/run_baseline.py --no-commit` in each (torch.compile off, where the harness has it: the demo, V0 and
torch eager are the comparison here), one workspace at a time so that the timings do not share the GPU. The V0
and demo times of a row come from one process (results/results.json: same inputs, CUDA events with a cold L2,
median; warm back-to-back calls for the call time). Writes <out>/summary.md, <out>/summary.json and each bake's and
run's log.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS, DEMOS = ROOT / "tests" / "demos", ROOT / "benchmarks" / "demos"

BAKES = {
    "triton_fused_add_rmsnorm": [f"pytorch_logic={TESTS / 'fused_add_rmsnorm_torch.py'}:fused_add_rmsnorm",
                                 f"kernel_demo={TESTS / 'fused_add_rmsnorm_triton.py'}:fused_add_rmsnorm"],
    "quack_rmsnorm": [f"kernel_demo={DEMOS / 'quack_rmsnorm.py'}:rmsnorm", "pattern=reduction", "op=rmsnorm"],
    "disagrees": [f"pytorch_logic={DEMOS / 'rmsnorm_torch.py'}:rmsnorm",
                  f"kernel_demo={DEMOS / 'rmsnorm_no_weight.py'}:rmsnorm"],
    "raises": [f"pytorch_logic={DEMOS / 'rmsnorm_torch.py'}:rmsnorm", f"kernel_demo={DEMOS / 'rmsnorm_raises.py'}:rmsnorm"],
    "missing_package": [f"kernel_demo={DEMOS / 'rmsnorm_missing_package.py'}:rmsnorm", "pattern=reduction",
                        "op=rmsnorm"],
}


def bake(out: Path, name: str, shapes: str) -> dict:
    if (out / name).exists():
        return {"name": name, "baked": True, "exit": 0, "note": "already baked"}
    pairs = [*BAKES[name], f"op_name={name}", "gpu=H200", "dtype=bf16", "run_baseline=no"]
    if shapes:
        pairs.append(f"shapes={shapes}")
    done = subprocess.run([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(out), *pairs],
                          capture_output=True, text=True)
    (out / f"{name}.bake.log").write_text(done.stdout + done.stderr)
    op = out / name / "op.json"
    return {"name": name, "exit": done.returncode,
            "baked": op.is_file() and "demo" in json.loads(op.read_text()) and (out / name / "demo").is_dir()}


def run(out: Path, name: str, timeout: float) -> int:
    ws = out / name
    flags = ["--no-torch-compile"] if "--no-torch-compile" in (ws / "tools" / "run_baseline.py").read_text() else []
    done = subprocess.run([sys.executable, "tools/run_baseline.py", "--no-commit", "--timeout", str(timeout), *flags],
                          cwd=ws, capture_output=True, text=True)
    (out / f"{name}.run.log").write_text(done.stdout + done.stderr)
    return done.returncode


def _f(value, spec=".1f") -> str:
    return "-" if value is None else format(value, spec)


def rows_of(ws: Path) -> list[dict]:
    results = json.loads((ws / "results" / "results.json").read_text())
    out = []
    for r in results.get("cases", []):
        d = r.get("demo") or {}
        out.append({"workspace": ws.name, "case": r["name"], "v0": r["status"], "v0_checked_against":
                    r.get("checked_against", "reference.py"), "v0_rel_err": r.get("rel_err"),
                    "demo": d.get("status", "NOT_RUN" if not results.get("ran") else "-"),
                    "demo_rel_err": d.get("rel_err"), "v0_vs_demo_rel_err": d.get("v0_rel_err"),
                    "demo_error": d.get("error"), **{k: r.get(k) for k in (
                        "latency_us", "demo_latency_us", "torch_latency_us", "call_us", "demo_call_us",
                        "torch_call_us", "speedup_vs_demo", "speedup_vs_torch")}})
    return out


def summarize(out: Path) -> str:
    rows, lines = [], ["# Kernel demo on the H200 (benchmarks/bench_demo.py)", ""]
    for name in BAKES:
        ws = out / name
        if not (ws / "results" / "results.json").is_file():
            lines.append(f"- `{name}`: no results (see {name}.bake.log / {name}.run.log)")
            continue
        results = json.loads((ws / "results" / "results.json").read_text())
        lines.append(f"- `{name}`: {results.get('device') or 'not run'}; demo {json.dumps(results.get('demo'))}")
        rows += rows_of(ws)
    lines += ["", "| workspace | case | V0 | demo | demo rel_err vs ref | V0 rel_err vs demo | V0 GPU (us) | demo GPU (us) "
              "| torch GPU (us) | V0 vs demo | V0 call (us) | demo call (us) | torch call (us) | note |",
              "|" + "---|" * 14]
    for r in rows:
        note = (r["demo_error"] or "").replace("|", "/")[:100]
        lines.append(f"| {r['workspace']} | {r['case']} | {r['v0']} ({r['v0_checked_against'].split(' ')[0]}) | "
                     f"{r['demo']} | {_f(r['demo_rel_err'], '.2e')} | {_f(r['v0_vs_demo_rel_err'], '.2e')} | "
                     f"{_f(r['latency_us'])} | {_f(r['demo_latency_us'])} | {_f(r['torch_latency_us'])} | "
                     f"{_f(r['speedup_vs_demo'], '.2f')} | {_f(r['call_us'])} | {_f(r['demo_call_us'])} | "
                     f"{_f(r['torch_call_us'])} | {note} |")
    lines += ["", "V0 vs demo = demo GPU time / V0 GPU time, both from the same process and inputs."]
    (out / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", action="append", choices=list(BAKES), help="these bakes only (repeatable)")
    p.add_argument("--shapes", default="", help="reduction shapes for every bake (empty: the built-in set)")
    p.add_argument("--timeout", type=float, default=900, help="each workspace's whole test run, seconds")
    p.add_argument("--bake-only", action="store_true", help="bake and check the bakes; run nothing (no GPU needed)")
    p.add_argument("--summarize", action="store_true", help="only re-render the summary of an earlier run")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(BAKES)
    if not args.summarize:
        baked = [bake(args.out, name, args.shapes) for name in names]
        print(json.dumps(baked, indent=2))
        if not all(b["baked"] for b in baked):
            print("bench_demo: a bake failed; see its log", file=sys.stderr)
            return 1
        if args.bake_only:
            return 0
        for name in names:
            print(f"{name}: run_baseline exit {run(args.out, name, args.timeout)}", flush=True)
    print(summarize(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
