"""The user's own op on the H200: every lowered corpus function through the template's V0 flow, then the timed ones
against torch eager, torch.compile of the same function, and the built-in cell of its class (the GEMM functions:
bake, check and v0 here; their timing is benchmarks/bench_gemm_epilogue.py's).

    python3 benchmarks/bench_lowered.py --out /tmp/lowered bake               # bake every lowered corpus function
    python3 benchmarks/bench_lowered.py --out /tmp/lowered check --jobs 4     # every case, correctness only
    python3 benchmarks/bench_lowered.py --out /tmp/lowered v0 NAME ...        # the full V0 flow (run_baseline.py)
    python3 benchmarks/bench_lowered.py --out /tmp/lowered perf NAME ...      # headline timing, one child each

- bake: `cookiecutter --no-input pytorch_logic=tests/lowering_corpus/ops.py:NAME run_baseline=no` per function
  (pattern=auto, the default), elementwise ones with 2-D shapes so that their [N] vectors are rows' length;
- check: each workspace's own `python test_kernel.py --no-timing` (every representative and boundary case),
  several at once (correctness only, so sharing the GPU changes nothing);
- v0: `python tools/run_baseline.py` in each named workspace (report, memory, the V0 commit); with --jobs > 1 the
  workspaces share the GPU, so their recorded timings are not comparisons: the ratios come from `perf` alone;
- perf: one child process per named workspace, timing on the headline case (2^28 elements as 16384 x 16384; 32768 x
  8192) with the harness's own timers (test_kernel.bench: CUDA events, cold L2, median; call_latency: back-to-back
  calls, host included), all sides in that process on the same inputs:
    kernel (lowered)  the workspace's kernel.run
    eager             the user's function in eager torch
    compile           torch.compile(the user's function) (inductor, default mode), warmed up first
    built-in          the built-in kernel of the class on the same shape (elementwise: silu_mul; reduction: rmsnorm),
                      loaded from a second workspace in the same process, for the bandwidth comparison
  GB/s is each side's bytes (the lowered op.json formula; the built-in's its own) over its GPU time.
Writes <out>/<step>.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "lowering_corpus" / "ops.py"  # --corpus: another file with an EXPECT table (annotated.py)
sys.path.insert(0, str(CORPUS.parent))
import ops  # noqa: E402

EXPECT = {**ops.EXPECT, **ops.GEMM_EXPECT}  # every corpus function: its class (or "refused")
LOWERED = [name for name, (kind, *_) in EXPECT.items() if kind != "refused"]


def use_corpus(path: Path) -> None:
    """Bake from `path` (a file beside ops.py with its own EXPECT) instead of ops.py."""
    global CORPUS, EXPECT, LOWERED
    import importlib

    CORPUS = path.resolve()
    EXPECT = importlib.import_module(path.stem).EXPECT
    LOWERED = [name for name, (kind, *_) in EXPECT.items() if kind != "refused"]
ELEMENTWISE_SHAPES = "16384x16384;4096x14336"  # 2^28 elements first: the headline, in 2-D so vectors are [N]
BUILT_IN = {"elementwise": ("elementwise", "silu_mul", ELEMENTWISE_SHAPES), "reduction": ("reduction", "rmsnorm", "")}


def cookiecutter(out: Path, *pairs: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(out), *pairs],
                          capture_output=True, text=True)


def bake(out: Path, name: str) -> dict:
    kind, *rest = EXPECT[name]
    pairs = [f"pytorch_logic={CORPUS}:{name}", "run_baseline=no", "gpu=H200"]
    if len(rest) > 1:  # the corpus names the shapes
        pairs.append(f"shapes={rest[1]}")
    elif kind == "elementwise":
        pairs.append(f"shapes={ELEMENTWISE_SHAPES}")
    done = cookiecutter(out, *pairs)
    (out / f"{name}.bake.log").write_text(done.stdout + done.stderr)
    return {"name": name, "baked": (out / name / "lowered.py").is_file(), "exit": done.returncode}


def bake_built_in(out: Path, kind: str) -> Path:
    pattern, op, shapes = BUILT_IN[kind]
    name = f"builtin_{op}"
    if not (out / name).is_dir():
        cookiecutter(out, f"pattern={pattern}", f"op={op}", f"op_name={name}", "run_baseline=no", "gpu=H200",
                     *([f"shapes={shapes}"] if shapes else []))
    return out / name


def check(out: Path, name: str) -> dict:
    ws = out / name
    done = subprocess.run([sys.executable, "test_kernel.py", "--no-timing"], cwd=ws, capture_output=True, text=True,
                          timeout=900)
    res = json.loads((ws / "results" / "results.json").read_text())
    return {"name": name, "pattern": res["pattern"], "exit": done.returncode, "all_passed": res.get("all_passed"),
            "cases": [{k: c.get(k) for k in ("name", "status", "rel_err", "error")} for c in res["cases"]],
            "max_rel_err": res.get("max_rel_err"), "device": res.get("device")}


def v0(out: Path, name: str) -> dict:
    ws = out / name
    done = subprocess.run([sys.executable, "tools/run_baseline.py"], cwd=ws, capture_output=True, text=True,
                          timeout=1200)
    res = json.loads((ws / "results" / "results.json").read_text())
    memory = json.loads((ws / "memory" / "v0.json").read_text())
    head = [c for c in res["cases"] if "latency_us" in c][:1]
    return {"name": name, "exit": done.returncode, "all_passed": res.get("all_passed"),
            "passed": sum(c["status"] == "PASS" for c in res["cases"]), "cases": len(res["cases"]),
            "max_rel_err": res.get("max_rel_err"), "quality_gate": memory["quality_gate"]["result"],
            "headline": head[0] if head else None, "commit": memory.get("git_commit_hash"), "tail": done.stdout[-600:]}


CHILD = textwrap.dedent("""
    import importlib, json, sys, time
    from pathlib import Path
    import torch

    MODULES = ("host", "cutedsl_runtime", "reference", "kernel", "user_logic", "lowered", "pointwise", "test_kernel")

    def load(ws):
        for m in MODULES:
            sys.modules.pop(m, None)
        sys.path.insert(0, str(ws))
        mods = {m: importlib.import_module(m) for m in ("host", "kernel", "reference", "test_kernel")}
        sys.path.remove(str(ws))
        return mods

    ws, builtin_ws = Path(sys.argv[1]), Path(sys.argv[2])
    sys.path.insert(0, str(ws / "tools"))
    import compute_utilization
    base = load(builtin_ws)
    base_op = json.loads((builtin_ws / "op.json").read_text())
    mine = load(ws)
    op = json.loads((ws / "op.json").read_text())
    tk = mine["test_kernel"]
    dtype = getattr(torch, op["torch_dtype"])
    case = next(c for c in op["cases"] if c["role"] == "representative")
    base_case = next((c for c in base_op["cases"] if c["dims"] == case["dims"]), None)  # None: no built-in side
    inputs = mine["reference"].make_inputs(case, dtype, "cuda", 0)
    base_inputs = base["reference"].make_inputs(base_case, dtype, "cuda", 0) if base_case else None
    fn = mine["reference"].baseline
    compiled = torch.compile(fn)
    started = time.perf_counter()
    for _ in range(3):
        compiled(*inputs)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - started
    out = mine["kernel"].run(*inputs)
    sides = {"kernel": lambda: mine["kernel"].run(*inputs, out=out), "eager": lambda: fn(*inputs),
             "compile": lambda: compiled(*inputs)}
    base_bytes = 1
    if base_case:
        base_out = base["kernel"].run(*base_inputs)
        sides["builtin"] = lambda: base["kernel"].run(*base_inputs, out=base_out)
        _, base_bytes = compute_utilization.case_work(base_op, base_case)
    _, nbytes = compute_utilization.case_work(op, case)
    copy = tk.copy_ceiling()  # the device copy's bandwidth, same process: the bytes' floor
    row = {"workspace": ws.name, "pattern": op["pattern"], "case": case["name"], "bytes": nbytes,
           "builtin_op": base_op["op"], "builtin_bytes": base_bytes, "compile_warmup_s": round(compile_s, 1)}
    for side, call in sides.items():
        t = tk.bench(call)
        c = tk.call_latency(call, t["median_us"])
        row[side] = {"gpu_us": t["median_us"], "call_us": c["call_us"], "host_us": c["host_us"],
                     "gbps": (base_bytes if side == "builtin" else nbytes) / (t["median_us"] * 1e-6) / 1e9}
    row["vs_eager"] = row["eager"]["gpu_us"] / row["kernel"]["gpu_us"]
    row["vs_compile"] = row["compile"]["gpu_us"] / row["kernel"]["gpu_us"]
    row["bw_vs_builtin"] = row["kernel"]["gbps"] / row["builtin"]["gbps"] if "builtin" in row else None
    row["copy_gbps"] = copy.get("gbps")
    row["bw_vs_copy"] = row["kernel"]["gbps"] / copy["gbps"] if copy.get("gbps") else None
    print(json.dumps(row))
