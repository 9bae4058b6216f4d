"""A bake onto a folder that already exists: refuse a workspace with history, replace one that is only a scaffold.

Template-side. cookiecutter's ``-f`` (``--overwrite-if-exists``) copies the template over whatever is there, and
``-s`` (``--skip-if-file-exists``) keeps some old files beside new ones: either would silently revert a kernel the
user edited, reset memory/v0.json, or mix two bakes. So before anything is written (while prompting, right after
op_name, and again in the pre-gen step, which also covers ``--replay``):

- a folder that is not a kbaseline workspace, or a workspace with history (commits after its scaffold commit,
  uncommitted changes, or memory beyond v0), is refused with one line that says how to start over;
- ``-s`` onto an existing workspace is refused (it would mix two bakes);
- with ``-f``, a workspace that is only its scaffold (one "Scaffold ..." commit, a clean tree, memory/v0.json
  alone) is emptied and baked afresh, since everything in it is what the bake writes again.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tools.catalog import InputError


def _git(ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True)


def _few(names: list[str], limit: int = 3) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def history(ws: Path) -> list[str]:
    """Why `ws` holds work a bake must not overwrite; [] when it is only a kbaseline scaffold."""
    top = _git(ws, "rev-parse", "--show-toplevel")
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != ws.resolve():
        what = "a workspace without its git repository" if (ws / "op.json").is_file() else "not a kbaseline workspace"
        return [f"{what}, so its work cannot be told from a scaffold"]
    subjects = _git(ws, "log", "--format=%s").stdout.splitlines()
    reasons = []
    if not subjects:
        reasons.append("no scaffold commit")
    elif len(subjects) > 1:
        reasons.append(f"{len(subjects) - 1} commit(s) after the scaffold")
    elif not subjects[0].startswith("Scaffold "):
        reasons.append(f"a commit that is not a kbaseline scaffold ('{subjects[0][:40]}')")
    changed = [line[3:] for line in _git(ws, "status", "--porcelain", "--untracked-files=all").stdout.splitlines()]
    if changed:
        reasons.append(f"uncommitted changes in {_few(changed)}")
    memory = sorted(p.name for p in (ws / "memory").glob("*.json") if p.name != "v0.json")
    if memory:
        reasons.append(f"memory beyond v0 ({_few(memory)})")
    return reasons


def check(ws: Path, overwrite: bool, skip: bool) -> None:
    """Raise InputError (one line) when a bake may not write into `ws`."""
    if not ws.exists() and not ws.is_symlink():
        return
    if not ws.is_dir():
        raise InputError(f"op_name: {ws} exists and is not a folder; choose another op_name or -o folder")
    if not any(ws.iterdir()):
        return
    if not overwrite and not skip:
        raise InputError(f"op_name: {ws} already exists; choose another op_name or -o folder, or pass -f "
                         "(--overwrite-if-exists) to replace a workspace that has no history")
    reasons = history(ws)
    if reasons:
        raise InputError(f"op_name: {ws} has history ({'; '.join(reasons)}); nothing was changed. To start over, move "
                         f"it away (mv {ws} {ws}.old) or choose another op_name; to keep working on it, cd {ws}")
    if skip:
        raise InputError(f"op_name: -s (--skip-if-file-exists) would mix this bake with the files of {ws}; pass -f "
                         "alone to replace it (it has no history), or choose another op_name")


def prepare(ws: Path, overwrite: bool, skip: bool) -> None:
    """In the pre-gen step (`ws` exists: cookiecutter made it, or -f found it): check, then empty a scaffold-only
    workspace so that the bake starts from nothing."""
    if not any(ws.iterdir()):
        return
    check(ws, overwrite, skip)
    print(f"kbaseline: replacing {ws}: it held only its scaffold (no commits after it, no changes, no memory "
          "beyond v0)", flush=True)
    for item in list(ws.iterdir()):
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink()


def remove_if_empty(ws: Path) -> None:
    """Remove the folder cookiecutter made for a bake that was then refused (only while nothing is in it)."""
    try:
        ws.rmdir()
    except FileNotFoundError:
        pass
    except OSError as err:
        print(f"kbaseline: note: {ws} was left in place ({err.strerror})", file=sys.stderr)
