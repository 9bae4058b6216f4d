"""Write plans/v0_plan.md and baseline_report.md from op.json, the gpu-wiki and the measured results.

Nothing in either document is typed by hand: the plan is Phase 1 of the workflow (semantics, target,
framework facts) taken from op.json, plus Phase 2's gpu-wiki route (tools/wiki_route.py: the tiers P0..P4 of
either wiki layout, filtered to this op's GPU, vendor, arch, DSL and pattern, listing only paths and records that
exist). The report is Phase 4 (configuration, correctness per case, performance and utilization, the roofline
plot, the ISA table) taken from results/. Every peak either cites its datasheet (reference/gpu_specs.json) and,
with a wiki present, the wiki's source for it, a disagreement shown beside both figures. When nothing ran, the
report says "NOT RUN" and why, and shows no measured number.
"""

from __future__ import annotations

from pathlib import Path

import compute_utilization
import files
import isa_metrics
import reference_kernels
import wiki_route
from wiki_route import TIERS


# gpu_specs.json source kinds -> memory `references[].source_type`
SOURCE_TYPES = {"datasheet": "datasheet", "whitepaper": "whitepaper", "product-page": "doc", "gpu-wiki": "gpu-wiki"}


def _table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _fmt(value, spec=".3g"):
    return "-" if value is None else format(value, spec)


# --------------------------------------------------------------------------------------------
# the gpu-wiki route (tools/wiki_route.py) in the plan, the report and the memory records
# --------------------------------------------------------------------------------------------

def _tier_title(tier: str, op: dict) -> str:
    what = {"P0": op["gpu"], "P1": op["vendor"], "P2": op["arch"], "P3": op["framework"],
            "P4": f"{op['vendor']}/{op['framework']}; about {op['pattern']} / {op['op']}"}
    return f"{tier} {TIERS[tier]} ({what[tier]})"


def _is(absent: str) -> str:
    """'absent on this machine' -> 'is absent on this machine'; 'a FIFO, not a folder' -> 'is a FIFO, not a folder'."""
    return f"is {absent}"


def _read_first(route: dict) -> str:
    return ", ".join(f"`{p}`" for p in route["index"])


def wiki_search_log(op: dict, route: dict) -> list[dict]:
    """memory `search_log`: the index read, then one entry per tier naming what it routed (paths or record ids)."""
    if not route["present"]:
        return [{"query": "gpu-wiki index", "where": str(route["wiki"]),
                 "finding": f"{route['absent']}: nothing read; peaks from reference/gpu_specs.json"}]
    read = "tier tables P0-P4 read" if route["layout"] == "markdown" else "record indexes read directly"
    log = [{"query": "gpu-wiki index", "where": ", ".join(map(str, route["index"])),
            "finding": f"{route['layout']} layout: {read}"}]
    for tier, docs in route["tiers"].items():
        names = ", ".join(wiki_route.entry_name(d, route["wiki"]) for d in docs) or "nothing matched"
        log.append({"query": _tier_title(tier, op), "where": str(route["wiki"]), "finding": f"{len(docs)}: {names}"})
    kernels = kernels_of(op, route)["kernels"]
    log.append({"query": f"reference kernels: {op['vendor']} / {op['arch']} / {op['framework']} / {op['pattern']}",
                "where": str(route["wiki"]), "finding": f"{len(kernels)}: " + (", ".join(
                    k["rel"] for k in kernels[:MAX_KERNELS]) or "nothing matched")})
    if route["missing"]:
        log.append({"query": "named by the index for this op but absent", "where": str(route["wiki"]),
                    "finding": ", ".join(route["missing"])})
    return log


