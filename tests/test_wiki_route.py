"""Phase 2: the gpu-wiki route (tools/wiki_route.py) in both layouts, its peaks, and what the records make of them.

The wikis are the two fixtures of tests/gpu_wiki_fixtures.py (markdown tiers and JSON records, shaped like the real
alibaba/atrex-kernel-agent `gpu-wiki/` at v0.1.0-v0.2.0 and at main). Each layout is routed for gemm/H200,
reduction/MI308X and decode_attention/MI355X: every listed path or record exists and none is another vendor's or
architecture's, and each tier holds what the layout's rules say it should.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import compute_utilization
import gpu_wiki_fixtures as fx
import memory_manager
import pytest
import report
import run_baseline
import wiki_route
from helpers import SPECS_PATH
from tools import spec

CASES = [("H200", "gemm"), ("MI308X", "reduction"), ("MI355X", "decode_attention")]


@pytest.fixture(scope="module")
def wikis(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("wikis")
    return {"markdown": fx.make_markdown_wiki(root / "markdown"), "json": fx.make_json_wiki(root / "json")}


def op_spec(wiki: Path, gpu: str = "H200", pattern: str = "gemm", op: str = "default") -> dict:
    """The op.json a bake writes (tools.spec) for these inputs, pointed at this wiki."""
    return spec.build(spec.context(pattern=pattern, op=op, gpu=gpu, gpu_wiki=str(wiki)))


def names(route: dict, tier: str) -> list[str]:
    return [wiki_route.entry_name(d, route["wiki"]) for d in route["tiers"][tier]]


def every(route: dict) -> list[dict]:
    return [d for docs in route["tiers"].values() for d in docs]


# ------------------------------------------------------------------------------------------------------------------
# invariants, both layouts, the three cells
# ------------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["markdown", "json"])
@pytest.mark.parametrize("gpu,pattern", CASES)
def test_every_entry_exists_and_is_this_ops(wikis, layout, gpu, pattern):
    op = op_spec(wikis[layout], gpu, pattern)
    route = wiki_route.route(op)
    assert route["present"] and route["layout"] == layout and set(route["tiers"]) == set(wiki_route.TIERS)
    entries = every(route)
    assert entries and all(d["path"].is_file() for d in entries)
    assert len({d["path"] for d in entries}) == len(entries)  # one doc, one tier
    w = op["wiki"]
    if layout == "markdown":
        for d in entries:
            rel = d["path"].relative_to(route["wiki"]).as_posix()
            assert d["id"] is None and not rel.startswith("reference-kernels")
            assert not wiki_route._named(rel, w["other_vendors"]), rel
            assert not re.search(r"gluon|triton|sm100|sm120|blackwell|rdna4", rel), rel
            others = [a for a in ("gfx942", "gfx950", "sm90", "hopper", "cdna3", "cdna4") if a not in w["arch_names"]]
            assert not wiki_route._named(rel, others), rel
        for m in route["missing"]:
            assert not re.search(r"[*?{}]", m) and not m.startswith(("reference-kernels", "/"))
    else:
        for d in entries:
            if d["id"] in {row[0] for row in fx.HARDWARE}:
                row = fx.hardware_row(d["id"])
                assert row["vendor"] == w["vendor"] and row["arch"] == w["arch"], d["id"]
            else:
                s = fx.kernel_scope(d["id"])
                assert s["vendor"] in (w["vendor"], "generic"), d["id"]
                assert s["arch"] in (w["arch"], "generic") or w["arch"] in s["architectures"], d["id"]
                assert s["dsl"] in ("any", *w["dsl_names"]), d["id"]
            assert d["text"]


# ------------------------------------------------------------------------------------------------------------------
# markdown layout
# ------------------------------------------------------------------------------------------------------------------

def test_brace_lists_expand_like_a_shell():
    assert wiki_route.expand("a/{x,y}/b_{1,2}.md") == ["a/x/b_1.md", "a/x/b_2.md", "a/y/b_1.md", "a/y/b_2.md"]
    assert wiki_route.expand("docs/plain/") == ["docs/plain/"]


def test_markdown_gemm_h200(wikis):
    route = wiki_route.route(op_spec(wikis["markdown"]))
    # P0: the brace list's Hopper doc (the H200 is named by the root README's table row, not the file name)
    assert names(route, "P0") == ["docs/hardware-specs/specs_hopper.md"]
    assert route["tiers"]["P0"][0]["text"] == "NVIDIA H100/H20/H200 (sm_90) — dense peaks per part"
    # P1: the vendor-common folder, without the Blackwell-only hands-on/ (its row says so) or blackwell/
    assert names(route, "P1") == ["docs/kernel-opt/nvidia/common/README.md", "docs/kernel-opt/nvidia/common/occupancy.md"]
    p1 = {d["path"].name: d["text"] for d in route["tiers"]["P1"]}
    assert p1["occupancy.md"] == "Occupancy across generations — registers, blocks and shared memory per SM"
    # P2: sm90 folders inside the P1 and P3 folders, and the articles their `>` lines point to; not Gluon's sm90
    assert names(route, "P2") == [
        "docs/kernel-opt/nvidia/common/sm90/README.md", "docs/kernel-opt/nvidia/common/sm90/hands-on/README.md",
        "docs/kernel-opt/nvidia/common/sm90/hands-on/tma-loads.md",
        "docs/kernel-opt/nvidia/common/sm90/hands-on/wgmma-basics.md", "docs/kernel-opt/nvidia/cutedsl/sm90/README.md",
        "docs/ref-docs/nvidia/common/sm90/README.md", "docs/ref-docs/nvidia/common/sm90/hopper-insights.md",
        "docs/ref-docs/nvidia/cutedsl/sm90/README.md", "docs/ref-docs/nvidia/cutedsl/sm90/cutedsl-sm90.md"]
    p2 = {d["path"].name: d["text"] for d in route["tiers"]["P2"]}
    assert p2["tma-loads.md"] == "TMA loads — descriptors on the host, bulk copies in the kernel"  # the row, not "1"
    # P3: the DSL folder and its full articles (moved to ref-docs), not sm100/ nor sm120/
    assert names(route, "P3") == ["docs/kernel-opt/nvidia/cutedsl/README.md", "docs/ref-docs/nvidia/cutedsl/README.md",
                                  "docs/ref-docs/nvidia/cutedsl/programming-model.md",
                                  "docs/ref-docs/nvidia/cutedsl/pipeline.md"]
    # P4: the CuTe DSL pitfalls (not Triton's), the reference articles about GEMMs / tensor cores
    assert names(route, "P4") == ["docs/pitfalls/README.md", "docs/pitfalls/nvidia/cutedsl/arch-env.md",
                                  "docs/pitfalls/nvidia/cutedsl/README.md", "docs/pitfalls/nvidia/cutedsl/tma-deadlock.md",
                                  "docs/ref-docs/generic/gemm-guide.md", "docs/ref-docs/nvidia/common/mma-notes.md"]
    # absent: only tier-table doc paths of this op (no glob, no code tree, no other vendor's or arch's expansion)
    assert route["missing"] == ["docs/hardware-specs/specs_h100.md", "docs/ref-docs/nvidia/cutedsl/ghost-notes.md"]


def test_markdown_reduction_mi308x(wikis):
    route = wiki_route.route(op_spec(wikis["markdown"], "MI308X", "reduction"))
    assert names(route, "P0") == ["docs/hardware-specs/specs_mi308x.md"]
    assert "docs/kernel-opt/amd/common/hands-on/mfma-selection.md" in names(route, "P1")
    assert "docs/kernel-opt/amd/common/hands-on/rdna4-wmma.md" not in names(route, "P1")  # another architecture's
    assert names(route, "P2") == [
        "docs/kernel-opt/amd/common/gfx942/README.md", "docs/kernel-opt/amd/common/gfx942/cdna3-practices.md",
        "docs/kernel-opt/amd/flydsl/gfx942/README.md", "docs/kernel-opt/amd/flydsl/gfx942/moe-notes.md",
        "docs/ref-docs/amd/flydsl/gfx942/README.md", "docs/ref-docs/amd/flydsl/gfx942/cdna3-attention-gqa.md"]
    assert names(route, "P3") == ["docs/kernel-opt/amd/flydsl/README.md", "docs/ref-docs/amd/flydsl/README.md",
                                  "docs/ref-docs/amd/flydsl/api.md", "docs/ref-docs/amd/flydsl/layout.md"]
    assert names(route, "P4") == ["docs/pitfalls/README.md", "docs/pitfalls/amd/flydsl/lds-limits.md",
                                  "docs/pitfalls/amd/flydsl/README.md", "docs/pitfalls/amd/flydsl/attn-d256.md",
                                  "docs/ref-docs/generic/tree-reduction.md", "docs/ref-docs/amd/common/ck-norm.md"]
    assert route["missing"] == []  # gfx950's folder is absent, but it is not this op's


def test_markdown_decode_attention_mi355x(wikis):
    route = wiki_route.route(op_spec(wikis["markdown"], "MI355X", "decode_attention"))
    assert names(route, "P0") == ["docs/hardware-specs/specs_mi355x.md"]
    assert names(route, "P2") == ["docs/kernel-opt/amd/flydsl/gfx950/README.md", "docs/kernel-opt/amd/flydsl/gfx950/dma-notes.md",
                                  "docs/ref-docs/amd/flydsl/gfx950/README.md",
                                  "docs/ref-docs/amd/flydsl/gfx950/cdna4-attention-d256.md"]
    assert "docs/ref-docs/generic/paged-kv.md" in names(route, "P4")
    assert route["missing"] == ["docs/kernel-opt/amd/common/gfx950/"]


def test_no_spec_doc_for_the_gpu_leaves_p0_empty(wikis, tmp_path):
    wiki = shutil.copytree(wikis["markdown"], tmp_path / "wiki")
    (wiki / "docs/hardware-specs/specs_hopper.md").unlink()
    op = op_spec(wiki)
    route = wiki_route.route(op)
    assert route["tiers"]["P0"] == [] and "docs/hardware-specs/specs_hopper.md" in route["missing"]
    assert "P0 hardware spec (H200)**\n- (nothing in the wiki matches" in "\n".join(report.route_lines(route, op))
    assert wiki_route.wiki_peaks(op, route)["where"] is None


# ------------------------------------------------------------------------------------------------------------------
# JSON layout
# ------------------------------------------------------------------------------------------------------------------

def test_json_gemm_h200(wikis):
    route = wiki_route.route(op_spec(wikis["json"]))
    # no H200 sheet: the architecture-level one is routed, and said not to be H200's
    assert names(route, "P0") == ["nvidia.hopper.spec-sheet.hopper"]
    assert "not taken as H200's" in route["tiers"]["P0"][0]["text"]
    assert names(route, "P1") == ["nvidia.generic.any.tensor-core-generations"]  # matches "tensor core"; not profiling
    # the features and instructions this kernel uses (TMA, mbarrier, wgmma), never Blackwell's nor DSMEM
    assert names(route, "P2") == ["nvidia.hopper.any.memory-model", "nvidia.hopper.arch-feature.mbarrier",
                                  "nvidia.hopper.arch-feature.tma", "nvidia.hopper.instruction.wgmma-mma-async"]
    assert names(route, "P3") == ["nvidia.generic.cutedsl.programming-model"]  # not conv, not Gluon's GEMM
    # by worth; the attention card is another family's, the UMMA card another architecture's; the cluster card
    # lists hopper among its architectures, so the wiki's own rule reaches it
    assert names(route, "P4") == ["nvidia.hopper.any.persistent-gemm", "nvidia.hopper.any.tma-descriptors",
                                  "nvidia.blackwell.cutedsl.cluster-multicast", "nvidia.hopper.cutedsl.tma-store-lanes"]
    assert route["missing"] == []
    assert route["index"] == [wikis["json"].resolve() / "hardware_wiki/records/index.json",
                              wikis["json"].resolve() / "kernel_wiki/records/index.json"]


def test_json_reduction_mi308x(wikis):
    route = wiki_route.route(op_spec(wikis["json"], "MI308X", "reduction"))
    assert names(route, "P0") == ["amd.cdna3.spec-sheet.mi308x"]  # not the MI300X's, same architecture
    assert names(route, "P2") == ["amd.cdna3.instruction.buffer-load-dwordx4"]  # its buffer loads; no MFMA
    assert names(route, "P3") == ["amd.generic.flydsl.api"]
    assert names(route, "P4") == ["amd.mi308x.flydsl.rmsnorm-rows", "generic.generic.any.online-softmax"]
    assert route["missing"] == ["amd.cdna3.instruction.s-barrier"]  # indexed, its file absent
    assert "mi308x" in route["tiers"]["P4"][0]["text"]


def test_json_decode_attention_mi355x(wikis):
    route = wiki_route.route(op_spec(wikis["json"], "MI355X", "decode_attention"))
    assert names(route, "P0") == ["amd.cdna4.spec-sheet.mi355x"]
    assert names(route, "P2") == ["amd.cdna4.any.lds-dma", "amd.cdna4.instruction.v-exp-f32"]
    assert names(route, "P4") == ["amd.cdna4.flydsl.lse-merge-fp16"]  # the CDNA3 anti-strategy is not this arch's
    assert not any(d["id"].startswith("generic.generic.any.memory-bound") for d in every(route))  # symptom cards wait


def test_unreadable_wiki_is_said_not_raised(wikis, tmp_path):
    wiki = shutil.copytree(wikis["json"], tmp_path / "wiki")
    (wiki / "kernel_wiki/records/index.json").write_text("{not json")
    op = op_spec(wiki)
    route = wiki_route.route(op)
    assert route["present"] and "index.json is not valid JSON" in route["error"] and not every(route)
    assert "could not be read" in report.route_lines(route, op)[0]


def test_absent_wiki_is_stated(tmp_path):
    op = op_spec(tmp_path / "no-wiki")
    route = wiki_route.route(op)
    assert not route["present"] and route["layout"] is None
    lines, refs = report.wiki_status(op)
    assert refs == [] and f"`{tmp_path / 'no-wiki'}` is absent on this machine" in lines[0]
    assert "is absent on this machine" in "\n".join(report.route_lines(route, op))
    assert wiki_route.wiki_peaks(op, route) is None
    specs = compute_utilization.load_specs()
    assert wiki_route.cited_specs(specs, op, route) == specs  # today's datasheet citations, unchanged
    assert wiki_route.peak_lines(specs["gpus"]["H200"], "bf16") == []


# ------------------------------------------------------------------------------------------------------------------
# peaks: cited from the wiki, checked against reference/gpu_specs.json
# ------------------------------------------------------------------------------------------------------------------

def cited_spec(op: dict) -> dict:
    return wiki_route.cited_specs(compute_utilization.load_specs(), op)["gpus"][op["gpu"]]


def test_markdown_peaks_agree_and_disagree_for_h200(wikis):
    op = op_spec(wikis["markdown"])
    peaks = wiki_route.wiki_peaks(op)
    # the H200 section only: not the H100's bandwidth, not the H20's peak, not the "in general" table
    assert peaks["where"] == "docs/hardware-specs/specs_hopper.md" and peaks["evidence"] is None
    assert peaks["dense_tflops"] == {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "fp32": 60.0}
    assert (peaks["hbm_bandwidth_gbps"], peaks["compute_units"]) == (4800, 132)
    s = cited_spec(op)
    assert s["dense_tflops"]["bf16"]["value"] == 989.4 and s["dense_tflops"]["bf16"]["wiki"]["agrees"]
    bf16 = wiki_route.peak_lines(s, "bf16")
    assert bf16[0] == ("dense bf16 peak 989.4 TFLOP/s (NVIDIA H200 Tensor Core GPU Datasheet (H200 SXM; tensor figures "
                       "printed with sparsity, halved here)); the gpu-wiki's `docs/hardware-specs/specs_hopper.md` gives "
                       "989.4: agrees")
    fp32 = wiki_route.peak_lines(s, "fp32")[0]  # 67 (datasheet) vs the wiki's 60: both shown, ours kept
    assert "DISAGREEMENT" in fp32 and "67 TFLOP/s" in fp32 and "gives 60" in fp32 and "67 TFLOP/s is used" in fp32
    assert s["dense_tflops"]["fp32"]["value"] == 67.0


def test_markdown_mi308x_uses_the_wikis_figure_labelled(wikis):
    op = op_spec(wikis["markdown"], "MI308X", "reduction")
    specs = wiki_route.cited_specs(compute_utilization.load_specs(), op)
    item = specs["gpus"]["MI308X"]["dense_tflops"]["bf16"]
    assert item["value"] == 206 and item["from_wiki"] and item["source"]["kind"] == "gpu-wiki"
    assert item["source"]["url"].endswith("docs/hardware-specs/specs_mi308x.md")
    line = wiki_route.peak_lines(specs["gpus"]["MI308X"], "bf16")[0]
    assert line.startswith("dense bf16 peak 206 TFLOP/s: the figure of the gpu-wiki's `docs/hardware-specs/specs_mi308x.md`")
    assert "reference/gpu_specs.json has none" in line
    r = compute_utilization.compute("MI308X", "bf16", 206e12, 1e9, 1000.0, specs=specs)  # 206 TFLOP in 1 s
    assert r["tflops_peak_utilization_pct"] == pytest.approx(100.0) and r["ridge_point"] == pytest.approx(206e12 / 5.3e12)
    assert any("figure of the gpu-wiki" in c for c in r["citations"])
    with pytest.raises(compute_utilization.ExprError, match="no cited dense bf16 peak"):  # without the wiki: refused
        compute_utilization.compute("MI308X", "bf16", 1, 1, 1)


def test_markdown_mi355x_disagreement_is_kept_beside_both(wikis):
    s = cited_spec(op_spec(wikis["markdown"], "MI355X", "decode_attention"))
    assert s["dense_tflops"]["bf16"]["value"] == 2516.6  # ours stays in use
    line = wiki_route.peak_lines(s, "bf16")[0]
    assert "DISAGREEMENT" in line and "2516.6 TFLOP/s" in line and "gives 5033.2" in line
    assert "agrees" in wiki_route.peak_lines(s, "bf16")[1]  # 8 TB/s HBM


def test_json_peaks_cite_the_record_and_its_evidence(wikis):
    s = cited_spec(op_spec(wikis["json"], "MI308X", "reduction"))
    assert s["wiki"] == {"where": "amd.cdna3.spec-sheet.mi308x", "evidence": "architecture-analysis", "note": None}
    assert s["dense_tflops"]["bf16"]["value"] == 206 and s["dense_tflops"]["bf16"]["from_wiki"]
    assert "`amd.cdna3.spec-sheet.mi308x` (architecture-analysis)" in wiki_route.peak_lines(s, "bf16")[0]
    mi355 = cited_spec(op_spec(wikis["json"], "MI355X", "decode_attention"))
    assert mi355["dense_tflops"]["bf16"]["wiki"] == {"value": 2500.0, "agrees": True}  # within 1% of 2516.6
    assert "DISAGREEMENT" in wiki_route.peak_lines(mi355, "fp16")[0]  # the wiki's 157.3 against 2516.6
    h200 = cited_spec(op_spec(wikis["json"]))  # only an architecture-level sheet: never the H200's peaks
    assert h200["dense_tflops"]["bf16"]["value"] == 989.4 and "wiki" not in h200["dense_tflops"]["bf16"]
    assert wiki_route.peak_lines(h200, "bf16") == [
        "gpu-wiki: its P0 tier has no spec-sheet record for H200 (routed: nvidia.hopper.spec-sheet.hopper); every peak is "
        "reference/gpu_specs.json's"]


def test_compute_utilization_cli_in_a_workspace_cites_the_wiki(wikis, tools_ws, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(tools_ws, ws)
    (ws / "op.json").write_text(json.dumps(op_spec(wikis["markdown"], "MI308X", "reduction")))
    cmd = [sys.executable, str(ws / "tools" / "compute_utilization.py"), "--gpu", "MI308X", "--dtype", "bf16",
           "--flops-expr", "2*4096**3", "--bytes-expr", "3*4096*4096*2", "--time-ms", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "% of 206 (the gpu-wiki's BF16 matrix, dense" in done.stdout
    assert "the figure of the gpu-wiki's `docs/hardware-specs/specs_mi308x.md`" in done.stdout
    (ws / "op.json").unlink()  # outside such a workspace: refused, as before
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 2


# ------------------------------------------------------------------------------------------------------------------
# the plan, the report and the memory record what was routed
# ------------------------------------------------------------------------------------------------------------------

def test_plan_and_report_carry_the_route_and_the_peaks(wikis, tmp_path):
    op = op_spec(wikis["markdown"], "MI308X", "reduction")
    plan = report.write_plan(tmp_path, op, None).read_text()
    assert "- Dense peaks used: 206 TFLOP/s (the gpu-wiki's BF16 matrix, dense), 5300 GB/s HBM; ridge point 38.9" in plan
    assert "  - dense bf16 peak 206 TFLOP/s: the figure of the gpu-wiki's `docs/hardware-specs/specs_mi308x.md`" in plan
    assert f"`{wikis['markdown'].resolve()}/docs/pitfalls/amd/flydsl/lds-limits.md`: LDS budget per workgroup" in plan
    report_md = report.write_report(tmp_path, op, None, {}, None, "no AMD GPU").read_text()
    assert "- Hardware peaks: dense bf16 peak 206 TFLOP/s: the figure of the gpu-wiki's" in report_md
    assert "- P0: `docs/hardware-specs/specs_mi308x.md`" in report_md
    json_op = op_spec(wikis["json"])
    plan = report.write_plan(tmp_path, json_op, None).read_text()
    assert "- `nvidia.hopper.arch-feature.tma`: arch-feature `tma` (hopper, architecture-analysis)" in plan
    assert "(json layout)" in plan and "every record below exists" in plan


@pytest.mark.parametrize("layout", ["markdown", "json"])
def test_memory_references_and_search_log_name_what_was_routed(wikis, tmp_path, layout):
    ws = tmp_path / "ws"
    (ws / "reference").mkdir(parents=True)
    shutil.copy(SPECS_PATH, ws / "reference" / "gpu_specs.json")
    op = op_spec(wikis[layout], "MI308X", "reduction")
    route = wiki_route.route(op)
    run_baseline.write_memory(ws, op, None, {}, [], "not run here", route, report.cited(op, route))
    record = memory_manager.read(ws, "v0")
    routed = [wiki_route.entry_name(d, route["wiki"]) for d in every(route)]
    refs = record["references"]
    if layout == "json":
        ids = [r["record_id"] for r in refs if "record_id" in r]
        assert ids == routed and all(Path(r["path"]).is_file() for r in refs if "record_id" in r)
    else:
        paths = {r["path"] for r in refs if r["source_type"] == "gpu-wiki"}
        assert paths == {str(route["wiki"] / n) for n in ["README.md", *routed]}  # the index, then every routed doc
    assert len({r["path"] for r in refs}) == len(refs)  # the P0 doc that gives the peak is named once
    log = {e["query"].split(" ")[0]: e["finding"] for e in record["search_log"]}
    for tier in wiki_route.TIERS:
        assert log[tier].startswith(f"{len(route['tiers'][tier])}: ")
        assert all(n in log[tier] for n in names(route, tier))



def test_the_tool_prints_a_workspace_route(wikis, tmp_path):
    (tmp_path / "op.json").write_text(json.dumps(op_spec(tmp_path / "none", "MI308X", "reduction")))
    tool = Path(wiki_route.__file__)
    done = subprocess.run([sys.executable, str(tool), "--op", str(tmp_path / "op.json"), "--wiki", str(wikis["json"]),
                           "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["layout"] == "json" and out["peaks"]["where"] == "amd.cdna3.spec-sheet.mi308x"
    text = subprocess.run([sys.executable, str(tool), "--op", str(tmp_path / "op.json")], capture_output=True, text=True)
    assert text.returncode == 0 and "absent" in text.stdout

