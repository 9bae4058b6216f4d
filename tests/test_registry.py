"""The layout's contracts: the registry is the one list of patterns, DSLs and cells, and everything agrees with it.

A new pattern is one spec folder (tools/patterns/<name>/) plus its workspace files (reference.py and the kernels
in {{cookiecutter.op_name}}/patterns/<name>/); a new DSL is one module (tools/dsls/<name>.py) plus its runtime
folder ({{cookiecutter.op_name}}/dsl/<name>/) and its cells. These tests hold every other place to that.
"""

from __future__ import annotations

import ast
import json

import gpu_detect
import pytest
from helpers import ROOT, WS_TEMPLATE
from tools import registry, validate
from tools.catalog import ARCHS, GPUS

COOKIECUTTER = json.loads((ROOT / "cookiecutter.json").read_text())
INTERFACE = {"run", "compile_only", "describe"}


def test_cookiecutter_inputs_are_the_registry():
    """The inputs are free text checked by tools/validate.py while prompting (so a bad value is one line, not
    cookiecutter's choice-variable traceback): each input is followed by its check, every input has a prompt, and
    the prompts name what the registry and catalogue accept."""
    public = [k for k in COOKIECUTTER if not k.startswith("_")]
    assert public == list(validate.CHECKS)
    keys = list(COOKIECUTTER)
    for key in public:
        assert keys[keys.index(key) + 1] == f"__{key}"
        assert COOKIECUTTER[f"__{key}"] == f"{{{{ cookiecutter | kb_check('{key}') }}}}"
        assert isinstance(COOKIECUTTER[key], str)
    prompts = COOKIECUTTER["__prompts__"]
    assert set(prompts) == set(public)
    for name, module in registry.patterns().items():
        assert f"    {name}: {module.PROMPT}" in prompts["pattern"]
    assert all(gpu in prompts["gpu"] for gpu in [*GPUS, "auto"])
    assert all(choice in prompts["run_baseline"] for choice in validate.RUN_BASELINE)
    assert "[" not in "".join(prompts.values()), "rich would read [..] in a prompt as markup"
    # auto: the function's (a kernel demo alone is refused there: it names its pattern)
    assert COOKIECUTTER["pattern"] == "{{ 'auto' if cookiecutter.pytorch_logic or cookiecutter.kernel_demo else 'gemm' }}"
    assert "gemm" in registry.patterns() and COOKIECUTTER["gpu"] in GPUS
    assert COOKIECUTTER["dtype"] in registry.pattern("gemm").DTYPES


@pytest.mark.parametrize("pattern", list(registry.patterns()))
def test_every_pattern_has_its_spec_and_workspace_files(pattern):
    module = registry.patterns()[pattern]
    for attr in ("PROMPT", "DEFAULT_OP", "DTYPES", "SHAPES_HELP", "OPS", "FORMULA_NOTES", "PHASE1", "BASELINE",
                 "WIKI_WORDS", "WIKI_FAMILIES", "ISA_TARGETS", "DEFAULT_SHAPES", "cases", "tensors", "largest_buffer"):
        assert hasattr(module, attr), f"tools/patterns/{pattern} lacks {attr}"
    assert module.DEFAULT_OP in module.OPS
    assert (WS_TEMPLATE / "patterns" / pattern / "reference.py").is_file()
    assert any(registry.spec_path(pattern, d).is_file() for d in registry.dsls())


def test_every_cell_has_both_halves():
    """A cell spec without its kernel (or a kernel without its spec) is a half-built cell: neither is allowed."""
    for pattern in registry.patterns():
        for dsl in registry.dsls():
            spec = registry.spec_path(pattern, dsl).is_file()
            kernel = registry.kernel_path(pattern, dsl).is_file()
            assert spec == kernel, f"{pattern}/{dsl}: spec {spec}, kernel {kernel}"
    assert len(registry.cells()) == len(registry.patterns()) * len(registry.dsls())  # all eight are built today


