"""A/B of workspaces of one op (kernel variants, old against new) on the H200: one process, one timer, the same
inputs. Each workspace is imported side by side (sweep_common.load_workspace; each module keeps its own globals).

    python3 benchmarks/ab_workspaces.py --pattern reduction --ws v0=/tmp/var/v0 --ws old=/tmp/var/old \
        --shape 4096x5120 --shape 16384x5120 [--out FILE.json]

Per shape: every workspace's output against the first one's reference.reference (fp32 rel_err), then torch.profiler
kernel time over rotated input copies (256 MiB a round: no call finds its inputs in the L2), the workspaces in turn,
ROUNDS times with the order reversed every round, each keeping its best round; the first workspace is the base of
the ratios (its time / theirs: > 1, the other is faster).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sweep_common import ab_calls, ab_sets, ab_times, load_workspace, rel_err
from tools import registry

ROUNDS = 4


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pattern", required=True)
    parser.add_argument("--ws", action="append", required=True, help="name=path")
    parser.add_argument("--shape", action="append", required=True)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import torch

    kernels, ref = {}, None
    for item in args.ws:
        name, _, path = item.partition("=")
        kernels[name], got_ref = load_workspace(Path(path))
        ref = ref or got_ref
    pattern, rows = registry.pattern(args.pattern), []
    for text in args.shape:
        (case,) = pattern.cases(text, "representative", "bf16")
        first = ref.make_inputs(case, torch.bfloat16, "cuda", 0)
        want = ref.reference(*(t.float() for t in first))
        row = {"shape": text, **{f"{n}_err": rel_err(k.run(*first), want) for n, k in kernels.items()}}
        per_copy = sum(t.numel() * t.element_size() for t in first) + want.numel() * first[0].element_size()
        sets = ab_sets(ref, case, first, per_copy)
        names = list(kernels)
        best = ab_times({n: [lambda x=x, k=kernels[n]: k.run(*x) for x in sets] for n in names}, ab_calls(per_copy),
                        ROUNDS)
        row.update({f"{n}_us": us for n, us in best.items()})
        base = names[0]
        row.update({f"{base}/{n}": row[f"{base}_us"] / row[f"{n}_us"] for n in names[1:]})
        rows.append(row)
        print(" | ".join([text, *(f"{n} {row[f'{n}_us']:.2f}" for n in names),
                          *(f"{base}/{n} {row[f'{base}/{n}']:.3f}" for n in names[1:])]), flush=True)
        del sets, first, want
        torch.cuda.empty_cache()
    if args.out:
        args.out.write_text(json.dumps({"ws": args.ws, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
