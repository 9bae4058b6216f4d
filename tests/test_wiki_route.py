"""The gpu-wiki route: tier tables of a small wiki built here -> the plan's route and memory references."""

from __future__ import annotations

from pathlib import Path

import pytest
import report
from tools import spec

INDEX = """# GPU wiki

## Learning path

| tier | path | what |
|---|---|---|
| P0 | [hardware specs](docs/hardware-specs/) | specs per GPU |
| P1 | `docs/kernel-opt/nvidia/common/` | NVIDIA-wide practice |
| P1 | `docs/kernel-opt/amd/common/` | AMD-wide practice |
| P2 | `docs/kernel-opt/nvidia/hopper/` | Hopper: wgmma, TMA |
| P2 | `docs/kernel-opt/amd/cdna3/` | CDNA3: MFMA |
| P3 | `docs/kernel-opt/nvidia/cutedsl/` | CuTe DSL |
| P3 | `docs/kernel-opt/amd/flydsl/` | FlyDSL |
| P3 | `docs/kernel-opt/nvidia/triton-old/` | listed, never written |

### P4 pitfalls and reference docs

- [pitfalls](docs/pitfalls/)
- [ref-docs](docs/ref-docs/)
"""

# folder -> (README listing lines, files to create)
TREE = {
    "docs/hardware-specs": (["- `hardware_specs_h200.md`: H200 SXM", "- `hardware_specs_h20.md`: H20",
                             "- `hardware_specs_mi300x.md`: MI300X"], ["hardware_specs_h200.md", "hardware_specs_h20.md",
                                                                         "hardware_specs_mi300x.md"]),
    "docs/kernel-opt/nvidia/common": (["| [coalescing.md](coalescing.md) | coalesced access |",
                                       "| [ghost.md](ghost.md) | listed but never written |"], ["coalescing.md"]),
    "docs/kernel-opt/amd/common": (["- [lds.md](lds.md)"], ["lds.md"]),
    "docs/kernel-opt/nvidia/hopper": (["- `tma.md` TMA and mbarriers"], ["tma.md"]),
    "docs/kernel-opt/amd/cdna3": (["- `mfma.md`"], ["mfma.md"]),
    "docs/kernel-opt/nvidia/cutedsl": (["- `copy_atoms.md`: vectorized copies", "- `compile.md`"],
                                       ["copy_atoms.md", "compile.md"]),
    "docs/kernel-opt/amd/flydsl": (["- `basics.md`"], ["basics.md"]),
    "docs/pitfalls": (["- [nvidia](nvidia/)", "- [amd](amd/)"], []),
    "docs/pitfalls/nvidia": (["- [cutedsl](cutedsl/)"], []),
    "docs/pitfalls/nvidia/cutedsl": (["- `arch_env.md`: set CUTE_DSL_ARCH first"], ["arch_env.md"]),
    "docs/pitfalls/amd": (["- [flydsl](flydsl/)"], []),
    "docs/pitfalls/amd/flydsl": (["- `lld.md`"], ["lld.md"]),
    "docs/ref-docs": (["| `cutlass_elementwise.md` | an elementwise add with 128-bit copies |",
                       "| `flash_decoding.md` | split-K decode attention |",
                       "| `swiglu_notes.md` | SiLU-and-mul (silu_mul) fused gate |"],
                      ["cutlass_elementwise.md", "flash_decoding.md", "swiglu_notes.md"]),
}


def make_wiki(root: Path) -> Path:
    root.mkdir()
    (root / "README.md").write_text(INDEX)
    for folder, (lines, files) in TREE.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "README.md").write_text(f"# {folder}\n\n" + "\n".join(lines) + "\n")
        for name in files:
            (root / folder / name).write_text(f"# {name}\n")
    return root


def op_spec(wiki: Path, pattern="elementwise", op="silu_mul", gpu="H200") -> dict:
    """The op.json a bake writes (tools.spec) for these inputs, pointed at this wiki."""
    return spec.build(spec.context(pattern=pattern, op=op, gpu=gpu, gpu_wiki=str(wiki)))


