"""A Llama-3-8B decoder layer's decode step built from baked workspaces' kernels, timed against torch in one process.

    python benchmarks/bench_model.py --out /tmp/bench_model                 # on the H200 (the device setup first)
    python benchmarks/bench_model.py --out /tmp/bench_model --cpu-check     # any machine: bakes, imports, wiring

The layer (hidden 4096, 32 query heads, 8 KV heads, head_dim 128, intermediate 14336, bf16), one new token per
sequence, at B32 S4096 and B1 S8192 (every sequence's cache full to S; the new token is written at S-1):

    h  = rmsnorm(x, w_in)                                   rmsnorm_bf16        (reduction, built-in rmsnorm)
    qkv = h @ Wqkv^T   -> q [B,32,128], k, v [B,8,128]      qkv_gemm            (gemm, N = 4096 + 2*1024)
    k_cache[b, S-1] = k; v_cache[b, S-1] = v                torch index_put (the same in every peer)
    a  = gqa(q, k_cache, v_cache, seq_lens)                 gqa_decode          (decode_attention)
    o  = a @ Wo^T                                           o_gemm              (gemm)
    h2, n = fused_add_rmsnorm(o, x, w_post)                 fused_add_rmsnorm   (your op: pytorch_logic, lowered)
    g  = n @ Wg^T;  u = n @ Wu^T                            gate_up_gemm        (gemm, N = 14336, twice)
    m  = silu(g) * u                                        silu_mul_bf16       (elementwise)
    y  = m @ Wd^T + h2                                      down_gemm, add_bf16 (gemm K = 14336; elementwise add)

RoPE is left out of every peer alike (no workspace has it yet). Nine workspaces are baked through this template
(`cookiecutter --no-input ... run_baseline=no`, the fused add + RMSNorm from its PyTorch function) into --out and
imported side by side as packages (`import gqa_decode`, ...: each workspace's __init__.py keeps their same-named
modules apart). The peers, each timed in one process, in rotation, on the same inputs and weights:

- `eager`: the layer in PyTorch (F.rms_norm, F.linear = cuBLAS, SDPA with enable_gqa, silu * mul);
- `compile`: torch.compile(eager layer), default mode; `compile_ro`: mode="reduce-overhead" (its CUDA graphs; if
  torch skips them, e.g. for the KV-cache writes, the log says so and the time is what it ran);
- `ours`: the same layer calling each workspace's `run` directly; `ours_graph`: that layer captured once in a
  torch.cuda.CUDAGraph of ours and replayed; `ours_compiled`: the layer through the workspaces' custom ops
  (`torch.ops.<workspace>.run`) under torch.compile(fullgraph=True).

Two figures per peer: call time (wall clock per call over back-to-back calls until the GPU finished the last,
host included: what a serving loop waits) and GPU time (torch.profiler's device time of the kernels one call
launches, summed). The output of each peer is checked against eager (rel_err). Writes <out>/bench_model.json and
<out>/bench_model.md. `--cpu-check` runs the same wiring on the CPU at a tiny size through the custom ops' CPU
path (the reference), to prove the layer is assembled right; it times nothing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HIDDEN, HQ, HKV, HEAD, INTER = 4096, 32, 8, 128, 14336
SHAPES = [(32, 4096), (1, 8192)]  # (B, S)
LOGIC = '''import torch


def fused_add_rmsnorm(x, residual, weight, eps=1e-6):
    h = x + residual
    v = h.float().pow(2).mean(-1, keepdim=True)
    return h, (h.float() * torch.rsqrt(v + eps)).to(x.dtype) * weight
'''


def _rows(n: int) -> str:
    return ";".join(f"{b}x{n}" for b, _ in SHAPES)


def _gemm(n: int, k: int) -> str:
    return ";".join(f"{b}x{n}x{k}" for b, _ in SHAPES)


WORKSPACES = {  # op_name -> cookiecutter inputs (besides gpu=H200 run_baseline=no op_name=...)
    "rmsnorm_bf16": ["pattern=reduction", "op=rmsnorm", f"shapes={_rows(HIDDEN)}"],
    "qkv_gemm": ["pattern=gemm", f"shapes={_gemm(HIDDEN + 2 * HKV * HEAD, HIDDEN)}"],
    "gqa_decode": ["pattern=decode_attention", "shapes=" + ";".join(f"{b}x{HQ}x{HKV}x{s}x{HEAD}" for b, s in SHAPES)],
    "o_gemm": ["pattern=gemm", f"shapes={_gemm(HIDDEN, HIDDEN)}"],
    "fused_add_rmsnorm": ["pytorch_logic={logic}", f"shapes={_rows(HIDDEN)}"],
    "gate_up_gemm": ["pattern=gemm", f"shapes={_gemm(INTER, HIDDEN)}"],
    "silu_mul_bf16": ["pattern=elementwise", "op=silu_mul", f"shapes={_rows(INTER)}"],
    "down_gemm": ["pattern=gemm", f"shapes={_gemm(HIDDEN, INTER)}"],
    "add_bf16": ["pattern=elementwise", "op=add", f"shapes={_rows(HIDDEN)}"],
}


def bake(out: Path) -> None:
    """Each workspace of WORKSPACES baked into out/ (kept when already there)."""
    logic = out / "llama_ops.py"
    logic.write_text(LOGIC)
    for name, pairs in WORKSPACES.items():
        if (out / name / "op.json").is_file():
            continue
        pairs = [p.format(logic=f"{logic}:fused_add_rmsnorm") for p in pairs]
        done = subprocess.run([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(out),
                               "gpu=H200", "run_baseline=no", f"op_name={name}", *pairs], capture_output=True, text=True)
        (out / f"{name}.bake.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0 or not (out / name / "op.json").is_file():
            sys.exit(f"bench_model: error: baking {name} failed: {(done.stdout + done.stderr).strip()[-300:]}")


class Layer:
    """Weights, KV caches and the layer's three forms (torch eager, ours via run(), ours via the custom ops)."""

    def __init__(self, ws: dict, batch: int, seq: int, device: str, dims=(HIDDEN, HQ, HKV, HEAD, INTER)):
        import torch

        self.torch, self.ws = torch, ws
        self.hidden, self.hq, self.hkv, self.head, self.inter = dims
        g = torch.Generator(device=device).manual_seed(0)

        def w(*shape, scale):
            return (torch.randn(shape, generator=g, device=device, dtype=torch.float32) * scale).to(torch.bfloat16)

        hd = self.hidden
        self.w_in, self.w_post = 1 + w(hd, scale=0.1), 1 + w(hd, scale=0.1)
        self.wqkv = w(hd + 2 * self.hkv * self.head, hd, scale=hd ** -0.5)
        self.wo = w(hd, self.hq * self.head, scale=hd ** -0.5)
        self.wg, self.wu = w(self.inter, hd, scale=hd ** -0.5), w(self.inter, hd, scale=hd ** -0.5)
        self.wd = w(hd, self.inter, scale=self.inter ** -0.5)
        self.k_cache = w(batch, seq, self.hkv, self.head, scale=1.0)
        self.v_cache = w(batch, seq, self.hkv, self.head, scale=1.0)
        self.seq_lens = torch.full((batch,), seq, dtype=torch.int32, device=device)
        self.rows = torch.arange(batch, device=device)
        self.pos = self.seq_lens.long() - 1
        self.x = w(batch, hd, scale=1.0)
        self.eps_in = float((ws["rmsnorm_bf16"].OP.get("params") or {}).get("eps", 1e-6))
        self.eps_post = 1e-6  # LOGIC's default

    def _split(self, qkv):
        b = qkv.shape[0]
        q, k, v = qkv.split([self.hq * self.head, self.hkv * self.head, self.hkv * self.head], dim=-1)
        return q.reshape(b, self.hq, self.head), k.reshape(b, self.hkv, self.head), v.reshape(b, self.hkv, self.head)

    def _cache(self, k, v):
        self.k_cache[self.rows, self.pos] = k
        self.v_cache[self.rows, self.pos] = v

    def eager(self, x):
        F = self.torch.nn.functional
        h = F.rms_norm(x, (self.hidden,), self.w_in, eps=self.eps_in)
        q, k, v = self._split(F.linear(h, self.wqkv))
        self._cache(k, v)
        a = F.scaled_dot_product_attention(q.unsqueeze(2), self.k_cache.transpose(1, 2), self.v_cache.transpose(1, 2),
                                           enable_gqa=True).squeeze(2)  # every cache full: no mask
        h2 = F.linear(a.reshape(x.shape[0], -1), self.wo) + x
        n = F.rms_norm(h2, (self.hidden,), self.w_post, eps=self.eps_post)
        m = F.silu(F.linear(n, self.wg)) * F.linear(n, self.wu)
        return F.linear(m, self.wd) + h2

    def ours(self, x, call=None):
        """The layer on the workspaces' kernels: `call(name)` gives a workspace's callable (default: its run)."""
        run = call or (lambda name: self.ws[name].run)
        h = run("rmsnorm_bf16")(x, self.w_in)
        q, k, v = self._split(run("qkv_gemm")(h, self.wqkv))
        self._cache(k, v)
        a = run("gqa_decode")(q, self.k_cache, self.v_cache, self.seq_lens)  # q: a view of qkv, read in place
        o = run("o_gemm")(a.reshape(x.shape[0], -1), self.wo)
        h2, n = run("fused_add_rmsnorm")(o, x, self.w_post)
        m = run("silu_mul_bf16")(run("gate_up_gemm")(n, self.wg), run("gate_up_gemm")(n, self.wu))
        return run("add_bf16")(run("down_gemm")(m, self.wd), h2)

    def ours_ops(self, x):
        ops = self.torch.ops
        return self.ours(x, lambda name: getattr(ops, name).run)


