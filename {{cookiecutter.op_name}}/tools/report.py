"""Write plans/v0_plan.md and baseline_report.md from op.json, the gpu-wiki and the measured results.

Nothing in either document is typed by hand: the plan is Phase 1 of the workflow (semantics, target,
framework facts) taken from op.json, plus Phase 2's gpu-wiki route: the tier tables (P0..P4) of
`<gpu_wiki>/README.md` and the README of each folder they point to, filtered to this op's GPU, vendor,
arch, DSL and pattern, listing only paths that exist. The report is Phase 4 (configuration,
correctness per case, performance and utilization, the roofline plot, the ISA table) taken from
results/. When nothing ran, the report says "NOT RUN" and why, and shows no measured number.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import compute_utilization
import isa_metrics


# gpu_specs.json source kinds -> memory `references[].source_type`
SOURCE_TYPES = {"datasheet": "datasheet", "whitepaper": "whitepaper", "product-page": "doc"}


def _table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _fmt(value, spec=".3g"):
    return "-" if value is None else format(value, spec)


# --------------------------------------------------------------------------------------------
# gpu-wiki route: the README index's tier tables (P0..P4) and each directory's README
# --------------------------------------------------------------------------------------------

TIERS = {"P0": "hardware spec", "P1": "vendor-common", "P2": "arch", "P3": "DSL", "P4": "pitfalls and ref-docs"}
_REF = re.compile(r"\[([^\]]*)\]\(([^)\s#]+)[^)]*\)|`([^`\s]+)`")
_TIER = re.compile(r"\bP([0-4])\b")


def _has(text: str, *words: str) -> bool:
    """A word of `words` starts at a word boundary in text (case-insensitive): 'h20' is not in 'h200'."""
    return any(re.search(rf"(?<![a-z0-9]){re.escape(w.lower())}(?![a-z0-9])", text.lower()) for w in words)


def _mentions(text: str, words: list[str]) -> bool:
    return any(re.search(rf"(?<![a-z0-9]){re.escape(w)}", text.lower()) for w in words)


def _listed(readme: Path, wiki: Path) -> list[dict]:
    """Every path a README lists (markdown links or `code` paths, in tables or bullets), with its line's text and tier.

    Links resolve against the README's folder, then the wiki root. `exists` says whether the target is there.
    """
    out, tier = [], None
    for line in readme.read_text(errors="replace").splitlines():
        found = _TIER.search(line)
        if line.lstrip().startswith("#"):
            tier = f"P{found.group(1)}" if found else None
        row_tier = f"P{found.group(1)}" if found else tier
        refs = [b or c for _a, b, c in _REF.findall(line)]
        refs = [r for r in refs if "://" not in r and ("/" in r or r.endswith(".md"))]
        text = _TIER.sub("", _REF.sub(lambda m: m.group(1) if m.group(2) and m.group(1) != m.group(2) else "", line))
        text = re.sub(r"\s+", " ", text.replace("|", " ")).strip(" -*:")
        for ref in refs:
            candidates = [(readme.parent / ref).resolve(), (wiki / ref.lstrip("/")).resolve()]
            path = next((c for c in candidates if c.exists()), candidates[0])
            out.append({"tier": row_tier, "path": path, "text": text, "exists": path.exists()})
    return out


def _dir_docs(entry: dict, wiki: Path) -> list[dict]:
    """A directory entry -> its README plus the existing files (and sub-READMEs) it lists; a file -> itself."""
    path = entry["path"]
    if path.is_file():
        return [entry]
    readme = path / "README.md"
    if not readme.is_file():
        return []
    docs = [{**entry, "path": readme}]
    for item in _listed(readme, wiki):
        if item["exists"]:
            docs.append({**item, "path": item["path"] / "README.md" if item["path"].is_dir() else item["path"]})
    return [d for d in docs if d["path"].is_file()]


def _find(entry: dict, wiki: Path, want, depth: int = 2) -> list[dict]:
    """Docs under an index entry whose path satisfies want(); descends listed sub-directories that do not yet."""
    rel = str(entry["path"].relative_to(wiki)) if entry["path"].is_relative_to(wiki) else str(entry["path"])
    if want(rel):
        return _dir_docs(entry, wiki)
    if depth == 0 or not (entry["path"] / "README.md").is_file():
        return []
    found = []
    for item in _listed(entry["path"] / "README.md", wiki):
        if item["exists"] and item["path"].is_dir():
            found += _find(item, wiki, want, depth - 1)
    return found


def _route_tiers(op: dict, wiki: Path, index: list[dict]) -> dict[str, list[dict]]:
    gpu = op["gpu"].lower()
    vendor, arch, dsl = op["vendor"], op["arch"], op["framework_info"]["wiki_names"]
    words = op["wiki_words"] + [op["op"].lower()]
    by_tier = {t: [e for e in index if e["tier"] == t and e["exists"]] for t in TIERS}
    p0 = [d for e in by_tier["P0"] for d in _dir_docs(e, wiki) if d["path"].name != "README.md"]
    exact = [d for d in p0 if _has(d["path"].name, gpu, gpu.rstrip("x"))]
    family = [d for d in p0 if _has(d["path"].name, arch, op["target"])]
    refs = [e for e in by_tier["P4"] if _has(str(e["path"]), "ref-docs", "ref_docs", "refdocs", "ref-doc")]
    pit = [e for e in by_tier["P4"] if e not in refs]
    ref_docs = [d for e in refs for d in _dir_docs(e, wiki)
                if d["path"].name != "README.md" and _mentions(d["path"].name + " " + d["text"], words)]
    return {
        "P0": exact or family,
        "P1": [d for e in by_tier["P1"] for d in _find(e, wiki, lambda r: _has(r, vendor))],
        "P2": [d for e in by_tier["P2"] for d in _find(e, wiki, lambda r: _has(r, arch, op["target"]))],
        "P3": [d for e in by_tier["P3"] for d in _find(e, wiki, lambda r: _has(r, *dsl))],
        "P4": [d for e in pit for d in _find(e, wiki, lambda r: _has(r, vendor) and _has(r, *dsl))] + ref_docs,
    }


def wiki_route(op: dict) -> dict:
    """This op's gpu-wiki learning path: {wiki, present, tiers: {P0..P4: [{path, text}]}, missing: [listed, absent]}."""
    wiki = Path(op["gpu_wiki"]).expanduser()
    readme = wiki / "README.md"
    if not readme.is_file():
        return {"wiki": wiki, "present": False, "tiers": {}, "missing": []}
    wiki = wiki.resolve()
    index = _listed(readme, wiki)
    tiers = {}
    for tier, docs in _route_tiers(op, wiki, index).items():
        seen, unique = set(), []
        for d in docs:
            if d["path"].is_file() and d["path"] not in seen:
                seen.add(d["path"])
                unique.append({"path": d["path"], "text": d["text"]})
        tiers[tier] = unique
    readmes = [readme] + [d["path"] for docs in tiers.values() for d in docs if d["path"].name == "README.md"]
    missing = sorted({str(e["path"]) for r in readmes for e in _listed(r, wiki) if not e["exists"]})
    return {"wiki": wiki, "present": True, "index": wiki / "README.md", "tiers": tiers, "missing": missing}


