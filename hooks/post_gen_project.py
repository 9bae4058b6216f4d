"""Post-gen hook: hand the rendered workspace to tools/scaffold.py. Always exits 0 (cookiecutter would delete it).

The template repo's path comes from the environment (KBASELINE_ROOT, set by local_extensions in cookiecutter's
process), never pasted into this file: a path holding quotes or code stays a value."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)  # a bake, once begun, finishes; the bake step inherits this

import os  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, os.environ["KBASELINE_ROOT"])

try:
    from tools import scaffold

    scaffold.main(Path.cwd())
except Exception:  # keep the workspace; say what broke
    traceback.print_exc()
    print("kbaseline: warning: post-generation steps failed (above); the workspace is kept", file=sys.stderr)
sys.exit(0)
