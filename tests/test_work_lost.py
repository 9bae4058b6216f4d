"""Work lost: a bake onto an existing workspace, Ctrl-C during a bake, and a git setup that refuses to commit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from helpers import ROOT, bake_cli, read_json, user_env

import run_baseline


def git(ws, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=ws, capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture
def scaffold_only(tmp_path):
    """A workspace as a bake leaves it, by hand: op.json, kernel.py and memory/v0.json in one Scaffold commit."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for name in ("op.json", "kernel.py", "memory/v0.json"):
        (ws / name).write_text("{}\n")
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "commit", "-qm", "Scaffold ws: matmul bf16 gemm for H200")
    return ws


def test_history_tells_work_from_a_scaffold(scaffold_only, tmp_path):
    from tools import overwrite

    ws = scaffold_only
    assert overwrite.history(ws) == []
    (ws / "kernel.py").write_text("# my edit\n")
    assert overwrite.history(ws) == ["uncommitted changes in kernel.py"]
    git(ws, "commit", "-qam", "faster kernel")
    assert overwrite.history(ws) == ["1 commit(s) after the scaffold"]
    (ws / "memory" / "v1.json").write_text("{}\n")
    assert overwrite.history(ws)[-1] == "memory beyond v0 (v1.json)"
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("mine\n")
    assert overwrite.history(other) == ["not a kbaseline workspace, so its work cannot be told from a scaffold"]


def test_what_git_keeps_is_history_and_a_replaced_scaffold_is_moved_aside_whole(scaffold_only, capsys):
    """Stashes, other branches, a commit amended into the scaffold and ignored files are work; a scaffold that -f
    replaces is moved aside whole (.git included) to <name>.old-<timestamp>, never deleted."""
    from tools import overwrite

    ws = scaffold_only
    (ws / ".gitignore").write_text("build/\n*.tmp\n__pycache__/\n")
    git(ws, "add", ".gitignore")
    git(ws, "commit", "-q", "--amend", "--no-edit")
    assert overwrite.history(ws) == ["1 commit(s) only in the reflog (amended or reset)"]
    git(ws, "reflog", "expire", "--expire=all", "--all")
    git(ws, "prune")
    assert overwrite.history(ws) == []
    (ws / "build").mkdir()
    (ws / "build" / "prof.ncu-rep").write_text("profile\n")
    (ws / "__pycache__").mkdir()
    (ws / "__pycache__" / "x.pyc").write_text("")
    assert overwrite.history(ws) == ["git-ignored files (build/prof.ncu-rep)"]
    (ws / "build" / "prof.ncu-rep").unlink()
    git(ws, "branch", "experiment")
    assert overwrite.history(ws) == ["other refs (experiment)"]
    git(ws, "branch", "-D", "experiment")
    (ws / "kernel.py").write_text("# stashed edit\n")
    git(ws, "stash", "-q")
    assert overwrite.history(ws)[0] == "1 stash(es)"
    git(ws, "stash", "drop", "-q")
    old = overwrite.prepare(ws, overwrite=True, skip=False)
    assert ws.is_dir() and not any(ws.iterdir())
    assert old.name.startswith("ws.old-") and (old / ".git").is_dir() and (old / "kernel.py").is_file()
    assert f"the old folder is kept whole at {old}" in capsys.readouterr().out


def test_overwrite_refuses_a_workspace_with_history_and_replaces_a_scaffold(tmp_path):
    """-f onto an edited workspace is refused in one line and nothing changes; -s is refused; -f onto a workspace
    that is only its scaffold replaces it whole (no file of the old bake survives)."""
    assert bake_cli(tmp_path, "op_name=ws").returncode == 0
    ws = tmp_path / "ws"
    kernel = ws / "kernel.py"
    kernel.write_text(kernel.read_text() + "# my edit\n")
    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file()}
    for flags in (["-f"], ["-f", "-s"]):
        done = bake_cli(tmp_path, *flags, "op_name=ws", "gpu=H100")
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        assert done.returncode == 1 and len(lines) == 1, lines
        assert lines[0].startswith(f"kbaseline: error: op_name: {ws} has history (uncommitted changes in kernel.py); "
                                   f"nothing was changed. To start over, move it away (mv {ws} {ws}.old)")
        assert {p: p.read_bytes() for p in ws.rglob("*") if p.is_file()} == before
    git(ws, "checkout", "kernel.py")
    (ws / "results" / "stale.json").write_text("{}")  # untracked: also work the bake would drop
    assert "uncommitted changes in results/stale.json" in bake_cli(tmp_path, "-f", "op_name=ws").stderr
    (ws / "results" / "stale.json").unlink()
    assert "would mix this bake with the files of" in bake_cli(tmp_path, "-f", "-s", "op_name=ws").stderr
    done = bake_cli(tmp_path, "-f", "op_name=ws", "gpu=H100")
    assert done.returncode == 0 and "kbaseline: replacing" in done.stdout, done.stdout + done.stderr
    assert read_json(ws / "op.json")["gpu"] == "H100" and "H100" in (ws / "README.md").read_text()
    assert git(ws, "log", "--format=%s").splitlines()[0].startswith("Scaffold ws: matmul bf16 gemm for H100")
    assert len(git(ws, "log", "--format=%s").splitlines()) == 1 and git(ws, "status", "--porcelain") == ""


