"""CuTe DSL pointwise library of the lowered ops: the `pw.` functions a generated lowered.py calls inside compute().

Its one job is to give the names of tests/lowered_examples/CONTRACT.md (the same in every DSL) a CuTe DSL meaning,
on the values a cell hands to compute(): fp32 register vectors (`TensorSSA`), fp32 scalars (`Float32`, a row's
reduce() result, `n`) and Python floats (the constants codegen writes), in any mix. The scaffold moves this file
to the workspace root, beside kernel.py and lowered.py, which imports it as `import pointwise as pw`.

Operand kinds
    Every function first brings its operands to one kind (`_common`): if any operand is a vector, the others are
    broadcast to its shape (`cute.full_like`); otherwise Python floats become `Float32` constants. So
    `maximum(v, -2.0)`, `maximum(s, v)` and `maximum(s, 0.5)` all work, and a function returns the kind it was
    given: a vector for any vector operand, a scalar otherwise. Booleans (from `<`, `==` ... on vectors or
    scalars) are the conditions of `where` and the operands of the logical functions.

Accuracy and speed (the check: ||out - ref|| / ||ref|| against float64, 1e-2 for bf16, 1e-5 for fp32)
    Fast hardware approximations are used where their error is relative, a couple of ulp everywhere:
    exp / exp2 (``ex2.approx``), the reciprocal and sigmoid (``rcp.approx``, as the elementwise cell's silu) and
    rsqrt (``rsqrt.approx``). Where the fast form is only accurate in absolute terms near a zero of the result
    (``lg2.approx`` near 1), the accurate MLIR expansions are used: log, log2, log1p and erf are polynomial
    sequences of ~25 fp32 instructions, what torch's own kernels (and torch.compile's libdevice calls) compute.
    sqrt is IEEE ``sqrt.rn``.
    tanh is chosen by the workspace's error budget. ``tanh.approx.f32`` is ONE MUFU instruction whose relative error
    is at most 2^-10.99 ~ 5e-4 over the whole range (PTX ISA, "tanh"): a quarter of a bf16 ulp, and 1/20 of the
    1e-2 tolerance of a 16-bit workspace (op.json "tolerance"), which uses it (APPROX_TANH). An fp32 workspace's
    1e-5 cannot absorb it and gets the ~25-instruction expansion. The difference matters where tanh sits in a
    compute-bound kernel's epilogue: a GEMM's GELU-tanh runs on 128 accumulators per thread per tile, between the
    tile's last WGMMA and its store, and ~25 instructions per value there cost several percent of the GEMM.

NaN semantics
    maximum / minimum are torch.maximum / torch.minimum: NaN if either operand is NaN (PTX ``max.NaN.f32``,
    ``cute.arch.fmax(..., nan=True)``), applied element by element because MLIR's vector ``maximumf`` lowers to
    a compare-and-select sequence of three instructions per element instead of the one instruction.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
import host
from cutlass import Boolean, Float32

LOG2_E = math.log2(math.e)
TWO_PI_HI = 6.28125  # 2pi's leading 8 bits (201/32): k * TWO_PI_HI is exact in fp32 for |k| < 2^16
TWO_PI_LO = 2.0 * math.pi - TWO_PI_HI  # the rest
TANH_APPROX_ERR = 2.0 ** -10.99  # tanh.approx.f32's largest relative error (PTX ISA)
APPROX_TANH = TANH_APPROX_ERR * 20 <= host.OP["tolerance"]  # the workspace's tolerance covers it 20 times over
SHIFT_FMA = False  # exp_shifted in quack's one-FFMA form: correct on an H100, off until timed on the H200
SHIFT_MAX = 2.0 ** 10  # ... and then only where the workspace's tolerance covers its error 20 times for |b| up to this
_SHIFT_FITS = SHIFT_MAX * 2.0 ** -24 * 20 <= host.OP["tolerance"]  # (the 16-bit workspaces; not fp32's 1e-5)
_DTYPES = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}


def _is_vector(v) -> bool:
    return isinstance(v, cute.TensorSSA)


def _common(*operands, dtype=Float32):
    """The operands as one kind: all broadcast to the first vector's shape, or all scalars (Python numbers -> dtype)."""
    like = next((v for v in operands if _is_vector(v)), None)
    if like is None:
        return tuple(dtype(v) if isinstance(v, (bool, int, float)) else v for v in operands)
    return tuple(v if _is_vector(v) else cute.full_like(like, v, dtype) for v in operands)


