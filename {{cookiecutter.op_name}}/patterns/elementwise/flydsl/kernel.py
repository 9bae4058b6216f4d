"""Elementwise kernel in FlyDSL for AMD CDNA3 (gfx942) and CDNA4 (gfx950): one program applied to every element of
its inputs.

Every op of this cell is a program: the built-in ones (add, mul, silu, gelu, relu, silu_mul) are the PyTorch
functions of tools/patterns/elementwise/programs.py in the template repository, a user's op is their own function,
and a bake traces either into lowered.py at the workspace root (tests/lowered_examples/CONTRACT.md in the template).
This file is the data movement around it, a bandwidth kernel: each element is read once and written once, so the
only goal is to stream bytes at HBM speed. The tensors are viewed as 1-D and cut into workgroup tiles of 256 lanes
(4 waves of 64) x UNROLL vectors of 128 bits; every lane moves its vectors HBM -> VGPRs -> HBM with
buffer_load/store_dwordx4, lowered.compute() runs on the fp32 values in registers and each result is rounded once
to its output's dtype. No LDS, no barriers: latency is hidden by the UNROLL loads each lane issues up front and by
the other resident waves. The last, partial tile switches to one-element accesses and lets the buffer descriptor's
range check drop everything past the end, so any size works. One launcher, one run().

What it computes
    out = f(x, y, ...) for every element: row inputs of x's shape (any rank, contiguous, read as 1-D), [N] vectors
    broadcast over x's rows (N = x.shape[-1]: a bias), scalars of one element and bool masks (lowered.KINDS); loads
    in bf16/fp16/fp32, the math in fp32, one rounding per output (lowered.OUT_DTYPES: x's dtype, fp32, or a
    quantizer's int8 / fp8 e4m3fn). gelu is the exact erf form (torch's default), not the tanh one.

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
      VGPRs per lane keeps all 8 resident. benchmarks/flydsl_compile.md has compiled register counts (tabulated
      for the hand-written built-in kernels this one path replaced).
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
    The tensor is cut into workgroup tiles of ``THREADS * VEC * unroll`` elements; inside a tile::

        tv = (THREADS, VEC) : (VEC, 1), repeated unroll times at stride THREADS*VEC

        u = 0:  | T0: v0..v7 | T1: v0..v7 | ... | T255: v0..v7 |   <- one dwordx4 per lane, 4 KiB per tile row
        u = 1:  | T0: v0..v7 | T1: v0..v7 | ... | T255: v0..v7 |

    - unroll (unroll_for): dwordx4 accesses per lane per tensor, all issued before the first use: UNROLL = 2 for
      every program, or 1 below SMALL_N = 2^24 elements, where the kernel is latency-bound and what counts is
      spreading the few bytes over as many CUs as possible with one load-compute-store round trip per lane (2^20
      bf16 elements are 512 workgroups at unroll 1, 256 at 2, against 304 CUs on MI300X), as the CuTe DSL cell
      does. The choice is part of the compile key and of run()'s signature.
    - Bytes in flight (Little's law): per workgroup per input 256 x 16 B x 2 = 8 KiB; with up to 8 workgroups
      (32 waves) resident per CU that is 64 KiB per CU per input. Covering DRAM latency needs bandwidth x latency
      / CUs: 5.3 TB/s x ~1 us / 304 CUs = ~17 KiB (gfx942) to 8 TB/s x ~1 us / 256 CUs = ~31 KiB (gfx950), with
      ~1 us an assumed loaded latency. These are design estimates, not timings: the starting point for tuning
      UNROLL and the workgroup size on the GPU.

Two paths, chosen per workgroup (a uniform branch: every lane of a workgroup takes the same side)
    - Full tile (all but the last workgroup): dwordx4 buffer loads and stores, no predicates.
    - The last, partial tile: the same layout, but one element per buffer access (`buffer_load_ushort` /
      `buffer_store_short` for 16-bit types, `_dword` for fp32), and the num_records bound does the
      predication: elements past n read as 0 and are never written. Any n >= 1 works, no padding needed.
      For fp32, LLVM merges the tail's 4 consecutive dword accesses back into dwordx4: still exact, because
      each dword is range-checked on its own.

Data movement: HBM -> VGPRs (128-bit buffer loads) -> fp32 compute() -> VGPRs -> HBM (128-bit buffer stores).
No LDS, no barriers, no software pipeline: each lane's loads are independent, and the latency is hidden by
the unroll loads per lane and by the other resident waves.

What compute() gets (lowered.py)
    INPUTS in the function's parameter order with a KIND each ("row": x's shape; "vector": [N], N = x.shape[-1],
    broadcast over the rows; "scalar": one element, a runtime scalar) and a DTYPE ("float": x's dtype; "bool": a
    mask), OUTPUTS (all "row" here) with OUT_DTYPES, and compute(*values, n, reduce) of straight-line fp32 math
    (Python operators and pointwise.py's `pw.` functions; no reduce() calls in this cell). x, whose shape the rows
    and outputs take, is the first "row" input (host.lowered_x), not necessarily the first input:

        per input:   the tile and chunks above; a row input is one vec-wide buffer load per chunk (full tile) or
                     one element per load (tail); a bool mask is launched as its bytes (uint8,
                     host.lowered_viewer) and loaded the same way, vec bytes per access (buffer_load_dwordx2 beside a
                     bf16 x's dwordx4), then converted to 0.0 / 1.0 like any value (compute() compares it itself);
                     a scalar input is one element loaded once per lane and passed to compute() as an fp32 scalar,
                     not a vector; a vector input's chunk u of a lane starts at flat element
                     g0 = (j0 + u*THREADS) * vec and holds vec[g % N] for g = g0 .. g0+vec-1: when N % vec == 0
                     (and the vector is 16-byte aligned) g0 % N is a multiple of vec and the chunk never wraps, so
                     it is one vec-wide load of vector (g0 % N) / vec, in range on the tail too; otherwise one
                     element per load at (g0 + e) % N
        compute:     lowered.compute(*fp32 vectors (scalars for scalar inputs), n = N, None), traced under
                     fastmath "afn" (flydsl_lowered.compute)
        per output:  converted to its OUT_DTYPES (x's dtype, fp32, or a quantizer's int8 / fp8 e4m3fn, the
                     function's final .to(): int8 truncates toward zero, v_cvt_i32_f32; fp8 rounds to nearest even
                     through v_cvt_pk_fp8_f32, OCP bytes on gfx942 too: flydsl_lowered.e4m3fn_bytes), stored like
                     a row input (vec-wide: an int8 / fp8 output beside a bf16 x is buffer_store_dwordx2; or per
                     element on the tail)

    vec is 128 bits of the widest element among the row-wise tensors (bf16 in, fp32 out: vec 4). The launcher
    has flydsl_lowered.SLOTS tensor slots (inputs, then outputs), the tile count from x's slot; run() calls the
    launcher of 2 or 3 slots when the op's tensors fit (flydsl_lowered.LAUNCH_SLOTS), which pads them to SLOTS
    inside the JIT'd host function.

Host side: argument checks come from host.py, op.json, the targets and compile-only from flydsl_runtime.py, the glue
to lowered.py from flydsl_lowered.py. Compiled to gfx942/gfx950 ISA on a CPU; it has not run on AMD hardware.

Interface (the same in every kbaseline cell):
    run(*inputs, out=None)      -> out         lowered.INPUTS order (silu_mul: run(x, y)), ROCm torch tensors
                                               ("cuda" device); one tensor, or a tuple for several outputs; compiles
                                               once per variant and prepares a launch once per argument signature
    compile_only(case, out_dir) -> ISA text    compile the variant run() picks for the case for op.json's target
                                               (gfx942 | gfx950) with no GPU, in a child process (flydsl_runtime.py,
                                               tools/rocm_env.py); writes kernel_<op>_<dtype>[_gather]_u<unroll>.<gfx>.s
                                               (<op>: op.json's, "lowered" for a user's function)
    describe(case)              -> dict         tile, threads, grid and data movement, for the report
"""

