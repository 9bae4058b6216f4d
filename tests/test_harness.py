"""The harness (test_kernel.py) with CPU test doubles: timeouts, unwritten outputs, NaN, the run budget, exit codes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest
import torch
from helpers import load_package, read_json


@pytest.fixture(scope="module")
def workspace(matrix, tmp_path_factory):
    """A copy of the matrix's silu_mul workspace: these tests write results into it."""
    result = matrix[("H200", "silu_mul")]
    assert result.exit_code == 0, result.output
    ws = tmp_path_factory.mktemp("harness") / "ws"
    shutil.copytree(result.project_path, ws)
    return ws


@pytest.fixture(scope="module")
def harness(workspace):
    return load_package(workspace, "harness_ws").test_kernel


@pytest.fixture(scope="module")
def reference(workspace):
    return load_package(workspace, "harness_ws").reference


def cases(*names):
    return [{"name": n, "role": "boundary", "dims": [3, 17], "vars": {}, "timed": False} for n in names]


def good_kernel(x, y, out):
    out.copy_(torch.nn.functional.silu(x.float()) * y.float())


def run(harness, reference, kernel, names, **kw):
    kw.setdefault("case_timeout", 5)
    return harness.run_cases(cases(*names), kernel, reference.reference, reference.make_inputs, device="cpu",
                             torch_dtype=torch.bfloat16, tolerance=1e-2, **kw)


def test_correct_kernel_passes(harness, reference):
    records = run(harness, reference, good_kernel, ["a", "b"])
    assert [r["status"] for r in records] == ["PASS", "PASS"]
    assert all(0 < r["rel_err"] < 1e-2 for r in records)


def test_hanging_case_times_out_and_later_cases_still_run(harness, reference):
    def kernel(x, y, out):
        if x.shape == (3, 17) and not getattr(kernel, "hung", False):
            kernel.hung = True
            time.sleep(60)
        good_kernel(x, y, out)

    started = time.monotonic()
    records = run(harness, reference, kernel, ["hangs", "after"], case_timeout=1)
    assert time.monotonic() - started < 20
    assert [r["status"] for r in records] == ["TIMEOUT_FAIL", "PASS"]
    assert "TEST_TIMEOUT_SEC" in records[0]["error"]


def test_kernel_that_writes_nothing_fails(harness, reference):
    records = run(harness, reference, lambda x, y, out: None, ["lazy"])
    assert records[0]["status"] == "FAIL" and "NaN" in records[0]["error"] and records[0]["rel_err"] is None


def test_kernel_that_writes_half_fails(harness, reference):
    def half(x, y, out):
        out[:1].copy_(torch.nn.functional.silu(x[:1]) * y[:1])

    assert run(harness, reference, half, ["half"])[0]["status"] == "FAIL"


def test_nan_output_fails(harness, reference):
    def nan(x, y, out):
        good_kernel(x, y, out)
        out[0, 0] = float("nan")

    records = run(harness, reference, nan, ["nan"])
    assert records[0]["status"] == "FAIL"


def test_wrong_answer_fails_on_tolerance(harness, reference):
    records = run(harness, reference, lambda x, y, out: out.copy_(x * y), ["wrong"])
    assert records[0]["status"] == "FAIL" and "tolerance" in records[0]["error"]


def test_crash_is_a_fail_and_the_run_goes_on(harness, reference):
    def crash(x, y, out):
        raise RuntimeError("illegal memory access")

    records = run(harness, reference, crash, ["boom"])
    assert records[0]["status"] == "FAIL" and "illegal memory access" in records[0]["error"]


def test_exhausted_run_budget_marks_remaining_cases(harness, reference):
    records = run(harness, reference, good_kernel, ["a", "b"], deadline=time.monotonic() - 1)
    assert [r["status"] for r in records] == ["TIMEOUT_FAIL", "TIMEOUT_FAIL"]


