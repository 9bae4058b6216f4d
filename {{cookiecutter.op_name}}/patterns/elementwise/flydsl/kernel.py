"""Elementwise kernel in FlyDSL for AMD CDNA3 (gfx942) and CDNA4 (gfx950): add, mul, silu, gelu, relu, silu_mul,
and the user's own elementwise op (lowered.py, see "Your own op").

A bandwidth kernel: each element is read once and written once, so the only goal is to stream bytes at HBM
speed. The tensor is viewed as 1-D and cut into workgroup tiles of 256 lanes (4 waves of 64) x UNROLL
vectors of 128 bits; every lane moves its vectors HBM -> VGPRs -> HBM with buffer_load/store_dwordx4,
does the math in fp32 and rounds once. No LDS, no barriers: latency is hidden by the UNROLL loads each
lane issues up front and by the other resident waves. The last, partial tile switches to one-element
accesses and lets the buffer descriptor's range check drop everything past the end, so any size works.

What it computes
    out[i] = f(x[i])  or  f(x[i], y[i])  for add, mul, silu, gelu, relu, silu_mul on a contiguous tensor
    (flattened to 1-D), with the inputs loaded in bf16/fp16/fp32, the math done in fp32, and the result
    rounded once to the output dtype. gelu is the exact erf form (torch's default), not the tanh one.

Why this shape (roofline, peaks from reference/gpu_specs.json)
    An elementwise op does 1-5 FLOP per 4-12 bytes moved. The ridge point is ~247 FLOP/byte on gfx942
    (MI300X: 1307 dense bf16 TFLOP/s / 5.3 TB/s) and ~315 on gfx950 (MI355X: 2517 / 8.0), two orders of
    magnitude to the right: the floor is bytes / HBM bandwidth, and every design choice below is about
    reaching it: each byte moved once, in wide coalesced accesses, with enough of them in flight.

CDNA facts it rests on (contrast: the CuTe DSL cell for Hopper)
    - Waves are 64 lanes wide (a CUDA warp is 32). A 256-thread workgroup is 4 waves, one per SIMD of a CU.
    - Grid: one tile per workgroup. The representative shapes (tens to hundreds of millions of elements)
      give thousands of workgroups, tens per CU (op.json's compute_units), so every CU stays busy to the end.
    - LDS is unused: nothing is reused, so staging through LDS would only add latency.
    - Registers: 512 VGPRs per SIMD lane (arch + accumulation VGPRs), at most 8 waves per SIMD, so up to 64
      VGPRs per lane keeps all 8 resident. The compiled counts per op are in benchmarks/flydsl_compile.md.
    - Memory: buffer accesses. A buffer access goes through a 128-bit resource descriptor (base address,
      num_records = size in bytes, format flags) held in 4 scalar registers, plus a per-lane 32-bit byte
      offset (hence the < 2 GiB limit per tensor). One VEC of 16 bytes per lane is one `buffer_load_dwordx4`
      / `buffer_store_dwordx4` (VEC = 8 bf16/fp16 or 4 fp32); a wave moves 64 x 16 = 1 KiB per instruction,
      fully coalesced.
    - Out of bounds: the hardware checks every buffer access against num_records: an out-of-range load
      returns 0 and an out-of-range store is dropped, with no branch and no per-lane predicate. dwordx2/x4
      accesses are checked per 32-bit dword (LLVM AMDGPUUsage, "relaxed buffer OOB mode"), so a 16-byte
      access that straddles the bound is exact for fp32 (one element per dword) but not for bf16/fp16, whose
      last dword can hold one element in range and one out. Hence the two paths below.

Tiling and thread/value layout
    The tensor is cut into workgroup tiles of ``THREADS * VEC * UNROLL`` elements; inside a tile::

        tv = (THREADS, VEC) : (VEC, 1), repeated UNROLL times at stride THREADS*VEC

        u = 0:  | T0: v0..v7 | T1: v0..v7 | ... | T255: v0..v7 |   <- one dwordx4 per lane, 4 KiB per tile row
        u = 1:  | T0: v0..v7 | T1: v0..v7 | ... | T255: v0..v7 |

    - UNROLL: dwordx4 accesses per lane per tensor issued before the first use: 4 for add/mul (no math), 2 for
      the ops with transcendental math (fewer live registers).
    - Bytes in flight (Little's law): per workgroup per input 256 x 16 B x UNROLL = 8-16 KiB; with up to 8
      workgroups (32 waves) resident per CU that is 64-128 KiB per CU. Covering DRAM latency needs
      bandwidth x latency / CUs: 5.3 TB/s x ~1 us / 304 CUs = ~17 KiB (gfx942) to 8 TB/s x ~1 us / 256 CUs
      = ~31 KiB (gfx950), with ~1 us an assumed loaded latency. These are design estimates, not timings:
      the starting point for tuning UNROLL and the workgroup size on the GPU.

Two paths, chosen per workgroup (a uniform branch: every lane of a workgroup takes the same side)
    - Full tile (all but the last workgroup): dwordx4 buffer loads and stores, no predicates.
    - The last, partial tile: the same layout, but one element per buffer access (`buffer_load_ushort` /
      `buffer_store_short` for 16-bit types, `_dword` for fp32), and the num_records bound does the
      predication: elements past n read as 0 and are never written. Any n >= 1 works, no padding needed.
      For fp32, LLVM merges the tail's 4 consecutive dword accesses back into dwordx4: still exact, because
      each dword is range-checked on its own.

Data movement: HBM -> VGPRs (128-bit buffer loads) -> fp32 math -> VGPRs -> HBM (128-bit buffer stores).
No LDS, no barriers, no software pipeline: each lane's loads are independent, and the latency is hidden by
the UNROLL loads per lane and by the other resident waves.

Your own op: the lowered path (op.json "op": "lowered")
    The template traces the user's PyTorch function into lowered.py (workspace root): INPUTS in the user's
    parameter order with a KIND each ("row": x's shape; "vector": [N], N = x.shape[-1], broadcast over the rows;
    "scalar": one element, a runtime scalar) and a DTYPE ("float": x's dtype; "bool": a mask), OUTPUTS (all
    "row" here) with OUT_DTYPES, and compute(*values, n, reduce) of straight-line fp32 math (Python operators and
    pointwise.py's `pw.` functions). x, whose shape the rows and outputs take, is the first "row" input
    (host.lowered_x), not necessarily the first input. This cell keeps its data movement and lets compute()
    replace _apply:

        per input:   the same tile and chunks as above; a row input is one vec-wide buffer load per chunk
                     (full tile) or one element per load (tail); a bool mask is launched as its bytes (uint8,
                     host.lowered_views) and loaded the same way, vec bytes per access (buffer_load_dwordx2
                     beside a bf16 x's dwordx4), then converted to 0.0 / 1.0 like any value (compute() compares
                     it itself); a scalar input is one element loaded once per lane and passed to compute() as
                     an fp32 scalar, not a vector; a vector input's chunk u of a lane starts at
                     flat element g0 = (j0 + u*THREADS) * vec and holds vec[g % N] for g = g0 .. g0+vec-1:
                     when N % vec == 0 (and the vector is 16-byte aligned) g0 % N is a multiple of vec and the
                     chunk never wraps, so it is one vec-wide load of vector (g0 % N) / vec, in range on the tail
                     too; otherwise one element per load at (g0 + e) % N
        compute:     lowered.compute(*fp32 vectors (scalars for scalar inputs), n = N, None), traced under
                     fastmath "afn" (flydsl_lowered)
        per output:  converted to its OUT_DTYPES (x's dtype, fp32, or a quantizer's int8 / fp8 e4m3fn, the
                     function's final .to(): int8 truncates toward zero, v_cvt_i32_f32; fp8 rounds to nearest even
                     through v_cvt_pk_fp8_f32, OCP bytes on gfx942 too: flydsl_lowered.e4m3fn_bytes), stored like
                     a row input (vec-wide: an int8 / fp8 output beside a bf16 x is buffer_store_dwordx2; or per
                     element on the tail)

    vec is 128 bits of the widest element among the row-wise tensors (bf16 in, fp32 out: vec 4). The launcher
    has flydsl_lowered.SLOTS tensor slots (inputs, then outputs), the tile count from x's slot; UNROLL is 2, as for
    the built-in math ops.
    run(*inputs, out=None) returns a tensor for one output, a tuple for several (`out` likewise).

Host side: argument checks come from host.py, op.json, the targets and compile-only from flydsl_runtime.py.
Compiled to gfx942/gfx950 ISA on a CPU; it has not run on AMD hardware.

Interface (the same in every kbaseline cell):
    run(*inputs, out=None)      -> out         run on ROCm torch tensors ("cuda" device); compiles once per (op, dtype)
                                               and prepares a launch once per argument signature
    compile_only(case, out_dir) -> ISA text    compile for op.json's target (gfx942 | gfx950) with no GPU, in a
                                               child process (flydsl_runtime.py, tools/rocm_env.py); writes
                                               kernel_<op>_<dtype>.<gfx>.s (lowered: kernel_lowered_<dtype>
                                               [_gather].<gfx>.s)
    describe(case)              -> dict         tile, threads, grid and data movement, for the report
"""

