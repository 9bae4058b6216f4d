"""The user's kernel demo (`kernel_demo`): found, checked and read at bake time, never imported.

A kernel engineer often arrives with a kernel already: a Triton kernel from their model, a CUDA extension, a quack or
FlashInfer call, last quarter's version. `kernel_demo=path.py:callable` (or `folder:callable`, or a bare path when
it defines one public function) names it. At bake time nothing of it runs: its files are parsed (`ast`), which is
enough to refuse a missing file, a syntax error or a missing callable in one line, and to tell Phase 1 what can be
known without running it:

- the callable's signature, and how the op's inputs reach it: by name when its parameters carry the inputs' names
  (`x`, `weight`, `a`, `b`, ...), else by position in the op's input order (the same rule as `pytorch_logic`);
- for a Triton file, its `@triton.jit` functions with their `tl.constexpr` parameters, every launch
  `kernel[grid](..., BLOCK_SIZE=..., num_warps=...)` with its grid and meta-parameters as written, and the module's
  `BLOCK*` constants (a value the wrapper computes at run time is shown as its expression);
- the packages it imports from outside its folder (`triton`, `quack`, ...): the harness records a case as
  MISSING_PACKAGE where one is not installed, and goes on.

Its file goes into the workspace's `demo/` with what it imports from its own folder (modules, packages, data files
it names in a string, as `pytorch_logic`'s are copied), or, for a file inside a package, the whole top-level package;
`demo/` is put on sys.path by the harness only, on the GPU (test_kernel.py, "The kernel demo").

Its role: with `pytorch_logic`, the function is the reference and the demo is a peer (checked against the reference,
timed beside the kernel and torch); without it the demo cannot be traced (a Triton or CUDA kernel has no torch graph),
so a pattern and an op must be named, and the demo is the reference: V0 is checked against the demo's output (and,
recorded beside it, against the named op's PyTorch expression, which also stands in where the demo could not run).

`check(ctx)` is the input's check (tools/validate.py calls it in input order); `attach(op, ctx)` adds op.json's
`demo` block once op.json's inputs are known (the mapping is checked there); `install(ws, op)` copies the files.
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

from tools import validate
from tools.catalog import InputError

KEY = "kernel_demo"
MAX_FILES = 400  # a folder given as the demo is searched for the callable; past this many .py files, name the file
MAX_NAMES = 12  # names shown per list in the plan
FIX = "give 'path/to/file.py:callable' (or 'folder:callable'), relative to where you run cookiecutter"


# --------------------------------------------------------------------------------------------
# finding the callable
# --------------------------------------------------------------------------------------------

def _package_root(file: Path) -> Path | None:
    """The top-level package a file belongs to (the highest folder of an unbroken chain of __init__.py), or None."""
    top, folder = None, file.parent
    while (folder / "__init__.py").is_file():
        top, folder = folder, folder.parent
    return top


def _module_name(file: Path, package: Path | None) -> str:
    """The name the harness imports: `stem` for a plain file, `pkg.sub.mod` (`pkg` for its __init__) in a package."""
    if package is None:
        return file.stem
    parts = file.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _defined(tree: ast.AST) -> dict[str, ast.AST]:
    """Top-level names a module binds that could be the callable: functions, classes, assignments and imports (a
    demo file that re-exports `from quack.rmsnorm import rmsnorm` names a callable it does not define)."""
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update({t.id: node for t in targets if isinstance(t, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: node for a in node.names if a.name != "*"})
    return names


def _is_jit(node: ast.AST) -> bool:
    """A function decorated with triton.jit / triton.autotune / triton.heuristics (or `jit` imported from triton)."""
    for dec in getattr(node, "decorator_list", []):
        target = dec.func if isinstance(dec, ast.Call) else dec
        text = ast.unparse(target)
        if text in ("triton.jit", "jit", "tl.jit", "triton.autotune", "autotune", "triton.heuristics", "heuristics"):
            return True
    return False


def _candidates(tree: ast.AST) -> list[str]:
    """A bare path's callable: the public top-level functions that are not Triton kernels themselves."""
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not n.name.startswith("_") and not _is_jit(n)]


def _find_in_folder(folder: Path, func: str | None) -> Path:
    """The file of a folder that defines the callable (a package's __init__.py first, then its modules)."""
    files = sorted(p for p in (folder.rglob("*.py") if (folder / "__init__.py").is_file() else folder.glob("*.py"))
                   if "__pycache__" not in p.parts)
    files.sort(key=lambda p: p.name != "__init__.py")
    if len(files) > MAX_FILES:
        raise InputError(f"{KEY}: folder '{folder}' holds {len(files)} .py files; name the file itself "
                         "('folder/file.py:callable')")
    found: list[tuple[Path, str]] = []
    for file in files:
        tree = validate._parse(str(file), KEY)
        if func is None:
            found += [(file, n) for n in _candidates(tree)]
        elif func in _defined(tree) and not isinstance(_defined(tree)[func], (ast.Import, ast.ImportFrom)):
            found.append((file, func))  # defined here (a package's __init__ that only re-exports it is passed over)
    if func and found:
        return found[0][0]
    if func:
        raise InputError(f"{KEY}: no .py file in folder '{folder}' defines a top-level '{func}'; check the name after "
                         "':' (or name the file: 'folder/file.py:callable')")
    if len(found) != 1:
        listed = ", ".join(f"{f.name}:{n}" for f, n in found[:MAX_NAMES]) or "none"
        raise InputError(f"{KEY}: folder '{folder}' has {len(found)} public functions ({listed}); name one as "
                         "'folder:callable'")
    return found[0][0]


