"""The kernel demo (`kernel_demo`) and the wiki's reference kernels in Phase 2 (issue 32).

- bakes through cookiecutter's CLI with a demo that is a Triton kernel file (beside its PyTorch function), a plain
  torch function, and a callable in a package folder with a relative and a sibling import, all from a copy of
  tests/demos/ (a demo imported at bake time would write a marker file there and raise);
- refusals, one line each and nothing written: a missing file, a missing callable, a syntax error, a @triton.jit
  function named as the callable, a demo without pytorch_logic and without a pattern or an op, a demo beside a
  pytorch_logic that does not lower with no pattern named;
- the harness's demo pass (test_kernel.run_demo) on the CPU with the GPU calls stubbed: agree, disagree, raise,
  missing package, and the demo as the reference;
- reference kernels: fixture wikis in both markdown layouts (v0.1.0, v0.2.0): gemm/H200, rmsnorm/H200,
  softmax/MI308X and decode/MI355X list the matching kernels, ranked, and nothing of another vendor, arch or DSL.
"""

from __future__ import annotations

import json
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gpu_wiki_fixtures
import pytest
from helpers import ROOT, WS_TEMPLATE, bake_cli, load_module, read_json
from tools import spec

DEMOS = ROOT / "tests" / "demos"
import reference_kernels  # noqa: E402
import report  # noqa: E402
import wiki_route  # noqa: E402

BAKES = {  # name -> the demo's key=value pairs (paths relative to the copied demos folder)
    "triton_peer": ["pytorch_logic=fused_add_rmsnorm_torch.py:fused_add_rmsnorm",
                    "kernel_demo=fused_add_rmsnorm_triton.py:fused_add_rmsnorm"],
    "torch_ref": ["kernel_demo=torch_rmsnorm.py", "pattern=reduction", "op=rmsnorm"],
    "package_ref": ["kernel_demo=normkit_pkg/normkit:rms_norm", "pattern=reduction", "op=rmsnorm"],
    "marker": ["kernel_demo=import_marker.py:softmax", "pattern=reduction", "op=softmax"],
}

REFUSALS = {  # name -> (pairs, words the one line must hold)
    "missing_file": (["kernel_demo=nowhere.py:f", "pattern=reduction", "op=rmsnorm"], "does not exist"),
    "missing_callable": (["kernel_demo=torch_rmsnorm.py:nope", "pattern=reduction", "op=rmsnorm"],
                         "defines no top-level 'nope'"),
    "syntax_error": (["kernel_demo=broken.py:f", "pattern=reduction", "op=rmsnorm"], "does not parse"),
    "jit_named": (["kernel_demo=fused_add_rmsnorm_triton.py:_fused_add_rmsnorm_kernel", "pattern=reduction",
                   "op=rmsnorm"], "@triton.jit kernel"),
    "no_pattern": (["kernel_demo=torch_rmsnorm.py"], "pattern: auto"),
    "no_op": (["kernel_demo=torch_rmsnorm.py", "pattern=reduction"], "op: name the op your kernel_demo computes"),
    "unlowerable_logic": ([f"pytorch_logic={ROOT}/tests/lowering_corpus/ops.py:cumulative",
                           "kernel_demo=torch_rmsnorm.py"], "cannot be lowered"),
}


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> Path:
    """tests/demos/ copied, plus a file that does not parse: the bakes read from here."""
    where = tmp_path_factory.mktemp("demos") / "demos"
    shutil.copytree(DEMOS, where, ignore=shutil.ignore_patterns("__pycache__"))
    (where / "broken.py").write_text("def f(x:\n    return x\n")
    return where


@pytest.fixture(scope="module")
def baked(demos, tmp_path_factory) -> dict:
    """Every bake and refusal above, through the CLI, both cores at once."""
    out = tmp_path_factory.mktemp("demo_bakes")

    def run(item):
        name, pairs = item
        folder = out / name
        folder.mkdir()
        done = bake_cli(folder, *pairs, f"op_name={name}", "run_baseline=no", cwd=demos)
        return name, (folder, done)

    jobs = [*BAKES.items(), *((n, p) for n, (p, _w) in REFUSALS.items())]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, jobs))