from __future__ import annotations

import os

import flydsl.compiler as flyc
import flydsl.expr as fx
import flydsl_lowered as lw
import flydsl_runtime as rt
import host
import torch
from flydsl.expr import const_expr, range_constexpr
from flydsl_runtime import DTYPE_BYTES, MAX_BYTES, WAVE

OP_SPEC = host.OP
OP = OP_SPEC["op"]

THREADS = 256  # 4 waves of 64 lanes
UNROLL = {"add": 4, "mul": 4, "silu": 2, "gelu": 2, "relu": 2, "silu_mul": 2}  # dwordx4 accesses per lane per tensor
ACCESS_BITS = 128
BINARY_OPS = ("add", "mul", "silu_mul")


def _silu(x):
    # x / (1 + e^-x) with approximate exp and reciprocal ('afn' lets LLVM use v_exp_f32 and v_rcp_f32, ~1 ulp):
    # the IEEE fp32 division is a multi-instruction v_div_scale / v_div_fmas / v_div_fixup sequence.
    with fx.fastmath("afn"):
        return x / (1.0 + fx.exp(-x))


def _apply(op: str, a, b):
    """The op, on fp32 register vectors (a trace-time choice: only the chosen op is compiled)."""
    if op == "add":
        return a + b
    if op == "mul":
        return a * b
    if op == "silu":
        return _silu(a)
    if op == "silu_mul":
        return _silu(a) * b
    if op == "relu":
        return (a < 0.0).select(0.0, a)  # `a < 0` is false for NaN: NaN propagates, as in torch
    if op == "gelu":
        return 0.5 * a * (1.0 + fx.erf(a * 0.7071067811865476))
    raise ValueError(f"unknown elementwise op {op!r}")


