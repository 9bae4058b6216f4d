"""Where a run()'s host time goes, on the H200's host: per-call submit time of run() and of its parts, tiny shapes.

    python3 benchmarks/host_cost_probe.py --out /tmp/hp      # writes host.json and rmsnorm_profile.txt

Each figure: `n` back-to-back calls with no sync (the GPU keeps up: the shapes are tiny), best of 5 rounds, in us per
call. torch's own floor comes first (torch.add with out=, torch.empty_like), then the built-in decode, add and
rmsnorm workspaces: run(), run(out=...), and the compiled TVM-FFI launcher called alone with run()'s arguments.
Result: benchmarks/results/2026-12-04-host-cost-probe.json (page: benchmarks/2026-12-04-h200-decode-variants.md).
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
import sweep_common  # noqa: E402
from sweep_common import bake, load_workspace  # noqa: E402

import torch  # noqa: E402

OUT = Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else Path("/tmp/hp")
OUT.mkdir(parents=True, exist_ok=True)
TMP = Path("/tmp/hp_ws")
TMP.mkdir(exist_ok=True)
res = {}


def host_us(fn) -> float:
    return round(sweep_common.host_us(fn, sync=torch.cuda.synchronize), 2)


def save(k, v):
    res[k] = v
    print(k, v, flush=True)
    (OUT / "host.json").write_text(json.dumps(res, indent=1))


# torch's own floor
a = torch.randn(1024, device="cuda", dtype=torch.bfloat16)
b, c = torch.randn_like(a), torch.empty_like(a)
save("torch.add(out=)", host_us(lambda: torch.add(a, b, out=c)))
save("torch.empty_like", host_us(lambda: torch.empty_like(a)))
save("is_contiguous x4", host_us(lambda: (a.is_contiguous(), b.is_contiguous(), c.is_contiguous(), a.is_contiguous())))

# decode built-in
ws = bake(TMP, "decode_attention")
kernel, reference = load_workspace(ws)
case = {"dims": [1, 8, 8, 256, 128], "seq_lens": [256]}
q, k, v, lens = reference.make_inputs(case, torch.bfloat16, "cuda", 0)
out = torch.empty_like(q)
kernel.run(q, k, v, lens)
save("decode run()", host_us(lambda: kernel.run(q, k, v, lens)))
save("decode run(out=)", host_us(lambda: kernel.run(q, k, v, lens, out=out)))
launcher, (o_part, lse_part, counters), scalars = next(iter(kernel._launches.values()))
save("decode launcher only", host_us(lambda: launcher(q, k, v, lens, o_part, lse_part, counters, out, *scalars)))
sig = (q.dtype, q.shape, k.shape, q.device)
save("decode signature+get", host_us(lambda: kernel._launches.get((q.dtype, q.shape, k.shape, q.device))))
save("decode q.shape", host_us(lambda: (q.shape, k.shape)))
save("decode q.device", host_us(lambda: q.device))

# elementwise built-in add
ws = bake(TMP, "elementwise", "add")
kernel, reference = load_workspace(ws)
x = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
y, o = torch.randn_like(x), torch.empty_like(x)
kernel.run(x, y)
save("add run()", host_us(lambda: kernel.run(x, y)))
save("add run(out=)", host_us(lambda: kernel.run(x, y, out=o)))
launcher = next(iter(kernel._launches.values()))
save("add launcher only", host_us(lambda: launcher(x, y, o)))

# reduction rmsnorm
ws = bake(TMP, "reduction", "rmsnorm")
kernel, reference = load_workspace(ws)
(case,) = __import__("tools.registry", fromlist=["x"]).pattern("reduction").cases("64x1024", "representative", "bf16")
inputs = reference.make_inputs(case, torch.bfloat16, "cuda", 0)
kernel.run(*inputs)
save("rmsnorm run()", host_us(lambda: kernel.run(*inputs)))
try:
    import cProfile
    import pstats
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(2000):
        kernel.run(*inputs)
    pr.disable()
    torch.cuda.synchronize()
    st = pstats.Stats(pr)
    st.sort_stats("tottime")
    import io
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(12)
    (OUT / "rmsnorm_profile.txt").write_text(s.getvalue())
except Exception as e:  # noqa: BLE001
    save("profile error", str(e))
print("done")
