"""Two small gpu-wikis written here, one per layout of alibaba/atrex-kernel-agent's `gpu-wiki/`, for the route tests.

They mirror the real layouts, not their text:

- **markdown** (the tags v0.1.0 / v0.2.0): a root README whose tier table names folders and brace lists
  (`specs_{h100,...}.md`), a glob and a code tree; the root README's own tables of files (hardware specs,
  pitfalls); a README per folder whose table rows or bullets link files and sub-folders with a description; arch
  folders named `sm90` / `gfx942` / `gfx950` beside other architectures' (`sm100`, `blackwell/`, `rdna4-*`) and
  other DSLs' (`gluon`, `triton`); `>` lines pointing to where the full articles moved; a "related documents"
  bullet that leaves the folder; a row whose link was removed; a P0 doc per GPU family with a section per GPU.
- **json** (its main): `hardware_wiki/records/index.json` and `kernel_wiki/records/index.json` with index entries
  shaped like the real ones (spec-sheet / arch-feature / instruction; technique-card / anti-strategy / doc /
  symptom-card with a retrieval scope), the record files at `records/<type>/<vendor>/<arch>/...`, and one
  entry whose file is missing.

The figures are chosen to exercise the peak checks: the markdown H200 section gives FP32 60 (ours 67: a
disagreement), MI308X gives BF16 206 (ours has none), MI355X gives BF16 5033.2 (ours 2516.6: a disagreement);
the JSON MI355X sheet gives BF16 2500 (within 1% of ours) and FP16 157.3 (a disagreement).
"""

from __future__ import annotations

import json
from pathlib import Path

# ---------------------------------------------------------------------------------------------------------------
# markdown layout
# ---------------------------------------------------------------------------------------------------------------

ROOT_README = """Knowledge base for writing GPU kernels (fixture).

## How to read it

Pick the tier, open that folder's `README.md`, then the files it lists. Kernels live in `reference-kernels/`.

### Tiers

| Priority | Tier | When | Where |
|---|---|---|---|
| **P0** | Hardware | once the GPU is known | `docs/hardware-specs/specs_{h100,mi308x,mi355x,hopper,b200}.md` |
| **P1** | Vendor | once the vendor is known | AMD: `docs/kernel-opt/amd/common/`; NVIDIA: `docs/kernel-opt/nvidia/common/` |
| **P2** | Architecture | once the chip is known | Gluon: `docs/kernel-opt/{amd,nvidia}/gluon/{gfx942,gfx950,sm90}/`; general: `docs/kernel-opt/amd/common/{gfx942,gfx950}/` |
| **P3** | DSL | once the DSL is known | CuTe DSL: `docs/kernel-opt/nvidia/cutedsl/`, `reference-kernels/`; FlyDSL: `docs/kernel-opt/amd/flydsl/`; sources under `/tmp/upstream/` |
| **P4** | Experience | when something breaks | `docs/pitfalls/`, `docs/ref-docs/`, `docs/pitfalls/*/`, `docs/ref-docs/nvidia/cutedsl/ghost-notes.md` |

## docs/hardware-specs/

| File | GPU | Figures |
|---|---|---|
| [`specs_hopper.md`](docs/hardware-specs/specs_hopper.md) | NVIDIA H100/H20/H200 (sm_90) | dense peaks per part |
| [`specs_mi308x.md`](docs/hardware-specs/specs_mi308x.md) | AMD MI308X (CDNA3, gfx942) | 80 CU part |
| [`specs_mi355x.md`](docs/hardware-specs/specs_mi355x.md) | AMD MI355X (CDNA4, gfx950) | 256 CU part |
| [`specs_b200.md`](docs/hardware-specs/specs_b200.md) | NVIDIA B200 (sm_100) | next generation |

## docs/pitfalls/

| Directory | What |
|---|---|
| [`nvidia/cutedsl/`](docs/pitfalls/nvidia/cutedsl/) | traps met with CuTe DSL |
| [`amd/flydsl/`](docs/pitfalls/amd/flydsl/) | traps met with FlyDSL |

## Kernels by kind (paths inside reference-kernels/)

| Kind | Where |
|---|---|
| GEMM | `nvidia/*/cutedsl/gemm/`, `amd/cdna/flydsl/` |
"""

