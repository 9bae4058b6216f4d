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

NaN / -inf check (max, softmax; runs with the correctness checks): rows get one NaN at varying
positions (first, last, middle, a looped-path tail slice), some -inf values, or all -inf, and the
padding of a strided x gets NaNs that must be ignored. Output must be NaN exactly where torch's is
(float64 reference), +-inf where torch's is, and match it elsewhere (same tolerances).
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
# (M, N, row stride, variants): looped path (3 x 40000, 8 x 131072), register path with and without the smem
# step, the N = 7 scalar path, a padded stride. Small-M shapes run several variants so each row kind and each
# NaN position is seen; variant v shifts the row pattern by v.
NAN_SHAPES = [(3, 40000, None, 8), (8, 131072, None, 4), (4096, 8192, None, 1), (4096, 4096, None, 1),
              (4096, 1000, None, 1), (4099, 7, None, 1), (1000, 1000, 1003, 1)]
NAN_OPS = ["max", "softmax"]
TIME_SHAPES = [(32768, 8192), (4096, 4096), (4096, 5120), (4096, 8192), (8, 131072)]


def load_kernel(kernel_dir: Path):
    sys.path.insert(0, str(kernel_dir))  # kernel.py imports host.py and cutedsl_runtime.py beside it
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


def special_rows(x, base, n: int, variant: int) -> None:
    """Poison x in place. Row kind (r + variant) % 5: 0 one NaN, 1 untouched, 2 some -inf, 3 all -inf (every
    other such row; the rest get one NaN), 4 a leading -inf block (the first 5/8 of the row: on the looped
    path whole slices of -inf come first). NaN positions cycle over first, last, middle, a looped-path tail
    slice and a pseudo-random one. NaNs also go into the padding columns of a strided base (must be ignored)."""
    nan, ninf = float("nan"), float("-inf")
    positions = [0, n - 1, n // 2, max(0, n - 1 - n // 7), 7919 % n]
    for r in range(x.shape[0]):
        kind, j = (r + variant) % 5, (r // 5 + variant) % len(positions)
        if kind == 0 or (kind == 3 and (r // 5) % 2):
            x[r, positions[(j + (kind == 3)) % len(positions)]] = nan
        elif kind == 2:
            x[r, positions[j]] = ninf
            x[r, (positions[j] + n // 3) % n] = ninf
        elif kind == 3:
            x[r, :] = ninf
        elif kind == 4:
            x[r, : max(1, 5 * n // 8)] = ninf
        if base.shape[1] > n and kind == 1:
            base[r, n:] = nan


def compare_special(out, ref, dtype: str) -> dict:
    """NaN and +-inf masks must equal torch's; finite elements within tolerance."""
    import torch

    out = out.double()
    nan_o, nan_r = torch.isnan(out), torch.isnan(ref)
    inf_o, inf_r = torch.isinf(out), torch.isinf(ref)
    fin = ~(nan_r | inf_r)
    nan_mismatch = int((nan_o != nan_r).sum())
    inf_mismatch = int(((inf_o != inf_r) | (inf_r & (out != ref))).sum())
    diff = (out[fin] - ref[fin]).norm().item() if fin.any() else 0.0
    denom = ref[fin].norm().item() if fin.any() else 0.0
    err = diff / denom if denom > 0 else diff
    ok = nan_mismatch == 0 and inf_mismatch == 0 and not math.isnan(err) and err < TOLERANCE[dtype]
    rows_nan = nan_r.reshape(ref.shape[0], -1).any(-1)
    rec = {"nan_mismatch": nan_mismatch, "inf_mismatch": inf_mismatch, "rel_err": None if math.isnan(err) else err,
           "ref_nan": int(nan_r.sum()), "ref_nan_rows": int(rows_nan.sum()), "status": "PASS" if ok else "FAIL"}
    if not ok:
        rec["error"] = f"NaN mismatches {nan_mismatch}, inf mismatches {inf_mismatch}, finite rel_err {err:.3e}"
    return rec


def nan_check(kernel, ops, dtypes) -> list[dict]:
    import torch

    rows = []
    for si, (m, n, ld, variants) in enumerate(NAN_SHAPES):
        for dtype in dtypes:
            for v in range(variants):
                x, w = make_inputs(m, n, ld, dtype, 5000 + 10 * si + v)
                base = x.as_strided((m, ld or n), x.stride())
                special_rows(x, base, n, v)
                x64 = x.double()
                for op in ops:
                    rec = {"M": m, "N": n, "stride": ld or n, "dtype": dtype, "op": op, "variant": v}
                    try:
                        shape = (m, n) if op == "softmax" else (m,)
                        out = torch.full(shape, 1.0, dtype=x.dtype, device="cuda")  # poison: not NaN, not inf
                        kernel.run(x, out=out, op=op)
                        torch.cuda.synchronize()
                        rec.update(compare_special(out, reference(op, x64, None), dtype))
                    except Exception as err:  # noqa: BLE001 - a crash is this case's FAIL
                        rec.update(status="FAIL", error=f"{type(err).__name__}: {err}"[:600])
                    rows.append(rec)
                    if rec["status"] != "PASS":
                        print(f"NaN-check FAIL {op} {dtype} {m}x{n} ld={ld or n} v{v}: {rec.get('error', '')}",
                              flush=True)
                del x, w, x64, base
            last = rows[-variants * len(ops):]
            print(f"nan-check {m}x{n} ld={ld or n} {dtype}: {sum(r['status'] == 'PASS' for r in last)}/{len(last)} "
                  f"PASS, NaN rows in torch's output {sum(r.get('ref_nan_rows', 0) for r in last)}", flush=True)
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
    nan_checks = summary.get("nan_checks", [])
    if nan_checks:
        passed = sum(r["status"] == "PASS" for r in nan_checks)
        md += ["", f"NaN / -inf check: {passed}/{len(nan_checks)} PASS (output NaN exactly where torch's is, +-inf "
               "where torch's is, finite elements within tolerance)", "",
               "| M | N | row stride | dtype | op | variant | status | torch NaN rows | NaN mismatches | inf mismatches "
               "| finite rel_err | note |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in nan_checks:
            err = f"{r['rel_err']:.2e}" if r.get("rel_err") is not None else "-"
            md.append(f"| {r['M']} | {r['N']} | {r['stride']} | {r['dtype']} | {r['op']} | {r['variant']} | "
                      f"{r['status']} | {r.get('ref_nan_rows', '-')} | {r.get('nan_mismatch', '-')} | "
                      f"{r.get('inf_mismatch', '-')} | {err} | {r.get('error', '')} |")
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
    p.add_argument("--time-op", action="append", choices=OPS, help="repeatable; ops to time (default: --op's)")
    p.add_argument("--time-shape", action="append", help="repeatable MxN, e.g. 32768x8192 (default: TIME_SHAPES)")
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
            summary["nan_checks"] = nan_check(kernel, [op for op in NAN_OPS if op in ops], dtypes)
            save()
        if not args.no_timing:
            summary["copy"] = copy_ceiling()
            print(f"device copy {summary['copy']['gbps']:.0f} GB/s", flush=True)
            shapes = [tuple(int(v) for v in shape.split("x")) for shape in args.time_shape] if args.time_shape else TIME_SHAPES
            summary["timing"] = time_ops(kernel, args.time_op or ops, shapes, "bf16", summary["copy"]["gbps"])
            save()
            if args.sweep:
                summary["timing"] += sweep(kernel, "bf16", summary["copy"]["gbps"])
            summary["copy_after"] = copy_ceiling()
            print(f"device copy (after) {summary['copy_after']['gbps']:.0f} GB/s", flush=True)
        save()
    md = render(summary)
    (args.out / "summary.md").write_text(md)
    print(md[-7000:])
    checks = summary.get("checks", []) + summary.get("nan_checks", [])
    return 0 if all(r["status"] == "PASS" for r in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
