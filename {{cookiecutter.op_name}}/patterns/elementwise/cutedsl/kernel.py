"""Elementwise V0 kernel in CuTe DSL for Hopper (sm_90a): add, mul, silu, gelu, relu, silu_mul.

A bandwidth kernel: the tensor is flattened to 1-D and cut into one tile per CTA of 128 threads, each
thread owning UNROLL 128-bit vectors; every vector moves as one ld.global.v4 / st.global.v4 (a warp
covers 512 contiguous bytes), the math runs in fp32 registers and the result is rounded once to the
output dtype. UNROLL vectors per thread keep enough loads in flight to cover HBM latency; no shared memory,
and only the last CTA of the grid pays for predicated scalar accesses at the tail.

What it computes
    out[i] = f(x[i])  or  f(x[i], y[i])  for every element of a contiguous tensor (read as 1-D), with the
    inputs loaded in bf16/fp16/fp32, the math done in fp32, and the result rounded once to the output
    dtype. gelu is the exact erf form (torch's default, ``approximate='none'``), not the tanh one.

Why this shape (roofline)
    An elementwise op does ~1-5 FLOP per 2-4 bytes moved. Hopper's ridge point is dense-bf16 peak over
    HBM bandwidth (H200, cited: 989 TFLOP/s / 4.8 TB/s ~ 206 FLOP/byte), so the op sits far left of it and
    the only goal is to move bytes at the speed of HBM: every byte read once, written once, with wide,
    coalesced accesses and enough loads in flight to cover DRAM latency.

Tiling and the thread/value layout
    The tensor is flattened to 1-D (n elements) and cut into CTA tiles of ``THREADS * VEC * UNROLL``
    elements. Inside a tile, the thread/value (TV) layout says which elements each thread owns::

        tv = ((THREADS,), (VEC, UNROLL)) : ((VEC,), (1, THREADS*VEC))

        thread t, value (v, u)  ->  element  u*THREADS*VEC + t*VEC + v   of the tile

        u = 0:  | T0: v0..v7 | T1: v0..v7 | ... | T127: v0..v7 |    <- one 128-bit access per thread,
        u = 1:  | T0: v0..v7 | T1: v0..v7 | ... | T127: v0..v7 |       a warp covers 512 contiguous bytes
        ...                                                              (fully coalesced)

    - ``VEC = 128 / bits(dtype)`` (8 for bf16/fp16, 4 for fp32): the v-mode is contiguous, so one copy
      atom of ``num_bits_per_copy=128`` moves it as a single ``ld.global.v4`` / ``st.global.v4``.
    - ``UNROLL``: 128-bit vectors each thread loads per input before the first use; 2 for ops with
      transcendental math, 8 for add and mul. Little's law sets the bytes that must be in flight:
      bandwidth x latency (4.8 TB/s x ~600 ns ~ 2.9 MB, ~22 KiB per SM of 132). A 128-thread CTA with
      UNROLL=2 has 4 KiB per input in flight and 16 CTAs fit on an SM (2048 threads): 64-128 KiB per SM,
      enough. The ops with no math can afford deeper unrolling; for the transcendental ones it costs
      registers and so occupancy.
    - ``THREADS = 128``: 4 warps, small CTAs so that many of them share an SM.
    The launch-shape, cache-hint and persistent grid-stride sweeps behind these choices, and the
    measured bandwidth per op and dtype, are in benchmarks/2026-11-30-h200-elementwise.md.

Predication (sizes that are not a multiple of the tile, or even of VEC)
    Every CTA but the last one covers a full tile and runs the fast path with no predicates at all.
    The last CTA (``(bidx + 1) * tile > n``) takes the guarded path: an identity tensor gives each
    owned value its global coordinate, ``elem_less(coord, n)`` turns that into a per-element
    predicate, and the loads and stores become scalar and guarded. Out-of-range values are never
    read nor written, so no padding is needed and any n >= 1 works. Only one CTA pays for this.

Data movement
    global -> registers (128-bit, coalesced) -> fp32 math -> registers -> global. No shared memory:
    nothing is reused, so staging through SMEM or TMA would only add latency.

Interface (the same in every kbaseline cell):
    run(*inputs, out=None)      -> out         run on CUDA tensors; compiles and caches on first use
    compile_only(case, out_dir) -> PTX text     compile for sm_90a with no GPU (fake pointers)
    describe(case)              -> dict         tile, threads, grid and data movement, for the report
"""

