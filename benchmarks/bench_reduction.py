"""H200 benchmark of a reduction kernel dir: check correctness on every shape, then time kernel vs torch eager.

    python benchmarks/bench_reduction.py --kernel-dir <dir with kernel.py + op.json> --out /tmp/bench_red
    python benchmarks/bench_reduction.py --kernel-dir DIR --out OUT --sweep        # + values-per-thread sweep
    python benchmarks/bench_reduction.py --out OUT --summarize                      # re-render, no GPU

The kernel is called through its cell interface (run(x) / run(x, weight) with op= and out=), so one
kernel dir serves all five ops. Correctness: fresh randn x (and weight), out poisoned with NaN,
rel_err = ||out - ref|| / ||ref|| in float64 against torch on float64 inputs; padded row strides
come from slicing a wider tensor (x = base[:, :N]). Timing: the kernel, torch eager and a 1 GiB
device copy measured in one process with one timer (CUDA events, L2 flushed before each launch,
median after warm-up: the same method as the workspace harness's bench()). GB/s counts bytes read
(x, + weight) + bytes written (out). Writes <out>/summary.md and <out>/summary.json.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import sys
import time
import traceback
from pathlib import Path

from harness import bench, copy_ceiling

OPS = ["sum", "mean", "max", "softmax", "rmsnorm"]
DTYPES = ["bf16", "fp16", "fp32"]
TOLERANCE = {"bf16": 1e-2, "fp16": 1e-2, "fp32": 1e-5}
EPS = 1e-6
# (M, N, row stride or None for contiguous): representative, LLM hidden sizes, large N, boundaries, padding.
CHECK_SHAPES = [
    (4096, 4096, None), (32768, 8192, None), (8, 131072, None), (4096, 5120, None), (4096, 8192, None),
    (4096, 1, None), (4099, 7, None), (4096, 1000, None), (4099, 1000, None), (1, 4096, None), (1, 7, None),
    (2, 32768, None), (3, 32769, None), (4, 40000, None), (1000, 4096, 4160), (1000, 1000, 1003),
]
HEADLINE = (32768, 8192)
TIME_SHAPES = [(32768, 8192), (4096, 4096), (4096, 5120), (4096, 8192), (8, 131072)]


def load_kernel(kernel_dir: Path):
    spec = importlib.util.spec_from_file_location("reduction_kernel", kernel_dir / "kernel.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(kernel_dir))
    spec.loader.exec_module(module)
    return module


def torch_dtype(dtype: str):
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]


def reference(op: str, x, w):
    """The op in torch (float64 inputs for correctness, native dtype for the eager timing)."""
    import torch
    import torch.nn.functional as F

    if op == "sum":
        return x.sum(-1)
    if op == "mean":
        return x.mean(-1)
    if op == "max":
        return torch.amax(x, -1)
    if op == "softmax":
        return torch.softmax(x, -1)
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def make_inputs(m: int, n: int, ld: int | None, dtype: str, seed: int):
    """x [M, N] (a column slice of a wider tensor when ld > N) and weight [N], fresh randn."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    base = torch.randn(m, ld or n, dtype=torch_dtype(dtype), device="cuda", generator=gen)
    w = torch.randn(n, dtype=torch_dtype(dtype), device="cuda", generator=gen)
    return base[:, :n], w