@pytest.mark.parametrize("name", BAKES)
def test_bake_with_demo(baked, demos, name):
    folder, done = baked[name]
    assert done.returncode == 0, done.stdout + done.stderr
    ws = folder / name
    op = read_json(ws / "op.json")
    demo = op["demo"]
    assert (ws / demo["file"]).is_file() and demo["file"].startswith("demo/")
    assert demo["role"] == ("peer" if name == "triton_peer" else "reference")
    plan = (ws / "plans" / "v0_plan.md").read_text()
    assert f"### Your kernel demo: `{demo['function']}`" in plan and demo["call"] in plan
    assert "## Your kernel demo" in (ws / "baseline_report.md").read_text()
    assert "Not run" in (ws / "baseline_report.md").read_text().split("## Your kernel demo")[1]
    assert not (demos / "IMPORTED_AT_BAKE").exists(), "a demo was imported at bake time"
    tracked = set(__import__("subprocess").run(["git", "ls-files"], cwd=ws, capture_output=True, text=True).stdout.split())
    assert demo["file"] in tracked  # in the scaffold commit


def test_triton_demo_phase1(baked):
    folder, _done = baked["triton_peer"]
    ws = folder / "triton_peer"
    op = read_json(ws / "op.json")
    assert op["op"] == "lowered" and op["demo"]["kind"] == "triton" and op["demo"]["mapping"] == "by name"
    plan = (ws / "plans" / "v0_plan.md").read_text()
    assert "`@triton.jit _fused_add_rmsnorm_kernel`" in plan and "constexpr `BLOCK_N`" in plan
    assert "`_fused_add_rmsnorm_kernel[(m,)]`" in plan and "`num_warps=num_warps`" in plan
    assert "`fused_add_rmsnorm(x, residual, weight, eps=1e-06)`" in plan
    assert "**What V0 does differently**" in plan and "`triton`" in plan


def test_package_demo_copied_with_its_imports(baked):
    folder, _done = baked["package_ref"]
    ws = folder / "package_ref"
    demo = read_json(ws / "op.json")["demo"]
    assert demo["module"] == "normkit.ops" and demo["file"] == "demo/normkit/ops.py"
    assert {p.relative_to(ws / "demo").as_posix() for p in (ws / "demo").rglob("*.py")} == {
        "normkit/__init__.py", "normkit/ops.py", "normkit/scale.py", "eps_table.py"}
    assert "is the reference" in read_json(ws / "op.json")["reference"]["description"]


@pytest.mark.parametrize("name", REFUSALS)
def test_demo_refusals(baked, name):
    folder, done = baked[name]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1 and lines and lines[-1].startswith("kbaseline: error: "), done.stderr
    assert REFUSALS[name][1] in lines[-1], lines[-1]
    assert "Traceback" not in done.stderr and not any(folder.iterdir())  # nothing written


# ------------------------------------------------------------------------------------------ the harness's demo pass

class _Cuda:
    @staticmethod
    def synchronize():
        pass


