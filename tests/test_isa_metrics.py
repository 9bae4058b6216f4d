"""ISA metrics: parsers on small PTX / SASS / AMDGPU samples, targets per pattern, and a real compile-only workspace."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import isa_metrics
import jsonschema
import pytest
from compute_utilization import load_specs
from helpers import ROOT, SPECS_PATH, read_json
from tools import spec

SPECS = load_specs(SPECS_PATH)

PTX = """
.visible .entry k(
.reqntid 128, 1, 1
{
    .local .align 8 .b8 __local_depot0[32];
    .shared .align 16 .b8 smem[4096];
    .extern .shared .align 1024 .b8 __dynamic_shmem__0[];
    .reg .pred %p<4>;
    .reg .b32 %r<100>;
    .reg .b64 %rd<10>;
    // ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1];   a comment is not an instruction
    ld.global.nc.v4.f32 {%r1, %r2, %r3, %r4}, [%rd1];
    @%p1 ld.global.L1::no_allocate.v2.b64 {%rd2, %rd3}, [%rd1+16];
    ld.global.v2.f32 {%r5, %r6}, [%rd1+32];
    ld.global.b32 %r7, [%rd1+40];
    cp.async.cg.shared.global [%r8], [%rd4], 16;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r9], [%rd5, {%r1, %r2}], [%r10];
    wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%r11}, %rd6, %rd7, p, 1, 1, 0, 1;
    wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%r11}, %rd6, %rd7, p, 1, 1, 0, 1;
    st.local.b32 [%rd8], %r12;
    ld.local.b32 %r13, [%rd8];
    st.global.b16 [%rd9], %rs1;
    st.global.v4.b32 [%rd9], {%r1, %r2, %r3, %r4};
}
"""

SASS = """
        /*0090*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*00a0*/                   LDG.E.U16 R8, desc[UR4][R2.64+0x10] ;
        /*00b0*/                   LDGSTS.E.BYPASS.LTC128B.128 [R0], desc[UR6][R2.64] ;
        /*00c0*/                   LDGDEPBAR ;
        /*00d0*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR8], R24 ;
        /*00e0*/                   UTMALDG.2D [UR8], [UR10] ;
        /*00f0*/                   STL.64 [R1], R4 ;
        /*0100*/                   STG.E.64 desc[UR4][R6.64], R4 ;
"""
RES_USAGE = "Function k:\n REG:168 STACK:0 SHARED:0 LOCAL:8 CONSTANT[0]:552 TEXTURE:0 SURFACE:0 SAMPLER:0"

AMDGPU = """
    global_load_dwordx4 v[0:3], v[4:5], off
    buffer_load_dwordx4 v[6:9], v10, s[0:3], 0 offen
    buffer_load_dwordx2 v[12:13], v10, s[0:3], 0 offen
    global_load_short_d16_hi v14, v[4:5], off offset:2
    v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]
    v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]   ; global_load_dwordx4 in a comment
    scratch_store_dword off, v1, s33
    global_store_dword v[4:5], v0, off
amdhsa.kernels:
  - .agpr_count:     16
    .group_segment_fixed_size: 32768
    .private_segment_fixed_size: 16
    .sgpr_count:     34
    .sgpr_spill_count: 0
    .vgpr_count:     128
    .vgpr_spill_count: 3
"""

PTXAS_V = """ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
    16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem
