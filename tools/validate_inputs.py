"""Validate every template input before anything is written (called by hooks/pre_gen_project.py).

Each check raises ``catalog.InputError`` whose message is one line: the input, what is wrong, and how
to fix it. ``validate(context)`` returns the resolved choices (op, GPU, cell, the user's reference
function) so the post-gen hook does not repeat the work.
"""

from __future__ import annotations

import ast
import keyword
import os

import catalog
import shapes
from catalog import InputError


def check_op_name(name: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise InputError(
            f"op_name: '{name}' is not a Python identifier; use letters, digits and '_', not starting "
            f"with a digit, e.g. op_name=silu_mul_bf16"
        )


def _check_pattern_op(pattern: str, op: str) -> str:
    if pattern not in catalog.PATTERNS:
        raise InputError(f"pattern: '{pattern}' is unknown; choose one of {', '.join(catalog.PATTERNS)}")
    resolved = catalog.resolve_op(pattern, op)
    ops = catalog.PATTERNS[pattern]["ops"]
    if resolved not in ops:
        owner = next((p for p, spec in catalog.PATTERNS.items() if resolved in spec["ops"]), None)
        hint = f" (it belongs to pattern={owner})" if owner else ""
        raise InputError(
            f"op: '{resolved}' is not an op of pattern={pattern}{hint}; choose one of {', '.join(ops)} or 'default'"
        )
    return resolved


def _check_gpu(gpu: str) -> dict:
    if gpu not in catalog.GPUS:
        raise InputError(f"gpu: '{gpu}' is not supported; choose one of {', '.join(catalog.GPUS)} or auto")
    return catalog.GPUS[gpu]


def _check_cell(pattern: str, gpu: str, framework: str) -> None:
    if (pattern, framework) not in catalog.AVAILABLE_CELLS:
        built = sorted(f"{p} ({f})" for p, f in catalog.AVAILABLE_CELLS)
        raise InputError(
            f"pattern={pattern} gpu={gpu}: not available yet: {pattern}/{framework}; "
            f"built so far: {', '.join(built)}"
        )


def _check_dtype(pattern: str, dtype: str) -> None:
    allowed = catalog.PATTERNS[pattern]["dtypes"]
    if dtype not in allowed:
        raise InputError(f"dtype: {dtype} is not supported by {pattern}; choose one of {', '.join(allowed)}")


def _check_shapes(pattern: str, dtype: str, text: str, framework: str) -> None:
    if text.strip():
        try:
            shapes.check(pattern, dtype, text, framework)
        except InputError as err:
            raise InputError(f"{err} ({catalog.PATTERNS[pattern]['shapes_help']})") from None


def parse_logic_spec(spec: str) -> tuple[str, str | None]:
    """'dir/f.py:fn' -> ('dir/f.py', 'fn'); 'dir/f.py' -> ('dir/f.py', None)."""
    path, sep, func = spec.rpartition(":")
    if sep and func.isidentifier():
        return path, func
    return spec, None


def pick_function(functions, func: str | None) -> str | None:
    """The named function, or the file's only public function; None when that is ambiguous."""
    if func is not None:
        return func
    public = [name for name in functions if not name.startswith("_")]
    return public[0] if len(public) == 1 else None


def logic_function(spec: str) -> str:
    """Function name a pytorch_logic spec resolves to, or '' (used at render time; never raises)."""
    path, func = parse_logic_spec(spec.strip())
    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ""
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return pick_function(functions, func) or ""


def check_pytorch_logic(spec: str, inputs: list[str]) -> dict | None:
    """The user's reference file: exists, parses, defines the function, and its parameters map to the op's inputs."""
    if not spec.strip():
        return None
    path, func = parse_logic_spec(spec.strip())
    if not path.endswith(".py"):
        raise InputError(f"pytorch_logic: '{path}' is not a .py file; give 'path/to/file.py' or 'path/to/file.py:function'")
    if not os.path.isfile(path):
        raise InputError(f"pytorch_logic: file '{path}' does not exist; give an existing .py path (relative to where you run cookiecutter)")
    try:
        tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
    except (SyntaxError, UnicodeDecodeError) as err:
        raise InputError(f"pytorch_logic: '{path}' does not parse ({err}); fix the file's syntax") from None
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    func = pick_function(functions, func)
    if func is None:
        public = [name for name in functions if not name.startswith("_")]
        raise InputError(
            f"pytorch_logic: '{path}' defines {len(public)} public functions ({', '.join(public) or 'none'}); "
            f"name one as 'file.py:function'"
        )
    if func not in functions:
        raise InputError(f"pytorch_logic: '{path}' defines no top-level function '{func}'; check the name after ':'")
    args = functions[func].args
    params = [a.arg for a in args.posonlyargs + args.args]
    required = params[: len(params) - len(args.defaults)]
    by_name = all(p in inputs for p in required) and set(inputs) <= set(params)
    by_position = len(required) <= len(inputs) <= len(params) or args.vararg is not None
    if not (by_name or by_position):
        raise InputError(
            f"pytorch_logic: {func}({', '.join(params)}) cannot take this op's inputs ({', '.join(inputs)}); "
            f"name its parameters {', '.join(inputs)} or give it {len(inputs)} positional parameters"
        )
    return {"path": path, "function": func, "params": params, "mapping": "by name" if by_name else "by position"}


def validate(ctx: dict) -> dict:
    """Check all inputs of a cookiecutter context; return the resolved choices."""
    check_op_name(ctx["op_name"])
    op = _check_pattern_op(ctx["pattern"], ctx["op"])
    gpu = ctx["__gpu"]
    spec = _check_gpu(gpu)
    _check_cell(ctx["pattern"], gpu, spec["framework"])
    _check_dtype(ctx["pattern"], ctx["dtype"])
    _check_shapes(ctx["pattern"], ctx["dtype"], ctx["shapes"], spec["framework"])
    if ctx["run_baseline"] not in ("auto", "yes", "no"):
        raise InputError(f"run_baseline: '{ctx['run_baseline']}' is not auto, yes or no")
    inputs = catalog.op_inputs(ctx["pattern"], op)
    logic = check_pytorch_logic(ctx.get("__pytorch_logic_path", ""), inputs)
    return {"op": op, "gpu": gpu, **spec, "inputs": inputs, "pytorch_logic": logic}