@pytest.fixture()
def harness(tmp_path, monkeypatch):
    """test_kernel.py of a workspace with a demo, loaded on the CPU: the GPU calls are stubbed, inputs are CPU tensors."""
    torch = pytest.importorskip("torch")
    ws = tmp_path / "ws"
    (ws / "demo").mkdir(parents=True)
    (ws / "demo" / "mydemo.py").write_text(
        "import torch\n\n\ndef good(x, weight):\n    return x * weight\n\n\ndef off(x, weight):\n    return x * weight + 1\n\n\n"
        "def boom(x, weight):\n    raise ValueError('only N <= 8')\n\n\ndef needs(x, weight):\n    import flashinferz  # noqa\n")
    shutil.copy(WS_TEMPLATE / "test_kernel.py", ws / "test_kernel.py")
    monkeypatch.setattr(torch.cuda, "synchronize", _Cuda.synchronize)

    def load(function: str, role: str = "peer"):
        op = {"inputs": ["x", "weight"], "tolerance": 1e-2, "cases": [],
              "demo": {"module": "mydemo", "function": function, "copied": ["mydemo.py"], "mapping": "by name",
                       "role": role, "file": "demo/mydemo.py", "call": f"{function}(x=x, weight=weight)"}}
        (ws / "op.json").write_text(json.dumps(op))
        sys.modules.pop("mydemo", None)
        return load_module(ws / "test_kernel.py", f"test_kernel_demo_{function}_{role}")  # the template's file alone

    def make_inputs(case, dtype, device, seed):
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(4, 8, generator=g, dtype=torch.float64), torch.randn(8, generator=g, dtype=torch.float64)]

    def run(function: str, role: str = "peer", kernel=lambda x, weight, out=None: x * weight):
        tk = load(function, role)
        cases = [{"name": "c0", "role": "representative", "dims": [4, 8], "timed": True}]
        records = [{"name": "c0", "role": "representative", "dims": [4, 8], "status": "PASS", "rel_err": 0.0}]
        summary = tk.run_demo(records, cases, kernel, lambda x, weight: x * weight, make_inputs, torch.float64, 1e-2,
                              30, False, lambda r: None)
        return records[0], summary

    return run


def test_harness_demo_statuses(harness):
    rec, summary = harness("good")
    assert rec["demo"]["status"] == "AGREE" and rec["demo"]["rel_err"] == 0.0 and summary["agree"] == 1
    rec, summary = harness("off")
    assert rec["demo"]["status"] == "DISAGREE" and rec["status"] == "PASS"  # not a V0 failure
    rec, _summary = harness("boom")
    assert rec["demo"]["status"] == "ERROR" and "only N <= 8" in rec["demo"]["error"] and rec["status"] == "PASS"
    rec, summary = harness("needs")
    assert rec["demo"]["status"] == "MISSING_PACKAGE" and "flashinferz" in rec["demo"]["error"]
    assert summary["missing_package"] == 1


def test_harness_demo_as_reference(harness):
    rec, _summary = harness("off", role="reference")  # V0 computes the op, the demo (the reference) adds 1
    assert rec["status"] == "FAIL" and rec["checked_against"] == "demo" and rec["expression_rel_err"] == 0.0
    rec, _summary = harness("good", role="reference")
    assert rec["status"] == "PASS" and rec["checked_against"] == "demo"
    rec, _summary = harness("boom", role="reference")
    assert rec["status"] == "PASS" and rec["checked_against"].startswith("reference.py")


# ------------------------------------------------------------------------------------------ reference kernels

CELLS = {  # (gpu, pattern, op) -> (listed first, also listed, never listed)
    ("H200", "gemm", "default"): (None, {"nvidia/hopper/cutedsl/cutlass/dense_gemm.py", "nvidia/hopper/cutedsl/quack/gemm_sm90.py"},
                                  {"nvidia/hopper/gluon/wgmma_gemm.py", "nvidia/blackwell/cutedsl/quack/gemm_sm100.py",
                                   "nvidia/ampere/cutedsl/cutlass/tensorop_gemm.py", "amd/cdna/flydsl/FlyDSL/preshuffle_gemm.py"}),
    ("H200", "reduction", "rmsnorm"): ({"nvidia/hopper/cutedsl/flashinfer/rmsnorm.py", "nvidia/hopper/cutedsl/quack/rmsnorm.py"},
                                       {"nvidia/hopper/cutedsl/flashinfer/fused_add_rmsnorm.py",
                                        "nvidia/hopper/cutedsl/quack/softmax.py"},
                                       {"nvidia/blackwell/cutedsl/quack/rmsnorm_sm100.py", "generic/triton/flashinfer/norm.py",
                                        "nvidia/hopper/cutedsl/quack/gemm_sm90.py", "nvidia/hopper/cutedsl/flashinfer/gdn_decode_mtp.py"}),
    ("MI308X", "reduction", "softmax"): ({"amd/cdna3/flydsl/FlyDSL/softmax_online_mi308x.py", "amd/cdna/flydsl/FlyDSL/softmax_kernel.py"},
                                         {"amd/cdna/flydsl/FlyDSL/rmsnorm_kernel.py"},
                                         {"amd/cdna/triton/aiter/softmax.py", "amd/rdna4/flydsl/FlyDSL/softmax_rdna.py",
                                          "nvidia/hopper/cutedsl/quack/softmax.py"}),
    ("MI355X", "decode_attention", "default"): (None, {"amd/cdna/flydsl/FlyDSL/pa_decode_fp8.py",
                                                       "amd/cdna/flydsl/FlyDSL/flash_attn_func.py"},
                                                {"amd/cdna3/flydsl/FlyDSL/flash_attn_func_mi308x.py", "amd/cdna/triton/aiter/pa_decode.py",
                                                 "amd/cdna4/gluon/pa_decode_gluon.py", "nvidia/hopper/cutedsl/cutlass/fmha.py"}),
}