"""


def op_spec(pattern="elementwise", op="silu_mul", gpu="H200", dtype="bf16", case_vars=None):
    """The op.json a bake writes for these inputs (tools.spec), with one timed case of `case_vars` when given."""
    op_json = spec.build(spec.context(pattern=pattern, op=op, gpu=gpu, dtype=dtype))
    op_json["cases"] = [{"name": "c", "vars": case_vars or {"numel": 1 << 20, "elem_bytes": 2}, "timed": True}]
    return op_json


GEMM = {"pattern": "gemm", "op": "matmul", "case_vars": {"M": 8192, "N": 8192, "K": 8192, "elem_bytes": 2}}


def test_ptx_counts_widths_tensor_cores_local_and_shared():
    m = isa_metrics.ptx_metrics(PTX)
    assert m["global_loads"] == {128: 3, 64: 1, 32: 1}  # v4.f32, v2.b64, cp.async 16 B; v2.f32; b32
    assert m["global_stores"] == {16: 1, 128: 1}
    assert m["tensor_core"] == {"wgmma.mma_async": 2} and m["tma"] == 1
    assert (m["local_bytes"], m["local_instructions"]) == (32, 2)
    assert (m["shared_bytes"], m["dynamic_shared"]) == (4096, True)
    assert m["registers"] is None and m["virtual_registers"] == 114 and "virtual" in m["notes"][0]


def test_sass_and_res_usage():
    m = isa_metrics.sass_metrics(SASS, RES_USAGE)
    assert m["global_loads"] == {128: 2, 16: 1}  # LDGDEPBAR is not a load
    assert m["global_stores"] == {64: 1}
    assert m["tensor_core"] == {"HGMMA": 1} and m["tma"] == 1 and m["local_instructions"] == 1
    assert (m["registers"], m["local_bytes"], m["local_known"]) == (168, 8, True)


def test_amdgpu_counts_and_metadata():
    m = isa_metrics.amdgpu_metrics(AMDGPU)
    assert m["global_loads"] == {128: 2, 64: 1, 16: 1} and m["global_stores"] == {32: 1}
    assert m["tensor_core"] == {"v_mfma": 2}
    assert (m["registers"], m["agpr_count"], m["spill_count"], m["local_bytes"], m["shared_bytes"]) == (128, 16, 3, 16, 32768)
    assert m["local_instructions"] == 1


def test_ptxas_usage():
    assert isa_metrics.ptxas_usage(PTXAS_V) == {"registers": 255, "spill_bytes": 16, "stack_bytes": 16, "shared_bytes": 1024}
    assert isa_metrics.ptxas_usage("")["registers"] is None


def test_targets_follow_the_roofline_position():
    keys = [t["key"] for t in isa_metrics.targets(op_spec(), SPECS)]
    assert keys == ["vec_loads", "vec_stores", "spills", "copy_pct"]
    copy = isa_metrics.targets(op_spec(), SPECS)[-1]
    assert copy["target"] == ">= 90%" and "below the ridge point 206 FLOP/B" in copy["why"]
    assert "4273 GB/s" in copy["source"] and all({"metric", "target", "why", "source"} <= set(t) for t in
                                                 isa_metrics.targets(op_spec(), SPECS))

    gemm = isa_metrics.targets(op_spec(**GEMM), SPECS)
    assert [t["key"] for t in gemm] == ["tensor_core", "tma", "spills", "peak_pct"]
    assert "wgmma.mma_async" in gemm[0]["metric"]
    assert gemm[-1]["target"] == f">= {100 * 678 / 989.4:.0f}%"  # cuBLAS measured / cited dense peak

    amd = isa_metrics.targets(op_spec(**GEMM, gpu="MI300X"), SPECS)
    assert "v_mfma" in amd[0]["metric"] and [t["key"] for t in amd] == ["tensor_core", "spills", "peak_pct"]
    assert amd[-1]["target"] == "as close as the vendor library"  # no measured library rate: no invented %

    attn = isa_metrics.targets(op_spec(pattern="decode_attention", op="gqa", case_vars={
        "B": 32, "Hq": 32, "Hkv": 8, "S": 4096, "D": 128, "total_len": 32 * 4096, "elem_bytes": 2}), SPECS)
    assert [t["key"] for t in attn] == ["vec_loads", "spills", "copy_pct"] and attn[-1]["target"] == ">= 80%"
    assert "vec_stores" not in [t["key"] for t in isa_metrics.targets(op_spec(pattern="reduction", op="sum", case_vars={"M": 4096, "N": 4096, "elem_bytes": 2}), SPECS)]
    assert "vec_stores" in [t["key"] for t in isa_metrics.targets(op_spec(pattern="reduction", op="softmax", case_vars={"M": 4096, "N": 4096, "elem_bytes": 2}), SPECS)]


def test_progress_judges_what_it_can_and_fails_what_misses():
    op = op_spec()
    narrow = isa_metrics.ptx_metrics("ld.global.b16 %rs1, [%rd1];\n st.global.b16 [%rd2], %rs1;\n")
    rows = {r["metric"].split(":")[0]: r for r in isa_metrics.progress(op, SPECS, narrow, None, "no NVIDIA GPU")}
    assert rows["128-bit global loads"]["met"] is False and rows["128-bit global loads"]["current"].startswith("0 of 1")
    assert rows["register spills / local (scratch) memory"]["met"] is None  # PTX alone cannot show spills
    perf = rows["bandwidth, % of the measured device-copy bandwidth"]
    assert (perf["current"], perf["met"]) == ("not run (no NVIDIA GPU)", None)

    gemm_rows = isa_metrics.progress(op_spec(**GEMM), SPECS, isa_metrics.ptx_metrics(PTX), None, "no NVIDIA GPU")
    assert [r["met"] for r in gemm_rows] == [True, True, False, None]  # .local 32 B: the spill target fails

    low = isa_metrics.progress(op, SPECS, narrow, {"copy_bandwidth_utilization_pct": 85.04}, None)[-1]
    high = isa_metrics.progress(op, SPECS, narrow, {"copy_bandwidth_utilization_pct": 97.0}, None)[-1]
    assert (low["current"], low["met"], high["met"]) == (85.0, False, True)
    schema = json.loads((ROOT / "reference" / "v_iteration.schema.json").read_text())["properties"]["isa_metric_progress"]
    jsonschema.validate(gemm_rows, schema)


@pytest.fixture(scope="module")
def compiled(matrix, tmp_path_factory):
    """The matrix's elementwise workspace, copied, compiled for sm_90a on the CPU, then recorded as not run."""
    ws = tmp_path_factory.mktemp("isa") / "ws"
    shutil.copytree(matrix[("H200", "silu_mul")].project_path, ws)
    done = subprocess.run([sys.executable, "test_kernel.py", "--compile-only"], cwd=ws, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([sys.executable, "tools/run_baseline.py", "--not-run", "no NVIDIA GPU"], cwd=ws,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    return ws


def test_real_compile_only_ptx(compiled):
    op = read_json(compiled / "op.json")
    m = isa_metrics.read_workspace(compiled, op)
    assert m["isa"] == "PTX" and m["file"].startswith("build/kernel_silu_mul_bf16")
    assert m["global_loads"][128] == 4 and m["global_stores"][128] == 2  # 2 inputs x 2 vectors; 2 output vectors
    assert m["tensor_core"] == {} and m["local_bytes"] == 0 and m["shared_bytes"] == 0
    if shutil.which("ptxas"):
        assert m["registers"] > 0 and m["spill_bytes"] == 0
    else:
        assert m["registers"] is None


def test_workspace_report_memory_and_cli(compiled):
    report = (compiled / "baseline_report.md").read_text()
    assert "## ISA metrics and targets" in report and "| 128-bit global loads: ld.global.v4 / LDG.E.128 | present | 4 of" in report
    assert "| >= 90% | not run (compiled for sm_90a; not run on hardware: no NVIDIA GPU) | - |" in report
    assert "PASS" not in report.replace("NOT_RUN", "")
    memory = read_json(compiled / "memory" / "v0.json")
    rows = memory["isa_metric_progress"]
    assert [r["met"] for r in rows][:2] == [True, True]
    assert rows[-1]["current"] == "not run (compiled for sm_90a; not run on hardware: no NVIDIA GPU)"
    out = subprocess.run([sys.executable, "tools/isa_metrics.py", "--json"], cwd=compiled, capture_output=True,
                         text=True, timeout=120)
    data = json.loads(out.stdout)
    assert data["metrics"]["global_loads"]["128"] == 4 and len(data["progress"]) == len(rows)
