"""Pre-gen hook: validate every input and write op.json, once, before any template file is rendered (tools/spec.py)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, "{{ kbaseline_root }}")

from tools import spec  # noqa: E402
from tools.catalog import InputError  # noqa: E402

context = json.loads(r"""{{ cookiecutter | tojson }}""")
if context.get("__gpu_note"):
    print(f"kbaseline: {context['__gpu_note']}")
try:
    op = spec.build(context)
except InputError as err:
    print(f"kbaseline: error: {err}", file=sys.stderr)
    sys.exit(1)
Path("op.json").write_text(json.dumps(op, indent=2) + "\n")  # cwd is the new workspace folder
