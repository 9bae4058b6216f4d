"""Launch cost of every Hopper cell: host µs per run(), GPU µs and do_bench µs, next to torch eager and quack.

    python3 benchmarks/bench_launch.py --out benchmarks/results/DATE-h200-launch.json      # on the H200
    python3 benchmarks/bench_launch.py --out ... --workspaces WS [WS ...]                  # already-baked ones

It bakes one workspace per cell and op below through this template (`cookiecutter --no-input ...
run_baseline=no`), then, for each workspace, two child processes, each timing every side with one timer:
- the host child (no profiler ever attached: once CUPTI has been, every later launch costs more host time):
  - first-call s: the workspace's first run() on the shape, compile included;
  - host µs and call µs: the workspace's own `test_kernel.call_latency`, the timer its harness reports:
    N <= 200 back-to-back calls with no sync, host clock (what a model's forward pays per call while the GPU
    keeps up; N stays well under the ~1000 launches the driver queues before a launch blocks, so a slow
    kernel's GPU time never shows up as host time), and the same calls until the GPU finished the last one;
- the GPU child:
  - GPU µs: torch.profiler's CUDA kernel time over the calls, per call (all of the call's kernels);
  - do_bench µs: triton.testing.do_bench (L2 flushed between calls; its flush hides host cost up to ~80 µs,
    so on its own it can mislead both ways: it is here for comparison with other projects' numbers).
The sides: our kernel.run (with out= given), the same kernel through the workspace package's custom op
`torch.ops.<op_name>.run` (side "torch_op": what a torch.compile'd model calls; it allocates its output), the
workspace's torch baseline (reference.baseline: eager torch, cuBLAS, SDPA), and quack (benchmarks only: never
imported by the template) where it has the op (rmsnorm, softmax, GEMM).
Inputs are the workspace's own reference.make_inputs on the same seed, at SHAPES, or for a lowered workspace its own
representative cases (own_cases). Writes JSON rows and prints a table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CELLS = [("elementwise", "silu_mul"), ("elementwise", "add"), ("reduction", "rmsnorm"), ("reduction", "softmax"),
         ("gemm", "matmul"), ("decode_attention", "gqa")]
SHAPES = {  # pattern -> (label, case in op.json's case form): the tiny ones first, then the headline
    "elementwise": [("1000x1111", {"dims": [1000, 1111]}), ("2^28", {"dims": [1 << 28]})],
    "reduction": [("128x8192", {"dims": [128, 8192]}), ("4096x4096", {"dims": [4096, 4096]}),
                  ("32768x8192", {"dims": [32768, 8192]})],
    "gemm": [("1x4096x4096", {"dims": [1, 4096, 4096]}), ("128x8192x8192", {"dims": [128, 8192, 8192]}),
             ("8192^3", {"dims": [8192, 8192, 8192]})],
    "decode_attention": [("B1 Hq32 Hkv8 S8192 D128", {"dims": [1, 32, 8, 8192, 128], "seq_lens": [8192]}),
                         ("B32 Hq32 Hkv8 S4096 D64", {"dims": [32, 32, 8, 4096, 64], "seq_lens": [4096] * 32}),
                         ("B32 Hq32 Hkv8 S4096 D128", {"dims": [32, 32, 8, 4096, 128], "seq_lens": [4096] * 32})],
}

CHILD = textwrap.dedent("""
    import importlib, json, sys, time
    from pathlib import Path
    import torch
    sys.path.insert(0, "..")
    ws = importlib.import_module(Path.cwd().name)  # the workspace as a package (its folder's name), with its op
    kernel, reference, test_kernel = ws.kernel, ws.reference, ws.test_kernel
    custom_op = getattr(torch.ops, ws.NAMESPACE).run
    from triton.testing import do_bench
    op = json.load(open("op.json"))
    dtype = getattr(torch, op["torch_dtype"])
    EPS = float(op.get("params", {}).get("eps", 1e-6))

    def quack_side(inputs):
        if op["op"] not in ("rmsnorm", "softmax", "matmul"):
            return None
        import quack
        if op["op"] == "rmsnorm":
            return lambda: quack.rmsnorm(inputs[0], inputs[1], eps=EPS)
        if op["op"] == "softmax":
            return lambda: quack.softmax(inputs[0])
        from quack.gemm_interface import gemm
        return lambda: gemm(inputs[0], inputs[1].T)

    def gpu_us(fn, n):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                fn()
            torch.cuda.synchronize()
        return sum(e.self_device_time_total for e in prof.key_averages()) / n

    def measure(fn):
        if MODE == "host":  # the workspace harness's own call-latency timer, sized by one timed call
            fn(); torch.cuda.synchronize()
            t0 = time.perf_counter(); fn(); torch.cuda.synchronize()
            c = test_kernel.call_latency(fn, (time.perf_counter() - t0) * 1e6, budget_s=0.25)
            return {k: c[k] for k in ("host_us", "call_us", "calls")}
        return {"gpu_us": gpu_us(fn, 50), "do_bench_us": do_bench(fn) * 1e3}

    MODE = sys.argv[2]
    rows = []
    for label, case in json.loads(sys.argv[1]):
        inputs = reference.make_inputs(case, dtype, "cuda", 0)
        t0 = time.perf_counter()
        out = kernel.run(*inputs)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        sides = {"kbaseline": lambda: kernel.run(*inputs, out=out), "torch": lambda: reference.baseline(*inputs),
                 "torch_op": lambda: custom_op(*inputs)}
        q = quack_side(inputs)
        if q is not None:
            sides["quack"] = q
        row = {"workspace": op["op_name"], "op": op["op"], "pattern": op["pattern"], "shape": label}
        if MODE == "host":
            row["first_call_s"] = first
        for side, fn in sides.items():
            row[side] = measure(fn)
        rows.append(row)
        del inputs, out
        torch.cuda.empty_cache()
    print(json.dumps(rows))