def check(kernel, ops, dtypes) -> list[dict]:
    import torch

    rows = []
    for si, (m, n, ld) in enumerate(CHECK_SHAPES):
        for dtype in dtypes:
            x, w = make_inputs(m, n, ld, dtype, 1000 + si)
            x64, w64 = x.double(), w.double()
            for op in ops:
                rec = {"M": m, "N": n, "stride": ld or n, "dtype": dtype, "op": op}
                started = time.monotonic()
                try:
                    shape = (m, n) if op in ("softmax", "rmsnorm") else (m,)
                    out = torch.full(shape, float("nan"), dtype=x.dtype, device="cuda")
                    kernel.run(x, *([w] if op == "rmsnorm" else []), out=out, op=op)
                    torch.cuda.synchronize()
                    ref = reference(op, x64, w64)
                    diff = (out.double() - ref).norm().item()
                    denom = ref.norm().item()
                    err = diff / denom if denom > 0 else diff
                    nan = int(torch.isnan(out).sum())
                    ok = not math.isnan(err) and err < TOLERANCE[dtype]
                    vec = kernel._pick_vec(x.element_size(), n, x.stride(0) if m > 1 else n, [x.data_ptr()])
                    rec.update(rel_err=None if math.isnan(err) else err, status="PASS" if ok else "FAIL",
                               nan_outputs=nan, vec=vec, plan=kernel.plan(n, vec))
                    if not ok:
                        rec["error"] = f"{nan} NaN outputs" if nan else f"rel_err {err:.3e} >= {TOLERANCE[dtype]:g}"
                except Exception as err:  # noqa: BLE001 - a crash is this case's FAIL
                    rec.update(status="FAIL", error=f"{type(err).__name__}: {err}"[:600],
                               traceback=traceback.format_exc(limit=3)[-1500:])
                rec["seconds"] = round(time.monotonic() - started, 3)
                rows.append(rec)
                if rec["status"] != "PASS":
                    print(f"FAIL {op} {dtype} {m}x{n} ld={ld or n}: {rec.get('error', '')}", flush=True)
            done = [r for r in rows[-len(ops):] if r.get("rel_err") is not None]
            print(f"check {m}x{n} ld={ld or n} {dtype}: {sum(r['status'] == 'PASS' for r in rows[-len(ops):])}/{len(ops)} "
                  f"PASS, max rel_err {max((r['rel_err'] for r in done), default=float('nan')):.2e}", flush=True)
            del x, w, x64, w64
            torch.cuda.empty_cache()
    return rows


def nbytes(op: str, m: int, n: int, eb: int) -> int:
    if op in ("sum", "mean", "max"):
        return m * n * eb + m * eb
    return 2 * m * n * eb + (n * eb if op == "rmsnorm" else 0)


def time_ops(kernel, ops, shapes, dtype: str, copy_gbps: float, label: str = "default") -> list[dict]:
    import torch

    rows = []
    for m, n in shapes:
        x, w = make_inputs(m, n, None, dtype, 7)
        for op in ops:
            extra = [w] if op == "rmsnorm" else []
            out = torch.empty((m, n) if op in ("softmax", "rmsnorm") else (m,), dtype=x.dtype, device="cuda")
            k = bench(lambda op=op, x=x, extra=extra, out=out: kernel.run(x, *extra, out=out, op=op))
            t = bench(lambda op=op, x=x, w=w: reference(op, x, w))
            b = nbytes(op, m, n, x.element_size())
            rec = {"config": label, "op": op, "M": m, "N": n, "dtype": dtype, "latency_us": k["median_us"],
                   "gbps": b / (k["median_us"] * 1e-6) / 1e9, "torch_us": t["median_us"],
                   "torch_gbps": b / (t["median_us"] * 1e-6) / 1e9, "speedup": t["median_us"] / k["median_us"],
                   "pct_copy": 100 * b / (k["median_us"] * 1e-6) / 1e9 / copy_gbps, "bytes": b}
            rows.append(rec)
            print(f"time[{label}] {op:8s} {m}x{n} {dtype}: {rec['latency_us']:.1f} us {rec['gbps']:.0f} GB/s "
                  f"({rec['pct_copy']:.1f}% of copy) torch {rec['torch_us']:.1f} us {rec['torch_gbps']:.0f} GB/s "
                  f"-> {rec['speedup']:.2f}x", flush=True)
        del x, w
        torch.cuda.empty_cache()
    return rows