def _per_element(fn, a, b):
    """fn(a[i], b[i]) for every element of two vectors of one shape, as a vector (fn works on scalars only)."""
    out = cute.make_rmem_tensor(a.shape, Float32)
    for i in range(cute.size(a.shape)):
        out[i] = fn(a[i], b[i])
    return out.load()


# ------------------------------------------------------------------------------------------------
# Unary functions
# ------------------------------------------------------------------------------------------------

def exp(x):
    return cute.math.exp2(_common(x)[0] * LOG2_E, fastmath=True)


def exp_shifted(a, b):
    """exp(a - b) where b is one value a row (softmax's max, from codegen's exp(x - m)): as exp2(a * log2(e) -
    b * log2(e)) with b * log2(e) taken once, one FFMA a value where (a - b) * log2(e) takes an FADD and an FMUL, as
    quack's softmax computes it. The price is b * log2(e) rounded once: an error of half an fp32 ulp of it in the
    exponent, a relative error under |b| * 2^-24 in the result, 20 times inside a 16-bit workspace's tolerance for
    |b| up to SHIFT_MAX (_SHIFT_FITS); an fp32 workspace subtracts first, and so does every workspace while SHIFT_FMA
    is off (benchmarks/2026-12-07-h200-tail.md: it saves softmax 1024x128256 64 instructions a thread, not yet timed
    on the H200)."""
    if not (SHIFT_FMA and _SHIFT_FITS):
        return exp(a - b)  # as codegen writes a subtraction
    scaled = b * LOG2_E
    return cute.math.exp2(_common(a)[0] * LOG2_E - scaled, fastmath=True)


def exp2(x):
    return cute.math.exp2(_common(x)[0], fastmath=True)


def log(x):
    return cute.math.log(_common(x)[0])


def log2(x):
    return cute.math.log2(_common(x)[0])


def log1p(x):
    return cute.math.log1p(_common(x)[0])


def expm1(x):
    """e^x - 1, accurate near 0 (MLIR's expansion), where exp(x) - 1 cancels to nothing."""
    return cute.math.expm1(_common(x)[0])


def sqrt(x):
    return cute.math.sqrt(_common(x)[0])


def rsqrt(x):
    return cute.math.rsqrt(_common(x)[0])


def tanh(x):
    return cute.math.tanh(_common(x)[0], fastmath=APPROX_TANH)


def erf(x):
    return cute.math.erf(_common(x)[0])


def _turns(x):
    """x less its whole turns, in [-pi, pi]: x - k*2pi with k = rint(x / 2pi), 2pi in two parts (Cody-Waite: k *
    TWO_PI_HI is exact for |k| < 2^16), so the fast sine sees the range where its error is 2^-20.5 absolute."""
    k = cute.math.roundeven(x * (1.0 / (2.0 * math.pi)))
    return (x - k * TWO_PI_HI) - k * TWO_PI_LO


def sin(x):
    """sin: ``sin.approx.f32`` (one MUFU op) on the argument reduced by _turns. libdevice's accurate sinf would add
    a Payne-Hanek path for |x| > 1e5 that keeps a local array on the stack; NaN and inf give NaN, as torch."""
    return cute.math.sin(_turns(_common(x)[0]), fastmath=True)


def cos(x):
    """cos, as sin (``cos.approx.f32``)."""
    return cute.math.cos(_turns(_common(x)[0]), fastmath=True)


def abs(x):  # noqa: A001 -- the contract's name
    return cute.math.abs(_common(x)[0])