def route_lines(route: dict, op: dict) -> list[str]:
    """Markdown lines of the route for the plan: one list per tier, only paths and records that exist."""
    if not route["present"]:
        return wiki_status(op, route)[0]
    scope = f"{op['vendor']} / {op['arch']} / {op['framework']} / {op['pattern']}"
    if route.get("error"):
        return [f"The gpu-wiki at `{route['wiki']}` ({route['layout']} layout) could not be read ({route['error']}), "
                "so nothing was routed; peaks from `reference/gpu_specs.json`."]
    lines = [f"Read {_read_first(route)} ({route['layout']} layout) and followed its tiers for {scope}; every "
             f"{'path' if route['layout'] == 'markdown' else 'record'} below exists and none is another vendor's or "
             "architecture's.", ""]
    for tier in TIERS:
        lines.append(f"**{_tier_title(tier, op)}**")
        docs = route["tiers"].get(tier, [])
        lines += [(f"- `{d['id']}`" if d["id"] else f"- `{d['path']}`") + (f": {d['text']}" if d["text"] else "")
                  for d in docs] or ["- (nothing in the wiki matches this tier for this op)"]
        lines.append("")
    if route["missing"]:
        lines.append("Named by the wiki for this op but absent on disk, so not used: "
                     + ", ".join(f"`{m}`" for m in route["missing"]))
    return lines


def kernels_of(op: dict, route: dict) -> dict:
    """The wiki's reference kernels for this op (tools/reference_kernels.py), found once per route."""
    if "kernels" not in route:
        route["kernels"] = reference_kernels.find(op, route)
    return route["kernels"]


KERNEL_GROUPS = {"op": "same DSL, same op", "pattern": "same DSL, same pattern"}
MAX_KERNELS = 30  # per group in the plan; memory records them all


def reference_kernel_lines(op: dict, route: dict) -> list[str]:
    """The plan's list of the wiki's reference kernels: same DSL and op first, then same DSL and pattern."""
    lines = [f"### Reference kernels ({op['vendor']} / {op['arch']} / {op['framework']} / {op['pattern']})", ""]
    if not route["present"] or route.get("error"):
        return lines + ["None read: no gpu-wiki was read (above).", ""]
    found = kernels_of(op, route)
    where = ("`reference-kernels/<vendor>/<arch>/<dsl>/<project>/` of this architecture (and its generic tier) and "
             "DSL" if route["layout"] == "markdown" else "the routed records that cite code in this DSL")
    lines += [f"From {where}, read with `ast` (never imported); other vendors, architectures and DSLs are never "
              f"listed. {found['note'] + '. ' if found['note'] else ''}Each: its one-line description, then what it "
              "defines.", ""]
    for match, title in KERNEL_GROUPS.items():
        group = [k for k in found["kernels"] if k["match"] == match]
        lines.append(f"**{title[0].upper()}{title[1:]}** ({len(group)})")
        lines += [f"- `{k['rel']}`" + (f": {k['text']}" if k["text"] else "") + f". Defines: {reference_kernels.describe(k)}"
                  for k in group[:MAX_KERNELS]] or ["- (none in the wiki)"]
        if len(group) > MAX_KERNELS:
            lines.append(f"- (+{len(group) - MAX_KERNELS} more; all in memory/v0.json `references`)")
        lines.append("")
    return lines


def wiki_status(op: dict, route: dict | None = None) -> tuple[list[str], list[dict]]:
    """Short lines about the gpu-wiki for the report, and memory `references` entries for every routed path or
    record (a record's entry carries its `record_id`, the wiki's stable name for it)."""
    route = route or wiki_route.route(op)
    wiki = route["wiki"]
    if not route["present"]:
        return ([f"- gpu-wiki: `{wiki}` {_is(route['absent'])}, so no wiki path was read. Peaks and bandwidth "
                 f"come from the shipped `reference/gpu_specs.json`, whose sources are listed below."], [])
    refs = [{"path": str(p), "source_type": "gpu-wiki", "note": f"{route['layout']} index (Phase 2 entry point)"}
            for p in route["index"]]
    for tier, docs in route["tiers"].items():
        for d in docs:
            ref = {"path": str(d["path"]), "source_type": "gpu-wiki",
                   "note": f"{tier} {TIERS[tier]}" + (f": {d['text']}"[:300] if d["text"] else "")}
            refs.append({**ref, "record_id": d["id"]} if d["id"] else ref)
    for k in kernels_of(op, route)["kernels"]:  # the reference kernels, same op before same pattern
        ref = {"path": str(k["path"]), "source_type": "gpu-wiki",
               "note": (f"reference kernel ({KERNEL_GROUPS[k['match']]}): {k['text']}; defines "
                        f"{reference_kernels.describe(k)}")[:300]}
        refs.append({**ref, "record_id": k["id"]} if k.get("id") else ref)
    counts = ", ".join(f"{t} {len(route['tiers'].get(t, []))}" for t in TIERS)
    what = "doc(s)" if route["layout"] == "markdown" else "record(s)"
    return ([f"- gpu-wiki: `{wiki}` is present ({route['layout']} layout); {_read_first(route)} routed "
             f"{len(refs) - len(route['index'])} {what} for {op['vendor']} / {op['arch']} / {op['framework']} / "
             f"{op['pattern']} ({counts}); the list is in `plans/v0_plan.md`."], refs)


