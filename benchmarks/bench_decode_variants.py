"""Decode-attention variants on the H200 ("Your attention"): every lowered variant of the corpus through the template's
V0 flow, then timed against our built-in kernel, FlexAttention and SDPA, in one process with one timer.

    python3 benchmarks/bench_decode_variants.py --out /tmp/dv bake              # one workspace per variant + built-in
    python3 benchmarks/bench_decode_variants.py --out /tmp/dv check --jobs 6    # every case, correctness only
    python3 benchmarks/bench_decode_variants.py --out /tmp/dv v0 --jobs 4       # run_baseline.py in each (all cases)
    python3 benchmarks/bench_decode_variants.py --out /tmp/dv perf [NAME ...]   # the timed comparison, one child each

- bake: `cookiecutter --no-input pytorch_logic=tests/lowering_corpus/decode_variants.py:NAME run_baseline=no` per
  lowered variant (pattern=auto), with decode_attention's default cases (representative and boundary, mixed
  lengths); and the built-in `gqa` workspace;
- check: each workspace's own `python test_kernel.py --no-timing` (every representative and boundary case, variable
  lengths), several at once (correctness only, so sharing the GPU changes nothing);
- v0: each workspace's `python tools/run_baseline.py` (every case, the report, memory/v0.json, the V0 commit); with
  --jobs > 1 they share the GPU, so its timings are not comparisons (perf's are);
- perf: one child per variant; in it, at B32 Hq32 Hkv8 S4096 D128 and B1 Hq32 Hkv8 S32768 D128 (every sequence
  full), on the same inputs, with the harness's timers (test_kernel.bench: CUDA events, L2 flushed before each
  launch, median; call_latency: back-to-back calls, host included):
    variant    the variant workspace's kernel.run (the package `import <name>`)
    built-in   the gqa workspace's kernel.run on q, k, v, seq_lens (the plain op: what a variant costs)
    flex       FlexAttention (torch.compile'd flex_attention) with the variant's score_mod and block mask, evaluated
               in fp32 from the same lowered program (tools/lower/attention.evaluate on the score, keep and key
               range), GQA by enable_gqa, K and V in its layout [B, Hkv, S, D] (copied before timing); a sink enters
               through flex's lse: out * sigmoid(lse - sink) (one more small kernel)
    sdpa       F.scaled_dot_product_attention with the equivalent additive bias [B, Hq, 1, S] (a score that is s plus
               a term: ALiBi, a per-head bias, a distance function) or boolean mask (masks only); built before
               timing; none for a softcap or sinks (SDPA has no equivalent)
    eager      the user's function (torch.compile of it is the V0 report's second baseline)
Writes <out>/<step>.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "lowering_corpus" / "decode_variants.py"
sys.path.insert(0, str(CORPUS.parent))
import decode_variants  # noqa: E402

LOWERS = [n for n, outcome in decode_variants.EXPECT.items() if outcome == "lower"]
BUILT_IN = "builtin_gqa"
SHAPES = [(32, 32, 8, 4096, 128), (1, 32, 8, 32768, 128)]


def cookiecutter(out: Path, *pairs: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(out), *pairs],
                          capture_output=True, text=True)


def bake(out: Path, name: str) -> dict:
    if name == BUILT_IN:
        done = cookiecutter(out, "pattern=decode_attention", "op=gqa", f"op_name={BUILT_IN}", "run_baseline=no",
                            "gpu=H200")
    else:
        done = cookiecutter(out, f"pytorch_logic={CORPUS}:{name}", "run_baseline=no", "gpu=H200")
    (out / f"{name}.bake.log").write_text(done.stdout + done.stderr)
    return {"name": name, "baked": (out / name / "kernel.py").is_file(),
            "lowered": (out / name / "lowered.py").is_file(), "exit": done.returncode}


def check(out: Path, name: str) -> dict:
    ws = out / name
    done = subprocess.run([sys.executable, "test_kernel.py", "--no-timing"], cwd=ws, capture_output=True, text=True,
                          timeout=1800)
    try:
        res = json.loads((ws / "results" / "results.json").read_text())
    except (OSError, json.JSONDecodeError) as err:
        return {"name": name, "exit": done.returncode, "error": str(err), "tail": (done.stdout + done.stderr)[-1500:]}
    return {"name": name, "exit": done.returncode, "all_passed": res.get("all_passed"),
            "passed": sum(c["status"] == "PASS" for c in res["cases"]), "cases": len(res["cases"]),
            "max_rel_err": res.get("max_rel_err"), "device": res.get("device"),
            "failed": [{k: c.get(k) for k in ("name", "status", "rel_err", "error")} for c in res["cases"]
                       if c["status"] != "PASS"]}


def v0(out: Path, name: str) -> dict:
    ws = out / name
    done = subprocess.run([sys.executable, "tools/run_baseline.py"], cwd=ws, capture_output=True, text=True,
                          timeout=1800)
    try:
        res = json.loads((ws / "results" / "results.json").read_text())
        memory = json.loads((ws / "memory" / "v0.json").read_text())
    except (OSError, json.JSONDecodeError) as err:
        return {"name": name, "exit": done.returncode, "error": str(err), "tail": (done.stdout + done.stderr)[-1500:]}
    return {"name": name, "exit": done.returncode, "all_passed": res.get("all_passed"),
            "passed": sum(c["status"] == "PASS" for c in res["cases"]), "cases": len(res["cases"]),
            "max_rel_err": res.get("max_rel_err"), "quality_gate": memory["quality_gate"]["result"],
            "failed": [{k: c.get(k) for k in ("name", "status", "rel_err", "error")} for c in res["cases"]
                       if c["status"] != "PASS"],
            "commit": memory.get("git_commit_hash")}


CHILD = textwrap.dedent("""
    import importlib, json, math, sys
    from pathlib import Path
    import torch
    import torch.nn.functional as F
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    out_dir, name, root = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    sys.path.insert(0, str(out_dir))
    sys.path.insert(0, str(root))
    from tools.lower import attention
    variant, builtin = importlib.import_module(name), importlib.import_module(sys.argv[4])
    tk = importlib.import_module(f"{name}.test_kernel")
    program = variant.OP["lowered"]
    fn = variant.reference.reference
    flex = torch.compile(flex_attention, dynamic=False)
    rows = []
    for B, Hq, Hkv, S, D in json.loads(sys.argv[5]):
        case = {"dims": [B, Hq, Hkv, S, D], "seq_lens": [S] * B}
        inputs = variant.reference.make_inputs(case, torch.bfloat16, "cuda", 0)
        named = dict(zip(variant.OP["inputs"], inputs))
        role = {i["role"]: named[i["name"]] for i in program["inputs"] if i["role"] in ("q", "k", "v", "lens")}
        q, k, v, lens = role["q"], role["k"], role["v"], role["lens"]
        vecs = {i["name"]: (named[i["name"]], i["role"]) for i in program["inputs"] if i["role"] in ("head", "batch")}
        scale = attention.scale_of(program, D)

        def leaves(b, h, kv):
            env = {"b": b, "h": h, "kpos": kv, "length": lens[b]}
            env.update({n: (t[h] if r == "head" else t[b]) for n, (t, r) in vecs.items()})
            return env

        def score_mod(score, b, h, q_idx, kv_idx):
            env = leaves(b, h, kv_idx)
            env["s"] = score
            return attention.evaluate(program, program["score"], env, torch.float32).to(score.dtype)

        def mask_mod(b, h, q_idx, kv_idx):
            env = leaves(b, h, kv_idx)
            keep = kv_idx < env["length"]
            for ref in program["keep"]:
                keep = keep & attention.evaluate(program, ref, dict(env), torch.float32).bool()
            if program["range"]["lo"] is not None:
                keep = keep & (kv_idx >= attention.evaluate(program, program["range"]["lo"], dict(env), torch.float32))
            if program["range"]["hi"] is not None:
                keep = keep & (kv_idx < attention.evaluate(program, program["range"]["hi"], dict(env), torch.float32))
            return keep

        q4, k4, v4 = q.unsqueeze(2), k.transpose(1, 2), v.transpose(1, 2)
        kf, vf = k4.contiguous(), v4.contiguous()  # flex's own layout [B, Hkv, S, D], made before timing
        # a mask that is the same for every head is built once for all heads (H=None): FlexAttention's fast form
        # (per head, Hq copies of it, the same kernel ran 4x slower at B32 S4096 on the H200)
        per_head = any("h" in attention._leaves(program["nodes"], r) or attention._leaves(program["nodes"], r) &
                       {i["name"] for i in program["inputs"] if i["role"] == "head"}
                       for r in [*program["keep"], program["range"]["lo"], program["range"]["hi"]] if r is not None)
        block = create_block_mask(mask_mod, B, Hq if per_head else None, 1, S, device="cuda")
        sink = None
        if program["sink"] is not None:
            b_idx = torch.arange(B, device="cuda")[:, None]
            h_idx = torch.arange(Hq, device="cuda")[None, :]
            env = {"b": b_idx, "h": h_idx, "length": lens[:, None]}
            env.update({n: (t[None, :] if r == "head" else t[:, None]) for n, (t, r) in vecs.items()})
            sink = attention.evaluate(program, program["sink"], env).float().expand(B, Hq)

        def flex_call():
            o, lse = flex(q4, kf, vf, score_mod=score_mod, block_mask=block, scale=scale, enable_gqa=True,
                          return_lse=True)
            if sink is not None:  # the sink joins the denominator: out * l / (l + e^sink) = out * sigmoid(lse - sink)
                return (o.squeeze(2).float() * torch.sigmoid(lse.squeeze(2) - sink)[..., None]).to(q.dtype)
            return o.squeeze(2)

        # SDPA's equivalent: an additive bias when the score is s plus a term, with -inf where the key is dropped
        with torch.no_grad():
            kpos = torch.arange(S, device="cuda")[None, None, :]
            env = {"b": torch.arange(B, device="cuda")[:, None, None], "h": torch.arange(Hq, device="cuda")[None, :, None],
                   "kpos": kpos, "length": lens[:, None, None]}
            env.update({n: (t[None, :, None] if r == "head" else t[:, None, None]) for n, (t, r) in vecs.items()})
            one = attention.evaluate(program, program["score"], {**env, "s": torch.ones((), device="cuda", dtype=torch.float64)})
            zero = attention.evaluate(program, program["score"], {**env, "s": torch.zeros((), device="cuda", dtype=torch.float64)})
            additive = program["sink"] is None and bool(torch.allclose((one - zero).double(), torch.ones((), device="cuda", dtype=torch.float64)))
            keep = mask_mod(env["b"], env["h"], None, kpos)
            bias = None
            if additive:
                bias = torch.where(keep, zero.double(), float("-inf")).expand(B, Hq, S).unsqueeze(2).to(q.dtype).contiguous()
        sides = {"variant": lambda: variant.run(*inputs), "builtin": lambda: builtin.run(q, k, v, lens),
                 "flex": flex_call, "eager": lambda: fn(*inputs)}
        if bias is not None:
            sides["sdpa"] = lambda: F.scaled_dot_product_attention(q4, k4, v4, attn_mask=bias, scale=scale,
                                                                   enable_gqa=True).squeeze(2)
        want = variant.run(*inputs).float()
        row = {"name": name, "shape": f"B{B} Hq{Hq} Hkv{Hkv} S{S} D{D}"}
        for side, call in sides.items():
            try:
                got = call()
                err = ((got.float() - want).norm() / want.norm()).item() if side != "builtin" else None
                t = tk.bench(call)
                c = tk.call_latency(call, t["median_us"])
                row[side] = {"gpu_us": t["median_us"], "call_us": c["call_us"], "host_us": c["host_us"],
                             "rel_diff": err}
            except Exception as exc:  # a peer that cannot run this variant is reported, not hidden
                row[side] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
        rows.append(row)
    print(json.dumps(rows))
