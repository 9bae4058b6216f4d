"""Jinja extension for cookiecutter.json and the pre-gen hook: the checks that run inside cookiecutter's own process.

cookiecutter puts the template root on sys.path and loads ``local_extensions.KbaselineExtension`` (``_extensions``
in cookiecutter.json). Its filters run while cookiecutter renders a value, in cookiecutter's process, which is what
lets a refusal be one line: a filter prints ``kbaseline: error: ...`` and raises SystemExit(1), which cookiecutter
does not catch, so no traceback follows. (A hook script that fails is reported by cookiecutter with its own
traceback; see README.md, "What a refusal looks like".) Everything else about the workspace is worked out once,
from the checked inputs, by tools/spec.py (op.json).

- ``kb_cwd``: the directory cookiecutter was started from (relative paths are resolved against it; hooks run
  elsewhere); rendered first.
- ``kb_check(key)``: rendered right after each input is answered. The input is checked (tools/validate.py, the
  same checks op.json is built with) and its resolved value returned. On a bad value: at the prompt, the error
  line and the question again, every earlier answer kept; with ``--no-input``, one line and exit 1, before
  cookiecutter writes its replay file or makes a folder. After ``op_name`` the destination folder is checked as
  well (tools/overwrite.py); after the last input, Ctrl-C waits for the bake to finish (tools/interrupts.py).
- ``kb_default_op``: the op question's default (the pattern's default op; ``default`` with a function, which lowers
  it when it can); ``kb_default_name``: op_name's (the function's name for a lowered op).
- ``kb_op_json``: rendered into the pre-gen hook once the workspace folder exists: every input checked again over
  the whole context (also what ``--replay`` brings), an existing folder refused or moved aside, and op.json written
  into the new folder from here (as ``.op.json.pending``, which the hook, once it ignores Ctrl-C, renames to
  op.json). The hook's rendered text holds no value of the context.
- No path or value is ever pasted into a hook's code: the post-gen hook finds the template repo through the
  ``KBASELINE_ROOT`` environment variable set here (the hooks are this process's children).

On the command line, a fault that cookiecutter itself would show as a traceback while it copies the template
(``-o`` onto a read-only folder, a full disk) is one line instead (``_fault``, installed as sys.excepthook), and a
folder this bake made, half-built, is removed (nothing of the user's is in it; a workspace that -f replaced stays
where it was moved aside).

And a ``key=value`` from the command line that holds Jinja syntax is refused before cookiecutter renders it
(``preprocess``): cookiecutter would evaluate it as a template.
"""

import json
import os
import re
import shutil
import sys
from pathlib import Path

import jinja2
from jinja2.ext import Extension

ROOT = os.path.dirname(os.path.abspath(__file__))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
os.environ["KBASELINE_ROOT"] = ROOT  # for the post-gen hook (a child of this process); never pasted into its code

from tools import detect, interrupts, overwrite, registry, spec, validate  # noqa: E402
from tools.catalog import InputError  # noqa: E402

COOKIECUTTER_JSON = json.loads(Path(ROOT, "cookiecutter.json").read_text())


def _cli() -> dict:
    """cookiecutter's command-line options when it runs as the `cookiecutter` command, else {} (library use)."""
    try:
        import click

        ctx = click.get_current_context(silent=True)
    except ImportError:
        return {}
    params = ctx.params if ctx else {}
    return params if {"no_input", "output_dir", "overwrite_if_exists"} <= set(params) else {}


def _interactive() -> bool:
    cli = _cli()
    return bool(cli) and not cli["no_input"] and not cli.get("replay") and not cli.get("replay_file")


LONG = 200  # a quoted value longer than this is shown by its head and its length, not whole


def _line(err) -> str:
    """The error line as printed: a long value the message quotes ('...') is cut to its head and its length."""
    return re.sub(r"(?<!\w)'(?!\s)([^'\n]{%d,}?)(?<!\s)'(?!\w)" % (LONG + 1), lambda m: f"'{m.group(1)[:80]}...' ({len(m.group(1))} characters)",
                  f"kbaseline: error: {err}")


def _refuse(err: InputError):
    """One line and exit 1 on the command line; the exception itself for a library caller."""
    if not _cli():
        raise err
    print(_line(err), file=sys.stderr, flush=True)
    raise SystemExit(1)


PENDING = ".op.json.pending"  # op.json as kb_op_json writes it; the pre-gen hook renames it (a fixed name, not a value)
_BAKE: dict = {}  # the folder this bake writes, and whether it made it (for _fault)


def _fault(kind, err, tb) -> None:
    """sys.excepthook on the command line: an OSError while cookiecutter writes (a read-only -o, a full disk) is one
    line; a half-built folder this bake made is removed (a workspace that -f replaced stays where it was moved)."""
    if not issubclass(kind, OSError):
        return sys.__excepthook__(kind, err, tb)
    ws, made = _BAKE.get("ws"), _BAKE.get("made")
    reason, where = err.strerror or str(err), f" ({err.filename})" if err.filename else ""
    if isinstance(err, shutil.Error) and err.args and isinstance(err.args[0], list) and err.args[0]:
        _src, dst, why = err.args[0][0]  # copytree's list of (src, dst, "[Errno 28] No space left on device: 'dst'")
        reason, where = re.sub(r"^\[Errno \d+\] ", "", str(why)).split(": '")[0], f" ({dst})"
    note = ""
    if ws is not None and made and ws.is_dir():
        shutil.rmtree(ws, ignore_errors=True)
        note = f"; the half-built {ws} was removed"
    print(f"kbaseline: error: writing the workspace failed: {reason}{where}{note}; fix that (free space, "
          "a writable -o folder) and bake again", file=sys.stderr, flush=True)


