"""CuTe DSL runtime of the kbaseline cells: the one launch path that every CuTe DSL kernel.py shares.

Its one job is to get a CuTe DSL kernel from torch tensors onto sm_90a the same way in every cell, at a
host cost close to torch's own: it sets the target before `cutlass` is imported, builds the fake tensors a
launcher is compiled on, compiles it once per static configuration through TVM-FFI, and, with no GPU at
all, compiles the very same signature with `--keep-ptx` and writes the PTX where the workspace expects
it. Each kernel.py imports it before anything from `cutlass`; the kernels' device code and launch plans
stay in kernel.py, the DSL-independent argument checks in host.py.

The launch path (why a call costs a few microseconds, not fifty)
    A CuTe DSL launcher compiled the default way is called through Python: every argument is converted on
    every call (`from_dlpack` or `make_ptr`, then the DSL's own argument marshalling), which costs 40-100 us
    per call. Compiled with `--enable-tvm-ffi`, the launcher becomes a TVM-FFI function: the call takes the
    torch tensors themselves (DLPack, made cheap by torch-c-dlpack-ext or a torch that has the exchange API
    built in), and the generated C wrapper reads each tensor's pointer, shape and strides, checks them
    against the compiled signature, and launches. So a kernel's `run()` is:

        signature lookup (a dict)  ->  the compiled function, called with the torch tensors  ->  launch

    What the C wrapper checks on every call, for free: dtype, rank, device type and index, every static
    extent and stride, that two tensors which share a shape symbol agree on it (`x` and `out` share the
    row count, say), the divisibility of each symbol, and the promised byte alignment of each tensor. A
    kernel.py therefore keeps in Python only what the wrapper cannot see (contiguity of a flattened
    tensor, an index-range limit), and runs host.py's full checks only on a signature's first call and
    after the wrapper has refused a call, to say what is wrong in the same words as every other cell.

Fake tensors and symbols
    `tensor(dtype, shape, stride, align)` is what a launcher is compiled on: every extent or stride is an
    int (static: part of the code) or a symbol from `dim()` (dynamic: a runtime value, bound from the real
    tensor at each call). One compile therefore serves every shape of its configuration; the key of
    `compiled()` is what really changes the code (op, dtype, rank, tile configuration, alignment), never
    the shape.

The stream
    Launchers take `STREAM`, the TVM-FFI environment stream: the wrapper asks torch for its current CUDA
    stream on every call, so a kernel runs on the stream of the surrounding torch code, inside
    `torch.cuda.stream(...)` and during CUDA-graph capture alike, with no stream argument to pass.

Environment (set here, before `import cutlass`; an existing value wins)
    CUTE_DSL_ARCH=sm_90a        unset, CuTe DSL 4.8.1 silently targets sm_100a
    CUTE_DSL_DUMP_DIR=build/    the workspace's build/ folder (this file sits beside kernel.py); the DSL
                                only writes `--keep-ptx` files into a folder that already exists

Compile-only (no GPU): fake tensors need no device and `STREAM` needs no CUDA context, so `dump_ptx`
compiles exactly the signature that run() compiles, adds `--keep-ptx`, reads `compiled.artifacts.PTX`
(the dumped file's path when CUTE_DSL_DUMP_DIR is set, the text otherwise) and writes
`kernel_<name>.sm_90a.ptx` into the caller's out_dir.
"""

from __future__ import annotations

import os
from pathlib import Path

ARCH = "sm_90a"
BUILD_DIR = Path(__file__).with_name("build")
os.environ.setdefault("CUTE_DSL_ARCH", ARCH)  # must precede `import cutlass`
os.environ.setdefault("CUTE_DSL_DUMP_DIR", str(BUILD_DIR))

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import make_fake_stream, make_fake_tensor  # noqa: E402

import host  # noqa: E402

