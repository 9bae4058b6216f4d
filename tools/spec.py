"""Build op.json, the workspace's single spec, once: in the pre-gen hook, from the validated inputs.

Every fact a workspace needs is frozen here from the registry (pattern, DSL, cell) and the catalogue (GPU, dtype),
so no workspace file imports the template side, and the README, plan, report and memory are all written from
this one file (by the workspace's own tools). The pre-gen hook writes it into the new workspace folder; the
post-gen hook (tools/scaffold.py) reads it back rather than working anything out again.
"""

from __future__ import annotations

import json
import os

from tools import catalog, demo, lower, registry, shapes
from tools.catalog import ARCHS, DTYPES, GPUS, output_torch_dtype, torch_dtype
from tools.validate import CHECKS as INPUTS
from tools.validate import LOWERED, check, default_op_name, validate


def _reference(resolved: dict, pattern) -> dict:
    logic = resolved["pytorch_logic"]
    if logic:
        beside = f" with the modules and files it uses from its folder ({', '.join(logic['siblings'])})" if logic["siblings"] else ""
        mapping = "by name" if resolved["op"] == LOWERED else logic["mapping"]
        kernel = (f" The kernel computes it too: traced and lowered into the {resolved['pattern_name']} cell "
                  "(lowered.py)." if resolved["op"] == LOWERED else
                  f" The kernel is the built-in `{resolved['op']}`, which does not implement this function"
                  + (f" (it cannot be lowered: {logic['not_lowered']})" if logic.get("not_lowered") else
                     " (an op was named, so its built-in kernel was kept)")
                  + "; its cases FAIL wherever the two differ.")
        return {"source": "user", "file": "user_logic.py", "original": logic["path"], "function": logic["function"],
                "mapping": mapping, "siblings": logic["siblings"],
                "description": f"The user's `{logic['function']}` from {logic['path']} (copied to user_logic.py"
                               f"{beside}), given the inputs {mapping}.{kernel}"}
    return {"source": "built-in", "description": "Built in: `reference.py` returns the plain PyTorch expression of the "
                                                 f"op (evaluated in float64 for correctness); {pattern.BASELINE}."}


def _wiki(gpu_name: str, gpu: dict, dsl, pattern, cell: dict) -> dict:
    """What the Phase-2 route (the workspace's tools/wiki_route.py) matches a gpu-wiki against, as data.

    `arch_names` are this architecture's names (the catalogue's, its GPUs' and its compile target's) and
    `other_arch_names` every other architecture's and GPU's, so that a folder, file or record naming one of those and
    none of ours is not this op's; `other_vendors` likewise. `words` are the pattern's (and the cell's) keywords for
    matching documents by name or description; `families` the wiki's operator families of the pattern, matched exactly
    against its JSON records.
    """
    arch = gpu["arch"]
    own = [*ARCHS[arch]["wiki_names"], *(g.lower() for g, v in GPUS.items() if v["arch"] == arch)]
    target = gpu["target"].lower().replace("sm_", "sm")
    return {"gpu": gpu_name.lower(), "vendor": gpu["vendor"], "arch": arch,
            "arch_names": own + ([target] if target not in own else []), "dsl_names": dsl.WIKI_NAMES,
            "other_vendors": sorted({a["vendor"] for a in ARCHS.values()} - {gpu["vendor"]}),
            "other_arch_names": [*(n for name, a in ARCHS.items() if name != arch for n in a["wiki_names"]),
                                 *(g.lower() for g, v in GPUS.items() if v["arch"] != arch)],
            "words": [*pattern.WIKI_WORDS, *cell.get("wiki_words", [])], "families": pattern.WIKI_FAMILIES}


