"""Post-gen work for a freshly rendered workspace (called by hooks/post_gen_project.py, cwd = workspace).

1. write op.json, the single spec every workspace script reads;
2. keep only this cell's files (cells/<framework>/<pattern>/ -> workspace root) and copy the shared
   tools/ and reference/ files in from the template (one source, copied, never forked);
3. copy the user's PyTorch logic file next to reference.py, when one was given;
4. write the plan, and a NOT RUN report and memory that say why nothing ran yet;
5. git init + commit the scaffold (with a local identity when user.email is unset);
6. run the V0 flow (tools/run_baseline.py) when run_baseline allows and a GPU of the right vendor is here;
   for an AMD target without an AMD GPU, compile to the target's ISA first, so the records say
   "compiled for gfx9xx; not run on hardware".

It never raises: cookiecutter deletes the workspace when the post-gen hook fails, so failures are
printed and recorded instead.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import catalog
import gpu_detect
import shapes
from run_baseline import git_commit
from validate_inputs import validate

WORKSPACE_TOOLS = ["compute_utilization.py", "memory_manager.py", "run_baseline.py", "report.py", "gpu_detect.py",
                   "roofline.py", "isa_metrics.py"]
# What "torch" means in each pattern's timing (reference.baseline, on the native dtype, same timer as the kernel).
BASELINES = {
    "elementwise": "the same expression in eager torch is the timed baseline",
    "reduction": "the same expression in eager torch is the timed baseline",
    "gemm": "`a @ b.T` (cuBLAS) is the timed baseline",
    "decode_attention": "the timed baseline is torch SDPA with enable_gqa=True on the cache layout, with a key mask "
                        "only when some sequence is shorter than S_max",
}
FRAMEWORK_TOOLS = {"cutedsl": [], "flydsl": ["rocm_env.py"]}  # FlyDSL compiles on a CPU through a stand-in ROCm tree
REFERENCE_FILES = ["v_iteration.schema.json", "gpu_specs.json"]


def build_op_json(ctx: dict, resolved: dict) -> dict:
    pattern, op, dtype = ctx["pattern"], resolved["op"], ctx["dtype"]
    cell = catalog.CELLS[(pattern, resolved["framework"])]
    spec = catalog.op_spec(pattern, op)
    logic = resolved["pytorch_logic"]
    reference = (
        {"source": "user", "file": "user_logic.py", "original": logic["path"], "function": logic["function"],
         "mapping": logic["mapping"],
         "description": f"The user's `{logic['function']}` from {logic['path']} (copied to user_logic.py), "
                        f"given the inputs {logic['mapping']}."}
        if logic else
        {"source": "built-in", "description": "Built in: `reference.py` returns the plain PyTorch expression of the op "
                                             f"(evaluated in float64 for correctness); {BASELINES[pattern]}."}
    )
    return {
        "op_name": ctx["op_name"], "pattern": pattern, "op": op,
        "gpu": resolved["gpu"], "vendor": resolved["vendor"], "arch": resolved["arch"],
        "target": resolved["target"], "framework": resolved["framework"], "compute_units": resolved["compute_units"],
        "dtype": dtype, "torch_dtype": catalog.DTYPES[dtype]["torch"], "tolerance": catalog.DTYPES[dtype]["tolerance"],
        "inputs": resolved["inputs"], "math": spec["math"], "output": spec.get("out", "same shape as the inputs"),
        "params": spec.get("params", {}), "phase1": {**catalog.PHASE1[pattern], **cell.get("phase1", {})},
        "formulas": catalog.op_formulas(pattern, op),
        "cases": shapes.build_cases(pattern, dtype, ctx["shapes"]),
        "reference": reference,
        "isa_markers": cell["isa_markers"], "framework_facts": cell["framework_facts"], "pitfalls": cell["pitfalls"],
        "baseline_summary": cell["summary"],
        "gpu_wiki": ctx["__gpu_wiki_path"] or ctx["gpu_wiki"], "run_baseline": ctx["run_baseline"],
    }


def keep_cell(ws: Path, framework: str, pattern: str) -> None:
    cell = ws / "cells" / framework / pattern
    for item in cell.iterdir():
        shutil.move(str(item), ws / item.name)
    shutil.rmtree(ws / "cells")


def copy_shared(ws: Path, root: Path, framework: str) -> None:
    (ws / "tools").mkdir(exist_ok=True)
    for name in WORKSPACE_TOOLS + FRAMEWORK_TOOLS[framework]:
        shutil.copy2(root / "tools" / name, ws / "tools" / name)
    (ws / "reference").mkdir(exist_ok=True)
    for name in REFERENCE_FILES:
        shutil.copy2(root / "reference" / name, ws / "reference" / name)


def compile_workspace(dest: Path, root: Path, pattern: str, op: str, dtype: str, target: str, shape: str = "") -> Path:
    """A minimal FlyDSL workspace for compile checks (tests, benchmarks/flydsl_compile.py): the cell's kernel.py,
    tools/rocm_env.py and an op.json with the fields the kernel reads (op, dtype, target, gpu, compute_units,
    params, cases), for the first GPU of `target` (gfx942: MI300X, gfx950: MI355X).
    `shape` is one shape in the pattern's grammar; empty = the pattern's first built-in representative shape."""
    gpu = next(name for name, spec in catalog.GPUS.items() if spec["target"] == target)
    (dest / "tools").mkdir(parents=True, exist_ok=True)
    shutil.copy2(root / "{{cookiecutter.op_name}}" / "cells" / "flydsl" / pattern / "kernel.py", dest / "kernel.py")
    shutil.copy2(root / "tools" / "rocm_env.py", dest / "tools" / "rocm_env.py")
    spec = {"op": op, "pattern": pattern, "dtype": dtype, "target": target, "framework": "flydsl", "gpu": gpu,
            "compute_units": catalog.GPUS[gpu]["compute_units"],
            "params": catalog.op_spec(pattern, op).get("params", {}),
            "cases": shapes.build_cases(pattern, dtype, shape)[:1]}
    (dest / "op.json").write_text(json.dumps(spec, indent=2) + "\n")
    return dest


def run_decision(ctx: dict, vendor: str) -> tuple[bool, str]:
    """(run now?, why not). auto and yes both need a GPU of the target's vendor; yes only says it louder."""
    label = "AMD" if vendor == "amd" else "NVIDIA"
    if ctx["run_baseline"] == "no":
        return False, "run_baseline=no; run `python tools/run_baseline.py` on the GPU when ready"
    found = gpu_detect.detect()
    if found["vendor"] != vendor:
        seen = f" (found {found['raw']})" if found["raw"] else ""
        return False, f"no {label} GPU{seen}"
    return True, ""


