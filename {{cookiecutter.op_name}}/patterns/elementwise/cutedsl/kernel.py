"""Elementwise V0 kernel in CuTe DSL for Hopper (sm_90a): add, mul, silu, gelu, relu, silu_mul, or your own op.

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
    - Small tensors (fewer than ``SMALL_N`` = 2^24 elements) take a second compile with one vector per
      thread (``SMALL_UNROLL``): there the kernel is latency-bound, and what counts is spreading the few
      bytes over as many SMs as possible with one load-compute-store round trip per thread. With add's 8
      vectors per thread, 2^12 elements were half of one tile: one CTA, all of it in the scalar tail path.
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

Your own op (op.json "op": "lowered")
    The template traces the user's PyTorch function into lowered.py (tests/lowered_examples/CONTRACT.md): INPUTS
    with their KINDS ("row": x's shape, "vector": [N], N = x.shape[-1]), OUTPUTS of x's shape with OUT_DTYPES
    ("input" | "fp32"), and compute(*values, n, reduce), straight-line fp32 math on pointwise.py's `pw.` functions.
    lowered_kernel is this kernel's data movement with compute() in the middle, traced once per compile:

        row inputs  --128-bit loads, the TV layout above-->  (VEC, UNROLL) fragments  --.to(fp32)-->  compute()
        vector inputs: flat element g reads vec[g % N]                                                    |
        outputs     <--128-bit stores--  fragments rounded once to each output's dtype  <-----------------'

    - Vector inputs: a thread's VEC-chunk starts at a flat g0 that is a multiple of VEC, so when N % VEC == 0
      the chunk is vec[g0 % N .. + VEC] contiguously: one 128-bit load per chunk, as for a row (the N symbol of
      the compile promises the divisibility; the wrapper checks it). Otherwise each value is a scalar gather
      vec[g % N], correct for any N. The choice is part of the compile key (run() keys on N % 8).
    - UNROLL = 4 // (row inputs): the row inputs share 4 vectors in flight per thread (x alone: 4, x and y: 2),
      as the built-in ops with math (2 vectors per input for silu_mul), so more inputs do not cost occupancy.
    - The tail CTA is the built-in one: the same per-element predicates, scalar guarded loads (gathers for
      vectors) and stores. One compile serves every shape of a rank; run() returns one tensor, or a tuple for
      several outputs, and takes `out` as a tensor or a tuple/list in OUTPUTS order.

Interface (the same in every kbaseline cell):
    run(*inputs, out=None)      -> out         run on CUDA tensors; compiles and caches on first use
    compile_only(case, out_dir) -> PTX text     compile for sm_90a with no GPU (fake tensors)
    describe(case)              -> dict         tile, threads, grid and data movement, for the report
"""

from __future__ import annotations

import os

import cutedsl_runtime as rt  # first: it sets CUTE_DSL_ARCH=sm_90a before cutlass is imported
import host

import cutlass
import cutlass.cute as cute
import torch

OP_SPEC = host.OP
OP = OP_SPEC["op"]
LOWERED = OP == "lowered"
if LOWERED:
    import lowered  # the user's op, generated at the workspace root (tests/lowered_examples/CONTRACT.md)

THREADS = 128
UNROLL = {"add": 8, "mul": 8, "silu": 2, "gelu": 2, "relu": 2, "silu_mul": 2}  # vectors per thread per tensor
SMALL_N = 1 << 24  # below this many elements the built-in ops run one vector per thread (SMALL_UNROLL) ...
SMALL_UNROLL = 1   # ... so that a small tensor spreads over many CTAs and the scalar tail tile stays small
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