def sweep(kernel, dtype: str, copy_gbps: float) -> list[dict]:
    """Values-per-thread (row chunk held in registers) at the headline shape; restores the default after."""
    default = kernel.VALUES_PER_THREAD
    rows = []
    try:
        for vpt in (16, 32, 64):
            kernel.VALUES_PER_THREAD = vpt
            rows += time_ops(kernel, ["sum", "softmax", "rmsnorm"], [HEADLINE], dtype, copy_gbps, f"vpt{vpt}")
    finally:
        kernel.VALUES_PER_THREAD = default
    return rows


def render(summary: dict) -> str:
    checks = summary.get("checks", [])
    md = [f"Device: {summary.get('device')}; torch {summary.get('torch')}; {summary.get('date')}", ""]
    if checks:
        passed = sum(r["status"] == "PASS" for r in checks)
        md += [f"Correctness: {passed}/{len(checks)} PASS (tolerance bf16/fp16 1e-2, fp32 1e-5; out poisoned with NaN)",
               "", "| M | N | row stride | dtype | op | status | rel_err | note |", "|---|---|---|---|---|---|---|---|"]
        for r in checks:
            err = f"{r['rel_err']:.2e}" if r.get("rel_err") is not None else "-"
            md.append(f"| {r['M']} | {r['N']} | {r['stride']} | {r['dtype']} | {r['op']} | {r['status']} | {err} | "
                      f"{r.get('error', '')} |")
    if summary.get("timing"):
        md += ["", f"Timing (copy ceiling {summary['copy']['gbps']:.0f} GB/s, 1 GiB device copy, same process). "
               "GB/s = (read x [+ weight] + write out) / time.", "",
               "| config | op | shape | dtype | kernel (us) | GB/s | % of copy | torch eager (us) | torch GB/s | speedup |",
               "|---|---|---|---|---|---|---|---|---|---|"]
        for r in summary["timing"]:
            md.append(f"| {r['config']} | {r['op']} | {r['M']}x{r['N']} | {r['dtype']} | {r['latency_us']:.1f} | "
                      f"{r['gbps']:.0f} | {r['pct_copy']:.1f} | {r['torch_us']:.1f} | {r['torch_gbps']:.0f} | "
                      f"{r['speedup']:.2f}x |")
    return "\n".join(md) + "\n"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--kernel-dir", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--op", action="append", choices=OPS, help="repeatable; default all five")
    p.add_argument("--dtype", action="append", choices=DTYPES, help="repeatable; default all three (checks)")
    p.add_argument("--no-check", action="store_true")
    p.add_argument("--no-timing", action="store_true")
    p.add_argument("--sweep", action="store_true", help="also sweep values per thread at the headline shape")
    p.add_argument("--summarize", action="store_true", help="re-render <out>/summary.md from summary.json (no GPU)")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.summarize:
        summary = json.loads((args.out / "summary.json").read_text())
    else:
        import torch

        kernel = load_kernel(args.kernel_dir.resolve())
        ops, dtypes = args.op or OPS, args.dtype or DTYPES
        summary = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}

        def save():
            (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

        if not args.no_check:
            summary["checks"] = check(kernel, ops, dtypes)
            save()
        if not args.no_timing:
            summary["copy"] = copy_ceiling()
            print(f"device copy {summary['copy']['gbps']:.0f} GB/s", flush=True)
            summary["timing"] = time_ops(kernel, ops, TIME_SHAPES, "bf16", summary["copy"]["gbps"])
            save()
            if args.sweep:
                summary["timing"] += sweep(kernel, "bf16", summary["copy"]["gbps"])
            summary["copy_after"] = copy_ceiling()
            print(f"device copy (after) {summary['copy_after']['gbps']:.0f} GB/s", flush=True)
        save()
    md = render(summary)
    (args.out / "summary.md").write_text(md)
    print(md[-7000:])
    checks = summary.get("checks", [])
    return 0 if all(r["status"] == "PASS" for r in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
