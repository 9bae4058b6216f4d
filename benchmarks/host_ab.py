"""run()'s host cost, old against new, in one process on the H200's host: workspaces of a lowered reduction of three
inputs (F.layer_norm), built-in softmax and a three-input elementwise op, each baked twice, the second copy with the
reduction cell's kernel.py replaced by an older one (--old-kernel: `git show REV:<cell>/kernel.py > FILE`).

    python3 benchmarks/host_ab.py --old-kernel FILE --out FILE.json

Each figure is sweep_common.host_us (back-to-back calls on the op's smallest case, no sync inside a round, best of
5 rounds, us per call), the old and new workspace in turn, ROUNDS times, each keeping its best: run() (outputs
allocated), run(out=) and the compiled launcher alone (run()'s cached TVM-FFI callable with run()'s arguments).
Beside them, torch's own floor in the same process: torch.add(out=), torch.empty_like, an eager torch.softmax.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import tempfile
from pathlib import Path

import torch

from sweep_common import bake, bake_user, host_us, load_workspace

ROOT = Path(__file__).resolve().parent.parent
CASES = {"layer_norm": ("reduction", "tests/lowering_corpus/ops.py"), "softmax": ("reduction", None),
         "gated_residual": ("elementwise", "benchmarks/models/row_ops.py")}
ROUNDS = 3


def _side(kernel, x) -> dict:
    """The three timed calls of one workspace: run(), run(out=), its compiled launcher alone."""
    y = kernel.run(*x)
    prepared = next(iter(kernel._launches.values()))
    # a reduction's entry is (launcher, iters, largest M, next entry): the launcher takes iters first
    launcher, lead = (prepared[0], prepared[1:2]) if isinstance(prepared, tuple) else (prepared, ())
    outs = list(y) if isinstance(y, (tuple, list)) else [y]
    return {"run()": lambda: kernel.run(*x), "run(out=)": lambda: kernel.run(*x, out=y),
            "launcher alone": lambda: launcher(*lead, *x, *outs)}


def main() -> int:
    out = Path(sys.argv[sys.argv.index("--out") + 1])
    old_kernel = Path(sys.argv[sys.argv.index("--old-kernel") + 1])
    sync = torch.cuda.synchronize
    a = torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    floors = {"torch.add(out=)": lambda: torch.add(a, a, out=c), "torch.empty_like": lambda: torch.empty_like(a),
              "torch.softmax": lambda: torch.softmax(a, -1)}
    tmp = Path(tempfile.mkdtemp())
    sides = {}
    for op, (pattern, file) in CASES.items():
        ws = bake(tmp, pattern, op) if file is None else bake_user(tmp, f"{ROOT / file}:{op}", shapes="64x1024")
        old = shutil.copytree(ws, tmp / f"{op}_old")
        if pattern == "reduction":
            shutil.copy(old_kernel, old / "kernel.py")
        case = min(json.loads((ws / "op.json").read_text())["cases"], key=lambda c: math.prod(c["dims"]))
        for name, path in (("new", ws), ("old", old)):
            kernel, ref = load_workspace(path)
            sides[(op, name)] = _side(kernel, ref.make_inputs(case, torch.bfloat16, "cuda", 0))
    best: dict = {}
    for _ in range(ROUNDS):
        for what, fn in floors.items():
            best[what] = min(best.get(what, math.inf), host_us(fn, sync=sync))
        for (op, name), calls in sides.items():
            for what, fn in calls.items():
                key = f"{op} {name} {what}"
                best[key] = min(best.get(key, math.inf), host_us(fn, sync=sync))
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rounds": ROUNDS, "us": best}
    out.write_text(json.dumps(res, indent=1))
    for key, us in best.items():
        print(f"{key:40s} {us:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
