"""Host cost and GPU time of `kernel.run()` in baked workspaces, next to torch's, one process per workspace.

    python benchmarks/bench_host_cost.py --out /tmp/host.json WS [WS ...]     # on the GPU machine

For each workspace (any cell, baked by any checkout of the template) and each shape listed for its pattern
below, in that workspace's own process, with its own reference.make_inputs:
- host µs per call: N back-to-back `run(*inputs, out=out)` calls with no sync, host clock, then one sync
  (what a model's forward pays when the GPU keeps up);
- GPU µs per call: torch.profiler's CUDA kernel time over N calls, summed per call (all of the op's kernels);
- the same two figures for the workspace's torch baseline (`reference.baseline`) on the same inputs.
Writes one JSON row per (workspace, shape) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

SHAPES = {  # pattern -> (label, case) in op.json's case form; tiny first, then the headline
    "elementwise": [("1000x1111", {"dims": [1000, 1111]}), ("2^28", {"dims": [1 << 28]})],
    "reduction": [("128x8192", {"dims": [128, 8192]}), ("32768x8192", {"dims": [32768, 8192]})],
    "gemm": [("128x8192x8192", {"dims": [128, 8192, 8192]}), ("8192^3", {"dims": [8192, 8192, 8192]})],
    "decode_attention": [("B1 Hq32 Hkv8 S8192 D128", {"dims": [1, 32, 8, 8192, 128], "seq_lens": [8192]}),
                         ("B32 Hq32 Hkv8 S4096 D128", {"dims": [32, 32, 8, 4096, 128], "seq_lens": [4096] * 32})],
}

CHILD = textwrap.dedent("""
    import json, sys, time
    import torch
    sys.path.insert(0, ".")
    import kernel, reference
    op = json.load(open("op.json"))
    dtype = getattr(torch, op["torch_dtype"])
    rows = []

    def gpu_us(fn, n):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                fn()
            torch.cuda.synchronize()
        return sum(e.self_device_time_total for e in prof.key_averages()) / n

    def host_us(fn, n):
        fn(); torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        return (t1 - t0) / n * 1e6

    for label, case in json.loads(sys.argv[1]):
        inputs = reference.make_inputs(case, dtype, "cuda", 0)
        out = kernel.run(*inputs)
        torch.cuda.synchronize()
        n = 200
        ours = lambda: kernel.run(*inputs, out=out)
        theirs = lambda: reference.baseline(*inputs)
        rows.append({"workspace": op["op_name"], "shape": label, "host_us": host_us(ours, n), "gpu_us": gpu_us(ours, 50),
                     "torch_host_us": host_us(theirs, n), "torch_gpu_us": gpu_us(theirs, 50)})
    print(json.dumps(rows))
""")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("workspaces", nargs="+", type=Path)
    args = p.parse_args(argv)
    rows = []
    for ws in args.workspaces:
        pattern = json.loads((ws / "op.json").read_text())["pattern"]
        done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(SHAPES[pattern])], cwd=ws, capture_output=True,
                              text=True, timeout=900)
        if done.returncode != 0:
            print(f"{ws}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
            continue
        rows += [{**r, "dir": str(ws)} for r in json.loads(done.stdout.strip().splitlines()[-1])]
    args.out.write_text(json.dumps(rows, indent=1) + "\n")
    print("| workspace | dir | shape | host µs/call | GPU µs/call | torch host µs | torch GPU µs |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workspace']} | {Path(r['dir']).parent.name} | {r['shape']} | {r['host_us']:.1f} | {r['gpu_us']:.1f} | "
              f"{r['torch_host_us']:.1f} | {r['torch_gpu_us']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
