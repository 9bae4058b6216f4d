"""Decode-attention variants on the H200 ("Your attention"): every lowered variant of the corpus through the template's
V0 flow, then timed against our built-in kernel, FlexAttention and SDPA, in one process with one timer.

    python3 benchmarks/bench_decode_variants.py --out /tmp/dv bake              # one workspace per variant + built-in
    python3 benchmarks/bench_decode_variants.py --out /tmp/dv check --jobs 6    # every case, correctness only
    python3 benchmarks/bench_decode_variants.py --out /tmp/dv check --case C   # only case C (repeatable)
    python3 benchmarks/bench_decode_variants.py --out /tmp/dv v0 --jobs 4       # run_baseline.py in each (all cases)
    python3 benchmarks/bench_decode_variants.py --out /tmp/dv perf [NAME ...]   # the timed comparison, one child each
    python3 benchmarks/bench_decode_variants.py --out /tmp/dv --jobs 8 perf --warm   # compiles first, 8 at once

- bake: `cookiecutter --no-input pytorch_logic=tests/lowering_corpus/decode_variants.py:NAME run_baseline=no` per
  lowered variant (pattern=auto), with decode_attention's default cases (representative and boundary, mixed
  lengths); and the built-in `gqa` workspace;
- check: each workspace's own `python test_kernel.py --no-timing` (every representative and boundary case, variable
  lengths), several at once (correctness only, so sharing the GPU changes nothing);
- v0: each workspace's `python tools/run_baseline.py` (every case, the report, memory/v0.json, the V0 commit); with
  --jobs > 1 they share the GPU, so its timings are not comparisons (perf's are);
- perf: one child per variant; in it, at B32 Hq32 Hkv8 S4096 D128 and B1 Hq32 Hkv8 S32768 D128 (every sequence
  full), on the same inputs, with two GPU timers and the call time:
    events     the harness's test_kernel.bench: CUDA events, the L2 flushed (a 256 MiB zero_()) before each launch,
               median. The flush leaves the L2 full of dirty lines, so the timed kernel also pays their write-back
               (~10 µs on the H200, the same for every side: it compresses ratios of short kernels towards 1);
    kernel     torch.profiler's kernel time, mean of 20 calls cycling through input sets (enough that their K/V
               bytes read, the window's for a window variant, reach 256 MiB: no call finds its K/V in the L2);
    call       the harness's call_latency: back-to-back calls with no sync, host included (host_us: submit time).
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


def check(out: Path, name: str, cases: tuple[str, ...] | list[str] = ()) -> dict:
    ws = out / name
    done = subprocess.run([sys.executable, "test_kernel.py", "--no-timing", *(f"--case={c}" for c in cases)],
                          cwd=ws, capture_output=True, text=True, timeout=1800)
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
    import torch._dynamo
    import torch.nn.functional as F
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    out_dir, names, root = Path(sys.argv[1]), json.loads(sys.argv[2]), Path(sys.argv[3])
    sys.path.insert(0, str(out_dir))
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root / "benchmarks"))
    from tools.lower import attention
    from sweep_common import copies, gpu_us
    builtin = importlib.import_module(sys.argv[4])
    for limit in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit"):  # one graph per variant
        if hasattr(torch._dynamo.config, limit):                                          # and shape, 38 in all
            setattr(torch._dynamo.config, limit, 1024)
    flex = torch.compile(flex_attention, dynamic=False)
    warm_only = sys.argv[6] == "warm"


    # one variant: its workspace package, its program, both shapes; every side timed in turn
    def run_variant(name):
        variant = importlib.import_module(name)
        tk = importlib.import_module(f"{name}.test_kernel")
        program = variant.OP["lowered"]
        fn = variant.reference.reference
        ROLES = {i["name"]: i["role"] for i in program["inputs"]}


        def by_role(inputs):
            named = dict(zip(variant.OP["inputs"], inputs))
            role = {ROLES[n]: t for n, t in named.items() if ROLES.get(n) in ("q", "k", "v", "lens")}
            vecs = {n: (t, ROLES[n]) for n, t in named.items() if ROLES.get(n) in ("head", "batch")}
            return role["q"], role["k"], role["v"], role["lens"], vecs


        # what depends on the lengths and the vectors, made once from the first input set (every set shares them, so
        # flex's score_mod and block mask, and SDPA's bias, are one object each: one compile)
        def peers_of(inputs, B, Hq, S):
            q, k, v, lens, vecs = by_role(inputs)

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
            # SDPA's equivalent: an additive bias when the score is s plus a term, with -inf where the key is dropped
            with torch.no_grad():
                kpos = torch.arange(S, device="cuda")[None, None, :]
                env = {"b": torch.arange(B, device="cuda")[:, None, None], "h": torch.arange(Hq, device="cuda")[None, :, None],
                       "kpos": kpos, "length": lens[:, None, None]}
                env.update({n: (t[None, :, None] if r == "head" else t[:, None, None]) for n, (t, r) in vecs.items()})
                f64 = dict(device="cuda", dtype=torch.float64)
                one = attention.evaluate(program, program["score"], {**env, "s": torch.ones((), **f64)})
                zero = attention.evaluate(program, program["score"], {**env, "s": torch.zeros((), **f64)})
                additive = program["sink"] is None and bool(torch.allclose((one - zero).double(), torch.ones((), **f64)))
                keep = mask_mod(env["b"], env["h"], None, kpos)
                bias = None
                if additive:
                    bias = torch.where(keep, zero.double(), float("-inf")).expand(B, Hq, S).unsqueeze(2).to(q.dtype).contiguous()
            return score_mod, block, sink, bias


        # the sides on one input set: the variant, the built-in, flex, eager, and SDPA where an additive bias exists
        def sides_of(inputs, peers, scale):
            score_mod, block, sink, bias = peers
            q, k, v, lens, _ = by_role(inputs)
            q4, k4, v4 = q.unsqueeze(2), k.transpose(1, 2), v.transpose(1, 2)
            kf, vf = k4.contiguous(), v4.contiguous()  # flex's own layout [B, Hkv, S, D], made before timing

            def flex_call():
                o, lse = flex(q4, kf, vf, score_mod=score_mod, block_mask=block, scale=scale, enable_gqa=True,
                              return_lse=True)
                if sink is not None:  # the sink joins the denominator: out * l / (l + e^sink) = out * sigmoid(lse - sink)
                    return (o.squeeze(2).float() * torch.sigmoid(lse.squeeze(2) - sink)[..., None]).to(q.dtype)
                return o.squeeze(2)

            sides = {"variant": lambda: variant.run(*inputs), "builtin": lambda: builtin.run(q, k, v, lens),
                     "flex": flex_call, "eager": lambda: fn(*inputs)}
            if bias is not None:
                sides["sdpa"] = lambda: F.scaled_dot_product_attention(q4, k4, v4, attn_mask=bias, scale=scale,
                                                                       enable_gqa=True).squeeze(2)
            return sides


        rows = []
        for B, Hq, Hkv, S, D in json.loads(sys.argv[5]):
            case = {"dims": [B, Hq, Hkv, S, D], "seq_lens": [S] * B}
            scale = attention.scale_of(program, D)
            read = 2 * B * Hkv * min(S, program.get("window") or S) * D * 2  # K/V bytes read: the window's, or the cache's
            first = variant.reference.make_inputs(case, torch.bfloat16, "cuda", 0)
            peers = peers_of(first, B, Hq, S)
            sets = [first]
            for seed in range(1, copies(read, 256 << 20, 32)):  # more q, K, V; the lengths and vectors of the first set
                more = variant.reference.make_inputs(case, torch.bfloat16, "cuda", seed)
                sets.append([m if ROLES.get(n) in ("q", "k", "v") else f
                             for n, m, f in zip(variant.OP["inputs"], more, first)])
            sides = [sides_of(x, peers, scale) for x in sets]
            if warm_only:  # compile every side once (torch.compile's caches are on disk: the timed child finds them)
                for call in sides[0].values():
                    call()
                continue
            want = variant.run(*first).float()
            row = {"name": name, "shape": f"B{B} Hq{Hq} Hkv{Hkv} S{S} D{D}", "input_sets": len(sets)}
            for side, call in sides[0].items():
                try:
                    got = call()
                    err = ((got.float() - want).norm() / want.norm()).item() if side != "builtin" else None
                    t = tk.bench(call)
                    c = tk.call_latency(call, t["median_us"])
                    # kernel time (torch.profiler) over input sets rotated so that no call finds its K/V in the L2:
                    # no flush kernel before each call, so nothing is charged for the flush's dirty lines
                    kt = gpu_us([s[side] for s in sides], 20)
                    row[side] = {"gpu_us": t["median_us"], "kernel_us": kt, "call_us": c["call_us"],
                                 "host_us": c["host_us"], "rel_diff": err}
                except Exception as exc:  # a peer that cannot run this variant is reported, not hidden
                    row[side] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
                print(json.dumps({"progress": name, "shape": row["shape"], side: row[side]}), flush=True)
            del sets, sides
            torch.cuda.empty_cache()
            rows.append(row)
        return rows


    for name in names:  # one process for every variant: the built-in and flex compile once
        try:
            done = run_variant(name)
        except Exception as exc:  # a variant that fails is reported and the others go on
            done = [{"name": name, "error": f"{type(exc).__name__}: {exc}"[:1500]}]
        for row in done:
            print("ROW " + json.dumps(row), flush=True)
            if not warm_only:  # kept as they come, should the run be cut short
                with open(out_dir / "perf_rows.jsonl", "a") as f:
                    f.write(json.dumps(row) + "\\n")
        torch.cuda.empty_cache()
""")