def _locate(path: str, func: str | None) -> tuple[Path, str | None]:
    """(the .py file, the callable or None) of the input, or a one-line refusal."""
    try:
        found = validate.what_is(path)
    except InputError as err:
        raise InputError(f"{KEY}: {err}; {FIX}") from None
    if found is None:
        raise InputError(f"{KEY}: '{path}' does not exist; {FIX}")
    if found.startswith("a directory"):
        return _find_in_folder(Path(path), func), func
    if not found.startswith("a regular file"):
        raise InputError(f"{KEY}: '{path}' is {found}, not a .py file or a folder; {FIX}")
    if not path.endswith(".py"):
        raise InputError(f"{KEY}: '{path}' is not a .py file; {FIX}")
    return Path(path), func


# --------------------------------------------------------------------------------------------
# what can be read without running it
# --------------------------------------------------------------------------------------------

def _signature(node: ast.AST, func: str) -> dict:
    """params/required/vararg as tools/validate.check_mapping reads them, and the signature as written."""
    if isinstance(node, ast.ClassDef):  # a class: its __call__'s (the demo is an instance) or __init__'s
        method = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__call__"), None)
        node = method or next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if node is None:
            return {"params": [], "required": [], "vararg": True, "signature": None}
        args = node.args
        params = [a.arg for a in args.posonlyargs + args.args][1:]  # self
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        params = [a.arg for a in args.posonlyargs + args.args]
    else:  # assigned or imported: not readable without running it
        return {"params": [], "required": [], "vararg": True, "signature": None}
    required = params[: len(params) - len(args.defaults)] if len(args.defaults) <= len(params) else []
    text = ast.unparse(node.args)
    return {"params": params, "required": required, "vararg": args.vararg is not None,
            "signature": f"{func}({text})"}


def _segment(source: str, node: ast.AST) -> str:
    text = ast.get_source_segment(source, node) or ast.unparse(node)
    return " ".join(text.split())[:160]


def _autotune_blocks(node: ast.AST, source: str) -> list[str]:
    """The literal meta-parameters of an @triton.autotune's configs (`BLOCK_SIZE: 1024, num_warps=8`)."""
    out = []
    for dec in node.decorator_list:
        if isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("autotune"):
            for kw in dec.keywords:
                if kw.arg == "configs":
                    out += [_segment(source, c) for c in getattr(kw.value, "elts", [])][:MAX_NAMES]
    return out


def triton_facts(tree: ast.AST, source: str) -> dict | None:
    """A Triton file's kernels, launches and BLOCK constants, as written (None when it has no @triton.jit)."""
    jits = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_jit(node):
            args = node.args.posonlyargs + node.args.args
            jits[node.name] = {"name": node.name, "line": node.lineno, "params": [a.arg for a in args],
                               "constexprs": [a.arg for a in args if a.annotation is not None
                                              and ast.unparse(a.annotation).endswith("constexpr")],
                               "autotune": _autotune_blocks(node, source)}
    if not jits:
        return None
    launches = []
    for caller in ast.walk(tree):
        if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)) or caller.name in jits:
            continue
        for call in ast.walk(caller):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript):
                name = ast.unparse(call.func.value).split(".")[-1]
                if name in jits:
                    meta = {kw.arg: _segment(source, kw.value) for kw in call.keywords
                            if kw.arg and (kw.arg.isupper() or kw.arg.startswith(("BLOCK", "num_")))}
                    launches.append({"kernel": name, "caller": caller.name, "line": call.lineno,
                                     "grid": _segment(source, call.func.slice), "meta": meta})
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and "BLOCK" in t.id.upper():
                    constants[t.id] = _segment(source, node.value)
    return {"jit": list(jits.values()), "launches": launches, "constants": constants}


def _kind(roots: set[str], triton: dict | None, tree: ast.AST) -> str:
    if triton:
        return "triton"
    calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    if any(c.endswith(("cpp_extension.load", "cpp_extension.load_inline", "load_inline")) for c in calls):
        return "cuda-extension"
    for dsl, words in (("cutedsl", ("cutlass", "quack")), ("flydsl", ("flydsl",)), ("cuda-extension", ("cupy",))):
        if roots & set(words):
            return dsl
    return "python"


KIND_WORDS = {"triton": "a Triton kernel", "cuda-extension": "a CUDA extension", "cutedsl": "a CuTe DSL kernel",
              "flydsl": "a FlyDSL kernel", "python": "a Python callable"}


