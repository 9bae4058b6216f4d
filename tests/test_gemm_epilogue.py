"""The CuTe DSL GEMM cell's epilogues and fp8, compiled for sm_90a on the CPU (tests/lowered_examples/CONTRACT_GEMM.md).

A lowered GEMM workspace is baked by tools/scaffold.py from a corpus function (tests/lowering_corpus/ops.py), traced
as a user's pytorch_logic is (tools/lower; in this process, the corpus being ours). The four epilogues of issue 15 (bias + gelu_tanh, bias + squared relu, a residual add, a per-column scale and a bf16
cast) compile on the large-tile path with no spills and with their extras read as 32-bit pairs; the residual, the
"row" kind, also compiles on every other path (st.global for odd N, skinny tiles, swapped skinny tiles with and
without the split-K fix-up, the GEMV).
fp8: wgmma with e4m3 operands on the tensor-core paths, 16 e4m3 per 128-bit load on the GEMV, and fp8 composed
with a lowered compute of the third kind ("per_row", here as [M, 1]). Each distinct code path is compiled once.

That the built-in matmul's PTX is unchanged by all this is checked byte for byte by benchmarks/kernel_hashes.py
(run before and after a change); here, structurally: its TMA paths read nothing from global memory but by TMA, and
its kernels take exactly the parameters they did.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess

import pytest
from helpers import ROOT, load_package
from tools import lower, scaffold, spec

CORPUS = ROOT / "tests" / "lowering_corpus" / "ops.py"
FUNCTIONS = {  # this file's name for an epilogue: the corpus function a workspace is baked from
    "bias_gelu_tanh": "bias_gelu_tanh", "bias_squared_relu": "bias_relu_squared", "residual_add": "residual_add",
    "column_scale_cast": "col_scale_bf16", "row_scale": "row_scale_keepdim",  # per_row as [M, 1]
}


@pytest.fixture(scope="module")
def gemm_ws(tmp_path_factory):
    """(dtype, epilogue name or None) -> a GEMM workspace's kernel module, baked once per module: the built-in matmul,
    or the corpus function traced (in this process: the corpus is ours) into a lowered GEMM."""
    made = {}

    def get(dtype: str, name: str | None):
        if (dtype, name) not in made:
            dest = tmp_path_factory.mktemp("gemm") / f"gemm_{dtype}_{name or 'matmul'}"
            if name:
                lower.lower_here(str(CORPUS), FUNCTIONS[name])
                ctx = spec.context(pytorch_logic=f"{CORPUS}:{FUNCTIONS[name]}", pattern="gemm", gpu="H200",
                                   dtype=dtype, op_name=dest.name, run_baseline="no")
            else:
                ctx = spec.context(pattern="gemm", op="matmul", gpu="H200", dtype=dtype, op_name=dest.name,
                                   run_baseline="no")
            scaffold.workspace(dest, ctx)
            made[(dtype, name)] = load_package(dest, f"epilogue_{dest.name}").kernel
        return made[(dtype, name)]

    return get


def _case(shape: str) -> dict:
    m, n, k = (int(x) for x in shape.split("x"))
    return {"vars": {"M": m, "N": n, "K": k}}


@functools.cache
def _ptxas(ptx: str) -> str:
    """ptxas -v's report of the PTX (empty without ptxas)."""
    if not shutil.which("ptxas"):
        return ""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/k.ptx"
        with open(path, "w") as f:
            f.write(ptx)
        done = subprocess.run(["ptxas", "-arch=sm_90a", "-v", path, "-o", "/dev/null"], capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def _compiled(kernel, shape: str, tmp_path, dtype: str) -> str:
    ptx = kernel.compile_only(_case(shape), tmp_path, dtype=dtype)
    assert ".target sm_90a" in ptx and ".local" not in ptx, "local memory: spills or a stack array"
    report = _ptxas(ptx)
    if report:
        assert re.search(r"0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", report), report
    return ptx


@pytest.mark.parametrize("name", ["bias_gelu_tanh", "bias_squared_relu", "residual_add", "column_scale_cast"])
def test_issue_epilogues_on_large_tiles(gemm_ws, tmp_path, name):
    """8192^3: bf16 WGMMA, stmatrix + TMA store, and each thread's extras read as column pairs: 8 subtiles x 8
    32-bit loads per tile for a residual, half that for a per-column vector (the fragment holds each column at two
    rows, and a broadcast address is read once), all of them issued inside the main loop (a residual's between
    its K-steps), none in the epilogue. A 16-bit workspace's GELU-tanh is one tanh.approx.f32 a value."""
    kernel = gemm_ws("bf16", name)
    ptx = _compiled(kernel, "8192x8192x8192", tmp_path, "bf16")
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.bf16\.bf16", ptx)
    assert "stmatrix" in ptx and "cp.async.bulk.tensor" in ptx
    loads = 64 if name == "residual_add" else 32
    assert ptx.count("ld.global.b32") == loads and "ld.global.b16" not in ptx
    first = ptx.index("wgmma.commit_group")
    end = ptx.index("wgmma.wait_group.sync.aligned \t0")  # the main loop's last wait
    assert ptx[first:end].count("ld.global.b32") == loads, "the whole tile's extras are loaded under the main loop"
    between = ptx[first:end].split("wgmma.wait_group.sync.aligned \t1")  # what lies between the K loop's waits
    assert max(part.count("ld.global.b32") for part in between) == (8 if name == "residual_add" else 32)
    if name == "bias_gelu_tanh":
        assert "tanh.approx.f32" in ptx
    if name == "bias_squared_relu":
        assert "max.NaN.f32" in ptx
    plan = kernel.describe(_case("8192x8192x8192"))
    assert plan["path"].startswith("large tiles") and FUNCTIONS[name] in plan["epilogue"]


@pytest.mark.parametrize("shape,path,marker", [
    ("4095x4097x4096", "large tiles", "st.global.b16"),       # N*2 % 16 != 0: predicated st.global
    ("128x8192x8192", "skinny 64-row tiles", "stmatrix"),
    ("16x8192x8192", "swapped skinny tiles", "st.global.b16"),        # C^T = B . A^T: the residual read transposed
    ("16x4096x4096", "swapped skinny tiles", "atom.global.acq_rel.add.u32"),  # ... split over K: the fix-up
    ("3x4097x4104", "GEMV", "shfl.sync.bfly"),
])
def test_residual_epilogue_on_every_other_path(gemm_ws, tmp_path, shape, path, marker):
    """The "row" kind on the other paths: compiled, no spills, the residual read (masked) on each."""
    kernel = gemm_ws("bf16", "residual_add")
    ptx = _compiled(kernel, shape, tmp_path, "bf16")
    assert marker in ptx
    assert re.search(r"ld\.global\.(b16|b32)", ptx), "the residual is read"
    assert kernel.describe(_case(shape))["path"].startswith(path)


@pytest.mark.parametrize("shape,mma", [("8192x8192x8192", "m64n256k32"), ("16x8192x8192", "m64n16k32"),
                                       ("1x4096x4096", None)])
def test_fp8_paths(gemm_ws, tmp_path, shape, mma):
    """fp8 e4m3: the large and the swapped skinny tiles issue wgmma k32 with e4m3 operands (BK = 128: 4 per K-step); the GEMV
    converts 16 e4m3 per 128-bit load (cvt.rn.f16x2.e4m3x2) on the CUDA cores. The scales are 2 fp32 loads."""
    kernel = gemm_ws("fp8", None)
    ptx = _compiled(kernel, shape, tmp_path, "fp8")
    if mma:
        assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.{mma}\.f32\.e4m3\.e4m3", ptx)
        assert kernel.describe(_case(shape))["tile_mnk"][2] == 128
    else:
        assert "ld.global.v4" in ptx and "cvt.rn.f16x2.e4m3x2" in ptx and "wgmma" not in ptx
    assert "e4m3" in kernel.describe(_case(shape))["fp8"]


def test_fp8_composes_with_a_per_row_epilogue(gemm_ws, tmp_path):
    """fp8 scales, then a lowered compute reading a "per_row" [M] vector (its pair loads merge into one)."""
    kernel = gemm_ws("fp8", "row_scale")
    ptx = _compiled(kernel, "8192x8192x8192", tmp_path, "fp8")
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n256k32\.f32\.e4m3\.e4m3", ptx)
    assert "ld.global" in ptx and "stmatrix" in ptx
    assert "scale_a * scale_b" in kernel.describe(_case("8192x8192x8192"))["epilogue"]


def test_builtin_matmul_has_no_epilogue(gemm_ws, tmp_path):
    """The built-in bf16 matmul's large-tile kernel: no global loads but TMA's, and its 11 kernel parameters."""
    ptx = _compiled(gemm_ws("bf16", None), "8192x8192x8192", tmp_path, "bf16")
    assert "ld.global" not in ptx and "stmatrix" in ptx
    entry = ptx[ptx.index(".entry"):ptx.index(")", ptx.index(".entry"))]
    assert entry.count(".param") == 11


def test_run_checks_epilogue_inputs_in_host_words(gemm_ws):
    """run() checks a lowered op's extras and fp8's scales in host.py before compiling: CPU tensors are refused."""
    torch = pytest.importorskip("torch")
    kernel = gemm_ws("bf16", "residual_add")
    a, b = torch.randn(8, 64, dtype=torch.bfloat16), torch.randn(16, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="GPU"):
        kernel.run(a, b, torch.randn(8, 16, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="takes 3 input"):
        kernel.run(a, b)
