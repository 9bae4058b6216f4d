"""The lane-level numpy models of the FlyDSL cells (benchmarks/models/) pass, and can fail.

No AMD GPU runs these kernels, so besides the ISA checks each cell's index math (offsets, out-of-range
redirects, LDS swizzle, MFMA lane maps, masking, split plan) is re-traced per lane in numpy on small boundary
cases against a float64 or exact-integer reference. Each model runs in a child process: it imports the cell's
kernel.py, which loads FlyDSL, and FlyDSL must stay out of this process (CuTe DSL's MLIR bindings). The children
start once collected, on the background pool (flydsl_batch.child), and each test reads its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import Future

import flydsl_batch
import pytest
from helpers import ROOT
from test_flydsl_compile import HAVE_FLYDSL, needs_flydsl

MODELS = ROOT / "benchmarks" / "models"
NAMES = ["gemm", "reduction", "decode_attention"]  # each cell's model, run on its own cases
NO_ATTENTION_MASK = ("decode_attention", "small_mixed", "mut=no_mask")  # the mutants each test below must catch
SHIFTED_RESCALE = ("reduction", "8x131072", "mut=shifted")
NO_CHUNK_MASK = ("reduction", "9x1000@1003", "2x32776", "mut=no_mask")
SHIFTED_SPLIT = ("reduction", "12x131072", "mut=split_shifted")
RUNS = [*((name,) for name in NAMES), NO_ATTENTION_MASK, SHIFTED_RESCALE, NO_CHUNK_MASK, SHIFTED_SPLIT]


def start_compiles():
    """Every child of this module, started on the background pool once pytest has collected it (conftest)."""
    if HAVE_FLYDSL:
        for run in RUNS:
            model(*run)
        split_rule()


def model(name: str, *args: str) -> Future:
    """The future of `benchmarks/models/NAME_flydsl.py ARGS` in its child, on the background pool."""
    return flydsl_batch.child([sys.executable, str(MODELS / f"{name}_flydsl.py"), *args], timeout=600)


def run_model(name: str, *args: str) -> subprocess.CompletedProcess:
    return model(name, *args).result()


@needs_flydsl
@pytest.mark.parametrize("name", NAMES)
def test_model_passes(name):
    done = run_model(name)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith(f"{name}_flydsl: 0 of ") and last.endswith(" cases failed"), last


@needs_flydsl
def test_attention_model_catches_a_missing_mask():
    """With the -inf mask on keys past the split end removed, the model must fail (it is not vacuous)."""
    done = run_model(*NO_ATTENTION_MASK)
    assert done.returncode == 1 and " 0 of " not in done.stdout.strip().splitlines()[-1], done.stdout[-2000:]


@needs_flydsl
def test_reduction_model_catches_a_shifted_rescale():
    """With the online rescale and the row combine taken between shifted maxes (exp(shift(m_old) - shift(m_new)),
    exp(shift(m_t) - shift(M))), the rows planted for it overflow to 0 * inf = NaN on the looped path: the model must
    fail (it is not vacuous, and the kernel's unshifted m_old / m_t matter)."""
    done = run_model(*SHIFTED_RESCALE)
    assert done.returncode == 1 and "softmax: NaN mismatch" in done.stdout, done.stdout[-2000:]


@needs_flydsl
def test_reduction_model_catches_a_missing_chunk_mask():
    """The kernel does not zero-fill its registers before predicated loads, so a chunk that was not loaded is made
    harmless by reduce()'s per-chunk mask alone: the model loads NaN there, and without the mask it must fail on the
    register path's partial chunks (N = 1000 at ld 1003: vec 1) and the looped path's partial last slice."""
    done = run_model(*NO_CHUNK_MASK)
    assert done.returncode == 1 and "NaN mismatch" in done.stdout, done.stdout[-2000:]


@needs_flydsl
def test_reduction_model_catches_a_shifted_split_combine():
    """With only the split-row combine of the workgroups' online pairs shifted (exp(shift(m_g) - shift(M))), a
    workgroup that saw only -inf beside a row max of -150 adds 0 * inf = NaN: the split model must fail on softmax
    while the looped model of the same rows passes (the split check is not vacuous)."""
    done = run_model(*SHIFTED_SPLIT)
    assert done.returncode == 1 and "softmax split: NaN mismatch" in done.stdout, done.stdout[-2000:]
    assert "softmax: " not in done.stdout, done.stdout[-2000:]


SPLIT_RULE = """
import json, sys, tempfile
sys.path.insert(0, sys.argv[1])
import cell
with tempfile.TemporaryDirectory() as tmp:
    kernel = cell.load_kernel(tmp, "reduction", "softmax")
    out = []
    for m, n, vec, loads, cus in json.loads(sys.argv[2]):
        cfg = kernel.plan(n, vec, *kernel.budget(loads))
        out.append(list(kernel.split(m, cfg, cus)))
print(json.dumps(out))
"""

# (M, N, vec, loads, CUs) -> (G, per): which shapes kernel.split() splits, and how far (its docstring's rule)
SPLIT_CASES = {
    (8, 131072, 8, 1, 304): (8, 1),  # 8 whole iterations of 512 x 4 vectors: G = 8, 64 workgroups
    (12, 131072, 4, 2, 304): (16, 2),  # fp32 rmsnorm: 32 whole iterations, ceil(304 / 12) = 26 -> per 2 -> G 16
    (151, 131072, 8, 1, 304): (3, 3),  # 2 * 151 < 304: still split, ceil(304 / 151) = 3
    (152, 131072, 8, 1, 304): (1, 0),  # 152 workgroups fill half the CUs: the looped path
    (127, 131072, 8, 1, 256): (3, 3),  # MI355X's 256 CUs
    (128, 131072, 8, 1, 256): (1, 0),
    (1, 1 << 20, 8, 1, 304): (64, 1),  # G capped by the row's whole iterations
    (1, 1 << 24, 8, 1, 304): (256, 4),  # G capped by the CUs: 304 -> per 4 -> 256, none left empty
    (8, 32776, 8, 1, 304): (2, 1),  # 2 whole iterations (the second workgroup also takes the 1-vector tail)
    (8, 32768, 8, 1, 304): (1, 0),  # register path
    (8, 131072, 8, 1, None): (1, 0),  # no compute_units in op.json: never split
}


def split_rule():
    """The future of the child that asks kernel.split() for SPLIT_CASES."""
    cases = json.dumps([list(k) for k in SPLIT_CASES])
    return flydsl_batch.child([sys.executable, "-c", SPLIT_RULE, str(MODELS), cases], timeout=600)


@needs_flydsl
def test_split_rule():
    """kernel.split(): only looped rows, only when 2 * M < CUs, G = min(ceil(CUs / M), whole iterations, 512), then
    per = ceil(whole / G) and G = ceil(whole / per) (none left empty, each with a whole iteration)."""
    done = split_rule().result()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    got = dict(zip(SPLIT_CASES, map(tuple, json.loads(done.stdout.strip().splitlines()[-1]))))
    assert got == SPLIT_CASES
