"""The cluster split of the CuTe DSL reduction cell, measured: a long row (or a long row among few) split across a
thread-block cluster whose CTAs exchange their row results through distributed shared memory, against the plan
without it, quack and torch.compile, on the H200, in one process with one timer, on the same inputs.

    python3 benchmarks/bench_cluster.py run --out FILE.json [--op softmax ...]     # H200
    python3 benchmarks/bench_cluster.py render FILE.json                          # the tables, CPU

Per op and shape, the workspace's kernel runs under each plan variant (the kernel module's CLUSTER_ABOVE, MAX_CLUSTER,
VALUES_PER_THREAD, WHOLE_WARPS and the many-rows plan's bounds set before the signature's first call; MAX_CLUSTER 1 is
the plan before the split: register rows up to 1024 threads, the looped path beyond; few_rows is the plan of any M,
many_rows the many-rows plan at every M, where kernel.plans has one), checked against reference.reference in fp32
(rel_err; max also bitwise against torch.amax), and timed beside quack and torch.compile of the reference's baseline:
- GPU time: sweep_common.ab_times (torch.profiler over rotated input copies, sides in turn, order reversed every
  round, best round);
- call time: the harness's call_latency (back-to-back calls, no sync inside).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

from harness import call_latency
from sweep_common import ab_calls, ab_sets, ab_times, bake, bake_user, load_workspace, rel_err

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ROUNDS = 4
VARIANTS = {"default": {}, "no_cluster": {"MAX_CLUSTER": 1}, "above256": {"CLUSTER_ABOVE": 256},
            "above256_v64": {"CLUSTER_ABOVE": 256, "VALUES_PER_THREAD": 64}, "above512": {"CLUSTER_ABOVE": 512},
            "above1024": {"CLUSTER_ABOVE": 1024}, "above256_v48": {"CLUSTER_ABOVE": 256, "VALUES_PER_THREAD": 48},
            "pow2": {"WHOLE_WARPS": False}, "early_loads": {"LATE_LOADS": False},
            "before_late": {"LATE_LOADS": False, "MAX_UNSPLIT": 1024}, "cluster_loads3": {"CLUSTER_LOADS": 3},
            "few_rows": {"MANY_ROWS_GBPS_PER_SM": float("inf")}, "many_rows": {"MANY_ROWS_WAVES": 0},
            "convert_late": {"CONVERT_LATE": True}, "exchange_cta": {"CLUSTER_DIRECT": False},
            "pairs_apart": {"ONLINE_EXCHANGE": False}, "many_apart": {"MANY_ROWS_DIRECT": False},
            "one_wave_256": {"SUB_WAVE_VALUES": 0},
            "looped_512": {"VALUES_PER_THREAD": 4, "MAX_CLUSTER": 1},  # Inductor's way: 40 registers, x read twice
            "looped_256": {"VALUES_PER_THREAD": 4, "MAX_CLUSTER": 1, "LOOP_THREADS": 256},
            "v16_cta512_3ctas": {"VALUES_PER_THREAD": 16, "CLUSTER_ABOVE": 512, "FEW_ROWS_MIN_CTAS": 3},  # 40 regs
            "v16_cta512_4ctas": {"VALUES_PER_THREAD": 16, "CLUSTER_ABOVE": 512, "FEW_ROWS_MIN_CTAS": 4,
                                 "CONVERT_LATE": True},  # rmsnorm: 32 registers, no spill: Inductor's occupancy
            "v16": {"VALUES_PER_THREAD": 16}, "v16_cta512": {"VALUES_PER_THREAD": 16, "CLUSTER_ABOVE": 512},
            # quack's rmsnorm split of a long row (N = 32768: a cluster of 2, not 4; 64 values a thread), its weight
            # held as loaded across the reduction: 123 registers at 1024x32768, 118 at 4096x28672, no spill
            "v64_late": {"VALUES_PER_THREAD": 64, "CONVERT_LATE": True},
            # ... or with x read again from L2 after the reduction and the weight loaded after it (kernel.RELOAD):
            # 76 registers at 64 values (a cluster of 2 at N = 32768), 44 at the default 32 (a cluster of 4)
            "reload64": {"VALUES_PER_THREAD": 64, "RELOAD": True}, "reload": {"RELOAD": True},
            # the last chunk alone predicated (kernel.TAIL_PREDICATES), exp(a - m) as one FFMA (pointwise's SHIFT_FMA;
            # "pw." knobs are set on the workspace's pointwise module), both; the loads as ld.global.cg (LOAD_CG)
            "tail": {"TAIL_PREDICATES": True}, "shift_fma": {"pw.SHIFT_FMA": True},
            "after_tail": {"TAIL_PREDICATES": True, "pw.SHIFT_FMA": True}, "ldcg": {"LOAD_CG": True}}
SHAPES = {
    "softmax": ["4096x32000", "1024x128256", "8x131072", "32x131072", "1x32768", "64x65536", "16x262144",
                "4096x16384", "32768x8192", "16384x5120", "8192x14336",
                "32x32000", "128x32000", "512x32000", "64x128256", "256x128256",  # M from few rows to many
                "128x8192", "64x4096", "132x5120"],  # no more rows than SMs (kernel._sub_wave_plans)
    "rmsnorm": ["128x8192", "16384x5120", "8x65536", "32x131072", "1024x32768", "32768x8192", "16384x5600",
                "16384x7168", "8192x12288", "8192x14336", "4096x28672",
                "132x8192", "64x4096", "128x5120", "100x7168", "128x2048", "8x8192", "256x8192"],
    "max": ["8x131072", "4096x32000"],
    "sum": ["8x131072"],
}
USER = {  # user functions, baked from their file: the torch.compile goals (three row-shaped tensors)
    "layer_norm": ("tests/lowering_corpus/ops.py", ["32768x8192", "4096x32000", "4096x16384", "16384x4096",
                                                    "128x8192"]),
    "layer_norm_by_hand": ("tests/lowering_corpus/ops.py", ["32768x8192"]),
    "fused_add_rmsnorm": ("tests/lowering_corpus/ops.py", ["32768x8192"]),
    "log_softmax_temperature": ("benchmarks/models/row_ops.py", ["32768x8192", "4096x32000"]),
}
QUACK = {"softmax", "rmsnorm"}
COMPILE = {"softmax", "rmsnorm", "sum", "max", *USER}


_KNOBS = sorted({k for knobs in VARIANTS.values() for k in knobs})  # every knob a variant sets


def knob_owner(kernel, k: str) -> tuple:
    """(module, attribute) of a variant's knob: "pw.NAME" is the workspace's pointwise module's NAME, any other name
    the kernel module's."""
    return (kernel.lowered.pw, k[3:]) if k.startswith("pw.") else (kernel, k)