def _lowering(resolved: dict, pattern, cell: dict) -> dict:
    """op.json's lowering facts: the IR and what the records say (the kernel is the user's function, or why not)."""
    logic = resolved["pytorch_logic"]
    if not logic:
        return {}
    if resolved["op"] != LOWERED:
        reason = logic.get("not_lowered") or "an op was named, so its built-in kernel was kept"
        return {"lowering": {"status": "not lowered", "function": logic["function"], "reason": reason},
                "pitfalls": [*cell["pitfalls"], {"pitfall": f"the kernel is the built-in `{resolved['op']}`, not the "
                                                            f"user's `{logic['function']}`: {reason}",
                                                 "fix": "re-bake with pattern=auto (or the op's pattern and the "
                                                        "default op) once the function lowers; until then its cases "
                                                        "FAIL wherever it differs from the built-in op",
                                                 "source": "kbaseline bake"}]}
    program = logic["lowering"]["ir"]
    phase1 = lower.phase1(program, pattern.PHASE1)
    if lower.decode.is_decode(program):
        return {"lowered": program, "kinds": {i["name"]: i["role"] for i in program["inputs"]},
                "input_dtypes": {i["name"]: "int32" if i["role"] == "lens" else "float" for i in program["inputs"]},
                "output_dtypes": ["input"], "phase1": phase1,
                "lowering": {"status": "lowered", "function": program["function"], "file": program["file"],
                             "class": program["class"], "steps": len(program["nodes"]), "reductions": [],
                             "rounded_thresholds": 0,
                             "input_words": {i["name"]: lower.decode.ROLE_WORDS[i["role"]] for i in program["inputs"]}},
                "baseline_summary": f"{cell['summary']}; its scores, masks, key range and sinks are the user's "
                                    f"`{program['function']}` ({program['file']}), traced and generated into lowered.py"}
    return {"lowered": program, "kinds": {i["name"]: i["kind"] for i in program["inputs"]},
            "input_dtypes": {i["name"]: i.get("dtype", "float") for i in program["inputs"]},
            "output_dtypes": [o["dtype"] for o in program["outputs"]], "phase1": phase1,
            "lowering": {"status": "lowered", "function": program["function"], "file": program["file"],
                         "class": program["class"], "steps": len(program["nodes"]),
                         "reductions": lower.ir.reductions(program),
                         "rounded_thresholds": lower.ir.rounded_thresholds(program)},
            "baseline_summary": f"{cell['summary']}; its compute is the user's `{program['function']}` "
                                f"({program['file']}), traced and generated into lowered.py"}


def _program(resolved: dict) -> dict:
    """A built-in op of a pattern whose ops are programs (registry.programs_path): its function traced and lowered
    as a user's would be, kept as op.json's ``program`` (the post-gen hook writes it out as lowered.py). Traced in
    this process, as it is the template's own code, not the user's, and once per template version and torch
    (lower.lower_builtin's cache)."""
    source = registry.programs_path(resolved["pattern_name"])
    if resolved["op"] == LOWERED or source is None:
        return {}
    got = lower.lower_builtin(source, resolved["op"])
    if not got["ok"]:  # the template's own program: a bug here, not bad input
        raise RuntimeError(f"the built-in {resolved['op']} ({source}) does not lower: {got['error']}")
    return {"program": {**got["ir"], "builtin": True}}  # lowered.SOURCE is then the op's own name


def _cases(pattern, dtype: str, resolved: dict) -> list[dict]:
    """op.json's cases; a lowered op in the row cell adds one of rank 3 ([4, 6, 1000]: rows of the last dim, as a
    QK-norm's [T, H, D]), which its run() takes as 24 rows of 1000 (host.rows_nd), unless the function names a dim
    by position (program["rank"]: its run() refuses x of rank 3, and a shape of another rank is refused here); a
    lowered elementwise op with [N] vectors, or bound to 2-D x, takes its 1-D cases as one row."""
    made = shapes.build_cases(pattern, dtype, resolved["shapes"])
    program = resolved["pytorch_logic"]["lowering"]["ir"] if resolved["op"] == LOWERED else None
    rows = program and (program.get("rank") or resolved["pattern_name"] == "elementwise"
                        and any(i["kind"] == "vector" for i in program["inputs"]))
    if rows:  # a function with [N] vectors, or bound to 2-D x, takes rows: a 1-D case is one row [1, n]
        made = [pattern.cases(f"1x{c['dims'][0]}", c["role"], dtype)[0] if len(c["dims"]) == 1 else c for c in made]
    if program and program.get("rank") and any("lead" in c or len(c["dims"]) != program["rank"] for c in made):
        raise catalog.InputError(f"shapes: `{program['function']}` names a dim of x by its position (dim=1, "
                                 "x[:, :d]), so its kernel takes x as [M, N] only: give 2-D shapes (MxN), or name the "
                                 "dim from the end (dim=-1, x[..., :d]) to bake rows of any rank")
    if program and lower.decode.is_decode(program):
        return [lower.fit_case(program, c) for c in made]
    if resolved["op"] == LOWERED and resolved["pattern_name"] == "reduction":
        if not program.get("rank"):  # a function that names a dim by position holds at its traced rank only
            nd = pattern.cases("24x1000", "boundary", dtype)[0]
            made.append({**nd, "name": "bou_4x6x1000", "lead": [4, 6]})
        return [lower.fit_case(program, c) for c in made]
    if any("lead" in c for c in made):
        raise catalog.InputError("shapes: a shape of rank 3 or more is for your own function's rows (pytorch_logic, "
                                 "lowered into the row cell); the built-in ops take [M, N]")
    return made


SHORT_HEADS = 128  # rows this short (a QK-norm's heads) reduce inside one wave: the FlyDSL cell has no cross-row step