def rel_err(out, ref) -> float:
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def graphed(fn, x):
    """fn(x) captured once in a CUDA graph of ours (after a warm-up on a side stream, as torch's docs do)."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(x)
    return lambda: (graph.replay(), out)[1]


def time_peers(peers: dict, rounds: int = 15, calls: int = 20) -> dict:
    """Call time: `calls` back-to-back calls per round, host clock until the GPU finished, peers in rotation over
    `rounds` rounds (median). GPU time: torch.profiler's device time of one round of calls per peer."""
    import torch

    names = list(peers)
    for fn in peers.values():
        fn()
    torch.cuda.synchronize()
    per = {n: [] for n in names}
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                peers[name]()
            torch.cuda.synchronize()
            per[name].append((time.perf_counter() - t0) / calls * 1e6)
    out = {}
    for name in names:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                peers[name]()
            torch.cuda.synchronize()
        gpu = sum(e.self_device_time_total for e in prof.key_averages()) / calls
        out[name] = {"call_us": statistics.median(per[name]), "gpu_us": gpu}
    return out


def measure(ws: dict, batch: int, seq: int, log) -> dict:
    import torch

    layer = Layer(ws, batch, seq, "cuda")
    x = layer.x
    peers, notes = {"eager": lambda: layer.eager(x)}, {}
    ref = layer.eager(x).clone()
    for name, mode in (("compile", "default"), ("compile_ro", "reduce-overhead")):
        torch._dynamo.reset()
        fn = torch.compile(layer.eager, mode=mode)
        try:
            for _ in range(3):
                fn(x)
            peers[name] = lambda fn=fn: fn(x)
        except Exception as err:
            notes[name] = f"failed: {type(err).__name__}: {err}".splitlines()[0][:300]
    peers["ours"] = lambda: layer.ours(x)
    peers["ours_graph"] = graphed(layer.ours, x)
    compiled_ops = torch.compile(layer.ours_ops, fullgraph=True)
    try:
        compiled_ops(x)
        peers["ours_compiled"] = lambda: compiled_ops(x)
    except Exception as err:
        notes["ours_compiled"] = f"failed: {type(err).__name__}: {err}".splitlines()[0][:300]
    errs = {name: rel_err(fn(), ref) for name, fn in peers.items()}
    times = time_peers(peers)
    for name in times:
        times[name]["rel_err_vs_eager"] = errs[name]
    log(f"B{batch} S{seq}: " + "; ".join(f"{n} call {t['call_us']:.1f} us GPU {t['gpu_us']:.1f} us "
                                         f"(rel_err {t['rel_err_vs_eager']:.1e})" for n, t in times.items()))
    return {"batch": batch, "seq": seq, "peers": times, "notes": notes}


