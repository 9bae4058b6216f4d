"""The lane-level numpy models of the FlyDSL cells (benchmarks/models/) pass, and can fail.

No AMD GPU runs these kernels, so besides the ISA checks each cell's index math (offsets, out-of-range
redirects, LDS swizzle, MFMA lane maps, masking, split plan) is re-traced per lane in numpy on small boundary
cases against a float64 or exact-integer reference. Each model runs in a child process: it imports the cell's
kernel.py, which loads FlyDSL, and FlyDSL must stay out of this process (CuTe DSL's MLIR bindings).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import ROOT
from test_flydsl_compile import needs_flydsl

MODELS = ROOT / "benchmarks" / "models"


def run_model(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(MODELS / f"{name}_flydsl.py"), *args], capture_output=True, text=True,
                          timeout=600)


@needs_flydsl
@pytest.mark.parametrize("name", ["gemm", "reduction", "decode_attention"])
def test_model_passes(name):
    done = run_model(name)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith(f"{name}_flydsl: 0 of ") and last.endswith(" cases failed"), last


@needs_flydsl
def test_attention_model_catches_a_missing_mask():
    """With the -inf mask on keys past the split end removed, the model must fail (it is not vacuous)."""
    done = run_model("decode_attention", "small_mixed", "mut=no_mask")
    assert done.returncode == 1 and " 0 of " not in done.stdout.strip().splitlines()[-1], done.stdout[-2000:]


@needs_flydsl
def test_reduction_model_catches_a_shifted_rescale():
    """With the online rescale and the row combine taken between shifted maxes (exp(shift(m_old) - shift(m_new)),
    exp(shift(m_t) - shift(M))), the rows planted for it overflow to 0 * inf = NaN on the looped path: the model must
    fail (it is not vacuous, and the kernel's unshifted m_old / m_t matter)."""
    done = run_model("reduction", "8x131072", "mut=shifted")
    assert done.returncode == 1 and "softmax: NaN mismatch" in done.stdout, done.stdout[-2000:]


@needs_flydsl
def test_reduction_model_catches_a_missing_chunk_mask():
    """The kernel does not zero-fill its registers before predicated loads, so a chunk that was not loaded is made
    harmless by reduce()'s per-chunk mask alone: the model loads NaN there, and without the mask it must fail on the
    register path's partial chunks (N = 1000 at ld 1003: vec 1) and the looped path's partial last slice."""
    done = run_model("reduction", "9x1000@1003", "2x32776", "mut=no_mask")
    assert done.returncode == 1 and "NaN mismatch" in done.stdout, done.stdout[-2000:]
