"""A bake onto a folder that already exists: refuse a workspace with history, replace one that is only a scaffold.

Template-side. cookiecutter's ``-f`` (``--overwrite-if-exists``) copies the template over whatever is there, and
``-s`` (``--skip-if-file-exists``) keeps some old files beside new ones: either would silently revert a kernel the
user edited, reset memory/v0.json, or mix two bakes. So before anything is written (while prompting, right after
op_name, and again in the pre-gen step, which also covers ``--replay``):

- a folder that is not a kbaseline workspace, or a workspace with history (commits after its scaffold commit,
  uncommitted changes, or memory beyond v0), is refused with one line that says how to start over;
- ``-s`` onto an existing workspace is refused (it would mix two bakes);
- with ``-f``, a workspace that is only its scaffold (one "Scaffold ..." commit, a clean tree, memory/v0.json
  alone, no stash, no other branch or tag, no commit left in its reflog, no ignored file but caches and the
  compile-only build) is moved aside to ``<name>.old-<timestamp>``, saying where, and baked afresh. Nothing a user
  made is deleted: even a scaffold's folder is kept whole, ``.git`` included.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
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
    reasons += _kept_by_git(ws)
    memory = sorted(p.name for p in (ws / "memory").glob("*.json") if p.name != "v0.json")
    if memory:
        reasons.append(f"memory beyond v0 ({_few(memory)})")
    return reasons


BAKE_IGNORED = ("__pycache__/", "build/kernel_")  # ignored files a bake itself leaves: caches, the compile-only ISA


def _kept_by_git(ws: Path) -> list[str]:
    """What git holds beyond the tree and the branch's log: stashes, other refs, reflog-only commits, ignored files."""
    reasons = []
    stashes = _git(ws, "stash", "list").stdout.splitlines()
    if stashes:
        reasons.append(f"{len(stashes)} stash(es)")
    head = _git(ws, "symbolic-ref", "-q", "HEAD").stdout.strip()
    refs = [r for r in _git(ws, "for-each-ref", "--format=%(refname)").stdout.splitlines()
            if r not in (head, "refs/stash")]
    if refs:
        reasons.append(f"other refs ({_few([r.removeprefix('refs/heads/') for r in refs])})")
    reachable = set(_git(ws, "rev-list", "HEAD").stdout.split())
    lost = set(_git(ws, "log", "-g", "--format=%H", "HEAD").stdout.split()) - reachable
    if lost:
        reasons.append(f"{len(lost)} commit(s) only in the reflog (amended or reset)")
    ignored = [line[3:] for line in _git(ws, "status", "--porcelain", "--ignored", "--untracked-files=all").stdout.splitlines()
               if line.startswith("!! ") and not any(mark in "/" + line[3:] for mark in ("/" + m for m in BAKE_IGNORED))]
    if ignored:
        reasons.append(f"git-ignored files ({_few(ignored)})")
    return reasons


def check_output_dir(out: Path) -> None:
    """Raise InputError (one line) when the -o folder cannot take a workspace: a file, or not writable."""
    found = next(p for p in (out, *out.parents) if p.exists() or p.is_symlink())
    if not found.is_dir():
        what = "a file" if found.is_file() else "not a folder"
        raise InputError(f"-o: {found} is {what}; give a folder to bake into (-o <folder>, made if missing)")
    if not os.access(found, os.W_OK | os.X_OK):
        raise InputError(f"-o: {found} is not writable here; give a folder you can write (-o <folder>), or change "
                         "its permissions")


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


def aside(ws: Path) -> Path:
    """A free name beside `ws` for its old folder: `<name>.old-<timestamp>` (then `-2`, `-3`, ...)."""
    base = ws.with_name(f"{ws.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
    found, n = base, 1
    while found.exists() or found.is_symlink():
        n += 1
        found = base.with_name(f"{base.name}-{n}")
    return found


def prepare(ws: Path, overwrite: bool, skip: bool) -> Path | None:
    """In the pre-gen step (`ws` exists: cookiecutter made it, or -f found it): check, then move a scaffold-only
    workspace aside whole (and leave an empty folder in its place, where the bake goes on). Returns where it went."""
    if not any(ws.iterdir()):
        return None
    check(ws, overwrite, skip)
    old = aside(ws)
    os.rename(ws, old)
    ws.mkdir()
    print(f"kbaseline: replacing {ws}: it held only its scaffold (no commits after it, no changes, no memory "
          f"beyond v0); the old folder is kept whole at {old} (remove it when you do not need it)", flush=True)
    return old


def remove_if_empty(ws: Path) -> None:
    """Remove the folder cookiecutter made for a bake that was then refused (only while nothing is in it)."""
    try:
        ws.rmdir()
    except FileNotFoundError:
        pass
    except OSError as err:
        print(f"kbaseline: note: {ws} was left in place ({err.strerror})", file=sys.stderr)
