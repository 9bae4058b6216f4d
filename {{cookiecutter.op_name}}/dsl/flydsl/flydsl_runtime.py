"""Host-side runtime of the FlyDSL cells: op.json facts, the AMD targets, the launch path, compile-only in a child.

Its one job is the host plumbing that every FlyDSL kernel.py would otherwise repeat, so that a kernel.py
holds only its device code, its launch plan and its argument checks. It reads op.json through host.py
(the op, dtype, target and compute units the template wrote at bake time), names the two targets and the
2 GiB buffer limit, holds the one launch path of run() (`compiled`, `Launch`), and runs `compile_only`: the
parent starts `python kernel.py --emit-isa ...` in the compile-only environment of tools/rocm_env.py, the
child traces and compiles with CPU placeholder tensors and hands back the ISA that FlyDSL dumped. It imports
FlyDSL only inside the functions that run() calls, never when it is imported.

Why a child process
    FlyDSL reads COMPILE_ONLY, ARCH / FLYDSL_GPU_ARCH and ROCM_PATH when it initialises: without them, on a
    machine with no AMD GPU, it aborts the process. And its MLIR Python bindings cannot share a process with
    CuTe DSL's (two copies of MLIR's types: nanobind aborts). So the parent, which may be a test runner that
    already holds CuTe DSL, never compiles; it sets the environment for a fresh interpreter that does. A
    process started in that environment (tools/rocm_env.compiles_here: many compiles in one batch, or
    `test_kernel.py --compile-only` as the bake starts it) compiles in itself instead: the same _emit_isa, the
    same dump, without a child's imports per compile.

    parent  kernel.compile_only(case)
              -> flydsl_runtime.compile_isa(_emit_isa, stem, args, arch, out_dir)
              -> tools/rocm_env.compile_isa: python kernel.py --emit-isa build/kernel_<stem>.<gfx>.s *args
                 with COMPILE_ONLY=1, ARCH=FLYDSL_GPU_ARCH=<gfx>, ROCM_PATH, FlyDSL's ISA dump switched on
    child   kernel.py's `flydsl_runtime.child_main(_emit_isa)`: _emit_isa(*args) compiles the variant on the
              same placeholders as run() (kernel.py's _compile_args), then rocm_env.save_dumped_isa writes
              the dumped ISA to the path the parent named

The launch path (what one run() costs; benchmarks/2026-12-01-flydsl-launch-path.md has the figures)
    A `flyc.compile`d launcher is called with the runtime arguments in its positional slots; FlyDSL then
    runs one generated Python fill per ABI slot (a tensor: `data_ptr()`, plus its dynamic sizes and
    strides packed with struct; an int, a float, the stream: one ctypes store each), and one ctypes call
    into the JIT-compiled host function, which calls hipModuleGetFunction and hipModuleLaunchKernel. It
    checks nothing: not the dtype, the rank, the device, the contiguity or the alignment of a tensor, and a
    failed launch is only printed to stderr. So a cell's run() is:

        signature lookup (a dict)  ->  the per-call checks FlyDSL does not make  ->  Launch(*runtime)

    - `compiled(cache, key, launcher, compile_args)` compiles once per configuration (the cell's key: op,
      dtype, constexprs; never a shape, which is a runtime value) on CPU placeholder tensors, the very
      arguments compile_only compiles, so compiling never launches (`flyc.compile` given live GPU tensors
      also runs the kernel once) and run() launches exactly the code whose ISA compile_only writes.
    - A kernel.py keys its prepared launches by a signature of cheap tensor attributes: every one that a
      compiled variant or host.py's checks depend on and that does not change with the call's size (dtypes,
      device indices, 16-byte phases, contiguity, strides, the fixed shapes). A signature's first call runs
      host.py's full checks; later calls check in Python only what the size changes (each tensor's M or
      shape, and the size under the signature's 2 GiB bound), and a call that fails them goes back to
      host.py's checks, which refuse it in the words every cell uses.
    - `Launch(*runtime)` appends the launcher's constexprs (baked into the code; FlyDSL still wants their
      positional slots filled) and torch's current stream of the tensors' device as a raw handle, calls
      the compiled launcher, and raises when FlyDSL's runtime recorded a HIP error on this thread. No sync,
      no device read: a run() can be captured in a HIP graph (call it once before capturing, so that the
      compile and the code-object load happen outside the capture).

Interface
    OP, DTYPE, TARGET, COMPUTE_UNITS   op.json facts (COMPUTE_UNITS: the GPU's datasheet CU count, for plans
                                       made with no device to ask)
    TARGETS, MAX_BYTES, WAVE           gfx942 / gfx950; buffer descriptors address < 2 GiB; 64 lanes per wave
    DTYPE_BYTES                        op.json dtype name -> bytes per element
    target(arch=None)                  arch, or op.json's target, checked against TARGETS
    device_target(op)                  the running GPU's gfx name (run() only; needs ROCm), checked likewise
    device_compute_units(device)       the CU count of a GPU (by torch device index), asked once per device
    compiled(cache, key, launcher, compile_args) -> the flyc.compile'd launcher of one configuration
    Launch(op, fn, constexprs, device, facts)    one prepared launch
    compile_isa(emit, stem, args, arch=None, out_dir="build") -> ISA text (emit: kernel.py's _emit_isa)
    placeholder(dtype, numel)          a CPU tensor to compile on (shapes are runtime values)
    child_main(emit)                   the `--emit-isa` dispatch at the end of each kernel.py
"""

