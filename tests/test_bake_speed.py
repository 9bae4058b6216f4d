"""Speed of a bake on a machine without a GPU: what the bake step imports, and the FlyDSL compile it announces.

The timings themselves (a Hopper bake in <= 2 s, the FlyDSL compile under 10 s) depend on the machine and are
measured by benchmarks/bake_time.py (benchmarks/2026-12-01-bake-time.md); these tests hold the causes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from helpers import read_json, user_env

HEAVY = ("torch", "cutlass", "matplotlib", "flydsl")


def test_bake_step_imports_no_torch_dsl_or_matplotlib(matrix, tmp_path):
    """`run_baseline.py --bake` with no GPU: gpu_detect does not import torch to find none (no device node), and
    the NOT RUN records import neither the kernel's DSL nor matplotlib."""
    ws = tmp_path / "ws"
    shutil.copytree(matrix[("H200", "matmul")].project_path, ws)
    shutil.rmtree(ws / ".git")  # as the post-gen hook finds it: arranged, not yet committed
    done = subprocess.run([sys.executable, "-X", "importtime", "tools/run_baseline.py", "--bake"], cwd=ws,
                          capture_output=True, text=True, timeout=300, env=user_env())
    assert done.returncode == 0, done.stdout + done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert not {name for name in imported if name.split(".")[0] in HEAVY}
    assert "Not described at bake time" in (ws / "plans" / "v0_plan.md").read_text()


def test_amd_bake_says_it_compiles_while_it_runs(matrix):
    """The FlyDSL bake compiles for a few seconds: it says so before the compile (flushed, so also through a pipe
    without PYTHONUNBUFFERED), and says how long it took."""
    baked = matrix[("MI300X", "matmul")]
    lines = baked.output.splitlines()
    announce = next(i for i, line in enumerate(lines) if line.startswith("kbaseline: compiling the kernel for gfx942"))
    compiled = next(i for i, line in enumerate(lines) if line.startswith("compile-only: flydsl matmul bf16 -> gfx942"))
    assert announce < compiled, "the compile was announced only after it had run"
    took = next(i for i, line in enumerate(lines) if line.startswith("kbaseline: compile step took "))
    assert compiled < took
    assert read_json(baked.project_path / "results" / "compile_only.json")["seconds"] > 0


def test_a_built_in_program_is_traced_once(tmp_path, monkeypatch):
    """A built-in op's program (programs.py) is lowered on its first bake and read back from the cache after: the
    second lowering traces nothing (the tracer would raise), and the IR is the same."""
    from tools import lower, registry

    monkeypatch.setattr(lower, "CACHE", tmp_path / "programs")
    first = lower.lower_builtin(registry.programs_path("reduction"), "softmax")
    assert first["ok"] and len(list((tmp_path / "programs").glob("reduction-softmax-*.json"))) == 1

    def no_trace(*args, **kwargs):
        raise AssertionError("traced again")

    monkeypatch.setattr(lower, "lower_here", no_trace)
    assert lower.lower_builtin(registry.programs_path("reduction"), "softmax") == first