def test_inputs_are_fresh_and_never_zero(reference):
    a = reference.make_inputs({"dims": [64]}, torch.float32, "cpu", 1)
    b = reference.make_inputs({"dims": [64]}, torch.float32, "cpu", 2)
    assert not torch.equal(a[0], b[0]) and (a[0] != 0).all()


def test_without_gpu_the_harness_says_not_run(workspace):
    done = subprocess.run([sys.executable, "test_kernel.py"], cwd=workspace, capture_output=True, text=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "NOT RUN" in done.stdout and "PASS" not in done.stdout
    results = read_json(workspace / "results" / "results.json")
    assert results["ran"] is False and {c["status"] for c in results["cases"]} == {"NOT_RUN"}


def test_unknown_case_is_refused_and_nothing_written(workspace):
    results = workspace / "results"
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    done = subprocess.run([sys.executable, "test_kernel.py", "--case", "typo"], cwd=workspace, capture_output=True,
                          text=True)
    known = [c["name"] for c in read_json(workspace / "op.json")["cases"]]
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stdout + done.stderr
    assert "--case typo: not a case of op.json" in lines[0] and all(name in lines[0] for name in known)
    assert done.stdout == "" and {p: p.read_bytes() for p in results.rglob("*") if p.is_file()} == before


def test_a_threshold_on_a_rounded_value_may_flip_a_few_elements_and_no_more(harness, monkeypatch):
    """min-p sampling masks `probs < min_p * max(probs)` on a bf16 softmax: the kernel rounds probs as the function
    does, the float64 reference does not, so an element at the threshold may be -inf on one side only. Only a
    function that compares a rounded value (op.json lowering.rounded_thresholds) gets that allowance, at most
    THRESHOLD_FLIP_SHARE of an output, each counted; the rest of the output is held to the tolerance as always."""
    ref = torch.tensor([1.0, float("-inf"), 3.0, 2.0] * 500, dtype=torch.float64)
    flipped = ref.clone()
    flipped[2] = float("-inf")  # one element decided the other way
    assert harness.allowed_flips(ref) == 0  # a built-in op, or a function with no such threshold: none
    assert harness.rel_err(flipped, ref, harness.allowed_flips(ref)) != harness.rel_err(flipped, ref)  # NaN: FAIL
    monkeypatch.setitem(harness.OP, "lowering", {"rounded_thresholds": 1})
    allowed = harness.allowed_flips(ref)
    assert allowed == 2 and harness.special_mismatches(flipped, ref) == 1
    assert harness.rel_err(flipped, ref, allowed) == 0.0  # the finite rest agrees exactly
    flipped[6] = flipped[10] = float("-inf")  # three: more than the share allows
    assert harness.rel_err(flipped, ref, allowed) != harness.rel_err(flipped, ref, allowed)
    off = ref * 1.05  # finite elements 5% off still fail on their own
    assert harness.rel_err(off, ref, allowed) == pytest.approx(0.05)


def test_rel_err_holds_nan_and_inf_to_the_reference(harness):
    """A reference NaN (var of one element) must be matched exactly; a NaN or inf anywhere else fails, either way."""
    ref = torch.tensor([1.0, float("nan"), float("inf"), 2.0], dtype=torch.float64)
    assert harness.rel_err(ref.clone(), ref) == 0.0
    near = torch.tensor([1.001, float("nan"), float("inf"), 2.0], dtype=torch.float64)
    assert harness.rel_err(near, ref) == pytest.approx(0.001 / 5 ** 0.5)
    for bad in ([1.0, 0.0, float("inf"), 2.0], [1.0, float("nan"), 5.0, 2.0], [float("nan"), float("nan"),
                                                                                 float("inf"), 2.0],
                [1.0, float("nan"), float("-inf"), 2.0]):
        assert harness.rel_err(torch.tensor(bad), ref) != harness.rel_err(torch.tensor(bad), ref)  # NaN: a FAIL
