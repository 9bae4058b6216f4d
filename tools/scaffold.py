"""Post-gen work: turn the rendered template folder into this op's workspace, then hand over to the workspace.

Called by hooks/post_gen_project.py with cwd = the new workspace, where the pre-gen hook already wrote op.json
(tools/spec.py). Nothing is worked out again here; op.json says which files this workspace keeps:

1. the pattern's files (``patterns/<pattern>/reference.py``, ``patterns/<pattern>/<dsl>/kernel.py``) and the
   DSL's files (``dsl/<dsl>/``: its shared runtime, its pointwise library, its extra tools) move to the workspace
   root; the other patterns and DSLs are removed. A workspace whose kernel runs a program -- the user's own
   function (op ``lowered``), or a built-in elementwise or reduction op, which is a program too -- gets
   ``lowered.py``, written from op.json's ``lowered`` or ``program`` (tools/lower/codegen.py); the others (GEMM and
   decode built-ins) drop the pointwise library, which only a generated compute calls;
2. ``reference/`` (the memory schema, the cited GPU specs) is copied in from the template, and the user's
   PyTorch logic file, when one was given, as ``user_logic.py``, with the modules it imports from its own folder;
   the user's kernel demo, when one was given, into ``demo/`` with what it imports from its folder (tools/demo.py;
   copied, never imported: only the harness runs it, on the GPU);
3. the workspace's own ``tools/run_baseline.py --bake`` writes the README, plan, NOT RUN report and memory from
   op.json, commits the scaffold, and runs the V0 flow when a GPU of the target's vendor is here.

It never raises: cookiecutter deletes the workspace when the post-gen hook fails, so the hook prints failures.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tools import demo
from tools.lower import codegen

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_FILES = ["v_iteration.schema.json", "gpu_specs.json"]
GITIGNORE = "__pycache__/\nbuild/\n*.tmp\n"
SCAFFOLD_NOT_COMMITTED = 3  # tools/run_baseline.py --bake's exit code when git refused the commit (it said why)


def _merge(src: Path, ws: Path) -> None:
    """Move every file under src to the same relative path under ws."""
    for item in sorted(p for p in src.rglob("*") if p.is_file()):
        dest = ws / item.relative_to(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(item), dest)


def arrange(ws: Path, op: dict) -> None:
    """Keep this cell's files at the workspace root; drop every other pattern and DSL; add reference/ and user logic."""
    pattern_dir = ws / "patterns" / op["pattern"]
    for item in pattern_dir.glob("*.py"):
        shutil.move(str(item), ws / item.name)
    _merge(pattern_dir / op["framework"], ws)
    _merge(ws / "dsl" / op["framework"], ws)
    program = op.get("lowered") or op.get("program")  # the user's function, or the built-in op's own
    if program:  # the compute of this cell's kernel
        (ws / "lowered.py").write_text(codegen.generate(program, op["dtype"]))
    else:  # only a lowered compute calls the DSL's pointwise library
        (ws / "pointwise.py").unlink(missing_ok=True)
    shutil.rmtree(ws / "patterns")
    shutil.rmtree(ws / "dsl")
    (ws / "reference").mkdir(exist_ok=True)
    for name in REFERENCE_FILES:
        shutil.copy2(ROOT / "reference" / name, ws / "reference" / name)
    if op["reference"]["source"] == "user":
        shutil.copy2(op["reference"]["original"], ws / op["reference"]["file"])
        folder = Path(op["reference"]["original"]).parent
        for name in op["reference"].get("siblings", []):  # what the logic file imports or reads from its own folder
            if (folder / name).is_dir():
                shutil.copytree(folder / name, ws / name, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
            else:
                (ws / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(folder / name, ws / name)
    demo.install(ws, op)  # the user's kernel demo, into demo/ (run only by the harness, on the GPU)
    (ws / ".gitignore").write_text(GITIGNORE)
    (ws / "results").mkdir(exist_ok=True)


def workspace(dest: Path, ctx: dict) -> Path:
    """A workspace without cookiecutter and without the bake step (tests, benchmarks): op.json from tools.spec
    for a full context (see tests/conftest.py), the template's files arranged as a bake would."""
    from tools import spec

    op = spec.build(ctx)
    shutil.copytree(ROOT / "{{cookiecutter.op_name}}", dest, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "op.json").write_text(json.dumps(op, indent=2) + "\n")
    arrange(dest, op)
    return dest


def main(ws: Path) -> None:
    op = json.loads((ws / "op.json").read_text())
    arrange(ws, op)
    done = subprocess.run([sys.executable, "tools/run_baseline.py", "--bake"], cwd=ws)
    committed = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=ws, capture_output=True).returncode == 0
    if not committed and done.returncode != SCAFFOLD_NOT_COMMITTED:  # it broke before its commit: say so
        print(f"kbaseline: warning: `python tools/run_baseline.py --bake` stopped (exit {done.returncode}) before the "
              f"scaffold commit; the workspace is kept: fix the error above and run it again in {ws}", file=sys.stderr)


def compile_workspace(dest: Path, pattern: str, op: str, dtype: str, target: str, shape: str = "") -> Path:
    """A workspace for compile checks of one cell (tests, benchmarks/flydsl_compile.py, benchmarks/models): the
    first GPU of `target` (gfx942: MI300X, gfx950: MI355X); `shape` in the pattern's grammar is its first case."""
    from tools import registry, spec

    return workspace(dest, spec.context(pattern=pattern, op=op, dtype=dtype, gpu=registry.first_gpu(target),
                                        shapes=shape, run_baseline="no"))
