"""Bake matrix and refusals: every built cell bakes cleanly; bad input stops before anything is written."""

from __future__ import annotations

import ast
import py_compile
import subprocess
import sys

import pytest
from helpers import MATRIX, ROOT, WS_TEMPLATE, bake_cli, read_json
from tools import registry, scaffold, spec, validate
from tools.catalog import InputError
from tools.lower import ir

EXPECTED_FILES = {
    ".gitignore", "README.md", "op.json", "__init__.py", "kernel.py", "host.py", "reference.py", "test_kernel.py",
    "baseline_report.md", "plans/v0_plan.md", "memory/v0.json",
    "reference/v_iteration.schema.json", "reference/gpu_specs.json",
} | {f"tools/{p.name}" for p in (WS_TEMPLATE / "tools").glob("*.py")}


def dsl_files(framework: str, lowered: bool = False) -> set[str]:
    """What the DSL brings to a workspace: its dsl/<name>/ tree, at the same paths; its pointwise library only to a
    workspace whose kernel runs a program (only a generated compute calls it)."""
    root = WS_TEMPLATE / "dsl" / framework
    return {str(p.relative_to(root)) for p in root.rglob("*.py")} - (set() if lowered else {"pointwise.py"})


def workspace_files(ws):
    return {str(p.relative_to(ws)) for p in ws.rglob("*")
            if p.is_file() and not {".git", "__pycache__", "build"} & set(p.parts)}


@pytest.mark.parametrize("gpu,pattern,op,dtype", MATRIX, ids=[f"{g}-{o}-{d}" for g, _, o, d in MATRIX])
def test_bake_matrix_cell(matrix, gpu, pattern, op, dtype):
    result = matrix[(gpu, op)]
    assert result.exit_code == 0, result.exception
    ws = result.project_path
    expected_arch = {"H100": "hopper", "H20": "hopper", "H200": "hopper", "MI300X": "cdna3", "MI308X": "cdna3",
                     "MI355X": "cdna4"}[gpu]
    amd = expected_arch != "hopper"
    framework = "flydsl" if amd else "cutedsl"
    compiled = {"results/compile_only.json"} if amd else set()  # FlyDSL: compiled to ISA at bake time
    program = {"lowered.py"} if registry.programs_path(pattern) else set()  # the built-in op as a program
    assert workspace_files(ws) == EXPECTED_FILES | dsl_files(framework, bool(program)) | compiled | program
    for path in ws.rglob("*"):  # the text files (a .pyc's header holds the source's mtime: any bytes at all)
        if path.is_file() and not {".git", "__pycache__"} & set(path.parts) and path.suffix != ".png":
            text = path.read_text(errors="replace")
            assert "{{" not in text and "{%" not in text, f"Jinja leftover in {path.relative_to(ws)}"
    for path in ws.rglob("*.py"):
        py_compile.compile(str(path), doraise=True)
    spec = read_json(ws / "op.json")
    assert (spec["pattern"], spec["op"], spec["gpu"], spec["dtype"]) == (pattern, op, gpu, dtype)
    target = {"hopper": "sm_90a", "cdna3": "gfx942", "cdna4": "gfx950"}[expected_arch]
    assert (spec["arch"], spec["target"], spec["framework"]) == (expected_arch, target, framework)
    assert spec["compute_units"] == {"H100": 132, "H20": 78, "H200": 132, "MI300X": 304, "MI308X": 80, "MI355X": 256}[gpu]
    log = subprocess.run(["git", "log", "--format=%s"], cwd=ws, capture_output=True, text=True).stdout.splitlines()
    assert len(log) == 1 and log[0].startswith(f"Scaffold {ws.name}: {op} {dtype} {pattern} for {gpu}") and "V0 not run" in log[0]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True).stdout
    assert status == "", f"uncommitted files after the bake:\n{status}"


PROGRAM_CELLS = sorted(cell for cell in registry.cells() if registry.programs_path(cell[0]))


@pytest.mark.parametrize("pattern,dsl", PROGRAM_CELLS, ids=["-".join(c) for c in PROGRAM_CELLS])
def test_a_program_cell_has_one_run_path(pattern, dsl):
    """A cell whose ops are programs (built-in or a user's) is one kernel around lowered.compute(): kernel.py binds
    `run` once, has no second path beside it (no run_lowered, _prepare_lowered or per-op table), and names none of
    its pattern's built-in ops in its code (each is a program in programs.py; the reduce kinds sum, max and min are
    compute()'s words, not ops)."""
    tree = ast.parse(registry.kernel_path(pattern, dsl).read_text())
    names = [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    names += [t.id for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name)]
    assert names.count("run") == 1, names
    assert not [n for n in names if n != "run" and (n.startswith("run") or "lowered" in n.lower())], names
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    literals = {node.value for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}
    assert not (set(registry.pattern(pattern).OPS) - set(ir.REDUCE)) & literals


