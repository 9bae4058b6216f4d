"""run()'s host cost per call on the lowered run paths, on a CPU with the launcher stubbed out (Python alone) or on
the GPU (the whole call): 2-D rows, a per-row input over two rows, an x [B, S, D] alone and with a bool per-row
mask, inputs broadcast over x's dims (RoPE's cos and sin, adaLN's shifts and scales), and heads of 128 (Qwen3's
QK-norm viewing q [T, H*128] as [T, H, 128]).

    python benchmarks/host_paths.py [--tree CHECKOUT] [--out FILE.json]           # CPU: run()'s own Python
    python3 benchmarks/host_paths.py --gpu [--out FILE.json]                      # H200: run() with its launch
    ... [--function NAME ...] [--bool-masks]                # only these functions; kernel.BOOL_MASKS on

Bakes, from the template of --tree (default: this checkout), an H200 bf16 workspace per function below and times
run() and run(out=) on inputs of 64x1024 rows with sweep_common.host_us (back-to-back calls, best of 5 rounds).
- CPU: the workspace loads without a GPU (kernel.py imports CuTe DSL; nothing compiles); what run() does on a
  signature's first call (host.py's checks, which want GPU tensors, and the compile) is replaced by a no-op launcher
  of an unbounded plan. On the H200's host the TVM-FFI launch adds 5-7 us a call and a CUDA allocation 2-4 us
  (benchmarks/2026-12-04-h200-host-trim.md). Compare two trees by running this once with each, on one machine, one
  after the other.
- --gpu: the real run(), inputs on the GPU, a sync after each round outside its clock (the shapes are tiny: the
  GPU keeps up, so the rounds measure submission), and the compiled launcher alone on the arguments run(out=) passes
  it (the TVM-FFI call: its checks and the launch). torch.empty_like and torch.add(out=) beside them are the floor.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=HERE.parent)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--gpu", action="store_true", help="the whole run() on the GPU, not its Python alone")
    parser.add_argument("--function", action="append", choices=sorted(FUNCTIONS), help="only these (default: all)")
    parser.add_argument("--bool-masks", action="store_true", help="kernel.BOOL_MASKS on: a mask goes as it is")
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

    device, calls = ("cuda", 5000) if args.gpu else ("cpu", 50000)
    sync = torch.cuda.synchronize if args.gpu else None
    tmp = Path(tempfile.mkdtemp())
    rows = {}
    for name, (logic, shapes) in FUNCTIONS.items():
        if args.function and name not in args.function:
            continue
        extra = {"pattern": "reduction", "op": name} if logic is None else {"pytorch_logic": str(tree / logic)}
        ws = scaffold.workspace(tmp / name, spec.context(gpu="H200", dtype="bf16", run_baseline="no", **extra))
        kernel, _ = load_workspace(ws)
        if args.bool_masks and hasattr(kernel, "BOOL_MASKS"):  # the launcher compiled on bool, no view per call
            kernel.BOOL_MASKS = True
            kernel._VIEWS = kernel._viewer()
        gen = torch.Generator().manual_seed(0)
        inputs = [torch.randn(s, generator=gen).to(device, torch.bfloat16) for s in shapes]
        if name.startswith("mamba2"):
            inputs[1] = inputs[1] > 0  # the padding mask is bool
        if not args.gpu:  # a signature's first call: host.py's checks (GPU tensors only) and the compile: a no-op plan
            kernel._prepare = lambda ins, out: ((lambda *a: None, 1, 2**31, None), None)
        y = kernel.run(*inputs)
        rows[name] = {"run()": round(host_us(lambda: kernel.run(*inputs), n=calls, sync=sync), 2),
                      "run(out=)": round(host_us(lambda: kernel.run(*inputs, out=y), n=calls, sync=sync), 2)}
        if args.gpu:  # the TVM-FFI launch alone, on the very arguments run(out=) passes it
            launch = _launch_alone(kernel, inputs, y)
            rows[name]["launcher alone"] = round(host_us(launch, n=calls, sync=sync), 2)
        print(name, rows[name], flush=True)
    if args.gpu:
        a = torch.randn(64, 1024, device=device, dtype=torch.bfloat16)
        c = torch.empty_like(a)
        rows["torch floor"] = {"torch.empty_like": round(host_us(lambda: torch.empty_like(a), n=calls, sync=sync), 2),
                               "torch.add(out=)": round(host_us(lambda: torch.add(a, a, out=c), n=calls, sync=sync), 2)}
        print("torch floor", rows["torch floor"], flush=True)
    if args.out:
        args.out.write_text(json.dumps({"tree": str(tree), "device": device, "rows": rows}, indent=1))
    return 0


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
