"""The row cell's launch plan on the H200, swept for a lowered workspace: which register budget per load (and so
threads per row and chunks per thread) and which CTA size move its bytes fastest, against torch.compile of the same
function on the same inputs, in one process with the harness's own timer.

    python3 benchmarks/sweep_row_plan.py WORKSPACE [WORKSPACE ...] --out sweep.json

Each workspace runs in its own child (its modules are top-level names). In the child, the first representative
case's inputs are made once; for each (budget, CTA threads) the cell's plan inputs are set (kernel.lowered_values,
kernel.MIN_CTA_THREADS), the launch caches are cleared, the kernel's output is checked against the default plan's
(within bf16 rounding: another number of threads per row sums the row in another order), and its GPU time is test_kernel.bench's (CUDA events, cold L2, median). GB/s counts op.json's bytes
(the minimum traffic); "of copy" divides by the device copy's bandwidth measured in the same process.
This is an experiment: the rule it supports is written into the cell's plan() with the numbers in benchmarks/.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import torch

    ws = Path(sys.argv[1])
    sys.path.insert(0, str(ws))
    sys.path.insert(0, str(ws / "tools"))
    import compute_utilization, kernel, reference, test_kernel as tk

    op = json.loads((ws / "op.json").read_text())
    case = next(c for c in op["cases"] if c["role"] == "representative")
    dtype = getattr(torch, op["torch_dtype"])
    inputs = reference.make_inputs(case, dtype, "cuda", 0)
    _, nbytes = compute_utilization.case_work(op, case)
    default = kernel.run(*inputs)
    default = default if isinstance(default, tuple) else (default,)
    copy = tk.copy_ceiling()["gbps"]
    compiled = torch.compile(reference.baseline)
    for _ in range(3):
        compiled(*inputs)
    t = tk.bench(lambda: compiled(*inputs))["median_us"]
    rows = [{"side": "torch.compile", "gpu_us": t, "gbps": nbytes / t / 1e3, "of_copy": nbytes / t / 1e3 / copy}]
    budget0, cta0 = kernel.lowered_values(), kernel.MIN_CTA_THREADS
    for budget in (4, 8, 16, 32):
        for cta in (128, 256, 512):
            kernel.lowered_values = lambda b=budget: b
            kernel.SHORT_ROW_VECTORS = 0  # the budget alone decides, as the sweep sets it
            kernel.MIN_CTA_THREADS = cta
            kernel._launches.clear()
            got = kernel.run(*inputs)
            got = got if isinstance(got, tuple) else (got,)
            same = all(torch.allclose(a.float(), b.float(), rtol=1e-2, atol=1e-2) for a, b in zip(got, default))
            t = tk.bench(lambda: kernel.run(*inputs))["median_us"]
            rows.append({"side": "kernel", "budget": budget, "cta": cta, "default": (budget, cta) == (budget0, cta0),
                         "same_output": same, "plan": kernel.describe(case)["threads_per_row"], "gpu_us": t,
                         "gbps": nbytes / t / 1e3, "of_copy": nbytes / t / 1e3 / copy})
    print(json.dumps({"workspace": ws.name, "case": case["name"], "bytes": nbytes, "copy_gbps": copy, "rows": rows}))
""")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workspaces", nargs="+", type=Path)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    found = []
    for ws in args.workspaces:
        done = subprocess.run([sys.executable, "-c", CHILD, str(ws.resolve())], capture_output=True, text=True,
                              timeout=500)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        found.append(json.loads(lines[-1]) if lines else {"workspace": ws.name, "error": done.stderr[-1500:]})
        r = found[-1]
        print(f"## {r['workspace']}")
        for row in r.get("rows", []):
            print(f"  {row.get('budget', '-')!s:>3} {row.get('cta', '-')!s:>4} tpr={row.get('plan', '-')!s:>4} "
                  f"{row['gpu_us']:8.1f} us {row['of_copy']:.3f} of copy {'' if row.get('same_output', True) else 'DISAGREES'}"
                  f"{' (default)' if row.get('default') else ''} {row['side']}")
        if "error" in r:
            print(r["error"])
    args.out.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
