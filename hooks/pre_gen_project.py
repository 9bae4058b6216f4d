"""Pre-gen hook: put op.json in place. It was built, every input checked, and written beside it (as the file named
below) while cookiecutter rendered this hook, in cookiecutter's own process (local_extensions.kb_op_json ->
tools/spec.py), so a refusal is one line, not a hook failure with cookiecutter's traceback. Rendering leaves only
that fixed file name below, never a value of the context: nothing typed is ever pasted into code."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)  # a bake, once begun, finishes (tools/interrupts.py)

import os  # noqa: E402

os.replace("{{ cookiecutter | kb_op_json }}", "op.json")  # cwd is the new workspace folder
