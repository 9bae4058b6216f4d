"""How the workspace tools read files and regenerate documents: reads are bounded, and a regenerated document
never silently replaces the user's uncommitted edits.

Reads: every file a tool reads is a regular file, read up to a size cap.

A path that names a directory, a device, a FIFO or a socket (or a symlink to one: `memory/v0.json -> /dev/zero`)
is refused by what it is, before anything is read, and a regular file larger than the cap is refused by its size;
the read itself stops at the cap too, so a file that grows while it is read cannot make a tool read without
bound. Each refusal is a ``FileProblem`` whose str() is one line naming the file, what it is and the fix; a tool
prints it as ``<tool>: error: ...`` (``refuse``) and exits 2.

    read_text(path)            the text of a regular file (at most MAX_BYTES)
    load_json(path)            its JSON; a truncated or hand-broken file is a FileProblem naming the line
    load_json_if_file(path)    None when nothing is there

Regenerated documents (README.md, plans/v0_plan.md, baseline_report.md: ``write_doc``): the new text replaces the
file (temp + rename) when the file is what a tool last wrote there (its hash, kept inside the git directory, so
nothing is left to commit) or what the last commit holds. Otherwise the file holds edits of the user's that no
commit has: they are copied beside it first, to ``<name>.<timestamp>.orig``, and one line says where.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

MAX_BYTES = 64 << 20  # the largest file a workspace tool reads: op.json, records and results are kilobytes
KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
         (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


class FileProblem(ValueError):
    """A file that cannot be read as asked; str() is the one-line reason."""


def kind(mode: int) -> str:
    """What a st_mode names, in words ('a regular file', 'a directory', 'a character device', ...)."""
    return next((words for test, words in KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode) else "not a file")


def read_text(path: str | os.PathLike, limit: int = MAX_BYTES, errors: str = "strict") -> str:
    """The text of the regular file at `path`, refused (FileProblem) when it is anything else or over `limit`."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))  # a FIFO must not block the open
    except FileNotFoundError:
        raise FileProblem(f"{path} does not exist") from None
    except OSError as err:
        raise FileProblem(f"{path} cannot be opened ({err.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        if info.st_size > limit:
            raise FileProblem(f"{path} is {info.st_size} bytes, above the {limit} this tool reads; is it the right file?")
        link = f" (a symlink to {os.path.realpath(path)})" if path.is_symlink() else ""
        raise FileProblem(f"{path} is {kind(info.st_mode)}{link}, not a regular file; point it at a file")
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileProblem(f"{path} grew past {limit} bytes while it was read; is it the right file?")
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as err:
        raise FileProblem(f"{path} is not UTF-8 text (byte {err.start}); is it the right file?") from None


def load_json(path: str | os.PathLike):
    """The JSON in the regular file at `path`; a FileProblem names the file and where the JSON breaks."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise FileProblem(f"{path} is not valid JSON ({err.msg} at line {err.lineno} column {err.colno}; truncated or "
                          "hand-edited?); restore it, or write it again with the tool that made it") from None


def load_json_if_file(path: str | os.PathLike):
    """load_json, or None when nothing is at `path` (anything else there is still refused)."""
    return load_json(path) if os.path.lexists(path) else None


def refuse(tool: str, err: Exception, code: int = 2) -> int:
    """Print `<tool>: error: <one line>` on stderr and return the exit code."""
    print(f"{tool}: error: {str(err).splitlines()[0] if str(err) else type(err).__name__}", file=sys.stderr)
    return code


def git(ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True)


def own_repo(ws: Path) -> bool:
    top = git(ws, "rev-parse", "--show-toplevel")
    return top.returncode == 0 and Path(top.stdout.strip()).resolve() == ws.resolve()


def _written_log(ws: Path) -> Path | None:
    """Where the hashes of the documents last written live: inside the workspace's git directory (never committed)."""
    if not own_repo(ws):
        return None
    found = git(ws, "rev-parse", "--git-path", "kbaseline-written.json").stdout.strip()
    return (ws / found) if found else None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _edited(ws: Path, rel: str, log: Path | None) -> bool:
    """Whether the file at `rel` holds what neither a tool last wrote nor the last commit has."""
    path = ws / rel
    if not os.path.lexists(path):
        return False
    if not path.is_file() or path.is_symlink():
        return True
    data = path.read_bytes() if path.stat().st_size <= MAX_BYTES else b""
    written = (load_json_if_file(log) or {}) if log and log.is_file() else {}
    if written.get(rel) == _digest(data):
        return False
    committed = subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=ws, capture_output=True) if log else None
    return not (committed and committed.returncode == 0 and committed.stdout == data)


def write_doc(ws: Path, rel: str, text: str) -> Path:
    """Write a regenerated document, keeping the user's uncommitted edits in a copy beside it (and saying where)."""
    path, log = ws / rel, _written_log(ws)
    if _edited(ws, rel, log):
        keep = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}.orig")
        shutil.move(path, keep)
        print(f"note: {rel} had edits of yours that no commit holds; they are kept in {keep.relative_to(ws)} (the "
              f"regenerated {rel} is in its place: compare the two, and commit what you want to keep)", flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode()
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    if log:
        written = (load_json_if_file(log) or {}) if log.is_file() else {}
        log.write_text(json.dumps({**written, rel: _digest(data)}, indent=1) + "\n")
    return path
