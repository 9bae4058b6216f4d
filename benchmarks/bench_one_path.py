"""One path per cell, measured: each built-in elementwise and reduction op through the lowering (its program in
tools/patterns/<pattern>/programs.py, run by the cell's one kernel) against the hand-written built-in it replaced,
on the H200, in one process with one timer, on the same inputs; and the reduction ops against quack and
torch.compile where the issue names them.

    python3 benchmarks/bench_one_path.py bake-old --tree OLD_TEMPLATE --out DIR      # CPU: the old workspaces
    python3 benchmarks/bench_one_path.py run --old DIR --pattern reduction --out FILE.json    # H200
    python3 benchmarks/bench_one_path.py render FILE.json [FILE.json ...]            # the tables, CPU

- bake-old arranges one H200 bf16 workspace per op with OLD_TEMPLATE's own tools (a checkout of the commit before
  the change: its cells still carry the hand-written built-ins), without the V0 run.
- run bakes the same workspaces from this tree, imports the old and the new workspace of an op side by side (each
  module keeps its own globals, so the old kernel.py keeps calling the old host.py), makes every input once with the
  new workspace's reference.make_inputs and hands the same tensors to both. Per shape (the template's cases of
  2026-11-30-h200-template-v0.md, plus the issue's quack and regime shapes):
  - check: both outputs against reference.reference in fp32 (rel_err), and whether the two are bitwise equal;
  - GPU time: torch.profiler kernel time over rotated input copies (enough that no call finds its inputs in the
    L2), the sides in turn, ROUNDS times with the order reversed every round, each keeping its best round
    (sweep_common.kernel_time);
  - call time: the harness's call_latency (back-to-back run() calls, no sync inside, wall time per call), cycling
    over the same copies;
  - host time: sweep_common.host_us of run() on a tiny input (the GPU keeps up: submission alone).
  Peers, in the same process: quack.softmax / quack.rmsnorm and torch.compile of the reference's baseline.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import call_latency
from sweep_common import AB_ROUND_BYTES, ab_calls, ab_sets, ab_times, bake, host_us, load_workspace, rel_err

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 4
EXTRA = {  # shapes beyond the template's cases: the quack / compile shapes and a few regime points
    "reduction": ["4096x32000", "1024x128256", "128x8192", "16384x5120", "1x8192", "128x1024", "32768x1024",
                  "32x131072"],
    "elementwise": ["4096", "1048576", "16777216"],
}
QUACK = {"softmax": ["4096x32000", "1024x128256", "8x131072", "32768x8192"],
         "rmsnorm": ["128x8192", "16384x5120", "32768x8192"]}
COMPILE = {"rmsnorm": ["32768x8192"], "softmax": ["32768x8192"]}
TINY = {"reduction": "64x1024", "elementwise": "4096"}


def bake_old(tree: Path, out: Path) -> None:
    """The old workspaces: OLD_TEMPLATE's scaffold, run in a child with OLD_TEMPLATE as its working directory."""
    code = ("import sys; from pathlib import Path; sys.path.insert(0, '.'); from tools import registry, scaffold, spec\n"
            f"out = Path({str(out)!r})\n"
            "for pattern in ('elementwise', 'reduction'):\n"
            "    for op in registry.pattern(pattern).OPS:\n"
            "        scaffold.workspace(out / op, spec.context(pattern=pattern, op=op, gpu='H200', dtype='bf16', "
            "op_name=op, run_baseline='no'))\n")
    subprocess.run([sys.executable, "-c", code], cwd=tree, check=True)


