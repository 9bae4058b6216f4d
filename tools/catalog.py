"""The kbaseline catalogue: GPUs and dtypes, and the one-line input error every refusal raises.

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
    # where no device can be asked, as in compile_only and describe). Peaks and memory: reference/gpu_specs.json.
    "H200": {"vendor": "nvidia", "arch": "hopper", "compute_units": 132},
    "H100": {"vendor": "nvidia", "arch": "hopper", "compute_units": 132},
    "H20": {"vendor": "nvidia", "arch": "hopper", "compute_units": 78},
    "MI300X": {"vendor": "amd", "arch": "cdna3", "compute_units": 304},
    "MI308X": {"vendor": "amd", "arch": "cdna3", "compute_units": 80},
    "MI355X": {"vendor": "amd", "arch": "cdna4", "compute_units": 256},
}

DTYPES = {
    # name: torch dtype name, bytes per element, default rel_err tolerance
    "bf16": {"torch": "bfloat16", "bytes": 2, "tolerance": 1e-2},
    "fp16": {"torch": "float16", "bytes": 2, "tolerance": 1e-2},
    "fp32": {"torch": "float32", "bytes": 4, "tolerance": 1e-5},
    "fp8": {"torch": "float8_e4m3fn", "bytes": 1, "tolerance": 5e-2},
}


@functools.cache
def memory(gpu: str) -> dict:
    """The GPU's HBM capacity, from reference/gpu_specs.json (vendor GB = 1e9 bytes): {gb, bytes, source}."""
    entry = json.loads(SPECS.read_text())["gpus"][gpu]["hbm_capacity_gb"]
    return {"gb": entry["value"], "bytes": int(entry["value"] * 1e9), "source": entry["source"]["title"]}


class InputError(ValueError):
    """A bad template input. str() is the one-line message: the input, what is wrong, the fix."""
