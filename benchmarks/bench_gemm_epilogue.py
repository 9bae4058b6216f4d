"""Fused-epilogue and fp8 GEMMs on the H200, baked through the template, checked, and timed in one process.

    python3 benchmarks/bench_gemm_epilogue.py --out /tmp/gemm_epi          # one call, < 6 min on an H200

1. Bake (cookiecutter --no-input, run_baseline=no, gpu=H200): the built-in bf16 matmul, the fp8 matmul, and each
   function of benchmarks/models/gemm_epilogues.py through `pytorch_logic` (the template traces it into lowered.py).
2. Check: each kernel against float64 on the first and last 128 rows of C (rel_err = ||out - ref|| / ||ref||, the
   harness's measure; bf16's 1e-2), fp8 against its float64 dequantised reference.
3. Time, all sides in this process on the same inputs with ONE timer, the workspace harness's bench() (CUDA events
   per launch, L2 flushed before each, median after warm-up):
     8192^3 and 4096x14336x4096 (bf16): our plain GEMM; each fused GEMM (ours); the same function in eager torch;
       torch.compile of it (inductor, default mode, warmed up first). Ratios: fused / plain (target >= 0.97x the
       time, i.e. plain_us / fused_us >= 0.97) and torch.compile / fused (target >= 1.0).
       plain and fused are timed by harness.paired: PAIRS launches of each in alternation, the ratio the median of
       the pairs' ratios. A 1.5 ms GEMM heats the GPU and its clock drifts (medians of one kernel taken a minute
       apart differed by up to 5% on the H200), more than the 3% being measured; within a pair both see one clock.
     fp8 8192^3 and 4096^3: ours vs torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=bf16) with
       use_fast_accum=True (like-for-like: our kernel keeps each tile's whole K loop in the WGMMA accumulators,
       which on Hopper add fp8 products at the tensor cores' reduced internal precision; that is what cuBLASLt's
       fast accumulation does too) and use_fast_accum=False (_scaled_mm's default: it promotes the partial sums
       into separate fp32 registers every few K-steps, more accurate and slower; shown beside it).
     TFLOP/s = 2*M*N*K / time, and % of 1979 TFLOP/s, the dense fp8 tensor-core peak of the H100/H200 SXM (NVIDIA
     H200 datasheet: 3,958 TFLOPS fp8 "with sparsity", i.e. 1,979 dense; reference/gpu_specs.json: 1978.9).
Writes <out>/gemm_epilogue.json and prints a table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "benchmarks" / "models" / "gemm_epilogues.py"
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "benchmarks" / "models"), str(ROOT)]
from harness import bench, paired  # noqa: E402

SHAPES = [(8192, 8192, 8192), (4096, 14336, 4096)]
FP8_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096)]
FUNCTIONS = ("linear_bias_gelu", "linear_bias_sqrelu", "linear_residual", "linear_scale_cast")  # models/gemm_epilogues
FP8_PEAK_TFLOPS = 1978.9  # dense fp8, H200 SXM (reference/gpu_specs.json, NVIDIA datasheet)
WORKSPACE_MODULES = ("host", "cutedsl_runtime", "reference", "kernel", "user_logic", "lowered", "pointwise")
CHECK_ROWS = 128
PAIRS = 60  # alternating (plain, fused) launches per function and shape (harness.paired)


def cookiecutter(out: Path, name: str, *pairs: str) -> Path:
    done = subprocess.run([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(out),
                           f"op_name={name}", "gpu=H200", "run_baseline=no", *pairs], capture_output=True, text=True)
    (out / f"{name}.bake.log").write_text(done.stdout + done.stderr)
    return out / name


def bake(out: Path) -> dict:
    """name -> workspace: the built-in bf16 and fp8 matmuls, and each user function traced into a lowered GEMM (a
    function the template does not lower as a GEMM stops the benchmark: the comparison would not be the one asked)."""
    shapes = "shapes=" + ";".join("x".join(map(str, s)) for s in SHAPES)
    made = {"matmul_bf16": cookiecutter(out, "matmul_bf16", "pattern=gemm", "dtype=bf16", shapes),
            "matmul_fp8": cookiecutter(out, "matmul_fp8", "pattern=gemm", "dtype=fp8")}
    for fn in FUNCTIONS:
        ws = cookiecutter(out, fn, f"pytorch_logic={MODELS}:{fn}", shapes)
        op = json.loads((ws / "op.json").read_text()) if (ws / "op.json").is_file() else {}
        if (op.get("pattern"), op.get("op")) != ("gemm", "lowered"):
            raise SystemExit(f"{fn}: not baked as a lowered GEMM; see {out / (fn + '.bake.log')}")
        made[fn] = ws
    return made


def load_kernel(ws: Path, name: str, file: str = "kernel.py"):
    """ws/<file> with its own host.py, runtime and lowered.py (each workspace's modules loaded afresh)."""
    for module in WORKSPACE_MODULES:
        sys.modules.pop(module, None)
    sys.path.insert(0, str(ws))
    try:
        spec = importlib.util.spec_from_file_location(f"{Path(file).stem}_{name}", ws / file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ws))
    return module


def rel_err(out, ref) -> float:
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm()).item()


