"""Hash the compiled ISA of every cell, baked through the template: the proof that a refactor left kernels unchanged.

    python benchmarks/kernel_hashes.py --out after.json [--jobs 2] [--template DIR] [--gpus H200 H20] [--patterns gemm]

DIR is another checkout (the "before" side); --gpus and --patterns keep only those variants (--gpus H200 H20:
the CuTe DSL cells alone).

Each (gpu, pattern, op, dtype) is baked with `cookiecutter --no-input ... run_baseline=no`, then compiled
with the workspace's own `python test_kernel.py --compile-only`; the sha256 of the ISA it writes
(sm_90a PTX, gfx942/gfx950 assembly) is recorded. Run it before and after a change and compare.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPS = {"elementwise": ["add", "mul", "silu", "gelu", "relu", "silu_mul"],
       "reduction": ["sum", "mean", "max", "softmax", "rmsnorm"], "gemm": ["matmul"], "decode_attention": ["gqa"]}


def variants():
    for gpu in ("H200", "MI300X", "MI355X"):
        for pattern, ops in OPS.items():
            for op in ops:
                yield gpu, pattern, op, "bf16"
    for pattern in ("gemm", "decode_attention"):  # the cells that size grids from the SM count
        yield "H20", pattern, OPS[pattern][0], "bf16"


def one(gpu, pattern, op, dtype, tmp: Path, root: Path = ROOT) -> dict:
    name = f"{op}_{gpu.lower()}_{dtype}"
    out = tmp / name
    out.mkdir()
    bake = subprocess.run([sys.executable, "-m", "cookiecutter", str(root), "--no-input", "-o", str(out),
                           f"pattern={pattern}", f"op={op}", f"gpu={gpu}", f"dtype={dtype}", f"op_name={name}",
                           "run_baseline=no"], capture_output=True, text=True)
    ws = out / name
    row = {"gpu": gpu, "pattern": pattern, "op": op, "dtype": dtype}
    if bake.returncode != 0 or not ws.is_dir():
        return {**row, "error": "bake failed: " + bake.stderr[-500:]}
    done = subprocess.run([sys.executable, "test_kernel.py", "--compile-only"], cwd=ws, capture_output=True, text=True)
    report = json.loads((ws / "results" / "compile_only.json").read_text()) if (ws / "results" / "compile_only.json").is_file() else {}
    if done.returncode != 0 or not report.get("isa_file"):
        return {**row, "error": "compile failed: " + (done.stdout + done.stderr)[-500:]}
    isa = (ws / "build" / report["isa_file"]).read_bytes()
    return {**row, "target": report["target"], "isa_file": report["isa_file"], "bytes": len(isa),
            "sha256": hashlib.sha256(isa).hexdigest()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--template", type=Path, default=ROOT, help="the template checkout to bake (default: this one)")
    p.add_argument("--gpus", nargs="+", help="only these GPUs' variants (default: all)")
    p.add_argument("--patterns", nargs="+", help="only these patterns' variants (default: all)")
    args = p.parse_args(argv)
    chosen = [v for v in variants() if (not args.gpus or v[0] in args.gpus) and (not args.patterns or v[1] in args.patterns)]
    with tempfile.TemporaryDirectory(prefix="kb-hashes-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda v: one(*v, Path(tmp), args.template.resolve()), chosen))
    Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    for r in rows:
        print(f"{r['gpu']:7} {r['pattern']:17} {r['op']:9} {r.get('sha256', r.get('error'))[:64]}")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
