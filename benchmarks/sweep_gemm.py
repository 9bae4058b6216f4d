"""H200 sweep of the CuTe DSL GEMM cell against cuBLAS over M x N x K: where each regime wins or loses.

    python benchmarks/sweep_gemm.py                                   # on the H200, after benchmarks/device_setup.sh
    python benchmarks/sweep_gemm.py --out benchmarks/results/DATE-h200-gemm-sweep.json --m 1 16 --nk 4096
    python benchmarks/sweep_gemm.py --out ... --list | --render       # the points / table + PNGs again, no GPU
    python benchmarks/sweep_gemm.py --out ... --m 16 64 --set SWAP_MAX_M=4  # A/B a kernel.py constant (here: no swap)

It builds a bf16 gemm workspace with tools.scaffold (no bake step, no baseline run) and loads its kernel.py with
bench_gemm.load_kernel. For every (M, N, K) of the grid (M in 1, 16, 64, 128, 512, 4096; N, K in 4096, 8192,
14336: every regime of choose_config appears), it
- checks the kernel once (bench_gemm.check: fresh inputs, NaN-poisoned out, rel_err vs an fp32 reference);
- times the kernel's run() and cuBLAS (`a @ b.T`) alike: GPU time from torch.profiler (sweep_common.gpu_us),
  i.e. the CUDA kernel (and memset) time of all the kernels one call launches, summed, averaged over the calls
  (cuBLAS's own split-K reduction counts; ours resets its split-K counters in the kernel); the calls rotate over enough distinct
  input sets that together exceed 3x the L2 (at most 16), so every call reads its operands from HBM as a cold call
  would, and no flush kernel enters the profile;
- records describe()'s path (large tiles / 128x128 / skinny / swapped, split over K or not / GEMV) beside the ratio.
Writes the JSON rows, one heatmap PNG per K beside it (M down, N across, one cell per (N, K) point, the ratio
annotated, red below 0.9), and prints a table. Each distinct Config compiles once (the first call of a shape).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gemm import check, load_kernel  # noqa: E402
from heatmap import heatmap  # noqa: E402
from sweep_common import ROOT, add_modes, apply_knobs, bake, copies, gpu_us, knobs, read_rows, write_rows  # noqa: E402

M_GRID = [1, 16, 64, 128, 512, 4096]
NK_GRID = [4096, 8192, 14336]
TARGET = 0.9  # ratio below which a point is red: the kernel is more than 10% slower than cuBLAS
TIME_BUDGET_MS = 40.0  # profiled GPU time per side and point


def points(ms=M_GRID, nks=NK_GRID) -> list[tuple[int, int, int]]:
    """Every (M, N, K) in measuring order (K, then N, then M); no point is skipped."""
    return [(m, n, k) for k in nks for n in nks for m in ms]


def operand_sets(m: int, n: int, k: int, torch_dtype) -> list:
    """Distinct (a, b, out) sets whose A + B bytes together exceed 3x the L2 (at least one): rotating over them,
    each call finds its operands out of L2."""
    import torch

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    per_set = (m * k + n * k) * torch.finfo(torch_dtype).bits // 8
    count = copies(per_set, 3 * l2, 16)
    return [(torch.randn(m, k, device="cuda", dtype=torch_dtype), torch.randn(n, k, device="cuda", dtype=torch_dtype),
             torch.empty(m, n, device="cuda", dtype=torch_dtype)) for _ in range(count)]


def time_point(kernel, m: int, n: int, k: int, torch_dtype) -> dict:
    """Kernel and cuBLAS GPU us on the same rotating operands, each warmed up first (the kernel's first call
    compiles its Config)."""
    import torch

    sets = operand_sets(m, n, k, torch_dtype)
    sides = {"kernel": [lambda s=s: kernel.run(s[0], s[1], out=s[2]) for s in sets],
             "cublas": [lambda s=s: torch.matmul(s[0], s[1].T, out=s[2]) for s in sets]}
    row = {}
    for name, fns in sides.items():
        for i in range(3):
            fns[i % len(fns)]()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fns[0]()
        torch.cuda.synchronize()
        once_ms = (time.perf_counter() - t0) * 1e3  # host-timed: an upper bound, only to size the call count
        row[f"{name}_us"] = gpu_us(fns, int(min(200, max(len(sets), TIME_BUDGET_MS / max(once_ms, 1e-3)))),
                                   warm=False)
    row["ratio"] = row["cublas_us"] / row["kernel_us"]
    row["kernel_tbps"] = (m * k + n * k + m * n) * torch.finfo(torch_dtype).bits / 8 / row["kernel_us"] / 1e6
    row["kernel_tflops"] = 2.0 * m * n * k / row["kernel_us"] / 1e6
    return row


def heatmaps(rows: list[dict], out_json: Path) -> list[Path]:
    """One PNG per K: M down, N across, each cell the ratio cuBLAS / kernel, red below TARGET."""
    paths = []
    for k in sorted({r["K"] for r in rows}):
        ms = sorted({r["M"] for r in rows if r["K"] == k})
        ns = sorted({r["N"] for r in rows if r["K"] == k})
        grid = [[next((r.get("ratio") for r in rows if (r["M"], r["N"], r["K"]) == (m, n, k)), None) for n in ns]
                for m in ms]
        paths.append(heatmap(grid, ns, ms, f"cuBLAS time / kernel time, K = {k} (red < {TARGET})",
                             out_json.with_name(f"{out_json.stem}-K{k}.png"), bounds=(TARGET, 1.0), missing="FAIL",
                             x_name="N", y_name="M"))
    return paths


def table(rows: list[dict]) -> str:
    lines = [f"{'M':>5} {'N':>6} {'K':>6} {'kernel us':>10} {'cuBLAS us':>10} {'ratio':>6} {'TB/s':>5}  path",
             "-" * 100]
    for r in rows:
        if r["status"] != "PASS":
            lines.append(f"{r['M']:>5} {r['N']:>6} {r['K']:>6} {'check ' + r['status']:>28}  {r.get('error', '')}")
            continue
        flag = " <" if r["ratio"] < TARGET else ""
        lines.append(f"{r['M']:>5} {r['N']:>6} {r['K']:>6} {r['kernel_us']:>10.1f} {r['cublas_us']:>10.1f} "
                     f"{r['ratio']:>6.2f} {r['kernel_tbps']:>5.2f}  {r['path'][:60]}{flag}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = add_modes(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    day = datetime.date.today().isoformat()
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / f"{day}-h200-gemm-sweep.json")
    p.add_argument("--m", type=int, nargs="+", default=M_GRID)
    p.add_argument("--nk", type=int, nargs="+", default=NK_GRID, help="the values N and K each take")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="override a kernel.py constant (a Python literal) before the sweep")
    args = p.parse_args(argv)
    import matplotlib  # noqa: F401 - the PNGs come last: a missing module must show before the sweep

    if args.list:
        print("\n".join(f"{m}x{n}x{k}" for m, n, k in points(args.m, args.nk)))
        return 0
    if args.render:
        rows = read_rows(args.out)[1]
        print(table(rows))
        print("wrote", ", ".join(p.name for p in heatmaps(rows, args.out)))
        return 0 if all(r["status"] == "PASS" for r in rows) else 1
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # check()'s fp32 reference must be fp32
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kb-sweep-gemm-") as tmp:
        kernel = load_kernel(bake(Path(tmp), "gemm"), "bf16")
        apply_knobs(kernel, knobs(args))
        rows = []
        for m, n, k in points(args.m, args.nk):
            t0 = time.perf_counter()
            row = {"M": m, "N": n, "K": k, "path": kernel.describe({"vars": {"M": m, "N": n, "K": k}})["path"]}
            row |= {key: v for key, v in check(kernel, m, n, k, torch.bfloat16, seed=m + n + k).items()
                    if key in ("status", "rel_err", "error")}
            if row["status"] == "PASS":
                row |= time_point(kernel, m, n, k, torch.bfloat16)
            rows.append(row)
            print(f"{m}x{n}x{k}: {row['status']} ratio {row.get('ratio', float('nan')):.2f} "
                  f"({time.perf_counter() - t0:.1f}s)", flush=True)
            torch.cuda.empty_cache()
    write_rows(args.out, {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "dtype": "bf16",
                          "knobs": knobs(args),
                          "timer": "torch.profiler CUDA kernel time per call, rotating operand sets > 3x L2"}, rows)
    pngs = heatmaps(rows, args.out)
    print(table(rows))
    print(f"wrote {args.out} and {', '.join(p.name for p in pngs)} in {time.perf_counter() - t_start:.0f}s")
    return 0 if all(r["status"] == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