""")


def perf(out: Path, name: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(out), name, str(ROOT), BUILT_IN, json.dumps(SHAPES)],
                          capture_output=True, text=True, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
    if not lines:
        return [{"name": name, "error": (done.stderr or done.stdout)[-2000:]}]
    return json.loads(lines[-1])


def table(rows: list[dict]) -> str:
    head = ("| variant | shape | variant GPU µs | call µs | built-in µs | vs built-in | flex µs | vs flex | sdpa µs | "
            "vs sdpa | eager µs |\n|---" + "|---" * 10 + "|")
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | error: {r['error'][-200:]} |")
            continue
        mine = r["variant"]["gpu_us"] if "gpu_us" in r.get("variant", {}) else None

        def t(side):
            return f"{r[side]['gpu_us']:.1f}" if "gpu_us" in r.get(side, {}) else r.get(side, {}).get("error", "-")[:40]

        def ratio(side):
            return f"{r[side]['gpu_us'] / mine:.2f}x" if mine and "gpu_us" in r.get(side, {}) else "-"

        call = f"{r['variant']['call_us']:.1f}" if mine else "-"
        lines.append(f"| {r['name']} | {r['shape']} | "
                     f"{t('variant')} | {call} | {t('builtin')} | {ratio('builtin')} | {t('flex')} | {ratio('flex')} | "
                     f"{t('sdpa')} | {ratio('sdpa')} | {t('eager')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("step", choices=["bake", "check", "v0", "perf"])
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.names or LOWERS
    if args.step == "bake":
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda n: bake(args.out, n), [BUILT_IN, *names]))
    elif args.step in ("check", "v0"):
        step = check if args.step == "check" else v0
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda n: step(args.out, n), names))
    else:
        rows = [row for n in names for row in perf(args.out, n)]
    (args.out / f"{args.step}.json").write_text(json.dumps(rows, indent=1))
    print(table(rows) if args.step == "perf" else "\n".join(json.dumps(r)[:400] for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
