"""The registry of patterns, DSLs and cells: what exists is what is on disk, and nothing else is guessed.

- a **pattern** is a package ``tools/patterns/<name>/`` (its spec; see tools/patterns/__init__.py), with its built-in
  ops as PyTorch functions in ``programs.py`` when its cells run them through the lowering (elementwise, reduction);
- a **DSL** is a module ``tools/dsls/<name>.py`` (see tools/dsls/cutedsl.py);
- a **cell** (pattern x DSL) is built when both of its halves exist: the cell spec
  ``tools/patterns/<pattern>/<dsl>.toml`` (data: what the kernel promises, for op.json and the records) and the
  kernel ``{{cookiecutter.op_name}}/patterns/<pattern>/<dsl>/kernel.py``. The ISA markers every cell of a DSL shares
  (``ISA_MARKERS`` of its module) are added to each of its cells here.

Lookups of an unknown name, or of a cell that is not built, raise catalog.InputError with the list of what exists.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import tomllib
from pathlib import Path

from tools.catalog import GPUS, InputError

ROOT = Path(__file__).resolve().parent.parent
WORKSPACE_TEMPLATE = ROOT / "{{cookiecutter.op_name}}"


@functools.cache
def workspace_tool(name: str):
    """A workspace tool (`{{cookiecutter.op_name}}/tools/<name>.py`) the template side uses too, loaded by path once:
    the one copy of it lives in the workspace template (gpu_detect for gpu=auto, files for what a path is)."""
    spec = importlib.util.spec_from_file_location(f"kbaseline_{name}", WORKSPACE_TEMPLATE / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def patterns() -> dict:
    """name -> pattern module, for every folder of tools/patterns/."""
    names = sorted(p.parent.name for p in (ROOT / "tools" / "patterns").glob("*/__init__.py"))
    return {name: importlib.import_module(f"tools.patterns.{name}") for name in names}


@functools.cache
def dsls() -> dict:
    """name -> DSL module, for every module of tools/dsls/."""
    names = sorted(p.stem for p in (ROOT / "tools" / "dsls").glob("*.py") if p.stem != "__init__")
    return {name: importlib.import_module(f"tools.dsls.{name}") for name in names}


def kernel_path(pattern: str, dsl: str) -> Path:
    return WORKSPACE_TEMPLATE / "patterns" / pattern / dsl / "kernel.py"


def spec_path(pattern: str, dsl: str) -> Path:
    return ROOT / "tools" / "patterns" / pattern / f"{dsl}.toml"


def programs_path(pattern: str) -> Path | None:
    """The pattern's built-in ops as PyTorch functions (``tools/patterns/<pattern>/programs.py``), which a bake lowers
    as it lowers a user's function, or None for a pattern whose cells implement their ops by hand (GEMM, decode)."""
    path = ROOT / "tools" / "patterns" / pattern / "programs.py"
    return path if path.is_file() else None


def _load_cell(pattern: str, dsl: str) -> dict:
    cell = tomllib.loads(spec_path(pattern, dsl).read_text())
    common, own = dsls()[dsl].ISA_MARKERS, cell.get("isa_markers", {})
    cell["isa_markers"] = {"required": [*own.get("required", []), *common["required"]],
                           "forbidden": [*common["forbidden"], *own.get("forbidden", [])]}
    return cell


@functools.cache
def cells() -> dict:
    """(pattern, dsl) -> the cell spec dict, for every cell whose spec and kernel both exist."""
    return {(p, d): _load_cell(p, d) for p in patterns() for d in dsls()
            if spec_path(p, d).is_file() and kernel_path(p, d).is_file()}


def pattern(name: str):
    if name not in patterns():
        raise InputError(f"pattern: '{name}' is unknown; choose one of {', '.join(patterns())}")
    return patterns()[name]


def dsl_for(arch: str):
    """The DSL that compiles for an architecture."""
    for module in dsls().values():
        if arch in module.ARCHS:
            return module
    raise InputError(f"gpu: no DSL compiles for architecture '{arch}'; known: "
                     f"{', '.join(a for m in dsls().values() for a in m.ARCHS)}")


def gpu(name: str) -> dict:
    """A GPU's facts with its DSL's: vendor, arch, target, framework, compute_units."""
    if name not in GPUS:
        raise InputError(f"gpu: '{name}' is not supported; choose one of {', '.join(GPUS)} or auto")
    spec = GPUS[name]
    dsl = dsl_for(spec["arch"])
    return {**spec, "target": dsl.ARCHS[spec["arch"]], "framework": dsl.NAME}


def first_gpu(target: str) -> str:
    """The first catalogued GPU of a compile target (gfx942: MI300X, gfx950: MI355X): compile checks bake it."""
    return next(name for name in GPUS if gpu(name)["target"] == target)


def cell(pattern_name: str, dsl_name: str, gpu_name: str = "") -> dict:
    """The cell spec, or the one-line refusal that names what is built."""
    if (pattern_name, dsl_name) not in cells():
        built = ", ".join(f"{p} ({d})" for p, d in sorted(cells()))
        who = f"pattern={pattern_name} gpu={gpu_name}: " if gpu_name else ""
        raise InputError(f"{who}not available yet: {pattern_name}/{dsl_name}; built so far: {built}")
    return cells()[(pattern_name, dsl_name)]


def resolve_op(pattern_name: str, op: str) -> str:
    """'default' (or empty) -> the pattern's default op."""
    return pattern(pattern_name).DEFAULT_OP if op in ("", "default") else op


@functools.cache
def workspace_names() -> frozenset[str]:
    """The module and folder names at a workspace's root (its own files, whichever cell it holds, and the folders
    a bake or a run makes): a user's module copied beside user_logic.py must not take one of them."""
    roots = [WORKSPACE_TEMPLATE, *WORKSPACE_TEMPLATE.glob("patterns/*"), *WORKSPACE_TEMPLATE.glob("patterns/*/*"),
             *WORKSPACE_TEMPLATE.glob("dsl/*")]
    roots = [r for r in roots if r.is_dir()]
    names = {p.stem if p.suffix == ".py" else p.name for root in roots for p in root.iterdir()
             if p.name != "__pycache__" and (p.suffix == ".py" or p.is_dir())}
    return frozenset(names - set(patterns()) - set(dsls()) | {"user_logic", "reference", "memory", "plans", "results",
                                                             "build"})


def all_ops() -> dict[str, str]:
    """op -> the pattern that owns it."""
    return {op: name for name, module in patterns().items() for op in module.OPS}