def _unknown_inputs() -> None:
    """A `key=value` that names no input: cookiecutter would silently ignore it."""
    for key in (_cli().get("extra_context") or {}):
        if key not in validate.CHECKS:
            near = [k for k in validate.CHECKS if k.lower() == key.lower() or k.startswith(key) or key.startswith(k)]
            hint = f"did you mean {near[0]}? " if near else ""
            _refuse(InputError(f"{key}: not an input of this template; {hint}the inputs are "
                               f"{', '.join(validate.CHECKS)}"))


def _destination(ctx) -> None:
    cli = _cli()
    if cli:
        overwrite.check_output_dir(Path(cli["output_dir"]).absolute())
        overwrite.check(Path(cli["output_dir"]).absolute() / ctx["op_name"], cli["overwrite_if_exists"],
                        cli["skip_if_file_exists"])


def _ask_again(env, ctx, key: str) -> str:
    """The question again, with its [n/10] counter as cookiecutter showed it (cookiecutter's prompt.py prefix)."""
    from rich.prompt import Prompt

    default = env.from_string(str(COOKIECUTTER_JSON[key])).render(cookiecutter=ctx)
    asked = [k for k in COOKIECUTTER_JSON if not k.startswith("_")]
    prefix = f"  [dim][{asked.index(key) + 1}/{len(asked)}][/] "
    return Prompt.ask(prefix + COOKIECUTTER_JSON["__prompts__"][key], default=default)


def _after(ctx, key: str, value, got: dict) -> None:
    """What follows a good answer: the pattern's ops and dtypes at the prompt, what became of the user's function
    (lowered into the kernel, or why not), gpu=auto's finding, and, after the last input, Ctrl-C deferred until the
    bake is done."""
    if key == "op" and got["pytorch_logic"]:
        print(f"kbaseline: {validate.lowering_note(got)}", flush=True)
    if key == "pattern" and _interactive() and value in registry.patterns():
        module = registry.pattern(value)
        print(f"    {value}: ops {', '.join(module.OPS)} (default {module.DEFAULT_OP}); dtypes "
              f"{', '.join(module.DTYPES)}", flush=True)
    if key == "gpu" and detect.note(ctx["gpu"]):
        print(f"kbaseline: {detect.note(ctx['gpu'])}", flush=True)
    if key == list(validate.CHECKS)[-1] and _cli():
        interrupts.defer()
        sys.excepthook = _fault


def kb_cwd(_value) -> str:
    return os.getcwd()


@jinja2.pass_environment
def kb_check(env, ctx, key: str) -> str:
    """Check input `key` (and those before it) right after it is answered; return its resolved value."""
    if key == next(iter(validate.CHECKS)):
        _unknown_inputs()
    while True:
        try:
            got = validate.check(ctx, upto=key)
            value = got[key]
            if key == "op_name":
                _destination(ctx)
            break
        except InputError as err:
            if not _interactive():
                _refuse(err)
            print(_line(err), file=sys.stderr, flush=True)
            ctx[key] = _ask_again(env, ctx, key)  # the live answers: cookiecutter keeps (and replays) this one
    _after(ctx, key, value, got)
    return f"{value['path']}:{value['function']}" if isinstance(value, dict) else str(value or "")


def kb_default_op(pattern: str, logic: str = "", demo: str = "") -> str:
    """The op question's default: the pattern's default op, or `default` with a function (lowered when it can be) or
    a kernel demo (which, without a function, must be told its op: `default` is then refused, naming the ops)."""
    return "default" if logic or demo else registry.resolve_op(pattern, "default")


def kb_default_name(op: str, logic: str, dtype: str) -> str:
    return validate.default_op_name(op, logic, dtype)


def kb_op_json(ctx) -> str:
    """The pre-gen step, in cookiecutter's process: check everything, deal with an existing folder, write op.json
    into the new folder. Returns a fixed word for the hook's text: no value of the context goes into code."""
    cli = _cli()
    if cli:
        interrupts.defer()
        sys.excepthook = _fault
    ws = Path(ctx["_output_dir"]) / ctx["op_name"]
    _BAKE.update(ws=ws, made=bool(cli) and not any(ws.iterdir()))  # empty: cookiecutter made it for this bake
    try:
        op = spec.build(ctx)
        moved = overwrite.prepare(ws, cli.get("overwrite_if_exists", True), cli.get("skip_if_file_exists", False))
    except InputError as err:
        if cli and not cli["overwrite_if_exists"]:
            overwrite.remove_if_empty(ws)  # cookiecutter made it for this bake, and nothing is in it yet
        _refuse(err)
    _BAKE["made"] = _BAKE["made"] or moved is not None
    (ws / PENDING).write_text(json.dumps(op, indent=2) + "\n")
    return PENDING


JINJA_MARKS = ("{{", "{%", "{#")


class KbaselineExtension(Extension):
    def preprocess(self, source, name, filename=None):
        """A `key=value` given on the command line is rendered as a template by cookiecutter: refuse one that holds
        Jinja syntax instead of evaluating it (or failing with a TemplateSyntaxError traceback)."""
        for key, value in (_cli().get("extra_context") or {}).items():
            if source == value and any(mark in value for mark in JINJA_MARKS):
                _refuse(InputError(f"{key}: '{value}' holds Jinja syntax ({', '.join(JINJA_MARKS)}), which cookiecutter "
                                   "would evaluate as a template; give the value without it"))
        return source

    def __init__(self, environment):
        super().__init__(environment)
        environment.filters.update(kb_cwd=kb_cwd, kb_check=kb_check, kb_default_op=kb_default_op,
                                   kb_default_name=kb_default_name, kb_op_json=kb_op_json)
