"""Pre-gen hook: validate every input before anything is written. The checks live in tools/validate_inputs.py."""

import json
import sys

sys.path.insert(0, "{{ kbaseline_root }}/tools")

from catalog import InputError  # noqa: E402
from validate_inputs import validate  # noqa: E402

context = json.loads(r"""{{ cookiecutter | tojson }}""")
if context.get("__gpu_note"):
    print(f"kbaseline: {context['__gpu_note']}")
try:
    validate(context)
except InputError as err:
    print(f"kbaseline: error: {err}", file=sys.stderr)
    sys.exit(1)