def spec_sources(op: dict, specs: dict | None = None) -> list[dict]:
    """memory `references` for the peaks in use: each figure's source (a datasheet, or the gpu-wiki's own figure)."""
    _name, spec = compute_utilization.gpu_spec(op["gpu"], specs)
    seen, refs = set(), []
    for item in [spec["hbm_bandwidth_gbps"], spec["compute_units"], *spec["dense_tflops"].values()]:
        src = item["source"]
        if src["url"] not in seen:
            seen.add(src["url"])
            refs.append({"path": src["url"], "source_type": SOURCE_TYPES.get(src.get("kind"), "other"), "note": src["title"]})
    return refs


def cited(op: dict, route: dict | None = None) -> dict:
    """reference/gpu_specs.json with this op's GPU checked against the gpu-wiki's figures (wiki_route.cited_specs)."""
    return wiki_route.cited_specs(compute_utilization.load_specs(), op, route)


# --------------------------------------------------------------------------------------------
# the kernel demo (op.json `demo`: the user's existing kernel, read at bake time, run by test_kernel.py)
# --------------------------------------------------------------------------------------------

DEMO_KINDS = {"triton": "a Triton kernel", "cuda-extension": "a CUDA extension", "cutedsl": "a CuTe DSL kernel",
              "flydsl": "a FlyDSL kernel", "python": "a Python callable"}


def demo_plan_lines(op: dict) -> list[str]:
    """Phase 1 on the user's kernel demo: what it is, how it is called, what was read of it without running it, and
    what V0 does differently."""
    demo = op.get("demo")
    if not demo:
        return []
    role = ("a peer: checked against the reference above, V0 checked against it too, and timed beside V0 and torch "
            "(a disagreement is reported, not a V0 failure)" if demo["role"] == "peer" else
            "the reference: no PyTorch function was given, so V0 (the named op's built-in kernel) is checked against "
            "its output on every case where it runs, and against the op's PyTorch expression where it does not")
    lines = ["", f"### Your kernel demo: `{demo['function']}` ({DEMO_KINDS.get(demo['kind'], demo['kind'])})", "",
             f"- **File**: `{demo['file']}`, copied from `{demo['original']}`"
             + (f" with {', '.join(f'`{c}`' for c in demo['copied'][1:])}" if len(demo["copied"]) > 1 else "")
             + ". Read at bake time (parsed, never imported); imported only by `test_kernel.py` on the GPU.",
             f"- **Role**: {role}.",
             f"- **Called as** `{demo['call']}`: the op's inputs {demo['mapping']}, on the same inputs as the reference "
             "and V0 in every case.",
             f"- **Signature**: `{demo['signature']}` (line {demo['line']})" if demo["signature"] else
             f"- **Signature**: not readable without running it (`{demo['function']}` is assigned or imported there)",
             f"- **Needs**: {', '.join(f'`{p}`' for p in demo['packages']) or 'nothing outside its folder'} (a package "
             "missing on the GPU machine makes its cases MISSING_PACKAGE; V0's flow goes on)"]
    triton = demo.get("triton")
    if triton:
        lines.append("- **Triton, as written** (read with `ast`):")
        for jit in triton["jit"]:
            lines.append(f"  - `@triton.jit {jit['name']}` (line {jit['line']}): constexpr "
                         f"{', '.join(f'`{c}`' for c in jit['constexprs']) or 'none'}; {len(jit['params'])} parameters"
                         + (f"; autotune configs {'; '.join(f'`{c}`' for c in jit['autotune'])}" if jit["autotune"] else ""))
        for launch in triton["launches"]:
            meta = ", ".join(f"`{k}={v}`" for k, v in launch["meta"].items()) or "no meta-parameters"
            lines.append(f"  - launched in `{launch['caller']}` (line {launch['line']}): `{launch['kernel']}"
                         f"[{launch['grid']}]`, {meta}")
        if triton["constants"]:
            lines.append("  - module constants: " + ", ".join(f"`{k} = {v}`" for k, v in triton["constants"].items()))
    lines.append(f"- **What V0 does differently**: your demo is {DEMO_KINDS.get(demo['kind'], demo['kind'])}"
                 + (" (one program per launch-grid cell, block sizes as above)" if triton else "")
                 + f"; V0 is `kernel.py` in {op['framework']} for `{op['target']}`: {op['baseline_summary']}.")
    return lines