def _tail_predicates(t, tile, tv, bidx, tidx):
    """This thread's (VEC, UNROLL) global coordinates in the tail tile, and `coordinate < n` for each of them."""
    coord = _thread_view(cute.make_identity_tensor(t.shape), tile, tv, bidx, tidx)
    pred = cute.make_rmem_tensor(coord.shape, cutlass.Boolean)
    for i in range(cute.size(pred)):  # a plain helper: a Python loop, unrolled as it traces
        pred[i] = cute.elem_less(coord[i], t.shape)
    return coord, pred


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
        _, pred = _tail_predicates(mC, tile, tv, bidx, tidx)
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
def elementwise_launch(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream, op: cutlass.Constexpr[str],
                       unroll: cutlass.Constexpr[int]):
    """Host side: view the contiguous tensors as 1-D tensors of n elements and launch one CTA per tile."""
    vec = ACCESS_BITS // mA.element_type.width
    tile = THREADS * vec * unroll
    n = cute.size(mA.shape)
    flat = [cute.make_tensor(t.iterator, cute.make_layout(n)) for t in (mA, mB, mC)]
    elementwise_kernel(*flat, n, vec, unroll, op).launch(
        grid=[(n + tile - 1) // tile, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


# ------------------------------------------------------------------------------------------------
# The lowered op (op.json "op": "lowered"): the user's compute() inside this cell's data movement
# ------------------------------------------------------------------------------------------------

LOWERED_VECTORS_IN_FLIGHT = 4  # 128-bit vectors of row inputs a thread loads before the first use, all inputs


def lowered_unroll(kinds) -> int:
    """UNROLL of a lowered op: the row inputs share LOWERED_VECTORS_IN_FLIGHT (4 for x alone, 2 for x and y)."""
    return max(1, LOWERED_VECTORS_IN_FLIGHT // list(kinds).count("row"))


@cute.jit
def _gather(mV: cute.Tensor, rV: cute.Tensor, coord: cute.Tensor, pred, row_n: cutlass.Int32,
            predicated: cutlass.Constexpr[bool]):
    """A vector input's values, one scalar load each: flat element g reads vec[g % N] (pred: g < n, the tail)."""
    for i in cutlass.range_constexpr(cute.size(rV)):
        if cutlass.const_expr(not predicated):
            rV[i] = mV[coord[i] % row_n]
        elif pred[i]:
            rV[i] = mV[coord[i] % row_n]


def _vector_chunks(atom, mV, rV, first, row_n, vec: int, unroll: int):
    """A vector input's values with one 128-bit load per VEC-chunk (N % VEC == 0): the chunk of flat elements
    g0 .. g0+VEC-1 (g0 a multiple of VEC) is vec[g0 % N ..] contiguously, as N is a multiple of VEC too."""
    chunks = cute.make_tensor(mV.iterator, cute.make_layout((vec, row_n // vec), stride=(1, vec)))
    for u in range(unroll):
        cute.copy(atom, chunks[None, (first + u * THREADS * vec) % row_n // vec], rV[((None, u),)])


@cute.kernel
def lowered_kernel(
    n: cutlass.Int32, row_n: cutlass.Int32, vec: cutlass.Constexpr[int], unroll: cutlass.Constexpr[int],
    vector_chunks: cutlass.Constexpr[bool], tensors,
):
    """elementwise_kernel's data movement around lowered.compute(): tensors = the inputs, then the outputs."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    tile = THREADS * vec * unroll
    tv = cute.make_layout(((THREADS,), (vec, unroll)), stride=((vec,), (1, THREADS * vec)))
    inputs, outputs = tensors[:len(lowered.INPUTS)], tensors[len(lowered.INPUTS):]
    rows = [_thread_view(t, tile, tv, bidx, tidx) if kind == "row" else t for t, kind in zip(inputs, lowered.KINDS)]
    views = [_thread_view(t, tile, tv, bidx, tidx) for t in outputs]
    layout = rows[_X]  # x's thread view: every register fragment has its (VEC, UNROLL) shape
    r_in = [cute.make_fragment_like(layout, t.element_type) for t in inputs]  # (a scalar input's goes unused)
    r_out = [cute.make_fragment_like(layout, t.element_type) for t in outputs]

    if (bidx + 1) * tile <= n:
        # Fast path: every row access is one vector (128-bit for x, VEC bytes for a mask); vector inputs are such
        # chunks or scalar gathers.
        coord = _thread_view(cute.make_identity_tensor(outputs[0].shape), tile, tv, bidx, tidx)
        for t, r, kind in zip(rows, r_in, lowered.KINDS):
            atom = cute.make_copy_atom(cute.nvgpu.CopyG2ROp(), t.element_type,
                                       num_bits_per_copy=vec * t.element_type.width, **LOAD_HINTS)
            if cutlass.const_expr(kind == "row"):
                cute.copy(atom, t, r)
            elif cutlass.const_expr(kind == "scalar"):
                pass
            elif cutlass.const_expr(vector_chunks):
                _vector_chunks(atom, t, r, bidx * tile + tidx * vec, row_n, vec, unroll)
            else:
                _gather(t, r, coord, None, row_n, False)
        _compute_into(inputs, r_in, r_out, row_n)
        for r, t in zip(r_out, views):
            cute.copy(cute.make_copy_atom(cute.nvgpu.CopyR2GOp(), t.element_type,  # 64-bit for an int8 / fp8 out
                                          num_bits_per_copy=min(ACCESS_BITS, vec * t.element_type.width),
                                          **STORE_HINTS), r, t)
    else:
        # Tail tile: scalar, predicated accesses, as elementwise_kernel's.
        coord, pred = _tail_predicates(outputs[0], tile, tv, bidx, tidx)
        for t, r, kind in zip(rows, r_in, lowered.KINDS):
            r.fill(0)
            if cutlass.const_expr(kind == "row"):
                for i in cutlass.range_constexpr(cute.size(pred)):
                    if pred[i]:
                        r[i] = t[i]
            elif cutlass.const_expr(kind == "vector"):
                _gather(t, r, coord, pred, row_n, True)
        _compute_into(inputs, r_in, r_out, row_n)
        for r, t in zip(r_out, views):
            for i in cutlass.range_constexpr(cute.size(pred)):
                if pred[i]:
                    t[i] = r[i]


def _compute_into(inputs, r_in, r_out, row_n):
    """lowered.compute on the fp32 values of the input fragments (a mask's bytes as 0.0 / 1.0) and each scalar
    input's one value; each output rounded once into its fragment."""
    values = lowered.compute(*(cutlass.Float32(t[0].to(cutlass.Float32)) if kind == "scalar" else
                               r.load().to(cutlass.Float32) for t, r, kind in zip(inputs, r_in, lowered.KINDS)),
                             cutlass.Float32(row_n), None)
    for r, v in zip(r_out, values):
        r.store(v.to(r.element_type))


@cute.jit
def lowered_launch(stream, vector_chunks: cutlass.Constexpr[bool], *tensors):
    """Host side: rows and outputs as 1-D tensors of n elements (vectors stay [N]); one CTA per tile."""
    x = tensors[_X]
    vec = ACCESS_BITS // x.element_type.width
    unroll = lowered_unroll(lowered.KINDS)
    tile = THREADS * vec * unroll
    n = cute.size(x.shape)
    row_n = x.shape[len(x.shape) - 1]
    kinds = (*lowered.KINDS, *lowered.OUTPUTS)
    flat = [cute.make_tensor(t.iterator, cute.make_layout(n)) if kind == "row" else t for t, kind in zip(tensors, kinds)]
    lowered_kernel(n, row_n, vec, unroll, vector_chunks, tuple(flat)).launch(
        grid=[(n + tile - 1) // tile, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


_compiled: dict = {}  # (op, dtype, rank, unroll) -> compiled launcher: one compile serves every shape of that rank
_launches: dict = {}  # (op, torch dtype, rank, number of inputs, small) -> compiled launcher, for the hot path
MAX_ELEMENTS = 2**31 - THREADS * 8 * max(UNROLL.values())  # int32 element offsets, with the last tile's overrun


def _compile_args(op: str, dtype: str, rank: int, unroll: int) -> tuple:
    """Fake A, B, C of one shape (shared symbols: the wrapper checks that all three agree), 16-byte aligned."""
    shape = [rt.dim() for _ in range(rank)]
    return (*(rt.tensor(dtype, shape) for _ in range(3)), rt.STREAM, op, unroll)


def unroll_for(op: str, numel: int) -> int:
    """Vectors per thread: UNROLL[op] (Little's law at HBM scale, see the docstring), or SMALL_UNROLL below SMALL_N
    elements, where a deep tile would leave most SMs idle and put the whole tensor in the scalar tail tile (n = 4096
    of add is half of one 8192-element tile: one CTA, 64 guarded scalar accesses per thread)."""
    return SMALL_UNROLL if numel < SMALL_N else UNROLL[op]


def _prepare(op: str, inputs, out):
    """A signature's first call, or a refused one: host.py's checks, then the launcher for this signature."""
    n_inputs = 2 if op in BINARY_OPS else 1
    dtype, out = host.elementwise_operands(op, inputs, out, n_inputs, "128-bit accesses")
    if inputs[0].numel() > MAX_ELEMENTS:
        raise ValueError(f"{op}: {inputs[0].numel()} elements exceed the int32 index range of this kernel")
    rank, unroll = inputs[0].dim(), unroll_for(op, inputs[0].numel())
    return rt.compiled(_compiled, (op, dtype, rank, unroll), elementwise_launch,
                       lambda: _compile_args(op, dtype, rank, unroll))


def run(*inputs, out=None, op: str = OP):
    """out = op(*inputs) on the current CUDA stream. Inputs: contiguous CUDA tensors of one shape and dtype.

    The hot path is a dict lookup, three contiguity checks (the wrapper checks dtype, shape agreement,
    device and alignment itself) and the TVM-FFI call; see cutedsl_runtime.py."""
    if op == "lowered":
        return run_lowered(*inputs, out=out)
    x = inputs[0]
    signature = (op, x.dtype, x.dim(), len(inputs), x.numel() < SMALL_N)
    launcher = _launches.get(signature)
    if launcher is None:
        launcher = _launches[signature] = _prepare(op, inputs, out)
    if out is None:
        out = torch.empty_like(x)
    b = inputs[1] if op in BINARY_OPS else x  # unary ops never read B
    if not (0 < x.numel() <= MAX_ELEMENTS and x.is_contiguous() and b.is_contiguous() and out.is_contiguous()):
        _prepare(op, inputs, out)  # raises, in host.py's words ...
        return out  # ... unless the tensor is empty: nothing to do
    try:
        launcher(x, b, out)
    except (TypeError, ValueError):  # the wrapper refused the call before launching
        _prepare(op, inputs, out)  # host.py says why in the words every cell uses ...
        raise  # ... and the wrapper's own message stands if host.py finds nothing wrong
    return out


def _vector_chunks_apply(dtype: str, row_n: int) -> bool:
    """Whether vector inputs take _vector_chunks (one 128-bit load per chunk): N % VEC == 0, and a vector input."""
    return "vector" in lowered.KINDS and row_n % (ACCESS_BITS // host.DTYPE_BITS[dtype]) == 0


def _lowered_compile_args(dtype: str, rank: int, vector_chunks: bool) -> tuple:
    """Fake inputs and outputs of lowered_launch: rows and outputs share x's shape symbols, vectors x's last one.

    With vector_chunks the N symbol promises N % VEC == 0 (the wrapper checks it on every call)."""
    vec = ACCESS_BITS // host.DTYPE_BITS[dtype]
    shape = [*(rt.dim() for _ in range(rank - 1)), rt.dim(vec if vector_chunks else 1)]
    inputs = [rt.tensor("uint8" if kept == "bool" else dtype,  # a mask: its bytes (host.lowered_views)
                        {"row": shape, "vector": shape[-1:], "scalar": (1,)}[kind], align=16 if kind != "scalar" else 1)
              for kind, kept in zip(lowered.KINDS, lowered.DTYPES)]
    outputs = [rt.tensor(dtype if kind == "input" else kind, shape) for kind in lowered.OUT_DTYPES]
    return (rt.STREAM, vector_chunks, *inputs, *outputs)


def _prepare_lowered(inputs, out):
    """A lowered signature's first call, or a refused one: host.py's checks, then the launcher (and the outputs)."""
    x = inputs[_X]
    dtype, outputs = host.lowered_operands(lowered, inputs, out, [x.shape] * len(lowered.OUTPUTS), True)
    if x.numel() > MAX_ELEMENTS:
        raise ValueError(f"{lowered.SOURCE}: {x.numel()} elements exceed the int32 index range of this kernel")
    rank, chunks = x.dim(), _vector_chunks_apply(dtype, x.shape[-1])
    return rt.compiled(_compiled, ("lowered", dtype, rank, chunks), lowered_launch,
                       lambda: _lowered_compile_args(dtype, rank, chunks)), outputs


def run_lowered(*inputs, out=None):
    """lowered.compute over x's elements, on the current CUDA stream: one output tensor, or a tuple of them.

    inputs in lowered.INPUTS order, the function's own ("row": x's shape, "vector": [N], "scalar": one element;
    a mask bool); `out` one tensor or a tuple/list in
    lowered.OUTPUTS order. The hot path is run()'s: a signature lookup (N % 8 picks the vector-input path),
    the contiguity checks the wrapper cannot make, and one TVM-FFI call."""
    if len(inputs) != len(lowered.INPUTS):
        _prepare_lowered(inputs, out)  # raises, in host.py's words
    inputs = host.lowered_views(lowered, inputs)
    x = inputs[_X]
    signature = ("lowered", x.dtype, x.dim(), len(inputs), x.shape[-1] % 8 if x.dim() else -1)
    launcher = _launches.get(signature)
    if launcher is None:
        launcher = _launches[signature] = _prepare_lowered(inputs, out)[0]
    outputs = host.lowered_outputs(out) if out is not None else tuple(
        torch.empty_like(x, dtype=d) for d in _LOWERED_OUT_DTYPES)
    if not (0 < x.numel() <= MAX_ELEMENTS and all(t.is_contiguous() for t in (*inputs, *outputs))):
        outputs = _prepare_lowered(inputs, out)[1]  # raises, in host.py's words, unless x is empty: nothing to do
    else:
        try:
            launcher(*inputs, *outputs)
        except (TypeError, ValueError):  # the wrapper refused the call before launching
            _prepare_lowered(inputs, out)  # host.py says why in the words every cell uses ...
            raise  # ... and the wrapper's own message stands if host.py finds nothing wrong
    return outputs[0] if len(outputs) == 1 else outputs


_LOWERED_OUT_DTYPES = tuple(host.out_dtypes(lowered.OUT_DTYPES)) if LOWERED else ()
_X = host.lowered_x(lowered) if LOWERED else 0  # x: the first row input, in the user's parameter order


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", op: str = OP,
                 dtype: str | None = None) -> str:
    """Compile run()'s launcher for sm_90a without a GPU (fake tensors, one shape symbol); write and return the PTX.

    One compile serves every size from SMALL_N up, and one every size below it (unroll_for): the case picks which;
    1-D is the rank it is compiled for. The lowered
    op compiles for the case's rank, and its N decides how vector inputs are read (see lowered_kernel)."""
    dtype = dtype or OP_SPEC["dtype"]
    if op == "lowered":  # the case's rank and N (N % VEC picks the vector-input path) are part of the compile
        dims = case["dims"] if case else [8192, 8192]
        chunks = _vector_chunks_apply(dtype, dims[-1])
        return rt.dump_ptx(lowered_launch, _lowered_compile_args(dtype, len(dims), chunks), out_dir,
                           f"lowered_{dtype}_rank{len(dims)}_{'chunks' if chunks else 'gather'}")
    unroll = unroll_for(op, case["vars"]["numel"]) if case else UNROLL[op]
    return rt.dump_ptx(elementwise_launch, _compile_args(op, dtype, 1, unroll), out_dir,
                       f"{op}_{dtype}" + ("" if unroll == UNROLL[op] else f"_u{unroll}"))


def describe(case: dict) -> dict:
    """Launch configuration of a case, for the plan and the report."""
    dtype = OP_SPEC["dtype"]
    vec = ACCESS_BITS // host.DTYPE_BITS[dtype]
    n = case["vars"]["numel"]
    unroll = lowered_unroll(lowered.KINDS) if LOWERED else unroll_for(OP, n)
    tile = THREADS * vec * unroll
    vectors = ""
    if LOWERED and "vector" in lowered.KINDS:
        vectors = ("; vector inputs [N] with one 128-bit load per chunk (N % VEC == 0)"
                   if _vector_chunks_apply(dtype, case["dims"][-1]) else "; vector inputs [N] by scalar gathers")
    return {
        "tile_elements": tile,
        "threads_per_cta": THREADS,
        "values_per_thread": f"{unroll} x {vec} ({unroll} 128-bit accesses per tensor)",
        "grid": [-(-n // tile), 1, 1],
        "grid_blocks": -(-n // tile),
        "data_movement": "global -> registers with 128-bit ld.global.v4, fp32 math, registers -> global with "
        "128-bit st.global.v4; the last CTA uses scalar predicated accesses; no shared memory" + vectors,
    }
