"""This workspace as a Python package: `import <op_name>` from its parent folder puts the kernel in a model.

    import rmsnorm_bf16 as k                 # from the folder that holds the workspace
    y = k.run(x, weight)                     # kernel.run: the kernel itself, a few microseconds of host time a call
    k.OP["cases"]                            # the op spec (op.json)
    k.reference.reference(x64, w64)          # reference.py: the PyTorch ground truth, `baseline`, `make_inputs`
    y = torch.ops.rmsnorm_bf16.run(x, weight)  # the torch custom op (`k.op`): torch.compile and CUDA graphs take it

Why a package needs more than this file
    Inside the workspace its modules import each other by bare name (`import host`, `import cutedsl_runtime as rt`,
    `import lowered`, `from flydsl_runtime import ...`), because `python test_kernel.py` and `python tools/*.py`
    run from here with this folder on sys.path. Imported as `<op_name>`, those bare names would be global: the
    second workspace in a process would get the first one's `host`, with the first one's op.json. So every
    module of this folder is loaded as `<op_name>.<module>` by this package's own finder and given, as its
    `__builtins__`, a copy of the builtins whose `__import__` maps this folder's own top-level names onto the
    package: `import host` in `<op_name>.kernel` binds `<op_name>.host`, at import time and inside functions
    alike, and nothing global (sys.path, a module named `host`) is read or written. Any other import is the
    ordinary one. Two or more workspaces therefore import side by side, each with its own spec, and the files
    themselves are unchanged: `python test_kernel.py` and the tools work from inside the workspace as before.
    One more rule: `host.reference_for` loads your PyTorch file with `importlib.import_module`, which no
    `__import__` sees, so while a module of this package runs its body the bare name of that one file
    (`user_logic`) points at the package's copy in sys.modules; the entry is removed again afterwards.

The custom op
    `torch.ops.<op_name>.run(*inputs)` takes op.json's inputs by name and order and returns the outputs as
    kernel.run does (a tuple for a function with several). It is registered when the package is imported:
    on CUDA it is kernel.run, on the CPU the reference in float64 rounded to the kernel's output dtypes (so the
    op runs, and `torch.library.opcheck` checks it, anywhere), and its fake (meta) rule runs the reference on
    fake tensors for the shapes and takes the dtypes from the harness's rule (test_kernel.output_dtypes), so
    there is no second shape rule to keep in step. It has no gradient: inputs that require grad are refused in
    grad mode (call it under torch.no_grad() or torch.inference_mode()). A custom op is one opaque node to
    torch.compile (`fullgraph=True` works), and kernel.run allocates from torch's caching allocator and launches
    on the current stream, so the op is captured by CUDA graphs (torch.compile's "reduce-overhead" included). The
    namespace is the package's name, unique in a process because sys.modules names are.

`load(folder, name)` loads another workspace folder (an older version of this one, taken from git by
tools/iterate.py) as package `name` with this same machinery.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import sys
import threading
from pathlib import Path

FOLDER = Path(__path__[0]).resolve()  # noqa: F821 (set by the import system: this file is always a package's)
OP: dict = json.loads((FOLDER / "op.json").read_text())
NAMESPACE = __name__  # the custom op's: torch.ops.<package>.run
_OWN = frozenset([p.stem for p in FOLDER.glob("*.py") if p.stem != "__init__" and p.stem.isidentifier()]
                 + [p.name for p in FOLDER.iterdir() if p.is_dir() and (p / "__init__.py").is_file()
                    and p.name.isidentifier()])
_IMPORTLIB_NAMES = ([Path(OP["reference"]["file"]).stem]  # host.reference_for's importlib.import_module(stem)
                    if OP.get("reference", {}).get("source") == "user" else [])


def _scoped_import(name, globals=None, locals=None, fromlist=(), level=0):
    """`__import__` for this package's modules: a bare import of one of this folder's own modules binds the
    package's module (`import host` -> `<package>.host`); everything else is the ordinary import."""
    head = name.partition(".")[0]
    if level or head not in _OWN:
        return builtins.__import__(name, globals, locals, fromlist, level)
    found = importlib.import_module(f"{__name__}.{name}")
    return found if fromlist else sys.modules[f"{__name__}.{head}"]


_BUILTINS = {**vars(builtins), "__import__": _scoped_import}
_WINDOW = threading.local()


class _Loader(importlib.machinery.SourceFileLoader):
    """Loads one module of this folder with the scoped `__import__` (and the user-file alias while its body runs)."""

    def exec_module(self, module):
        module.__builtins__ = _BUILTINS  # read by every frame of this module's code, functions included
        depth = getattr(_WINDOW, "depth", 0)
        _WINDOW.depth = depth + 1
        saved = {}
        try:
            if depth == 0:
                for stem in _IMPORTLIB_NAMES:
                    saved[stem] = sys.modules.get(stem)
                    sys.modules[stem] = importlib.import_module(f"{__name__}.{stem}")
            super().exec_module(module)
        finally:
            _WINDOW.depth = depth
            for stem, before in saved.items():
                if before is None:
                    sys.modules.pop(stem, None)
                else:
                    sys.modules[stem] = before