def demo_report_lines(op: dict, results: dict | None) -> list[str]:
    """The report's section on the kernel demo: per case, its agreement and, where timed, its two times beside V0's
    and torch's (one process, the same inputs)."""
    demo = op.get("demo")
    if not demo:
        return []
    lines = ["## Your kernel demo", "",
             f"`{demo['function']}` (`{demo['file']}`, {DEMO_KINDS.get(demo['kind'], demo['kind'])}), called as "
             f"`{demo['call']}`; role: {'peer' if demo['role'] == 'peer' else 'the reference (no PyTorch function)'}.",
             ""]
    if not results or not results.get("ran"):
        return lines + ["Not run: nothing ran on this machine, so the demo was neither checked nor timed. "
                        "`python tools/run_baseline.py` on the GPU runs it beside V0.", ""]
    summary = results.get("demo") or {}
    rows = []
    for r in results["cases"]:
        d = r.get("demo")
        if not d:
            continue
        rows.append([r["name"], d["status"], _fmt(d.get("rel_err"), ".2e"), _fmt(d.get("v0_rel_err"), ".2e"),
                     _fmt(r.get("latency_us"), ".1f"), _fmt(r.get("demo_latency_us"), ".1f"),
                     _fmt(r.get("torch_latency_us"), ".1f"),
                     f"{r['speedup_vs_demo']:.2f}x" if r.get("speedup_vs_demo") else "-",
                     _fmt(r.get("call_us"), ".1f"), _fmt(r.get("demo_call_us"), ".1f"), _fmt(r.get("torch_call_us"), ".1f"),
                     (d.get("error") or r.get("demo_timing_error") or "").replace("|", "/")[:160]])
    disagree = summary.get("disagree", 0)
    failed = sum(summary.get(k, 0) for k in ("error", "timeout", "missing_package"))
    verdict = (f"It agrees with the reference on {summary.get('agree', 0)} of {len(rows)} case(s)"
               + (f"; it DISAGREES on {disagree}" if disagree else "")
               + (f"; it gave no output on {failed} (see the status)" if failed else "") + ".")
    if demo["role"] == "peer":
        verdict += " A disagreement is your kernel's, not a V0 failure: V0 is judged against the reference alone."
    else:
        verdict += (" It is the reference here: V0's status above is judged against the demo's output where the demo "
                    "ran, and against the op's PyTorch expression where it did not.")
    lines += [verdict, "",
              _table(["case", "demo", "demo rel_err vs reference", "V0 rel_err vs demo", "V0 GPU (us)",
                      "demo GPU (us)", "torch GPU (us)", "V0 vs demo", "V0 call (us)", "demo call (us)",
                      "torch call (us)", "note"], rows), "",
              "GPU time: median of CUDA events with a cold L2; call: warm back-to-back calls, host included. The demo, "
              "V0 and torch are timed in the same process on the same inputs, so 'V0 vs demo' (demo time / V0 time) "
              "is one of like measurements. Statuses: AGREE / DISAGREE (rel_err against the reference, the same "
              "tolerance), ERROR (it raised), TIMEOUT (TEST_TIMEOUT_SEC), MISSING_PACKAGE.", ""]
    return lines