def test_bake_matrix_is_ruff_clean(matrix):
    dirs = [str(r.project_path) for r in matrix.values()]
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--line-length", "120", *dirs],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


REFUSALS = [
    # (key=value pairs, text the one-line error must contain)
    (["op_name=1bad"], "op_name: '1bad' is not a Python identifier"),
    (["op_name=class"], "op_name: 'class' is a Python keyword; add a suffix, e.g. op_name=class_op"),
    (["op_name=" + "a" * 300], "op_name: 300 characters is too long"),  # was: OSError, File name too long
    (["op_name=a/b"], "op_name: 'a/b' is not a Python identifier"),  # refused before cookiecutter makes a/
    (["op_name=../escape"], "op_name: '../escape' is not a Python identifier"),
    (["pattern=elementwise", "op=matmul"], "op: 'matmul' is not an op of pattern=elementwise (it belongs to pattern=gemm)"),
    (["pattern=elementwise", "gpu=MI300X", "shapes=1073741824"], "FlyDSL buffer accesses address under 2 GiB"),
    (["pattern=elementwise", "dtype=fp8"], "dtype: 'fp8' is not a dtype elementwise supports"),
    (["pattern=reduction", "dtype=fp8"], "dtype: 'fp8' is not a dtype reduction supports; choose one of bf16, fp16, fp32"),
    (["dtype=int4"], "dtype: 'int4' is not a dtype gemm supports; choose one of bf16, fp16, fp8"),
    (["pattern=elementwise", "shapes=4096x"], "shapes: '4096x' is not a 1-D or 2-D shape"),
    (["pattern=elementwise", "shapes=2x3x4"], "shapes: '2x3x4' is not a 1-D or 2-D shape"),
    (["pattern=elementwise", "shapes=0x5"], "shapes: '0x5' is not a 1-D or 2-D shape"),
    (["pattern=elementwise", "shapes=65536x65536"], "above the kernel's int32 limit"),
    (["shapes=4096x4096"], "shapes: '4096x4096' is not a 3-D shape"),
    (["shapes=4096x4096x4095"], "K=4095 is not a multiple of 8: rows of A and B must be 16-byte aligned"),
    (["shapes=1099511627776x1099511627776x1099511627776"], "A [M,K] has 1208925819614629174706176 elements; CuTe DSL "
                                                           "kernels address a tensor's elements with 32-bit offsets"),
    (["pattern=reduction", "shapes=64x64@32"], "the row stride after '@' must be an integer >= N (64)"),
    (["pattern=decode_attention", "shapes=4x6x4x128x128"], "Hq=6 is not a multiple of Hkv=4"),
    (["pattern=decode_attention", "shapes=4x8x8x128x96"], "head dim D=96 is not supported; use one of 64, 128, 256"),
    (["pattern=decode_attention", "shapes=4x8x8x128x128@200"], "after '@' give a length 1..S (128) or 'mixed'"),
    (["pattern=decode_attention", "shapes=1000000x32x8x4096x128@mixed"], "B*Hkv = 8000000 CTAs on the launch grid's z "
                                                                         "axis, above its 65535 limit"),
    (["pattern=decode_attention", "shapes=1099511627776x32x8x4096x128"], "B*Hkv = 8796093022208 CTAs"),  # MemoryError
    (["pattern=elementwise", "pytorch_logic=missing_file.py"], "pytorch_logic: file"),
    (["pattern=elementwise", "pytorch_logic=notes.txt"], "is not a .py file"),
    (["gpu_wiki="], "gpu_wiki: empty; give the gpu-wiki's path"),  # was: the current directory, as the wiki
    # values outside the lists: cookiecutter's own 26-line traceback before, when they were choice variables
    (["gpu=h200"], "gpu: 'h200' is not a supported GPU; did you mean H200? choose one of H200, H100, H20, MI300X"),
    (["gpu=A100"], "gpu: 'A100' is not a supported GPU; choose one of"),
    (["dtype=BF16"], "dtype: 'BF16' is not a dtype gemm supports; did you mean bf16?"),
    (["pattern=conv"], "pattern: 'conv' is not a pattern; choose one of"),
    (["op=Default"], "op: 'Default' is not an op of pattern=gemm; did you mean default?"),
    (["run_baseline=maybe"], "run_baseline: 'maybe' is not auto, yes or no"),
    (["gpus=H200"], "gpus: not an input of this template; did you mean gpu?"),  # cookiecutter would ignore it
    (["shapes={{ cookiecutter.gpu }}"], "shapes: '{{ cookiecutter.gpu }}' holds Jinja syntax"),  # would be evaluated
]


