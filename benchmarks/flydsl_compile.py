"""Compile every FlyDSL cell for gfx942 and gfx950 on the CPU and tabulate its ISA facts (no AMD GPU involved).

For each (pattern, op, dtype, shape) in SWEEP and each arch it builds a minimal workspace
(tools/scaffold.py compile_workspace), times one `kernel.compile_only` call (a child process, as the harness
runs it) and reads the ISA with tools/isa_metrics.amdgpu_metrics: VGPRs, AGPRs, SGPRs, LDS bytes, MFMA
count, 128-bit buffer loads, spills and scratch. Nothing here runs a kernel: these are compile facts only.
The GEMM cell's fp8 and lowered-epilogue variants are the ones tests/flydsl_gemm_builds.py compiles, in its
workspaces (a matmul workspace turned into the variant; op column: matmul or lowered:<example>).

    .venv/bin/python benchmarks/flydsl_compile.py                      # everything, markdown to stdout
    .venv/bin/python benchmarks/flydsl_compile.py --pattern gemm --json benchmarks/results/x.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "{{cookiecutter.op_name}}" / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

import flydsl_gemm_builds  # noqa: E402
import isa_metrics  # noqa: E402
from tools import scaffold  # noqa: E402

ARCHS = ("gfx942", "gfx950")
# (pattern, op, dtype, shape; "" = the pattern's first built-in representative shape)
SWEEP = [
    *[("elementwise", op, dt, "") for op in ("add", "silu_mul", "gelu") for dt in ("bf16", "fp16", "fp32")],
    *[("reduction", op, dt, "") for op in ("sum", "mean", "max", "softmax", "rmsnorm") for dt in ("bf16", "fp16", "fp32")],
    *[("reduction", op, "bf16", shape) for op in ("softmax", "rmsnorm") for shape in ("8x131072", "4096x7", "1000x4096@4160")],
    *[("gemm", "matmul", dt, shape) for dt in ("bf16", "fp16") for shape in ("", "16x8192x8192", "129x8x8")],
    *[("decode_attention", "gqa", dt, "") for dt in ("bf16", "fp16")],
    *[("decode_attention", "gqa", "bf16", shape) for shape in ("32x32x8x4096x64", "2x16x2x1000x256@mixed",
                                                               "8x64x8x16384x128", "4x16x1x2048x128@mixed")],
]


def facts(isa: str) -> dict:
    """The numbers the table shows; with two kernels in one file (split + merge) the larger of each."""
    m = isa_metrics.amdgpu_metrics(isa)
    code = re.sub(r";[^\n]*", "", isa)
    return {
        "kernels": len(isa_metrics.amd_metadata(isa, ".wavefront_size")),
        "vgpr": m["registers"], "agpr": m["agpr_count"] or 0,
        "sgpr": max(isa_metrics.amd_metadata(isa, ".sgpr_count") or [0]),
        "lds_bytes": m["shared_bytes"], "private_bytes": m["local_bytes"], "spills": m["spill_count"],
        "mfma": m["tensor_core"].get("v_mfma", 0),
        "mfma_kinds": sorted(set(re.findall(r"\b(v_mfma\w*)", code))),
        "buffer_load_dwordx4": len(re.findall(r"\bbuffer_load_dwordx4\b", code)),
        "ds_ops": len(re.findall(r"\bds_(?:read|write|load|store)\w*", code)),
        "scratch_instr": m["local_instructions"],
    }


# the GEMM cell's epilogue_kernel variants: (op column, lowered.py source or None, dtype, shape)
GEMM_VARIANTS = [*[("lowered:" + name.removeprefix("lowered_gemm_") if lowered else "matmul", lowered, dtype, shape)
                   for name, lowered, dtype, shape, _ in flydsl_gemm_builds.VARIANTS],
                 ("matmul", None, "fp8", "16x8192x8192")]  # fp8 on the skinny-M 64x64 tile (two LDS stages)


def compile_one(pattern: str, op: str, dtype: str, shape: str, arch: str, python: str, lowered=False) -> dict:
    """One compile; `lowered` (a GEMM_VARIANTS source, or None for fp8's matmul) makes a GEMM variant workspace."""
    with tempfile.TemporaryDirectory(prefix="kb-flydsl-") as tmp:
        if lowered is False:
            ws = scaffold.compile_workspace(Path(tmp) / "ws", pattern, op, dtype, arch, shape)
        else:
            ws = flydsl_gemm_builds.workspace(Path(tmp) / "ws", lowered, dtype, shape, arch)
        code = "import json, kernel; print(json.dumps(kernel.compile_only(kernel.OP_SPEC['cases'][0], 'build')))"
        started = time.monotonic()
        done = subprocess.run([python, "-c", code], cwd=ws, capture_output=True, text=True, timeout=900)
        seconds = time.monotonic() - started
        case = json.loads((ws / "op.json").read_text())["cases"][0]["name"]
        row = {"pattern": pattern, "op": op, "dtype": dtype, "case": case, "arch": arch, "seconds": round(seconds, 2)}
        if done.returncode != 0:
            return {**row, "error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
        files = sorted(p.name for p in (ws / "build").glob("kernel_*.s"))
        return {**row, "isa_file": files[-1] if files else None, **facts(json.loads(done.stdout.strip().splitlines()[-1]))}


COLUMNS = ["arch", "pattern", "op", "dtype", "case", "seconds", "kernels", "vgpr", "agpr", "sgpr", "lds_bytes", "mfma",
           "buffer_load_dwordx4", "ds_ops", "spills", "scratch_instr", "private_bytes"]


def markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(c, r.get("error", ""))) for c in COLUMNS) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pattern", action="append", help="only these patterns (repeatable)")
    parser.add_argument("--arch", action="append", choices=ARCHS, help="only these archs (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--python", default=sys.executable, help="interpreter with flydsl installed")
    args = parser.parse_args(argv)
    rows = []
    for arch in args.arch or ARCHS:
        for pattern, op, dtype, shape in SWEEP:
            if args.pattern and pattern not in args.pattern:
                continue
            rows.append(compile_one(pattern, op, dtype, shape, arch, args.python))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        for op, lowered, dtype, shape in GEMM_VARIANTS if not args.pattern or "gemm" in args.pattern else ():
            rows.append(compile_one("gemm", op, dtype, shape, arch, args.python, lowered))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    print(markdown(rows))
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