def write_plan(ws: Path, op: dict, config: dict | str | None, route: dict | None = None,
               specs: dict | None = None) -> Path:
    """plans/v0_plan.md. `config`: kernel.describe()'s dict, or a sentence on why it is not described; route:
    wiki_route.route(op); specs: cited(op, route) (both worked out here when not given)."""
    route = route or wiki_route.route(op)
    specs = specs or cited(op, route)
    name, spec = compute_utilization.gpu_spec(op["gpu"], specs)
    p1 = op["phase1"]
    peak_t = spec["dense_tflops"][op["dtype"]]["value"]  # None where the vendor publishes no figure (MI308X)
    peak_b = spec["hbm_bandwidth_gbps"]["value"]
    rows = []
    for c in op["cases"]:
        flops, nbytes = compute_utilization.case_work(op, c)
        floor_us = compute_utilization.roofline(op["gpu"], op["dtype"], flops, nbytes, specs)["roofline_floor_us"]
        rows.append([c["name"], c["role"], "x".join(map(str, c["dims"])), f"{flops:.3g}", f"{nbytes:.3g}",
                     f"{flops / nbytes:.3g}", f"{floor_us:.2f}", "yes" if c["timed"] else "no"])
    lines = [
        f"# V0 plan: `{op.get('title', op['op'])}` ({op['pattern']}) on {name}",
        "",
        "Generated from `op.json` by kbaseline; it is the Phase-1 record the kernel was built against.",
        "",
        "## Phase 1: semantics",
        "",
        f"- **Pattern**: {op['pattern']}; **op**: `{op.get('title', op['op'])}`: {op['math']}",
        f"- **Inputs and output**: {p1['inputs']} **Output shape**: {op['output']}.",
        f"- **Shapes**: {p1['shapes']}",
        f"- **dtype**: {op['dtype']} (`torch.{op['torch_dtype']}`); **precision**: {p1['precision']} "
        f"**Device**: {op['vendor']} GPU, one stream (torch's current).",
        f"- **Broadcast / masks**: {p1['masks']}",
        f"- **Boundaries**: {p1['boundaries']}",
        f"- **Accuracy**: rel_err = ||out - ref|| / ||ref|| < {op['tolerance']:g} against the reference in float64; "
        f"NaN or an unwritten element fails. **Special values**: {p1['special']}",
        f"- **Reference**: {op['reference']['description']}",
        *demo_plan_lines(op),
        "",
        "## Target and framework",
        "",
        f"- {name} -> {op['arch']} -> `{op['target']}` -> **{op['framework']}** (the mapping of the workflow, step 1.3)",
        (f"- Dense peaks used: {peak_t:g} TFLOP/s ({spec['dense_tflops'][op['dtype']]['kind']}), {peak_b:g} GB/s HBM; "
         f"ridge point {peak_t * 1e12 / (peak_b * 1e9):.1f} FLOP/byte." if peak_t else
         f"- Dense peaks used: no cited {op['dtype']} compute peak for {name} "
         f"({spec['dense_tflops'][op['dtype']].get('note', 'the vendor publishes none')}), so the floors below are "
         f"bandwidth floors only; {peak_b:g} GB/s HBM."),
        *[f"  - {line}" for line in wiki_route.peak_lines(spec, op["dtype"])],
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
        *route_lines(route, op),
        "",
        *reference_kernel_lines(op, route),
        "Cited hardware sources (`reference/gpu_specs.json`, and the gpu-wiki where it gives a figure ours lacks):",
        "",
        *[f"- {r['note']}: {r['path']}" for r in spec_sources(op, specs)],
        "",
    ]
    if isinstance(config, dict):
        lines += ["## Kernel configuration (for the headline case)", "",
                  *[f"- **{k.replace('_', ' ')}**: {v}" for k, v in config.items()], ""]
    elif config:
        lines += ["## Kernel configuration (for the headline case)", "", f"{config[0].upper()}{config[1:]}.", ""]
    return files.write_doc(ws, "plans/v0_plan.md", "\n".join(lines))


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
    return [f"- {tier}: `{wiki_route.entry_name(d, route['wiki'])}`" for tier, docs in route.get("tiers", {}).items()
            for d in docs]


def peak_bullets(op: dict, specs: dict) -> list[str]:
    """Where the peaks in use come from: the datasheets, and (with a wiki) the wiki's source beside each one."""
    _name, spec = compute_utilization.gpu_spec(op["gpu"], specs)
    wiki = wiki_route.peak_lines(spec, op["dtype"])
    return ([f"- Hardware peaks: {line}" for line in wiki] if wiki else
            ["- Hardware peaks: `reference/gpu_specs.json` (each figure cites its vendor datasheet)."])