def reciprocal(x):
    return cute.math.rcp(_common(x)[0], approx=True, ftz=True)


def sigmoid(x):
    return reciprocal(1.0 + exp(-_common(x)[0]))


def round(x):  # noqa: A001 -- the contract's name
    """To the nearest integer, halves to even (torch.round; PTX cvt.rni)."""
    return cute.math.roundeven(_common(x)[0])


def floor(x):
    return cute.math.floor(_common(x)[0])


def ceil(x):
    return cute.math.ceil(_common(x)[0])


def trunc(x):
    return cute.math.trunc(_common(x)[0])


# ------------------------------------------------------------------------------------------------
# Binary functions
# ------------------------------------------------------------------------------------------------

def pow(a, b):  # noqa: A001 -- the contract's name
    """a**b for a real exponent, as torch: |a|**b, negated for a < 0 and an odd integer b, NaN for a < 0 and a
    non-integer b, 1 for b == 0 or a == 1 (even with a NaN on the other side)."""
    a, b = _common(a, b)
    r = exp2(b * log2(abs(a)))
    whole = cute.math.floor(b) == b
    half = b * 0.5
    odd = logical_and(whole, cute.math.floor(half) != half)
    r = where(a < 0.0, where(odd, -r, where(whole, r, math.nan)), r)
    return where(logical_or(b == 0.0, a == 1.0), 1.0, r)


def _nan_max(a, b):
    return cute.arch.fmax(a, b, nan=True)


def _nan_min(a, b):
    return cute.arch.fmin(a, b, nan=True)


def maximum(a, b):
    a, b = _common(a, b)
    return _per_element(_nan_max, a, b) if _is_vector(a) else _nan_max(a, b)


def minimum(a, b):
    a, b = _common(a, b)
    return _per_element(_nan_min, a, b) if _is_vector(a) else _nan_min(a, b)


# ------------------------------------------------------------------------------------------------
# Conditions and booleans
# ------------------------------------------------------------------------------------------------

def where(c, a, b):
    """a where c else b; c a boolean vector, a Boolean scalar or a Python bool, a and b any fp32 kind."""
    if isinstance(c, bool):
        return _common(a, b)[0 if c else 1]
    like = next((v for v in (c, a, b) if _is_vector(v)), None)
    if like is None:
        return Float32(cutlass.select_(c, *_common(a, b)))
    a, b = (v if _is_vector(v) else cute.full_like(like, v, Float32) for v in (a, b))
    return cute.where(c if _is_vector(c) else cute.full_like(like, c, Boolean), a, b)


def logical_not(c):
    if isinstance(c, bool):
        return not c
    if _is_vector(c):
        return cute.where(c, cute.full_like(c, False, Boolean), cute.full_like(c, True, Boolean))
    return c == Boolean(False)


def logical_and(a, b):
    if isinstance(a, bool) or isinstance(b, bool):  # a constant side decides at trace time
        known, other = (a, b) if isinstance(a, bool) else (b, a)
        return other if known else False
    a, b = _common(a, b, dtype=Boolean)
    return a & b


def logical_or(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        known, other = (a, b) if isinstance(a, bool) else (b, a)
        return True if known else other
    a, b = _common(a, b, dtype=Boolean)
    return a | b


def to_float(c):
    """A boolean as 1.0 / 0.0 in fp32."""
    if isinstance(c, bool):
        return Float32(1.0 if c else 0.0)
    return where(c, 1.0, 0.0)


# ------------------------------------------------------------------------------------------------
# Rounding and constants
# ------------------------------------------------------------------------------------------------

def cast(v, dtype: str):
    """v rounded to dtype ('bf16' | 'fp16') and back to fp32: torch's `.to(bf16)` inside the op."""
    return _common(v)[0].to(_DTYPES[dtype]).to(Float32)


def full_like(v, s):
    """A vector of v's shape filled with s (a scalar or a Python float)."""
    return cute.full_like(v, s, Float32) if _is_vector(v) else _common(s)[0]
