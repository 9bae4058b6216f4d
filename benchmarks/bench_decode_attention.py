"""H200 check and benchmark of a decode-attention (gqa) kernel dir against torch SDPA, in one process.

    python benchmarks/bench_decode_attention.py --kernel-dir <dir with kernel.py + op.json> --out /tmp/da
    python benchmarks/bench_decode_attention.py --kernel-dir <dir> --out /tmp/da --sweep      # + knob sweep first
    python benchmarks/bench_decode_attention.py --kernel-dir <dir> --out /tmp/da --sweep --pick-best  # then use best
    python benchmarks/bench_decode_attention.py --kernel-dir <dir> --out /tmp/da --sweep-mma --pick-best  # G >= 8 knobs
    python benchmarks/bench_decode_attention.py --out /tmp/da --summarize                     # re-render, no GPU

Correctness: every case, in bf16 and fp16, draws fresh randn inputs, poisons `out` with NaN, and compares
against a float64 masked-softmax reference: rel_err = ||out - ref|| / ||ref|| < 1e-2. Cache positions past
seq_len hold random data; the `huge` and `nan` variants fill them with 6e4 or NaN to prove they are masked
(and, for NaN, never read). Timing: CUDA events around each launch, L2 flushed before each, median after
warm-up (the harness's bench()); kernel, torch SDPA and a 1 GiB device copy are timed by the same function.
SDPA gets q4 = q[B, Hq, 1, D] and k4/v4 = the cache as [B, Hkv, S, D] (contiguous copies made before timing;
the strided transpose view is timed too), enable_gqa=True, and a boolean key mask only when lengths differ.
Bytes = K and V rows actually read for the real lengths + q + out. Writes <out>/summary.md and summary.json.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import sys
import traceback
from pathlib import Path

from harness import bench, copy_ceiling
from sweep_common import apply_knobs

TOL = 1e-2
# (name, B, Hq, Hkv, S, D, lengths, timed, fills): lengths "full", "one", or a list / ("random", seed)
CASES = [
    ("B32_Hq32_Hkv8_S4096_D128", 32, 32, 8, 4096, 128, "full", True, ("random",)),
    ("B8_Hq64_Hkv8_S16384_D128", 8, 64, 8, 16384, 128, "full", True, ("random",)),
    ("B1_Hq32_Hkv32_S32768_D128", 1, 32, 32, 32768, 128, "full", True, ("random",)),
    ("B16_Hq32_Hkv8_S8192_D64", 16, 32, 8, 8192, 64, "full", True, ("random",)),
    ("MQA_B8_Hq32_Hkv1_S8192_D128", 8, 32, 1, 8192, 128, "full", True, ("random",)),
    ("mixed_B16_Hq32_Hkv8_S8192_D128", 16, 32, 8, 8192, 128, ("random", 7), True, ("random", "huge", "nan")),
    ("seqlen1_B4_Hq32_Hkv8_S1024_D128", 4, 32, 8, 1024, 128, "one", False, ("random", "huge", "nan")),
    ("odd_lens_B4_Hq32_Hkv8_S4096_D128", 4, 32, 8, 4096, 128, [4093, 2029, 509, 3001], False, ("random", "huge", "nan")),
    ("MQA_mixed_B4_Hq32_Hkv1_S3000_D128", 4, 32, 1, 3000, 128, [2999, 1, 1500, 3000], False, ("random", "huge", "nan")),
    ("G8_D64_B3_Hq16_Hkv2_S777_D64", 3, 16, 2, 777, 64, [777, 5, 300], False, ("random", "huge", "nan")),
    ("G12_B2_Hq96_Hkv8_S1000_D128", 2, 96, 8, 1000, 128, [1000, 333], False, ("random",)),
    ("MHA_B3_Hq12_Hkv12_S777_D64", 3, 12, 12, 777, 64, [777, 5, 300], False, ("random", "huge")),
    ("G6_B2_Hq48_Hkv8_S2000_D128", 2, 48, 8, 2000, 128, [2000, 1234], False, ("random",)),
    ("D64_G1_B2_Hq8_Hkv8_S1000_D64", 2, 8, 8, 1000, 64, [1000, 999], False, ("random",)),
    ("D256_B4_Hq16_Hkv2_S4096_D256", 4, 16, 2, 4096, 256, [4096, 3000, 17, 1], False, ("random", "huge")),
]
HEADLINE = "B32_Hq32_Hkv8_S4096_D128"


def load_kernel(kernel_dir: Path):
    sys.path.insert(0, str(kernel_dir))  # kernel.py imports host.py and cutedsl_runtime.py beside it
    sys.path.insert(0, str(kernel_dir))
    spec = importlib.util.spec_from_file_location("kernel", kernel_dir / "kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_gbps(nbytes: int = 1 << 30) -> float:
    """The achievable bandwidth here: the harness's device-copy ceiling, same timer as everything else."""
    return copy_ceiling(nbytes)["gbps"]


