"""A default bake on a machine without a GPU completes and says NOT RUN everywhere, never PASS."""

from __future__ import annotations

import json
import os
import subprocess

import jsonschema
import pytest
from helpers import AMD_MATRIX, ROOT, bake_cli, read_json


def test_default_bake_on_cpu_is_honest(matrix):
    """The matrix bakes the default cell with no key=value at all: README's `cookiecutter . --no-input`."""
    done = matrix[("H200", "matmul")]
    assert done.exit_code == 0, done.output
    assert "V0 not run: no NVIDIA GPU" in done.output
    ws = done.project_path
    assert ws.name == "matmul_bf16"  # the default op_name
    spec = read_json(ws / "op.json")
    assert (spec["pattern"], spec["op"], spec["gpu"], spec["dtype"]) == ("gemm", "matmul", "H200", "bf16")

    report = (ws / "baseline_report.md").read_text()
    assert "**Status: NOT RUN**: no NVIDIA GPU" in report
    assert "PASS" not in report.replace("NOT_RUN", "")

    memory = read_json(ws / "memory" / "v0.json")
    jsonschema.validate(memory, json.loads((ROOT / "reference" / "v_iteration.schema.json").read_text()))
    assert memory["correctness"]["status"] == "NOT_RUN"
    assert memory["quality_gate"]["result"] == "NOT_RUN"
    assert memory["performance"]["latency_us"] is None
    assert "PASS" not in json.dumps(memory)
    assert memory["git_commit_hash"] is None or len(memory["git_commit_hash"]) >= 7

    plan = (ws / "plans" / "v0_plan.md").read_text()
    assert "Phase 1: semantics" in plan and "/tmp/gpu-wiki" in plan

    log = subprocess.run(["git", "log", "--format=%s"], cwd=ws, capture_output=True, text=True).stdout
    assert "V0 not run: no NVIDIA GPU" in log and "V0: baseline kernel" not in log


def test_git_commit_works_without_a_user_identity(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    env = {k: v for k, v in env.items() if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER", "EMAIL"))}
    out = tmp_path / "out"
    out.mkdir()
    done = bake_cli(out, "op_name=noid", env=env)
    assert done.returncode == 0, done.stderr
    author = subprocess.run(["git", "log", "--format=%an <%ae>"], cwd=out / "noid", capture_output=True, text=True)
    assert author.stdout.strip() == "kbaseline <kbaseline@localhost>"


@pytest.mark.parametrize(("gpu", "op"), [(gpu, op) for gpu, _, op, _ in AMD_MATRIX])
def test_amd_bake_on_cpu_says_compiled_not_run(matrix, gpu, op):
    """No AMD GPU here: the FlyDSL kernel is compiled to real ISA at bake time, and nothing claims it ran."""
    ws = matrix[(gpu, op)].project_path
    target = "gfx950" if gpu == "MI355X" else "gfx942"
    check = read_json(ws / "results" / "compile_only.json")
    assert check["ok"] and check["target"] == target and check["checks"]
    assert (ws / "build" / check["isa_file"]).read_text().count(f"amdgcn-amd-amdhsa-unknown-{target}") >= 1
    report = (ws / "baseline_report.md").read_text()
    assert f"compiled for {target}; not run on hardware: no AMD GPU" in report
    memory = read_json(ws / "memory" / "v0.json")
    assert memory["correctness"]["status"] == "NOT_RUN" and "PASS" not in json.dumps(memory)
    assert "PASS" not in report.replace("NOT_RUN", "")


def test_bake_inside_a_git_repository_commits_only_to_its_own(tmp_path):
    """`cookiecutter . --no-input` in the template clone bakes into a repository: that repository gets no commit."""
    outer = tmp_path / "outer"
    outer.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=outer, check=True)
    done = bake_cli(outer, "op_name=inner")
    assert done.returncode == 0, done.stderr
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=outer, capture_output=True).returncode != 0  # no commit
    ws = outer / "inner"
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=ws, capture_output=True, text=True).stdout.strip()
    assert top == str(ws.resolve())
    log = subprocess.run(["git", "log", "--format=%s"], cwd=ws, capture_output=True, text=True).stdout.splitlines()
    assert len(log) == 1 and log[0].startswith("Scaffold inner")
