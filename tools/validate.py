"""Validate every template input, one key at a time, in cookiecutter.json's order.

The same checks run twice, from one list (``CHECKS``): while prompting, key by key (local_extensions.kb_check, so
an interactive user is stopped at the first wrong answer), and once more over the whole context when op.json is
built (tools.spec.build, also for ``--replay``). Each check raises ``catalog.InputError`` whose message is one
line: the input, what is wrong, and how to fix it. ``check(ctx, upto)`` returns the resolved values of the keys up
to ``upto``; ``validate(ctx)`` returns the resolved choices (op, GPU facts, pattern, DSL and cell, cases, the
user's reference) that tools.spec turns into op.json.

A context holds the inputs as typed, plus ``__cwd``: the directory cookiecutter was started from, which relative
paths are resolved against (the hooks run elsewhere).
"""

from __future__ import annotations

import ast
import difflib
import keyword
import os
from pathlib import Path

from tools import detect, lower, registry, shapes
from tools.catalog import GPUS, InputError

MAX_LOGIC_BYTES = 4 << 20  # the user's .py file and its siblings are read whole to parse them
MAX_OP_NAME = 64  # it names a folder, a git repository and every record; 255 bytes is the filesystem's own limit
RUN_BASELINE = ("auto", "yes", "no")
AUTO = "auto"  # pattern=auto: the pattern of the traced function
LOWERED = "lowered"  # the op of a workspace whose kernel computes the user's own function
LOWERABLE = ("elementwise", "reduction", "gemm", "decode_attention")  # the patterns whose cells take a lowered compute
CLASS_WORDS = {"elementwise": "elementwise", "reduction": "a row reduction", "gemm": "a matmul with an epilogue",
               "decode_attention": "decode attention"}


def _one_of(key: str, value: str, choices, what: str) -> None:
    """Refuse a value outside `choices`, suggesting the choice it most resembles (case first)."""
    choices = list(choices)
    if value in choices:
        return
    near = [c for c in choices if c.lower() == str(value).lower()] or difflib.get_close_matches(str(value), choices, 1, 0.8)
    hint = f"did you mean {near[0]}? " if near else ""
    raise InputError(f"{key}: '{value}' is not {what}; {hint}choose one of {', '.join(choices)}")


def check_op_name(name: str) -> None:
    if keyword.iskeyword(name):
        raise InputError(f"op_name: '{name}' is a Python keyword; add a suffix, e.g. op_name={name}_op")
    if not name.isidentifier():
        raise InputError(f"op_name: '{name}' is not a Python identifier; use letters, digits and '_', not "
                         "starting with a digit, e.g. op_name=silu_mul_bf16")
    if len(name) > MAX_OP_NAME:
        raise InputError(f"op_name: {len(name)} characters is too long (it names the workspace folder and its git "
                         f"repository); use at most {MAX_OP_NAME}, e.g. op_name={name[:20]}")


def _abspath(ctx: dict, path: str) -> str:
    return os.path.abspath(os.path.join(ctx.get("__cwd") or os.getcwd(), os.path.expanduser(path)))


def parse_logic_spec(spec: str) -> tuple[str, str | None]:
    """'dir/f.py:fn' -> ('dir/f.py', 'fn'); 'dir/f.py' -> ('dir/f.py', None)."""
    path, sep, func = spec.rpartition(":")
    if sep and func.isidentifier():
        return path, func
    return spec, None


def _public(functions) -> list[str]:
    return [name for name in functions if not name.startswith("_")]


def _imported_roots(tree: ast.AST, path: str, key: str = "pytorch_logic", relative_ok: bool = False) -> set[str]:
    """Top-level module names a file imports (anywhere in it); a relative import is refused, except inside a package
    (`relative_ok`: a kernel demo's package is copied whole, so its relative imports keep working)."""
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level and relative_ok:
                continue
            if node.level:
                copied = " as user_logic.py" if key == "pytorch_logic" else " outside a package"
                raise InputError(f"{key}: '{path}' line {node.lineno} has a relative import "
                                 f"('from {'.' * node.level}{node.module or ''} import ...'), which cannot work once "
                                 f"the file is copied into the workspace{copied}; import absolutely "
                                 "(from mymodule import ...)")
            roots.add(node.module.split(".")[0])
    return roots