from __future__ import annotations

import os

import cutedsl_runtime as rt  # first: it sets CUTE_DSL_ARCH=sm_90a before cutlass is imported
import host

import cutlass
import cutlass.cute as cute

OP_SPEC = host.OP
OP = OP_SPEC["op"]

THREADS = 128
UNROLL = {"add": 8, "mul": 8, "silu": 2, "gelu": 2, "relu": 2, "silu_mul": 2}  # vectors per thread per tensor
ACCESS_BITS = 128
BINARY_OPS = ("add", "mul", "silu_mul")
# Cache hints for the 128-bit accesses (CopyG2ROp / CopyR2GOp keywords). Empty = plain ld/st.global; the
# ld.global.nc, streaming, evict-first and no-allocate variants are compared in the benchmark file above.
LOAD_HINTS = {}
STORE_HINTS = {}


def _silu(x):
    # x * 1/(1 + e^-x) with the approximate reciprocal (rcp.approx, ~1 ulp): an IEEE fp32 division
    # (div.rn.f32) is a multi-instruction sequence, enough extra work per element to make silu compute-bound.
    return x * cute.math.rcp(1.0 + cute.math.exp(-x, fastmath=True), approx=True, ftz=True)


def _apply(op: str, a, b):
    """The op, on fp32 TensorSSA values (a trace-time choice: only the chosen op is compiled)."""
    if op == "add":
        return a + b
    if op == "mul":
        return a * b
    if op == "silu":
        return _silu(a)
    if op == "silu_mul":
        return _silu(a) * b
    if op == "relu":
        return cute.where(a < 0.0, cute.full_like(a, 0.0), a)  # `a < 0` is false for NaN: NaN propagates
    if op == "gelu":
        return 0.5 * a * (1.0 + cute.math.erf(a * 0.7071067811865476))
    raise ValueError(f"unknown elementwise op {op!r}")


def _thread_view(t, tile, tv, bidx, tidx):
    """((tile), (num_tiles)) -> this CTA's tile -> (THREADS, (VEC, UNROLL)) -> this thread's (VEC, UNROLL) values."""
    return cute.composition(cute.zipped_divide(t, (tile,))[(None, bidx)], tv)[(tidx, None)]


@cute.kernel
def elementwise_kernel(
    mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, n: cutlass.Int32,
    vec: cutlass.Constexpr[int], unroll: cutlass.Constexpr[int], op: cutlass.Constexpr[str],
):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    tile = THREADS * vec * unroll
    binary = op in BINARY_OPS

    # TV layout of one tile; slicing it at `tidx` leaves this thread's (VEC, UNROLL) values.
    tv = cute.make_layout(((THREADS,), (vec, unroll)), stride=((vec,), (1, THREADS * vec)))

    tA = _thread_view(mA, tile, tv, bidx, tidx)
    tB = _thread_view(mB, tile, tv, bidx, tidx)
    tC = _thread_view(mC, tile, tv, bidx, tidx)
    rA = cute.make_fragment_like(tA)
    rB = cute.make_fragment_like(tB)
    rC = cute.make_fragment_like(tC)

    if (bidx + 1) * tile <= n:
        # Fast path: a full tile. Each (VEC) column of the view is one 128-bit access.
        load = cute.make_copy_atom(cute.nvgpu.CopyG2ROp(), mA.element_type, num_bits_per_copy=ACCESS_BITS, **LOAD_HINTS)
        store = cute.make_copy_atom(cute.nvgpu.CopyR2GOp(), mC.element_type, num_bits_per_copy=ACCESS_BITS, **STORE_HINTS)
        cute.copy(load, tA, rA)
        if cutlass.const_expr(binary):
            cute.copy(load, tB, rB)
        b = rB.load().to(cutlass.Float32) if binary else None
        rC.store(_apply(op, rA.load().to(cutlass.Float32), b).to(mC.element_type))
        cute.copy(store, rC, tC)
    else:
        # Tail tile: per-element predicates from the coordinates of the values this thread owns.
        tCoord = _thread_view(cute.make_identity_tensor(mC.shape), tile, tv, bidx, tidx)
        pred = cute.make_rmem_tensor(tCoord.shape, cutlass.Boolean)
        for i in cutlass.range_constexpr(cute.size(pred)):
            pred[i] = cute.elem_less(tCoord[i], mC.shape)
        rA.fill(0.0)
        rB.fill(0.0)
        for i in cutlass.range_constexpr(cute.size(pred)):
            if pred[i]:
                rA[i] = tA[i]
                if cutlass.const_expr(binary):
                    rB[i] = tB[i]
        b = rB.load().to(cutlass.Float32) if binary else None
        rC.store(_apply(op, rA.load().to(cutlass.Float32), b).to(mC.element_type))
        for i in cutlass.range_constexpr(cute.size(pred)):
            if pred[i]:
                tC[i] = rC[i]