from __future__ import annotations

import math
import os

import flydsl.compiler as flyc
import flydsl.expr as fx
import flydsl_lowered as lw
import flydsl_runtime as rt
import host
import torch
from flydsl.expr import const_expr, range_constexpr
from flydsl_runtime import MAX_BYTES, WAVE

OP_SPEC = host.OP
OP = OP_SPEC["op"]  # the ISA file's name: the built-in op's, or "lowered" for a user's function

THREADS = 256  # 4 waves of 64 lanes
UNROLL = 2  # dwordx4 accesses per lane per tensor, SMALL_N elements and more
SMALL_N = 1 << 24  # below this many elements every lane moves one vector per tensor (unroll_for)


_VECTORS = "vector" in lw.facts().kinds  # N (x's last dim) picks the vector inputs' loads: part of the signature


def unroll_for(numel: int) -> int:
    """dwordx4 accesses per lane per tensor: UNROLL, or 1 below SMALL_N elements (spreads a small tensor over more
    CUs)."""
    return 1 if numel < SMALL_N else UNROLL


def _load(t, kind: str, j0, cols, vec: int, unroll: int, vec_fast: bool, full: bool):
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


def _store(t, value, j0, vec: int, unroll: int, full: bool):
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


def _tile(tensors, cols, vec: int, unroll: int, vec_fast: bool, bid, tid, full: bool):
    """Load every input's chunks (a scalar input's one value), run compute() in fp32, store every output (slots:
    inputs, outputs)."""
    f = lw.facts()
    j0 = bid * (THREADS * unroll) + tid  # this lane's first vector; chunk u is vector j0 + u*THREADS
    values = [lw.scalar(t) if kind == "scalar" else _load(t, kind, j0, cols, vec, unroll, vec_fast, full)
              for t, kind in zip(tensors, f.kinds)]
    outs = lw.compute(values, fx.Float32(cols), None)
    for t, value in zip(tensors[len(f.kinds):], outs):
        _store(t, value, j0, vec, unroll, full)