from __future__ import annotations

import ctypes
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
_TORCH_NAMES = {**{short: torch_name for torch_name, short in host.DTYPE_NAMES.items()},  # 'bf16' -> 'bfloat16'
                "fp8": "float8_e4m3fn"}  # by name, fp8 is OCP e4m3 (an output's: host.out_dtypes); FNUZ by torch name


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


_CUS: dict = {}  # torch device index -> compute units


def device_compute_units(device: int) -> int:
    """The CU count of GPU `device` (a torch device index), asked once per device (run() only; needs ROCm).

    Not a GPU (-1, a CPU tensor): op.json's count, for a plan that is never launched (host.py refuses the call)."""
    cus = _CUS.get(device)
    if cus is None:
        if device < 0:
            return COMPUTE_UNITS or 1
        import torch

        cus = _CUS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return cus


def compiled(cache: dict, key, launcher, compile_args):
    """flyc.compile(launcher, *compile_args()), once per key: a configuration (op, dtype, constexprs), never a shape.

    `compile_args` is a callable, called only on a key's first use; it returns what compile_only compiles too:
    CPU placeholder tensors (so flyc.compile does not launch, as it does on live GPU tensors) and the
    constexprs. (test_kernel.py times each case's first call, compile included.)"""
    if key not in cache:
        import flydsl.compiler as flyc

        cache[key] = flyc.compile(launcher, *compile_args())
    return cache[key]


