"""H200 check and benchmark of a GEMM cell (C = A @ B.T): correctness on every shape, then kernel vs torch timing.

    python benchmarks/bench_gemm.py --kernel-dir '<a baked gemm workspace>' --out /tmp/gemm
    python benchmarks/bench_gemm.py --kernel-dir <workspace> --out /tmp/gemm --dtype bf16 --sweep

The kernel dir is a baked gemm workspace (kernel.py, its runtime and op.json). One process: for each dtype,
every shape is checked (fresh randn
inputs, NaN-poisoned out, rel_err = ||out - ref|| / ||ref|| in float64 against an fp32 torch matmul with TF32
off, must be < 1e-2); then the representative shapes are timed, kernel and torch (`a @ b.T`, cuBLAS) with one
timer: CUDA events around each launch, L2 flushed before each, median after warm-up (the workspace harness's
bench()), in --repeats alternating rounds (median of rounds). --sweep also times alternative tile configs
of the CuTe DSL cell on the square shapes.
Writes <out>/gemm_summary.md and <out>/gemm_summary.json.
"""

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

from harness import bench

PEAK_TFLOPS = 989.0  # H200 dense bf16/fp16
TOL = 1e-2
REPRESENTATIVE = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096), (4096, 4096, 14336),
                  (16, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192)]
BOUNDARY = [(1000, 1000, 64), (1, 4096, 4096), (4095, 4097, 4096)]
SKINNY_M = 128  # M <= this: memory-bound, also report GB/s


def load_kernel(kernel_dir: Path, dtype: str):
    """kernel.py of a baked gemm workspace (it imports host.py and cutedsl_runtime.py beside it, and reads op.json)."""
    sys.path.insert(0, str(kernel_dir))
    spec = importlib.util.spec_from_file_location(f"gemm_kernel_{dtype}", kernel_dir / "kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs(m: int, n: int, k: int, torch_dtype, seed: int):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=torch_dtype, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch_dtype, generator=g)
    return a, b


def check(kernel, m: int, n: int, k: int, torch_dtype, seed: int, cfg=None) -> dict:
    import torch

    a, b = inputs(m, n, k, torch_dtype, seed)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch_dtype)
    row = {"M": m, "N": n, "K": k}
    try:
        kernel.run(a, b, out=out, **({"cfg": cfg} if cfg is not None else {}))
        torch.cuda.synchronize()
    except Exception as e:  # record, keep going
        return {**row, "status": "FAIL", "rel_err": None, "error": f"{type(e).__name__}: {e}"[:300]}
    ref = (a.float() @ b.float().T).double()
    got = out.double()
    rel = float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))
    ok = rel == rel and rel < TOL and not torch.isnan(got).any().item()
    return {**row, "status": "PASS" if ok else "FAIL", "rel_err": rel}


def time_shape(kernel, m: int, n: int, k: int, torch_dtype, seed: int, cfg=None, repeats: int = 1) -> dict:
    """Kernel and torch timed alternately `repeats` times (clocks drift under the power cap: alternating rounds
    keep that drift from favouring one side); each side's time is the median over its rounds."""
    import torch

    a, b = inputs(m, n, k, torch_dtype, seed)
    out = torch.empty(m, n, device="cuda", dtype=torch_dtype)
    kw = {"cfg": cfg} if cfg is not None else {}
    ks, ts = [], []
    for _ in range(repeats):
        ks.append(bench(lambda: kernel.run(a, b, out=out, **kw))["median_us"])
        ts.append(bench(lambda: a @ b.T)["median_us"])
    kt, tt = statistics.median(ks), statistics.median(ts)
    flops = 2.0 * m * n * k
    nbytes = (m * k + n * k + m * n) * a.element_size()
    return {"M": m, "N": n, "K": k, "kernel_us": kt, "torch_us": tt, "kernel_rounds_us": ks, "torch_rounds_us": ts,
            "tflops": flops / kt / 1e6, "torch_tflops": flops / tt / 1e6,
            "pct_peak": flops / kt / 1e6 / PEAK_TFLOPS * 100,
            "gbps": nbytes / kt / 1e3, "torch_gbps": nbytes / tt / 1e3, "ratio_vs_torch": tt / kt}


def rounds(r: dict) -> str:
    ks, ts = r.get("kernel_rounds_us", []), r.get("torch_rounds_us", [])
    return ", ".join(f"{x:.0f}/{y:.0f}" for x, y in zip(ks, ts))