def set_knobs(kernel, knobs: dict) -> None:
    """Set kernel.py's tuning constants (sweep_common.apply_knobs) and drop its compiled kernels and prepared
    launches (the plan is part of them), so the next run re-plans and recompiles."""
    apply_knobs(kernel, knobs)
    kernel._compiled.clear()
    kernel._launches.clear()


def lengths(spec, B: int, S: int) -> list[int]:
    import random

    if spec == "full":
        return [S] * B
    if spec == "one":
        return [1] * B
    if isinstance(spec, tuple):
        rng = random.Random(spec[1])
        lens = [rng.randint(1, S) for _ in range(B)]
        lens[0], lens[-1] = 1, S
        return lens
    return list(spec)


def make_inputs(B, Hq, Hkv, S, D, lens, dtype, fill, seed):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(B, Hq, D, dtype=dtype, device="cuda", generator=gen)
    k = torch.randn(B, S, Hkv, D, dtype=dtype, device="cuda", generator=gen)
    v = torch.randn(B, S, Hkv, D, dtype=dtype, device="cuda", generator=gen)
    if fill != "random":
        value = 6.0e4 if fill == "huge" else float("nan")
        for b, n in enumerate(lens):
            k[b, n:] = value
            v[b, n:] = value
    return q, k, v, torch.tensor(lens, dtype=torch.int32, device="cuda")


