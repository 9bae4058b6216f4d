"""Find the GPU on this machine and name it the way kbaseline does (H200, H100, H20, MI300X, MI308X, MI355X).

Used by the template (``gpu=auto``, and whether the post-gen hook may run the baseline) and by the
workspace (``run_baseline.py`` refuses to time a kernel on a GPU of the wrong vendor). Order of
probes: torch (CUDA or ROCm build), then ``nvidia-smi``, then ``rocm-smi``. Nothing here raises. torch is
imported (about 2 s) only when the machine has a GPU device node for it to open: without one it could not
see a GPU anyway, and a bake on a CPU machine should not wait for it.

    python tools/gpu_detect.py          # prints e.g. "H200 (NVIDIA H200, nvidia)" or "none"
"""

from __future__ import annotations

import functools
import glob
import shutil
import subprocess

# Most specific first: "H200" contains "H20", "MI308X" must not match "MI300X".
_KNOWN = [
    ("H200", "nvidia"), ("H100", "nvidia"), ("H20", "nvidia"),
    ("MI355X", "amd"), ("MI308X", "amd"), ("MI300X", "amd"),
]


def canonical_name(raw: str) -> str | None:
    """'NVIDIA H100 80GB HBM3' -> 'H100'; unknown models -> None."""
    upper = raw.upper().replace(" ", "")
    for name, _vendor in _KNOWN:
        if name in upper:
            return name
    return None


DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia[0-9]*", "/dev/kfd", "/proc/driver/nvidia")  # CUDA, ROCm


def _from_torch() -> tuple[str, str] | None:
    if not any(glob.glob(pattern) for pattern in DEVICE_NODES):
        return None
    try:
        import torch
    except ImportError:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        vendor = "amd" if getattr(torch.version, "hip", None) else "nvidia"
        return torch.cuda.get_device_name(0), vendor
    except Exception:  # a broken driver is "no usable GPU", not a crash
        return None


def _from_smi(cmd: list[str], vendor: str) -> tuple[str, str] | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if canonical_name(line):
            return line.strip(), vendor
    lines = [x.strip() for x in out.splitlines() if x.strip()]
    return (lines[0], vendor) if lines and vendor == "nvidia" else None


@functools.cache
def detect() -> dict:
    """{'name': canonical or None, 'raw': device string or None, 'vendor': 'nvidia'/'amd'/None}; probed once per
    process (the bake asks twice: may it run, and on what)."""
    for probe in (
        _from_torch,
        lambda: _from_smi(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], "nvidia"),
        lambda: _from_smi(["rocm-smi", "--showproductname"], "amd"),
    ):
        found = probe()
        if found:
            raw, vendor = found
            return {"name": canonical_name(raw), "raw": raw, "vendor": vendor}
    return {"name": None, "raw": None, "vendor": None}


if __name__ == "__main__":
    d = detect()
    print(f"{d['name'] or 'unknown model'} ({d['raw']}, {d['vendor']})" if d["raw"] else "none")
