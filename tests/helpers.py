"""What the tests share besides fixtures: the template's paths, the bake matrix, a user's bake, loading a workspace file.

Imported by name (`from helpers import ROOT, bake_cli`): pytest's `pythonpath` (pyproject.toml) puts tests/ on the
import path, so no test imports conftest or edits sys.path for it. The fixtures that use these live in conftest.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tools import registry
from tools.catalog import GPUS

ROOT = Path(__file__).resolve().parent.parent
WS_TEMPLATE = ROOT / "{{cookiecutter.op_name}}"
SPECS_PATH = ROOT / "reference" / "gpu_specs.json"


def _matrix() -> list[tuple[str, str, str, str]]:
    """(gpu, pattern, op, dtype): every GPU bakes every pattern's default op, so every (GPU, pattern) cell is baked
    once. The first GPU of each compile target bakes the pattern's first dtype (bf16); the others rotate through the
    rest, so every dtype a pattern supports is baked somewhere."""
    rows, seen = [], {}
    for gpu in GPUS:
        target = registry.gpu(gpu)["target"]
        k = seen[target] = seen.get(target, -1) + 1
        rows += [(gpu, name, p.DEFAULT_OP, p.DTYPES[k % len(p.DTYPES)]) for name, p in registry.patterns().items()]
    return rows


MATRIX = _matrix()
AMD_MATRIX = [row for row in MATRIX if registry.gpu(row[0])["vendor"] == "amd"]
PATTERN_OPS = {name: list(p.OPS) for name, p in registry.patterns().items()}
PATTERN_OF = registry.all_ops()


def user_env(**changes) -> dict:
    """This environment as a user's shell would have it: Python's output buffered as usual (PYTHONUNBUFFERED
    unset, so what a bake prints must be flushed to arrive in order), plus `changes`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return {**env, **changes}


def bake_cli(out_dir: Path, *pairs: str, cwd: Path | None = None, env: dict | None = None,
             options: tuple[str, ...] = ("--no-input",), stdin: str | None = None) -> subprocess.CompletedProcess:
    """`cookiecutter <root> --no-input key=value ...` as a user would type it (`options` replace --no-input;
    `stdin` answers the prompts)."""
    return subprocess.run(
        [sys.executable, "-m", "cookiecutter", str(ROOT), *options, "-o", str(out_dir), *pairs],
        capture_output=True, text=True, cwd=cwd or out_dir, timeout=600, env=env or user_env(), input=stdin,
    )


WORKSPACE_MODULES = ("host", "cutedsl_runtime", "flydsl_runtime", "reference", "kernel", "user_logic", "lowered", "pointwise")


def load_package(ws: Path, name: str):
    """A workspace imported as a user imports it (`import <op_name>` from its parent folder), under `name`: its own
    __init__.py loads each of its modules as `<name>.<module>` (`<name>.kernel`, whose `import host` binds
    `<name>.host`), so a test knows which host, runtime and lowered.py its kernel runs, and no sys.path or other
    sys.modules entry is touched. Loaded once per name; each name also registers torch.ops.<name>.run."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ws / "__init__.py", submodule_search_locations=[str(ws)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    return sys.modules[name]


def load_module(path: Path, name: str, search: Path | None = None):
    """Import a file of the workspace template itself (not a workspace: no op.json, so not a package) under a unique
    module name, with `search` (default: its folder) first on sys.path and the template modules it imports
    (host.py) loaded afresh from there. A workspace's files are imported with load_package."""
    for module in WORKSPACE_MODULES:
        sys.modules.pop(module, None)
    sys.path.insert(0, str(search or path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(search or path.parent))
    return module


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def lowered_constants(source: str) -> dict:
    """A lowered.py's module-level constants (INPUTS, KINDS, ROLES, flags, ...), read without importing it."""
    import ast

    return {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(source).body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.Tuple, ast.Constant))}


def make_lowered(ws: Path, source: str, dsl: str) -> Path:
    """Turn an arranged built-in workspace into a lowered-op one, as the template's bake does: op.json's op
    "lowered" and its inputs, `source` as lowered.py, and the DSL's pointwise library beside it."""
    import shutil

    spec = read_json(ws / "op.json")
    spec.update(op="lowered", inputs=list(lowered_constants(source)["INPUTS"]))
    (ws / "op.json").write_text(json.dumps(spec, indent=2) + "\n")
    (ws / "lowered.py").write_text(source)
    shutil.copy(WS_TEMPLATE / "dsl" / dsl / "pointwise.py", ws)
    return ws


def ptxas_usage(ptx: str, tmp_path: Path) -> list[tuple[int, int]]:
    """(registers, spill bytes) of every entry in the PTX, from ptxas -v (sm_90a)."""
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    done = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    regs = [int(n) for n in re.findall(r"Used (\d+) registers", done.stderr)]
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", done.stderr)]
    return list(zip(regs, spills))