def wiki_search_log(op: dict, route: dict) -> list[dict]:
    """memory `search_log`: the index read, then one entry per tier with what it routed."""
    if not route["present"]:
        return [{"query": "gpu-wiki index", "where": str(route["wiki"]),
                 "finding": "absent on this machine: nothing read; peaks from reference/gpu_specs.json"}]
    log = [{"query": "gpu-wiki index", "where": str(route["index"]), "finding": "tier tables P0-P4 read"}]
    for tier, docs in route["tiers"].items():
        names = ", ".join(d["path"].name for d in docs) or "nothing matched"
        log.append({"query": _tier_title(tier, op), "where": str(route["wiki"]), "finding": f"{len(docs)} doc(s): {names}"})
    return log


def _tier_title(tier: str, op: dict) -> str:
    what = {"P0": op["gpu"], "P1": op["vendor"], "P2": op["arch"], "P3": op["framework"],
            "P4": f"{op['vendor']}/{op['framework']} pitfalls; ref-docs about {op['pattern']} / {op['op']}"}
    return f"{tier} {TIERS[tier]} ({what[tier]})"


def route_lines(route: dict, op: dict) -> list[str]:
    """Markdown lines of the route for the plan: one list per tier, only paths that exist."""
    if not route["present"]:
        return wiki_status(op, route)[0]
    lines = [f"Read `{route['index']}` and followed its tier tables for {op['vendor']} / {op['arch']} / "
             f"{op['framework']} / {op['pattern']}; every path below exists.", ""]
    for tier in TIERS:
        lines.append(f"**{_tier_title(tier, op)}**")
        docs = route["tiers"].get(tier, [])
        lines += [f"- `{d['path']}`" + (f": {d['text']}" if d["text"] else "") for d in docs] or [
            "- (nothing in the index matches this tier for this op)"]
        lines.append("")
    if route["missing"]:
        lines.append("Listed in the index but absent on disk, so not used: " + ", ".join(f"`{m}`" for m in route["missing"]))
    return lines