""")


def perf(out: Path, name: str) -> dict:
    kind = EXPECT[name][0]
    if kind not in BUILT_IN:  # a GEMM's epilogue: benchmarks/bench_gemm_epilogue.py times it against cuBLAS and inductor
        return {"workspace": name, "error": f"perf times the {', '.join(BUILT_IN)} classes; a {kind} is timed by "
                                            "benchmarks/bench_gemm_epilogue.py"}
    builtin = bake_built_in(out, kind)
    done = subprocess.run([sys.executable, "-c", CHILD, str(out / name), str(builtin)], capture_output=True, text=True,
                          timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"workspace": name, "error": (done.stderr or done.stdout)[-1500:]}
    return json.loads(lines[-1])


def table(step: str, rows: list[dict]) -> str:
    if step == "perf":
        head = ("| function | GPU us: kernel | eager | torch.compile | built-in | x eager | x compile | GB/s kernel | "
                "GB/s built-in | bw vs built-in | bw vs copy | call us: kernel | eager | compile |")
        lines = [head, "|" + "---|" * (head.count("|") - 1)]
        for r in rows:
            if "error" in r:
                lines.append(f"| {r['workspace']} | error: {r['error'][-200:]!r} |")
                continue
            b = r.get("builtin")
            lines.append(f"| {r['workspace']} | {r['kernel']['gpu_us']:.1f} | {r['eager']['gpu_us']:.1f} | "
                         f"{r['compile']['gpu_us']:.1f} | "
                         + (f"{b['gpu_us']:.1f} ({r['builtin_op']})" if b else "-") +
                         f" | {r['vs_eager']:.2f} | {r['vs_compile']:.2f} | {r['kernel']['gbps']:.0f} | "
                         + (f"{b['gbps']:.0f} | {r['bw_vs_builtin']:.3f}" if b else "- | -") +
                         f" | {r['bw_vs_copy']:.3f} | {r['kernel']['call_us']:.1f} | "
                         f"{r['eager']['call_us']:.1f} | {r['compile']['call_us']:.1f} |")
        return "\n".join(lines)
    return "\n".join(json.dumps({k: v for k, v in r.items() if k not in ("cases", "tail")}) for r in rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--corpus", type=Path, default=CORPUS, help="the functions' file (default tests/lowering_corpus/ops.py)")
    p.add_argument("step", choices=("bake", "check", "v0", "perf"))
    p.add_argument("names", nargs="*", help="corpus functions (default: every lowered one)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.corpus.resolve() != CORPUS:
        use_corpus(args.corpus)
    names = args.names or LOWERED
    step = {"bake": bake, "check": check, "v0": v0, "perf": perf}[args.step]
    jobs = args.jobs if args.step != "perf" else 1  # perf's timing must have the GPU to itself
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(lambda n: step(args.out, n), names))
    (args.out / f"{args.step}.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(table(args.step, rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
