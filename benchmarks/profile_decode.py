"""Run the decode-attention cell on one shape a few times, for a profiler to attach to (ncu, nsys), on the H200.

    ncu --kernel-name regex:split_kernel --launch-skip 3 --launch-count 1 --section WarpStateStats \
        python3 benchmarks/profile_decode.py 32x16x1x4096x128            # B x Hq x Hkv x S x D, bf16, full lengths

Bakes one decode workspace through the template (as sweep_decode.py does), draws the workspace's own inputs, runs
kernel.run `--calls` times (the first compiles) and prints the plan describe() gives for the shape.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("shape", help="BxHqxHkvxSxD")
    p.add_argument("--calls", type=int, default=6)
    args = p.parse_args(argv)
    import torch
    from bench_decode_attention import load_kernel
    from tools import registry, scaffold, spec

    with tempfile.TemporaryDirectory(prefix="kb-decode-prof-") as tmp:
        ws = scaffold.workspace(Path(tmp) / "ws", spec.context(pattern="decode_attention", gpu="H200", dtype="bf16",
                                                                run_baseline="no"))
        kernel = load_kernel(ws)
        import reference  # the workspace's

        (case,) = registry.pattern("decode_attention").cases(args.shape, "representative", "bf16")
        inputs = reference.make_inputs(case, torch.bfloat16, "cuda", 0)
        for _ in range(args.calls):
            kernel.run(*inputs)
        torch.cuda.synchronize()
        print(kernel.describe(case))
    return 0


if __name__ == "__main__":
    sys.exit(main())