def wiki_status(op: dict, route: dict | None = None) -> tuple[list[str], list[dict]]:
    """Short lines about the gpu-wiki for the report, and memory `references` entries for every route path."""
    route = route or wiki_route(op)
    wiki = route["wiki"]
    if not route["present"]:
        return ([f"- gpu-wiki: `{wiki}` is absent on this machine, so no wiki path was read. Peaks and bandwidth "
                 f"come from the shipped `reference/gpu_specs.json`, whose sources are listed below."], [])
    refs = [{"path": str(route["index"]), "source_type": "gpu-wiki", "note": "knowledge-base index (Phase 2 entry point)"}]
    for tier, docs in route["tiers"].items():
        refs += [{"path": str(d["path"]), "source_type": "gpu-wiki",
                  "note": f"{tier} {TIERS[tier]}" + (f": {d['text']}"[:300] if d["text"] else "")} for d in docs]
    counts = ", ".join(f"{t} {len(route['tiers'].get(t, []))}" for t in TIERS)
    return ([f"- gpu-wiki: `{wiki}` is present; its index `{route['index']}` routed {len(refs) - 1} doc(s) for "
             f"{op['vendor']} / {op['arch']} / {op['framework']} / {op['pattern']} ({counts}); the list is in "
             "`plans/v0_plan.md`."], refs)


def spec_sources(op: dict) -> list[dict]:
    _name, spec = compute_utilization.gpu_spec(op["gpu"])
    seen, refs = set(), []
    for item in [spec["hbm_bandwidth_gbps"], spec["compute_units"], *spec["dense_tflops"].values()]:
        src = item["source"]
        if src["url"] not in seen:
            seen.add(src["url"])
            refs.append({"path": src["url"], "source_type": SOURCE_TYPES.get(src.get("kind"), "other"), "note": src["title"]})
    return refs


def write_plan(ws: Path, op: dict, config: dict | str | None) -> Path:
    """plans/v0_plan.md. `config`: kernel.describe()'s dict, or a sentence on why it is not described."""
    name, spec = compute_utilization.gpu_spec(op["gpu"])
    p1 = op["phase1"]
    peak_t = spec["dense_tflops"][op["dtype"]]["value"]  # None where the vendor publishes no figure (MI308X)
    peak_b = spec["hbm_bandwidth_gbps"]["value"]
    rows = []
    for c in op["cases"]:
        flops, nbytes = compute_utilization.case_work(op, c)
        floor_us = compute_utilization.roofline(op["gpu"], op["dtype"], flops, nbytes)["roofline_floor_us"]
        rows.append([c["name"], c["role"], "x".join(map(str, c["dims"])), f"{flops:.3g}", f"{nbytes:.3g}",
                     f"{flops / nbytes:.3g}", f"{floor_us:.2f}", "yes" if c["timed"] else "no"])
    lines = [
        f"# V0 plan: `{op['op']}` ({op['pattern']}) on {name}",
        "",
        "Generated from `op.json` by kbaseline; it is the Phase-1 record the kernel was built against.",
        "",
        "## Phase 1: semantics",
        "",
        f"- **Pattern**: {op['pattern']}; **op**: `{op['op']}`: {op['math']}",
        f"- **Inputs and output**: {p1['inputs']} **Output shape**: {op['output']}.",
        f"- **Shapes**: {p1['shapes']}",
        f"- **dtype**: {op['dtype']} (`torch.{op['torch_dtype']}`); **precision**: {p1['precision']} "
        f"**Device**: {op['vendor']} GPU, one stream (torch's current).",
        f"- **Broadcast / masks**: {p1['masks']}",
        f"- **Boundaries**: {p1['boundaries']}",
        f"- **Accuracy**: rel_err = ||out - ref|| / ||ref|| < {op['tolerance']:g} against the reference in float64; "
        f"NaN or an unwritten element fails. **Special values**: {p1['special']}",
        f"- **Reference**: {op['reference']['description']}",
        "",
        "## Target and framework",
        "",
        f"- {name} -> {op['arch']} -> `{op['target']}` -> **{op['framework']}** (the mapping of the workflow, step 1.3)",
        (f"- Dense peaks used: {peak_t:g} TFLOP/s ({spec['dense_tflops'][op['dtype']]['kind']}), {peak_b:g} GB/s HBM; "
         f"ridge point {peak_t * 1e12 / (peak_b * 1e9):.1f} FLOP/byte." if peak_t else
         f"- Dense peaks used: no cited {op['dtype']} compute peak for {name} "
         f"({spec['dense_tflops'][op['dtype']].get('note', 'the vendor publishes none')}), so the floors below are "
         f"bandwidth floors only; {peak_b:g} GB/s HBM."),
        "",
        "Facts about the framework that this kernel relies on:",
        "",
        *[f"- {fact}" for fact in op["framework_facts"]],
        "",
        "## Cases and their roofline floors",
        "",
        f"FLOP = `{op['formulas']['flops']}` ({op['formulas']['flops_note']}); bytes = `{op['formulas']['bytes']}` "
        f"({op['formulas']['bytes_note']}). The floor is max(FLOP / peak, bytes / bandwidth): no kernel runs faster.",
        "",
        _table(["case", "role", "shape", "FLOP", "bytes", "FLOP/byte", "floor (us)", "timed"], rows),
        "",
        "## Phase 2: gpu-wiki route",
        "",
        *route_lines(wiki_route(op), op),
        "",
        "Cited hardware sources (`reference/gpu_specs.json`):",
        "",
        *[f"- {r['note']}: {r['path']}" for r in spec_sources(op)],
        "",
    ]
    if isinstance(config, dict):
        lines += ["## Kernel configuration (for the headline case)", "",
                  *[f"- **{k.replace('_', ' ')}**: {v}" for k, v in config.items()], ""]
    elif config:
        lines += ["## Kernel configuration (for the headline case)", "", f"{config[0].upper()}{config[1:]}.", ""]
    path = ws / "plans" / "v0_plan.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(lines))
    return path