def rel(route: dict, tier: str) -> list[str]:
    return [str(d["path"].relative_to(route["wiki"])) for d in route["tiers"][tier]]


@pytest.fixture
def wiki(tmp_path):
    return make_wiki(tmp_path / "gpu-wiki")


def test_route_follows_the_tiers_for_hopper_cutedsl(wiki):
    route = report.wiki_route(op_spec(wiki))
    assert route["present"]
    assert rel(route, "P0") == ["docs/hardware-specs/hardware_specs_h200.md"]  # not h20, not mi300x
    assert rel(route, "P1") == ["docs/kernel-opt/nvidia/common/README.md", "docs/kernel-opt/nvidia/common/coalescing.md"]
    assert rel(route, "P2") == ["docs/kernel-opt/nvidia/hopper/README.md", "docs/kernel-opt/nvidia/hopper/tma.md"]
    assert rel(route, "P3") == ["docs/kernel-opt/nvidia/cutedsl/README.md", "docs/kernel-opt/nvidia/cutedsl/copy_atoms.md",
                                "docs/kernel-opt/nvidia/cutedsl/compile.md"]
    assert rel(route, "P4") == ["docs/pitfalls/nvidia/cutedsl/README.md", "docs/pitfalls/nvidia/cutedsl/arch_env.md",
                                "docs/ref-docs/cutlass_elementwise.md", "docs/ref-docs/swiglu_notes.md"]
    every = [d["path"] for docs in route["tiers"].values() for d in docs]
    assert all(p.is_file() for p in every)
    assert not any("ghost" in str(p) or "triton-old" in str(p) for p in every)  # listed but missing: not routed
    assert any(m.endswith("ghost.md") for m in route["missing"])
    assert any("triton-old" in m for m in route["missing"])


def test_route_for_amd_flydsl_and_attention(wiki):
    route = report.wiki_route(op_spec(wiki, gpu="MI300X", pattern="decode_attention", op="gqa"))
    assert rel(route, "P0") == ["docs/hardware-specs/hardware_specs_mi300x.md"]
    assert rel(route, "P2")[-1] == "docs/kernel-opt/amd/cdna3/mfma.md"
    assert rel(route, "P4") == ["docs/pitfalls/amd/flydsl/README.md", "docs/pitfalls/amd/flydsl/lld.md",
                                "docs/ref-docs/flash_decoding.md"]


def test_no_spec_doc_for_the_gpu_leaves_p0_empty(wiki):
    (wiki / "docs/hardware-specs/hardware_specs_h200.md").unlink()
    route = report.wiki_route(op_spec(wiki, gpu="H100"))
    assert route["tiers"]["P0"] == []
    lines = "\n".join(report.route_lines(route, op_spec(wiki, gpu="H100")))
    assert "P0 hardware spec (H100)**\n- (nothing in the index matches" in lines


def test_plan_and_memory_references_carry_the_route(wiki, tmp_path):
    op = op_spec(wiki)
    lines = "\n".join(report.route_lines(report.wiki_route(op), op))
    assert f"`{wiki.resolve()}/docs/pitfalls/nvidia/cutedsl/arch_env.md`: set CUTE_DSL_ARCH first" in lines
    assert "ghost.md" in lines.split("absent on disk")[1]  # named only as missing
    status, refs = report.wiki_status(op)
    assert refs[0]["path"].endswith("gpu-wiki/README.md")
    assert {r["source_type"] for r in refs} == {"gpu-wiki"}
    assert len(refs) == 1 + 1 + 2 + 2 + 3 + 4 and all(Path(r["path"]).is_file() for r in refs)
    assert "routed 12 doc(s)" in status[0]


def test_absent_wiki_is_stated(tmp_path):
    op = op_spec(tmp_path / "no-wiki")
    route = report.wiki_route(op)
    assert not route["present"]
    lines, refs = report.wiki_status(op)
    assert refs == [] and f"`{tmp_path / 'no-wiki'}` is absent on this machine" in lines[0]
    assert "is absent on this machine" in "\n".join(report.route_lines(route, op))
