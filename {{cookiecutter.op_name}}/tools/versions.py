"""The version history of this workspace: numbering, each version's commit, the README's table and the plot.

    python tools/versions.py            # print the table; redraw results/versions.png

A version is a memory record (memory/v<N>.json, tools/memory_manager.py). v0 is the baseline; tools/iterate.py
makes the next one, numbered after the highest unmasked record (a masked record is a failed attempt: readers
skip it). A failed attempt at the number the next one takes is kept, moved to memory/masked/ (never deleted), so
that the number is free again. Each passing version is committed as "V<N>: <action>", and that commit is where
its kernel.py is read back from for the next A/B (`commit_of`). The README's "Versions" table and
results/versions.png (the headline case's GPU time per version, beside torch eager and torch.compile) are drawn
from the records alone, so they can be redrawn at any time.
"""

from __future__ import annotations

import datetime
import re
import shutil
import sys
from pathlib import Path

import memory_manager
from files import git

WS = Path(__file__).resolve().parent.parent
PNG = Path("results") / "versions.png"


def records(ws: Path = WS) -> list[tuple[str, dict]]:
    """Every readable record, in version order, masked ones included (broken ones are skipped here)."""
    return memory_manager.list_records(ws)[0]


def next_version(ws: Path = WS) -> tuple[str, str | None]:
    """(the next version, its parent): one after the highest unmasked record, and that record (None: none yet)."""
    active = [int(v[1:]) for v, r in records(ws) if not r.get("masked")]
    if not active:
        return "v0", None
    return f"v{max(active) + 1}", f"v{max(active)}"


def keep_masked(ws: Path, version: str) -> Path | None:
    """A masked record at `version` (an earlier failed attempt) moved to memory/masked/<version>.<time>.json."""
    path = ws / "memory" / f"{version}.json"
    if not path.is_file():
        return None
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    dest = ws / "memory" / "masked" / f"{version}.{stamp}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(path, dest)
    return dest


def commit_of(ws: Path, version: str) -> tuple[str | None, str]:
    """(commit, how it was found) of a version's kernel: the newest commit whose subject is "V<N>: ...", else the
    record's git_commit_hash, else HEAD (said so: the version was never committed)."""
    number = version[1:]
    log = git(ws, "log", "--format=%H %s", "-n", "200")
    for line in log.stdout.splitlines():
        sha, _, subject = line.partition(" ")
        if re.match(rf"V{number}:", subject):
            return sha, f"commit {sha[:10]} ({subject[:60]})"
    record = dict(records(ws)).get(version) or {}
    if record.get("git_commit_hash"):
        return record["git_commit_hash"], f"{version}'s git_commit_hash {record['git_commit_hash'][:10]}"
    head = git(ws, "rev-parse", "HEAD")
    if head.returncode == 0:
        sha = head.stdout.strip()
        return sha, f"HEAD {sha[:10]} (no commit is named V{number}: {version} was never committed)"
    return None, "no commit at all"


def fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _perf(record: dict) -> dict:
    return record.get("performance") or {}


def table_lines(ws: Path = WS) -> list[str]:
    """The README's "Versions" section: one row per record (masked ones struck through, with their reason)."""
    rows = records(ws)
    if not rows:
        return []
    out = ["## Versions", "",
           "Made by `python tools/iterate.py --action ... --category ...` (v0: `tools/run_baseline.py`). GPU time of "
           "the headline case; the speedup over the parent is the median of launch-by-launch ratios in one process, "
           "with its 95% interval. Masked rows are failed attempts (not committed).", "",
           "| version | action | category | GPU time (us) | vs parent | vs torch eager | vs torch.compile | correctness "
           "| gate |", "|---|---|---|---|---|---|---|---|---|"]
    for version, r in rows:
        p, o, ab = _perf(r), r.get("optimization") or {}, r.get("versus_parent") or {}
        vs_parent = (f"{ab['speedup']:.3f}x [{ab['speedup_low']:.3f}, {ab['speedup_high']:.3f}] vs "
                     f"{ab['version']}" if ab.get("speedup") is not None else "-")
        name = f"~~{version}~~ (masked)" if r.get("masked") else version
        gate = r["quality_gate"]["result"] + (f": {r['quality_gate'].get('failure_reason')}"
                                              if r.get("masked") and r["quality_gate"].get("failure_reason") else "")
        out.append(f"| {name} | {(o.get('action_description') or '-')[:80]} | {o.get('action_category') or '-'} | "
                   f"{fmt(p.get('latency_us'), '.1f')} | {vs_parent} | {fmt(p.get('speedup_vs_torch'), '.2f')}x | "
                   f"{fmt(p.get('speedup_vs_torch_compile'), '.2f')}x | {r['correctness'].get('status')} | {gate} |")
    return out + [""]


def plot(ws: Path = WS) -> Path | None:
    """results/versions.png: the headline GPU time per version (masked attempts as crosses), torch eager and
    torch.compile of each version's run beside it. None when no version has a measured time."""
    rows = [(v, r) for v, r in records(ws) if _perf(r).get("latency_us") is not None]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    xs = list(range(len(rows)))
    labels = [v + (" (masked)" if r.get("masked") else "") for v, r in rows]
    for key, label, style in (("latency_us", "kernel", "o-"), ("torch_latency_us", "torch eager", "s--"),
                              ("torch_compile_latency_us", "torch.compile", "^--")):
        pts = [(x, _perf(r).get(key)) for x, (_v, r) in zip(xs, rows) if _perf(r).get(key) is not None
               and not (key == "latency_us" and r.get("masked"))]
        if pts:
            ax.plot(*zip(*pts), style, label=label)
    masked = [(x, _perf(r)["latency_us"]) for x, (_v, r) in zip(xs, rows) if r.get("masked")]
    if masked:
        ax.plot(*zip(*masked), "rx", markersize=10, label="masked attempt")
    case = _perf(rows[-1][1]).get("case") or "headline case"
    ax.set(xticks=xs, xticklabels=labels, ylabel="GPU time (us), lower is better", title=f"{ws.name}: {case}")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = ws / PNG
    out.parent.mkdir(exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main() -> int:
    print("\n".join(table_lines(WS)) or "no version recorded yet")
    drawn = plot(WS)
    print(f"drew {drawn.relative_to(WS)}" if drawn else "no measured version to plot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