def _tile_copy(op_bits: int, dtype, vec: int, tid):
    """Copy atom of `op_bits` per access, and this lane's slice of the (THREADS, VEC) : (VEC, 1) layout."""
    atom = fx.make_copy_atom(fx.rocdl.BufferCopy(op_bits), dtype)
    tiled = fx.make_tiled_copy(atom, fx.make_layout((THREADS, vec), (vec, 1)), (THREADS * vec,))
    return atom, tiled.get_slice(tid)


def _tile_op(gA, gB, gC, op_bits: int, dtype, vec: int, tid, op: str):
    """Load this lane's slice of A (and B), apply the op in fp32, store to C, with `op_bits` per access."""
    atom, thr = _tile_copy(op_bits, dtype, vec, tid)
    tA, tB, tC = thr.partition_S(gA), thr.partition_S(gB), thr.partition_D(gC)
    rA, rB, rC = fx.make_fragment_like(tA), fx.make_fragment_like(tB), fx.make_fragment_like(tC)
    fx.copy(atom, tA, rA)
    binary = op in BINARY_OPS
    if fx.const_expr(binary):
        fx.copy(atom, tB, rB)
    b = rB.load().to(fx.Float32) if binary else None
    rC.store(_apply(op, rA.load().to(fx.Float32), b).to(dtype))
    fx.copy(atom, rC, tC)


