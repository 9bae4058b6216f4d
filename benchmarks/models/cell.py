"""Import one FlyDSL cell's kernel.py for a lane-level model: no GPU, no compile, no cutlass in the process.

The kernel module reads op.json next to it at import, so it is imported from a minimal compile-only
workspace (tools/scaffold.compile_workspace) in a temporary folder; COMPILE_ONLY, ARCH and FLYDSL_GPU_ARCH
are set first, because FlyDSL aborts a process without a GPU otherwise.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools import scaffold  # noqa: E402


def load_kernel(tmp: str | os.PathLike, pattern: str, op: str, arch: str = "gfx942"):
    """The cell's kernel module, compiled for nothing: only its plan and index helpers are used."""
    ws = scaffold.compile_workspace(Path(tmp) / "ws", pattern, op, "bf16", arch)
    os.environ.setdefault("COMPILE_ONLY", "1")
    os.environ.setdefault("ARCH", arch)
    os.environ.setdefault("FLYDSL_GPU_ARCH", arch)
    sys.path.insert(0, str(ws))
    return importlib.import_module("kernel")
