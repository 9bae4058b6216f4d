"""Post-gen hook: hand the rendered workspace to tools/scaffold.py. Always exits 0 (cookiecutter would delete it)."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)  # a bake, once begun, finishes; the bake step inherits this

import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, "{{ kbaseline_root }}")

try:
    from tools import scaffold

    scaffold.main(Path.cwd())
except Exception:  # keep the workspace; say what broke
    traceback.print_exc()
    print("kbaseline: warning: post-generation steps failed (above); the workspace is kept", file=sys.stderr)
sys.exit(0)