def _parse(path: str, key: str = "pytorch_logic") -> ast.AST:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    except (SyntaxError, UnicodeDecodeError, ValueError) as err:
        raise InputError(f"{key}: '{path}' does not parse ({err}); fix the file's syntax") from None


def sibling_modules(path: str, tree: ast.AST, key: str = "pytorch_logic", folder: Path | None = None,
                    relative_ok: bool = False) -> list[str]:
    """The modules of the logic file's own folder (or `folder`: a demo package's parent) that it imports, directly or
    through each other: names of `<name>.py` files and `<name>/` packages there, which the workspace must get beside
    user_logic.py (a kernel demo's: beside it in demo/)."""
    folder = folder or Path(path).parent
    found: dict[str, Path] = {}
    todo = [(path, tree)]
    while todo:
        file, node = todo.pop()
        for name in sorted(_imported_roots(node, file, key, relative_ok)):
            if name in found:
                continue
            module, package = folder / f"{name}.py", folder / name / "__init__.py"
            if module.is_file() and module.resolve() != Path(path).resolve():
                found[name] = module
                todo.append((str(module), _parse(str(module), key)))
            elif package.is_file():
                found[name] = package.parent
                todo += [(str(p), _parse(str(p), key)) for p in sorted(package.parent.rglob("*.py"))
                         if "__pycache__" not in p.parts]
    taken = sorted(set(found) & registry.workspace_names())
    if taken:
        raise InputError(f"{key}: '{path}' imports {', '.join(taken)} from its own folder, which would clash "
                         f"with the workspace's own {', '.join(taken)}; rename that module (or inline it)")
    return [found[n].name for n in sorted(found)] + data_files(
        path, [tree, *(_parse(str(m), key) for m in found.values() if m.is_file())], key, folder)


def data_files(path: str, trees: list[ast.AST], key: str = "pytorch_logic", folder: Path | None = None) -> list[str]:
    """Files of the logic file's own folder (or `folder`) that its code names in a string (`open(HERE /
    "table.json")`, `torch.load("w.pt")`): relative paths to regular files there, which the workspace must get beside
    user_logic.py too, or `import reference` would fail there."""
    folder, names = Path(folder or Path(path).parent).resolve(), set()
    for tree in trees:
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if not text or "\0" in text or len(text) > 255 or os.path.isabs(text) or text.endswith(".py"):
                continue
            target = (folder / text).resolve()
            if target.is_relative_to(folder) and target != folder and target.is_file():
                names.add(target.relative_to(folder).as_posix())
    taken = sorted(n for n in names if n.split("/")[0].split(".")[0] in registry.workspace_names() | {"op", "README"})
    if taken:
        raise InputError(f"{key}: '{path}' reads {', '.join(taken)} from its own folder, which would clash with "
                         "the workspace's own files; rename it")
    return sorted(names)


