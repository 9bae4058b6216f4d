"""Write plans/v0_plan.md and baseline_report.md from op.json and the measured results.

Nothing in either document is typed by hand: the plan is Phase 1 of the workflow (semantics, target,
framework facts, knowledge-base paths) taken from op.json; the report is Phase 4 (configuration,
correctness per case, performance and utilization) taken from results/. When nothing ran, the
report says "NOT RUN" and why, and shows no number.
"""

from __future__ import annotations

import json
from pathlib import Path

import compute_utilization


# gpu_specs.json source kinds -> memory `references[].source_type`
SOURCE_TYPES = {"datasheet": "datasheet", "whitepaper": "whitepaper", "product-page": "doc"}


def _table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _fmt(value, spec=".3g"):
    return "-" if value is None else format(value, spec)


def wiki_status(op: dict) -> tuple[list[str], list[dict]]:
    """Lines for the plan/report about the gpu-wiki, and memory `references` entries for what exists."""
    wiki = Path(op["gpu_wiki"])
    readme = wiki / "README.md"
    if not readme.is_file():
        return ([f"- gpu-wiki: `{wiki}` is absent on this machine, so no wiki path was read. Peaks and bandwidth "
                 f"come from the shipped `reference/gpu_specs.json`, whose sources are listed below."], [])
    return ([f"- gpu-wiki: `{wiki}` is present; its index `{readme}` is the entry point for Phase 2 "
             f"(read it and follow its tiers for {op['vendor']} / {op['arch']} / {op['framework']})."],
            [{"path": str(readme), "source_type": "gpu-wiki", "note": "knowledge-base index (Phase 2 entry point)"}])


def spec_sources(op: dict) -> list[dict]:
    _name, spec = compute_utilization.gpu_spec(op["gpu"])
    seen, refs = set(), []
    for item in [spec["hbm_bandwidth_gbps"], spec["compute_units"], *spec["dense_tflops"].values()]:
        src = item["source"]
        if src["url"] not in seen:
            seen.add(src["url"])
            refs.append({"path": src["url"], "source_type": SOURCE_TYPES.get(src.get("kind"), "other"), "note": src["title"]})
    return refs


def write_plan(ws: Path, op: dict, config: dict | None) -> Path:
    name, spec = compute_utilization.gpu_spec(op["gpu"])
    peak_t = spec["dense_tflops"][op["dtype"]]["value"]
    peak_b = spec["hbm_bandwidth_gbps"]["value"]
    wiki_lines, _ = wiki_status(op)
    rows = []
    for c in op["cases"]:
        names = c["vars"]
        flops = compute_utilization.evaluate(op["formulas"]["flops"], names)
        nbytes = compute_utilization.evaluate(op["formulas"]["bytes"], names)
        floor_us = max(flops / (peak_t * 1e12), nbytes / (peak_b * 1e9)) * 1e6
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
        f"- **Inputs**: {', '.join(f'`{n}`' for n in op['inputs'])}, each the same shape as the output; "
        f"**output**: one tensor of that shape.",
        "- **Shapes**: any contiguous 1-D or 2-D shape; the cases below. **Strides**: contiguous row-major "
        "(the kernel views every tensor as 1-D of `numel` elements); non-contiguous inputs are refused.",
        f"- **dtype**: {op['dtype']} in and out (`torch.{op['torch_dtype']}`); **math**: fp32 registers, one "
        f"rounding on the store. **Layout**: row-major. **Device**: {op['vendor']} GPU, one stream (torch's current).",
        "- **Broadcast / masks**: none; all tensors have one shape. **Boundaries**: sizes that are not a multiple "
        "of the 128-bit vector or of the CTA tile are handled by per-element predicates in the last CTA.",
        f"- **Accuracy**: rel_err = ||out - ref|| / ||ref|| < {op['tolerance']:g} against the reference in float64; "
        "NaN or an unwritten element fails. Special values: NaN propagates as in torch.",
        f"- **Reference**: {op['reference']['description']}",
        "",
        "## Target and framework",
        "",
        f"- {name} -> {op['arch']} -> `{op['target']}` -> **{op['framework']}** (the mapping of the workflow, step 1.3)",
        f"- Dense peaks used: {peak_t:g} TFLOP/s ({spec['dense_tflops'][op['dtype']]['kind']}), {peak_b:g} GB/s HBM; "
        f"ridge point {peak_t * 1e12 / (peak_b * 1e9):.1f} FLOP/byte.",
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
        "## Phase 2: knowledge sources",
        "",
        *wiki_lines,
        *[f"- {r['note']}: {r['path']}" for r in spec_sources(op)],
        "",
    ]
    if config:
        lines += ["## Kernel configuration (for the headline case)", "",
                  *[f"- **{k.replace('_', ' ')}**: {v}" for k, v in config.items()], ""]
    path = ws / "plans" / "v0_plan.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(lines))
    return path


def write_report(ws: Path, op: dict, results: dict | None, utilization: dict[str, dict], config: dict | None,
                 not_run_reason: str | None = None, compile_check: dict | None = None) -> Path:
    """baseline_report.md with the workflow's sections; NOT RUN (and why) when no results exist."""
    name = op["gpu"]
    ran = bool(results and results.get("ran"))
    wiki_lines, _ = wiki_status(op)
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
        "- Hardware peaks: `reference/gpu_specs.json` (each figure cites its vendor datasheet).",
        "",
        "## Baseline configuration",
        "",
    ]
    lines += ([f"- **{k.replace('_', ' ')}**: {v}" for k, v in config.items()] if config else
              ["- (the kernel module could not be imported here to describe its launch)"])
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
    path = ws / "baseline_report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def load_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None
