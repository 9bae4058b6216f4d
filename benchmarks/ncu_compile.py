"""A user function's workspace kernel beside torch.compile of the same function, on the same inputs, for Nsight Compute:
both sides compile and warm up (Inductor's autotuning launches included) before the profiler starts, then each runs
once, ours first, so that

    ncu --clock-control none --profile-from-start off \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        python3 benchmarks/ncu_compile.py --logic tests/lowering_corpus/ops.py:layer_norm_by_hand --shape 32768x8192

profiles exactly those launches. `--inductor-code FILE` also writes the Triton source Inductor generated for the
function at that shape (its first compile, captured by torch._inductor.utils.run_and_get_code), to read beside ncu.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

from sweep_common import bake_user, load_workspace
from tools import registry

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logic", required=True, help="FILE.py:function, relative to the repository")
    parser.add_argument("--shape", required=True)
    parser.add_argument("--inductor-code", type=Path, help="write Inductor's generated source for this shape here")
    args = parser.parse_args()
    file, name = args.logic.rsplit(":", 1)
    kernel, ref = load_workspace(bake_user(Path(tempfile.mkdtemp()), f"{ROOT / file}:{name}", shapes=args.shape))
    (case,) = registry.pattern("reduction").cases(args.shape, "representative", "bf16")
    x = ref.make_inputs(case, torch.bfloat16, "cuda", 0)
    compiled = torch.compile(ref.baseline, dynamic=False, fullgraph=True)
    if args.inductor_code:
        from torch._inductor.utils import run_and_get_code

        _, sources = run_and_get_code(compiled, *x)
        args.inductor_code.write_text("\n\n".join(sources))
    for _ in range(2):
        kernel.run(*x)
        compiled(*x)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    kernel.run(*x)
    compiled(*x)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
