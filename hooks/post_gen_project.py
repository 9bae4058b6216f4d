"""Post-gen hook: hand the rendered workspace to tools/scaffold.py. Always exits 0 (cookiecutter would delete it)."""

import sys
import traceback
from pathlib import Path

sys.path.insert(0, "{{ kbaseline_root }}")

try:
    from tools import scaffold

    scaffold.main(Path.cwd())
except Exception:  # keep the workspace; say what broke
    traceback.print_exc()
    print("kbaseline: warning: post-generation steps failed (above); the workspace is kept", file=sys.stderr)
sys.exit(0)
