"""What the Phase-2 route gives on a real gpu-wiki: counts and first entries per tier, records by type, the peaks.

    python benchmarks/wiki_route_real.py WIKI [WIKI ...] [--first 4] [--cells H200:gemm,MI308X:reduction]
    python benchmarks/wiki_route_real.py WIKI [WIKI ...] --kernels \
        --cells H200:gemm,H200:reduction/rmsnorm,MI308X:reduction/softmax,MI355X:decode_attention/gqa

Each WIKI is a `gpu-wiki/` folder (for instance alibaba/atrex-kernel-agent checked out at v0.1.0, v0.2.0 or main:
`git archive v0.1.0 gpu-wiki | tar -x -C /tmp/wiki/v0.1.0`). For every cell it builds the op.json a bake would
write (tools/spec.py) pointed at the wiki, runs the workspace's tools/wiki_route.py on it, and prints markdown:
per tier the count and the first entries, for the JSON layout the records by type, what the tier tables name
that is absent, and each peak in use with its wiki source (tools/wiki_route.py's peak_lines). With --kernels it
prints instead the reference kernels Phase 2 lists for each cell (the workspace's tools/reference_kernels.py:
same op first, then same pattern; each file's description and what it defines, read with `ast`), which is how
benchmarks/2026-12-04-reference-kernels-route.md was made. Nothing is baked.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "{{cookiecutter.op_name}}" / "tools"))

import compute_utilization  # noqa: E402
import reference_kernels  # noqa: E402
import wiki_route  # noqa: E402
from tools import spec  # noqa: E402

compute_utilization.SPECS_PATH = ROOT / "reference" / "gpu_specs.json"


def record_type(entry: dict) -> str:
    """A JSON record's type, read from its file's place in the store: records/<type>/..."""
    parts = entry["path"].parts
    return parts[parts.index("records") + 1]


def cell(wiki: Path, gpu: str, pattern: str, first: int) -> list[str]:
    op = spec.build(spec.context(pattern=pattern, op="default", gpu=gpu, gpu_wiki=str(wiki)))
    route = wiki_route.route(op)
    lines = [f"### {pattern} / {gpu} ({op['framework']}, {op['arch']})", ""]
    if not route["present"]:
        return lines + [f"no gpu-wiki at `{wiki}`", ""]
    total = sum(len(d) for d in route["tiers"].values())
    lines += [f"{route['layout']} layout; {total} entries: "
              + ", ".join(f"{t} {len(route['tiers'][t])}" for t in wiki_route.TIERS), ""]
    if route["layout"] == "json":
        types = Counter(record_type(d) for docs in route["tiers"].values() for d in docs)
        lines += ["records by type: " + (", ".join(f"{k} {v}" for k, v in sorted(types.items())) or "none"), ""]
    lines += ["| tier | count | first entries |", "|---|---|---|"]
    for tier, docs in route["tiers"].items():
        shown = "<br>".join(f"`{wiki_route.entry_name(d, route['wiki'])}`" for d in docs[:first]) or "-"
        more = f"<br>(+{len(docs) - first} more)" if len(docs) > first else ""
        lines.append(f"| {tier} {wiki_route.TIERS[tier]} | {len(docs)} | {shown}{more} |")
    lines += ["", "named by the tier tables for this op but absent: "
              + (", ".join(f"`{m}`" for m in route["missing"]) or "none"), ""]
    spec_entry = wiki_route.cited_specs(compute_utilization.load_specs(), op, route)["gpus"][op["gpu"]]
    lines += ["peaks:", "", *[f"- {line}" for line in wiki_route.peak_lines(spec_entry, op["dtype"])], ""]
    return lines


def kernels(wiki: Path, gpu: str, pattern: str, op_name: str, first: int) -> list[str]:
    """The reference kernels Phase 2 lists for one cell, as markdown: a count by match, then the first entries."""
    op = spec.build(spec.context(pattern=pattern, op=op_name, gpu=gpu, gpu_wiki=str(wiki)))
    found = reference_kernels.find(op, wiki_route.route(op))["kernels"]
    same = sum(k["match"] == "op" for k in found)
    lines = [f"### {pattern}/{op['op']} on {gpu} ({op['framework']}, {op['arch']}): {len(found)} ({same} same op, "
             f"{len(found) - same} same pattern)", ""]
    for k in found[:first]:
        line = (f"- [{k['match']}] `{k.get('rel') or k.get('id')}`: {k['text']}. Defines: "
                f"{reference_kernels.describe(k, 3)}")
        lines.append(line[:240])
    if len(found) > first:
        lines.append(f"- (+{len(found) - first} more)")
    return [*lines, ""]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("wikis", nargs="+", type=Path)
    p.add_argument("--first", type=int, default=4, help="entries shown per tier")
    p.add_argument("--cells", default="H200:gemm,MI308X:reduction", help="GPU:pattern[/op],...")
    p.add_argument("--kernels", action="store_true", help="the reference kernels Phase 2 lists, per cell")
    args = p.parse_args(argv)
    cells = [(gpu, *(rest.split("/") + ["default"])[:2]) for gpu, rest in (c.split(":") for c in args.cells.split(","))]
    for wiki in args.wikis:
        print(f"## `{wiki}`\n")
        for gpu, pattern, op_name in cells:
            print("\n".join(kernels(wiki, gpu, pattern, op_name, 12 if args.first == 4 else args.first)
                             if args.kernels else cell(wiki, gpu, pattern, args.first)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