def check_logic_file(spec: str) -> dict | None:
    """The user's file: exists, parses, defines the function, and what it imports from its own folder is listed (to
    be copied beside it). Static: nothing of the user's runs here."""
    if not spec.strip():
        return None
    path, func = parse_logic_spec(spec.strip())
    if not path.endswith(".py"):
        raise InputError(f"pytorch_logic: '{path}' is not a .py file; give 'path/to/file.py' or 'path/to/file.py:function'")
    try:
        found = what_is(path)
    except InputError as err:
        raise InputError(f"pytorch_logic: {err}; give an existing .py file") from None
    if found is None:
        raise InputError(f"pytorch_logic: file '{path}' does not exist; give an existing .py path (relative to where "
                         "you run cookiecutter)")
    if not found.startswith("a regular file"):
        raise InputError(f"pytorch_logic: '{path}' is {found}, not a file; give the .py file itself"
                         + (" (inside that folder)" if found.startswith("a directory") else ""))
    if os.path.getsize(path) > MAX_LOGIC_BYTES:
        raise InputError(f"pytorch_logic: '{path}' is {os.path.getsize(path)} bytes, above {MAX_LOGIC_BYTES}; give the "
                         "file that defines your function")
    tree = _parse(path)
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    lambdas = sorted(t.id for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Lambda)
                     for t in n.targets if isinstance(t, ast.Name))
    if func is None:
        public = _public(functions)
        if len(public) != 1:
            also = f"; {', '.join(lambdas)} {'is a lambda' if len(lambdas) == 1 else 'are lambdas'}: write it as `def`" \
                if lambdas and not public else ""
            raise InputError(f"pytorch_logic: '{path}' defines {len(public)} public functions ({', '.join(public) or 'none'})"
                             f"{also}; name one as 'file.py:function'")
        func = public[0]
    if func not in functions:
        if func in lambdas:
            raise InputError(f"pytorch_logic: '{func}' in '{path}' is a lambda; write it as `def {func}(...):` with a "
                             "return (a function with a name and lines is what is traced and cited)")
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == func), None)
        if cls is not None:  # a module pasted whole (an nn.Module): its forward is the op, self.* its parameters
            forward = any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in cls.body)
            what = " (its forward is the op)" if forward else ""
            raise InputError(f"pytorch_logic: '{func}' in '{path}' is a class{what}; copy "
                             f"{'its forward' if forward else 'the computation'} into a top-level function whose "
                             "parameters are its inputs and tensors (`self.weight` -> `weight`) and its settings with "
                             "their values as defaults (`self.variance_epsilon` -> `eps: float = 1e-6`), and name that")
        raise InputError(f"pytorch_logic: '{path}' defines no top-level function '{func}'; check the name after ':'")
    args = functions[func].args
    params = [a.arg for a in args.posonlyargs + args.args]
    return {"path": path, "function": func, "params": params, "required": params[: len(params) - len(args.defaults)],
            "vararg": args.vararg is not None, "siblings": sibling_modules(path, tree)}


def check_mapping(logic: dict, inputs: list[str], key: str = "pytorch_logic") -> str:
    """How a built-in op's inputs reach the user's parameters: "by name" or "by position" (or InputError)."""
    params, required = logic["params"], logic["required"]
    by_name = all(p in inputs for p in required) and set(inputs) <= set(params)
    by_position = len(required) <= len(inputs) <= len(params) or logic["vararg"]
    if not (by_name or by_position):
        raise InputError(
            f"{key}: {logic['function']}({', '.join(params)}) cannot take this op's inputs ({', '.join(inputs)}); "
            f"name its parameters {', '.join(inputs)} or give it {len(inputs)} positional parameters"
        )
    return "by name" if by_name else "by position"


def check_pytorch_logic(spec: str, inputs: list[str]) -> dict | None:
    """check_logic_file, plus the mapping of a built-in op's inputs to the function's parameters."""
    logic = check_logic_file(spec)
    return logic and {**logic, "mapping": check_mapping(logic, inputs)}


def lowering(logic: dict) -> dict:
    """The user's function traced and lowered (tools/lower), once per logic dict; refuses only a file that does not
    import (the reference could not run either)."""
    if "lowering" not in logic:
        logic["lowering"] = lower.lower(logic["path"], logic["function"])
    if not logic["lowering"]["ok"] and logic["lowering"]["stage"] == "import":
        raise InputError(f"pytorch_logic: {logic['lowering']['error']}")
    return logic["lowering"]


def lowering_note(got: dict) -> str:
    """One line on the user's function once the op is known: lowered into the kernel, or why the kernel is built in."""
    logic = got["pytorch_logic"]
    if got["op"] == LOWERED:
        program = logic["lowering"]["ir"]
        if lower.decode.is_decode(program):
            return f"lowered `{logic['function']}` into the decode_attention kernel: {lower.decode.summary(program)} (lowered.py)"
        reductions = lower.ir.reductions(program)
        return (f"lowered `{logic['function']}` into the {got['pattern']} kernel: {len(program['inputs'])} input(s), "
                f"{len(program['outputs'])} output(s), {len(program['nodes'])} steps"
                + (f", reductions {', '.join(reductions)}" if reductions else "") + " (lowered.py)")
    why = logic.get("not_lowered") or "an op was named, so its built-in kernel is kept"
    return (f"note: `{logic['function']}` is the reference only; the kernel is the built-in `{got['op']}` ({why}), "
            "so its cases FAIL wherever the two differ")


def default_op_name(op: str, logic: str, dtype: str) -> str:
    """op_name's default: the user's function's name for a lowered op, else `<op>_<dtype>`."""
    function = logic.rpartition(":")[2] if logic else ""
    return function if op == "lowered" and function.isidentifier() else f"{op}_{dtype}"


