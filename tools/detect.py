"""gpu=auto: this machine's GPU, named as the catalogue names it, through the workspace's own tools/gpu_detect.py.

Template-side. The one detector lives in the workspace template (workspaces need it too) and is loaded from there
by path, once per process; it imports torch only when the machine has a GPU device node, so a bake on a CPU
machine does not wait for torch to learn there is no GPU.
"""

from __future__ import annotations

import functools

from tools.registry import workspace_tool

FALLBACK = "H200"


@functools.cache
def detected() -> dict:
    """{'name', 'raw', 'vendor'} of this machine's GPU (all None when there is none)."""
    return workspace_tool("gpu_detect").detect()


def resolve(value: str) -> str:
    """'auto' -> the detected GPU, or H200 when none (or an unknown model) is found; any other value unchanged."""
    return value if value != "auto" else (detected()["name"] or FALLBACK)


def note(value: str) -> str:
    """What gpu=auto found, in one line ('' for an explicit GPU)."""
    if value != "auto":
        return ""
    found = detected()
    if found["name"]:
        return f"gpu=auto: detected {found['raw']} -> {found['name']}"
    if found["raw"]:
        return f"gpu=auto: {found['raw']} is not a supported model; generating for {FALLBACK} (pass gpu=<model> to choose)"
    return f"gpu=auto: no GPU found; generating for {FALLBACK} (pass gpu=<model> to choose)"
