"""Host-side runtime of the FlyDSL cells: op.json facts, the AMD targets, and compile-only in a child process.

Its one job is the host plumbing that every FlyDSL kernel.py would otherwise repeat, so that a kernel.py
holds only its device code, its launch plan and its argument checks. It reads op.json through host.py
(the op, dtype, target and compute units the template wrote at bake time), names the two targets and the
2 GiB buffer limit, and runs `compile_only`: the parent starts `python kernel.py --emit-isa ...` in the
compile-only environment of tools/rocm_env.py, the child traces and compiles with CPU placeholder tensors
and hands back the ISA that FlyDSL dumped. It never imports FlyDSL itself.

Why a child process
    FlyDSL reads COMPILE_ONLY, ARCH / FLYDSL_GPU_ARCH and ROCM_PATH when it initialises: without them, on a
    machine with no AMD GPU, it aborts the process. And its MLIR Python bindings cannot share a process with
    CuTe DSL's (two copies of MLIR's types: nanobind aborts). So the parent, which may be a test runner that
    already holds CuTe DSL, never compiles; it sets the environment for a fresh interpreter that does.

    parent  kernel.compile_only(case)
              -> flydsl_runtime.compile_isa(__file__, stem, args, arch, out_dir)
              -> tools/rocm_env.compile_isa: python kernel.py --emit-isa build/kernel_<stem>.<gfx>.s *args
                 with COMPILE_ONLY=1, ARCH=FLYDSL_GPU_ARCH=<gfx>, ROCM_PATH, FlyDSL's ISA dump switched on
    child   kernel.py's `flydsl_runtime.child_main(_emit_isa)`: _emit_isa(*args) compiles the variant,
              then rocm_env.save_dumped_isa writes the dumped ISA to the path the parent named

Interface
    OP, DTYPE, TARGET, COMPUTE_UNITS   op.json facts (COMPUTE_UNITS: the GPU's datasheet CU count, for plans
                                       made with no device to ask)
    TARGETS, MAX_BYTES, WAVE           gfx942 / gfx950; buffer descriptors address < 2 GiB; 64 lanes per wave
    DTYPE_BYTES                        op.json dtype name -> bytes per element
    target(arch=None)                  arch, or op.json's target, checked against TARGETS
    device_target(op)                  the running GPU's gfx name (run() only; needs ROCm), checked likewise
    compile_isa(kernel_file, stem, args, arch=None, out_dir="build") -> ISA text
    placeholder(dtype, numel)          a CPU tensor to trace with (the child side; shapes are runtime values)
    child_main(emit)                   the `--emit-isa` dispatch at the end of each kernel.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import host

OP: dict = host.OP
DTYPE: str | None = OP.get("dtype")
TARGET: str = OP.get("target", "gfx942")
COMPUTE_UNITS: int | None = OP.get("compute_units")

TARGETS = ("gfx942", "gfx950")  # CDNA3 (MI300X), CDNA4 (MI355X)
MAX_BYTES = 2**31  # num_records and the per-lane byte offsets of a buffer access are 32-bit: < 2 GiB per tensor
WAVE = 64  # lanes per CDNA wavefront (a CUDA warp is 32)
DTYPE_BYTES = {name: bits // 8 for name, bits in host.DTYPE_BITS.items()}
_TORCH_NAMES = {short: torch_name for torch_name, short in host.DTYPE_NAMES.items()}  # 'bf16' -> 'bfloat16'


def target(arch: str | None = None) -> str:
    """`arch`, or op.json's target when None; a ValueError unless it is one of TARGETS."""
    arch = arch or TARGET
    if arch not in TARGETS:
        raise ValueError(f"compile_only: target must be one of {', '.join(TARGETS)}, got {arch!r}")
    return arch


def device_target(op: str) -> str:
    """The gfx name of the GPU FlyDSL runs on ('gfx942:sramecc+:xnack-' -> 'gfx942'), checked against TARGETS."""
    from flydsl.runtime.device import get_rocm_arch

    arch = get_rocm_arch().split(":")[0]
    if arch not in TARGETS:
        raise ValueError(f"{op}: this kernel targets {', '.join(TARGETS)}, the device is {arch!r}")
    return arch


def rocm_env():
    """The workspace's tools/rocm_env.py: the compile-only environment and both ends of the compile child."""
    tools = str(Path(__file__).resolve().parent / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    import rocm_env as module

    return module


def compile_isa(kernel_file: str | os.PathLike, stem: str, args, arch: str | None = None,
                out_dir: str | os.PathLike = "build") -> str:
    """Compile kernel_file's variant `args` for `arch` in a child; write out_dir/kernel_<stem>.<arch>.s, return it.

    `args` reach the child's _emit_isa as strings, in order (str() of each: True -> 'True')."""
    arch = target(arch)
    isa_path = Path(out_dir) / f"kernel_{stem}.{arch}.s"
    return rocm_env().compile_isa(kernel_file, [str(a) for a in args], arch, isa_path)


def placeholder(dtype: str, numel: int):
    """An uninitialised 1-D CPU tensor of an op.json dtype: what the child traces with (sizes are runtime values)."""
    import torch

    return torch.empty(numel, dtype=getattr(torch, _TORCH_NAMES.get(dtype, dtype)))


def child_main(emit) -> None:
    """`python kernel.py --emit-isa ISA_PATH *args`: emit(*args) compiles, then the dumped ISA goes to ISA_PATH."""
    if sys.argv[1:2] == ["--emit-isa"]:
        emit(*sys.argv[3:])
        rocm_env().save_dumped_isa(sys.argv[2])
