"""CuTe DSL runtime of the kbaseline cells: the host-side plumbing that every CuTe DSL kernel.py shares.

Its one job is to get a CuTe DSL kernel from Python onto sm_90a the same way in every cell: it sets the
target before `cutlass` is imported, turns op.json dtypes and integer addresses into CuTe pointers, compiles
once per static configuration (`cute.compile` does not cache by itself), and, with no GPU at all, compiles
with `--keep-ptx` and writes the PTX where the workspace expects it. Each kernel.py imports it before
anything from `cutlass`; the kernels' device code and launch plans stay in kernel.py, the DSL-independent
argument checks in host.py.

Environment (set here, before `import cutlass`; an existing value wins)
    CUTE_DSL_ARCH=sm_90a        unset, CuTe DSL 4.8.1 silently targets sm_100a
    CUTE_DSL_DUMP_DIR=build/    the workspace's build/ folder (this file sits beside kernel.py); the DSL
                                only writes `--keep-ptx` files into a folder that already exists

Compile-only (no GPU): placeholder addresses (`gmem_ptrs(dtype, [16, 16, 16])`) and `make_fake_stream()`
stand in for tensors and the CUDA stream; `dump_ptx` compiles with `--keep-ptx`, reads
`compiled.artifacts.PTX` (the dumped file's path when CUTE_DSL_DUMP_DIR is set, the text otherwise) and
writes `kernel_<name>.sm_90a.ptx` into the caller's out_dir.
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
from cutlass.cute.runtime import make_fake_stream, make_ptr  # noqa: E402, F401 (make_fake_stream is re-exported)

import host  # noqa: E402

OP = host.OP  # op.json of the workspace
CUTLASS_DTYPES = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16, "fp32": cutlass.Float32}


def gmem_ptr(dtype, address: int, align: int = 16):
    """A global-memory pointer of `dtype` (an op.json name such as 'bf16', or a cutlass type) promising `align` bytes.

    The promised alignment is part of the compiled signature: it decides whether loads may be vectorised."""
    return make_ptr(CUTLASS_DTYPES.get(dtype, dtype), address, cute.AddressSpace.gmem, assumed_align=align)


def gmem_ptrs(dtypes, addresses, aligns=16) -> list:
    """gmem_ptr for each address; `dtypes` and `aligns` are one value for all or one per address."""
    n = len(addresses)
    dtypes = dtypes if isinstance(dtypes, (list, tuple)) else [dtypes] * n
    aligns = aligns if isinstance(aligns, (list, tuple)) else [aligns] * n
    return [gmem_ptr(t, a, al) for t, a, al in zip(dtypes, addresses, aligns)]


def current_stream():
    """torch's current CUDA stream as the driver handle a compiled CuTe launcher takes."""
    import torch
    from cuda.bindings import driver

    return driver.CUstream(torch.cuda.current_stream().cuda_stream)


def compiled(cache: dict, key, launcher, compile_args):
    """cute.compile(launcher, *compile_args()), once per key: the kernel's static configuration (dtype, constexprs).

    `compile_args` is a callable, called only on the first use of a key: the placeholder pointers it builds cost
    microseconds each, which the hot path must not pay on every call."""
    if key not in cache:
        cache[key] = cute.compile(launcher, *compile_args())
    return cache[key]


def dump_ptx(launcher, args, out_dir: str | os.PathLike, name: str) -> str:
    """Compile launcher(*args) with --keep-ptx (no GPU needed); write out_dir/kernel_<name>.sm_90a.ptx; return it."""
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    Path(os.environ["CUTE_DSL_DUMP_DIR"]).mkdir(parents=True, exist_ok=True)  # the DSL only dumps into an existing dir
    ptx = cute.compile(launcher, *args, options="--keep-ptx").artifacts.PTX
    if "\n" not in ptx and Path(ptx).is_file():  # with CUTE_DSL_DUMP_DIR set, the artifact is the dumped file's path
        ptx = Path(ptx).read_text()
    (out_dir / f"kernel_{name}.{ARCH}.ptx").write_text(ptx)
    return ptx