def write_report(ws: Path, op: dict, results: dict | None, utilization: dict[str, dict], config: dict | str | None,
                 not_run_reason: str | None = None, compile_check: dict | None = None, isa: dict | None = None,
                 roofline: dict | None = None, route: dict | None = None, specs: dict | None = None) -> Path:
    """baseline_report.md with the workflow's sections; NOT RUN (and why) when no results exist.

    config: kernel.describe()'s dict, or a sentence on why it is not described;
    isa: {"metrics": isa_metrics.read_workspace(...), "rows": isa_metrics.progress(...)};
    roofline: roofline.plot(...)'s {path, points, note}; route, specs: as write_plan's.
    """
    name = op["gpu"]
    ran = bool(results and results.get("ran"))
    route = route or wiki_route.route(op)
    specs = specs or cited(op, route)
    wiki_lines, _ = wiki_status(op, route)
    status = "NOT RUN" if not ran else ("PASS" if results.get("all_passed") else "FAIL")
    lines = [
        f"# Baseline report: `{op.get('title', op['op'])}` ({op['pattern']}, {op['dtype']}) for {name}",
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
        f"`{op.get('title', op['op'])}`: {op['math']}. {op['reference']['description']}",
        "",
        "## gpu-wiki paths learned and searched",
        "",
        *wiki_lines,
        *route_bullets(route),
        *peak_bullets(op, specs),
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
                         _fmt(u.get("torch_compile_latency_us"), ".1f"),
                         f"{u['speedup_vs_torch_compile']:.2f}x" if u.get("speedup_vs_torch_compile") else "-",
                         _fmt(u.get("waves"), ".1f"), u["bound"], _fmt(u.get("call_us"), ".1f"),
                         _fmt(u.get("torch_call_us"), ".1f"), u.get("call_bound") or "-",
                         _fmt(u.get("first_call_s"), ".2f")])
        any_u = next(iter(utilization.values()))
        copy = results.get("device_copy")
        lines += [
            _table(["case", "GPU time (us)", "TFLOPS", "GB/s", "TFLOPS % of peak", "BW % of peak", "BW % of copy",
                    "torch eager GPU (us)", "speedup", "torch.compile GPU (us)", "vs compile", "waves", "bound", "call (us)", "torch call (us)",
                    "call bound by", "first call (s)"], rows),
            "",
            (f"Measured ceiling in the same run: a 1 GiB device-to-device copy moved {copy['gbps']:.0f} GB/s "
             "(read + write bytes), the 'BW % of copy' column's denominator." if copy else ""),
            "",
            f"Peaks (dense): {any_u['peak_tflops']:g} TFLOP/s {op['dtype']} ({any_u['sources']['compute']['title']}); "
            f"{any_u['peak_bandwidth_gbps']:g} GB/s HBM ({any_u['sources']['bandwidth']['title']}). GPU time is the "
            "median of CUDA-event timings with a cold L2: what the kernel costs the GPU. Call latency is what a "
            "caller waits per call in warm, back-to-back calls, host included; 'call bound by' says which side "
            "sets it (host: submitting a call takes as long as running it, so launch cost is the lever; gpu: the "
            "kernel is). torch eager is timed both ways in the same run, on the same inputs. 'first call' is the "
            "case's first run() with its sync: it includes compiling any kernel variant that case is the first to "
            f"need (importing kernel.py and its DSL took {_fmt(results.get('kernel_import_s'), '.2f')} s more, once).",
            "",
            *(["torch.compile (default mode, compiled per case) is the second baseline; where it could not run: "
               + "; ".join(f"{n}: {u['torch_compile_error']}" for n, u in utilization.items()
                           if u.get("torch_compile_error")), ""]
              if any(u.get("torch_compile_error") for u in utilization.values()) else []),
            "Reproduce one row with the workflow's command:",
            "",
            "```",
            any_u["command"],
            "```",
        ]
        if any_u.get("citations"):  # with a gpu-wiki: its source beside each peak above
            lines += ["", "Peaks against the gpu-wiki:", "", *[f"- {line}" for line in any_u["citations"]]]
    lines += ["", *demo_report_lines(op, results), *roofline_section(roofline), *isa_section(isa)]
    return files.write_doc(ws, "baseline_report.md", "\n".join(lines) + "\n")


def load_json(path: Path) -> dict | None:
    return files.load_json_if_file(path)
