"""What the FlyDSL cells share to run a generated lowered.py: its facts, the tensor slots of the launcher, the operand
checks and outputs of run(), the register/buffer views, the compute() call and the conversion of its values to the
outputs' dtypes.

Its one job is the glue between a program's compute (lowered.py at the workspace root, written by the template from
a PyTorch function, see its CONTRACT: in the elementwise and reduction cells every op is one, the built-in ops
being the pattern's programs.py; the GEMM cell runs one as its epilogue) and a cell's hand-written data movement.
The cell keeps its own tiling, loads, reductions and stores; this module gives it:

    facts()             lowered.py's INPUTS / KINDS / DTYPES / WIDTHS / ARGS / OUTPUTS / OUT_DTYPES / OUT_WIDTHS /
                        OUT_HOW / REDUCTIONS / PASSES / ONLINE (a GEMM's KINDS: "a", "b", then its epilogue inputs,
                        CONTRACT_GEMM.md), `x` (the index of x: the first "row" input in the user's parameter order,
                        host.lowered_x), `loaded` (the indices of the row, broadcast and vector inputs: a scalar or
                        per-row input (SINGLE) is one value, never a row), the loads that serve compute()'s arguments
                        (`loads`, `load_widths`, `of_arg`, `like`: plan_loads), the row outputs' stores (`stores`,
                        `first`: host.lowered_stores), the looped row path's schedule (`passes`, `online`: PASSES and
                        ONLINE, one pass per reduction in order and no online pair for a lowered.py baked before they
                        existed), and a `key` (a hash of lowered.py) that every compiled variant carries as a Constexpr,
                        so a re-baked lowered.py can never be served a kernel compiled from the old one
    SLOTS, slots()      a FlyDSL launcher has a fixed signature (no *args, no list of tensors), so the lowered
                        launchers take SLOTS tensor slots: the inputs in INPUTS order, then the outputs in
                        OUTPUTS order, the unused slots filled with the first tensor (never read; FlyDSL still
                        fills each slot's ABI words on every call, a few hundred ns each)
    LAUNCH_SLOTS, short_slots(), kernel_slots()
                        so the row cells (elementwise, reduction) also have launchers of 2 and 3 tensor slots
                        (x and one output; two inputs and one output, or one input and two outputs: every built-in
                        op): run() calls the smallest that holds the op's tensors (short_slots pads to it), and the
                        launcher pads them to the kernel's SLOTS slots inside the JIT'd host function
                        (kernel_slots: compiled code, no per-call Python), so the kernels, their arguments and
                        their ISA are the same whichever launcher runs them
    check_buffer_range()  the one check FlyDSL adds to host.lowered_operands (the argument checks every cell
                        shares, CuTe DSL's too): a buffer descriptor spans under 2 GiB
    dtype_name()        a tensor's op.json dtype name, "uint8" for a mask's bytes (host.lowered_viewer)
    pick_vec()          the widest vector (<= 128 bits for the widest element of any row-wise tensor) that N, the
                        row strides and every address allow
    regs(), vectors()   the register tensor of a lane's chunks and the buffer view of a tensor cut into vectors:
                        the cells' one way to move vec elements
    scalar()            a "scalar" input's one element (or a "per_row" input's element of a row) as an fp32
                        scalar, one buffer load per lane
    compute(values, n, reduce)  lowered.compute(*values, n, reduce) traced under fastmath "afn" (a `/` in the
                        user's code is v_rcp_f32 and a multiply), as a tuple
    to_storage()        an output's fp32 values in its OUT_DTYPES element type, as the cells' stores write them:
                        x's dtype, fp32, a quantizer's int8 (`.to()`: truncation toward zero) or fp8 e4m3fn (OCP,
                        what torch.float8_e4m3fn holds, on gfx942 too: e4m3fn_bytes, the hardware's converter)

The values a cell passes are compute()'s arguments, in ARGS order: for a row or vector input an fp32 register vector,
`.load().to(fx.Float32)` of its register tensor, all of one shape; a "vector" input's vector holds, element for
element, the [N] vector's entries for the columns of the row values beside it. Without wide inputs (every WIDTHS 1)
ARGS is each input "whole" in INPUTS order (the user's parameter order: x is not necessarily the first; facts()
checks it), which is how the elementwise cell passes them. A wide input (WIDTHS r > 1, a "row" input [M, r*N] the
function reads in r parts, e.g. a gated MLP's x.chunk(2, -1) or x[..., ::2], x[..., 1::2]; N = x's last dim / r)
only runs in the reduction cell, and its ARGS entries are views of it: "part" j, its columns [j*N, (j+1)*N), or
"lane" j, its columns j, j + r, j + 2r, ... (plan_loads says how the cell loads each). A bool mask (DTYPES "bool")
arrives at run() as torch.bool and is launched as its bytes (uint8, a view: host.lowered_viewer): the cell loads vec
bytes per access where x loads vec elements (8 bytes beside a bf16 x's 16) and passes 0.0 / 1.0 like any other
value (compute() compares it itself). A "scalar" input (one element, a runtime scalar) is loaded once per lane and
passed as an fp32 scalar (scalar()), never a vector; so is a "per_row" input ([M], one value per row: the reduction
cell's only), at the lane's row. compute() returns one value per output: a vector for a "row"
output, an fp32 scalar for a "reduced" one.

Compiled to gfx942/gfx950 ISA on a CPU; the lowered kernels have never run on AMD hardware here (no AMD GPU).
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import flydsl.expr as fx
import host
from flydsl_runtime import DTYPE_BYTES, MAX_BYTES

SLOTS = 8  # tensor slots of a lowered launcher: inputs + outputs
LAUNCH_SLOTS = (2, 3, SLOTS)  # the row cells' launchers' tensor slots: run() takes the smallest that holds its tensors
ACCESS_BYTES = 16  # 128-bit buffer accesses
MASK = "uint8"  # a bool mask input's launched dtype: its bytes (host.lowered_viewer)
OUT_DTYPES = ("input", "fp32", "int8", "fp8")  # x's dtype, fp32, a quantizer's int8 / fp8 e4m3fn (row cells only)
SINGLE = ("scalar", "per_row", "broadcast_per_row")  # kinds compute() takes as one fp32 scalar: one, or its row's


@cache
def facts() -> SimpleNamespace:
    """lowered.py's declarations, checked once, and the hash of its text (`key`)."""
    import lowered

    kinds = tuple(lowered.KINDS)
    gemm = kinds[:2] == ("a", "b")
    widths = tuple(getattr(lowered, "WIDTHS", (1,) * len(kinds)))
    args = tuple(tuple(a) for a in getattr(lowered, "ARGS", [(i, "whole", 0) for i in range(2 if gemm else 0,
                                                                                         len(kinds))]))
    f = SimpleNamespace(module=lowered, inputs=tuple(lowered.INPUTS), kinds=kinds,
                        dtypes=tuple(lowered.DTYPES), widths=widths, args=args,
                        outputs=tuple(lowered.OUTPUTS), out_dtypes=tuple(lowered.OUT_DTYPES),
                        out_widths=tuple(lowered.OUT_WIDTHS), out_how=tuple(lowered.OUT_HOW),
                        reductions=tuple(lowered.REDUCTIONS),
                        x=0 if kinds[:2] == ("a", "b") or "row" not in kinds else kinds.index("row"),
                        loaded=tuple(i for i, kind in enumerate(kinds) if kind in ("row", "vector", "broadcast")),
                        key=hashlib.sha256(Path(lowered.__file__).read_bytes()).hexdigest()[:16])
    f.passes = tuple(getattr(lowered, "PASSES", range(len(f.reductions))))  # older bakes: one pass per reduction
    f.online = tuple(getattr(lowered, "ONLINE", (None,) * len(f.reductions)))
    f.loads, f.load_widths, f.of_arg = plan_loads(args, kinds, widths)
    f.like = next((k for k, a in enumerate(f.of_arg) if a[0] != "scalar"), 0)  # an argument of the values' shape
    f.stores, f.first = host.lowered_stores(f.outputs, f.out_widths, f.out_how)
    if f.kinds[:2] == ("a", "b"):  # a GEMM's epilogue (CONTRACT_GEMM.md): a, b, then its inputs; one C
        if (len(f.inputs) != len(f.kinds) or set(f.kinds[2:]) - {"row", "vector", "per_row"}
                or f.outputs != ("row",) or f.reductions):
            raise ValueError(f"lowered.py: a GEMM's KINDS {f.kinds} must be 'a', 'b', then 'row' | 'vector' | "
                             f"'per_row', with one 'row' output and no reductions (has {f.outputs}, {f.reductions})")
    elif len(f.inputs) != len(f.kinds) or "row" not in f.kinds or set(f.kinds) - {"row", "vector", "broadcast",
                                                                                   *SINGLE}:
        raise ValueError(f"lowered.py: KINDS {f.kinds} must give 'row', 'broadcast', 'vector', 'scalar', 'per_row' or "
                         "'broadcast_per_row' per input, one 'row' at least (x: the first)")
    if len(widths) != len(kinds) or any(w < 1 or w > 1 and kind in SINGLE for w, kind in zip(widths, kinds)):
        raise ValueError(f"lowered.py: WIDTHS {widths} must give 1 per input, or r > 1 for an input read in parts")
    for i, how, j in args:
        if not (0 <= i < len(kinds) and how in ("whole", "part", "lane")
                and ((how == "whole") == (widths[i] == 1)) and (0 <= j < widths[i] if how != "whole" else j == 0)):
            raise ValueError(f"lowered.py: ARGS entry {(i, how, j)} must be (input, 'whole', 0) for an input of width "
                             "1, (input, 'part' | 'lane', j < its width) for a wide one")
    if not gemm and set(widths) == {1} and args != tuple((i, "whole", 0) for i in range(len(kinds))):
        raise ValueError(f"lowered.py: without wide inputs ARGS must be each input whole, in INPUTS order "
                         f"(tools/lower/ir.arguments), got {args}")
    if len(f.dtypes) != len(f.kinds) or set(f.dtypes) - {"float", "bool"} or f.dtypes[f.x] != "float":
        raise ValueError(f"lowered.py: DTYPES {f.dtypes} must give 'float' or 'bool' per input, x a 'float'")
    if (not f.outputs or len({len(f.outputs), len(f.out_dtypes), len(f.out_widths), len(f.out_how)}) != 1
            or set(f.out_dtypes) - set(OUT_DTYPES)):
        raise ValueError(f"lowered.py: OUTPUTS {f.outputs} / OUT_DTYPES {f.out_dtypes} / OUT_WIDTHS / OUT_HOW do not "
                         "match")
    if any((how == "whole") != (r == 1) or how not in ("whole", "part", "lane") or r > 1 and kind != "row"
           for kind, r, how in zip(f.outputs, f.out_widths, f.out_how)):
        raise ValueError(f"lowered.py: OUT_WIDTHS {f.out_widths} / OUT_HOW {f.out_how}: a 'row' output r > 1 pieces "
                         "wide is 'part' or 'lane', every other output 1 'whole'")
    if gemm and set(f.out_dtypes) - {"input", "fp32"}:
        raise ValueError(f"lowered.py: a GEMM's C is x's dtype or fp32, not {f.out_dtypes[0]} (a quantizer's "
                         "int8 / fp8 output is stored by the elementwise and reduction cells only)")
    if set(f.outputs) - {"row", "reduced", "reduced_keepdim"} or set(f.reductions) - {"sum", "max", "min"}:
        raise ValueError(f"lowered.py: unknown output or reduction kind in {f.outputs} / {f.reductions}")
    if len(f.passes) != len(f.reductions) or len(f.online) != len(f.reductions) or any(p < 0 for p in f.passes) \
            or any(m is not None and not (0 <= m < q and f.reductions[m] == "max" and f.reductions[q] == "sum"
                                      and f.passes[m] == f.passes[q]) for q, m in enumerate(f.online)):
        raise ValueError(f"lowered.py: PASSES {f.passes} / ONLINE {f.online} do not fit REDUCTIONS {f.reductions}: one "
                         "pass number >= 0 per reduction; an online sum's max an earlier max of the same pass")
    if len(f.inputs) + len(f.outputs) > SLOTS:
        raise ValueError(f"lowered op: {len(f.inputs)} inputs + {len(f.outputs)} outputs exceed the launcher's "
                         f"{SLOTS} tensor slots (flydsl_lowered.SLOTS)")
    return f