@flyc.kernel
def elementwise_kernel(
    A: fx.Tensor, B: fx.Tensor, C: fx.Tensor,
    vec: fx.Constexpr[int], unroll: fx.Constexpr[int], op: fx.Constexpr[str],
):
    tid = fx.thread_idx.x
    bid = fx.block_idx.x
    tile = THREADS * vec * unroll
    n = fx.get_scalar(fx.size(A.shape))
    dtype = A.element_type

    # Buffer views: the descriptor's num_records is the tensor's size in bytes (max_size=False), the
    # bound every access below is checked against.
    gA = fx.zipped_divide(fx.rocdl.make_buffer_tensor(A, max_size=False), (tile,))[None, bid]
    gB = fx.zipped_divide(fx.rocdl.make_buffer_tensor(B, max_size=False), (tile,))[None, bid]
    gC = fx.zipped_divide(fx.rocdl.make_buffer_tensor(C, max_size=False), (tile,))[None, bid]

    if (bid + 1) * tile <= n:
        # Full tile: each lane's (VEC, UNROLL) values, one 128-bit access per VEC.
        _tile_op(gA, gB, gC, ACCESS_BITS, dtype, vec, tid, op)
    else:
        # Last, partial tile: same layout, one element per access; num_records zeroes and drops the rest.
        _tile_op(gA, gB, gC, ACCESS_BITS // vec, dtype, vec, tid, op)


@flyc.jit
def elementwise_launch(
    A: fx.Tensor, B: fx.Tensor, C: fx.Tensor,
    vec: fx.Constexpr[int], unroll: fx.Constexpr[int], op: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """Host side: one workgroup of THREADS lanes per tile of THREADS * vec * unroll elements."""
    tile = THREADS * vec * unroll
    n = fx.get_scalar(fx.size(A.shape))
    elementwise_kernel(A, B, C, vec, unroll, op).launch(
        grid=((n + tile - 1) // tile, 1, 1), block=(THREADS, 1, 1), stream=stream,
    )


# ------------------------------------------------------------------------------------------------
# The lowered op (op.json "op": "lowered"): the user's compute() between this cell's loads and stores
# ------------------------------------------------------------------------------------------------

LOWERED_UNROLL = 2  # dwordx4 accesses per lane per tensor, as for the ops with transcendental math


def _load_lowered(t, kind: str, j0, cols, vec: int, unroll: int, vec_fast: bool, full: bool):
    """This lane's (unroll, vec) values of input t as an fp32 vector; chunk u is flat elements (j0 + u*THREADS)*vec.

    row:    one vec-wide buffer load per chunk on a full tile; on the tail one element per load, num_records
            zeroing what lies past the end.
    vector: element g's value is t[g % cols]. With vec_fast (cols % vec == 0, t 16-byte aligned) a chunk
            starts at a multiple of vec and never wraps, so it is t's vector (g0 % cols) / vec: one vec-wide
            load at any tile (always in range); otherwise one element per load at (g0 + e) % cols."""
    dtype = t.element_type
    r, v = lw.regs(vec, unroll, dtype)
    wide = fx.make_copy_atom(fx.rocdl.BufferCopy(vec * dtype.width), dtype)
    one = fx.make_copy_atom(fx.rocdl.BufferCopy(dtype.width), dtype)
    r1 = fx.logical_divide(r, fx.make_layout(1, 1))
    for u in range_constexpr(unroll):
        j = j0 + u * THREADS
        if const_expr(kind == "row"):
            if const_expr(full):
                fx.copy(wide, lw.vectors(t, vec)[None, j], v[None, u])
            else:
                for e in range_constexpr(vec):
                    fx.copy(one, lw.vectors(t, 1)[None, j * vec + e], r1[None, u * vec + e])
        elif const_expr(vec_fast):
            fx.copy(wide, lw.vectors(t, vec)[None, (j * vec) % cols // vec], v[None, u])
        else:
            for e in range_constexpr(vec):
                fx.copy(one, lw.vectors(t, 1)[None, (j * vec + e) % cols], r1[None, u * vec + e])
    return r.load().to(fx.Float32)


def _store_lowered(t, value, j0, vec: int, unroll: int, full: bool):
    """Convert value (this lane's fp32 chunks) to t's dtype (x's, fp32, a quantizer's int8 / fp8: lw.to_storage) and
    store it: vec-wide (int8 / fp8 beside a bf16 x: 8 bytes, dwordx2), or per element on the tail."""
    dtype = t.element_type
    r, v = lw.regs(vec, unroll, dtype)
    r.store(lw.to_storage(value, dtype))
    r1 = fx.logical_divide(r, fx.make_layout(1, 1))
    wide = fx.make_copy_atom(fx.rocdl.BufferCopy(vec * dtype.width), dtype)
    one = fx.make_copy_atom(fx.rocdl.BufferCopy(dtype.width), dtype)
    for u in range_constexpr(unroll):
        j = j0 + u * THREADS
        if const_expr(full):
            fx.copy(wide, v[None, u], lw.vectors(t, vec)[None, j])
        else:
            for e in range_constexpr(vec):
                fx.copy(one, r1[None, u * vec + e], lw.vectors(t, 1)[None, j * vec + e])


def _lowered_tile(tensors, cols, vec: int, unroll: int, vec_fast: bool, bid, tid, full: bool):
    """Load every input's chunks (a scalar input's one value), run the user's compute in fp32, store every output
    (slots: inputs, outputs)."""
    f = lw.facts()
    j0 = bid * (THREADS * unroll) + tid  # this lane's first vector; chunk u is vector j0 + u*THREADS
    values = [lw.scalar(t) if kind == "scalar" else _load_lowered(t, kind, j0, cols, vec, unroll, vec_fast, full)
              for t, kind in zip(tensors, f.kinds)]
    outs = lw.compute(values, fx.Float32(cols), None)
    for t, value in zip(tensors[len(f.kinds):], outs):
        _store_lowered(t, value, j0, vec, unroll, full)


@flyc.kernel
def lowered_kernel(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, cols: fx.Int32,
    vec: fx.Constexpr[int], unroll: fx.Constexpr[int], vec_fast: fx.Constexpr[bool], key: fx.Constexpr[str],
):
    """The lowered op on one tile: the full-tile / tail split of elementwise_kernel, the user's math."""
    tid = fx.thread_idx.x
    bid = fx.block_idx.x
    tile = THREADS * vec * unroll
    tensors = [T0, T1, T2, T3, T4, T5, T6, T7]
    n = fx.get_scalar(fx.size(tensors[lw.facts().x].shape))  # x's elements
    if (bid + 1) * tile <= n:
        _lowered_tile(tensors, cols, vec, unroll, vec_fast, bid, tid, True)
    else:
        _lowered_tile(tensors, cols, vec, unroll, vec_fast, bid, tid, False)


@flyc.jit
def lowered_launch(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, cols: fx.Int32,
    vec: fx.Constexpr[int], unroll: fx.Constexpr[int], vec_fast: fx.Constexpr[bool], key: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """Host side of the lowered op: one workgroup per tile of THREADS * vec * unroll elements of x (the slot of
    the first row input)."""
    tile = THREADS * vec * unroll
    n = fx.get_scalar(fx.size([T0, T1, T2, T3, T4, T5, T6, T7][lw.facts().x].shape))
    lowered_kernel(T0, T1, T2, T3, T4, T5, T6, T7, cols, vec, unroll, vec_fast, key).launch(
        grid=((n + tile - 1) // tile, 1, 1), block=(THREADS, 1, 1), stream=stream,
    )


_compiled: dict = {}  # (op, dtype) -> CompiledFunction; shapes are dynamic, so one compile serves every n
_launches: dict = {}  # run()'s signature (op, dtypes, devices) -> rt.Launch, for the hot path


def _constexprs(op: str, dtype: str) -> tuple[int, int, str]:
    return ACCESS_BITS // 8 // DTYPE_BYTES[dtype], UNROLL[op], op


def _compile_args(op: str, dtype: str) -> tuple:
    """What run() and compile_only compile: 1-D CPU placeholders for A, B, C (n is a runtime value), the constexprs."""
    x = rt.placeholder(dtype, THREADS * 8 * 4)
    return (x, x.clone(), x.clone(), *_constexprs(op, dtype))


def _prepare(op: str, inputs, out):
    """A signature's first call, or a refused one: host.py's checks, then the launch for this signature.

    Its facts: the element count a tensor must stay under (its bytes under 2 GiB: 32-bit buffer offsets)."""
    n_inputs = 2 if op in BINARY_OPS else 1
    dtype, out = host.elementwise_operands(op, inputs, out, n_inputs, "dwordx4 accesses")
    x = inputs[0]
    if x.numel() * x.element_size() >= MAX_BYTES:
        raise ValueError(f"{op}: {x.numel()} elements exceed the 2 GiB range of a buffer descriptor")
    if len({t.get_device() for t in (*inputs, out)}) != 1:
        raise ValueError(f"{op}: inputs and out must be on one GPU")
    fn = rt.compiled(_compiled, (op, dtype), elementwise_launch, lambda: _compile_args(op, dtype))
    return rt.Launch(op, fn, _constexprs(op, dtype), x.get_device(), MAX_BYTES // x.element_size())


def _lowered_constexprs(vec: int, vec_fast: bool) -> tuple:
    return vec, LOWERED_UNROLL, vec_fast, lw.facts().key


def _lowered_compile_args(in_dtypes, out_dtypes, vec: int, vec_fast: bool) -> tuple:
    """What run() and compile_only compile for the lowered op: 1-D CPU placeholders in the tensor slots, cols."""
    tensors = [rt.placeholder(d, THREADS * 8 * 4) for d in (*in_dtypes, *out_dtypes)]
    return (*lw.slots(tensors), 1, *_lowered_constexprs(vec, vec_fast))


def _prepare_lowered(inputs, out):
    """A lowered signature's first call, or a refused one: the checks, the variant, the launch.

    Its facts: (element limit under 2 GiB, the outputs' torch dtypes)."""
    f = lw.facts()
    if set(f.outputs) != {"row"}:
        raise ValueError(f"lowered: the elementwise cell writes 'row' outputs only, lowered.py has {f.outputs}")
    host.check_count(f.module.SOURCE, inputs, len(f.inputs))
    _, outs = host.lowered_operands(f.module, inputs, out, [inputs[f.x].shape] * len(f.outputs), rows_contiguous=True)
    x = inputs[f.x]
    lw.check_buffer_range(inputs)
    cols = x.shape[-1]
    vec = lw.ACCESS_BYTES // lw.widest_bytes((*(inputs[i] for i in f.loaded), *outs))
    vec_fast = cols % vec == 0  # host.py had every tensor on a 16-byte boundary
    dtypes = [lw.dtype_name(t) for t in (*inputs, *outs)]
    key = ("lowered", *dtypes, vec, vec_fast)
    fn = rt.compiled(_compiled, key, lowered_launch,
                     lambda: _lowered_compile_args(dtypes[:len(inputs)], dtypes[len(inputs):], vec, vec_fast))
    limit = MAX_BYTES // max(t.element_size() for t in (*inputs, *outs))
    return rt.Launch("lowered", fn, _lowered_constexprs(vec, vec_fast), x.get_device(),
                     (limit, tuple(t.dtype for t in outs)))


def _run_lowered(inputs, out):
    """The lowered op: run(*inputs, out=None) -> one tensor, or a tuple for several outputs (OUTPUTS order).

    inputs in lowered.INPUTS order, the function's own (x the first row input); a mask bool, a scalar one element."""
    f = lw.facts()
    if len(inputs) != len(f.kinds):
        _prepare_lowered(inputs, out)  # raises, in host.py's words
    inputs = host.lowered_views(f.module, inputs)  # a mask as its bytes, a 0-d scalar as [1]: free views
    x = inputs[f.x]
    vectors = tuple(t.data_ptr() & 15 for t, kind in zip(inputs, f.kinds) if kind == "vector")  # refused
    signature = (tuple((t.dtype, t.get_device()) for t in inputs), x.shape[-1] if x.dim() else None, vectors,
                 None if out is None else len(out) if isinstance(out, (tuple, list)) else 1)
    launch = _launches.get(signature)
    if launch is None:
        launch = _launches[signature] = _prepare_lowered(inputs, out)
    limit, out_dtypes = launch.facts
    if out is None:
        outs = tuple(torch.empty(x.shape, dtype=d, device=x.device) for d in out_dtypes)
    else:
        outs = (out,) if isinstance(out, torch.Tensor) else tuple(out)
    if not (0 < x.numel() < limit and len(outs) == len(out_dtypes)
            and all(t.is_contiguous() and (t.shape == x.shape if kind == "row" else t.dim() == 1
                                           and (kind == "vector" or t.numel() == 1))
                    and not (kind == "row" and t.data_ptr() & 15) for t, kind in zip(inputs, f.kinds))
            and all(o.shape == x.shape and o.dtype == d and o.is_contiguous() and not o.data_ptr() & 15
                    for o, d in zip(outs, out_dtypes))):
        launch = _prepare_lowered(inputs, outs)  # raises, in the words of flydsl_lowered / host.py ...
        if not x.numel():
            return outs[0] if len(outs) == 1 else outs  # ... unless x is empty: nothing to do
    launch(*lw.slots([t.view(-1) for t in (*inputs, *outs)]), x.shape[-1])
    return outs[0] if len(outs) == 1 else outs


def run(*inputs, out=None, op: str = OP):
    """out = op(*inputs) on the current stream. Inputs: contiguous ROCm tensors of one shape and dtype.

    The hot path is a dict lookup, the checks FlyDSL's call does not make (shapes, contiguity, alignment,
    size), 1-D views where the tensors are not 1-D already, and the launch; see flydsl_runtime.py. The
    lowered op (op.json "op": "lowered") takes lowered.INPUTS and returns its OUTPUTS (see _run_lowered)."""
    if op == "lowered":
        return _run_lowered(inputs, out)
    x = inputs[0]
    b = inputs[1] if len(inputs) > 1 else x  # unary ops never read B
    if out is None:
        out = torch.empty_like(x)
    signature = (op, len(inputs), x.dtype, b.dtype, out.dtype, x.get_device(), b.get_device(), out.get_device())
    launch = _launches.get(signature)
    if launch is None:
        launch = _launches[signature] = _prepare(op, inputs, out)
    if not (0 < x.numel() < launch.facts and x.shape == b.shape == out.shape and x.is_contiguous()
            and b.is_contiguous() and out.is_contiguous() and not (x.data_ptr() | b.data_ptr() | out.data_ptr()) & 15):
        launch = _prepare(op, inputs, out)  # raises, in host.py's words ...
        if not x.numel():
            return out  # ... unless the tensor is empty: nothing to do
    if x.dim() == 1:
        launch(x, b, out)
    else:  # the compiled signature is 1-D
        flat = x.view(-1)
        launch(flat, flat if b is x else b.view(-1), out.view(-1))
    return out


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", op: str = OP,
                 dtype: str | None = None, arch: str | None = None) -> str:
    """Compile for `arch` (default op.json's target) with no GPU; write and return the AMDGPU ISA text.

    One compile serves every size (n is a runtime value), so `case` does not change the ISA; for the lowered op
    it picks whether a vector input's chunks are single loads (N of the case a multiple of the vector:
    kernel_lowered_<dtype>.<gfx>.s) or per-element gathers (kernel_lowered_<dtype>_gather.<gfx>.s)."""
    dtype = dtype or OP_SPEC["dtype"]
    if op == "lowered":
        vec_fast = _case_cols(case) % lw.compile_vec(dtype) == 0
        return rt.compile_isa(__file__, f"lowered_{dtype}{'' if vec_fast else '_gather'}", [op, dtype, vec_fast],
                              arch, out_dir)
    return rt.compile_isa(__file__, f"{op}_{dtype}", [op, dtype], arch, out_dir)


def _case_cols(case: dict | None) -> int:
    """N = x.shape[-1] of a case (the dims' last entry); no case: the first representative case of op.json."""
    case = case or OP_SPEC["cases"][0]
    return int((case.get("dims") or [case["vars"]["numel"]])[-1])


def _emit_isa(op: str, dtype: str, vec_fast: str = "True") -> None:
    """Child side of compile_only: compile what run() compiles (COMPILE_ONLY: no engine, nothing launched)."""
    if op == "lowered":
        ins, outs = lw.placeholder_dtypes(dtype)
        flyc.compile(lowered_launch, *_lowered_compile_args(ins, outs, lw.compile_vec(dtype), vec_fast == "True"))
        return
    flyc.compile(elementwise_launch, *_compile_args(op, dtype))


def describe(case: dict) -> dict:
    """Launch configuration of a case, for the plan and the report."""
    n = case["vars"]["numel"]
    if OP == "lowered":
        return _describe_lowered(case, n)
    vec, unroll, _ = _constexprs(OP, OP_SPEC["dtype"])
    tile = THREADS * vec * unroll
    return {
        "tile_elements": tile,
        "threads_per_cta": THREADS,
        "waves_per_workgroup": THREADS // WAVE,
        "values_per_thread": f"{unroll} x {vec} ({unroll} dwordx4 buffer accesses per tensor)",
        "grid": [-(-n // tile), 1, 1],
        "grid_blocks": -(-n // tile),
        "lds_bytes": 0,
        "data_movement": "HBM -> VGPRs with 128-bit buffer_load_dwordx4, fp32 math, VGPRs -> HBM with "
        "buffer_store_dwordx4; the last workgroup uses one-element buffer accesses bounded by the descriptor's "
        "num_records (out-of-range loads read 0, stores are dropped); no LDS",
    }


def _describe_lowered(case: dict, n: int) -> dict:
    """describe() of the lowered op: the built-in layout, every input and output moved in it."""
    f = lw.facts()
    vec, unroll = lw.compile_vec(OP_SPEC["dtype"]), LOWERED_UNROLL
    tile = THREADS * vec * unroll
    fast = _case_cols(case) % vec == 0
    return {
        "tile_elements": tile,
        "threads_per_cta": THREADS,
        "waves_per_workgroup": THREADS // WAVE,
        "values_per_thread": f"{unroll} x {vec} per tensor ({len(f.inputs)} inputs, {len(f.outputs)} outputs)",
        "grid": [-(-n // tile), 1, 1],
        "grid_blocks": -(-n // tile),
        "lds_bytes": 0,
        "data_movement": f"row inputs and outputs: {vec}-element buffer loads/stores (128 bits of the widest "
        "dtype), the last workgroup one element per access bounded by num_records; vector inputs: "
        + ("one load per chunk at (g0 % N)" if fast else "one element per load at (g % N) (N % vec != 0)")
        + (f"; bool masks as their bytes, {vec} per access" if "bool" in f.dtypes else "")
        + ("; scalar inputs one load per lane" if "scalar" in f.kinds else "")
        + "; the user's compute in fp32 registers between; no LDS",
    }


if __name__ == "__main__":
    rt.child_main(_emit_isa)
