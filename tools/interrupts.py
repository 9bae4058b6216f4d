"""Ctrl-C during a bake: the bake finishes, so no half-built workspace is left and nothing that existed is touched.

Template-side. A bake is short (about a second on Hopper, a few seconds of compiling for FlyDSL), while a bake cut
in the middle leaves a folder without its git repository or plan that the next bake refuses. So from the last
answer to the end of the post-gen hook, cookiecutter's process notes SIGINT instead of dying mid-copy, and says
so; the hooks ignore SIGINT (``signal.SIG_IGN``, inherited by their children: the bake step, git, the FlyDSL
compile). The V0 run that follows the scaffold commit when a GPU is present takes Ctrl-C again
(tools/run_baseline.py): by then the workspace is complete and committed.

Installed by local_extensions (after the last prompt, and in the pre-gen step for ``--replay``); only on the
command line, never in a library caller's process.
"""

from __future__ import annotations

import atexit
import signal
import sys
import threading

_state = {"installed": False, "interrupted": False}


def _note(_signum, _frame) -> None:
    if not _state["interrupted"]:
        print("\nkbaseline: interrupted: finishing this bake first (a few seconds), so that no half-built workspace "
              "is left", file=sys.stderr, flush=True)
    _state["interrupted"] = True


def _report() -> None:
    if _state["interrupted"]:
        print("kbaseline: the bake was interrupted and has finished; the workspace is complete (remove it if you did "
              "not want it)", file=sys.stderr, flush=True)


def defer() -> None:
    """From now until this process exits, Ctrl-C is noted, not obeyed."""
    if _state["installed"] or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, _note)
    atexit.register(_report)
    _state["installed"] = True