@pytest.mark.parametrize("cell", sorted(registry.cells()), ids="/".join)
def test_every_cell_exposes_the_same_interface(cell):
    """run(*inputs, out=None), compile_only(case, out_dir, ...), describe(case): what test_kernel.py and the
    report call, read from the kernel's source (a FlyDSL kernel cannot be imported next to CuTe DSL). run may be a
    module-level name for one of the file's functions (`run = _run_rows`: the hot
    path with no second frame); each function it may name takes out=."""
    tree = ast.parse(registry.kernel_path(*cell).read_text())
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    aliases = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
               if isinstance(t, ast.Name) and t.id in INTERFACE}
    assert INTERFACE <= set(functions) | set(aliases), f"{cell}: missing {INTERFACE - set(functions) - set(aliases)}"
    named = [functions["run"]] if "run" in functions else [
        functions[n.id] for n in ast.walk(aliases["run"]) if isinstance(n, ast.Name) and n.id in functions]
    assert named, "run names a function of the file"
    for run in (f.args for f in named):
        assert "out" in [a.arg for a in run.args + run.kwonlyargs], "run() takes out="
    assert [a.arg for a in functions["compile_only"].args.args][:2] == ["case", "out_dir"]
    assert [a.arg for a in functions["describe"].args.args] == ["case"]
    doc = ast.get_docstring(tree)
    assert doc and len(doc.split("\n\n")) > 2 and "\n" in doc.split("\n\n")[1], "title, design paragraph, details"


def test_every_dsl_brings_its_runtime():
    for name, module in registry.dsls().items():
        assert (WS_TEMPLATE / "dsl" / name / f"{name}_runtime.py").is_file()
        assert module.NAME == name and module.ARCHS and module.DEVICE["vendor"] and module.MAX_ELEMENTS


def test_gpu_facts_agree_everywhere():
    """catalog.GPUS, reference/gpu_specs.json and the workspace's gpu_detect name the same GPUs and vendors."""
    specs = json.loads((ROOT / "reference" / "gpu_specs.json").read_text())["gpus"]
    assert set(specs) == set(GPUS)
    assert {name: vendor for name, vendor in gpu_detect._KNOWN} == {name: g["vendor"] for name, g in GPUS.items()}
    for name, gpu in GPUS.items():
        resolved = registry.gpu(name)
        assert registry.dsls()[resolved["framework"]].DEVICE["vendor"] == gpu["vendor"]
        assert gpu_detect.canonical_name(f"AMD Instinct {name}" if gpu["vendor"] == "amd" else f"NVIDIA {name}") == name


def test_the_registry_refuses_what_it_does_not_know():
    with pytest.raises(registry.InputError, match="pattern: 'conv' is unknown; choose one of"):
        registry.pattern("conv")
    with pytest.raises(registry.InputError, match="gpu: 'A100' is not supported"):
        registry.gpu("A100")
    with pytest.raises(registry.InputError, match="no DSL compiles for architecture 'ampere'"):
        registry.dsl_for("ampere")


def test_python_files_are_python():
    """Every .py file parses, apart from the two hooks (cookiecutter renders them); the workspace template is copied
    without render, so no Jinja reaches Python: values arrive through op.json."""
    assert COOKIECUTTER["_copy_without_render"] == ["*"]
    files = [p for p in ROOT.rglob("*.py") if not {".venv", ".git", "__pycache__", ".carry"} & set(p.parts)]
    hooks = {ROOT / "hooks" / "pre_gen_project.py", ROOT / "hooks" / "post_gen_project.py"}
    for path in files:
        if path not in hooks:
            ast.parse(path.read_text(), filename=str(path))
    for path in WS_TEMPLATE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            text = path.read_text(errors="replace")
            assert "{%" not in text and "{{ cookiecutter" not in text and "{{cookiecutter" not in text, path


def test_every_architecture_has_its_wiki_names():
    """The catalogue names every GPU's and every DSL's architecture for the gpu-wiki route (op.json's `wiki` block)."""
    assert all(ARCHS[g["arch"]]["vendor"] == g["vendor"] for g in GPUS.values())
    assert {a for m in registry.dsls().values() for a in m.ARCHS} <= set(ARCHS)
    names = [n for a in ARCHS.values() for n in a["wiki_names"]]
    assert len(names) == len(set(names)) and all(n == n.lower() and "sm_" not in n for n in names)
