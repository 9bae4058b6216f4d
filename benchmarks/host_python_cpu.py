"""run()'s own Python per call on a CPU, the compiled launcher stubbed out: what the hot path costs before TVM-FFI.

    python benchmarks/host_python_cpu.py [--tree CHECKOUT] [--out FILE.json]

Bakes, from the template of --tree (default: this checkout), an H200 bf16 workspace per function below, loads each
without a GPU (kernel.py imports CuTe DSL; nothing compiles), replaces what run() does on a signature's first call
(host.py's checks, which want GPU tensors, and the compile) by a no-op launcher of an unbounded plan, and times run() and run(out=) on CPU tensors of 64x1024 with
sweep_common.host_us (back-to-back calls, best of 5 rounds). The figures are Python only: on the H200's host the
launcher adds 5-7 us and a CUDA allocation 2-4 us (benchmarks/2026-12-04-h200-host-trim.md). Compare two trees by
running this once with each, on one machine, one after the other.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FUNCTIONS = {  # name: (pytorch_logic relative to the tree, or None for a built-in op; the inputs' shapes)
    "softmax": (None, [(64, 1024)]),
    "layer_norm": ("tests/lowering_corpus/ops.py:layer_norm", [(64, 1024), (1024,), (1024,)]),
    "qwen2_moe_shared_expert_combine": ("tests/lowering_corpus/annotated.py:qwen2_moe_shared_expert_combine",
                                        [(64, 1024), (64, 1024), (64, 1)]),
    "mamba2_apply_mask_to_padding_states": ("tests/lowering_corpus/annotated.py:mamba2_apply_mask_to_padding_states",
                                            [(4, 16, 1024), (4, 16)]),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=HERE.parent)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    tree = args.tree.resolve()
    sys.path.insert(0, str(HERE))
    import torch
    from sweep_common import host_us, load_workspace  # puts this checkout first on sys.path: --tree goes before it

    sys.path.insert(0, str(tree))
    for module in [m for m in sys.modules if m == "tools" or m.startswith("tools.")]:
        del sys.modules[module]
    from tools import scaffold, spec

    assert Path(scaffold.__file__).is_relative_to(tree), scaffold.__file__

    tmp = Path(tempfile.mkdtemp())
    rows = {}
    for name, (logic, shapes) in FUNCTIONS.items():
        extra = {"pattern": "reduction", "op": name} if logic is None else {"pytorch_logic": str(tree / logic)}
        ws = scaffold.workspace(tmp / name, spec.context(gpu="H200", dtype="bf16", run_baseline="no", **extra))
        kernel, _ = load_workspace(ws)
        gen = torch.Generator().manual_seed(0)
        inputs = [torch.randn(s, generator=gen).to(torch.bfloat16) for s in shapes]
        if name.startswith("mamba2"):
            inputs[1] = inputs[1] > 0  # the padding mask is bool
        # a signature's first call: host.py's checks (GPU tensors only) and the compile, replaced by a no-op plan
        kernel._prepare = lambda ins, out: ((lambda *a: None, 1, 2**31), None)
        y = kernel.run(*inputs)
        rows[name] = {"run()": round(host_us(lambda: kernel.run(*inputs), n=50000), 2),
                      "run(out=)": round(host_us(lambda: kernel.run(*inputs, out=y), n=50000), 2)}
        print(name, rows[name], flush=True)
    if args.out:
        args.out.write_text(json.dumps({"tree": str(tree), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