def render(summary: dict) -> str:
    md = [f"Device: {summary['device']}; torch {summary['torch']}; kernel dir `{summary['kernel_dir']}`", "",
          "Correctness (rel_err vs fp32 torch reference, float64 norms; NaN-poisoned out; tolerance 1e-2):", "",
          "| dtype | M | N | K | status | rel_err |", "|---|---|---|---|---|---|"]
    for d, rows in summary["checks"].items():
        for r in rows:
            err = f"{r['rel_err']:.2e}" if r["rel_err"] is not None else r.get("error", "")
            md.append(f"| {d} | {r['M']} | {r['N']} | {r['K']} | {r['status']} | {err} |")
    md += ["", "Timing (median, CUDA events, L2 flushed before each launch; torch = `a @ b.T`, same process "
           "and timer):",
           "", "| dtype | M | N | K | kernel (us) | TFLOP/s | % of 989 | GB/s | torch (us) | torch TFLOP/s | "
           "ratio vs torch | kernel / torch per round (us) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for d, rows in summary["timing"].items():
        for r in rows:
            gbps = f"{r['gbps']:.0f}" if r["M"] <= SKINNY_M else "-"
            md.append(f"| {d} | {r['M']} | {r['N']} | {r['K']} | {r['kernel_us']:.1f} | {r['tflops']:.0f} | "
                      f"{r['pct_peak']:.1f} | {gbps} | {r['torch_us']:.1f} | {r['torch_tflops']:.0f} | "
                      f"{r['ratio_vs_torch']:.3f}x | {rounds(r)} |")
    if summary.get("sweep"):
        md += ["", "Config sweep (bf16):", "", "| config | M | N | K | kernel (us) | TFLOP/s | ratio vs torch |",
               "|---|---|---|---|---|---|---|"]
        md += [f"| {r['config']} | {r['M']} | {r['N']} | {r['K']} | {r['kernel_us']:.1f} | {r['tflops']:.0f} | "
               f"{r['ratio_vs_torch']:.3f}x |" if "check" not in r else f"| {r['config']} | correctness FAIL "
               f"{r['check']} | | | | | |" for r in summary["sweep"]]
    return "\n".join(md) + "\n"


def sweep_configs(kernel) -> dict:
    """Alternative configs of the CuTe DSL cell (it exposes Config / DEFAULT); empty for other cells."""
    if not hasattr(kernel, "Config"):
        return {}
    from dataclasses import replace

    d = kernel.DEFAULT
    return {"default 128x256 c2x1 g8": d, "c1x1": replace(d, cluster_m=1), "c1x2": replace(d, cluster_m=1, cluster_n=2),
            "g4": replace(d, group_m=4), "g16": replace(d, group_m=16), "128x128 c2x1": replace(d, tile_n=128),
            "default (repeat)": d}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--kernel-dir", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--dtype", action="append", choices=["bf16", "fp16"], help="repeatable; default bf16 and fp16")
    p.add_argument("--sweep", action="store_true")
    p.add_argument("--no-timing", action="store_true")
    p.add_argument("--repeats", type=int, default=3, help="alternating kernel/torch timing rounds per shape")
    args = p.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference must be fp32
    dtypes = args.dtype or ["bf16", "fp16"]
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "kernel_dir": str(args.kernel_dir),
               "checks": {}, "timing": {}, "sweep": []}

    def save():
        (args.out / "gemm_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        (args.out / "gemm_summary.md").write_text(render(summary))

    for d in dtypes:
        kernel = load_kernel(args.kernel_dir, d)
        summary["checks"][d] = []
        for i, (m, n, k) in enumerate(REPRESENTATIVE + BOUNDARY):
            t0 = time.perf_counter()
            r = check(kernel, m, n, k, tdt[d], seed=1000 + i)
            summary["checks"][d].append(r)
            print(f"check {d} {m}x{n}x{k}: {r['status']} rel_err={r['rel_err']} {r.get('error', '')} "
                  f"({time.perf_counter() - t0:.1f}s)", flush=True)
            save()
        if args.no_timing:
            continue
        summary["timing"][d] = []
        for i, (m, n, k) in enumerate(REPRESENTATIVE):
            r = time_shape(kernel, m, n, k, tdt[d], seed=2000 + i, repeats=args.repeats)
            summary["timing"][d].append(r)
            print(f"time {d} {m}x{n}x{k}: {r['kernel_us']:.1f} us {r['tflops']:.0f} TFLOP/s, "
                  f"torch {r['torch_us']:.1f} us, ratio {r['ratio_vs_torch']:.3f}", flush=True)
            save()
        if args.sweep and d == dtypes[0]:
            for name, cfg in sweep_configs(kernel).items():
                c = check(kernel, 4095, 4096, 4096, tdt[d], seed=3001, cfg=cfg)
                print(f"sweep {name} check 4095x4096x4096: {c['status']} {c['rel_err']}", flush=True)
                if c["status"] != "PASS":
                    summary["sweep"].append({"config": name, "check": c})
                    continue
                for m, n, k in [(8192, 8192, 8192), (4096, 4096, 4096)]:
                    try:
                        r = {"config": name, **time_shape(kernel, m, n, k, tdt[d], seed=3000, cfg=cfg)}
                    except Exception as e:
                        print(f"sweep {name} failed: {type(e).__name__}: {e}"[:300], flush=True)
                        break
                    summary["sweep"].append(r)
                    print(f"sweep {name} {m}: {r['kernel_us']:.1f} us {r['tflops']:.0f} TFLOP/s ratio "
                          f"{r['ratio_vs_torch']:.3f}", flush=True)
                    save()
    save()
    print(render(summary))
    return 0 if all(r["status"] == "PASS" for rows in summary["checks"].values() for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