def isa_section(isa: dict | None) -> list[str]:
    """The report's ISA section: the instruction-mix line and the targets table (from tools/isa_metrics.py)."""
    lines = ["## ISA metrics and targets", ""]
    if not isa:
        return lines + ["Not measured: the ISA was not read (run `python tools/isa_metrics.py`).", ""]
    lines.append(isa_metrics.summary(isa["metrics"]) if isa.get("metrics") else
                 "No compiled ISA in `build/`: run `python test_kernel.py --compile-only` (no GPU needed).")
    lines += ["", isa_metrics.markdown(isa["rows"]), "",
              "Targets come from the op's roofline position and `reference/gpu_specs.json` (see the workspace "
              "README); ISA rows are judged from the compiled kernel, performance rows only from a GPU run "
              "(`met` is `-` when it cannot be judged here). Recompute: `python tools/isa_metrics.py`.", ""]
    return lines


def roofline_section(roofline: dict | None) -> list[str]:
    lines = ["## Roofline", ""]
    if roofline and roofline.get("path") and Path(roofline["path"]).is_file():
        return lines + ["![roofline](results/roofline.png)", "", roofline["note"], ""]
    why = roofline["note"] if roofline else "not drawn (run `python tools/roofline.py`)"
    return lines + [f"No roofline plot: {why}", ""]


def route_bullets(route: dict) -> list[str]:
    return [f"- {tier}: `{d['path']}`" for tier, docs in route.get("tiers", {}).items() for d in docs]


