"""What both FlyDSL cells share to run a generated lowered.py (op.json "op": "lowered"): its facts, the tensor
slots of the launcher, the operand checks and outputs of run(), the register/buffer views and the compute() call.

Its one job is the glue between the user's compute (lowered.py at the workspace root, written by the template
from the user's PyTorch function, see its CONTRACT) and a cell's hand-written data movement. The cell keeps
its own tiling, loads, reductions and stores; this module gives it:

    facts()             lowered.py's INPUTS / KINDS / OUTPUTS / OUT_DTYPES / REDUCTIONS (a GEMM's KINDS: "a", "b",
                        then its epilogue inputs, CONTRACT_GEMM.md), and a `key` (a hash of
                        lowered.py) that every compiled variant carries as a Constexpr, so a re-baked lowered.py
                        can never be served a kernel compiled from the old one
    SLOTS, slots()      a FlyDSL launcher has a fixed signature (no *args, no list of tensors), so the lowered
                        launchers take SLOTS tensor slots: the inputs in INPUTS order, then the outputs in
                        OUTPUTS order, the unused slots filled with x (never read; FlyDSL still fills each slot's
                        ABI words on every call, a few hundred ns each)
    check_buffer_range()  the one check FlyDSL adds to host.lowered_operands (the argument checks every cell
                        shares, CuTe DSL's too): a buffer descriptor spans under 2 GiB
    pick_vec()          the widest vector (<= 128 bits for the widest element of any row-wise tensor) that N, the
                        row strides and every address allow
    regs(), vectors()   the register tensor of a lane's chunks and the buffer view of a tensor cut into vectors:
                        the cells' one way to move vec elements (also used by the reduction cell's built-in ops)
    compute(values, n, reduce)  lowered.compute(*values, n, reduce) traced under fastmath "afn" (a `/` in the
                        user's code is v_rcp_f32 and a multiply, as the built-in softmax does), as a tuple

The values a cell passes are fp32 register vectors of one shape, `.load().to(fx.Float32)` of its register
tensors, in INPUTS order; a "vector" input's vector holds, element for element, the [N] vector's entries for the
columns of the row values beside it. compute() returns one value per output: a vector for a "row" output, an
fp32 scalar for a "reduced" one.

Compiled to gfx942/gfx950 ISA on a CPU; the lowered kernels have never run on AMD hardware here (no AMD GPU).
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import flydsl.expr as fx
from flydsl_runtime import DTYPE_BYTES, MAX_BYTES

SLOTS = 8  # tensor slots of a lowered launcher: inputs + outputs
ACCESS_BYTES = 16  # 128-bit buffer accesses


@cache
def facts() -> SimpleNamespace:
    """lowered.py's declarations, checked once, and the hash of its text (`key`)."""
    import lowered

    f = SimpleNamespace(module=lowered, inputs=tuple(lowered.INPUTS), kinds=tuple(lowered.KINDS),
                        outputs=tuple(lowered.OUTPUTS), out_dtypes=tuple(lowered.OUT_DTYPES),
                        reductions=tuple(lowered.REDUCTIONS),
                        key=hashlib.sha256(Path(lowered.__file__).read_bytes()).hexdigest()[:16])
    if f.kinds[:2] == ("a", "b"):  # a GEMM's epilogue (CONTRACT_GEMM.md): a, b, then its inputs; one C
        if (len(f.inputs) != len(f.kinds) or set(f.kinds[2:]) - {"row", "vector", "per_row"}
                or f.outputs != ("row",) or f.reductions):
            raise ValueError(f"lowered.py: a GEMM's KINDS {f.kinds} must be 'a', 'b', then 'row' | 'vector' | "
                             f"'per_row', with one 'row' output and no reductions (has {f.outputs}, {f.reductions})")
    elif len(f.inputs) != len(f.kinds) or not f.kinds or f.kinds[0] != "row" or set(f.kinds) - {"row", "vector"}:
        raise ValueError(f"lowered.py: KINDS {f.kinds} must give 'row' or 'vector' per input, 'row' first")
    if len(f.outputs) != len(f.out_dtypes) or not f.outputs or set(f.out_dtypes) - {"input", "fp32"}:
        raise ValueError(f"lowered.py: OUTPUTS {f.outputs} / OUT_DTYPES {f.out_dtypes} do not match")
    if set(f.outputs) - {"row", "reduced", "reduced_keepdim"} or set(f.reductions) - {"sum", "max", "min"}:
        raise ValueError(f"lowered.py: unknown output or reduction kind in {f.outputs} / {f.reductions}")
    if len(f.inputs) + len(f.outputs) > SLOTS:
        raise ValueError(f"lowered op: {len(f.inputs)} inputs + {len(f.outputs)} outputs exceed the launcher's "
                         f"{SLOTS} tensor slots (flydsl_lowered.SLOTS)")
    return f


def out_dtype_name(kind: str, x_dtype: str) -> str:
    """An OUT_DTYPES entry as an op.json dtype name: 'input' is x's dtype."""
    return x_dtype if kind == "input" else "fp32"


def slots(tensors) -> tuple:
    """The launcher's SLOTS tensor arguments: `tensors`, then x (tensors[0]) in the unused slots."""
    return (*tensors, *(tensors[0],) * (SLOTS - len(tensors)))


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
    """op.json dtype names of the inputs (all x's dtype) and outputs that compile_only compiles for."""
    f = facts()
    return [x_dtype] * len(f.inputs), [out_dtype_name(d, x_dtype) for d in f.out_dtypes]


def compile_vec(x_dtype: str) -> int:
    """The vector width run() picks for 16-byte-aligned tensors of compile_only's dtypes (N a multiple of it):
    128 bits of the widest element among the inputs and the "row" outputs (a reduced output is one scalar)."""
    ins, outs = placeholder_dtypes(x_dtype)
    rows = [d for d, kind in zip(outs, facts().outputs) if kind == "row"]
    return ACCESS_BYTES // max(DTYPE_BYTES[d] for d in ins + rows)


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


def out_dtype(kind: str, x_type):
    """The element type of an output: x's for 'input', fp32 otherwise."""
    return x_type if kind == "input" else fx.Float32


def compute(values, n, reduce) -> tuple:
    """lowered.compute(*values, n, reduce) under fastmath 'afn', as a tuple of one value per output."""
    with fx.fastmath("afn"):
        result = facts().module.compute(*values, n, reduce)
    return tuple(result)
