"""fp8 e4m3 GEMM on the H200 against torch._scaled_mm in both accumulation modes, in one process with one timer.

    OUT=/tmp/fp8 python3 benchmarks/probe_fp8.py        # after benchmarks/device_setup.sh; ~20 s

Bakes the built-in fp8 matmul workspace (tools.scaffold, no V0 run), draws its own inputs (reference.make_inputs:
per-tensor quantised e4m3 and fp32 scales), checks rel_err against the float64 dequantised reference, and times
kernel.run and torch._scaled_mm(use_fast_accum=False / True) with the workspace harness's bench() (CUDA events, L2
flushed before each call, median) on 8192^3 and 4096^3. Writes $OUT/fp8.json. It is the short form of
bench_gemm_epilogue.py's fp8 part, which the last full device call of 2026-12-01 could not finish (see
benchmarks/2026-12-01-h200-gemm-epilogue-fp8.md).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]


def main() -> int:
    import torch
    from harness import bench
    from tools import scaffold, spec

    ws = scaffold.workspace(Path(tempfile.mkdtemp()) / "f8", spec.context(pattern="gemm", dtype="fp8", gpu="H200",
                                                                          run_baseline="no"))
    sys.path.insert(0, str(ws))
    import kernel
    import reference

    out = {}
    for m, n, k in ((8192, 8192, 8192), (4096, 4096, 4096)):
        a, b, sa, sb = reference.make_inputs({"dims": [m, n, k]}, torch.float8_e4m3fn, "cuda", 7)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        r = {"ours_us": bench(lambda: kernel.run(a, b, sa, sb, out=c))["median_us"]}
        ref = reference.reference(a.double(), b.double(), sa.double(), sb.double())
        r["rel_err"] = ((kernel.run(a, b, sa, sb).double() - ref).norm() / ref.norm()).item()
        for fast in (False, True):
            r[f"scaled_mm_fast_{fast}_us"] = bench(lambda: torch._scaled_mm(
                a, b.t(), sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast))["median_us"]
        r["tflops"] = 2 * m * n * k / r["ours_us"] / 1e6
        out[f"{m}x{n}x{k}"] = r
        print(json.dumps({f"{m}x{n}x{k}": r}), flush=True)
        Path(os.environ["OUT"], "fp8.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