@cute.jit
def elementwise_launch(
    pA: cute.Pointer, pB: cute.Pointer, pC: cute.Pointer, n: cutlass.Int32, stream,
    op: cutlass.Constexpr[str],
):
    """Host side: wrap raw pointers as 1-D tensors of n elements and launch one CTA per tile."""
    vec = ACCESS_BITS // pA.dtype.width
    tile = THREADS * vec * UNROLL[op]
    mA = cute.make_tensor(pA, cute.make_layout(n))
    mB = cute.make_tensor(pB, cute.make_layout(n))
    mC = cute.make_tensor(pC, cute.make_layout(n))
    elementwise_kernel(mA, mB, mC, n, vec, UNROLL[op], op).launch(
        grid=[(n + tile - 1) // tile, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


_compiled: dict = {}  # (op, dtype) -> compiled launcher


def _args(dtype: str, addresses, n: int, stream) -> tuple:
    """elementwise_launch's runtime arguments: A, B, C pointers (16-byte aligned), n, the stream."""
    return (*rt.gmem_ptrs(dtype, addresses), cutlass.Int32(n), stream)


def run(*inputs, out=None, op: str = OP):
    """out = op(*inputs) on the current CUDA stream. Inputs: contiguous CUDA tensors of one shape and dtype."""
    n_inputs = 2 if op in BINARY_OPS else 1
    dtype, out = host.elementwise_operands(op, inputs, out, n_inputs, "128-bit accesses")
    x = inputs[0]
    n = x.numel()
    if n == 0:
        return out
    if n > 2**31 - THREADS * 8 * UNROLL[op]:
        raise ValueError(f"{op}: {n} elements exceed the int32 index range of this kernel")
    stream = rt.current_stream()
    # Placeholder addresses at compile time: the compiled code takes the real pointers and n at each call.
    launcher = rt.compiled(_compiled, (op, dtype), elementwise_launch,
                           lambda: (*_args(dtype, [16] * 3, 1, stream), op))
    b = inputs[1] if n_inputs == 2 else x  # unary ops never read B
    launcher(*_args(dtype, [x.data_ptr(), b.data_ptr(), out.data_ptr()], n, stream))
    return out


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", op: str = OP,
                 dtype: str | None = None) -> str:
    """Compile for sm_90a without a GPU (fake pointers and stream); write and return the PTX."""
    dtype = dtype or OP_SPEC["dtype"]
    args = (*_args(dtype, [16] * 3, 1, rt.make_fake_stream()), op)
    return rt.dump_ptx(elementwise_launch, args, out_dir, f"{op}_{dtype}")


def describe(case: dict) -> dict:
    """Launch configuration of a case, for the plan and the report."""
    vec = ACCESS_BITS // host.DTYPE_BITS[OP_SPEC["dtype"]]
    unroll = UNROLL[OP]
    tile = THREADS * vec * unroll
    n = case["vars"]["numel"]
    return {
        "tile_elements": tile,
        "threads_per_cta": THREADS,
        "values_per_thread": f"{unroll} x {vec} ({unroll} 128-bit accesses per tensor)",
        "grid": [-(-n // tile), 1, 1],
        "grid_blocks": -(-n // tile),
        "data_movement": "global -> registers with 128-bit ld.global.v4, fp32 math, registers -> global with "
        "128-bit st.global.v4; the last CTA uses scalar predicated accesses; no shared memory",
    }