def write_report(ws: Path, op: dict, results: dict | None, utilization: dict[str, dict], config: dict | str | None,
                 not_run_reason: str | None = None, compile_check: dict | None = None, isa: dict | None = None,
                 roofline: dict | None = None) -> Path:
    """baseline_report.md with the workflow's sections; NOT RUN (and why) when no results exist.

    config: kernel.describe()'s dict, or a sentence on why it is not described;
    isa: {"metrics": isa_metrics.read_workspace(...), "rows": isa_metrics.progress(...)};
    roofline: roofline.plot(...)'s {path, points, note}.
    """
    name = op["gpu"]
    ran = bool(results and results.get("ran"))
    route = wiki_route(op)
    wiki_lines, _ = wiki_status(op, route)
    status = "NOT RUN" if not ran else ("PASS" if results.get("all_passed") else "FAIL")
    lines = [
        f"# Baseline report: `{op['op']}` ({op['pattern']}, {op['dtype']}) for {name}",
        "",
        f"**Status: {status}**" + (f": {not_run_reason or results.get('not_run_reason')}" if not ran else
                                    f" on {results['device']}, {results['date']}"),
        "",
        "## Files",
        "",
        "- Baseline kernel: `kernel.py` "
        f"({op['framework']}, target `{op['target']}`)",
        "- Correctness and timing harness: `test_kernel.py` (raw results in `results/results.json`)",
        "- Reference: `reference.py`",
        "",
        "## PyTorch reference logic",
        "",
        f"`{op['op']}`: {op['math']}. {op['reference']['description']}",
        "",
        "## gpu-wiki paths learned and searched",
        "",
        *wiki_lines,
        *route_bullets(route),
        "- Hardware peaks: `reference/gpu_specs.json` (each figure cites its vendor datasheet).",
        "",
        "## Baseline configuration",
        "",
    ]
    lines += ([f"- **{k.replace('_', ' ')}**: {v}" for k, v in config.items()] if isinstance(config, dict) else
              [f"- ({config or 'the kernel module could not be imported here to describe its launch'})"])
    if compile_check:
        marks = ", ".join(f"`{c['marker']}` {c['expect']} ({'ok' if c['ok'] else 'NOT MET'})" for c in compile_check["checks"])
        lines += [f"- **Compiled ISA** ({compile_check['target']}, no GPU needed): {marks}"]
    lines += ["", "## Correctness", ""]
    if not ran:
        lines += [f"NOT RUN: {not_run_reason or results.get('not_run_reason')}. No case was executed, so no case "
                  "passed or failed. Run `python tools/run_baseline.py` on a matching GPU.", ""]
        lines += [_table(["case", "role", "shape", "status"],
                         [[c["name"], c["role"], "x".join(map(str, c["dims"])), "NOT_RUN"] for c in op["cases"]])]
    else:
        rows = [[r["name"], r.get("role", "-"), "x".join(map(str, r.get("dims", []))), _fmt(r.get("rel_err"), ".2e"),
                 r["status"], r.get("error", "")] for r in results["cases"]]
        lines += [f"Tolerance: rel_err < {op['tolerance']:g}. Per-case timeout {results.get('case_timeout_s')} s "
                  "(TEST_TIMEOUT_SEC).", "",
                  _table(["case", "role", "shape", "rel_err", "status", "note"], rows), "",
                  f"**Max rel_err: {_fmt(results.get('max_rel_err'), '.2e')}**; "
                  f"{sum(r['status'] == 'PASS' for r in results['cases'])}/{len(results['cases'])} PASS."]
    lines += ["", "## Baseline performance", ""]
    if not ran or not utilization:
        lines += ["NOT RUN: no timing was taken." if not ran else "No case was timed (timed cases failed correctness)."]
    else:
        rows = []
        for case_name, u in utilization.items():
            rows.append([case_name, f"{u['latency_us']:.1f}", f"{u['tflops']:.3f}", f"{u['bandwidth_gbps']:.0f}",
                         f"{u['tflops_peak_utilization_pct']:.2f}", f"{u['bandwidth_peak_utilization_pct']:.1f}",
                         _fmt(u.get("copy_bandwidth_utilization_pct"), ".1f"),
                         f"{u['torch_latency_us']:.1f}", f"{u['speedup_vs_torch']:.2f}x",
                         _fmt(u.get("waves"), ".1f"), u["bound"]])
        any_u = next(iter(utilization.values()))
        copy = results.get("device_copy")
        lines += [
            _table(["case", "latency (us)", "TFLOPS", "GB/s", "TFLOPS % of peak", "BW % of peak", "BW % of copy",
                    "torch eager (us)", "speedup", "waves", "bound"], rows),
            "",
            (f"Measured ceiling in the same run: a 1 GiB device-to-device copy moved {copy['gbps']:.0f} GB/s "
             "(read + write bytes), the 'BW % of copy' column's denominator." if copy else ""),
            "",
            f"Peaks (dense): {any_u['peak_tflops']:g} TFLOP/s {op['dtype']} ({any_u['sources']['compute']['title']}); "
            f"{any_u['peak_bandwidth_gbps']:g} GB/s HBM ({any_u['sources']['bandwidth']['title']}). Latency is the "
            "median of CUDA-event timings with a cold L2; torch eager is timed the same way in the same run.",
            "",
            "Reproduce one row with the workflow's command:",
            "",
            "```",
            any_u["command"],
            "```",
        ]
    lines += ["", *roofline_section(roofline), *isa_section(isa)]
    path = ws / "baseline_report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def load_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None
