"""Our softmax and quack's, compiled on a CPU for sm_90a, side by side: per shape, the PTX's global, shared and
cp.async accesses, shuffles, exps, barriers and DSMEM sends, and ptxas's registers and spills. Ours under its
plan with MANY_ROWS_DIRECT off (one send a CTA), as it is, and with its last chunk alone predicated and exp(a - m)
as one FFMA (TAIL_PREDICATES and pointwise's SHIFT_FMA): bench_cluster.py's variants many_apart, default and
after_tail, set by its _variant. With --nvdisasm, the SASS as well: its
instructions in all, and the FFMA, FADD, FMUL, constant-bank loads (LDC), compares (ISETP) and selects (FSEL) among
them. Its third row in 2026-12-06-h200-online-pair.md, STAGE_SMEM (the row staged through shared memory by
cp.async, as quack's is), lost on both GPUs and was removed from the kernel.

    .venv/bin/python benchmarks/quack_ptx.py --quack DIR [--nvdisasm PATH]
    # DIR: quack-kernels unpacked (pip install --target); PATH: nvdisasm (pip download nvidia-cuda-nvdisasm)

No GPU: the kernels are compiled, never run. quack compiles tensor-free (its Softmax.compile's fake tensors). Its
package __init__ imports triton (its autotuner), which this container does not have, so quack's modules are
loaded from DIR under a bare package, without that __init__. ptxas must be on PATH.
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import bench_cluster
from online_pair_ptx import counted
from sweep_common import bake, load_workspace

SHAPES = ((1024, 128256), (4096, 32000), (16, 262144), (8, 131072))  # (M, N): the many-rows plans, then a few-rows one
VARIANTS = ("many_apart", "default", "after_tail")  # bench_cluster.py's, set as it sets them
SASS = ("FFMA", "FADD", "FMUL", "LDC", "ISETP", "FSEL")  # SASS opcodes counted, with predicated ones
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


def sass(ptx_path: Path, nvdisasm: str) -> dict:
    """The SASS of a PTX file (ptxas for sm_90a, then nvdisasm): its instructions in all, and each of SASS's."""
    cubin = ptx_path.with_suffix(".cubin")
    subprocess.run(["ptxas", "-arch=sm_90a", str(ptx_path), "-o", str(cubin)], check=True)
    text = subprocess.run([nvdisasm, "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
    ops = re.findall(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_]*)", text, re.M)
    return {"SASS": len(ops), **{op: ops.count(op) for op in SASS}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quack", type=Path, required=True, help="quack-kernels unpacked (pip install --target)")
    parser.add_argument("--nvdisasm", help="nvdisasm, for the SASS's counts")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    kernel, _ = load_workspace(bake(tmp, "reduction", "softmax"))
    columns = [*COUNTS, *(("SASS", *SASS) if args.nvdisasm else ())]
    print(f"| shape | kernel | {' | '.join(columns)} | registers, spills |")
    print("|---|---|" + "---|" * (len(columns) + 1))
    for m, n in SHAPES:
        rows = []
        for label in VARIANTS:
            bench_cluster._variant(kernel, bench_cluster.VARIANTS[label])
            cfg = kernel.plan(n, 8, m)
            name = (f"ours, {cfg['cluster']}x{cfg['threads']}x{cfg['chunks']}" + (f"@{cfg['min_ctas']}" if
                    cfg["min_ctas"] else "") + (", direct" if cfg["direct"] else "") + (", pair" if cfg["pair"] else "")
                    + (f", {label}" if label != "default" else ""))
            ptx = kernel.compile_only({"dims": [m, n]}, str(tmp / "o"))
            rows.append((name, tmp / f"ours_{n}_{len(rows)}.ptx", ptx))
        bench_cluster._variant(kernel, {})
        rows.append(("quack 0.6.5", tmp / f"quack_{n}.ptx", quacks(args.quack, n)))
        for name, path, ptx in rows:
            made = counted(ptx, path, COUNTS)
            made.update(sass(path, args.nvdisasm) if args.nvdisasm else {})
            print(f"| {m}x{n} | {name} | {' | '.join(str(made[k]) for k in columns)} | "
                  f"{made['registers']}, {made['spills']} |")


if __name__ == "__main__":
    main()