def plan_loads(args, kinds, widths) -> tuple[tuple, tuple, tuple]:
    """(loads, load_widths, of_arg): where compute()'s arguments (ARGS) come from, as the reduction cell loads them.

    `loads`: one register tensor each, in order of first use, keyed (input, how, j):
        (i, "whole", 0)  a row or vector input, vec elements per chunk (one 128-bit load; a mask's vec bytes)
        (i, "part", j)   part j of a wide input [M, r*N]: its columns [j*N, (j+1)*N), the same row stride, from
                         column j*N (vector j*NV of its row): vec elements per chunk, like any row
        (i, "lane", 0)   all the lanes of a wide input: r*vec contiguous elements per chunk (its vectors r*v ..
                         r*v + r-1 for the chunk's vector v: r 128-bit loads), shared by its lanes
    `load_widths`: each load's vectors per chunk (r for a wide input's lanes, 1 otherwise): the registers it takes.
    `of_arg`: per argument ("scalar", input, 0) for a single value (a scalar input, or one value per row: never
    loaded as a row, compute() takes it as an fp32 scalar), else (how,
    load, j); lane j of a lanes load is its fp32 values j, j + r, j + 2r, ... (columns j + r*c of x for the
    columns c of the other values: a register shuffle, no data movement). So every byte of a wide input is read
    once, with 128-bit loads, whichever way the function splits it."""
    loads, of_arg = [], []
    for i, how, j in args:
        if kinds[i] in SINGLE:
            of_arg.append(("scalar", i, 0))
            continue
        key = (i, how, 0 if how == "lane" else j)
        if key not in loads:
            loads.append(key)
        of_arg.append((how, loads.index(key), j))
    return (tuple(loads), tuple(widths[i] if how == "lane" else 1 for i, how, _ in loads), tuple(of_arg))


