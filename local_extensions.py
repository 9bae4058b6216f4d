"""Jinja extension for cookiecutter.json: the few values that must be worked out while prompting.

cookiecutter puts the template root on sys.path and loads ``local_extensions.KbaselineExtension`` (``_extensions``
in cookiecutter.json). Everything else about the workspace is worked out once, from these values, by the pre-gen
hook (tools/spec.py -> op.json). It adds:

- ``kbaseline_root``: the template repo's absolute path, so hooks can import ``tools`` even though cookiecutter
  runs them with cwd = the new workspace and ``_repo_dir`` may be relative;
- ``kb_gpu``: ``auto`` -> the detected GPU (the workspace's own tools/gpu_detect.py), or ``H200`` when none is
  found; ``kb_gpu_note`` says which;
- ``kb_op(pattern)``: ``default`` -> the pattern's default op (for the default op_name);
- ``kb_abspath``: a path made absolute against the directory cookiecutter was started from (hooks run elsewhere);
- ``kb_check_op_name``: refuses a bad op_name while prompting, before cookiecutter makes a folder of it.

Filters other than kb_check_op_name never raise: bad values pass through and the pre-gen hook refuses them.
"""

import functools
import importlib.util
import os
import sys

from jinja2.ext import Extension

ROOT = os.path.dirname(os.path.abspath(__file__))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools import registry  # noqa: E402
from tools.catalog import InputError  # noqa: E402
from tools.validate import check_op_name  # noqa: E402

@functools.cache
def _detect() -> dict:
    """The workspace's gpu_detect.py, loaded from the workspace template (the one detector, shared with workspaces)."""
    path = os.path.join(ROOT, "{{cookiecutter.op_name}}", "tools", "gpu_detect.py")
    spec = importlib.util.spec_from_file_location("kbaseline_gpu_detect", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.detect()


def kb_gpu(value):
    return value if value != "auto" else (_detect()["name"] or "H200")


def kb_gpu_note(value):
    if value != "auto":
        return ""
    found = _detect()
    if found["name"]:
        return f"gpu=auto: detected {found['raw']} -> {found['name']}"
    if found["raw"]:
        return f"gpu=auto: {found['raw']} is not a supported model; generating for H200 (pass gpu=<model> to choose)"
    return "gpu=auto: no GPU found; generating for H200 (pass gpu=<model> to choose)"


def kb_op(op, pattern):
    try:
        return registry.resolve_op(pattern, op)
    except InputError:
        return op


def kb_abspath(path):
    path = str(path).strip()
    if not path:
        return ""
    file_part, sep, func = path.rpartition(":")
    if not sep or not func.isidentifier():
        file_part, sep, func = path, "", ""
    return os.path.abspath(os.path.expanduser(file_part)) + sep + func


def kb_check_op_name(name):
    """Refuse a bad op_name while prompting, before cookiecutter makes a folder of it.

    The pre-gen hook runs only after the output folder exists, and for a name like 'a/b' cookiecutter would leave
    'a/' behind. Same check and message as the hook (tools/validate.py).
    """
    try:
        check_op_name(name)
    except InputError as err:
        print(f"kbaseline: error: {err}", file=sys.stderr)
        raise SystemExit(1) from None
    return name


class KbaselineExtension(Extension):
    def __init__(self, environment):
        super().__init__(environment)
        environment.globals["kbaseline_root"] = ROOT
        environment.filters.update(kb_gpu=kb_gpu, kb_gpu_note=kb_gpu_note, kb_op=kb_op, kb_abspath=kb_abspath,
                                   kb_check_op_name=kb_check_op_name)
