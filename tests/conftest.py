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
PATTERN_OPS = {
    "elementwise": ["add", "mul", "silu", "gelu", "relu", "silu_mul"],
    "reduction": ["sum", "mean", "max", "softmax", "rmsnorm"],
    "gemm": ["matmul"],
    "decode_attention": ["gqa"],
}
ELEMENTWISE_OPS = PATTERN_OPS["elementwise"]
# Every op on the H200 in bf16; the other Hopper GPUs bake each pattern's default op in another dtype.
OTHER_DTYPE = {"elementwise": {"H100": "fp16", "H20": "fp32"}, "reduction": {"H100": "fp16", "H20": "fp32"},
               "gemm": {"H100": "fp16", "H20": "fp16"}, "decode_attention": {"H100": "fp16", "H20": "bf16"}}
DEFAULT_OP = {"elementwise": "silu_mul", "reduction": "softmax", "gemm": "matmul", "decode_attention": "gqa"}
# Each FlyDSL cell once, on each AMD GPU across the list, so both targets are compiled at bake time.
AMD_MATRIX = [("MI300X", "elementwise", "silu_mul", "bf16"), ("MI308X", "elementwise", "add", "fp16"),
              ("MI355X", "elementwise", "gelu", "fp32"), ("MI355X", "reduction", "softmax", "fp16"),
              ("MI300X", "gemm", "matmul", "bf16"), ("MI308X", "decode_attention", "gqa", "fp16")]
MATRIX = [("H200", pattern, op, "bf16") for pattern, ops in PATTERN_OPS.items() for op in ops] + [
    (gpu, pattern, DEFAULT_OP[pattern], dtypes[gpu]) for pattern, dtypes in OTHER_DTYPE.items() for gpu in dtypes
] + AMD_MATRIX


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
    """Every cell baked: every op on the H200, each pattern's default op on the H100 and H20, the FlyDSL cell on
    each AMD GPU; once per session."""
    baked = {}
    for gpu, pattern, op, dtype in MATRIX:
        baked[(gpu, op)] = cookies_session.bake(extra_context={
            "pattern": pattern, "op": op, "gpu": gpu, "dtype": dtype, "op_name": f"{op}_{gpu.lower()}",
        })
    return baked
