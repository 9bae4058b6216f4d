"""A/B of the CuTe DSL decode cell's plan knobs on the H200, one process, torch.profiler kernel time over rotated
input sets (sweep_common.gpu_us): what set MMA_MIN_GROUP = 1 and left the window and B64 plans as they are.

    python3 benchmarks/ab_decode_plan.py --out /tmp/ab regimes   # MHA and B64 built-in shapes: splits, path, stages
    python3 benchmarks/ab_decode_plan.py --out /tmp/ab window    # a 1024-key window variant: forced split counts
    python3 benchmarks/ab_decode_plan.py --out /tmp/ab mha       # G = 1 and 2 over B x S x D: CUDA vs tensor cores
    python3 benchmarks/ab_decode_plan.py --out /tmp/ab b64       # B64 S2048 G4 and neighbours: stages, warps, tiles
    python3 benchmarks/ab_decode_plan.py --out /tmp/ab waves     # grids of 1-2 waves of 2 CTAs/SM: 2 vs 3 stages

Each row: the configuration (kernel.py globals overridden, and/or a forced split count wrapping plan()'s _splits;
"default" in the mha part is the CUDA-core path, MMA_MIN_GROUP = 4 as it was before), its time in us, the plan it
took, and its output's difference from the first configuration of the shape (a forced plan must compute the same
attention). "peer" rows are SDPA on the same inputs (the workspace's reference.baseline).
Writes <out>/<part>.json; results: benchmarks/results/2026-12-04-decode-variants/ (plan_ab.json: regimes and window,
mha_tensor_cores_sweep.json: mha and b64), page: benchmarks/2026-12-04-h200-decode-variants.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
import bench_decode_variants  # noqa: E402
from sweep_common import apply_knobs, bake, copies, gpu_us, load_workspace  # noqa: E402

WINDOW_VARIANT = "sdpa_enable_gqa_window"  # tests/lowering_corpus/decode_variants.py: a 1024-key window


def force_splits(kernel, n: int | None) -> None:
    """Make plan() take n splits (each a whole number of CTA steps), or its own choice again with None."""
    orig = getattr(kernel, "_splits_orig", kernel._splits)
    kernel._splits_orig = orig
    if n is None:
        kernel._splits = orig
    else:
        def forced(items, S, block, slots, min_keys, kv_bytes, part_bytes):
            r = dict(orig(items, S, block, slots, min_keys, kv_bytes, part_bytes))
            size = kernel._split_size(S, n, block)
            return {**r, "splits": -(-S // size), "split_size": size}
        kernel._splits = forced
    kernel._launches.clear()


def measure(rows, tag, kernel, reference, dims, configs, peer=None):
    """Time each (name, knobs, splits) configuration of one shape, every sequence full."""
    import torch

    B, Hq, Hkv, S, D = dims
    case = {"dims": list(dims), "seq_lens": [S] * B}
    sets = [reference.make_inputs(case, torch.bfloat16, "cuda", seed)
            for seed in range(copies(2 * B * S * Hkv * D * 2, 256 << 20, 16))]
    if peer is not None:
        t = gpu_us([lambda x=x: peer(*x) for x in sets], 20)
        rows.append({"tag": tag, "dims": dims, "config": "peer", "us": t})
    first = None
    for name, knobs, splits in configs:
        saved = {k: getattr(kernel, k) for k in knobs}
        try:
            apply_knobs(kernel, knobs)
            force_splits(kernel, splits)
            o = kernel.run(*sets[0]).float()
            first = o if first is None else first
            p = kernel.plan(B, Hq, Hkv, S, D)
            t = gpu_us([lambda x=x: kernel.run(*x) for x in sets], 20)
            rows.append({"tag": tag, "dims": dims, "config": name, "us": t,
                         "diff": ((o - first).norm() / first.norm()).item(), "splits": p["splits"], "mma": p["mma"],
                         "grid": p["grid"]})
        except Exception as e:  # a configuration that fails is recorded, the others go on
            rows.append({"tag": tag, "dims": dims, "config": name, "error": f"{type(e).__name__}: {e}"[:300]})
        finally:
            apply_knobs(kernel, saved)
            force_splits(kernel, None)
        print(json.dumps(rows[-1]), flush=True)
    del sets
    torch.cuda.empty_cache()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("part", choices=["regimes", "window", "mha", "b64", "waves"])
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="kb-ab-decode-"))
    rows: list[dict] = []
    if args.part == "window":
        baked = bench_decode_variants.bake(tmp, WINDOW_VARIANT)  # pytorch_logic=...decode_variants.py:NAME, H200
        if not baked["lowered"]:
            raise SystemExit(f"ab_decode_plan: {WINDOW_VARIANT} did not bake: {tmp / (WINDOW_VARIANT + '.bake.log')}")
        kernel, reference = load_workspace(tmp / WINDOW_VARIANT)
        configs = [("default", {}, None), ("split2", {}, 2), ("split4", {}, 4), ("split8", {}, 8),
                   ("stages3", {"MMA_STAGES": 3}, None), ("split2_stages3", {"MMA_STAGES": 3}, 2),
                   ("split4_stages3", {"MMA_STAGES": 3}, 4)]
        for dims in [(32, 32, 8, 4096, 128), (1, 32, 8, 32768, 128)]:
            measure(rows, "window1024", kernel, reference, dims, configs)
    else:
        kernel, reference = load_workspace(bake(tmp, "decode_attention"))
        peer = reference.baseline
        if args.part == "regimes":
            mha = [("default", {}, None), ("split16", {}, 16), ("split32", {}, 32), ("mma", {"MMA_MIN_GROUP": 1}, None),
                   ("mma_split32", {"MMA_MIN_GROUP": 1}, 32), ("stages6", {"STAGES": 6}, None)]
            for dims in [(1, 32, 32, 32768, 128), (32, 32, 32, 4096, 128), (64, 32, 32, 2048, 128),
                         (1, 32, 32, 8192, 128)]:
                configs = mha if dims[0] == 1 else [c for c in mha if c[2] is None]  # forced splits: B1 only
                measure(rows, "builtin", kernel, reference, dims, configs, peer)
            gqa = [("default", {}, None), ("split2", {}, 2), ("stages3", {"MMA_STAGES": 3}, None),
                   ("split2_stages3", {"MMA_STAGES": 3}, 2)]
            for dims in [(64, 32, 8, 2048, 128), (32, 32, 8, 4096, 128)]:
                measure(rows, "builtin", kernel, reference, dims, gqa, peer)
        elif args.part == "mha":
            paths = [("default", {"MMA_MIN_GROUP": 4}, None), ("mma", {"MMA_MIN_GROUP": 1}, None)]
            for d in (64, 128):
                for g in (1, 2):
                    for b in (1, 4, 32, 128):
                        for s in (1024, 8192, 32768):
                            if b * s * 8 * d < 2**31:
                                measure(rows, "mha_sweep", kernel, reference, (b, 8 * g, 8, s, d), paths, peer)
        elif args.part == "waves":  # one split per item, items between 1 and 2 waves of 264 slots (and one each side)
            configs = [("default", {}, None), ("stages3", {"MMA_STAGES": 3}, None)]
            for b, s, g, d in [(64, 2048, 4, 128), (64, 4096, 4, 128), (64, 1024, 4, 128), (48, 4096, 4, 128),
                               (64, 2048, 8, 128), (64, 4096, 8, 64), (64, 2048, 4, 64), (40, 8192, 4, 128),
                               (32, 4096, 4, 128), (128, 2048, 4, 128)]:
                measure(rows, "waves", kernel, reference, (b, 8 * g, 8, s, d), configs, peer)
        else:
            configs = [("default", {}, None), ("stages3", {"MMA_STAGES": 3}, None), ("warps8", {"MMA_WARPS": 8}, None),
                       ("keys32", {"MMA_KEYS": {128: 32}}, None), ("default_again", {}, None)]
            for dims in [(64, 32, 8, 2048, 128), (128, 32, 8, 1024, 128), (32, 32, 8, 4096, 128)]:
                measure(rows, "b64", kernel, reference, dims, configs, peer)
    (args.out / f"{args.part}.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
