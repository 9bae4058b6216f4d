"""Shared fixtures: the template root, baking through cookiecutter's CLI or API, and loading workspace modules."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # cookiecutter loads local_extensions from the template root
sys.path.insert(0, str(ROOT / "tools"))

HOPPER_GPUS = ["H100", "H20", "H200"]
ELEMENTWISE_OPS = ["add", "mul", "silu", "gelu", "relu", "silu_mul"]
MATRIX_DTYPE = {"H100": "fp16", "H20": "fp32", "H200": "bf16"}  # each dtype baked somewhere


def pytest_configure(config):
    config.option.template = str(ROOT)


def bake_cli(out_dir: Path, *pairs: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """`cookiecutter <root> --no-input key=value ...` as a user would type it."""
    return subprocess.run(
        [sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(out_dir), *pairs],
        capture_output=True, text=True, cwd=cwd or out_dir, timeout=600, env=env,
    )


def load_module(path: Path, name: str):
    """Import a workspace file under a unique module name (workspaces share file names)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


@pytest.fixture(scope="session")
def matrix(cookies_session):
    """Every available elementwise op baked for every Hopper GPU, once per session."""
    baked = {}
    for gpu in HOPPER_GPUS:
        for op in ELEMENTWISE_OPS:
            result = cookies_session.bake(extra_context={
                "pattern": "elementwise", "op": op, "gpu": gpu, "dtype": MATRIX_DTYPE[gpu], "op_name": f"{op}_{gpu.lower()}",
            })
            baked[(gpu, op)] = result
    return baked
