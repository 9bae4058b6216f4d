"""run()'s host cost per call on the H200's host, for ops of one to three inputs, beside torch's own floor.

    python3 benchmarks/host_run.py --out FILE.json

Each figure is sweep_common.host_us: back-to-back calls on a tiny input (the GPU keeps up), no sync inside a round,
best of 5 rounds, us per call. Per workspace: run() (outputs allocated), run(out=...) and the compiled launcher
alone (run()'s cached TVM-FFI callable with run()'s arguments). torch's floor on the same host: torch.add(out=),
an eager F.layer_norm, torch.softmax.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

import torch

from sweep_common import bake, bake_user, host_us, load_workspace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
USER = {"layer_norm": "tests/lowering_corpus/ops.py", "gated_residual": "benchmarks/models/row_ops.py"}
OPS = ["softmax", "rmsnorm", "layer_norm", "gated_residual"]  # built-ins (their smallest case), user ops at 64x1024


def _bake(tmp: Path, op: str) -> Path:
    return bake(tmp, "reduction", op) if op not in USER else bake_user(tmp, f"{ROOT / USER[op]}:{op}", shapes="64x1024")


def main() -> int:
    out = Path(sys.argv[sys.argv.index("--out") + 1])
    sync = torch.cuda.synchronize
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    a = torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16)
    w, b, c = torch.randn(1024, device="cuda", dtype=torch.bfloat16), torch.randn_like(a[0]), torch.empty_like(a)
    res["torch.add(out=)"] = host_us(lambda: torch.add(a, a, out=c), sync=sync)
    res["torch.softmax"] = host_us(lambda: torch.softmax(a, -1), sync=sync)
    res["F.layer_norm"] = host_us(lambda: torch.nn.functional.layer_norm(a, (1024,), w, b), sync=sync)
    tmp = Path(tempfile.mkdtemp())
    for op in OPS:
        ws = _bake(tmp, op)
        kernel, ref = load_workspace(ws)
        case = min(json.loads((ws / "op.json").read_text())["cases"], key=lambda c: math.prod(c["dims"]))
        x = ref.make_inputs(case, torch.bfloat16, "cuda", 0)
        y = kernel.run(*x)
        prepared = next(iter(kernel._launches.values()))  # a reduction's entry: (launcher, iters, largest M, next)
        launcher, lead = (prepared[0], prepared[1:2]) if isinstance(prepared, tuple) else (prepared, ())
        outs = list(y) if isinstance(y, (tuple, list)) else [y]
        res[op] = {"inputs": len(x), "case": case["dims"], "run()": host_us(lambda: kernel.run(*x), sync=sync),
                   "run(out=)": host_us(lambda: kernel.run(*x, out=y), sync=sync),
                   "launcher alone": host_us(lambda: launcher(*lead, *x, *outs), sync=sync)}
        print(op, res[op], flush=True)
    out.write_text(json.dumps(res, indent=1))
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