def reference(q, k, v, lens, scale):
    """float64 masked softmax(q k^T * scale) v, one sequence at a time over its first lens[b] keys."""
    import torch

    B, Hq, D = q.shape
    Hkv = k.shape[2]
    out = torch.empty(B, Hq, D, dtype=torch.float64, device=q.device)
    for b, n in enumerate(lens):
        qb = q[b].double().view(Hkv, Hq // Hkv, D)
        kb, vb = k[b, :n].double(), v[b, :n].double()
        p = torch.softmax(torch.einsum("hgd,lhd->hgl", qb, kb) * scale, dim=-1)
        out[b] = torch.einsum("hgl,lhd->hgd", p, vb).reshape(Hq, D)
    return out


def rel_err(out, ref) -> float:
    diff = (out.double() - ref).norm().item()
    denom = ref.norm().item()
    return float("nan") if math.isnan(diff) else diff / denom


def check(kernel, case, dtype, fill, seed) -> dict:
    import torch

    name, B, Hq, Hkv, S, D, spec, _, _ = case
    lens = lengths(spec, B, S)
    q, k, v, sl = make_inputs(B, Hq, Hkv, S, D, lens, dtype, fill, seed)
    out = torch.full_like(q, float("nan"))
    kernel.run(q, k, v, sl, out=out)
    torch.cuda.synchronize()
    scale = kernel._softmax_scale(D)
    err = rel_err(out, reference(q, k, v, lens, scale))
    ok = not math.isnan(err) and err < TOL
    return {"case": name, "dtype": str(dtype).removeprefix("torch."), "fill": fill, "rel_err": err,
            "nan_out": int(torch.isnan(out).sum()), "status": "PASS" if ok else "FAIL"}


def time_case(kernel, case, dtype, seed, gbps_copy) -> dict:
    import torch
    import torch.nn.functional as F

    name, B, Hq, Hkv, S, D, spec, _, _ = case
    lens = lengths(spec, B, S)
    q, k, v, sl = make_inputs(B, Hq, Hkv, S, D, lens, dtype, "random", seed)
    out = torch.empty_like(q)
    scale = kernel._softmax_scale(D)
    q4 = q.view(B, Hq, 1, D)
    k4c, v4c = k.transpose(1, 2).contiguous(), v.transpose(1, 2).contiguous()
    k4v, v4v = k.transpose(1, 2), v.transpose(1, 2)
    mask = None
    if any(n != S for n in lens):
        mask = (torch.arange(S, device="cuda")[None, :] < sl[:, None]).view(B, 1, 1, S)

    def sdpa(kk, vv):
        return F.scaled_dot_product_attention(q4, kk, vv, attn_mask=mask, scale=scale, enable_gqa=True)

    t_k = bench(lambda: kernel.run(q, k, v, sl, out=out))["median_us"]
    t_c = bench(lambda: sdpa(k4c, v4c))["median_us"]
    t_v = bench(lambda: sdpa(k4v, v4v))["median_us"]
    elt = q.element_size()
    nbytes = sum(lens) * Hkv * D * 2 * elt + 2 * B * Hq * D * elt
    gbps = nbytes / (t_k * 1e-6) / 1e9
    best = min(t_c, t_v)
    p = kernel.plan(B, Hq, Hkv, S, D)
    return {"case": name, "dtype": str(dtype).removeprefix("torch."), "bytes": nbytes, "kernel_us": t_k,
            "gbps": gbps, "pct_copy": 100 * gbps / gbps_copy, "torch_contig_us": t_c, "torch_view_us": t_v,
            "torch_gbps": nbytes / (best * 1e-6) / 1e9, "speedup_vs_torch": best / t_k, "masked_sdpa": mask is not None,
            "splits": p["splits"], "split_size": p["split_size"], "grid": p["grid"], "heads_per_cta": p["heads"],
            "unroll": p["unroll"]}


# Kernel module knobs tried by --sweep on the headline case (bf16); each entry overrides module globals.
SWEEP = [
    {"CHUNKS_FEW_HEADS": 1, "UNROLL_FEW_HEADS": 4, "STAGES": 3, "MMA_MIN_GROUP": 8, "THREADS": 128},
    {"CHUNKS_FEW_HEADS": 1, "UNROLL_FEW_HEADS": 2, "STAGES": 4, "MMA_MIN_GROUP": 8, "THREADS": 128},
    {"CHUNKS_FEW_HEADS": 2, "UNROLL_FEW_HEADS": 2, "STAGES": 3, "MMA_MIN_GROUP": 8, "THREADS": 128},
    {"CHUNKS_FEW_HEADS": 2, "UNROLL_FEW_HEADS": 2, "STAGES": 4, "MMA_MIN_GROUP": 8, "THREADS": 128},
    {"CHUNKS_FEW_HEADS": 2, "UNROLL_FEW_HEADS": 2, "STAGES": 4, "MMA_MIN_GROUP": 8, "THREADS": 128},
    {"CHUNKS_FEW_HEADS": 2, "UNROLL_FEW_HEADS": 1, "STAGES": 5, "MMA_MIN_GROUP": 8, "THREADS": 128},
    {"CHUNKS_FEW_HEADS": 2, "UNROLL_FEW_HEADS": 2, "STAGES": 3, "MMA_MIN_GROUP": 8, "THREADS": 64},
    {"CHUNKS_FEW_HEADS": 2, "UNROLL_FEW_HEADS": 2, "STAGES": 4, "MMA_MIN_GROUP": 8, "THREADS": 64},
]


def sweep(kernel, gbps_copy) -> tuple[list[dict], dict | None]:
    """Headline case, bf16: each SWEEP entry checked and timed with the same timer; returns rows and the fastest."""
    import torch
    import torch.nn.functional as F

    case = next(c for c in CASES if c[0] == HEADLINE)
    _, B, Hq, Hkv, S, D = case[:6]
    q, k, v, sl = make_inputs(B, Hq, Hkv, S, D, [S] * B, torch.bfloat16, "random", 12)
    out = torch.empty_like(q)
    k4, v4 = k.transpose(1, 2).contiguous(), v.transpose(1, 2).contiguous()
    q4 = q.view(B, Hq, 1, D)
    scale = kernel._softmax_scale(D)
    torch_us = bench(lambda: F.scaled_dot_product_attention(q4, k4, v4, scale=scale, enable_gqa=True))["median_us"]
    nbytes = B * S * Hkv * D * 2 * 2 + 2 * B * Hq * D * 2
    rows, best = [], None
    saved = {name: getattr(kernel, name) for name in SWEEP[0]}
    for knobs in SWEEP:
        set_knobs(kernel, knobs)
        row = dict(knobs, torch_us=torch_us)
        try:
            r = check(kernel, case, torch.bfloat16, "random", 11)
            t_k = bench(lambda: kernel.run(q, k, v, sl, out=out))["median_us"]
            p = kernel.plan(B, Hq, Hkv, S, D)
            gbps = nbytes / (t_k * 1e-6) / 1e9
            row.update(rel_err=r["rel_err"], status=r["status"], kernel_us=t_k, gbps=gbps,
                       pct_copy=100 * gbps / gbps_copy, speedup_vs_torch=torch_us / t_k, splits=p["splits"],
                       split_size=p["split_size"])
            if r["status"] == "PASS" and (best is None or t_k < best[1]):
                best = (knobs, t_k)
        except Exception as err:  # a variant that fails is recorded, the sweep goes on
            row["error"] = f"{type(err).__name__}: {err}"[:300]
        rows.append(row)
        print("sweep", row, flush=True)
    set_knobs(kernel, saved)
    return rows, (best[0] if best else None)


# Tensor-core path knobs tried by --sweep-mma on the G >= 8 timed cases (bf16); entry 1 is the file default.
SWEEP_MMA = [
    {"MMA_MAX_HEADS": 32, "MMA_STAGES": 2, "WAVE_US": 1.0, "MMA_MIN_SPLIT_KEYS": 128, "MMA_KEYS": {64: 32, 128: 16}},
    {"MMA_MAX_HEADS": 32, "MMA_STAGES": 3, "WAVE_US": 1.0, "MMA_MIN_SPLIT_KEYS": 128, "MMA_KEYS": {64: 32, 128: 16}},
    {"MMA_MAX_HEADS": 16, "MMA_STAGES": 2, "WAVE_US": 1.0, "MMA_MIN_SPLIT_KEYS": 128, "MMA_KEYS": {64: 32, 128: 16}},
    {"MMA_MAX_HEADS": 32, "MMA_STAGES": 2, "WAVE_US": 0.3, "MMA_MIN_SPLIT_KEYS": 128, "MMA_KEYS": {64: 32, 128: 16}},
    {"MMA_MAX_HEADS": 32, "MMA_STAGES": 2, "WAVE_US": 3.0, "MMA_MIN_SPLIT_KEYS": 256, "MMA_KEYS": {64: 32, 128: 16}},
    {"MMA_MAX_HEADS": 32, "MMA_STAGES": 2, "WAVE_US": 1.0, "MMA_MIN_SPLIT_KEYS": 128, "MMA_KEYS": {64: 16, 128: 16}},
]
MMA_CASES = ("B8_Hq64_Hkv8_S16384_D128", "MQA_B8_Hq32_Hkv1_S8192_D128")


def sweep_mma(kernel) -> tuple[list[dict], dict | None]:
    """G >= 8 timed cases, bf16: each SWEEP_MMA entry checked and timed; the best by geometric-mean speedup."""
    import torch
    import torch.nn.functional as F

    cases = [c for c in CASES if c[0] in MMA_CASES]
    data = []
    for case in cases:
        _, B, Hq, Hkv, S, D = case[:6]
        q, k, v, sl = make_inputs(B, Hq, Hkv, S, D, [S] * B, torch.bfloat16, "random", 13)
        k4, v4 = k.transpose(1, 2).contiguous(), v.transpose(1, 2).contiguous()
        q4 = q.view(B, Hq, 1, D)
        scale = kernel._softmax_scale(D)
        t = bench(lambda: F.scaled_dot_product_attention(q4, k4, v4, scale=scale, enable_gqa=True))["median_us"]
        data.append((case, q, k, v, sl, torch.empty_like(q), t))
    rows, best = [], None
    saved = {name: getattr(kernel, name) for name in SWEEP_MMA[0]}
    for knobs in SWEEP_MMA:
        set_knobs(kernel, knobs)
        row = dict(knobs)
        try:
            logs = []
            for case, q, k, v, sl, out, t_torch in data:
                r = check(kernel, case, torch.bfloat16, "random", 17)
                t_k = bench(lambda: kernel.run(q, k, v, sl, out=out))["median_us"]
                p = kernel.plan(*case[1:6])
                tag = case[0].split("_")[0]
                row.update({f"{tag}_us": t_k, f"{tag}_torch_us": t_torch, f"{tag}_vs_torch": t_torch / t_k,
                            f"{tag}_rel_err": r["rel_err"], f"{tag}_status": r["status"],
                            f"{tag}_splits": f"{p['splits']} x {p['split_size']}"})
                logs.append(math.log(t_torch / t_k) if r["status"] == "PASS" else -1e9)
            row["geo_vs_torch"] = math.exp(sum(logs) / len(logs)) if min(logs) > -1e8 else 0.0
            if row["geo_vs_torch"] > 0 and (best is None or row["geo_vs_torch"] > best[1]):
                best = (knobs, row["geo_vs_torch"])
        except Exception as err:
            row["error"] = f"{type(err).__name__}: {err}"[:300]
        rows.append(row)
        print("sweep_mma", row, flush=True)
    set_knobs(kernel, saved)
    return rows, (best[0] if best else None)


def render(s: dict) -> str:
    md = [f"Device: {s['device']}; torch {s['torch']}; {s['date']}; same-run device copy {s['copy_gbps']:.0f} GB/s", "",
          "Correctness (float64 masked-softmax reference, tolerance 1e-2; `huge`/`nan` = cache past seq_len "
          "filled with 6e4 / NaN):", "", "| case | dtype | fill | rel_err | status |", "|---|---|---|---|---|"]
    md += [f"| {r['case']} | {r['dtype']} | {r['fill']} | {r['rel_err']:.2e} | {r['status']} |" if "rel_err" in r
           else f"| {r['case']} | {r['dtype']} | {r['fill']} | - | FAIL: {r['error']} |" for r in s["checks"]]
    md += ["", "Timing (median, cold L2). torch = faster of SDPA on contiguous [B,Hkv,S,D] copies and on the "
           "transposed view; masked = SDPA given a key mask (mixed lengths).", "",
           "| case | dtype | kernel (us) | GB/s | % of copy | torch contig (us) | torch view (us) | torch GB/s | "
           "kernel vs torch | splits x keys | grid |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in s["timing"]:
        if "error" in r:
            md.append(f"| {r['case']} | {r['dtype']} | FAIL: {r['error']} |")
            continue
        md.append(f"| {r['case']}{' (masked)' if r['masked_sdpa'] else ''} | {r['dtype']} | {r['kernel_us']:.1f} | "
                  f"{r['gbps']:.0f} | {r['pct_copy']:.1f} | {r['torch_contig_us']:.1f} | {r['torch_view_us']:.1f} | "
                  f"{r['torch_gbps']:.0f} | {r['speedup_vs_torch']:.3f}x | {r['splits']} x {r['split_size']} | "
                  f"{r['grid']} |")
    if s.get("sweep"):
        md += ["", f"Sweep on {HEADLINE} bf16 (kernel module knobs; chunks = 128-bit chunks of a key row per thread, "
               "unroll = keys per thread per step; torch SDPA timed in the same sweep):", "",
               "| chunks | unroll | stages | threads | mma from G | splits x keys | kernel (us) | GB/s | "
               "% of copy | torch (us) | vs torch | rel_err |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in s["sweep"]:
            knobs = (f"| {r['CHUNKS_FEW_HEADS']} | {r['UNROLL_FEW_HEADS']} | {r['STAGES']} | {r['THREADS']} | "
                     f"{r.get('MMA_MIN_GROUP', 8)} |")
            md.append(f"{knobs} FAIL: {r['error']} |" if "error" in r else
                      f"{knobs} {r['splits']} x {r['split_size']} | {r['kernel_us']:.1f} | {r['gbps']:.0f} | "
                      f"{r['pct_copy']:.1f} | {r['torch_us']:.1f} | {r['speedup_vs_torch']:.3f}x | "
                      f"{r['rel_err']:.1e} {r['status']} |")
        if s.get("picked"):
            md += ["", f"Checks and timing above ran with the fastest passing sweep entry: {s['picked']}"]
    if s.get("sweep_mma"):
        md += ["", "Sweep of the tensor-core path (G >= 8) on B8 Hq64 Hkv8 S16384 and MQA B8 Hq32 Hkv1 S8192, bf16 "
               "(keys = keys per warp tile, stages = per-warp cp.async slots):", "",
               "| heads/CTA max | keys | stages | wave us | min split | G8 splits | G8 (us) | G8 torch | G8 vs torch | MQA splits | "
               "MQA (us) | MQA torch | MQA vs torch | rel_err G8 / MQA |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in s["sweep_mma"]:
            knobs = (f"| {r.get('MMA_MAX_HEADS', 16)} | {r['MMA_KEYS']} | {r['MMA_STAGES']} | {r.get('WAVE_US', '-')} | "
                     f"{r['MMA_MIN_SPLIT_KEYS']} |")
            md.append(f"{knobs} FAIL: {r['error']} |" if "error" in r else
                      f"{knobs} {r['B8_splits']} | {r['B8_us']:.1f} | {r['B8_torch_us']:.1f} | {r['B8_vs_torch']:.3f}x | "
                      f"{r['MQA_splits']} | {r['MQA_us']:.1f} | {r['MQA_torch_us']:.1f} | {r['MQA_vs_torch']:.3f}x | "
                      f"{r['B8_rel_err']:.1e} {r['B8_status']} / {r['MQA_rel_err']:.1e} {r['MQA_status']} |")
        if s.get("picked_mma"):
            md += ["", f"Checks and timing above ran with the best tensor-core sweep entry: {s['picked_mma']}"]
    return "\n".join(md) + "\n"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--kernel-dir", type=Path, help="folder holding kernel.py and op.json (a workspace or a scratch copy)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sweep", action="store_true", help="time the SWEEP knob settings on the headline case first")
    p.add_argument("--pick-best", action="store_true", help="with --sweep: run checks and timing with the fastest entry")
    p.add_argument("--sweep-mma", action="store_true", help="time the SWEEP_MMA settings on the G >= 8 cases first")
    p.add_argument("--dtype", action="append", choices=["bf16", "fp16"], help="repeatable; default both")
    p.add_argument("--summarize", action="store_true", help="re-render <out>/summary.md from summary.json (no GPU)")
    args = p.parse_args()
    if args.summarize:
        summary = json.loads((args.out / "summary.json").read_text())
    else:
        import torch

        args.out.mkdir(parents=True, exist_ok=True)
        kernel = load_kernel(args.kernel_dir.resolve())
        dtypes = [{"bf16": torch.bfloat16, "fp16": torch.float16}[d] for d in (args.dtype or ["bf16", "fp16"])]
        summary = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "checks": [], "timing": []}
        summary["copy_gbps"] = copy_gbps()
        if args.sweep:  # first, so that --pick-best can run every check and timing below with the winner
            summary["sweep"], best = sweep(kernel, summary["copy_gbps"])
            if args.pick_best and best:
                set_knobs(kernel, best)
                summary["picked"] = best
        if args.sweep_mma:
            summary["sweep_mma"], best = sweep_mma(kernel)
            if args.pick_best and best:
                set_knobs(kernel, best)
                summary["picked_mma"] = best
        seed = 100
        for case in CASES:
            for dtype in dtypes:
                for fill in case[8]:
                    seed += 1
                    try:
                        summary["checks"].append(check(kernel, case, dtype, fill, seed))
                    except Exception as err:
                        summary["checks"].append({"case": case[0], "dtype": str(dtype), "fill": fill,
                                                  "status": "FAIL", "error": f"{type(err).__name__}: {err}"[:300],
                                                  "traceback": traceback.format_exc(limit=3)[-1500:]})
                    print("check", summary["checks"][-1], flush=True)
        for case in (c for c in CASES if c[7]):
            for dtype in dtypes:
                seed += 1
                try:
                    summary["timing"].append(time_case(kernel, case, dtype, seed, summary["copy_gbps"]))
                except Exception as err:
                    summary["timing"].append({"case": case[0], "dtype": str(dtype), "error": f"{type(err).__name__}: {err}"[:300]})
                print("time", summary["timing"][-1], flush=True)
        summary["copy_gbps_end"] = copy_gbps()
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    md = render(summary)
    (args.out / "summary.md").write_text(md)
    print(md)
    return 0 if all(r["status"] == "PASS" for r in summary["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