@flyc.kernel
def elementwise_kernel(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, cols: fx.Int32,
    vec: fx.Constexpr[int], unroll: fx.Constexpr[int], vec_fast: fx.Constexpr[bool], key: fx.Constexpr[str],
):
    """One tile: the full-tile path with dwordx4 accesses, or the tail with one element per access."""
    tid = fx.thread_idx.x
    bid = fx.block_idx.x
    tile = THREADS * vec * unroll
    tensors = [T0, T1, T2, T3, T4, T5, T6, T7]
    n = fx.get_scalar(fx.size(tensors[lw.facts().x].shape))  # x's elements
    if (bid + 1) * tile <= n:
        _tile(tensors, cols, vec, unroll, vec_fast, bid, tid, True)
    else:
        _tile(tensors, cols, vec, unroll, vec_fast, bid, tid, False)


def _launch(tensors, cols, vec: int, unroll: int, vec_fast: bool, key: str, stream):
    """Every launcher's body (at trace time): one workgroup of THREADS lanes per tile of THREADS * vec * unroll
    elements of x (the slot of the first row input). The kernel takes lw.SLOTS tensors whatever the launcher's count
    (lw.kernel_slots: the unused ones repeat the first, never read), so its ISA does not depend on the launcher."""
    tile = THREADS * vec * unroll
    n = fx.get_scalar(fx.size(tensors[lw.facts().x].shape))
    elementwise_kernel(*lw.kernel_slots(tensors), cols, vec, unroll, vec_fast, key).launch(
        grid=((n + tile - 1) // tile, 1, 1), block=(THREADS, 1, 1), stream=stream,
    )


@flyc.jit
def elementwise_launch(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, T3: fx.Tensor, T4: fx.Tensor, T5: fx.Tensor, T6: fx.Tensor,
    T7: fx.Tensor, cols: fx.Int32,
    vec: fx.Constexpr[int], unroll: fx.Constexpr[int], vec_fast: fx.Constexpr[bool], key: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """Host side, lw.SLOTS tensor slots (lowered.INPUTS then OUTPUTS, flydsl_lowered.slots)."""
    _launch([T0, T1, T2, T3, T4, T5, T6, T7], cols, vec, unroll, vec_fast, key, stream)


@flyc.jit
def elementwise_launch3(
    T0: fx.Tensor, T1: fx.Tensor, T2: fx.Tensor, cols: fx.Int32,
    vec: fx.Constexpr[int], unroll: fx.Constexpr[int], vec_fast: fx.Constexpr[bool], key: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """elementwise_launch with 3 tensor slots (silu_mul, add, mul: x, y, out): 5 tensors fewer to pack per call."""
    _launch([T0, T1, T2], cols, vec, unroll, vec_fast, key, stream)


@flyc.jit
def elementwise_launch2(
    T0: fx.Tensor, T1: fx.Tensor, cols: fx.Int32,
    vec: fx.Constexpr[int], unroll: fx.Constexpr[int], vec_fast: fx.Constexpr[bool], key: fx.Constexpr[str],
    stream: fx.Stream = fx.Stream(None),
):
    """elementwise_launch with 2 tensor slots (silu, gelu, relu: x and out)."""
    _launch([T0, T1], cols, vec, unroll, vec_fast, key, stream)


LAUNCHERS = {2: elementwise_launch2, 3: elementwise_launch3, lw.SLOTS: elementwise_launch}  # by lw.launch_slots


_compiled: dict = {}  # (dtypes, vec, vec_fast, unroll) -> CompiledFunction; n and N are runtime values
_launches: dict = {}  # run()'s signature (dtypes, devices, N, vector alignment, size class) -> rt.Launch


def _constexprs(vec: int, vec_fast: bool, unroll: int) -> tuple:
    return vec, unroll, vec_fast, lw.facts().key


def _compile_args(in_dtypes, out_dtypes, vec: int, vec_fast: bool, unroll: int) -> tuple:
    """What run() and compile_only compile: 1-D CPU placeholders in the tensor slots, cols, the constexprs."""
    tensors = [rt.placeholder(d, THREADS * 8 * 4) for d in (*in_dtypes, *out_dtypes)]
    return (*lw.short_slots(tensors), 1, *_constexprs(vec, vec_fast, unroll))


def _prepare(inputs, out):
    """A signature's first call, or a refused one: host.py's checks, the variant, the launch.

    Its facts: the largest element count this signature keeps under 2 GiB."""
    f = lw.facts()
    op = f.module.SOURCE
    if set(f.outputs) != {"row"}:
        raise ValueError(f"{op}: the elementwise cell writes 'row' outputs only, lowered.py has {f.outputs}")
    host.check_count(op, inputs, len(f.inputs))
    _, outs = host.lowered_operands(f.module, inputs, out, [inputs[f.x].shape] * len(f.outputs), rows_contiguous=True)
    x = inputs[f.x]
    lw.check_buffer_range(inputs)
    cols = x.shape[-1]
    vec = lw.ACCESS_BYTES // lw.widest_bytes((*(inputs[i] for i in f.loaded), *outs))
    vec_fast = cols % vec == 0 or "vector" not in f.kinds  # host.py had every tensor on a 16-byte boundary
    unroll = unroll_for(x.numel())
    dtypes = [lw.dtype_name(t) for t in (*inputs, *outs)]
    fn = rt.compiled(_compiled, (*dtypes, vec, vec_fast, unroll), LAUNCHERS[lw.launch_slots(len(dtypes))],
                     lambda: _compile_args(dtypes[:len(inputs)], dtypes[len(inputs):], vec, vec_fast, unroll))
    max_numel = min(MAX_BYTES // t.element_size() - 1 for t, kind in zip((*inputs, *outs), (*f.kinds, *f.outputs))
                    if kind == "row")  # the element count that keeps each of x's shape under 2 GiB (check_buffer_range)
    return rt.Launch(op, fn, _constexprs(vec, vec_fast, unroll), x.get_device(), max_numel)


_F = lw.facts()
_VIEWS = host.lowered_viewer(_F.module)  # run()'s view of the inputs that need one (None: none does)
_ROWS = tuple(i for i, kind in enumerate(_F.kinds) if kind == "row" and i != _F.x)  # the inputs of x's shape
_FIXED = tuple(i for i, kind in enumerate(_F.kinds) if kind != "row")  # vectors and scalars: shapes in the signature
_SLOTS = lw.launch_slots(len(_F.kinds) + len(_F.outputs))  # the launcher's tensor slots (lw.short_slots)
_OUT_LIKE = tuple(host.out_dtypes(_F.out_dtypes))  # each output's dtype, None for x's: made by torch.empty_like(x)


def run(*inputs, out=None):
    """lowered.compute over x's elements on the current stream: one output tensor, or a tuple (OUTPUTS order).

    inputs in lowered.INPUTS order, the function's own (x the first row input; a mask bool, a scalar one element);
    `out` one tensor or a tuple/list in OUTPUTS order.

    The hot path: the signature picks the prepared launch. It holds what the variant depends on and FlyDSL's call
    does not check: the size class (unroll_for), x's rank when lowered.RANK binds it, N when a vector input is
    loaded by it, each tensor's dtype, device, 16-byte phase and contiguity, the vectors' and scalars' shapes. So a
    call checks only the shapes that change with it (each row input and output is x's shape) and x's size under the
    prepared bound; anything else goes to _prepare, where host.py refuses it in its own words. Then 1-D views and
    the launch (see flydsl_runtime.py). A FlyDSL call checks nothing itself, so these checks are run()'s, in Python,
    on every call: what the program fixes (which inputs are rows, the views, the slots) is worked out at import."""
    if len(inputs) != len(_F.kinds):
        _prepare(inputs, out)  # raises, in host.py's words
    if _VIEWS:
        inputs = _VIEWS(inputs)  # a mask as its bytes, a 0-d scalar as [1]: free views
    x = inputs[_F.x]
    numel = x.numel()
    if not numel:  # nothing to compile or launch: host.py's checks, then the empty outputs
        outs = host.lowered_operands(_F.module, inputs, out, [x.shape] * len(_F.outputs), rows_contiguous=True)[1]
        return outs[0] if len(outs) == 1 else outs
    signature = [numel < SMALL_N, x.dim() if _F.module.RANK else None, x.shape[-1] if _VECTORS and x.dim() else None]
    for t in inputs:
        signature += (t.dtype, t.get_device(), t.data_ptr() & 15, t.is_contiguous())
    for i in _FIXED:
        signature.append(inputs[i].shape)
    outs = None if out is None else host.lowered_outputs(out)
    if outs is not None:
        for o in outs:
            signature += (o.dtype, o.get_device(), o.data_ptr() & 15, o.is_contiguous())
    signature = tuple(signature)
    launch = _launches.get(signature)
    if launch is None:
        launch = _launches[signature] = _prepare(inputs, out)
    max_numel = launch.facts
    shape = x.shape
    fits = numel <= max_numel
    for i in _ROWS:
        fits = fits and inputs[i].shape == shape
    if outs is None:  # x's layout, contiguous (its signature says so): empty_like, 0.9 against torch.empty's 1.7 us
        outs = tuple(torch.empty_like(x) if d is None else torch.empty_like(x, dtype=d) for d in _OUT_LIKE)
    else:
        fits = fits and len(outs) == len(_OUT_LIKE)
        for o in outs:
            fits = fits and o.shape == shape
    if not fits:
        launch = _prepare(inputs, outs)  # raises, in the words of flydsl_lowered / host.py (or prepares this call)
    tensors = [t if t.dim() == 1 else t.view(-1) for t in (*inputs, *outs)]  # 1-D views
    launch(*tensors, *tensors[:1] * (_SLOTS - len(tensors)), x.shape[-1])  # lw.short_slots: the first again, unread
    return outs[0] if len(outs) == 1 else outs


def _case_dims(case: dict | None) -> list[int]:
    """A case's dims (N = the last); no case: op.json's first case."""
    case = case or OP_SPEC["cases"][0]
    return [int(d) for d in (case.get("dims") or [case["vars"]["numel"]])]


def _variant(case: dict | None, dtype: str) -> tuple[int, bool, int, str]:
    """(vec, vec_fast, unroll, the ISA file tag) that run() picks for a case on 16-byte-aligned tensors of
    compile_only's dtypes (lw.placeholder_dtypes): a vector input's chunks are single loads when N is a multiple of
    the vector or there is no vector input (else per-element gathers: _gather), unroll by the case's size
    (unroll_for)."""
    dims = _case_dims(case)
    vec = lw.compile_vec(dtype)
    vec_fast = dims[-1] % vec == 0 or "vector" not in lw.facts().kinds  # no vector input: nothing to gather
    unroll = unroll_for(math.prod(dims))
    return vec, vec_fast, unroll, f"{'' if vec_fast else '_gather'}_u{unroll}"


def compile_only(case: dict | None = None, out_dir: str | os.PathLike = "build", dtype: str | None = None,
                 arch: str | None = None) -> str:
    """Compile the variant run() would pick for the case for `arch` (default op.json's target) with no GPU; write and
    return the AMDGPU ISA (kernel_<op>_<dtype>[_gather]_u<unroll>.<arch>.s). The case's N and size pick the variant
    (_variant); n itself is a runtime value."""
    dtype = dtype or OP_SPEC["dtype"]
    vec, vec_fast, unroll, tag = _variant(case, dtype)
    return rt.compile_isa(_emit_isa, f"{OP}_{dtype}{tag}", [dtype, vec, vec_fast, unroll], arch, out_dir)


def _emit_isa(dtype: str, vec: str, vec_fast: str, unroll: str) -> None:
    """Child side of compile_only: compile what run() compiles (COMPILE_ONLY: no engine, nothing launched)."""
    ins, outs = lw.placeholder_dtypes(dtype)
    flyc.compile(LAUNCHERS[lw.launch_slots(len(ins) + len(outs))],
                 *_compile_args(ins, outs, int(vec), vec_fast == "True", int(unroll)))


def describe(case: dict) -> dict:
    """Launch configuration of a case, for the plan and the report."""
    f = lw.facts()
    n = case["vars"]["numel"]
    vec, fast, unroll, _ = _variant(case, OP_SPEC["dtype"])
    tile = THREADS * vec * unroll
    return {
        "tile_elements": tile,
        "threads_per_cta": THREADS,
        "waves_per_workgroup": THREADS // WAVE,
        "values_per_thread": f"{unroll} x {vec} per tensor ({unroll} 128-bit accesses each; {len(f.inputs)} inputs, "
                             f"{len(f.outputs)} outputs)" + (f"; one vector below {SMALL_N} elements"
                                                              if unroll == 1 else ""),
        "grid": [-(-n // tile), 1, 1],
        "grid_blocks": -(-n // tile),
        "lds_bytes": 0,
        "data_movement": f"row inputs and outputs: {vec}-element buffer loads/stores (128 bits of the widest "
        "dtype), the last workgroup one element per access bounded by num_records (out-of-range loads read 0, "
        "stores are dropped)"
        + ("" if "vector" not in f.kinds else "; vector inputs: " + (
            "one load per chunk at (g0 % N)" if fast else "one element per load at (g % N) (N % vec != 0)"))
        + (f"; bool masks as their bytes, {vec} per access" if "bool" in f.dtypes else "")
        + ("; scalar inputs one load per lane" if "scalar" in f.kinds else "")
        + "; compute() in fp32 registers between; no LDS",
    }


if __name__ == "__main__":
    rt.child_main(_emit_isa)
