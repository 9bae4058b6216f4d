"""Shared fixtures: the template root, the bake matrix (derived from the registry), and loading workspace modules.

The matrix bakes every (GPU, pattern) cell at least once, and every op on the H200, through cookiecutter's CLI
as a user types it, both cores at once; every test that needs a baked workspace takes it from here, so nothing
is baked twice.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WS_TEMPLATE = ROOT / "{{cookiecutter.op_name}}"
SPECS_PATH = ROOT / "reference" / "gpu_specs.json"
sys.path.insert(0, str(ROOT))  # the template side: `from tools import registry`
sys.path.insert(0, str(WS_TEMPLATE / "tools"))  # the workspace tools, unit-tested in place
sys.path.insert(0, str(WS_TEMPLATE / "dsl" / "flydsl" / "tools"))  # rocm_env

import compute_utilization  # noqa: E402
import memory_manager  # noqa: E402
from tools import registry, scaffold, spec  # noqa: E402
from tools.catalog import GPUS  # noqa: E402

# The workspace tools read reference/ beside their tools/ folder; in the template repo that folder is at the root.
compute_utilization.SPECS_PATH = SPECS_PATH
memory_manager.SCHEMA_PATH = ROOT / "reference" / "v_iteration.schema.json"

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


def pytest_collection_finish(session):
    """FlyDSL compiles start in the background once collected: the FlyDSL GEMM cell's variants
    (tests/flydsl_gemm_builds.py) and the lowering corpus's (tests/lowered_corpus_builds.py)."""
    collected = {item.path.name for item in session.items}
    if "test_flydsl_gemm.py" in collected:
        import flydsl_gemm_builds

        flydsl_gemm_builds.start()
    if "test_lowering_compiles.py" in collected:
        import lowered_corpus_builds

        lowered_corpus_builds.start()


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


def load_module(path: Path, name: str, search: Path | None = None):
    """Import a workspace file under a unique module name (workspaces share file names), with `search` (default: its
    folder) first on sys.path and the workspace modules it imports (host.py, the runtime) loaded afresh from there."""
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


@pytest.fixture(scope="session")
def tools_ws(tmp_path_factory) -> Path:
    """The workspace tools laid out as in a workspace (tools/ beside reference/), to run their CLIs verbatim."""
    ws = tmp_path_factory.mktemp("tools_ws")
    shutil.copytree(WS_TEMPLATE / "tools", ws / "tools")
    shutil.copytree(ROOT / "reference", ws / "reference")
    return ws


@dataclass
class Baked:
    project_path: Path
    exit_code: int
    output: str


@pytest.fixture(scope="session")
def matrix(tmp_path_factory) -> dict[tuple[str, str], Baked]:
    """Every row of MATRIX baked once per session, keyed (gpu, op)."""
    out = tmp_path_factory.mktemp("matrix")

    defaults = spec.context()

    def bake(row):
        gpu, pattern, op, dtype = row
        folder = out / f"{op}_{gpu.lower()}"
        folder.mkdir()
        if (gpu, pattern, op, dtype) == (defaults["gpu"], defaults["pattern"], registry.resolve_op(pattern, "default"),
                                         defaults["dtype"]):  # the README's own command, with no key=value at all
            name, pairs = defaults["op_name"], []
        else:
            name = folder.name
            pairs = [f"pattern={pattern}", f"op={op}", f"gpu={gpu}", f"dtype={dtype}", f"op_name={name}"]
        done = bake_cli(folder, *pairs)
        return (gpu, op), Baked(folder / name, done.returncode, done.stdout + done.stderr)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(pool.map(bake, MATRIX))


@pytest.fixture(scope="session")
def workspace_of(matrix, tmp_path_factory):
    """(gpu, op[, dtype]) -> a workspace: the matrix's bake when it has that cell, else one arranged by
    tools/scaffold.py without the bake step (no git, no records), once per session. For the compile tests of ops
    and dtypes the matrix does not bake: one compile per distinct code path."""
    made: dict = {}

    def get(gpu: str, op: str, dtype: str | None = None) -> Path:
        baked = matrix.get((gpu, op))
        if baked and (dtype is None or read_json(baked.project_path / "op.json")["dtype"] == dtype):
            return baked.project_path
        pattern = PATTERN_OF[op]
        key = (gpu, op, dtype or registry.pattern(pattern).DTYPES[0])
        if key not in made:
            dest = tmp_path_factory.mktemp("ws") / f"{op}_{gpu.lower()}_{key[2]}"
            made[key] = scaffold.workspace(dest, spec.context(pattern=pattern, op=op, gpu=gpu, dtype=key[2],
                                                              op_name=dest.name, run_baseline="no"))
        return made[key]

    return get
