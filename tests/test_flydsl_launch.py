"""The FlyDSL cells' run() on a CPU, the HIP call stubbed out: the launch ABI and the per-signature launch cache.

No AMD GPU runs these kernels, so benchmarks/flydsl_launch_cpu.py --check compiles each cell as run() does (FlyDSL
on CPU placeholders), replaces only the JIT'd host function that would call HIP, and checks what run() hands
FlyDSL: the pointers, sizes, scalars and stream in FlyDSL's ABI slots; one compile, one pass of host.py's checks
and one launch on a signature's first call, neither on a hit; refusals in host.py's words with nothing launched;
a HIP error that FlyDSL's runtime recorded raised. It runs in a child process: FlyDSL must stay out of this one
(CuTe DSL's MLIR bindings). The children start once collected, on the background pool (flydsl_batch.child).
"""

from __future__ import annotations

import sys

import flydsl_batch
import pytest
from helpers import ROOT
from test_flydsl_compile import FLYDSL_PATTERNS, HAVE_FLYDSL, needs_flydsl


def check(pattern: str):
    """The future of `flydsl_launch_cpu.py --check PATTERN` in its child, on the background pool."""
    return flydsl_batch.child([sys.executable, str(ROOT / "benchmarks" / "flydsl_launch_cpu.py"), "--check", pattern])


def start_compiles():
    """Every cell's check, started on the background pool once pytest has collected this module (conftest)."""
    if HAVE_FLYDSL:
        for pattern in FLYDSL_PATTERNS:
            check(pattern)


@needs_flydsl
@pytest.mark.parametrize("pattern", FLYDSL_PATTERNS)
def test_run_hands_flydsl_the_right_launch(pattern):
    done = check(pattern).result()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.startswith(f"{pattern}: one compile, one host.py check, one launch"), done.stdout