def run(old_dir: Path, pattern_name: str, out: Path, ops: list[str] | None) -> None:
    import torch

    from tools import registry

    pattern = registry.pattern(pattern_name)
    shapes = [*pattern.DEFAULT_SHAPES["representative"], *pattern.DEFAULT_SHAPES["boundary"], *EXTRA[pattern_name]]
    rows, meta = [], {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "pattern": pattern_name,
                      "date": time.strftime("%Y-%m-%d"), "rounds": ROUNDS, "round_bytes": AB_ROUND_BYTES}
    compiled = {}
    tmp = Path(tempfile.mkdtemp())
    for op in ops or list(pattern.OPS):
        new_k, ref = load_workspace(bake(tmp, pattern_name, op))
        old_k, _ = load_workspace(old_dir / op)  # the new modules stay alive through new_k's and ref's globals
        for text in shapes:
            (case,) = pattern.cases(text, "representative", "bf16")
            row = {"op": op, "shape": text}
            first = ref.make_inputs(case, torch.bfloat16, "cuda", 0)
            want = ref.reference(*(t.float() for t in first))
            got_new, got_old = new_k.run(*first), old_k.run(*first)
            row.update(new_err=rel_err(got_new, want), old_err=rel_err(got_old, want),
                       bitwise=bool(torch.equal(got_new, got_old)))
            per_copy = sum(t.numel() * t.element_size() for t in first) + got_new.numel() * got_new.element_size()
            sets = ab_sets(ref, case, first, per_copy)
            calls = ab_calls(per_copy)
            sides = {"new": [lambda x=x: new_k.run(*x) for x in sets], "old": [lambda x=x: old_k.run(*x) for x in sets]}
            if text in QUACK.get(op, []):
                import quack

                eps = pattern.OPS["rmsnorm"]["params"]["eps"]
                sides["quack"] = [(lambda x=x: quack.softmax(x[0])) if op == "softmax" else
                                  (lambda x=x: quack.rmsnorm(x[0], x[1], eps=eps)) for x in sets]
            if text in COMPILE.get(op, []):
                fn = compiled.setdefault(op, torch.compile(ref.baseline, dynamic=False, fullgraph=True))
                sides["compile"] = [lambda x=x: fn(*x) for x in sets]
            row.update({f"{side}_us": us for side, us in ab_times(sides, calls, ROUNDS).items()})
            for side in ("new", "old"):  # the harness's call time, cycling over the same input sets
                cycle = itertools.cycle(sides[side])
                row[f"{side}_call_us"] = call_latency(lambda c=cycle: next(c)(), row[f"{side}_us"])["call_us"]
            row["ratio"] = row["old_us"] / row["new_us"]  # > 1: the one path is faster
            for peer in ("quack", "compile"):
                if f"{peer}_us" in row:
                    row[f"vs_{peer}"] = row[f"{peer}_us"] / row["new_us"]
            rows.append(row)
            print(json.dumps(row), flush=True)
            del sets, first, want, got_new, got_old, sides
            torch.cuda.empty_cache()
        (tiny,) = pattern.cases(TINY[pattern_name], "representative", "bf16")
        x = ref.make_inputs(tiny, torch.bfloat16, "cuda", 0)
        host = {side: host_us(lambda k=k: k.run(*x), sync=torch.cuda.synchronize) for side, k in
                (("new", new_k), ("old", old_k))}
        rows.append({"op": op, "shape": TINY[pattern_name], "host": True, "new_host_us": host["new"],
                     "old_host_us": host["old"], "inputs": len(x)})
        print(json.dumps(rows[-1]), flush=True)
        out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


def _err(e) -> str:
    return "NaN" if e is None else f"{e:.1e}"  # relu of one element -0.0 / 0.0: a zero-norm reference


def render(files: list[Path]) -> str:
    lines = ["| op | shape | new us | old us | old / new | new call us | old call us | quack / new | compile / new |"
             " rel_err new | bitwise |", "|" + "---|" * 11]
    host = ["| op | shape | new host us | old host us |", "|---|---|---|---|"]
    for f in files:
        for r in json.loads(f.read_text())["rows"]:
            if r.get("host"):
                host.append(f"| {r['op']} | {r['shape']} | {r['new_host_us']:.1f} | {r['old_host_us']:.1f} |")
                continue
            q, c = r.get("vs_quack"), r.get("vs_compile")
            lines.append(f"| {r['op']} | {r['shape']} | {r['new_us']:.2f} | {r['old_us']:.2f} | {r['ratio']:.3f} | "
                         f"{r['new_call_us']:.1f} | {r['old_call_us']:.1f} | {'' if q is None else f'{q:.3f}'} | "
                         f"{'' if c is None else f'{c:.3f}'} | {_err(r['new_err'])} | {'yes' if r['bitwise'] else 'no'} |")
    return "\n".join(lines + [""] + host)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    b = sub.add_parser("bake-old")
    b.add_argument("--tree", type=Path, required=True)
    b.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--old", type=Path, required=True)
    r.add_argument("--pattern", choices=["elementwise", "reduction"], required=True)
    r.add_argument("--op", action="append")
    r.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("render")
    t.add_argument("files", type=Path, nargs="+")
    args = parser.parse_args()
    if args.mode == "bake-old":
        bake_old(args.tree.resolve(), args.out.resolve())
    elif args.mode == "run":
        run(args.old.resolve(), args.pattern, args.out, args.op)
    else:
        print(render(args.files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