SPEC_DOCS = {
    "specs_hopper.md": """# Hopper parts (fixture)

## NVIDIA H100 SXM (sm_90, Hopper)

| Precision | Peak TFLOPS | Sparse |
|---|---|---|
| **BF16 / FP16 (Tensor Core)** | 989.4 | 1978.9 |
| **FP32 (CUDA Core)** | 67.0 | - |

### Memory

| Parameter | Value |
|---|---|
| Memory Bandwidth | 3.35 TB/s |

## NVIDIA H20 (sm_90, Hopper)

| Precision | Peak TFLOPS | Note |
|---|---|---|
| **BF16 / FP16 (Tensor Core)** | ~148 | cut-down part |

## NVIDIA H200 (sm_90, Hopper)

| Precision | Peak TFLOPS | Note |
|---|---|---|
| **BF16 / FP16 (Tensor Core)** | 989.4 | same die as H100 |
| **FP8 (Tensor Core)** | 1,978.9 | |
| **FP32 (CUDA Core)** | 60.0 | |

### Memory

| Parameter | Value |
|---|---|
| VRAM | 141 GB |
| Memory Bandwidth | 4.8 TB/s |

### Units

| Parameter | Value |
|---|---|
| Streaming Multiprocessors (SMs) | 132 |

## Hopper in general

| Parameter | Value |
|---|---|
| Memory Bandwidth | 9.9 TB/s |
""",
    "specs_mi308x.md": """# MI308X (fixture)

## AMD Instinct MI308X (gfx942 / CDNA3)

| Precision | Peak TFLOPS | Note |
|---|---|---|
| **FP32 (Vector)** | 43.0 | vector units |
| **FP16 / BF16 (Matrix)** | 206 | the part's matrix peak |

### Memory

| Parameter | Value |
|---|---|
| Memory Bandwidth | 5.3 TB/s |

### Units

| Parameter | Value |
|---|---|
| Compute Units | 80 (20 per XCD) |
""",
    "specs_mi355x.md": """# CDNA4 (fixture)

## MI355X (gfx950 / CDNA4)

| Specification | Value |
|---|---|
| **Peak Compute (BF16/FP16)** | 5,033.2 TFLOPS (Matrix), 2,516.6 TFLOPS (VFMA) |
| **Peak Compute (FP32)** | 157.3 TFLOPS |
| **HBM Bandwidth** | 8 TB/s |
| **CU Count** | 256 (8 XCD x 32) |
""",
    "specs_b200.md": "# B200 (fixture)\n\n## NVIDIA B200 (sm_100)\n\n| Precision | Peak TFLOPS |\n|---|---|\n| **BF16** | 2250 |\n",
}