def out_dtype_name(kind: str, x_dtype: str) -> str:
    """An OUT_DTYPES entry as an op.json dtype name: 'input' is x's dtype, the others are names already."""
    return x_dtype if kind == "input" else kind


def slots(tensors) -> tuple:
    """The launcher's SLOTS tensor arguments: `tensors`, then tensors[0] (never read) in the unused slots."""
    return (*tensors, *(tensors[0],) * (SLOTS - len(tensors)))


def launch_slots(count: int) -> int:
    """The tensor slots of the row cells' launcher for `count` tensors: the smallest of LAUNCH_SLOTS that holds
    them (facts() refuses more than SLOTS)."""
    return next(k for k in LAUNCH_SLOTS if k >= count)


def short_slots(values) -> tuple:
    """A row cell's launcher arguments of one kind (tensors, or row strides): `values`, then values[0] (never read)
    up to launch_slots(len(values))."""
    return (*values, *(values[0],) * (launch_slots(len(values)) - len(values)))


def kernel_slots(values) -> tuple:
    """Inside a launcher (at trace time): its tensor slots (or row strides) padded to the kernel's SLOTS with the
    first (never read), so every launcher calls the same kernel."""
    return (*values, *(values[0],) * (SLOTS - len(values)))


def dtype_name(t) -> str:
    """A torch tensor's op.json dtype name; a mask's bytes (torch.uint8, host.lowered_viewer) are MASK."""
    name = str(t.dtype).removeprefix("torch.")
    return MASK if name == "uint8" else host.DTYPE_NAMES[name]