# ---------------------------------------------------------------------------------------- one check per input key
# Each takes the context and the values resolved so far (keyed like the inputs) and returns this key's value.

def _pytorch_logic(ctx: dict, got: dict) -> dict | None:
    text = ctx["pytorch_logic"].strip()
    if not text:
        return None
    path, func = parse_logic_spec(text)
    return check_logic_file(_abspath(ctx, path) + (f":{func}" if func else ""))


def _kernel_demo(ctx: dict, got: dict) -> dict | None:
    """The user's existing kernel (tools/demo.py): parsed, never imported; its parameters are matched to the op's
    inputs once they are known (demo.attach)."""
    from tools import demo

    return demo.check(ctx)


def _pattern(ctx: dict, got: dict) -> str:
    """The pattern; `auto` is the traced function's class (elementwise, reduction or gemm), or a one-line refusal."""
    _one_of("pattern", ctx["pattern"], [*registry.patterns(), AUTO], "a pattern")
    if ctx["pattern"] != AUTO:
        return ctx["pattern"]
    logic = got["pytorch_logic"]
    if not logic and got.get("kernel_demo"):
        raise InputError("pattern: auto infers the pattern by tracing a PyTorch function, and a kernel_demo cannot be "
                         "traced; name the pattern and op your kernel computes (e.g. pattern=reduction op=rmsnorm), or "
                         "give its PyTorch function as pytorch_logic=file.py:function")
    if not logic:
        raise InputError("pattern: auto infers the pattern from your function; give pytorch_logic=file.py:function, "
                         f"or choose one of {', '.join(registry.patterns())}")
    result = lowering(logic)
    if not result["ok"]:
        near = result.get("near")
        hint = (f"; fix that, or name a pattern (pattern={near}) to bake its built-in kernel with your function as "
                "the reference" if near else "")  # none where no pattern is near (a selection, a scan, a rank)
        raise InputError(f"pytorch_logic: `{logic['function']}` cannot be lowered into a kernel: {result['error']}"
                         f"{hint}")
    return lower.ir.pattern(result["ir"])


def _lowered(ctx: dict, got: dict) -> bool:
    """Whether this workspace's kernel is the user's own function: with logic, the op left at its default, a pattern
    that lowering serves, and a function that lowers into that pattern. A function that does not is noted (the
    workspace then bakes the pattern's built-in kernel, and every record says it is not the user's op)."""
    logic = got["pytorch_logic"]
    if not logic or ctx["op"] not in ("", "default", LOWERED):
        return False
    if got["pattern"] not in LOWERABLE:
        logic["not_lowered"] = (f"pattern={got['pattern']} has no lowering (only {', '.join(LOWERABLE[:-1])} and {LOWERABLE[-1]} do); "
                                "the kernel is its built-in op")
        return False
    result = lowering(logic)
    if result["ok"] and lower.ir.pattern(result["ir"]) == got["pattern"]:
        return True
    logic["not_lowered"] = result.get("error") if not result["ok"] else (
        f"it is {CLASS_WORDS[result['ir']['class']]}, not "
        f"{got['pattern']}; use pattern={lower.ir.pattern(result['ir'])} or pattern=auto")
    return False


def _op(ctx: dict, got: dict) -> str:
    if _lowered(ctx, got):
        return LOWERED
    if got.get("kernel_demo") and not got["pytorch_logic"] and ctx["op"] in ("", "default"):
        ops = ", ".join(registry.pattern(got["pattern"]).OPS)
        raise InputError(f"op: name the op your kernel_demo computes, one of {ops} (pattern={got['pattern']}): without "
                         "pytorch_logic the demo is the reference and the kernel is that op's built-in")
    if ctx["op"] == LOWERED:
        why = (got["pytorch_logic"] or {}).get("not_lowered", "give pytorch_logic=file.py:function")
        raise InputError(f"op: 'lowered' is the user's own function lowered into the kernel, which is not possible "
                         f"here: {why}")
    pattern = registry.pattern(got["pattern"])
    resolved = registry.resolve_op(got["pattern"], ctx["op"])
    if resolved not in pattern.OPS:
        owner = registry.all_ops().get(resolved)
        if owner:
            raise InputError(f"op: '{resolved}' is not an op of pattern={got['pattern']} (it belongs to "
                             f"pattern={owner}); choose one of {', '.join(pattern.OPS)} or 'default'")
        _one_of("op", resolved, [*pattern.OPS, "default"], f"an op of pattern={got['pattern']}")
    if got["pytorch_logic"]:
        got["pytorch_logic"]["mapping"] = check_mapping(got["pytorch_logic"], pattern.OPS[resolved]["inputs"])
    return resolved


