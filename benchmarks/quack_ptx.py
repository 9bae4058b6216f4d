"""Our softmax and quack's, compiled on a CPU for sm_90a, side by side: per shape, the PTX's global, shared and
cp.async accesses, shuffles, exps, barriers and DSMEM sends, and ptxas's registers and spills. Ours under its
plan with MANY_ROWS_DIRECT off (one send a CTA) and on (the default: the many-rows plan's pair sent by every warp).
Its third row in 2026-12-06-h200-online-pair.md, STAGE_SMEM (the row staged through shared memory by cp.async, as
quack's is), lost on both GPUs and was removed from the kernel.

    .venv/bin/python benchmarks/quack_ptx.py --quack DIR    # DIR: quack-kernels unpacked (pip install --target)

No GPU: the kernels are compiled, never run. quack compiles tensor-free (its Softmax.compile's fake tensors). Its
package __init__ imports triton (its autotuner), which this container does not have, so quack's modules are
loaded from DIR under a bare package, without that __init__. ptxas must be on PATH.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import types
from pathlib import Path

from online_pair_ptx import counted
from sweep_common import bake, load_workspace

SHAPES = ((1024, 128256), (4096, 32000), (16, 262144), (8, 131072))  # (M, N): the many-rows plans, then a few-rows one
VARIANTS = (False, True)  # MANY_ROWS_DIRECT
COUNTS = {"ld.global": r"ld\.global", "cp.async": r"cp\.async\.c[ag]\.", "ld.shared": r"ld\.shared",
          "st.global": r"st\.global", "shfl": r"shfl\.sync", "ex2": r"ex2\.approx", "bar.sync": r"\bbar\.sync",
          "st.async": r"st\.async"}


def quacks(quack_dir: Path, n: int) -> str:
    """quack's softmax PTX for bf16 rows of n, compiled as quack's Softmax.compile does, with --keep-ptx."""
    import cutlass
    import cutlass.cute as cute

    if "quack" not in sys.modules:
        package = types.ModuleType("quack")
        package.__path__ = [str(quack_dir / "quack")]
        sys.modules["quack"] = package
    from quack.compile_utils import make_fake_tensor
    from quack.softmax import Softmax

    batch, div = cute.sym_int(), math.gcd(8, n)
    x, out = (make_fake_tensor(cutlass.BFloat16, (batch, n), div) for _ in range(2))
    stream = cute.runtime.make_fake_stream(use_tvm_ffi_env_stream=True)
    ptx = cute.compile(Softmax(cutlass.BFloat16, n), x, out, stream,
                       options="--enable-tvm-ffi --keep-ptx").artifacts.PTX
    return Path(ptx).read_text() if "\n" not in ptx and Path(ptx).is_file() else ptx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quack", type=Path, required=True, help="quack-kernels unpacked (pip install --target)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    kernel, _ = load_workspace(bake(tmp, "reduction", "softmax"))
    print(f"| shape | kernel | {' | '.join(COUNTS)} | registers, spills |")
    print("|---|---|" + "---|" * (len(COUNTS) + 1))
    default = kernel.MANY_ROWS_DIRECT
    for m, n in SHAPES:
        rows = []
        for direct in VARIANTS:
            kernel.MANY_ROWS_DIRECT = direct
            kernel._compiled.clear()  # the knob is read at trace time
            cfg = kernel.plan(n, 8, m)
            name = (f"ours, {cfg['cluster']}x{cfg['threads']}x{cfg['chunks']}" + (f"@{cfg['min_ctas']}" if
                    cfg["min_ctas"] else "") + (", direct" if cfg["direct"] else "") + (", pair" if cfg["pair"] else ""))
            ptx = kernel.compile_only({"dims": [m, n]}, str(tmp / "ours"))
            rows.append((name, counted(ptx, tmp / f"ours_{n}_{direct}.ptx", COUNTS)))
        kernel.MANY_ROWS_DIRECT = default
        rows.append(("quack 0.6.5", counted(quacks(args.quack, n), tmp / f"quack_{n}.ptx", COUNTS)))
        for name, made in rows:
            print(f"| {m}x{n} | {name} | {' | '.join(str(made[k]) for k in COUNTS)} | "
                  f"{made['registers']}, {made['spills']} |")


if __name__ == "__main__":
    main()
