"""Two workspaces' kernels on the same inputs, for Nsight Compute: each runs twice, new then old, so that
`ncu --launch-skip 2 --launch-count 2` profiles one launch of each (the first two compile and warm up).

    ncu --clock-control none --launch-skip 2 --launch-count 2 --section ... \
        python3 benchmarks/ncu_pair.py --new NEW_WS --old OLD_WS --shape 4096x5120
"""

from __future__ import annotations

import argparse
import sys

import torch

from sweep_common import load_workspace
from tools import registry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new", required=True)
    parser.add_argument("--old", required=True)
    parser.add_argument("--shape", required=True)
    parser.add_argument("--pattern", default="reduction")
    args = parser.parse_args()
    new_k, ref = load_workspace(args.new)
    old_k, _ = load_workspace(args.old)
    (case,) = registry.pattern(args.pattern).cases(args.shape, "representative", "bf16")
    x = ref.make_inputs(case, torch.bfloat16, "cuda", 0)
    for _ in range(2):
        new_k.run(*x)
        old_k.run(*x)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
