"""Where run()'s host time goes, piece by piece, on the H200's host: for a reduction and an elementwise workspace of
three inputs (and built-in softmax), each step of the hot path timed alone with sweep_common.host_us.

    python3 benchmarks/host_parts.py --out FILE.json

The pieces: the whole run(), run(out=), the compiled TVM-FFI launcher alone, one output allocation (x.new_empty of
(M, N) and torch.empty_like(x)), the signature tuple, one dict lookup, and torch's floor (torch.add(out=)).
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
CASES = {"layer_norm": ("reduction", "tests/lowering_corpus/ops.py"),
         "gated_residual": ("elementwise", "benchmarks/models/row_ops.py"), "softmax": ("reduction", None)}


def main() -> int:
    out = Path(sys.argv[sys.argv.index("--out") + 1])
    sync = torch.cuda.synchronize
    a = torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "torch.add(out=)": host_us(lambda: torch.add(a, a, out=c), sync=sync),
           "torch.empty_like": host_us(lambda: torch.empty_like(a), sync=sync),
           "x.new_empty((m, n))": host_us(lambda: a.new_empty((64, 1024)), sync=sync),
           "torch.empty(shape, dtype, device)": host_us(
               lambda: torch.empty((64, 1024), dtype=torch.bfloat16, device=a.device), sync=sync),
           "x.shape unpack": host_us(lambda: tuple(a.shape), sync=sync),
           "x.data_ptr() & 15": host_us(lambda: a.data_ptr() & 15, sync=sync),
           "x.stride(0)": host_us(lambda: a.stride(0), sync=sync),
           "x.is_contiguous()": host_us(lambda: a.is_contiguous(), sync=sync),
           "x.dim()": host_us(lambda: a.dim(), sync=sync)}
    tmp = Path(tempfile.mkdtemp())
    for op, (pattern, file) in CASES.items():
        ws = bake(tmp, pattern, op) if file is None else bake_user(tmp, f"{ROOT / file}:{op}", shapes="64x1024")
        kernel, ref = load_workspace(ws)
        case = min(json.loads((ws / "op.json").read_text())["cases"], key=lambda c: math.prod(c["dims"]))
        x = ref.make_inputs(case, torch.bfloat16, "cuda", 0)
        y = kernel.run(*x)
        prepared = next(iter(kernel._launches.values()))
        launcher, lead = (prepared[0], prepared[1:]) if isinstance(prepared, tuple) else (prepared, ())
        outs = list(y) if isinstance(y, (tuple, list)) else [y]
        sig = next(iter(kernel._launches))
        res[op] = {"inputs": len(x), "case": case["dims"],
                   "run()": host_us(lambda: kernel.run(*x), sync=sync),
                   "run(out=)": host_us(lambda: kernel.run(*x, out=y), sync=sync),
                   "launcher alone": host_us(lambda: launcher(*lead, *x, *outs), sync=sync),
                   "signature": host_us(lambda: (x[0].dtype, *[t.data_ptr() & 15 for t in x]), sync=sync),
                   "lookup": host_us(lambda: kernel._launches.get(sig), sync=sync)}
        print(op, res[op], flush=True)
    out.write_text(json.dumps(res, indent=1))
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
