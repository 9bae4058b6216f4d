"""H200 benchmark of the elementwise cell: bake every op through the template, let the post-gen hook run
the V0 flow, then add a device-copy ceiling and a launch-shape sweep measured with the same timer.

    python benchmarks/bench_elementwise.py --out /tmp/bench --sweep               # bf16, plus the launch sweep
    python benchmarks/bench_elementwise.py --out /tmp/bench2 --dtype fp16 --dtype fp32
    python benchmarks/bench_elementwise.py --out /tmp/bench --summarize           # re-render, no GPU

Writes <out>/summary.md (tables) and <out>/summary.json. The kernel-vs-torch ratios come from each
workspace's own V0 run (results/results.json): kernel and torch eager timed in one process with
one method (CUDA events, cold L2, median).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPS = ["add", "mul", "silu", "gelu", "relu", "silu_mul"]
HEADLINE = "rep_268435456"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    return module


def bake(out: Path, op: str, dtype: str) -> Path:
    name = f"{op}_{dtype}_h200"
    done = subprocess.run([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(out),
                           f"op={op}", f"dtype={dtype}", "gpu=H200", f"op_name={name}"],
                          capture_output=True, text=True)
    (out / f"{name}.bake.log").write_text(done.stdout + done.stderr)
    return out / name


def hint_variants():
    import cutlass.cute as cute

    nv = cute.nvgpu
    return {
        "none": ({}, {}),
        "ld.nc": ({"invariant": True}, {}),
        "ld.L1::no_allocate + st.cs": ({"l1c_evict_priority": nv.CacheEvictionPriority.NO_ALLOCATE},
                                       {"store_cache_mode": nv.StoreCacheMode.STREAMING}),
        "ld.cs + st.cs": ({"load_cache_mode": nv.LoadCacheMode.STREAMING}, {"store_cache_mode": nv.StoreCacheMode.STREAMING}),
        "L1::evict_first": ({"l1c_evict_priority": nv.CacheEvictionPriority.EVICT_FIRST},
                            {"l1c_evict_priority": nv.CacheEvictionPriority.EVICT_FIRST}),
    }


def sweep(ws: Path, ops: list[str]) -> list[dict]:
    """Time launch shapes (THREADS x UNROLL) and cache hints for 2^28 bf16 elements, against torch eager."""
    import torch

    kernel = load(ws / "kernel.py", "sweep_kernel")
    harness = load(ws / "test_kernel.py", "sweep_harness")
    n = 2**28
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    y = torch.randn_like(x)
    out = torch.empty_like(x)
    eager = {"add": lambda: x + y, "silu": lambda: torch.nn.functional.silu(x),
             "silu_mul": lambda: torch.nn.functional.silu(x) * y}
    torch_us = {op: harness.bench(eager[op])["median_us"] for op in ops}
    hints = hint_variants()
    configs = [(t, u, "none") for t in (128, 256, 512) for u in (2, 4, 8)]
    configs += [(128, 2, h) for h in hints if h != "none"]
    rows = []
    for threads, unroll, hint in configs:
        kernel.THREADS = threads
        kernel.UNROLL.update({op: unroll for op in ops})
        kernel.LOAD_HINTS.clear()
        kernel.LOAD_HINTS.update(hints[hint][0])
        kernel.STORE_HINTS.clear()
        kernel.STORE_HINTS.update(hints[hint][1])
        kernel._compiled.clear()  # the compiled variants, and the hot path's handles to them
        kernel._launches.clear()
        for op in ops:
            args = (x, y) if op in kernel.BINARY_OPS else (x,)
            t = harness.bench(lambda op=op, args=args: kernel.run(*args, out=out, op=op))["median_us"]
            nbytes = (len(args) + 1) * n * 2
            rows.append({"threads": threads, "unroll": unroll, "hints": hint, "op": op, "latency_us": t,
                         "gbps": nbytes / (t * 1e-6) / 1e9, "speedup_vs_torch": torch_us[op] / t})
    return rows


def collect(out: Path, dtypes: list[str]) -> list[dict]:
    """One row per (dtype, op) from its workspace's own V0 run: kernel, torch eager and copy timed in one process."""
    rows = []
    for dtype, op in ((d, o) for d in dtypes for o in OPS):
        ws = out / f"{op}_{dtype}_h200"
        results = json.loads((ws / "results" / "results.json").read_text())
        util = json.loads((ws / "results" / "utilization.json").read_text())[HEADLINE]
        memory = json.loads((ws / "memory" / "v0.json").read_text())
        head = next(r for r in results["cases"] if r["name"] == HEADLINE)
        rows.append({
            "op": op, "dtype": dtype, "device": results["device"], "torch": results["torch"], "date": results["date"],
            "passed": sum(r["status"] == "PASS" for r in results["cases"]), "total": len(results["cases"]),
            "max_rel_err": results["max_rel_err"], "latency_us": head["latency_us"], "gbps": util["bandwidth_gbps"],
            "pct_cited": util["bandwidth_peak_utilization_pct"], "copy_gbps": results["device_copy"]["gbps"],
            "pct_copy": util["copy_bandwidth_utilization_pct"], "torch_us": head["torch_latency_us"],
            "speedup": head["speedup_vs_torch"], "quality_gate": memory["quality_gate"]["result"],
            "cases": results["cases"],
        })
    return rows