# --------------------------------------------------------------------------------------------
# the input's check, op.json's block, the copy
# --------------------------------------------------------------------------------------------

def check(ctx: dict) -> dict | None:
    """The `kernel_demo` input: None when empty, else what bake time knows of it (a one-line InputError otherwise).
    Static: the files are parsed, never imported."""
    text = (ctx.get(KEY) or "").strip()
    if not text:
        return None
    path, func = validate.parse_logic_spec(text)
    path = validate._abspath(ctx, path.rstrip("/") or path)
    file, func = _locate(path, func)
    if file.stat().st_size > validate.MAX_LOGIC_BYTES:
        raise InputError(f"{KEY}: '{file}' is {file.stat().st_size} bytes, above {validate.MAX_LOGIC_BYTES}; give the "
                         "file that defines your kernel's callable")
    source = file.read_text(encoding="utf-8", errors="replace")
    tree = validate._parse(str(file), KEY)
    names = _defined(tree)
    if func is None:
        public = _candidates(tree)
        if len(public) != 1:
            raise InputError(f"{KEY}: '{file}' defines {len(public)} public functions ({', '.join(public) or 'none'}) "
                             "that are not @triton.jit kernels; name the one to call as 'file.py:callable'")
        func = public[0]
    if func not in names:
        shown = ", ".join(n for n in names if not n.startswith("_"))[:200] or "nothing public"
        raise InputError(f"{KEY}: '{file}' defines no top-level '{func}' (it has: {shown}); check the name after ':'")
    if _is_jit(names[func]):
        launcher = _candidates(tree)
        hint = f" ({', '.join(launcher)})" if launcher else ""
        raise InputError(f"{KEY}: '{func}' in '{file}' is a @triton.jit kernel, which needs a grid and pointers; name "
                         f"the Python function that launches it{hint}, which takes tensors and returns the output")
    package = _package_root(file)
    where = package.parent if package else file.parent
    files = [t for p in ([file] if package is None else sorted(package.rglob("*.py")))
             if "__pycache__" not in p.parts for t in [(p, validate._parse(str(p), KEY) if p != file else tree)]]
    siblings: set[str] = set()
    for p, t in files:
        siblings |= set(validate.sibling_modules(str(p), t, KEY, folder=where, relative_ok=package is not None))
    copied = sorted({package.name if package else file.name} | siblings - ({package.name} if package else set()))
    roots = set().union(*(validate._imported_roots(t, str(p), KEY, relative_ok=True) for p, t in files))
    local = {c.split("/")[0].removesuffix(".py") for c in copied}
    packages = sorted(r for r in roots - local if r not in sys.stdlib_module_names and r != "__future__")
    triton = triton_facts(tree, source)
    return {"path": str(file), "function": func, "module": _module_name(file, package), "folder": str(where),
            "copied": copied, "packages": packages, "kind": _kind(roots, triton, tree), "triton": triton,
            "line": getattr(names[func], "lineno", None), "spec": text, **_signature(names[func], func)}


def attach(op: dict, ctx: dict) -> dict:
    """op.json with its `demo` block (and, when the demo is the reference, the reference's description saying so):
    the demo checked again and its parameters matched to op.json's inputs (a one-line InputError)."""
    found = check(ctx)
    if not found:
        return op
    role = "peer" if op["reference"]["source"] == "user" else "reference"
    mapping = validate.check_mapping(found, op["inputs"], KEY) if found["signature"] else "by position"
    call = (f"{found['function']}({', '.join(f'{n}={n}' for n in op['inputs'])})" if mapping == "by name" else
            f"{found['function']}({', '.join(op['inputs'])})")
    demo = {**{k: found[k] for k in ("function", "module", "copied", "packages", "kind", "triton", "line", "params",
                                     "signature", "spec")},
            "original": found["path"], "from": found["folder"], "file": f"demo/{Path(found['path']).relative_to(found['folder']).as_posix()}",
            "role": role, "mapping": mapping, "call": call}
    op = {**op, "demo": demo}
    if role == "reference":
        ref = op["reference"]
        op["reference"] = {**ref, "description": (
            f"Your kernel demo `{found['function']}` ({found['spec']}, copied to {demo['file']}) is the reference: "
            f"the harness checks V0 against its output on every case where it runs (called as `{call}` on the same "
            f"inputs), and records V0 against the `{op['op']}` expression beside it. The demo cannot be traced, so "
            f"the op was named; where the demo cannot run (it raises, times out, or a package is missing) the "
            f"expression is the reference for that case. That expression: {ref['description']}")}
    return op


def install(ws: Path, op: dict) -> None:
    """Copy the demo's files into ws/demo/ (caches left out): its file or top-level package, and what it imports or
    reads from its own folder."""
    demo = op.get("demo")
    if not demo:
        return
    src = Path(demo["from"])  # the file's folder, or its top-level package's parent
    dest = ws / "demo"
    dest.mkdir(exist_ok=True)
    for name in demo["copied"]:
        if (src / name).is_dir():
            shutil.copytree(src / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
        else:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / name, dest / name)