def pick_vec(widest_bytes: int, n: int, strides, addresses) -> int:
    """Widest power-of-two vector of 128 bits of the widest element that divides N and every row stride, and
    whose bytes (per tensor, up to 16) divide every address: `addresses` are (data_ptr, element bytes) pairs."""
    vec = ACCESS_BYTES // widest_bytes
    while vec > 1 and (n % vec or any(s % vec for s in strides)
                       or any(a % min(ACCESS_BYTES, vec * eb) for a, eb in addresses)):
        vec //= 2
    return vec


def check_buffer_range(tensors) -> None:
    """What FlyDSL adds to host.lowered_operands' checks: every tensor under the 2 GiB a buffer descriptor spans."""
    for t in tensors:
        if t.numel() * t.element_size() >= MAX_BYTES:
            raise ValueError(f"lowered: a tensor of {t.numel()} elements is over the 2 GiB range of a buffer descriptor")


def widest_bytes(tensors) -> int:
    """Bytes of the widest element among the row-wise tensors (the vector width is 16 bytes of it)."""
    return max(t.element_size() for t in tensors)


def placeholder_dtypes(x_dtype: str) -> tuple[list[str], list[str]]:
    """op.json dtype names of the inputs (x's dtype; a mask's bytes MASK) and outputs that compile_only compiles for."""
    f = facts()
    return [MASK if d == "bool" else x_dtype for d in f.dtypes], [out_dtype_name(d, x_dtype) for d in f.out_dtypes]