def perf(out: Path, names: list[str], mode: str = "time") -> list[dict]:
    """One child for these variants, timed one after the other. mode "warm": compile every side only (several children
    at once are fine then: nothing is timed). A variant the child did not report gets its stderr's tail."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(out), json.dumps(names), str(ROOT), BUILT_IN,
                           json.dumps(SHAPES), mode], capture_output=True, text=True, timeout=3600)
    rows = [json.loads(line[4:]) for line in done.stdout.splitlines() if line.startswith("ROW ")]
    missing = [n for n in names if not any(r["name"] == n for r in rows)]
    return rows + [{"name": n, "error": (done.stderr or done.stdout)[-2000:]} for n in missing]


def table(rows: list[dict]) -> str:
    """GPU time per side by both timers: events (cold L2 by a flush) / kernel time (profiler, rotated inputs); the
    ratios are the peer's time over the variant's by the same timer (> 1: ours is faster)."""
    sides = ("builtin", "flex", "sdpa")
    head = ("| variant | shape | variant µs (events / kernel) | call µs | host µs | "
            + " | ".join(f"{s} µs | vs {s}" for s in sides) + " | eager µs |\n|---" + "|---" * (6 + 2 * len(sides)) + "|")
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | error: {r['error'][-200:]} |")
            continue
        mine = r.get("variant", {})

        def t(side):
            x = r.get(side, {})
            return f"{x['gpu_us']:.1f} / {x['kernel_us']:.1f}" if "gpu_us" in x else x.get("error", "-")[:40]

        def ratio(side):
            x = r.get(side, {})
            if "gpu_us" not in mine or "gpu_us" not in x:
                return "-"
            return f"{x['gpu_us'] / mine['gpu_us']:.2f}x / {x['kernel_us'] / mine['kernel_us']:.2f}x"

        call = f"{mine['call_us']:.1f} | {mine['host_us']:.1f}" if "call_us" in mine else "- | -"
        lines.append(f"| {r['name']} | {r['shape']} | {t('variant')} | {call} | "
                     + " | ".join(f"{t(s)} | {ratio(s)}" for s in sides) + f" | {t('eager')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("step", choices=["bake", "check", "v0", "perf"])
    parser.add_argument("--case", action="append", default=[], help="check: only these cases (repeatable)")
    parser.add_argument("--warm", action="store_true", help="perf: compile every side first, --jobs at once")
    parser.add_argument("names", nargs="*")
    args = parser.parse_intermixed_args(argv)  # options may follow the step: "perf --warm NAME ..."
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.names or LOWERS
    if args.step == "bake":
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda n: bake(args.out, n), [BUILT_IN, *names]))
    elif args.step in ("check", "v0"):
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda n: check(args.out, n, args.case) if args.step == "check" else v0(args.out, n),
                                 names))
    else:
        if args.warm:  # torch.compile of every side, several variants at once, before the one-at-a-time timing
            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                print("\n".join(json.dumps(r)[:300] for n in pool.map(lambda n: perf(args.out, [n], "warm"), names)
                                 for r in n))
        rows = perf(args.out, names)
    (args.out / f"{args.step}.json").write_text(json.dumps(rows, indent=1))
    print(table(rows) if args.step == "perf" else "\n".join(json.dumps(r)[:400] for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
