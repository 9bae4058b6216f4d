"""Elementwise V0 kernel in CuTe DSL for Hopper (sm_90a): one program applied to every element of its inputs.

Every op of this cell is a program: the built-in ones (add, mul, silu, gelu, relu, silu_mul) are the PyTorch
functions of tools/patterns/elementwise/programs.py, a user's op is their own function, and a bake traces either
into lowered.py (tests/lowered_examples/CONTRACT.md). This file is the data movement around it: a bandwidth kernel
in which the tensors are flattened to 1-D and cut into one tile per CTA of 128 threads, each thread owning UNROLL
128-bit vectors per input; every vector moves as one ld.global.v4 / st.global.v4 (a warp covers 512 contiguous
bytes), lowered.compute() runs on the fp32 values in registers and each result is rounded once to its output's
dtype. No shared memory; only the last CTA of the grid pays for predicated scalar accesses at the tail.

What it computes
    out = f(x, y, ...) for every element: row inputs of x's shape (any rank, contiguous, read as 1-D), [N] vectors
    broadcast over x's rows (N = x.shape[-1]: a bias), scalars of one element and bool masks (lowered.KINDS);
    loads in bf16/fp16/fp32, math in fp32, one rounding per output (OUT_DTYPES: x's dtype or fp32). gelu is the
    exact erf form (torch's default, ``approximate='none'``), not the tanh one.

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
    - ``UNROLL`` (unroll_for): the row inputs share VECTORS_IN_FLIGHT = 4 128-bit vectors per thread, loaded
      before the first use (x alone: 4, x and y: 2 each), so more inputs do not cost occupancy. Little's law
      sets the bytes that must be in flight: bandwidth x latency (4.8 TB/s x ~600 ns ~ 2.9 MB, ~22 KiB per SM
      of 132); a 128-thread CTA with 4 vectors in flight holds 8 KiB and 16 CTAs fit on an SM (2048 threads):
      128 KiB per SM, enough. The sweep of 2, 4 and 8 vectors per input (within 0.3% of each other for add at
      2^28 elements; 8 cost silu_mul 10%) is in benchmarks/2026-11-30-h200-elementwise.md.
    - Small tensors (fewer than ``SMALL_N`` = 2^24 elements) take one vector per thread: there the kernel is
      latency-bound, and what counts is spreading the few bytes over as many SMs as possible with one
      load-compute-store round trip per thread (2^12 elements at 4 vectors per thread would be one CTA).
    - ``THREADS = 128``: 4 warps, small CTAs so that many of them share an SM.

Predication (sizes that are not a multiple of the tile, or even of VEC)
    Every CTA but the last one covers a full tile and runs the fast path with no predicates at all.
    The last CTA (``(bidx + 1) * tile > n``) takes the guarded path: an identity tensor gives each
    owned value its global coordinate, ``elem_less(coord, n)`` turns that into a per-element
    predicate, and the loads and stores become scalar and guarded. Out-of-range values are never
    read nor written, so no padding is needed and any n >= 1 works. Only one CTA pays for this.

Data movement
    global -> registers (128-bit, coalesced) -> fp32 compute() -> registers -> global. No shared memory:
    nothing is reused, so staging through SMEM or TMA would only add latency.

        row inputs  --128-bit loads, the TV layout above-->  (VEC, UNROLL) fragments  --.to(fp32)-->  compute()
        vector inputs: flat element g reads vec[g % N]                                                    |
        outputs     <--128-bit stores--  fragments rounded once to each output's dtype  <-----------------'

    - Vector inputs: a thread's VEC-chunk starts at a flat g0 that is a multiple of VEC, so when N % VEC == 0
      the chunk is vec[g0 % N .. + VEC] contiguously: one 128-bit load per chunk, as for a row (the N symbol of
      the compile promises the divisibility; the wrapper checks it). Otherwise each value is a scalar gather
      vec[g % N], correct for any N. The choice is part of the compile key (run() keys on N % 8).
    - The tail CTA: per-element predicates, scalar guarded loads (gathers for vectors) and stores. One compile
      serves every shape of a rank and size class; run() returns one tensor, or a tuple for several outputs,
      and takes `out` as a tensor or a tuple/list in OUTPUTS order.

Interface (the same in every kbaseline cell):
    run(*inputs, out=None)      -> out         run on CUDA tensors; compiles and caches on first use
    compile_only(case, out_dir) -> PTX text     compile for sm_90a with no GPU (fake tensors)
    describe(case)              -> dict         tile, threads, grid and data movement, for the report
"""

from __future__ import annotations

import math
import os

import cutedsl_runtime as rt  # first: it sets CUTE_DSL_ARCH=sm_90a before cutlass is imported
import host
import lowered  # the op as a program, generated at the workspace root (tests/lowered_examples/CONTRACT.md)

import cutlass
import cutlass.cute as cute
import torch