def test_ctrl_c_during_a_bake_finishes_it(tmp_path):
    """SIGINT to the whole process group (what Ctrl-C sends) once the bake has begun: the bake finishes, and what
    was in the output folder before is untouched."""
    (tmp_path / "mine.txt").write_text("keep\n")
    proc = subprocess.Popen([sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(tmp_path),
                             "op_name=ci"], cwd=tmp_path, env=user_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "ci" / "op.json").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGINT)  # the pre-gen step has just written op.json: files, scaffold, commit follow
    out, _ = proc.communicate(timeout=120)
    assert "kbaseline: interrupted: finishing this bake first" in out, out
    assert proc.returncode == 0, out
    ws = tmp_path / "ci"
    assert (ws / "plans" / "v0_plan.md").is_file() and (ws / "kernel.py").is_file()
    assert git(ws, "log", "--format=%s").startswith("Scaffold ci") and git(ws, "status", "--porcelain") == ""
    assert (tmp_path / "mine.txt").read_text() == "keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ci", "mine.txt"]


def test_scaffold_commit_does_not_need_a_signing_key(tmp_path, monkeypatch):
    """commit.gpgsign=true with no usable key: the scaffold is committed unsigned; a V0 commit git refuses is
    reported with git's reason, not as "nothing to commit"."""
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n[user]\n\tname = t\n\temail = t@t\n")
    env = user_env(GIT_CONFIG_GLOBAL=str(gitconfig), GIT_CONFIG_NOSYSTEM="1")
    out = tmp_path / "out"
    out.mkdir()
    done = bake_cli(out, "op_name=signed", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    ws = out / "signed"
    log = subprocess.run(["git", "log", "--format=%s"], cwd=ws, capture_output=True, text=True, env=env).stdout
    assert log.startswith("Scaffold signed")
    (ws / "README.md").write_text("changed\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    sha, refused = run_baseline.git_commit(ws, "V0: baseline kernel")
    assert sha is None and "failed" in refused


@pytest.fixture
def baked(tmp_path):
    """A Hopper workspace through the bake step itself (arranged by tools/scaffold.py, then its own --bake)."""
    from tools import scaffold, spec

    ws = scaffold.workspace(tmp_path / "ws", spec.context(op_name="ws", run_baseline="no"))
    done = subprocess.run([sys.executable, "tools/run_baseline.py", "--bake"], cwd=ws, capture_output=True, text=True,
                          timeout=300, env=user_env())
    assert done.returncode == 0 and "kbaseline: workspace ws ready" in done.stdout, done.stdout + done.stderr
    return ws


def test_regenerated_documents_keep_uncommitted_edits(baked):
    """`python tools/run_baseline.py` (here with --not-run) regenerates the plan and the report: edits no commit holds
    are kept beside them and said so; a document only a tool wrote is replaced without a copy."""
    ws = baked
    plan, report = ws / "plans" / "v0_plan.md", ws / "baseline_report.md"
    plan.write_text(plan.read_text() + "\nmy plan notes\n")
    report.write_text("my report draft\n")
    done = subprocess.run([sys.executable, "tools/run_baseline.py", "--not-run", "no GPU here"], cwd=ws,
                          capture_output=True, text=True, timeout=300, env=user_env())
    assert done.returncode == 2, done.stdout + done.stderr
    kept = {p.name.split(".")[0]: p for p in ws.rglob("*.orig")}
    assert sorted(kept) == ["baseline_report", "v0_plan"], kept
    assert kept["v0_plan"].read_text().endswith("my plan notes\n") and kept["baseline_report"].read_text() == "my report draft\n"
    assert "my plan notes" not in plan.read_text() and "no GPU here" in report.read_text()
    assert done.stdout.count("had edits of yours that no commit holds") == 2, done.stdout
    again = subprocess.run([sys.executable, "tools/run_baseline.py", "--not-run", "still none"], cwd=ws,
                           capture_output=True, text=True, timeout=300, env=user_env())
    assert "had edits" not in again.stdout and len(list(ws.rglob("*.orig"))) == 2


def test_bake_inside_a_baked_workspace_is_refused(baked):
    """`run_baseline.py --bake` (in its --help) in a workspace that has its scaffold commit: one line, exit 2, and the
    README edit, the kernel edit and the untracked file are as they were, with no second scaffold commit."""
    ws = baked
    (ws / "README.md").write_text("my readme\n")
    (ws / "kernel.py").write_text((ws / "kernel.py").read_text() + "# my edit\n")
    (ws / "notes.txt").write_text("mine\n")
    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git" not in p.parts}
    done = subprocess.run([sys.executable, "tools/run_baseline.py", "--bake"], cwd=ws, capture_output=True, text=True,
                          timeout=300, env=user_env())
    lines = (done.stdout + done.stderr).splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("run_baseline: error: --bake"), lines
    assert {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and ".git" not in p.parts} == before
    assert len(git(ws, "log", "--format=%s").splitlines()) == 1
