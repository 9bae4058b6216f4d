"""Regime sweep of the CuTe DSL decode-attention cell against torch SDPA on one H200: where it wins, where it loses.

    python3 benchmarks/sweep_decode.py --out benchmarks/results/DATE-h200-decode-sweep      # on the H200, < 6 min
    python3 benchmarks/sweep_decode.py --out ... --set MMA_MIN_GROUP=8 --set WAVE_US=0.5    # A/B a kernel knob
    python3 benchmarks/sweep_decode.py --out ... --render                                  # table + PNGs again
    python3 benchmarks/sweep_decode.py --out ... --shape 32x16x1x4096x128 --set MMA_STAGES=3  # chosen shapes only
    python3 benchmarks/sweep_decode.py --out ... --list                                    # the points, no GPU

Grid: B in {1, 4, 32, 128} x S in {1024, 8192, 32768} x G in {1, 4, 8, 16} x D in {64, 128}, Hkv = 8 and
Hq = 8 G (G = Hq / Hkv, the GQA group; eight KV heads is the common serving shape, and keeping Hkv fixed keeps
the KV bytes of a point independent of G, so a row of the heatmap isolates the cost of the group). A point is
skipped when its KV cache exceeds 60 GB or 2^31 elements (the kernel's int32 indexing refuses it).

Method, per point: one workspace baked through this template (tools.scaffold.workspace for the H200, bf16),
its kernel.py loaded by bench_decode_attention.load_kernel, inputs from the workspace's reference.make_inputs
(full lengths) and the peer from reference.baseline (torch SDPA, enable_gqa=True, on the cache layout): the
inputs and the peer that the workspace's own harness times. L2: enough input copies are rotated that a
call never finds its K/V in the 50 MB L2 (>= 256 MB of KV per round, at most 32 copies), so no flush
kernel pollutes the profile. GPU time (sweep_common.gpu_us): torch.profiler's CUDA kernel time of N calls, summed
over every kernel a call launches (ours: one; SDPA: its split and combine kernels), divided by N. ratio = SDPA / ours
(> 1: ours is faster). Agreement: ours vs SDPA, relative Frobenius error, must stay < 1e-2.
The floor column is the KV read at the H200's cited 4.8 TB/s. Writes <out>.json, one heatmap PNG per D
(ratio per (B, S) row and G column; red below 0.8, orange below 0.9, annotated) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from heatmap import heatmap  # noqa: E402
from sweep_common import add_modes, bake, copies, gpu_us, read_rows, write_rows  # noqa: E402
from sweep_common import knobs as sweep_knobs  # noqa: E402

BATCHES = (1, 4, 32, 128)
LENGTHS = (1024, 8192, 32768)
GROUPS = (1, 4, 8, 16)
HEAD_DIMS = (64, 128)
HKV = 8
MAX_KV_BYTES = 60e9
ROTATE_BYTES = 256 << 20   # KV bytes per round of rotated copies (5x the H200's 50 MB L2)
MAX_COPIES = 32
CALLS = 10                 # profiled calls per side and point
HBM_TBPS = 4.8             # the H200's cited HBM bandwidth, for the floor column


def point(b: int, s: int, g: int, d: int, hkv: int = HKV) -> dict:
    """One (B, S, G, D) point with Hkv KV heads, with the reason when it is skipped."""
    kv = 2 * b * s * hkv * d * 2
    skip = ("KV cache > 60 GB" if kv > MAX_KV_BYTES else
            "KV cache >= 2^31 elements (int32 indexing)" if b * s * hkv * d >= 2**31 else None)
    return {"B": b, "S": s, "G": g, "D": d, "Hq": hkv * g, "Hkv": hkv, "kv_bytes": kv,
            "floor_us": kv / (HBM_TBPS * 1e6), "skip": skip}


def points() -> list[dict]:
    """Every (B, S, G, D) of the grid."""
    return [point(b, s, g, d) for d in HEAD_DIMS for b in BATCHES for s in LENGTHS for g in GROUPS]


def shape_point(text: str) -> dict:
    """--shape BxHqxHkvxSxD -> one point (any Hkv, so MQA's Hkv = 1 too)."""
    b, hq, hkv, s, d = (int(v) for v in text.lower().split("x"))
    return point(b, s, hq // hkv, d, hkv)


def measure(kernel, reference, registry, pt: dict) -> dict:
    import torch

    shape = f"{pt['B']}x{pt['Hq']}x{pt['Hkv']}x{pt['S']}x{pt['D']}"
    (case,) = registry.pattern("decode_attention").cases(shape, "representative", "bf16")
    count = copies(pt["kv_bytes"], ROTATE_BYTES, MAX_COPIES)
    sets = [reference.make_inputs(case, torch.bfloat16, "cuda", seed) for seed in range(count)]
    outs = [torch.empty_like(x[0]) for x in sets]
    ours = [lambda x=x, o=o: kernel.run(*x, out=o) for x, o in zip(sets, outs)]
    peer = [lambda x=x: reference.baseline(*x) for x in sets]
    t_ours = gpu_us(ours, CALLS)  # after one warm-up call per copy: compile, plan and scratch, SDPA's mask cache
    t_peer = gpu_us(peer, CALLS)
    ref = reference.baseline(*sets[0]).float()
    err = ((outs[0].float() - ref).norm() / ref.norm()).item()
    d = kernel.describe(case)
    del sets, outs
    torch.cuda.empty_cache()
    return {"ours_us": t_ours, "sdpa_us": t_peer, "ratio": t_peer / t_ours, "rel_err_vs_sdpa": err,
            "agree": err < 1e-2, "copies": count, "path": d["path"].split(" (")[0], "splits": d["splits"],
            "grid_blocks": d["grid_blocks"], "waves": d["waves"]}


def heatmaps(rows: list[dict], out: Path) -> list[Path]:
    """One PNG per D: rows (B, S), columns G, cell colour the ratio (red < 0.8, orange < 0.9, green above)."""
    paths = []
    for d in HEAD_DIMS:
        keys = [(b, s) for b in BATCHES for s in LENGTHS]
        grid = [[next((r.get("ratio") for r in rows if (r["B"], r["S"], r["G"], r["D"], r["Hkv"]) == (b, s, g, d, HKV)),
                      None)
                 for g in GROUPS] for b, s in keys]
        paths.append(heatmap(grid, [f"G={g}" for g in GROUPS], [f"B{b} S{s}" for b, s in keys],
                             f"decode attention D={d}, Hkv={HKV}\nSDPA GPU time / ours (> 1: ours faster)",
                             out.with_name(f"{out.name}-d{d}.png"), bounds=(0.8, 0.9, 1.0), size=(6, 8)))
    return paths


def table(rows: list[dict]) -> str:
    lines = ["| D | B | S | G | path | splits | CTAs | waves | floor us | ours us | SDPA us | ratio | agree |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        head = f"| {r['D']} | {r['B']} | {r['S']} | {r['G']} |"
        if r.get("skip") or "error" in r:
            lines.append(f"{head} {r.get('skip') or r['error']} | | | | | | | | |")
            continue
        lines.append(f"{head} {r['path']} | {r['splits']} | {r['grid_blocks']} | {r['waves']} | {r['floor_us']:.1f} | "
                     f"{r['ours_us']:.1f} | {r['sdpa_us']:.1f} | {r['ratio']:.2f} | {'yes' if r['agree'] else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="path stem: writes <out>.json and <out>-d<D>.png")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="override a kernel.py constant (a Python literal) before the sweep")
    add_modes(p)
    p.add_argument("--shape", action="append", default=[], metavar="BxHqxHkvxSxD",
                   help="measure these shapes instead of the grid (repeatable)")
    args = p.parse_args(argv)
    out = args.out
    todo = [shape_point(t) for t in args.shape] or points()
    if args.list:
        print("\n".join(f"B{r['B']} S{r['S']} G{r['G']} D{r['D']}: {r['skip'] or 'measure'}" for r in todo))
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.render:
        rows = read_rows(out.with_suffix(".json"))[1]
    else:
        from bench_decode_attention import load_kernel, set_knobs
        from tools import registry

        knobs = sweep_knobs(args)
        t0 = time.time()
        rows = []
        with tempfile.TemporaryDirectory(prefix="kb-decode-sweep-") as tmp:
            kernel = load_kernel(bake(Path(tmp), "decode_attention"))
            import reference  # the workspace's, importable now that load_kernel put the workspace on sys.path

            set_knobs(kernel, knobs)
            for pt in todo:
                row = dict(pt)
                if not pt["skip"]:
                    try:
                        row.update(measure(kernel, reference, registry, pt))
                    except Exception as err:  # a failing point is recorded, the sweep goes on
                        row["error"] = f"{type(err).__name__}: {err}"[:300]
                rows.append(row)
                print(json.dumps(row), flush=True)
        write_rows(out.with_suffix(".json"), {"knobs": knobs, "seconds": time.time() - t0}, rows)
    print(table(rows))
    for path in heatmaps(rows, out):
        print("wrote", path)
    measured = [r for r in rows if "ratio" in r]
    return 0 if measured and all(r["agree"] for r in measured) else 1


if __name__ == "__main__":
    sys.exit(main())
