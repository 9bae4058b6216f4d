"""Pre-gen hook: write op.json. It was built and every input checked while cookiecutter rendered this file, in
cookiecutter's own process (local_extensions.kb_op_json -> tools/spec.py), so a refusal is one line, not a hook
failure with cookiecutter's traceback."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)  # a bake, once begun, finishes (tools/interrupts.py)

from pathlib import Path  # noqa: E402

Path("op.json").write_text(r"""{{ cookiecutter | kb_op_json }}""")  # cwd is the new workspace folder