def compile_vec(x_dtype: str) -> int:
    """The vector width run() picks for 16-byte-aligned tensors of compile_only's dtypes (N a multiple of it):
    128 bits of the widest element among the inputs and the "row" outputs (a reduced output is one scalar)."""
    ins, outs = placeholder_dtypes(x_dtype)
    rows = [d for d, kind in zip(outs, facts().outputs) if kind == "row"]
    return ACCESS_BYTES // max(DTYPE_BYTES.get(d, 1) for d in ins + rows)


# ---- device side (traced into the kernels) ---------------------------------------------------------------

def regs(vec: int, chunks: int, dtype):
    """A register tensor of `chunks` vectors and its view: view[None, k] is vector k (elements k*vec ...).

    1-D storage on purpose: a (1, chunks) register tensor (vec = 1) fails FlyDSL 0.4.2's fly-layout-lowering
    with no diagnostic; a 1-D one viewed through logical_divide works for every vec.
    """
    r = fx.make_rmem_tensor(vec * chunks, dtype)
    return r, fx.logical_divide(r, fx.make_layout(vec, 1))


def vectors(t, vec: int):
    """Buffer-descriptor view of a 1-D tensor cut into vectors: view[None, i] is elements i*vec .. i*vec+vec-1.

    max_size=False: num_records is the tensor's size in bytes, so even a wrong index could not leave it.
    """
    return fx.logical_divide(fx.rocdl.make_buffer_tensor(t, max_size=False), fx.make_layout(vec, 1))


def scalar(t, index=0):
    """A "scalar" input's one element (a [1] tensor), or a "per_row" input's element `index` (its row's, [M]), as an
    fp32 scalar: one buffer load per lane. A row past M reads past the buffer's num_records, which the hardware
    returns as 0 without touching memory (and that row stores nothing)."""
    r = fx.make_rmem_tensor(1, t.element_type)
    fx.copy(fx.make_copy_atom(fx.rocdl.BufferCopy(t.element_type.width), t.element_type), vectors(t, 1)[None, index],
            r)
    return r.load().to(fx.Float32)[0]


