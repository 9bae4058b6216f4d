"""The kbaseline catalogue: GPUs, the architectures a gpu-wiki names, dtypes, and the one-line input error.

Template-side. Patterns and DSLs are not listed here: tools.registry finds them (tools/patterns/, tools/dsls/).
A GPU names its architecture; the DSL that serves that architecture gives its compile target. Its cited figures
(peaks, HBM bandwidth and capacity) live in reference/gpu_specs.json, read here for the memory a shape may need.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

SPECS = Path(__file__).resolve().parent.parent / "reference" / "gpu_specs.json"  # cited peaks and capacity

GPUS = {
    # name: vendor, architecture, SMs / CUs (frozen into op.json as compute_units: kernels size their grids from it
    # where no device can be asked, as in compile_only and describe). Peaks, bandwidth and memory:
    # reference/gpu_specs.json.
    "H200": {"vendor": "nvidia", "arch": "hopper", "compute_units": 132},
    "H100": {"vendor": "nvidia", "arch": "hopper", "compute_units": 132},
    "H20": {"vendor": "nvidia", "arch": "hopper", "compute_units": 78},
    "MI300X": {"vendor": "amd", "arch": "cdna3", "compute_units": 304},
    "MI308X": {"vendor": "amd", "arch": "cdna3", "compute_units": 80},
    "MI355X": {"vendor": "amd", "arch": "cdna4", "compute_units": 256},
}

ARCHS = {
    # architecture: its vendor, and the names a gpu-wiki gives it in folder, file and record names (lower case; the
    # Phase-2 route reads `sm_90` as `sm90`). The GPUs of GPUS add their own names to their architecture's. kbaseline
    # generates for the first three; the others are named so that the route can tell another architecture's material
    # from ours, because the wiki's architecture is a hard boundary (its own words: "do not treat another
    # architecture's records as applying here").
    "hopper": {"vendor": "nvidia", "wiki_names": ["hopper", "sm90", "sm90a"]},
    "cdna3": {"vendor": "amd", "wiki_names": ["cdna3", "gfx942"]},
    "cdna4": {"vendor": "amd", "wiki_names": ["cdna4", "gfx950"]},
    "ampere": {"vendor": "nvidia", "wiki_names": ["ampere", "sm80", "sm86", "a100", "a800"]},
    "ada": {"vendor": "nvidia", "wiki_names": ["sm89", "l40s", "l20"]},
    "blackwell": {"vendor": "nvidia", "wiki_names": ["blackwell", "sm100", "sm100a", "b100", "b200", "gb200"]},
    "blackwell-ultra": {"vendor": "nvidia", "wiki_names": ["blackwell-ultra", "sm103", "sm103a", "b300", "gb300"]},
    "blackwell-geforce": {"vendor": "nvidia", "wiki_names": ["blackwell-geforce", "sm120", "sm120a", "rtx"]},
    "rdna3": {"vendor": "amd", "wiki_names": ["rdna3", "gfx1100"]},
    "rdna4": {"vendor": "amd", "wiki_names": ["rdna4", "gfx1200", "gfx1201", "gfx1250"]},
}

DTYPES = {
    # name: torch dtype name, bytes per element, default rel_err tolerance; "output": the dtype of an op's output
    # when it is not the input dtype, "torch_by_target": the torch dtype per compile target where it differs
    "bf16": {"torch": "bfloat16", "bytes": 2, "tolerance": 1e-2},
    "fp16": {"torch": "float16", "bytes": 2, "tolerance": 1e-2},
    "fp32": {"torch": "float32", "bytes": 4, "tolerance": 1e-5},
    # e4m3 inputs, bf16 output. The inputs ARE exact e4m3 values and the reference dequantises them (times their
    # fp32 scales) in float64, so the quantisation itself is no error: what is left is the fp32 accumulation (~K
    # ulp of fp32 at worst, ~1e-6 relative) plus the one bf16 rounding of C (2^-9 relative at most, ~1e-3 as a
    # norm ratio), the same budget as a bf16 GEMM's, hence bf16's tolerance.
    # OCP e4m3 on Hopper (sm_90a) and CDNA4 (gfx950); CDNA3 (gfx942) has the fnuz flavour (bias 8, max 240, no -0).
    "fp8": {"torch": "float8_e4m3fn", "bytes": 1, "tolerance": 1e-2, "output": "bf16",
            "torch_by_target": {"gfx942": "float8_e4m3fnuz"}},
}


def torch_dtype(dtype: str, target: str) -> str:
    """The torch dtype name of `dtype` on a compile target (fp8: float8_e4m3fn, or float8_e4m3fnuz on gfx942): the
    one place a cell, the reference and the harness learn it from (op.json torch_dtype)."""
    facts = DTYPES[dtype]
    return facts.get("torch_by_target", {}).get(target, facts["torch"])


def output_torch_dtype(dtype: str) -> str:
    """The torch dtype name of an op's output of `dtype` inputs (bf16 for fp8, the input dtype otherwise)."""
    return DTYPES[DTYPES[dtype].get("output", dtype)]["torch"]


@functools.cache
def _spec(gpu: str) -> dict:
    return json.loads(SPECS.read_text())["gpus"][gpu]


def memory(gpu: str) -> dict:
    """The GPU's HBM capacity, from reference/gpu_specs.json (vendor GB = 1e9 bytes): {gb, bytes, source}."""
    entry = _spec(gpu)["hbm_capacity_gb"]
    return {"gb": entry["value"], "bytes": int(entry["value"] * 1e9), "source": entry["source"]["title"]}


def hbm_bandwidth(gpu: str) -> float:
    """The GPU's cited HBM bandwidth in GB/s (reference/gpu_specs.json), frozen into op.json as hbm_gbps: a kernel
    weighs the bytes each SM must keep in flight by it (the CuTe DSL reduction cell's many-rows plan)."""
    return _spec(gpu)["hbm_bandwidth_gbps"]["value"]


class InputError(ValueError):
    """A bad template input. str() is the one-line message: the input, what is wrong, the fix."""