def cpu_check(ws: dict) -> None:
    """The layer's wiring on the CPU, tiny: the custom ops' CPU path (each workspace's reference) against eager."""
    import torch

    dims = (256, 4, 2, 64, 512)
    for batch, seq in ((2, 64), (1, 96)):
        layer = Layer(ws, batch, seq, "cpu", dims)
        ref = layer.eager(layer.x.clone())
        layer2 = Layer(ws, batch, seq, "cpu", dims)
        got = layer2.ours_ops(layer2.x.clone())
        err = rel_err(got, ref)
        assert got.shape == ref.shape and err < 2e-2, (got.shape, ref.shape, err)
        print(f"cpu-check B{batch} S{seq}: layer through the custom ops' CPU path, rel_err vs eager {err:.2e}")
    compiled = torch.compile(layer2.ours_ops, fullgraph=True, backend="aot_eager")
    print(f"cpu-check: torch.compile(fullgraph=True) over the custom ops: rel_err "
          f"{rel_err(compiled(layer2.x.clone()), layer2.ours_ops(layer2.x.clone())):.1e}")


def render(rows: list[dict]) -> str:
    lines = ["# Llama-3-8B decoder layer, decode step: our kernels vs torch", "",
             "| shape | peer | call (us) | GPU (us) | vs eager (call) | vs compile (call) | vs reduce-overhead (call) "
             "| rel_err vs eager |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        p = row["peers"]
        for name, t in p.items():
            ratio = {k: (f"{p[k]['call_us'] / t['call_us']:.2f}x" if k in p else "-")
                     for k in ("eager", "compile", "compile_ro")}
            lines.append(f"| B{row['batch']} S{row['seq']} | {name} | {t['call_us']:.1f} | {t['gpu_us']:.1f} | "
                         f"{ratio['eager']} | {ratio['compile']} | {ratio['compile_ro']} | {t['rel_err_vs_eager']:.1e} |")
        lines += [f"- B{row['batch']} S{row['seq']} {k}: {v}" for k, v in row["notes"].items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="folder for the workspaces and the results")
    p.add_argument("--cpu-check", action="store_true", help="check the wiring on the CPU (tiny sizes); times nothing")
    args = p.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    bake(args.out)
    sys.path.insert(0, str(args.out))
    ws = {name: importlib.import_module(name) for name in WORKSPACES}
    if args.cpu_check:
        cpu_check(ws)
        return 0
    import torch

    if not torch.cuda.is_available():
        print("bench_model: NOT RUN: no CUDA GPU here (use --cpu-check to check the wiring)")
        return 2
    log_path = args.out / "bench_model.log"

    def log(line):
        print(line, flush=True)
        with log_path.open("a") as f:
            f.write(line + "\n")

    log(f"device {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    rows = [measure(ws, b, s, log) for b, s in SHAPES]
    (args.out / "bench_model.json").write_text(json.dumps(rows, indent=2) + "\n")
    (args.out / "bench_model.md").write_text(render(rows))
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
