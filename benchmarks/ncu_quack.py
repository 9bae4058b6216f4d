"""A built-in reduction workspace's kernel beside quack's on the same input, for Nsight Compute: each runs twice
(the first call compiles), so that

    ncu --clock-control none -k regex:'row_kernel|looped_kernel|quack' --launch-skip 1 --launch-count 3 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        python3 benchmarks/ncu_quack.py --op softmax --shape 1024x128256

profiles our second launch and both of quack's (its first one after the compile).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

from sweep_common import bake, load_workspace
from tools import registry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=["softmax", "rmsnorm"], required=True)
    parser.add_argument("--shape", required=True)
    args = parser.parse_args()
    import quack

    pattern = registry.pattern("reduction")
    kernel, ref = load_workspace(bake(Path(tempfile.mkdtemp()), "reduction", args.op))
    (case,) = pattern.cases(args.shape, "representative", "bf16")
    x = ref.make_inputs(case, torch.bfloat16, "cuda", 0)
    eps = pattern.OPS["rmsnorm"]["params"]["eps"]
    peer = (lambda: quack.softmax(x[0])) if args.op == "softmax" else (lambda: quack.rmsnorm(x[0], x[1], eps=eps))
    for _ in range(2):
        kernel.run(*x)
    for _ in range(2):
        peer()
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
