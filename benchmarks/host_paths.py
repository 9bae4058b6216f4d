"""run()'s host cost per call on the lowered run paths, on a CPU with the launcher stubbed out (Python alone) or on
the GPU (the whole call): 2-D rows, a per-row input over two rows, an x [B, S, D] alone and with a bool per-row
mask, inputs broadcast over x's dims (RoPE's cos and sin, adaLN's shifts and scales), and heads of 128 (Qwen3's
QK-norm viewing q [T, H*128] as [T, H, 128]).

    python benchmarks/host_paths.py [--tree CHECKOUT] [--against OLD_TREE] [--out FILE.json]  # CPU: run()'s Python
    python3 benchmarks/host_paths.py --gpu [--against OLD_TREE] [--out FILE.json]             # GPU: the whole call
    ... [--function NAME ...] [--uint8-masks]               # only these functions; kernel.BOOL_MASKS off

Bakes, from the template of --tree (default: this checkout), an H200 bf16 workspace per function below, and with
--against the same from an older tree (`git archive REV tools '{{cookiecutter.op_name}}' cookiecutter.json hooks
local_extensions.py reference | tar -x -C DIR`); each tree's scaffold bakes in a child process, and every workspace is then
loaded into this one. Times run() and run(out=) on inputs of 64x1024 rows with sweep_common.host_us (back-to-back
calls, best of 5 rounds), every side in turn, ROUNDS times, each keeping its best: one process, one timer.
- CPU: the workspace loads without a GPU (kernel.py imports CuTe DSL; nothing compiles); what run() does on a
  signature's first call (host.py's checks, which want GPU tensors, and the compile) is replaced by a no-op launcher
  of an unbounded plan. On the H200's host the TVM-FFI launch adds 5-7 us a call and a CUDA allocation 2-4 us
  (benchmarks/2026-12-04-h200-host-trim.md).
- --gpu: the real run(), inputs on the GPU, a sync after each round outside its clock (the shapes are tiny: the
  GPU keeps up, so the rounds measure submission), and the compiled launcher alone on the arguments run(out=) passes
  it (the TVM-FFI call: its checks and the launch). torch.empty_like, torch.add(out=) and a Tensor.view beside them
  are the floor.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
FUNCTIONS = {  # name: (pytorch_logic relative to the tree, or None for a built-in op; the inputs' shapes)
    "softmax": (None, [(64, 1024)]),
    "layer_norm": ("tests/lowering_corpus/ops.py:layer_norm", [(64, 1024), (1024,), (1024,)]),
    "rms_norm_functional_3d": ("tests/lowering_corpus/ops.py:rms_norm_functional", [(4, 16, 1024), (1024,)]),
    "qwen2_moe_shared_expert_combine": ("tests/lowering_corpus/annotated.py:qwen2_moe_shared_expert_combine",
                                        [(64, 1024), (64, 1024), (64, 1)]),
    "mamba2_apply_mask_to_padding_states": ("tests/lowering_corpus/annotated.py:mamba2_apply_mask_to_padding_states",
                                            [(4, 16, 1024), (4, 16)]),
    "llama_rope": ("tests/lowering_corpus/annotated.py:llama_rope", [(2, 16, 8, 128), (2, 16, 8, 128), (16, 128),
                                                                     (16, 128)]),
    "qwen3_q_norm": ("tests/lowering_corpus/annotated.py:qwen3_q_norm", [(64, 1024), (128,)]),
    "sd35_ada_layer_norm_zero_x": ("tests/lowering_corpus/annotated.py:sd35_ada_layer_norm_zero_x",
                                   [(2, 16, 1024), (2, 1024), (2, 1024), (2, 1024), (2, 1024)]),
}
ROUNDS = 6  # every side timed in turn this many times, its best kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=HERE.parent)
    parser.add_argument("--against", type=Path, help="an older template tree, timed beside --tree in this process")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--gpu", action="store_true", help="the whole run() on the GPU, not its Python alone")
    parser.add_argument("--function", action="append", choices=sorted(FUNCTIONS), help="only these (default: all)")
    parser.add_argument("--uint8-masks", action="store_true", help="kernel.BOOL_MASKS off: a mask viewed per call")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from sweep_common import host_us, load_workspace

    device, calls = ("cuda", 5000) if args.gpu else ("cpu", 50000)
    sync = torch.cuda.synchronize if args.gpu else None
    tmp = Path(tempfile.mkdtemp())
    trees = {"new": args.tree.resolve(), **({"old": args.against.resolve()} if args.against else {})}
    sides = {}  # (function, tree) -> {what: a zero-argument call}
    for name, (logic, shapes) in FUNCTIONS.items():
        if args.function and name not in args.function:
            continue
        for side, tree in trees.items():
            extra = {"pattern": "reduction", "op": name} if logic is None else {"pytorch_logic": str(HERE.parent / logic)}
            kernel, _ = load_workspace(_bake(tree, tmp / side / name, extra))
            if args.uint8_masks and hasattr(kernel, "BOOL_MASKS"):  # the launcher on uint8, a mask viewed per call
                kernel.BOOL_MASKS = False
                kernel._VIEWS = kernel._viewer()
            gen = torch.Generator().manual_seed(0)
            inputs = [torch.randn(s, generator=gen).to(device, torch.bfloat16) for s in shapes]
            if name.startswith("mamba2"):
                inputs[1] = inputs[1] > 0  # the padding mask is bool
            if not args.gpu:  # a signature's first call: host.py's checks (GPU tensors only), the compile: a no-op
                kernel._prepare = lambda ins, out: ((lambda *a: None, 1, 2**31, None), None)
            y = kernel.run(*inputs)
            sides[(name, side)] = {"run()": functools.partial(kernel.run, *inputs),
                                   "run(out=)": functools.partial(kernel.run, *inputs, out=y)}
            if args.gpu:  # the TVM-FFI launch alone, on the very arguments run(out=) passes it
                sides[(name, side)]["launcher alone"] = _launch_alone(kernel, inputs, y)
    if args.gpu:
        a = torch.randn(64, 1024, device=device, dtype=torch.bfloat16)
        c = torch.empty_like(a)
        sides[("torch floor", "new")] = {"torch.empty_like": lambda: torch.empty_like(a),
                                         "torch.add(out=)": lambda: torch.add(a, a, out=c),
                                         "Tensor.view": lambda: a.view(64, 8, 128)}
    rows: dict = {}
    for _ in range(ROUNDS):  # each side in turn, its best kept: drift of the machine falls on both
        for (name, side), fns in sides.items():
            row = rows.setdefault(name if len(trees) == 1 or name == "torch floor" else f"{name} {side}", {})
            for what, fn in fns.items():
                row[what] = round(min(row.get(what, math.inf), host_us(fn, n=calls // ROUNDS, sync=sync)), 2)
    for name, row in rows.items():
        print(name, row, flush=True)
    if args.out:
        args.out.write_text(json.dumps({"trees": {k: str(v) for k, v in trees.items()}, "device": device,
                                        "gpu": torch.cuda.get_device_name() if args.gpu else None, "rows": rows},
                                       indent=1))
    return 0


def _bake(tree: Path, dest: Path, extra: dict) -> Path:
    """The H200 bf16 workspace of `extra` (a built-in op or a pytorch_logic), baked by tree's own scaffold in a child
    process: two trees' `tools` packages never meet in this one."""
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); from tools import scaffold, spec; "
            "scaffold.workspace(Path(sys.argv[2]), spec.context(gpu='H200', dtype='bf16', run_baseline='no', "
            "**dict(a.split('=', 1) for a in sys.argv[3:])))")
    subprocess.run([sys.executable, "-c", code, str(tree), str(dest), *(f"{k}={v}" for k, v in extra.items())],
                   check=True, cwd=tree)
    return dest


def _launch_alone(kernel, inputs, y):
    """A zero-argument call of the compiled launcher run(*inputs, out=y) reaches, with the arguments it passes
    (caught by a stand-in for one call): run(out=) less this is run()'s own Python on the GPU's host."""
    (signature, entry), = kernel._launches.items()
    caught = []
    kernel._launches[signature] = (lambda *a: caught.append(a), *entry[1:])
    kernel.run(*inputs, out=y)
    kernel._launches[signature] = entry
    return lambda: entry[0](*caught[0])


if __name__ == "__main__":
    sys.exit(main())