def check_rows(fn_ours, fn_ref64, inputs, m: int) -> float:
    """rel_err of our C against the float64 reference on the first and last CHECK_ROWS rows (rows of A and of any
    row-shaped input sliced alike)."""
    out = fn_ours()
    errs = []
    for rows in (slice(0, CHECK_ROWS), slice(m - CHECK_ROWS, m)):
        sliced = [t[rows] if t.dim() == 2 and t.shape[0] == m and i != 1 else t for i, t in enumerate(inputs)]
        errs.append(rel_err(out[rows], fn_ref64(*[t.double() for t in sliced])))
    return max(errs)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    import gemm_epilogues  # benchmarks/models: the user's functions, for eager and torch.compile

    started = time.time()
    made = bake(args.out)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "timer": "harness.bench: CUDA events,"
              " cold L2, median", "bf16": [], "fp8": []}

    def save():
        (args.out / "gemm_epilogue.json").write_text(json.dumps(result, indent=2) + "\n")

    kernels = {name: load_kernel(ws, name) for name, ws in made.items()}
    gen = torch.Generator(device="cuda").manual_seed(0)
    for m, n, k in SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=gen)
        extras = {"bias": torch.randn(n, device="cuda", dtype=torch.bfloat16, generator=gen),
                  "scale": torch.randn(n, device="cuda", dtype=torch.bfloat16, generator=gen),
                  "residual": torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=gen)}
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        plain = kernels["matmul_bf16"]
        row = {"shape": [m, n, k], "plain_us": bench(lambda: plain.run(a, b, out=out))["median_us"],
               "plain_rel_err": check_rows(lambda: plain.run(a, b), lambda x, w: x @ w.T, [a, b], m),
               "cublas_us": bench(lambda: a @ b.T)["median_us"], "fused": {}}
        for fn in FUNCTIONS:
            kernel, user = kernels[fn], getattr(gemm_epilogues, fn)
            inputs = [a, b, *(extras[name] for name in kernel.lowered.INPUTS[2:])]
            compiled = torch.compile(user)
            compiled(*inputs)  # warm-up: the compile itself is not timed
            pair = paired(lambda: plain.run(a, b, out=out), lambda: kernel.run(*inputs, out=out), pairs=PAIRS)
            ours = pair["b_us"]
            entry = {"ours_us": ours, "paired_plain_us": pair["a_us"],
                     "rel_err": check_rows(lambda: kernel.run(*inputs), user, inputs, m),
                     "eager_us": bench(lambda: user(*inputs))["median_us"],
                     "compile_us": bench(lambda: compiled(*inputs))["median_us"]}
            entry.update(plain_over_fused=pair["ratio"],
                         compile_over_fused=entry["compile_us"] / ours, tflops=2 * m * n * k / ours / 1e6)
            row["fused"][fn] = entry
            save()
        row["plain_tflops"] = 2 * m * n * k / row["plain_us"] / 1e6
        result["bf16"].append(row)
        save()

    fp8 = kernels["matmul_fp8"]
    ref = load_kernel(made["matmul_fp8"], "fp8", "reference.py")  # make_inputs (per-tensor quantised), reference
    for m, n, k in FP8_SHAPES:
        a, b, sa, sb = ref.make_inputs({"dims": [m, n, k]}, torch.float8_e4m3fn, "cuda", seed=7)
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ours = bench(lambda: fp8.run(a, b, sa, sb, out=out))["median_us"]
        entry = {"shape": [m, n, k], "ours_us": ours,
                 "rel_err": check_rows(lambda: fp8.run(a, b, sa, sb), ref.reference, [a, b, sa, sb], m)}
        for fast in (False, True):
            us = bench(lambda: torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16,
                                                use_fast_accum=fast))["median_us"]
            entry[f"scaled_mm_fast_accum_{fast}_us"] = us
            entry[f"scaled_mm_fast_accum_{fast}_tflops"] = 2 * m * n * k / us / 1e6
        entry.update(tflops=2 * m * n * k / ours / 1e6, pct_of_fp8_peak=100 * 2 * m * n * k / ours / 1e6 / FP8_PEAK_TFLOPS,
                     like_for_like="use_fast_accum=True")
        result["fp8"].append(entry)
        save()

    result["seconds"] = round(time.time() - started, 1)
    save()
    for row in result["bf16"]:
        print(f"{row['shape']}: plain {row['plain_us']:.0f} us ({row['plain_tflops']:.0f} TFLOP/s), cuBLAS "
              f"{row['cublas_us']:.0f} us, rel_err {row['plain_rel_err']:.1e}")
        for fn, e in row["fused"].items():
            print(f"  {fn:20} ours {e['ours_us']:7.0f} us  plain/fused {e['plain_over_fused']:.3f}  eager "
                  f"{e['eager_us']:7.0f}  compile {e['compile_us']:7.0f}  compile/fused {e['compile_over_fused']:.2f}"
                  f"  rel_err {e['rel_err']:.1e}")
    for e in result["fp8"]:
        print(f"fp8 {e['shape']}: ours {e['ours_us']:.0f} us {e['tflops']:.0f} TFLOP/s ({e['pct_of_fp8_peak']:.1f}% of "
              f"{FP8_PEAK_TFLOPS}), _scaled_mm {e['scaled_mm_fast_accum_False_tflops']:.0f} / fast_accum "
              f"{e['scaled_mm_fast_accum_True_tflops']:.0f} TFLOP/s, rel_err {e['rel_err']:.1e}")
    print(f"{result['seconds']} s; {args.out / 'gemm_epilogue.json'}")
    return 0 if all(e["rel_err"] < 1e-2 for r in result["bf16"] for e in r["fused"].values()) and all(
        e["rel_err"] < 1e-2 for e in result["fp8"]) else 1


if __name__ == "__main__":
    sys.exit(main())
