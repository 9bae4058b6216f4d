"""Validate every template input (called once, by tools.spec.build in the pre-gen hook).

Each check raises ``catalog.InputError`` whose message is one line: the input, what is wrong, and how to fix it.
``validate(context)`` returns the resolved choices (op, GPU facts, pattern, DSL and cell, the user's reference
function), which tools.spec turns into op.json.
"""

from __future__ import annotations

import ast
import keyword
import os

from tools import registry, shapes
from tools.catalog import InputError


def check_op_name(name: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise InputError(
            f"op_name: '{name}' is not a Python identifier; use letters, digits and '_', not starting "
            f"with a digit, e.g. op_name=silu_mul_bf16"
        )


def _check_op(pattern, pattern_name: str, op: str) -> str:
    resolved = registry.resolve_op(pattern_name, op)
    if resolved not in pattern.OPS:
        owner = registry.all_ops().get(resolved)
        hint = f" (it belongs to pattern={owner})" if owner else ""
        raise InputError(f"op: '{resolved}' is not an op of pattern={pattern_name}{hint}; choose one of "
                         f"{', '.join(pattern.OPS)} or 'default'")
    return resolved


def _check_dtype(pattern, pattern_name: str, dtype: str) -> None:
    if dtype not in pattern.DTYPES:
        raise InputError(f"dtype: {dtype} is not supported by {pattern_name}; choose one of {', '.join(pattern.DTYPES)}")


def _check_shapes(pattern, dsl, dtype: str, text: str) -> None:
    try:
        shapes.check(pattern, dsl, dtype, text)
    except InputError as err:
        raise InputError(f"{err} ({pattern.SHAPES_HELP})") from None


def parse_logic_spec(spec: str) -> tuple[str, str | None]:
    """'dir/f.py:fn' -> ('dir/f.py', 'fn'); 'dir/f.py' -> ('dir/f.py', None)."""
    path, sep, func = spec.rpartition(":")
    if sep and func.isidentifier():
        return path, func
    return spec, None


def _public(functions) -> list[str]:
    return [name for name in functions if not name.startswith("_")]


def check_pytorch_logic(spec: str, inputs: list[str]) -> dict | None:
    """The user's reference file: exists, parses, defines the function, and its parameters map to the op's inputs."""
    if not spec.strip():
        return None
    path, func = parse_logic_spec(spec.strip())
    if not path.endswith(".py"):
        raise InputError(f"pytorch_logic: '{path}' is not a .py file; give 'path/to/file.py' or 'path/to/file.py:function'")
    if not os.path.isfile(path):
        raise InputError(f"pytorch_logic: file '{path}' does not exist; give an existing .py path (relative to where "
                         "you run cookiecutter)")
    try:
        tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
    except (SyntaxError, UnicodeDecodeError) as err:
        raise InputError(f"pytorch_logic: '{path}' does not parse ({err}); fix the file's syntax") from None
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if func is None:
        public = _public(functions)
        if len(public) != 1:
            raise InputError(f"pytorch_logic: '{path}' defines {len(public)} public functions ({', '.join(public) or 'none'}); "
                             "name one as 'file.py:function'")
        func = public[0]
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
    pattern = registry.pattern(ctx["pattern"])
    op = _check_op(pattern, ctx["pattern"], ctx["op"])
    gpu = registry.gpu(ctx["__gpu"])
    dsl = registry.dsls()[gpu["framework"]]
    cell = registry.cell(ctx["pattern"], dsl.NAME, ctx["__gpu"])
    _check_dtype(pattern, ctx["pattern"], ctx["dtype"])
    _check_shapes(pattern, dsl, ctx["dtype"], ctx["shapes"])
    if ctx["run_baseline"] not in ("auto", "yes", "no"):
        raise InputError(f"run_baseline: '{ctx['run_baseline']}' is not auto, yes or no")
    logic = check_pytorch_logic(ctx.get("__pytorch_logic_path", ""), pattern.OPS[op]["inputs"])
    return {"pattern": pattern, "op": op, "gpu": gpu, "dsl": dsl, "cell": cell, "pytorch_logic": logic}