def out_dtype(kind: str, x_type):
    """The element type of an output: x's for 'input', else fp32, int8 or fp8 e4m3fn (OCP)."""
    return {"input": x_type, "fp32": fx.Float32, "int8": fx.Int8, "fp8": fx.Float8E4M3FN}[kind]


def to_storage(value, dtype):
    """value (this lane's fp32 register vector of an output, or a reduced output's fp32 scalar) in the output's
    element type, as the store writes it: `.to(dtype)` (x's dtype rounded to nearest even; int8 v_cvt_i32_f32,
    truncation toward zero as torch's .to(torch.int8)), except fp8, which FlyDSL's .to() cannot lower (no
    arith.truncf to an 8-bit float on either target): e4m3fn_bytes."""
    if dtype is not fx.Float8E4M3FN:
        return value.to(dtype)
    if not isinstance(value, fx.Vector):
        return e4m3fn_bytes(fx.Vector.from_elements([fx.Float32(value)], fx.Float32))[0]
    return e4m3fn_bytes(value)


def e4m3fn_bytes(value):
    """An fp32 vector as float8_e4m3fn (OCP e4m3: bias 7, max 448, NaN 0x7f / 0xff: what torch.float8_e4m3fn holds),
    as torch's .to() makes it: rounded to nearest even, saturated to +-448 (infinities too), NaN kept. The hardware's
    v_cvt_pk_fp8_f32 converts two values into half a dword (two of them fill it: four bytes, then a bitcast; a
    reduced output's one value takes one), after a clamp, as the instruction is used without its clamp bit:

        gfx950  writes OCP e4m3 itself; the clamp to +-448 is maximumf / minimumf (v_maximum3 / v_minimum3: a NaN
                stays NaN, and converts to NaN)
        gfx942  writes FNUZ e4m3 (bias 8, max 240, its one NaN 0x80: what its MFMA reads), and every FNUZ byte is
                worth half the OCP byte of the same bits, subnormals too, so the OCP bytes of v are the FNUZ bytes
                of v / 2 (exact): v / 2 clamped to +-224 (maxnum / minnum: v_med3_f32), a NaN v replaced by 240
                (0x7f: OCP's NaN; a compare and a select). One difference to torch: a -0.0 (or a negative value
                that rounds to zero) is stored as +0.0 (0x00, not 0x80): equal values, another sign bit."""
    from flydsl.runtime.device import get_rocm_arch

    vals = [value[i] for i in range(value.numel)]
    if get_rocm_arch().startswith("gfx950"):
        vals = [fx.min(fx.max(v, fx.Float32(-448.0)), fx.Float32(448.0)) for v in vals]
    else:
        vals = [(v != v).select(fx.Float32(240.0), fx.arith.minnumf(fx.arith.maxnumf(v * 0.5, fx.Float32(-224.0)),
                                                                    fx.Float32(224.0))) for v in vals]
    vals += [fx.Float32(0.0)] * (len(vals) % 2)
    words = []
    for q in range(0, len(vals), 4):
        word = fx.rocdl.cvt_pk_fp8_f32(fx.Int32.ir_type, vals[q], vals[q + 1], fx.Int32(0), False)
        if q + 2 < len(vals):  # the dword's high half
            word = fx.rocdl.cvt_pk_fp8_f32(fx.Int32.ir_type, vals[q + 2], vals[q + 3], word, True)
        words.append(word)
    out = fx.Vector.from_elements([fx.Int32(w) for w in words], fx.Int32).bitcast(fx.Float8E4M3FN)
    return out if out.numel == value.numel else out.shuffle(out, list(range(value.numel)))


def compute(values, n, reduce) -> tuple:
    """lowered.compute(*values, n, reduce) under fastmath 'afn', as a flat tuple: each output's OUT_WIDTHS pieces in
    order (one value for every output but a wide row's)."""
    with fx.fastmath("afn"):
        result = facts().module.compute(*values, n, reduce)
    return tuple(result)
