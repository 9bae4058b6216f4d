"""The FlyDSL GEMM cell's epilogue and fp8 workspaces, and their compiles started in the background as soon as pytest
has collected tests/test_flydsl_gemm.py.

Each VARIANT is one distinct code path of the cell's epilogue_kernel, compiled once: the four generated GEMM
examples of tests/lowered_examples (bf16, both targets), the fp8 matmul (both targets), and one hand-written
lowered.py (ROW_SCALE_RESIDUAL: the paths the examples do not take) composed with fp8 at N % 8 != 0. A workspace is
baked for the built-in matmul, then turned into the variant as the template does: op.json "op": "lowered" and
"inputs" with the example as lowered.py beside pointwise.py (tests/test_lowered_flydsl.py does the same), and for fp8
op.json "dtype": "fp8" with "inputs" ["a", "b", "scale_a", "scale_b"] (a stand-in for the template's fp8 plumbing,
which bakes that op.json itself). The compiles run on a background thread beside the rest of the suite, like
tests/lowered_corpus_builds.py, in ONE child (tests/flydsl_batch.py) that calls each workspace's compile_only and
describe in turn.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import flydsl_batch
from tools import scaffold

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "tests" / "lowered_examples"
HAVE_FLYDSL = importlib.util.find_spec("flydsl") is not None
ARCHS = ("gfx942", "gfx950")

# A lowered.py by CONTRACT_GEMM.md for what the generated examples leave out: a "row" and a "per_row" input and an
# fp32 C (two dwordx4 per chunk, or one dword per element).
ROW_SCALE_RESIDUAL = '''"""A hand-written GEMM lowered.py (tests/flydsl_gemm_builds.py): C = acc * row_scale[row] + residual, in fp32."""

SOURCE = "test:row_scale_residual"
HEAD = "matmul"
INPUTS = ("a", "b", "residual", "row_scale")
KINDS = ("a", "b", "row", "per_row")
DTYPES = ("float", "float", "float", "float")
WIDTHS = (1, 1, 1, 1)
ARGS = ((2, "whole", 0), (3, "whole", 0))
OUTPUTS = ("row",)
OUT_WIDTHS = (1,)
OUT_HOW = ("whole",)
DIMS = ()
HEADS = None
RANK = None
OUT_DTYPES = ("fp32",)
REDUCTIONS = ()
USES_N = False


def compute(acc, residual, row_scale, n, reduce):
    return (acc * row_scale + residual,)
'''

# (name, lowered.py source or None, dtype, shape, archs); name is the example's file stem or the variant's own
VARIANTS = [
    *[(example, (EXAMPLES / f"{example}.py").read_text(), "bf16", "", ARCHS)
      for example in ("lowered_gemm_bias_gelu_tanh", "lowered_gemm_bias_relu_squared", "lowered_gemm_residual_add",
                      "lowered_gemm_col_scale_bf16")],
    ("fp8_matmul", None, "fp8", "", ARCHS),
    # fp8 scales then the user's compute, N % 8 != 0 (one access per element); gfx950: the larger register file use
    ("fp8_row_scale_residual_st16", ROW_SCALE_RESIDUAL, "fp8", "4095x4097x4096", ("gfx950",)),
]
_started: dict = {}


def declared(source: str) -> dict:
    """A lowered.py's module-level constants (INPUTS, KINDS, ...), read without importing it."""
    return {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(source).body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.Tuple, ast.Constant))}


def workspace(dest: Path, lowered: str | None, dtype: str, shape: str, arch: str) -> Path:
    """A matmul workspace of the cell turned into the variant (see the module docstring)."""
    ws = scaffold.compile_workspace(dest, "gemm", "matmul", "bf16", arch, shape)
    spec = json.loads((ws / "op.json").read_text())
    inputs = list(declared(lowered)["INPUTS"]) if lowered else ["a", "b"]
    if lowered:
        spec["op"] = "lowered"
        (ws / "lowered.py").write_text(lowered)
        shutil.copy(ROOT / "{{cookiecutter.op_name}}" / "dsl" / "flydsl" / "pointwise.py", ws)  # a lowered bake keeps it
    if dtype == "fp8":
        spec["dtype"] = "fp8"
        inputs += ["scale_a", "scale_b"]
    spec["inputs"] = inputs
    (ws / "op.json").write_text(json.dumps(spec, indent=2))
    return ws


def compile_batch(spaces: dict) -> dict:
    """{key: compile_only and describe of the workspace's first case, and its kernel_*.s files} for {key: workspace},
    in one child (flydsl_batch)."""
    results = flydsl_batch.run([(ws, None) for ws in spaces.values()], describe=True)
    return {key: {**results[ws], "files": sorted(f.name for f in (ws / "build").glob("kernel_*.s"))}
            for key, ws in spaces.items()}


def start() -> dict:
    """{"workspaces": {(name, arch): workspace}, "compiled": future of compile_batch}, once a session (empty without
    flydsl)."""
    if not _started and HAVE_FLYDSL:
        root = Path(tempfile.mkdtemp(prefix="kbaseline-flygemm-"))
        spaces = {(name, arch): workspace(root / f"{name}_{arch}", lowered, dtype, shape, arch)
                  for name, lowered, dtype, shape, archs in VARIANTS for arch in archs}
        _started.update(workspaces=spaces, compiled=ThreadPoolExecutor(max_workers=1).submit(compile_batch, spaces))
    return _started