def _table(rows: list[tuple[str, str]], head=("File", "Description")) -> str:
    return "\n".join([f"| {head[0]} | {head[1]} |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)]) + "\n"


# folder -> (README body, files created empty-ish). Rows link files and sub-folders; `>` lines point elsewhere.
TREE = {
    "docs": ("# Docs\n\n" + _table([("[hardware-specs/](hardware-specs/)", "spec tables: [H200](hardware-specs/specs_hopper.md)"),
                                    ("[kernel-opt/](kernel-opt/)", "short cards"), ("[ref-docs/](ref-docs/)", "long articles")],
                                   ("Directory", "Description")), []),
    "docs/kernel-opt/nvidia/common": (
        "# NVIDIA, any DSL\n\n> Long articles live in [ref-docs/nvidia/common/](../../../ref-docs/nvidia/common/)\n\n"
        + _table([("[Occupancy across generations](occupancy.md)", "registers, blocks and shared memory per SM"),
                  ("[sm90/](sm90/)", "Hopper-only notes"),
                  ("[hands-on/](hands-on/)", "Blackwell (SM100) hands-on: tcgen05 and TMEM"),
                  ("[blackwell/](blackwell/)", "cards for the next generation"),
                  ("", "a row whose link was removed")]), ["occupancy.md"]),
    "docs/kernel-opt/nvidia/common/sm90": (
        "# Hopper notes\n\n> The long article moved to [ref-docs/nvidia/common/sm90/](../../../../ref-docs/nvidia/common/sm90/)\n\n"
        + _table([("[hands-on/](hands-on/)", "TMA, WGMMA, mbarrier walk-throughs")]), []),
    "docs/kernel-opt/nvidia/common/sm90/hands-on": (
        "# Hopper hands-on\n\n" + "| # | File | Title | Description |\n|---|---|---|---|\n"
        "| 1 | [tma-loads.md](tma-loads.md) | TMA loads | descriptors on the host, bulk copies in the kernel |\n"
        "| 2 | [wgmma-basics.md](wgmma-basics.md) | WGMMA | 128-thread warpgroup MMA from shared memory |\n"
        "\n## Related\n\n- [Blackwell hands-on](../../hands-on/README.md) — the next generation\n",
        ["tma-loads.md", "wgmma-basics.md"]),
    "docs/kernel-opt/nvidia/common/hands-on": ("# Blackwell hands-on\n\n" + _table([("[tcgen05.md](tcgen05.md)", "TMEM")]),
                                               ["tcgen05.md"]),
    "docs/kernel-opt/nvidia/common/blackwell": ("# Blackwell cards\n\n" + _table([("[clc.md](clc.md)", "CLC")]), ["clc.md"]),
    "docs/kernel-opt/nvidia/cutedsl": (
        "# CuTe DSL\n\n> Full articles moved to [ref-docs/nvidia/cutedsl/](../../../ref-docs/nvidia/cutedsl/)\n\n"
        + _table([("[sm90/](sm90/)", "Hopper CuTe DSL specifics"), ("[sm100/](sm100/)", "Blackwell CuTe DSL specifics")]), []),
    "docs/kernel-opt/nvidia/cutedsl/sm90": ("# CuTe DSL on sm_90\n\n> Moved to [ref-docs/nvidia/cutedsl/sm90/](../../../../ref-docs/nvidia/cutedsl/sm90/)\n", []),
    "docs/kernel-opt/nvidia/cutedsl/sm100": ("# CuTe DSL on sm_100\n\n" + _table([("[umma.md](umma.md)", "UMMA")]), ["umma.md"]),
    "docs/kernel-opt/nvidia/gluon/sm90": ("# Gluon on Hopper\n\n" + _table([("[matmul.md](matmul.md)", "Gluon matmul")]), ["matmul.md"]),
    "docs/kernel-opt/amd/common": (
        "# AMD, any DSL\n\n" + _table([("[LDS banks](lds-banks.md)", "bank conflicts and XOR swizzles"),
                                       ("[hands-on/](hands-on/)", "AMD walk-throughs"), ("[gfx942/](gfx942/)", "MI308X notes")]),
        ["lds-banks.md"]),
    "docs/kernel-opt/amd/common/hands-on": (
        "# AMD hands-on\n\n" + _table([("[mfma-selection.md](mfma-selection.md)", "choosing an MFMA shape"),
                                       ("[rdna4-wmma.md](rdna4-wmma.md)", "WMMA on the consumer parts")]),
        ["mfma-selection.md", "rdna4-wmma.md"]),
    "docs/kernel-opt/amd/common/gfx942": ("# MI308X notes\n\n" + _table([("[cdna3-practices.md](cdna3-practices.md)", "what works on MI308X")]),
                                          ["cdna3-practices.md"]),
    "docs/kernel-opt/amd/flydsl": (
        "# FlyDSL\n\n> Full articles moved to [ref-docs/amd/flydsl/](../../../ref-docs/amd/flydsl/)\n\n"
        + _table([("[gfx942/](gfx942/)", "FlyDSL on MI308X"), ("[gfx950/](gfx950/)", "FlyDSL on MI355X")]), []),
    "docs/kernel-opt/amd/flydsl/gfx942": ("# FlyDSL gfx942\n\n" + _table([("[moe-notes.md](moe-notes.md)", "fused MoE")]), ["moe-notes.md"]),
    "docs/kernel-opt/amd/flydsl/gfx950": ("# FlyDSL gfx950\n\n" + _table([("[dma-notes.md](dma-notes.md)", "DMA to LDS")]), ["dma-notes.md"]),
    "docs/kernel-opt/amd/gluon/gfx942": ("# Gluon on MI308X\n\n" + _table([("[gluon-notes.md](gluon-notes.md)", "Gluon")]), ["gluon-notes.md"]),
    "docs/pitfalls": ("# Pitfalls\n\n### NVIDIA\n\n- [nvidia/cutedsl/arch-env.md](nvidia/cutedsl/arch-env.md) — set the arch first\n"
                      "- [nvidia/triton/](nvidia/triton/README.md) — Triton traps\n\n### AMD\n\n"
                      "- [amd/flydsl/lds-limits.md](amd/flydsl/lds-limits.md) — LDS runs out\n", []),
    "docs/pitfalls/nvidia/cutedsl": ("# CuTe DSL pitfalls\n\n" + "| File | Kernel | Hardware |\n|---|---|---|\n"
                                     "| [arch-env.md](arch-env.md) | any kernel | the arch variable must be set before import |\n"
                                     "| [tma-deadlock.md](tma-deadlock.md) | pipelined GEMM | sm_120 |\n",
                                     ["arch-env.md", "tma-deadlock.md"]),
    "docs/pitfalls/nvidia/triton": ("# Triton pitfalls\n\n" + _table([("[triton-traps.md](triton-traps.md)", "Triton")]), ["triton-traps.md"]),
    "docs/pitfalls/amd/flydsl": ("# FlyDSL pitfalls\n\n" + _table([("[lds-limits.md](lds-limits.md)", "LDS budget per workgroup"),
                                                                   ("[attn-d256.md](attn-d256.md)", "head dim 256 attention")]),
                                 ["lds-limits.md", "attn-d256.md"]),
    "docs/ref-docs": ("# Articles\n\n" + _table([("[generic/](generic/)", "any vendor"), ("[nvidia/common/](nvidia/common/)", "NVIDIA"),
                                                 ("[nvidia/cutedsl/](nvidia/cutedsl/)", "CuTe DSL"), ("[nvidia/gluon/sm90/](nvidia/gluon/sm90/)", "Gluon"),
                                                 ("[amd/common/](amd/common/)", "AMD"), ("[amd/flydsl/](amd/flydsl/)", "FlyDSL")],
                                                ("Directory", "Description")), []),
    "docs/ref-docs/generic": ("# Generic\n\n" + _table([("[gemm-guide.md](gemm-guide.md)", "tiling a GEMM for any GPU"),
                                                        ("[tree-reduction.md](tree-reduction.md)", "reduction trees for memory-bound rows"),
                                                        ("[paged-kv.md](paged-kv.md)", "paged KV cache reads in decoding"),
                                                        ("[roofline.md](roofline.md)", "the roofline model")]),
                              ["gemm-guide.md", "tree-reduction.md", "paged-kv.md", "roofline.md"]),
    "docs/ref-docs/nvidia/common": ("# NVIDIA articles\n\n" + _table([("[mma-notes.md](mma-notes.md)", "tensor core MMA shapes by generation"),
                                                                      ("[ncu.md](ncu.md)", "profiling with ncu"), ("[sm90/](sm90/)", "Hopper articles")]),
                                    ["mma-notes.md", "ncu.md"]),
    "docs/ref-docs/nvidia/common/sm90": ("# Hopper articles\n\n" + _table([("[hopper-insights.md](hopper-insights.md)", "what Hopper changes")]),
                                         ["hopper-insights.md"]),
    "docs/ref-docs/nvidia/cutedsl": ("# CuTe DSL articles\n\n" + _table([("[programming-model.md](programming-model.md)", "kernels, layouts, tensors"),
                                                                         ("[pipeline.md](pipeline.md)", "pipelines and barriers"),
                                                                         ("[sm90/](sm90/)", "Hopper"), ("[sm120/](sm120/)", "consumer Blackwell")]),
                                     ["programming-model.md", "pipeline.md"]),
    "docs/ref-docs/nvidia/cutedsl/sm90": ("# CuTe DSL sm90\n\n" + _table([("[cutedsl-sm90.md](cutedsl-sm90.md)", "warpgroups and TMA in CuTe DSL")]),
                                          ["cutedsl-sm90.md"]),
    "docs/ref-docs/nvidia/cutedsl/sm120": ("# CuTe DSL sm120\n\n" + _table([("[nvfp4.md](nvfp4.md)", "NVFP4")]), ["nvfp4.md"]),
    "docs/ref-docs/nvidia/gluon/sm90": ("# Gluon sm90\n\n" + _table([("[gluon-gemm.md](gluon-gemm.md)", "a Gluon GEMM")]), ["gluon-gemm.md"]),
    "docs/ref-docs/amd/common": ("# AMD articles\n\n" + _table([("[mfma-cores.md](mfma-cores.md)", "matrix cores"),
                                                                ("[ck-norm.md](ck-norm.md)", "normalization and softmax kernels in CK")]),
                                 ["mfma-cores.md", "ck-norm.md"]),
    "docs/ref-docs/amd/flydsl": ("# FlyDSL articles\n\n" + _table([("[api.md](api.md)", "the Python API"), ("[layout.md](layout.md)", "layouts"),
                                                                   ("[gfx942/](gfx942/)", "MI308X reports"), ("[gfx950/](gfx950/)", "MI355X reports")]),
                                 ["api.md", "layout.md"]),
    "docs/ref-docs/amd/flydsl/gfx942": ("# FlyDSL MI308X\n\n" + _table([("[cdna3-attention-gqa.md](cdna3-attention-gqa.md)", "GQA attention")]),
                                        ["cdna3-attention-gqa.md"]),
    "docs/ref-docs/amd/flydsl/gfx950": ("# FlyDSL MI355X\n\n" + _table([("[cdna4-attention-d256.md](cdna4-attention-d256.md)", "decode attention, D 256")]),
                                        ["cdna4-attention-d256.md"]),
}


def make_markdown_wiki(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "README.md").write_text(ROOT_README)
    (root / "docs" / "hardware-specs").mkdir(parents=True)
    for name, text in SPEC_DOCS.items():
        (root / "docs" / "hardware-specs" / name).write_text(text)
    for folder, (readme, files) in TREE.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "README.md").write_text(readme)
        for name in files:
            (root / folder / name).write_text(f"# {name}\n\n(fixture)\n")
    (root / "reference-kernels" / "nvidia").mkdir(parents=True)
    (root / "reference-kernels" / "README.md").write_text("# kernels\n")
    return root


# ---------------------------------------------------------------------------------------------------------------
# JSON layout
# ---------------------------------------------------------------------------------------------------------------

def _peak(dtype, dense, kind="tensor-core"):
    return {"dtype": dtype, "unit": "TFLOPS", "unit_kind": kind, "dense": dense, "provenance": "architecture-analysis"}


# (id, vendor, arch, product, sm_arch, type, feature, mnemonic, facts or None = no file)
HARDWARE = [
    ("nvidia.hopper.spec-sheet.hopper", "nvidia", "hopper", None, "sm_90", "spec-sheet", None, None,
     {"summary": "Hopper, architecture level", "peak_compute": [_peak("bf16", 989.4)], "compute_units": {"sm_count": 132}}),
    ("amd.cdna3.spec-sheet.mi300x", "amd", "cdna3", "mi300x", None, "spec-sheet", None, None,
     {"summary": "MI300X", "peak_compute": [_peak("bf16", 1307.4)], "compute_units": {"sm_count": 304}}),
    ("amd.cdna3.spec-sheet.mi308x", "amd", "cdna3", "mi308x", None, "spec-sheet", None, None,
     {"summary": "MI308X", "peak_compute": [_peak("fp32", 43, "cuda-core"), _peak("bf16", 206), _peak("bf16", 206, "cuda-core")],
      "memory": {"capacity_gb": 128, "bandwidth_tb_s": 5.3}, "compute_units": {"sm_count": 80}}),
    ("amd.cdna4.spec-sheet.mi355x", "amd", "cdna4", "mi355x", None, "spec-sheet", None, None,
     {"summary": "MI355X", "peak_compute": [_peak("bf16", 2500.0), _peak("fp16", 157.3), _peak("fp32", 157.3, "cuda-core")]}),
    ("amd.generic.spec-sheet.generic", "amd", "generic", None, None, "spec-sheet", None, None, {"summary": "AMD in general"}),
    ("nvidia.blackwell.spec-sheet.b200", "nvidia", "blackwell", "b200", "sm_100", "spec-sheet", None, None,
     {"summary": "B200", "peak_compute": [_peak("bf16", 2250)]}),
    ("nvidia.hopper.arch-feature.tma", "nvidia", "hopper", None, "sm_90", "arch-feature", "tma", None, {"summary": "TMA"}),
    ("nvidia.hopper.arch-feature.mbarrier", "nvidia", "hopper", None, "sm_90", "arch-feature", "mbarrier", None,
     {"summary": "mbarrier"}),
    ("nvidia.hopper.arch-feature.distributed-smem", "nvidia", "hopper", None, "sm_90", "arch-feature", "distributed-smem",
     None, {"summary": "DSMEM"}),
    ("nvidia.hopper.instruction.wgmma-mma-async", "nvidia", "hopper", None, "sm_90", "instruction", None, "wgmma.mma_async",
     {"summary": "wgmma"}),
    ("nvidia.hopper.instruction.ld-global", "nvidia", "hopper", None, "sm_90", "instruction", None, "ld.global",
     {"summary": "ld.global"}),
    ("nvidia.blackwell.arch-feature.tma", "nvidia", "blackwell", None, "sm_100", "arch-feature", "tma", None, {"summary": "TMA"}),
    ("nvidia.blackwell.instruction.tcgen05-mma", "nvidia", "blackwell", None, "sm_100", "instruction", None, "tcgen05.mma",
     {"summary": "tcgen05"}),
    ("amd.cdna3.instruction.v-mfma-f32-16x16x16-bf16", "amd", "cdna3", None, None, "instruction", None,
     "v_mfma_f32_16x16x16_bf16", {"summary": "MFMA"}),
    ("amd.cdna3.instruction.buffer-load-dwordx4", "amd", "cdna3", None, None, "instruction", None, "buffer_load_dwordx4",
     {"summary": "buffer loads"}),
    ("amd.cdna3.instruction.s-barrier", "amd", "cdna3", None, None, "instruction", None, "s_barrier", None),  # no file
    ("amd.cdna4.instruction.v-exp-f32", "amd", "cdna4", None, None, "instruction", None, "v_exp_f32", {"summary": "exp"}),
]

# (id, type, vendor, arch, architectures, product, dsl, family, operators, tags, title, worth)
KERNEL = [
    ("nvidia.hopper.any.persistent-gemm", "technique-card", "nvidia", "hopper", ["hopper"], "any", "any", "gemm", ["gemm"],
     ["gemm"], "Persistent tile scheduling for a GEMM", 0.6),
    ("nvidia.hopper.cutedsl.tma-store-lanes", "anti-strategy", "nvidia", "hopper", ["hopper"], "any", "cutedsl", "gemm",
     ["gemm"], ["gemm"], "Storing a TMA tile from every lane", 0.5),
    ("nvidia.hopper.cutedsl.fmha-pipeline", "technique-card", "nvidia", "hopper", ["hopper"], "any", "cutedsl",
     "flash-attention", ["flash-attention"], ["attention"], "Two-stage FMHA pipeline with TMA", 0.7),
    ("nvidia.hopper.any.tma-descriptors", "technique-card", "nvidia", "hopper", ["hopper"], "any", "any", "hands-on", [],
     ["tma"], "Building TMA descriptors on the host", 0.55),
    ("nvidia.hopper.any.memory-model", "doc", "nvidia", "hopper", ["hopper"], "any", "any", None, [], [],
     "Hopper memory model", 0.4),
    ("nvidia.generic.cutedsl.programming-model", "doc", "nvidia", "generic", [], "any", "cutedsl", None, [], [],
     "CuTe DSL programming model", 0.4),
    ("nvidia.generic.cutedsl.conv", "doc", "nvidia", "generic", [], "any", "cutedsl", "conv", ["conv"], ["conv"],
     "CuTe DSL convolutions", 0.4),
    ("nvidia.generic.any.tensor-core-generations", "doc", "nvidia", "generic", [], "any", "any", None, [], [],
     "Tensor core generations", 0.4),
    ("nvidia.generic.any.profiling-basics", "doc", "nvidia", "generic", [], "any", "any", None, [], [],
     "Profiling basics", 0.4),
    ("nvidia.generic.gluon.gluon-gemm", "doc", "nvidia", "generic", [], "any", "gluon", "gemm", ["gemm"], ["gemm"],
     "A GEMM in Gluon", 0.4),
    ("nvidia.blackwell.cutedsl.cluster-multicast", "technique-card", "nvidia", "blackwell", ["blackwell", "hopper"], "any",
     "cutedsl", "gemm", ["gemm"], ["gemm"], "Multicast loads across a cluster", 0.5),
    ("nvidia.blackwell.cutedsl.umma-gemm", "technique-card", "nvidia", "blackwell", ["blackwell"], "any", "cutedsl", "gemm",
     ["gemm"], ["gemm"], "UMMA GEMM mainloop", 0.8),
    ("generic.generic.any.online-softmax", "technique-card", "generic", "generic", [], "any", "any", "softmax",
     ["softmax"], ["softmax"], "Online softmax in one pass", 0.55),
    ("amd.mi308x.flydsl.rmsnorm-rows", "technique-card", "amd", "cdna3", ["mi308x"], "mi308x", "flydsl", "norm", ["norm"],
     ["norm"], "RMSNorm rows held in VGPRs", 0.6),
    ("amd.cdna3.flydsl.attention-lds", "anti-strategy", "amd", "cdna3", ["cdna3"], "any", "flydsl", "flash-attention",
     ["flash-attention"], ["attention"], "Sharing K and V in LDS", 0.5),
    ("amd.cdna4.flydsl.lse-merge-fp16", "anti-strategy", "amd", "cdna4", ["cdna4"], "any", "flydsl", "flash-attention",
     ["flash-attention"], ["attention"], "Merging split-KV partials in fp16", 0.6),
    ("amd.cdna4.any.lds-dma", "doc", "amd", "cdna4", ["cdna4"], "any", "any", None, [], [], "CDNA4 LDS and DMA", 0.4),
    ("amd.generic.flydsl.api", "doc", "amd", "generic", [], "any", "flydsl", None, [], [], "FlyDSL API reference", 0.4),
    ("amd.rdna4.any.wmma", "technique-card", "amd", "rdna4", ["rdna4"], "any", "any", "gemm", ["gemm"], ["gemm"],
     "WMMA tiles", 0.5),
    ("generic.generic.any.memory-bound", "symptom-card", "generic", "generic", [], "any", "any", "memory-bound", [], [],
     "Memory-bound: what to check", 0.5),
]


def make_json_wiki(root: Path) -> Path:
    hw, kw = root / "hardware_wiki" / "records", root / "kernel_wiki" / "records"
    hw.mkdir(parents=True)
    kw.mkdir(parents=True)
    (root / "README.md").write_text("Structured knowledge store (fixture): two record stores with their indexes.\n")
    entries = []
    for rid, vendor, arch, product, sm, kind, feature, mnemonic, facts in HARDWARE:
        slug = rid.rsplit(".", 1)[-1]
        path = f"records/{kind}/{vendor}/{arch}/{slug}.json"
        entries.append({"id": rid, "type": kind, "status": "current", "path": path, "vendor": vendor, "arch": arch,
                        "product": product, "sm_arch": sm, "mnemonic": mnemonic, "feature": feature,
                        "available_sm_arch": [sm] if sm and kind != "spec-sheet" else [], "available_products": [],
                        "evidence_class": "architecture-analysis"})
        if facts is not None:
            file = root / "hardware_wiki" / path
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(json.dumps({
                "schema": "hw-1.0", "id": rid, "type": kind, "status": "current",
                "identity": {"vendor": vendor, "arch": arch, "product": product, "sm_arch": sm, "mnemonic": mnemonic,
                             "feature": feature},
                "facts": facts, "provenance": {"evidence_class": "architecture-analysis",
                                               "sources": [{"title": "fixture", "kind": "third-party-analysis"}]}}))
    (hw / "index.json").write_text(json.dumps({"schema": "hw-1.0", "count": len(entries), "records": entries}))
    entries = []
    for rid, kind, vendor, arch, arches, product, dsl, family, operators, tags, title, worth in KERNEL:
        path = f"records/{kind}/{vendor}/{arch}/{dsl}/{family or 'any'}/{rid}.json"
        scope = {"vendor": vendor, "arch": arch, "architectures": arches, "product": product, "dsl": dsl,
                 "operator_family": family, "operators": operators, "shape_signature": {}}
        entries.append({"id": rid, "type": kind, "level": "cross-operator", "status": "active", "path": path,
                        "title": title, "retrieval": {"scope": scope, "technique_tags": tags, "triggers": []},
                        "worth_score": worth, "tier": "provisional", "search_text": title.lower()})
        file = root / "kernel_wiki" / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps({"id": rid, "type": kind, "title": title, "payload": {"summary": "fixture"}}))
    (kw / "index.json").write_text(json.dumps({"schema": "clean-1.3", "count": len(entries), "records": entries}))
    return root