OP = host.OP  # op.json of the workspace
CUTLASS_DTYPES = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16, "fp32": cutlass.Float32, "int32": cutlass.Int32,
                  "fp8": cutlass.Float8E4M3FN, "uint8": cutlass.Uint8, "int8": cutlass.Int8, "bool": cutlass.Boolean}  # e4m3 (OCP): DLPack and TVM-FFI name it float8_e4m3fn, as torch does
TVM_FFI = "--enable-tvm-ffi"
STREAM = make_fake_stream(use_tvm_ffi_env_stream=True)  # torch's current stream, read by the wrapper per call


def dim(divisibility: int = 1):
    """A dynamic extent or stride (int32) of a fake tensor. Reuse one object wherever two tensors must agree."""
    return cute.sym_int32(divisibility=divisibility)


def tensor(dtype, shape, stride=None, align: int = 16):
    """A fake global-memory tensor of `dtype` (an op.json name such as 'bf16', or a cutlass type) to compile on.

    `shape` and `stride` hold ints (static) and `dim()` symbols (dynamic); `stride=None` is row-major with a
    static innermost stride of 1 and a fresh dynamic symbol for every other stride. `align` is the byte
    alignment the compiled code may assume of the data pointer; the TVM-FFI wrapper checks it on every call."""
    if stride is None:
        stride = (*(dim() for _ in shape[1:]), 1)
    return make_fake_tensor(CUTLASS_DTYPES.get(dtype, dtype), tuple(shape), stride=tuple(stride), assumed_align=align)


def compiled(cache: dict, key, launcher, compile_args):
    """launcher compiled through TVM-FFI on compile_args(), once per key (cute.compile does not cache by itself).

    Returns the positional `tvm_ffi.Function` itself, called with the runtime arguments in the launcher's
    order (constexprs and the stream are not arguments). cute.compile wraps it in a Python class that also
    accepts keywords, which costs ~0.4 us a call for nothing here; the wrapper stays in `cache`, and with it
    the loaded module the function lives in. `compile_args` is a callable, called only on the first use of a
    key (test_kernel.py times each case's first call, compile included: a user feels it)."""
    if key not in cache:
        cache[key] = cute.compile(launcher, *compile_args(), options=TVM_FFI)
    return getattr(cache[key], "__tvm_ffi_object__", lambda: None)() or cache[key]


def masks_as_bytes(tensors, dtypes) -> list:
    """A launcher's tensors with each mask (dtypes[i] == "bool": lowered.DTYPES, the inputs' kinds; the tensors past
    them, outputs, go as they are) as the uint8 tensor of its bytes: same pointer, same layout. A launcher compiled
    on a bool fake tensor (a kernel.py's BOOL_MASKS) thus lets the TVM-FFI wrapper take torch.bool as it comes, with
    no per-call `t.view(torch.uint8)` (benchmarks/2026-12-06-h100-many-direct.md); one compiled on uint8 is
    unchanged."""
    return [cute.make_tensor(cute.recast_ptr(t.iterator, dtype=cutlass.Uint8), t.layout)
            if i < len(dtypes) and dtypes[i] == "bool" else t for i, t in enumerate(tensors)]


def dump_ptx(launcher, args, out_dir: str | os.PathLike, name: str) -> str:
    """Compile launcher(*args) as run() does, plus --keep-ptx (no GPU needed); write out_dir/kernel_<name>.sm_90a.ptx."""
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    Path(os.environ["CUTE_DSL_DUMP_DIR"]).mkdir(parents=True, exist_ok=True)  # the DSL only dumps into an existing dir
    ptx = cute.compile(launcher, *args, options=f"{TVM_FFI} --keep-ptx").artifacts.PTX
    if "\n" not in ptx and Path(ptx).is_file():  # with CUTE_DSL_DUMP_DIR set, the artifact is the dumped file's path
        ptx = Path(ptx).read_text()
    (out_dir / f"kernel_{name}.{ARCH}.ptx").write_text(ptx)
    return ptx