""")


def own_cases(op: dict) -> list:
    """A lowered workspace's own representative cases (its function's shapes: RoPE's q [B, S, H, D] with cos [S, D]
    cannot be made from a 2-D label), the smallest first, as (label, case)."""
    timed = sorted((c for c in op["cases"] if c["role"] == "representative"), key=lambda c: c["vars"]["numel"])
    return [(c["name"][4:], c) for c in timed[:3]]


def bake(dest: Path) -> list[Path]:
    """One workspace per (pattern, op) of CELLS, baked for the H200 through this template."""
    out = []
    for pattern, op in CELLS:
        name = f"launch_{op}"
        done = subprocess.run([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(dest),
                               f"pattern={pattern}", f"op={op}", "gpu=H200", f"op_name={name}", "run_baseline=no"],
                              cwd=dest, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"bench_launch: baking {pattern}/{op} failed: {done.stderr[-1500:]}")
        out.append(dest / name)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--workspaces", nargs="+", type=Path, help="already-baked workspaces (default: bake CELLS)")
    args = p.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kb-launch-") as tmp:
        for ws in args.workspaces or bake(Path(tmp)):
            op = json.loads((ws / "op.json").read_text())
            shapes = own_cases(op) if op["op"] == "lowered" else SHAPES[op["pattern"]]
            halves = []
            for mode in ("host", "gpu"):
                done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(shapes), mode], cwd=ws,
                                      capture_output=True, text=True, timeout=900)
                if done.returncode != 0:
                    print(f"{ws.name} ({mode}): failed\n{done.stderr[-3000:]}", file=sys.stderr)
                    break
                halves.append(json.loads(done.stdout.strip().splitlines()[-1]))
            else:
                for host, gpu in zip(*halves):
                    rows.append({**host, **{side: {**host[side], **gpu[side]} for side in ("kbaseline", "torch", "torch_op", "quack")
                                            if side in host}})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")
    print("| op | shape | first call s | ours host µs | ours call µs | ours GPU µs | ours do_bench µs | torch_op host µs | "
          "torch host µs | torch call µs | torch GPU µs | torch do_bench µs | quack host µs | quack call µs | quack GPU µs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        k, o, t, q = r["kbaseline"], r["torch_op"], r["torch"], r.get("quack")
        qs = f"{q['host_us']:.1f} | {q['call_us']:.1f} | {q['gpu_us']:.1f}" if q else "- | - | -"
        print(f"| {r['op']} | {r['shape']} | {r['first_call_s']:.2f} | {k['host_us']:.1f} | {k['call_us']:.1f} | "
              f"{k['gpu_us']:.1f} | {k['do_bench_us']:.1f} | {o['host_us']:.1f} | {t['host_us']:.1f} | {t['call_us']:.1f} | "
              f"{t['gpu_us']:.1f} | {t['do_bench_us']:.1f} | {qs} |")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
