"""The kbaseline catalogue: GPUs and dtypes, and the one-line input error every refusal raises.

Template-side. Patterns and DSLs are not listed here: tools.registry finds them (tools/patterns/, tools/dsls/).
A GPU names its architecture; the DSL that serves that architecture gives its compile target.
"""

from __future__ import annotations

GPUS = {
    # name: vendor, architecture, SMs / CUs (frozen into op.json as compute_units: kernels size their grids from it
    # where no device can be asked, as in compile_only and describe). Peaks live in reference/gpu_specs.json.
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


class InputError(ValueError):
    """A bad template input. str() is the one-line message: the input, what is wrong, the fix."""
