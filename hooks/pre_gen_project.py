"""Pre-gen hook: nothing is left to do here. op.json was built, every input checked, and the file written into the
new workspace folder while cookiecutter rendered this hook, in cookiecutter's own process (local_extensions.kb_op_json
-> tools/spec.py), so a refusal is one line, not a hook failure with cookiecutter's traceback. Rendering leaves a
fixed word below, never a value of the context: nothing typed is ever pasted into code."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)  # a bake, once begun, finishes (tools/interrupts.py)

OP_JSON = "{{ cookiecutter | kb_op_json }}"  # "written"
