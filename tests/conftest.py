"""Shared fixtures: the template root, the bake matrix (derived from the registry), and loading workspace modules.

The matrix bakes every (GPU, pattern) cell at least once, and every op on the H200, through cookiecutter's CLI
as a user types it, both cores at once; every test that needs a baked workspace takes it from here, so nothing
is baked twice.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

import compute_utilization  # the workspace tools, unit-tested in place (pyproject.toml's pythonpath)
import memory_manager
from helpers import MATRIX, PATTERN_OF, ROOT, SPECS_PATH, WS_TEMPLATE, bake_cli, read_json
from tools import lower, registry, scaffold, spec

# The workspace tools read reference/ beside their tools/ folder; in the template repo that folder is at the root.
compute_utilization.SPECS_PATH = SPECS_PATH
memory_manager.SCHEMA_PATH = ROOT / "reference" / "v_iteration.schema.json"

# The built-in programs' IR cache (lower.lower_builtin) of this session alone, for this process and every bake it
# starts (they inherit XDG_CACHE_HOME): no state from outside the run, nothing left in the user's ~/.cache.
_CACHE_HOME = Path(tempfile.mkdtemp(prefix="kbaseline-cache-"))
os.environ["XDG_CACHE_HOME"] = str(_CACHE_HOME)
lower.CACHE = _CACHE_HOME / "kbaseline" / "programs"

def pytest_collection_finish(session):
    """FlyDSL compiles and children start in the background once collected: the FlyDSL GEMM cell's variants
    (tests/flydsl_gemm_builds.py), the lowering corpus's (tests/lowered_corpus_builds.py), and those of every collected
    test module with a start_compiles() (flydsl_batch.background, flydsl_batch.child). None for --collect-only, which
    runs nothing."""
    if session.config.option.collectonly:
        return
    for module in sorted({item.module for item in session.items}, key=lambda m: m.__name__):
        if hasattr(module, "start_compiles"):
            module.start_compiles()
    collected = {item.path.name for item in session.items}
    if "test_flydsl_gemm.py" in collected:
        import flydsl_gemm_builds

        flydsl_gemm_builds.start()
    if "test_lowering_compiles.py" in collected:
        import lowered_corpus_builds

        lowered_corpus_builds.start()


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
    """Every row of MATRIX baked once per session, keyed (gpu, op). The built-in programs are lowered here first,
    in this process (torch is loaded already), so each bake reads its op's IR from the session's cache instead of
    importing torch to trace it."""
    out = tmp_path_factory.mktemp("matrix")
    for pattern, op in sorted({(row[1], row[2]) for row in MATRIX}):
        if registry.programs_path(pattern):
            lower.lower_builtin(registry.programs_path(pattern), op)

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
