"""What a hostile new user tries against the workspace tools (issue 31): a missing workspace, a truncated
results.json, a file that is not an op.json, a gpu-wiki that is a file, bad timeouts. Each is one line naming
the problem and the fix, a non-zero exit, and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tools import scaffold, spec


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """A workspace arranged as a bake leaves it (no bake step: no git, no records)."""
    dest = tmp_path_factory.mktemp("hostile") / "matmul_bf16"
    return scaffold.workspace(dest, spec.context(op_name="matmul_bf16", run_baseline="no"))


def tool(ws, name, *args, env=None):
    return subprocess.run([sys.executable, str(ws / "tools" / name), *args], capture_output=True, text=True, cwd=ws,
                          timeout=120, env=env)


def one_line(done, starts: str, says: str) -> None:
    lines = (done.stdout + done.stderr).splitlines()
    assert done.returncode != 0 and len(lines) == 1, lines
    assert lines[0].startswith(starts) and says in lines[0], lines[0]


def test_isa_metrics_of_a_missing_workspace(ws, tmp_path):
    one_line(tool(ws, "isa_metrics.py", "--workspace", str(tmp_path / "nonexistent")), "isa_metrics: error:",
             "op.json does not exist (--workspace is the folder holding op.json)")


def test_roofline_with_a_truncated_results_json(ws):
    results = ws / "results" / "results.json"
    results.write_text('{"ran": true, "cases": [{"name": "big", "sta')
    try:
        one_line(tool(ws, "roofline.py"), "roofline: error:", "results.json is not valid JSON")
    finally:
        results.unlink()
    assert not (ws / "results" / "roofline.png").exists()


@pytest.mark.parametrize("path, says", [("/etc/passwd", "is not valid JSON"), ("/dev/zero", "a character device"),
                                        ("/", "is a directory, not a regular file")])
def test_wiki_route_op_that_is_not_an_op_json(ws, path, says):
    one_line(tool(ws, "wiki_route.py", "--op", path), "wiki_route: error: --op:", says)


@pytest.mark.parametrize("wiki, says", [("/etc/passwd", "is a regular file, not a folder"),
                                        ("/proc", "a folder without a gpu-wiki in it"),
                                        ("/nonexistent/wiki", "is absent on this machine")])
def test_a_wiki_that_is_no_wiki_is_said_so(ws, wiki, says):
    import report
    import wiki_route

    route = wiki_route.route({"gpu_wiki": wiki})
    assert not route["present"]
    assert says in report.wiki_status({}, route)[0][0]
    assert says.removeprefix("is ") in tool(ws, "wiki_route.py", "--wiki", wiki).stdout


@pytest.mark.parametrize("value", ["0", "nan", "-5", "inf", "soon"])
def test_test_kernel_timeout_must_be_positive_and_finite(ws, value):
    results = ws / "results" / "results.json"
    one_line(subprocess.run([sys.executable, "test_kernel.py", "--timeout", value], cwd=ws, capture_output=True,
                            text=True, timeout=120),
             "test_kernel.py: error: --timeout", "positive number of seconds")
    assert not results.exists()


@pytest.mark.parametrize("value", ["abc", "0", "nan", "-1"])
def test_test_timeout_sec_must_be_positive_and_finite(ws, value):
    done = subprocess.run([sys.executable, "test_kernel.py"], cwd=ws, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TEST_TIMEOUT_SEC": value})
    one_line(done, "test_kernel.py: error: TEST_TIMEOUT_SEC", "positive number of seconds")
    assert not (ws / "results" / "results.json").exists()