@pytest.fixture(scope="module")
def kernel_wikis(tmp_path_factory) -> dict:
    out = {}
    for version in ("v0.1.0", "v0.2.0"):
        root = gpu_wiki_fixtures.make_markdown_wiki(tmp_path_factory.mktemp("kw") / version)
        out[version] = gpu_wiki_fixtures.add_reference_kernels(root, version)
    return out


@pytest.mark.parametrize("version", ["v0.1.0", "v0.2.0"])
@pytest.mark.parametrize("cell", CELLS, ids=[f"{p}-{g}" for g, p, _o in CELLS])
def test_reference_kernels(kernel_wikis, version, cell):
    gpu, pattern, op_name = cell
    op = spec.build(spec.context(pattern=pattern, op=op_name, gpu=gpu, gpu_wiki=str(kernel_wikis[version])))
    route = wiki_route.route(op)
    found = reference_kernels.find(op, route)["kernels"]
    listed = [k["rel"] for k in found]
    first, also, never = CELLS[cell]
    assert len(listed) == len(set(listed)) and not set(listed) & never, listed
    assert also <= set(listed), listed
    if first:
        assert set(listed[:len(first)]) == first and all(k["match"] == "op" for k in found[:len(first)]), listed
    assert [k["match"] for k in found] == sorted((k["match"] for k in found), key=lambda m: m != "op")  # op first
    if gpu == "MI355X" and version == "v0.2.0":  # v0.2.0's CDNA4 FlyDSL folder has no README: found on disk, op first
        assert listed[0] == "amd/cdna4/flydsl/FlyDSL/flash_attn_func_gqa_d256.py", listed
        assert "amd/cdna4/flydsl/FlyDSL/chunk_gdn_fwd_h_kernel.py" not in listed
    for k in found:  # each with what it defines, read and never imported (every fixture file raises on import)
        assert reference_kernels.describe(k).startswith("kernels `"), k
    refs = {r["path"] for r in report.wiki_status(op, route)[1]}
    assert {str(k["path"]) for k in found} <= refs  # memory/v0.json `references` records them
    plan = "\n".join(report.reference_kernel_lines(op, route))
    assert all(f"`{rel}`" in plan for rel in listed)


def test_reference_kernel_descriptions(kernel_wikis):
    op = spec.build(spec.context(pattern="reduction", op="rmsnorm", gpu="H200", gpu_wiki=str(kernel_wikis["v0.2.0"])))
    found = {k["rel"]: k for k in reference_kernels.find(op, wiki_route.route(op))["kernels"]}
    assert found["nvidia/hopper/cutedsl/quack/rmsnorm.py"]["text"] == "RMSNorm fwd/bwd, based on ReductionBase"  # `code`
    assert found["nvidia/hopper/cutedsl/flashinfer/rmsnorm.py"]["text"] == "RMSNorm kernel"  # [link](link)
    assert found["nvidia/hopper/cutedsl/flashinfer/rmsnorm.py"]["defines"]["kernels"] == ["RmsnormKernel.kernel"]