def test_a_cell_not_built_is_refused(monkeypatch):
    """Every (pattern, DSL) is built today; a cell the registry lacks is refused by name, with the list."""
    monkeypatch.setattr(registry, "cells", lambda: {("gemm", "cutedsl"): {}})
    with pytest.raises(registry.InputError, match=r"pattern=gemm gpu=MI300X: not available yet: gemm/flydsl; "
                                                  r"built so far: gemm \(cutedsl\)"):
        registry.cell("gemm", "flydsl", "MI300X")


@pytest.mark.parametrize("pairs,message", REFUSALS, ids=[" ".join(p)[:60] for p, _ in REFUSALS])
def test_refusal(tmp_path, pairs, message):
    """The whole output of a refused bake is one line naming the input and the fix: no traceback, no folder."""
    out = tmp_path / "out"
    out.mkdir()
    done = bake_cli(out, *pairs)
    assert done.returncode == 1
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("kbaseline: error: ") and message in lines[0], lines[:20]
    assert list(out.iterdir()) == [], "a refused bake must leave no directory"


def test_interactive_wrong_answer_is_asked_again(tmp_path):
    """At the prompt, a wrong answer is refused at once, in one line, and its question asked again; every earlier
    answer is kept. (The op menu is the pattern's: its ops are printed after the pattern is chosen.)"""
    answers = ["", "", "reduction", "matmul", "softmax", "H200", "fp8", "fp32", "class", "my_softmax", "64x64@32", "64x64",
               "", "maybe", "no"]
    config = write(tmp_path / "config.yaml", f"replay_dir: {tmp_path / 'replay'}\n")
    done = bake_cli(tmp_path, "--config-file", str(config), options=(), stdin="\n".join(answers) + "\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reduction: ops sum, mean, max, softmax, rmsnorm (default softmax); dtypes bf16, fp16, fp32" in done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("kbaseline: error: ")]
    assert [e.split(":")[2].strip() for e in errors] == ["op", "dtype", "op_name", "shapes", "run_baseline"]
    op_asked = [i for i in range(len(done.stdout)) if done.stdout.startswith("Op within the pattern", i)]
    assert len(op_asked) == 2 and done.stdout.index("[5/10] Target GPU") > op_asked[1]  # the op was asked again first
    spec = read_json(tmp_path / "my_softmax" / "op.json")
    assert (spec["pattern"], spec["op"], spec["dtype"], spec["run_baseline"]) == ("reduction", "softmax", "fp32", "no")
    assert spec["cases"][0]["name"] == "rep_64x64"


def test_refused_bake_leaves_the_replay_file_alone(tmp_path):
    """cookiecutter writes its replay file after the prompts: a refusal while prompting comes before it."""
    replay = tmp_path / "replay"
    config = write(tmp_path / "config.yaml", f"replay_dir: {replay}\ncookiecutters_dir: {tmp_path / 'cc'}\n")
    out = tmp_path / "out"
    out.mkdir()
    good = bake_cli(out, "op_name=first", "--config-file", str(config))
    assert good.returncode == 0, good.stderr
    (saved,) = replay.glob("*.json")
    before = saved.read_text()
    bad = bake_cli(out, "op_name=second", "dtype=int4", "--config-file", str(config))
    assert bad.returncode == 1 and saved.read_text() == before
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = bake_cli(elsewhere, "--replay", "--config-file", str(config), options=())  # the good answers, replayed
    assert again.returncode == 0 and read_json(elsewhere / "first" / "op.json")["op_name"] == "first", again.stderr