def run_tool(ws: Path, *args: str) -> int:
    return subprocess.run([sys.executable, *args], cwd=ws).returncode


def main(ctx: dict, root: Path, ws: Path) -> None:
    resolved = validate(ctx)
    op = build_op_json(ctx, resolved)
    (ws / "op.json").write_text(json.dumps(op, indent=2) + "\n")
    keep_cell(ws, resolved["framework"], ctx["pattern"])
    copy_shared(ws, root, resolved["framework"])
    if resolved["pytorch_logic"]:
        shutil.copy2(resolved["pytorch_logic"]["path"], ws / "user_logic.py")
    (ws / ".gitignore").write_text("__pycache__/\nbuild/\n*.tmp\n")
    (ws / "results").mkdir(exist_ok=True)

    go, reason = run_decision(ctx, resolved["vendor"])
    if ctx["run_baseline"] == "yes" and not go:
        print(f"kbaseline: warning: run_baseline=yes but {reason}; the report and memory say NOT RUN")
    if not go and resolved["vendor"] == "amd":  # no AMD GPU here: still prove the kernel compiles to real ISA
        run_tool(ws, "test_kernel.py", "--compile-only")
    run_tool(ws, "tools/run_baseline.py", "--not-run", reason or "V0 run starting now")
    git_commit(ws, f"Scaffold {op['op_name']}: {op['op']} {op['dtype']} {op['pattern']} for {op['gpu']} "
                   f"({op['framework']}, {op['target']})" + ("" if go else f"; V0 not run: {reason}"))
    if go:
        print(f"kbaseline: running the V0 flow on {gpu_detect.detect()['raw']} ...")
        code = run_tool(ws, "tools/run_baseline.py")
        print(f"kbaseline: V0 flow finished ({'all PASS' if code == 0 else 'see baseline_report.md'})")
    else:
        print(f"kbaseline: workspace {ws.name} ready; V0 not run: {reason}")