def kernel_scope(record_id: str) -> dict:
    """The fixture's scope of a kernel_wiki record id (for the tests' arch-boundary checks)."""
    row = next(r for r in KERNEL if r[0] == record_id)
    return {"vendor": row[2], "arch": row[3], "architectures": row[4], "dsl": row[6], "family": row[7]}


def hardware_row(record_id: str) -> dict:
    row = next(r for r in HARDWARE if r[0] == record_id)
    return {"vendor": row[1], "arch": row[2], "product": row[3]}


# ---------------------------------------------------------------------------------------------------------------
# reference-kernels/ (markdown layout): <vendor>/<arch>/<dsl>/<project>/ source trees, as in v0.1.0 and v0.2.0
# ---------------------------------------------------------------------------------------------------------------

def _kernel_source(kind: str, name: str) -> str:
    """A small source file that defines kernels the way the wiki's do (never imported: it raises on import)."""
    cls = "".join(p.title() for p in name.split("_")) + "Kernel"
    deco = {"cutedsl": "@cute.kernel", "flydsl": "@flyc.kernel", "triton": "@triton.jit", "gluon": "@gluon.jit"}[kind]
    return (f'"""{name}: fixture source ({kind})."""\n\nraise RuntimeError("reference kernels are read, never imported")\n\n\n'
            f"class {cls}:\n    {deco}\n    def kernel(self, x):\n        return x\n\n\n"
            f"def {name}(x):\n    return {cls}().kernel(x)\n")