def render(summary: dict) -> str:
    rows = summary["rows"]
    md = [f"Device: {rows[0]['device']}; torch {rows[0]['torch']}; {rows[0]['date']}",
          "", f"Headline case `{HEADLINE}` (2^28 elements). 'copy' is the 1 GiB device-to-device copy timed in the "
          "same process as that op's kernel and torch eager.", "",
          "| dtype | op | correctness | max rel_err | latency (us) | GB/s | % of cited 4800 | copy GB/s | % of copy | "
          "torch eager (us) | speedup vs torch | gate |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['dtype']} | {r['op']} | {r['passed']}/{r['total']} PASS | {r['max_rel_err']:.2e} | {r['latency_us']:.1f} | "
                  f"{r['gbps']:.0f} | {r['pct_cited']:.1f} | {r['copy_gbps']:.0f} | {r['pct_copy']:.1f} | "
                  f"{r['torch_us']:.1f} | {r['speedup']:.3f}x | {r['quality_gate']} |")
    if summary.get("sweep"):
        md += ["", "Launch-shape and cache-hint sweep (same timer, 2^28 bf16):", "",
               "| threads | unroll | cache hints | op | latency (us) | GB/s | speedup vs torch |",
               "|---|---|---|---|---|---|---|"]
        md += [f"| {s['threads']} | {s['unroll']} | {s['hints']} | {s['op']} | {s['latency_us']:.1f} | {s['gbps']:.0f} | "
               f"{s['speedup_vs_torch']:.3f}x |" for s in summary["sweep"]]
    return "\n".join(md) + "\n"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--dtype", action="append", choices=["bf16", "fp16", "fp32"], help="repeatable; default bf16")
    p.add_argument("--sweep", action="store_true")
    p.add_argument("--summarize", action="store_true", help="re-render <out>/summary.md from an earlier run (no GPU)")
    args = p.parse_args()
    dtypes = args.dtype or ["bf16"]
    if args.summarize:
        summary = json.loads((args.out / "summary.json").read_text())
        summary["rows"] = collect(args.out, summary["dtypes"])
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        for dtype in dtypes:
            for op in OPS:
                bake(args.out, op, dtype)
        summary = {"dtypes": dtypes, "rows": collect(args.out, dtypes)}
        if args.sweep:
            summary["sweep"] = sweep(args.out / f"add_{dtypes[0]}_h200", ["add", "silu", "silu_mul"])
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    md = render(summary)
    (args.out / "summary.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