def _gpu(ctx: dict, got: dict) -> str:
    _one_of("gpu", ctx["gpu"], [*GPUS, "auto"], "a supported GPU")
    name = detect.resolve(ctx["gpu"])
    registry.cell(got["pattern"], registry.gpu(name)["framework"], name)
    return name


def _dtype(ctx: dict, got: dict) -> str:
    pattern = got["pattern"]
    _one_of("dtype", ctx["dtype"], registry.pattern(pattern).DTYPES, f"a dtype {pattern} supports")
    return ctx["dtype"]


def _op_name(ctx: dict, got: dict) -> str:
    check_op_name(ctx["op_name"])
    return ctx["op_name"]


def _shapes(ctx: dict, got: dict) -> str:
    pattern, gpu = registry.pattern(got["pattern"]), registry.gpu(got["gpu"])
    program = got["pytorch_logic"]["lowering"]["ir"] if got["op"] == LOWERED else None
    try:
        shapes.check(pattern, registry.dsls()[gpu["framework"]], got["dtype"], ctx["shapes"], got["gpu"], got["op"],
                     tensors=(lambda case: lower.tensors(case, program)) if program else None)
    except InputError as err:
        raise InputError(f"{err} ({pattern.SHAPES_HELP})") from None
    return ctx["shapes"].strip()


def what_is(path: str) -> str | None:
    """What is at `path` in words ('a directory', 'a character device (a symlink to /dev/zero)', ...); None when
    nothing is there. A path the system cannot even look up is refused (InputError's text, without the key)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise InputError(f"'{path}' cannot be looked up ({err.strerror})") from None
    link = f" (a symlink to {os.path.realpath(path)})" if os.path.islink(path) else ""
    return registry.workspace_tool("files").kind(info.st_mode) + link


def _gpu_wiki(ctx: dict, got: dict) -> str:
    fine = "a path that does not exist is fine: the plan then says the wiki is absent"
    if not ctx["gpu_wiki"].strip():
        raise InputError(f"gpu_wiki: empty; give the gpu-wiki's path (default /tmp/gpu-wiki; {fine})")
    path = _abspath(ctx, ctx["gpu_wiki"].strip())
    try:
        found = what_is(path)
    except InputError as err:
        raise InputError(f"gpu_wiki: {err}; give the gpu-wiki's folder ({fine})") from None
    if found not in (None, "a directory") and not found.startswith("a directory "):
        raise InputError(f"gpu_wiki: '{path}' is {found}, not a folder; give the gpu-wiki's folder ({fine})")
    return path


def _run_baseline(ctx: dict, got: dict) -> str:
    _one_of("run_baseline", ctx["run_baseline"], RUN_BASELINE, "auto, yes or no")
    return ctx["run_baseline"]


CHECKS = {"pytorch_logic": _pytorch_logic, "kernel_demo": _kernel_demo, "pattern": _pattern, "op": _op, "gpu": _gpu,
          "dtype": _dtype, "op_name": _op_name, "shapes": _shapes, "gpu_wiki": _gpu_wiki, "run_baseline": _run_baseline}


def check(ctx: dict, upto: str | None = None) -> dict:
    """The resolved values of every input key, in order, up to and including `upto` (default: all)."""
    got: dict = {}
    for key, fn in CHECKS.items():
        got[key] = fn(ctx, got)
        if key == upto:
            break
    return got


def validate(ctx: dict) -> dict:
    """Check all inputs of a cookiecutter context; return the resolved choices."""
    got = check(ctx)
    pattern = registry.pattern(got["pattern"])
    gpu = registry.gpu(got["gpu"])
    dsl = registry.dsls()[gpu["framework"]]
    return {**got, "pattern_name": got["pattern"], "pattern": pattern, "gpu_name": got["gpu"], "gpu": gpu, "dsl": dsl,
            "cell": registry.cell(got["pattern"], dsl.NAME, got["gpu"])}