def _readme(title: str, rows: list[tuple[str, str]], code_spans: bool = False) -> str:
    cell = (lambda f: f"`{f}`") if code_spans else (lambda f: f"[{f}]({f})")
    return f"# {title}\n\n| Kernel | Description |\n|---|---|\n" + "".join(f"| {cell(f)} | {d} |\n" for f, d in rows)


# path -> (dsl kind, README rows or None for no README) ; v0.2.0 adds what KERNELS_V020 lists
KERNELS = {
    "nvidia/hopper/cutedsl/flashinfer": ("cutedsl", [("rmsnorm.py", "RMSNorm kernel"),
                                                     ("fused_add_rmsnorm.py", "Fused addition + RMSNorm"),
                                                     ("gdn_decode_mtp.py", "GDN Decode MTP mode")]),
    "nvidia/hopper/cutedsl/quack": ("cutedsl", [("rmsnorm.py", "RMSNorm fwd/bwd, based on ReductionBase"),
                                                ("softmax.py", "Softmax fwd/bwd, online softmax algorithm"),
                                                ("gemm_sm90.py", "SM90 GEMM: WGMMA + TMA + pingpong"),
                                                ("sort/bitonic_sort.py", "Bitonic sort network")]),
    "nvidia/hopper/cutedsl/cutlass": ("cutedsl", [("dense_gemm.py", "Dense GEMM"), ("fmha.py", "Fused Multi-Head Attention")]),
    "nvidia/hopper/gluon": ("gluon", [("wgmma_gemm.py", "Gluon WGMMA GEMM")]),
    "nvidia/blackwell/cutedsl/quack": ("cutedsl", [("gemm_sm100.py", "SM100 GEMM"), ("rmsnorm_sm100.py", "RMSNorm")]),
    "nvidia/ampere/cutedsl/cutlass": ("cutedsl", [("tensorop_gemm.py", "Tensor-op GEMM")]),
    "amd/cdna/flydsl/FlyDSL": ("flydsl", [("softmax_kernel.py", "Softmax kernel"),
                                          ("rmsnorm_kernel.py", "RMS Normalization kernel"),
                                          ("preshuffle_gemm.py", "Preshuffle GEMM kernel"),
                                          ("pa_decode_fp8.py", "Paged Attention FP8 decode kernel"),
                                          ("flash_attn_func.py", "Flash Attention kernel")]),
    "amd/cdna/triton/aiter": ("triton", [("softmax.py", "aiter softmax"), ("pa_decode.py", "aiter paged decode")]),
    "amd/cdna3/flydsl/FlyDSL": ("flydsl", [("flash_attn_func_mi308x.py", "MI308X (gfx942) — bf16 GQA flash attention"),
                                           ("softmax_online_mi308x.py", "MI308X (gfx942) — online softmax rows")]),
    "amd/rdna4/flydsl/FlyDSL": ("flydsl", [("softmax_rdna.py", "softmax on RDNA4"), ("wmma_gemm.py", "WMMA GEMM")]),
    "generic/triton/flashinfer": ("triton", [("norm.py", "RMSNorm and LayerNorm")]),
}
KERNELS_V020 = {  # v0.2.0: the CDNA4 FlyDSL folder, without a README (its files are found on disk)
    "amd/cdna4/flydsl/FlyDSL": ("flydsl", None, ["flash_attn_func_gqa_d256.py", "chunk_gdn_fwd_h_kernel.py"]),
    "amd/cdna4/gluon": ("gluon", [("pa_decode_gluon.py", "Gluon paged attention decode")]),
}


def add_reference_kernels(root: Path, version: str = "v0.1.0") -> Path:
    """reference-kernels/ under a markdown wiki as `version` lays it out: v0.1.0's READMEs link their files; v0.2.0's
    quack README names them in `code` spans, and v0.2.0 adds amd/cdna4/ (a FlyDSL folder with no README)."""
    base = root / "reference-kernels"
    trees = {**KERNELS, **(KERNELS_V020 if version == "v0.2.0" else {})}
    for folder, (kind, rows, *bare) in trees.items():
        where = base / folder
        names = [f for f, _d in rows] if rows else bare[0]
        for name in names:
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            (where / name).write_text(_kernel_source(kind, Path(name).stem))
        if rows:
            (where / "README.md").write_text(_readme(folder, rows, code_spans=version == "v0.2.0" and "quack" in folder))
    (base / "README.md").write_text("# Reference Kernels\n\norganized by hardware architecture -> DSL language -> "
                                    "source repository\n")
    return root