def _variant(kernel, knobs: dict) -> None:
    """Set a variant's knobs (knob_owner) on the workspace's modules (the rest to their defaults) and give it its own
    compile cache: a knob read at trace time would not be in the cache's key."""
    defaults = kernel.__dict__.setdefault("_bench_defaults", {k: getattr(*knob_owner(kernel, k)) for k in _KNOBS})
    for k, v in {**defaults, **knobs}.items():
        setattr(*knob_owner(kernel, k), v)
    caches = kernel.__dict__.setdefault("_bench_caches", {})
    kernel._compiled = caches.setdefault(json.dumps(knobs, sort_keys=True), {})
    kernel._launches.clear()  # the next call plans again


def run(out: Path, ops: list[str] | None, variants: list[str] | None, shapes: list[str] | None = None,
        any_shape: bool = False) -> None:
    import torch

    from tools import registry

    pattern = registry.pattern("reduction")
    eps = pattern.OPS["rmsnorm"]["params"]["eps"]
    chosen = {name: VARIANTS[name] for name in variants or VARIANTS}
    rows, meta = [], {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rounds": ROUNDS,
                      "date": time.strftime("%Y-%m-%d"), "variants": chosen}
    tmp = Path(tempfile.mkdtemp())
    torch._dynamo.config.recompile_limit = 64  # torch.compile with dynamic=False: one graph per shape
    for op in ops or [*SHAPES, *USER]:
        kernel, ref = load_workspace(bake(tmp, "reduction", op) if op in SHAPES else bake_user(tmp, f"{ROOT / USER[op][0]}:{op}"))
        compiled = torch.compile(ref.baseline, dynamic=False, fullgraph=True)
        listed = SHAPES.get(op) or USER[op][1]
        for text in shapes if any_shape else [t for t in listed if not shapes or t in shapes]:
            (case,) = pattern.cases(text, "representative", "bf16")
            row = {"op": op, "shape": text}
            first = ref.make_inputs(case, torch.bfloat16, "cuda", 0)
            want = ref.reference(*(t.float() for t in first))
            want = tuple(want) if isinstance(want, (tuple, list)) else (want,)
            per_copy = sum(t.numel() * t.element_size() for t in first) + sum(w.numel() * 2 for w in want)
            sets = ab_sets(ref, case, first, per_copy)
            sides = {}
            for name, knobs in chosen.items():
                _variant(kernel, knobs)
                got = kernel.run(*first)
                row[f"{name}_plan"] = kernel.plan(first[0].shape[-1], 16 // first[0].element_size(),
                                                  first[0].numel() // first[0].shape[-1])
                got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
                errs = [rel_err(g, w) for g, w in zip(got, want)]
                row[f"{name}_err"] = None if None in errs else max(errs)
                if op == "max":  # NaN-propagating, order-free: must equal torch.amax bit for bit
                    row[f"{name}_exact"] = bool(torch.equal(got[0], first[0].amax(-1)))
                sides[name] = [lambda x=x, v=knobs: _call(kernel, v, x) for x in sets]
            _variant(kernel, {})
            if op in QUACK:
                import quack

                sides["quack"] = [(lambda x=x: quack.softmax(x[0])) if op == "softmax" else
                                  (lambda x=x: quack.rmsnorm(x[0], x[1], eps=eps)) for x in sets]
            if op in COMPILE:
                sides["compile"] = [lambda x=x: compiled(*x) for x in sets]
            row.update({f"{side}_us": us for side, us in ab_times(sides, ab_calls(per_copy), ROUNDS).items()})
            for side in sides:
                cycle = itertools.cycle(sides[side])
                row[f"{side}_call_us"] = call_latency(lambda c=cycle: next(c)(), row[f"{side}_us"])["call_us"]
            rows.append(row)
            print(json.dumps(row), flush=True)
            del sets, first, want, sides
            torch.cuda.empty_cache()
            out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


_ACTIVE = {}


def _call(kernel, knobs: dict, x):
    """run() under a variant: switching variants re-plans (the switch is outside the timed loop's steady state:
    ab_times times one side's calls back to back, so only its first call switches)."""
    key = json.dumps(knobs, sort_keys=True)
    if _ACTIVE.get(id(kernel)) != key:
        _variant(kernel, knobs)
        _ACTIVE[id(kernel)] = key
    return kernel.run(*x)


def render(files: list[Path]) -> str:
    """One table per file: GPU us (call us) per variant and peer, the best variant against the peers, the plans
    (cluster x threads a row x chunks, /T: T threads a CTA of several rows, @k: k CTAs an SM, the many-rows plan; d: the direct exchange; L: looped)
    and the worst rel_err."""
    def us(r: dict, side: str) -> str:
        return "" if f"{side}_us" not in r else f"{r[f'{side}_us']:.2f} ({r[f'{side}_call_us']:.1f})"

    lines = []
    for f in files:
        data = json.loads(f.read_text())
        names = list(data["meta"]["variants"])
        lines += ["| op | shape | " + " | ".join(f"{n}: GPU us (call us)" for n in names) + " | quack | torch.compile "
                  "| quack / best | compile / best | plans | rel_err |", "|" + "---|" * (len(names) + 8)]
        for r in data["rows"]:
            best = min(r[f"{n}_us"] for n in names)
            q, c = r.get("quack_us"), r.get("compile_us")
            plans = ", ".join("L" if r[f"{n}_plan"]["looped"] else
                              f"{r[f'{n}_plan']['cluster']}x{r[f'{n}_plan']['tpr']}x{r[f'{n}_plan']['chunks']}"
                              + (f"@{r[f'{n}_plan']['min_ctas']}" if r[f"{n}_plan"].get("min_ctas") else "")
                              + ("d" if r[f"{n}_plan"].get("direct") else "")
                              + (f"/{r[f'{n}_plan']['threads']}" if r[f"{n}_plan"]["rows_per_cta"] > 1 else "")
                              for n in names)
            err = max(r[f"{n}_err"] or 0 for n in names)
            lines.append(f"| {r['op']} | {r['shape']} | " + " | ".join(us(r, n) for n in names)
                         + f" | {us(r, 'quack')} | {us(r, 'compile')} | {'' if q is None else f'{q / best:.3f}'} | "
                         f"{'' if c is None else f'{c / best:.3f}'} | {plans} | {err:.1e} |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("--op", action="append")
    r.add_argument("--variant", action="append", choices=list(VARIANTS))
    r.add_argument("--shape", action="append", help="only these of each op's shapes")
    r.add_argument("--any-shape", action="store_true", help="every --shape for every op, listed for it or not")
    r.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("render")
    t.add_argument("files", type=Path, nargs="+")
    args = parser.parse_args()
    if args.mode == "run":
        run(args.out, args.op, args.variant, args.shape, args.any_shape)
    else:
        print(render(args.files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