def write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("source,spec,message", [
    ("def f(:\n", "logic.py", "does not parse"),
    ("def ref(x, y):\n    return x + y\n", "logic.py:other", "defines no top-level function 'other'"),
    # an nn.Module pasted whole: the line says how to make it a function
    ("import torch\n\n\nclass Norm(torch.nn.Module):\n    def forward(self, x):\n        return x\n", "logic.py:Norm",
     "is a class (its forward is the op); copy its forward into a top-level function"),
    ("def a(x):\n    return x\n\ndef b(x):\n    return x\n", "logic.py", "defines 2 public functions (a, b)"),
    ("def f(a, b, c):\n    return a\n", "logic.py", "cannot take this op's inputs (x, y)"),
])
def test_pytorch_logic_refusals(tmp_path, source, spec, message):
    write(tmp_path / "logic.py", source)
    out = tmp_path / "out"
    out.mkdir()
    done = bake_cli(out, "pattern=elementwise", "op=silu_mul", f"pytorch_logic={tmp_path / spec}")
    assert done.returncode != 0
    assert message in done.stderr and "kbaseline: error: pytorch_logic:" in done.stderr
    assert list(out.iterdir()) == []


def assert_reference_is_silu_mul(ws):
    """In the workspace's own process: its reference (the user's logic) computes silu(x) * y."""
    result = subprocess.run([sys.executable, "-c", (
        "import torch, reference\n"
        "x, y = reference.make_inputs({'dims': [5, 3]}, torch.float64, 'cpu', 0)\n"
        "assert torch.equal(reference.reference(x, y), torch.nn.functional.silu(x) * y)\n"
        "print('ok')")], cwd=ws, capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr


def test_user_logic_becomes_the_reference(tmp_path):
    write(tmp_path / "swiglu.py", "import torch\n\n\ndef _helper(t):\n    return t\n\n\n"
          "def swiglu(gate, up):\n    return torch.nn.functional.silu(gate) * _helper(up)\n")
    out = tmp_path / "out"
    out.mkdir()
    done = bake_cli(out, "pattern=elementwise", "op=silu_mul", "op_name=my_swiglu", "pytorch_logic=swiglu.py",
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ws = out / "my_swiglu"
    assert (ws / "user_logic.py").read_text() == (tmp_path / "swiglu.py").read_text()
    spec = read_json(ws / "op.json")["reference"]
    assert spec["function"] == "swiglu" and spec["mapping"] == "by position"
    assert_reference_is_silu_mul(ws)


def test_user_logic_brings_the_modules_it_imports_from_its_folder(tmp_path):
    """`from myhelpers import ...` in the logic file: myhelpers.py (and what it imports from there) is copied too."""
    src = tmp_path / "src"
    src.mkdir()
    write(src / "swiglu.py", "import torch\nfrom myhelpers import gate\n\n\ndef swiglu(x, y):\n    return gate(x) * y\n")
    write(src / "myhelpers.py", "import torch\nimport scale\n\n\ndef gate(t):\n    return scale.one(torch.nn.functional.silu(t))\n")
    write(src / "scale.py", "def one(t):\n    return t\n")
    write(src / "unrelated.py", "x = 1\n")
    ws = scaffold.workspace(tmp_path / "ws", spec.context(pattern="elementwise", op="silu_mul",
                                                          pytorch_logic=str(src / "swiglu.py"), run_baseline="no"))
    assert read_json(ws / "op.json")["reference"]["siblings"] == ["myhelpers.py", "scale.py"]
    assert (ws / "myhelpers.py").is_file() and (ws / "scale.py").is_file() and not (ws / "unrelated.py").exists()
    assert_reference_is_silu_mul(ws)


@pytest.mark.parametrize("files,message", [
    ({"logic.py": "from .helpers import f\n\n\ndef g(x, y):\n    return f(x) * y\n"}, "line 1 has a relative import"),
    ({"logic.py": "import kernel\n\n\ndef g(x, y):\n    return x * y\n", "kernel.py": "x = 1\n"},
     "imports kernel from its own folder, which would clash with the workspace's own kernel"),
])
def test_user_logic_imports_that_cannot_work_are_refused(tmp_path, files, message):
    for name, text in files.items():
        write(tmp_path / name, text)
    with pytest.raises(InputError, match=message):
        validate.check_pytorch_logic(str(tmp_path / "logic.py"), ["x", "y"])


def test_gpu_auto_without_gpu_falls_back_to_h200(tmp_path):
    done = bake_cli(tmp_path, "gpu=auto", "op_name=auto_ws")
    assert done.returncode == 0, done.stderr
    assert "gpu=auto: no GPU found; generating for H200" in done.stdout
    assert read_json(tmp_path / "auto_ws" / "op.json")["gpu"] == "H200"


def test_template_tree_is_ruff_clean():
    """The whole repository, the workspace template included: nothing in it is Jinja any more."""
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