OP_SPEC = host.OP
THREADS = 128
VECTORS_PER_INPUT = 2  # 128-bit vectors a thread loads per row input before the first use ...
VECTORS_IN_FLIGHT = 4  # ... and at most this many, all row inputs together
SMALL_N = 1 << 24  # below this many elements every thread moves one vector per input (unroll_for)
ACCESS_BITS = 128
# Cache hints for the 128-bit accesses (CopyG2ROp / CopyR2GOp keywords). Empty = plain ld/st.global; the
# ld.global.nc, streaming, evict-first and no-allocate variants are compared in the benchmark file above.
LOAD_HINTS = {}
STORE_HINTS = {}


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
def elementwise_kernel(
    n: cutlass.Int32, row_n: cutlass.Int32, vec: cutlass.Constexpr[int], unroll: cutlass.Constexpr[int],
    vector_chunks: cutlass.Constexpr[bool], tensors,
):
    """The data movement around lowered.compute() (module docstring): tensors = the inputs, then the outputs."""
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
        # Tail tile: scalar, predicated accesses.
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
def elementwise_launch(stream, vector_chunks: cutlass.Constexpr[bool], unroll: cutlass.Constexpr[int], *tensors):
    """Host side: rows and outputs as 1-D tensors of n elements (vectors stay [N]); one CTA per tile."""
    x = tensors[_X]
    vec = ACCESS_BITS // x.element_type.width
    tile = THREADS * vec * unroll
    n = cute.size(x.shape)
    row_n = x.shape[len(x.shape) - 1]
    kinds = (*lowered.KINDS, *lowered.OUTPUTS)
    tensors = rt.masks_as_bytes(tensors, lowered.DTYPES)  # a bool mask: its bytes
    flat = [cute.make_tensor(t.iterator, cute.make_layout(n)) if kind == "row" else t for t, kind in zip(tensors, kinds)]
    elementwise_kernel(n, row_n, vec, unroll, vector_chunks, tuple(flat)).launch(
        grid=[(n + tile - 1) // tile, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


_compiled: dict = {}  # (dtype, rank, vector chunks, unroll) -> compiled launcher: one compile serves every shape of that rank
_launches: dict = {}  # run()'s signature (dtype, rank, inputs, N % 8, small) -> compiled launcher: the hot path
MAX_ELEMENTS = 2**31 - THREADS * 8 * VECTORS_IN_FLIGHT  # int32 element offsets, with the last tile's overrun
_X = host.lowered_x(lowered)  # x: the first row input, in the function's parameter order
_ROWS = max(1, list(lowered.KINDS).count("row"))
_N_INPUTS = len(lowered.INPUTS)
_CONTIGUOUS = torch.Tensor.is_contiguous
_LIKES = host.empty_likes(lowered.OUT_DTYPES)  # each output as torch.empty_like of x makes it
_LIKE, _LIKES_MANY = _LIKES[0], len(_LIKES) > 1  # run() makes one output with no list around it
_VECTOR_INPUTS = "vector" in lowered.KINDS  # N % 8 is in run()'s signature only where it picks a path
BOOL_MASKS = True  # a bool mask reaches a launcher compiled on bool as it is, not as a uint8 view made per call
# (the reduction cell's knob of the same name says why and where it was measured)


def _viewer():
    """run()'s view of the inputs that need one (None: none does): a 0-d scalar as [1], a per-row input as its M
    values, a bool mask as its bytes unless BOOL_MASKS (the launcher reads its bytes either way: rt.masks_as_bytes)."""
    return host.lowered_viewer(lowered, mask_bytes=not BOOL_MASKS)


_VIEWS = _viewer()


def unroll_for(numel: int) -> int:
    """128-bit vectors per thread and row input: VECTORS_PER_INPUT, with the row inputs sharing at most
    VECTORS_IN_FLIGHT; or 1 below SMALL_N elements, where a deep tile would leave most SMs idle and put much of the
    tensor in the scalar tail tile."""
    return 1 if numel < SMALL_N else max(1, min(VECTORS_PER_INPUT, VECTORS_IN_FLIGHT // _ROWS))


def _vector_chunks_apply(dtype: str, row_n: int) -> bool:
    """Whether vector inputs take _vector_chunks (one 128-bit load per chunk): N % VEC == 0, and a vector input."""
    return "vector" in lowered.KINDS and row_n % (ACCESS_BITS // host.DTYPE_BITS[dtype]) == 0


def _compile_args(dtype: str, rank: int, vector_chunks: bool, unroll: int) -> tuple:
    """Fake inputs and outputs of elementwise_launch: rows and outputs share x's shape symbols, vectors x's last one.

    With vector_chunks the N symbol promises N % VEC == 0 (the wrapper checks it on every call)."""
    vec = ACCESS_BITS // host.DTYPE_BITS[dtype]
    shape = [*(rt.dim() for _ in range(rank - 1)), rt.dim(vec if vector_chunks else 1)]
    inputs = [rt.tensor(("bool" if BOOL_MASKS else "uint8") if kept == "bool" else dtype,  # a mask: read as bytes
                        {"row": shape, "vector": shape[-1:], "scalar": (1,)}[kind], align=16 if kind != "scalar" else 1)
              for kind, kept in zip(lowered.KINDS, lowered.DTYPES)]
    outputs = [rt.tensor(dtype if kind == "input" else kind, shape) for kind in lowered.OUT_DTYPES]
    return (rt.STREAM, vector_chunks, unroll, *inputs, *outputs)


def _prepare(inputs, out):
    """A signature's first call, or a refused one: host.py's checks, then the launcher (and the outputs)."""
    x = inputs[_X]
    dtype, outputs = host.lowered_operands(lowered, inputs, out, [x.shape] * len(lowered.OUTPUTS), True)
    if x.numel() > MAX_ELEMENTS:
        raise ValueError(f"{lowered.SOURCE}: {x.numel()} elements exceed the int32 index range of this kernel")
    rank, chunks, unroll = x.dim(), _vector_chunks_apply(dtype, x.shape[-1]), unroll_for(x.numel())
    return rt.compiled(_compiled, (dtype, rank, chunks, unroll), elementwise_launch,
                       lambda: _compile_args(dtype, rank, chunks, unroll)), outputs


def run(*inputs, out=None):
    """lowered.compute over x's elements, on the current CUDA stream: one output tensor, or a tuple of them.

    inputs in lowered.INPUTS order, the function's own ("row": x's shape, "vector": [N], "scalar": one element;
    a mask bool); `out` one tensor or a tuple/list in lowered.OUTPUTS order. The hot path: a signature lookup
    (N % 8 picks the vector-input path, the size class the unroll), the contiguity checks the wrapper cannot make,
    and one TVM-FFI call, whose wrapper checks dtypes, shapes and alignment; host.py runs on a signature's first
    call and when the wrapper refuses one. Each step is paid on every call: one output is made and returned with
    no list around it, and N % 8 is read only by a program with vector inputs (add's run(), Python alone on a CPU:
    2.31 -> 1.93 us, the hand-written add it replaced 1.86; benchmarks/2026-12-06-h100-one-path-again.md)."""
    if len(inputs) != _N_INPUTS:
        _prepare(inputs, out)  # raises, in host.py's words
    if _VIEWS:
        inputs = _VIEWS(inputs)
    x = inputs[_X]
    numel, rank = x.numel(), x.dim()
    signature = (x.dtype, rank, x.shape[-1] % 8 if _VECTOR_INPUTS and rank else -1, numel < SMALL_N)
    launcher = _launches.get(signature)
    if launcher is None:
        launcher = _launches[signature] = _prepare(inputs, out)[0]
    if out is None:  # new outputs are x's layout, checked with x's
        outputs = [like(x) for like in _LIKES] if _LIKES_MANY else _LIKE(x)
        ready = all(map(_CONTIGUOUS, inputs))
    else:
        outputs = host.lowered_outputs(out)
        ready = all(map(_CONTIGUOUS, inputs)) and all(map(_CONTIGUOUS, outputs))
    if not (ready and 0 < numel <= MAX_ELEMENTS):
        outputs = _prepare(inputs, out)[1]  # raises, in host.py's words, unless x is empty: nothing to do
        return outputs[0] if len(outputs) == 1 else outputs
    try:
        if out is None and not _LIKES_MANY:  # one output, made above
            launcher(*inputs, outputs)
            return outputs
        launcher(*inputs, *outputs)
    except (TypeError, ValueError):  # the wrapper refused the call before launching
        masks = host.bool_masks(lowered, inputs) if BOOL_MASKS else None  # bytes: the launcher takes bool
        if masks is not None:
            return run(*masks, out=out)
        _prepare(inputs, out)  # host.py says why in the words every cell uses ...
        raise  # ... and the wrapper's own message stands if host.py finds nothing wrong
    return outputs[0] if len(outputs) == 1 else outputs


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", dtype: str | None = None) -> str:
    """Compile run()'s launcher for sm_90a without a GPU (fake tensors, one shape symbol per dim); write and return
    the PTX. The case's rank, N (N % VEC picks the vector-input path) and size class (unroll_for) pick the
    compile, as run() would for it."""
    dtype = dtype or OP_SPEC["dtype"]
    dims = case["dims"] if case else [8192, 8192]
    chunks, unroll = _vector_chunks_apply(dtype, dims[-1]), unroll_for(math.prod(dims))
    return rt.dump_ptx(elementwise_launch, _compile_args(dtype, len(dims), chunks, unroll), out_dir,
                       f"{OP_SPEC['op']}_{dtype}_rank{len(dims)}_u{unroll}{'_chunks' if chunks else ''}")


def describe(case: dict) -> dict:
    """Launch configuration of a case, for the plan and the report."""
    dtype = OP_SPEC["dtype"]
    vec = ACCESS_BITS // host.DTYPE_BITS[dtype]
    n = case["vars"]["numel"]
    unroll = unroll_for(n)
    tile = THREADS * vec * unroll
    vectors = ""
    if "vector" in lowered.KINDS:
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