def _markers(cell: dict, resolved: dict) -> dict:
    """The cell's ISA markers, less those of a reduction step when the lowered program reduces nothing (a gated MLP
    in the row cell has no butterfly), and less those of the cross-row steps (``only_long_rows``) when its rows are
    heads of at most SHORT_HEADS elements."""
    logic = resolved["pytorch_logic"]
    program = logic["lowering"]["ir"] if resolved["op"] == LOWERED else None
    if program is None or lower.ir.is_gemm(program) or lower.decode.is_decode(program):
        return cell["isa_markers"]
    drop = {"only_with_reductions"} if not lower.ir.reductions(program) else set()
    if program.get("heads") and program["heads"] <= SHORT_HEADS:
        drop.add("only_long_rows")
    return {k: [m for m in v if not any(m.get(flag) for flag in drop)] if isinstance(v, list) else v
            for k, v in cell["isa_markers"].items()}


def build(ctx: dict) -> dict:
    """Validate a cookiecutter context and return its op.json, the kernel demo's block included (raises
    catalog.InputError on bad input)."""
    resolved = validate(ctx)
    pattern, dsl, cell, gpu, op = (resolved[k] for k in ("pattern", "dsl", "cell", "gpu", "op"))
    spec = lower.op_spec(resolved["pytorch_logic"]["lowering"]["ir"]) if op == LOWERED else pattern.OPS[op]
    dtype = resolved["dtype"]
    spec = {**spec, **spec.get("by_dtype", {}).get(dtype, {})}  # e.g. gemm's fp8: the scales, 1-byte inputs
    op = {
        "op_name": resolved["op_name"], "pattern": resolved["pattern_name"], "op": op,
        "gpu": resolved["gpu_name"], "vendor": gpu["vendor"], "arch": gpu["arch"], "target": gpu["target"],
        "framework": dsl.NAME, "compute_units": gpu["compute_units"],
        "hbm_gbps": catalog.hbm_bandwidth(resolved["gpu_name"]),
        "dtype": dtype, "torch_dtype": torch_dtype(dtype, gpu["target"]), "out_torch_dtype": output_torch_dtype(dtype),
        "tolerance": DTYPES[dtype]["tolerance"],
        "inputs": spec["inputs"], "math": spec["math"], "output": spec.get("out", "same shape as the inputs"),
        "params": spec.get("params", {}),
        "phase1": {**pattern.PHASE1, **cell.get("phase1", {}), **spec.get("phase1", {})},
        "formulas": {"flops": spec["flops"], "bytes": spec["bytes"], "flops_note": spec.get("flops_note", pattern.FORMULA_NOTES["flops"]),
                     "bytes_note": spec.get("bytes_note", pattern.FORMULA_NOTES["bytes"])},
        "cases": _cases(pattern, dtype, resolved),
        "reference": _reference(resolved, pattern),
        "framework_info": {"label": dsl.LABEL, "package": dsl.PACKAGE, "compile_at_bake": dsl.COMPILE_AT_BAKE,
                           "isa": dsl.ISA, "profile":
                               dsl.PROFILE.format(kernel=cell.get("ncu_kernel", ""), case="{case}")},
        "device": dsl.DEVICE,
        "isa_markers": _markers(cell, resolved), "isa_targets": {**pattern.ISA_TARGETS, **spec.get("isa_targets", {}),
                                                            **cell.get("isa_targets", {})},
        "framework_facts": [*dsl.FACTS, *cell["framework_facts"]], "pitfalls": cell["pitfalls"],
        "baseline_summary": cell["summary"], "semantics": spec.get("semantics", cell["semantics"]),
        "title": spec.get("title", op), "levers": cell["levers"],
        "wiki": _wiki(resolved["gpu_name"], gpu, dsl, pattern, cell),
        "gpu_wiki": resolved["gpu_wiki"], "run_baseline": resolved["run_baseline"],
        "lowering_rule": {"vector_names": list(lower.ir.VECTOR_NAMES), "per_row_names": list(lower.ir.PER_ROW_NAMES)},
        **_lowering(resolved, pattern, cell), **_program(resolved),
    }
    return demo.attach(op, ctx)  # the kernel demo's block, when one was given (tools/demo.py)


def context(**values) -> dict:
    """A full cookiecutter context without cookiecutter (tests, benchmarks): cookiecutter.json's defaults (the
    literal ones), overridden by `values`, with op_name derived as the prompt would and `__cwd` = this directory."""
    defaults = json.loads((registry.ROOT / "cookiecutter.json").read_text())
    ctx = {k: v for k, v in defaults.items() if k in INPUTS and "{{" not in str(v)}  # rendered defaults: below
    ctx.update(values)
    ctx.setdefault("pattern", "auto" if ctx.get("pytorch_logic") else "gemm")  # cookiecutter.json's default, rendered
    ctx.setdefault("op", "default")
    if "op_name" not in ctx:
        got = check({**ctx, "__cwd": os.getcwd()}, upto="dtype")
        ctx["op_name"] = default_op_name(got["op"], ctx.get("pytorch_logic", ""), got["dtype"])
    return {**ctx, "__cwd": os.getcwd()}