def _stream_reader():
    """device index -> torch's current stream on it, as the raw HIP handle (an int) that fx.Stream accepts."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what Triton's launcher reads, on ROCm too
    return raw if raw is not None else (lambda device: torch.cuda.current_stream(device).cuda_stream)


def _error_taker():
    """FlyDSL's flydslRuntimeTakeError: the first HIP error its runtime recorded on this thread (0: none), cleared.

    FlyDSL's JIT path only prints a failed hipModuleGetFunction / hipModuleLaunchKernel to stderr; its AOT path
    reads this. Without the library (no ROCm here) nothing can fail, so it reads 0."""
    try:
        from flydsl.compiler.jit_executor import _resolve_runtime_libs  # the library FlyDSL's engine loads

        take = ctypes.CDLL(_resolve_runtime_libs()[0]).flydslRuntimeTakeError
    except (ImportError, OSError, AttributeError, IndexError, FileNotFoundError):
        return lambda: 0
    take.restype, take.argtypes = ctypes.c_int32, []
    return take


class Launch:
    """One prepared launch of run(): a compiled launcher bound to one argument signature of a cell.

    `launch(*runtime)` calls fn(*runtime, *constexprs, stream): the constexprs are baked into the code (FlyDSL
    ignores their values but still wants their positional slots), the stream is torch's current stream on
    `device` (so a run() follows `torch.cuda.stream(...)` and HIP-graph capture). Then it raises when FlyDSL's
    runtime recorded a HIP error during the call (a ctypes read of a thread-local: no sync). `facts` holds
    whatever the cell derived once for this signature (limits, launch scalars, a workspace)."""

    __slots__ = ("op", "fn", "constexprs", "device", "facts", "stream", "take_error")

    def __init__(self, op: str, fn, constexprs: tuple, device: int, facts=None, stream=None, take_error=None):
        self.op, self.fn, self.constexprs, self.device, self.facts = op, fn, tuple(constexprs), device, facts
        self.stream = stream or _stream_reader()
        self.take_error = take_error or _error_taker()

    def __call__(self, *runtime):
        self.fn(*runtime, *self.constexprs, self.stream(self.device))
        error = self.take_error()
        if error:
            raise RuntimeError(f"{self.op}: the HIP launch failed ({hip_error_name(error)}); FlyDSL's runtime "
                               f"recorded it on this thread, at or before this launch")


def hip_error_name(code: int) -> str:
    """'hipErrorInvalidValue (1)' when libamdhip64 names the code, else 'hipError_t 1'."""
    for name in ("libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so"):
        try:
            get = ctypes.CDLL(name).hipGetErrorName
        except (OSError, AttributeError):
            continue
        get.restype, get.argtypes = ctypes.c_char_p, [ctypes.c_int]
        return f"{(get(code) or b'?').decode()} ({code})"
    return f"hipError_t {code}"


def rocm_env():
    """The workspace's tools/rocm_env.py: the compile-only environment and both ends of the compile child."""
    tools = str(Path(__file__).resolve().parent / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    import rocm_env as module

    return module


def compile_isa(emit, stem: str, args, arch: str | None = None, out_dir: str | os.PathLike = "build") -> str:
    """Compile the variant `args` of the kernel whose child side is `emit` (its kernel.py's _emit_isa) for `arch`;
    write out_dir/kernel_<stem>.<arch>.s and return it.

    `args` reach _emit_isa as strings, in order (str() of each: True -> 'True'). In a child that runs kernel.py,
    unless this process already runs in the compile-only environment of `arch` (rocm_env.compiles_here: a batch of
    compiles, `test_kernel.py --compile-only` at bake time): then here, saving the child's start (~2.5 s of torch
    and FlyDSL imports) per compile."""
    arch = target(arch)
    isa_path = Path(out_dir) / f"kernel_{stem}.{arch}.s"
    env, args = rocm_env(), [str(a) for a in args]
    if env.compiles_here(arch):
        return env.compile_here(emit, args, isa_path)
    return env.compile_isa(emit.__code__.co_filename, args, arch, isa_path)


def placeholder(dtype: str, numel: int):
    """An uninitialised 1-D CPU tensor of an op.json dtype, to compile on (run() and the child alike): sizes are
    runtime values, and a CPU tensor tells flyc.compile not to launch."""
    import torch

    return torch.empty(numel, dtype=getattr(torch, _TORCH_NAMES.get(dtype, dtype)))


def child_main(emit) -> None:
    """`python kernel.py --emit-isa ISA_PATH *args`: emit(*args) compiles, then the dumped ISA goes to ISA_PATH."""
    if sys.argv[1:2] == ["--emit-isa"]:
        emit(*sys.argv[3:])
        rocm_env().save_dumped_isa(sys.argv[2])
