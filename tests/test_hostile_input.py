"""What a hostile new user tries against the workspace tools (issue 31): a missing workspace, a truncated
results.json, a file that is not an op.json, a gpu-wiki that is a file, bad timeouts. Each is one line naming
the problem and the fix, a non-zero exit, and nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT

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



# ------------------------------------------------------------------------------------ the template side (issue 31)

def _state(pid: int) -> str:
    """A process's state letter from /proc ('Z' a zombie: dead, not yet reaped), or 'gone'."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return "gone"


def test_user_code_runs_in_its_own_process_group_killed_whole(tmp_path):
    """A logic file that starts a subprocess at import (which inherits the output) is traced in about its own time,
    not reported as a timeout, and nothing it started outlives the trace; os._exit(0) is said to be that."""
    from tools import lower

    pid_file = tmp_path / "pid"
    (tmp_path / "spawn.py").write_text(
        "import subprocess, sys\n"
        f"p = subprocess.Popen(['sleep', '120'])\nopen({str(pid_file)!r}, 'w').write(str(p.pid))\n\n\n"
        "def f(x):\n    return x * 2\n")
    result = lower.lower(str(tmp_path / "spawn.py"), "f", timeout=60)
    assert result["ok"], result
    pid, deadline = int(pid_file.read_text()), time.monotonic() + 10
    while (state := _state(pid)) not in ("gone", "Z") and time.monotonic() < deadline:  # SIGKILL lands in a moment
        time.sleep(0.05)
    assert state in ("gone", "Z"), f"the grandchild {pid} outlived the trace ({state})"
    (tmp_path / "quits.py").write_text("import os\nos._exit(0)\n\n\ndef f(x):\n    return x\n")
    result = lower.lower(str(tmp_path / "quits.py"), "f")
    assert "ends the process itself (os._exit?)" in result["error"], result


@pytest.mark.parametrize("make, says", [
    (lambda d: (d / "ops.py").write_text("f = lambda x: x * 2\n"), "'f' in"),
    (lambda d: (d / "ops.py").mkdir(), "is a directory, not a file"),
    (lambda d: (d / "ops.py").symlink_to("/dev/zero"), "is a character device (a symlink to /dev/zero), not a file"),
])
def test_a_logic_path_says_what_it_is(tmp_path, make, says):
    from tools import validate
    from tools.catalog import InputError

    make(tmp_path)
    with pytest.raises(InputError, match="pytorch_logic: ") as err:
        validate.check_logic_file(str(tmp_path / "ops.py") + ":f")
    assert says in str(err.value) and ("lambda" in str(err.value)) == ("lambda" in says or "'f' in" in says)


def test_files_the_logic_reads_from_its_folder_are_copied(tmp_path):
    from tools import validate

    (tmp_path / "table.json").write_text("[1, 2]\n")
    (tmp_path / "ops.py").write_text("import json\nfrom pathlib import Path\n\n"
                                     "TABLE = json.loads((Path(__file__).parent / 'table.json').read_text())\n\n\n"
                                     "def f(x):\n    return x * TABLE[0]\n")
    assert validate.check_logic_file(str(tmp_path / "ops.py"))["siblings"] == ["table.json"]


@pytest.mark.parametrize("wiki, says", [("/etc/passwd", "is a regular file, not a folder"),
                                        ("/dev/null", "is a character device, not a folder"),
                                        ("/etc/passwd/x", "cannot be looked up (Not a directory)"),
                                        ("/" + "a" * 300, "cannot be looked up (File name too long)")])
def test_gpu_wiki_that_is_not_a_folder_is_refused(wiki, says):
    from tools import validate
    from tools.catalog import InputError

    with pytest.raises(InputError, match="gpu_wiki: ") as err:
        validate._gpu_wiki({"gpu_wiki": wiki, "__cwd": "/"}, {})
    assert says in str(err.value)


def test_a_long_value_is_echoed_cut_and_a_reasked_prompt_keeps_its_counter(monkeypatch):
    import local_extensions
    from rich import prompt
    from tools.catalog import InputError

    line = local_extensions._line(InputError(f"gpu: '{'a' * 100_000}' is not a supported GPU; choose one of H200"))
    assert len(line) < 200 and "(100000 characters)" in line and line.endswith("choose one of H200")
    asked = []
    monkeypatch.setattr(prompt.Prompt, "ask", lambda text, default=None: asked.append(text) or default)
    local_extensions._ask_again(local_extensions.jinja2.Environment(), {"pattern": "gemm"}, "gpu")
    assert asked[0].startswith("  [dim][5/10][/] Target GPU"), asked


def test_the_post_gen_hook_holds_no_path(tmp_path):
    """A template cloned under a path holding quotes and code bakes: no path or value is pasted into hook code."""
    root = tmp_path / 'x"); import os; os.system("touch PWNED"); ("'
    root.mkdir()
    for name in ("cookiecutter.json", "local_extensions.py"):
        shutil.copy2(ROOT / name, root / name)
    for name in ("hooks", "tools", "reference", "{{cookiecutter.op_name}}"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run([sys.executable, "-m", "cookiecutter", str(root), "--no-input", "-o", str(out), "op_name=ws",
                           "gpu_wiki=/tmp/\"\"\"'; import os"], capture_output=True, text=True, cwd=out, timeout=300)
    assert done.returncode == 0 and (out / "ws" / ".git").is_dir(), done.stdout + done.stderr
    assert "Traceback" not in done.stderr and not list(tmp_path.rglob("PWNED"))
    assert json.loads((out / "ws" / "op.json").read_text())["gpu_wiki"] == "/tmp/\"\"\"'; import os"


def test_output_folder_that_is_a_file_or_a_disk_that_fills_is_one_line(tmp_path):
    """-o onto a file: one line before anything is written. A full disk while cookiecutter copies: one line, and the
    half-built folder this bake made is removed (so a re-bake is not blocked)."""
    (tmp_path / "afile").write_text("")
    done = subprocess.run([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(tmp_path / "afile"),
                           "op_name=ws"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    one_line(done, "kbaseline: error: -o:", "is a file; give a folder")
    full = ("import errno, shutil, sys\n"
            "calls = [0]\n"
            "def copyfile(src, dst, *a, **k):\n"
            "    calls[0] += 1\n"
            "    if calls[0] > 5:\n"
            "        raise OSError(errno.ENOSPC, 'No space left on device', dst)\n"
            "    return real(src, dst, *a, **k)\n"
            "real, shutil.copyfile = shutil.copyfile, copyfile\n"
            "from cookiecutter.__main__ import main\n"
            f"sys.argv = ['cookiecutter', {str(ROOT)!r}, '--no-input', '-o', {str(tmp_path / 'out')!r}, 'op_name=ws']\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", full], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    one_line(done, "kbaseline: error: writing the workspace failed: No space left on device", "was removed")
    assert not (tmp_path / "out" / "ws").exists()