class _Finder(importlib.abc.MetaPathFinder):
    """Finds `<package>.<module>` in this folder (and nothing else), with the scoped loader."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, rest = fullname.rpartition(".")
        if package != __name__ or rest not in _OWN:
            return None
        file = FOLDER / f"{rest}.py"
        folder = FOLDER / rest
        if not file.is_file():
            file = folder / "__init__.py"
        return importlib.util.spec_from_file_location(
            fullname, file, loader=_Loader(fullname, str(file)),
            submodule_search_locations=[str(folder)] if file.name == "__init__.py" else None)


sys.meta_path.insert(0, _Finder())


def __getattr__(name: str):
    """Lazy attributes: `run` (kernel.run: importing kernel.py imports its DSL) and this folder's modules."""
    if name == "run":
        return importlib.import_module(f"{__name__}.kernel").run
    if name in _OWN:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load(folder, name: str):
    """Another workspace folder (e.g. an older version of this one) as package `name`, loaded as this one is."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__), submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


# --------------------------------------------------------------------------------------------
# the torch custom op
# --------------------------------------------------------------------------------------------

def _schema() -> str:
    """`(Tensor x, Tensor weight) -> Tensor`: op.json's inputs by name, one Tensor per output of the op."""
    outputs = len((OP.get("lowered") or {}).get("outputs") or [None])
    result = "Tensor" if outputs == 1 else "(" + ", ".join(["Tensor"] * outputs) + ")"
    return "(" + ", ".join(f"Tensor {name}" for name in OP["inputs"]) + f") -> {result}"


def _out_dtypes(inputs, count: int) -> list:
    """Each output's dtype, by the harness's own rule (test_kernel.output_dtypes: op.json's output dtypes)."""
    like = next((t.dtype for t in inputs if t.is_floating_point()), inputs[0].dtype)  # the call's dtype, as run()'s
    return importlib.import_module(f"{__name__}.test_kernel").output_dtypes(like, count)


def _on_reference(inputs, upcast):
    """The reference on `upcast` copies of the floating inputs, as a list of outputs."""
    reference = importlib.import_module(f"{__name__}.reference").reference
    got = reference(*[upcast(t) if t.is_floating_point() else t for t in inputs])
    return list(got) if isinstance(got, (tuple, list)) else [got]


def _pack(outs):
    return outs[0] if len(outs) == 1 else tuple(outs)


def _register():
    """torch.ops.<package>.run: kernel.run on CUDA, the reference on the CPU, the reference's shapes as fake rule.

    Defined with torch.library.Library (a schema and one kernel per dispatch key) rather than custom_op, whose
    per-call Python layers cost more host time (benchmarks/custom_op_dispatch.py measures both). The op has no
    gradient: its Autograd kernel refuses a call whose inputs require grad while grad mode is on (call it under
    torch.no_grad() or torch.inference_mode(), or detach), instead of returning an output that backprop would
    silently treat as constant; inference mode skips that kernel altogether, the cheapest call there is."""
    import torch

    kernel = []  # the package's kernel module, imported on the first CUDA call (importing it loads the DSL)

    def cuda(*inputs):
        if not kernel:
            kernel.append(importlib.import_module(f"{__name__}.kernel"))
        return kernel[0].run(*inputs)

    def cpu(*inputs):
        refs = _on_reference(inputs, lambda t: t.double())
        return _pack([r.to(d).contiguous() for r, d in zip(refs, _out_dtypes(inputs, len(refs)))])

    def fake(*inputs):
        refs = _on_reference(inputs, lambda t: t.float())
        device = next((t.device for t in inputs if t.is_floating_point()), inputs[0].device)
        return _pack([torch.empty(r.shape, dtype=d, device=device) for r, d in zip(refs, _out_dtypes(inputs, len(refs)))])

    def no_gradient(*inputs):
        if torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
            raise RuntimeError(f"torch.ops.{NAMESPACE}.run has no gradient: call it under torch.no_grad() or "
                               "torch.inference_mode(), or pass detached tensors")
        with torch._C._AutoDispatchBelowAutograd():
            return default(*inputs)

    try:
        lib = torch.library.Library(NAMESPACE, "DEF")
        lib.define(f"run{_schema()}")
    except Exception as err:  # e.g. a namespace torch keeps for itself, or one defined twice in this process
        raise ImportError(f"{__name__}: cannot register torch.ops.{NAMESPACE}.run ({type(err).__name__}: {err}); "
                          "import the workspace under another name (rename its folder)") from None
    default = getattr(torch.ops, NAMESPACE).run.default
    lib.impl("run", cuda, "CUDA")
    lib.impl("run", cpu, "CPU")
    lib.impl("run", no_gradient, "Autograd")
    torch.library.register_fake(f"{NAMESPACE}::run", fake, lib=lib)
    return lib, getattr(torch.ops, NAMESPACE).run


_library, op = _register()  # the library must stay alive: dropping it unregisters the op
