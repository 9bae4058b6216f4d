"""FlyDSL pointwise library of the lowered op: the `pw.` functions a generated lowered.py calls, in fp32.

Its one job is the math of the user's function that Python operators cannot spell. The template traces the
user's PyTorch function and writes lowered.py (workspace root), whose compute() does arithmetic with + - * /
and comparisons and calls these functions for everything else; the cells (kernel.py) load the row values into
fp32 register vectors and call compute(), so every function here runs at trace time on FlyDSL values:

    an fp32 register vector (fx.Vector of Float32: the values a lane holds, all of one shape),
    an fp32 scalar (fx.Float32, e.g. a row's reduction or n), or a Python float (a constant of the source),

in any sensible mix, and returns the same kind (a vector when any operand is one). Boolean vectors come from
comparisons (`x < 0.0`) and feed where / logical_* / to_float. The names are the contract's
(tests/lowered_examples/CONTRACT.md in the template), the same in the CuTe DSL library.

Accuracy and speed (the check is rel_err < 1e-2 against float64, a norm ratio; HBM bandwidth is the bound)
    - exp, exp2, sigmoid, rsqrt, reciprocal: the hardware's approximate instructions under fastmath "afn"
      (v_exp_f32 after a multiply by log2(e), v_rcp_f32, v_rsq_f32: about 1 ulp), as the built-in silu and
      softmax do and as torch's own GPU kernels do for exp. The cells also trace compute() under "afn", so a
      `/` there is v_rcp_f32 and a multiply, not the IEEE v_div_scale / v_div_fmas / v_div_fixup sequence.
    - log, log2, sqrt: LLVM's full-precision AMDGPU expansions (a few instructions around v_log_f32 /
      v_sqrt_f32, denormal scaling included), so log near 1 keeps its relative accuracy.
    - log1p, erf, pow: the ROCm device library (ocml, linked from rocm-device-libs): accurate near 0 where a
      naive formula cancels (log1p(1e-7)), and pow has torch's special cases (a negative base with a
      non-integer exponent is NaN, pow(x, 0) = 1, pow(-2, 3) = -8). pow is the costly one (~200 instructions
      per element), which is why codegen lowers integer and +-0.5 exponents itself.
    - tanh: one v_exp_f32 and a v_rcp_f32, a polynomial near 0 (see tanh).
    - maximum / minimum: arith.maximumf / minimumf, which propagate NaN like torch.maximum (and order -0 < +0).
      gfx950 has v_maximum_f32; on gfx942 LLVM expands it to v_max_f32 + v_cmp_u + v_cndmask. The cells'
      row reductions do not use these: they fold with v_max3 trees plus a NaN flag (reduction cell).
    - cast(v, "bf16" | "fp16"): round to nearest even and back to fp32 (torch's `.to(bf16)` inside the op);
      gfx950 has v_cvt_pk_bf16_f32, gfx942 a multi-instruction rounding.

Everything is traced into the kernel: no Python-level state, no branches on values (where is a select).
Compiled to gfx942/gfx950 ISA on a CPU; never run on AMD hardware here (no AMD GPU).
"""

from __future__ import annotations

import math

import flydsl.expr as fx

LOG2_E = math.log2(math.e)
TWO_PI_HI = 6.28125  # 2pi's leading 8 bits (201/32): k * TWO_PI_HI is exact in fp32 for |k| < 2^16
TWO_PI_LO = 2.0 * math.pi - TWO_PI_HI  # the rest
_CAST = {"bf16": fx.BFloat16, "fp16": fx.Float16}


def _is_vector(v) -> bool:
    return isinstance(v, fx.Vector)


def _scalar(v):
    """A Python number as an fp32 (or bool) DSL scalar; DSL values unchanged."""
    if isinstance(v, bool):
        return fx.Boolean(v)
    if isinstance(v, (int, float)):
        return fx.Float32(float(v))
    return v


def _like(values):
    """The first vector among `values` (the result's shape), or None when all are scalars."""
    return next((v for v in values if _is_vector(v)), None)


def _operands(*values):
    """The operands as DSL values of one kind: all vectors of one shape when any operand is a vector."""
    values = [_scalar(v) for v in values]
    like = _like(values)
    if like is None:
        return values
    return [v if _is_vector(v) else _fill(like, v) for v in values]


def _fill(like, s):
    """A vector of like's shape holding s, in s's own type (fp32 or bool)."""
    return fx.Vector.filled(like.shape, s, type(s))


def full_like(v, s):
    """A vector of v's shape filled with the fp32 scalar or Python float s."""
    return fx.Vector.filled(v.shape, _scalar(float(s)) if isinstance(s, (int, float)) else s.to(fx.Float32),
                            fx.Float32)


# ---- unary ----------------------------------------------------------------------------------------

def exp(a):
    with fx.fastmath("afn"):
        return fx.exp2(_scalar(a) * LOG2_E)


def exp_shifted(a, b):
    """exp(a - b) for b one value a row (codegen's exp(x - m)): the subtraction first. The CuTe DSL library's one-FFMA
    form (a * log2(e) - b * log2(e), its SHIFT_FMA) waits for an H200 timing; nothing on CDNA is timed here."""
    return exp(a - b)  # as codegen writes a subtraction


def exp2(a):
    with fx.fastmath("afn"):
        return fx.exp2(_scalar(a))


def log(a):
    return fx.log(_scalar(a))


def log2(a):
    return fx.log2(_scalar(a))


def log1p(a):
    return fx.log1p(_scalar(a))


def expm1(a):
    """e^a - 1, accurate near 0 (where exp(a) - 1 cancels to nothing)."""
    return fx.expm1(_scalar(a))


def sqrt(a):
    return fx.sqrt(_scalar(a))


def rsqrt(a):
    with fx.fastmath("afn"):
        return fx.rsqrt(_scalar(a))


def tanh(a):
    """tanh from one v_exp_f32: sign(a) (1 - e) / (1 + e), e = exp(-2|a|); a Taylor polynomial for |a| < 1/8.

    FlyDSL 0.4.2's fx.tanh lowers to an undefined value (the compiled kernel stores a constant), so it is not
    used. The polynomial keeps the relative accuracy near 0 where 1 - e cancels (its first omitted term,
    62/2835 a^9, is below 2e-9 relative at 1/8); NaN stays NaN (the comparison is false, e is NaN)."""
    a = _scalar(a)
    with fx.fastmath("afn"):
        mag = fx.absf(a)
        e = fx.exp2(mag * (-2.0 * LOG2_E))
        t = (1.0 - e) / (1.0 + e)
        a2 = a * a
        poly = a * (1.0 + a2 * (-1.0 / 3.0 + a2 * (2.0 / 15.0 + a2 * (-17.0 / 315.0))))
        return (mag < 0.125).select(poly, (a < 0.0).select(-t, t))


def sigmoid(a):
    # 1 / (1 + e^-a): v_exp_f32 and v_rcp_f32; a -> -inf gives 1 / inf = 0, a -> +inf gives 1.
    with fx.fastmath("afn"):
        return 1.0 / (1.0 + fx.exp2(_scalar(a) * -LOG2_E))


def erf(a):
    return fx.erf(_scalar(a))


def _turns(a):
    """a less its whole turns, in [-pi, pi]: a - k*2pi with k = rint(a / 2pi), 2pi in two parts (Cody-Waite: k *
    TWO_PI_HI is exact for |k| < 2^16), so the hardware's sine sees the range where it is accurate."""
    k = fx.roundeven(a * (1.0 / (2.0 * math.pi)))
    return (a - k * TWO_PI_HI) - k * TWO_PI_LO


def _hardware(op, a):
    """rocdl.sin / rocdl.cos (v_sin_f32 / v_cos_f32: their argument in turns, sin(2 pi t)) of a's radians reduced by
    _turns, element by element (the instructions are scalar). fx.sin (math.sin) becomes ocml's accurate sinf, whose
    large-argument path took a lowered row kernel from ~70 to 178 VGPRs on gfx942, over the 128 of a 1024-lane
    workgroup."""
    turns = _turns(_scalar(a)) * (1.0 / (2.0 * math.pi))  # in [-1/2, 1/2]
    one = lambda t: fx.Float32(op(fx.Float32.ir_type, fx.Float32(t).ir_value()))  # noqa: E731
    if not _is_vector(turns):
        return one(turns)
    return fx.Vector.from_elements([one(turns[i]) for i in range(turns.numel)], fx.Float32)


def sin(a):
    return _hardware(fx.rocdl.sin, a)


def cos(a):
    return _hardware(fx.rocdl.cos, a)


def abs(a):  # noqa: A001 - the contract's name
    return fx.absf(_scalar(a))


def reciprocal(a):
    with fx.fastmath("afn"):
        return 1.0 / _scalar(a)


def round(a):  # noqa: A001 - the contract's name
    """To the nearest integer, halves to even (torch.round)."""
    return fx.roundeven(_scalar(a))


def floor(a):
    return fx.floor(_scalar(a))


def ceil(a):
    return fx.ceil(_scalar(a))


def trunc(a):
    return fx.trunc(_scalar(a))


# ---- binary / ternary -----------------------------------------------------------------------------

def pow(a, b):  # noqa: A001 - the contract's name
    """a ** b for a real exponent (ocml pow: NaN for a negative base with a non-integer exponent, as torch)."""
    a, b = _operands(a, b)
    return fx.powf(a, b)


def maximum(a, b):
    """NaN if either is NaN, else the larger (torch.maximum)."""
    a, b = _operands(a, b)
    return fx.maximumf(a, b)


def minimum(a, b):
    """NaN if either is NaN, else the smaller (torch.minimum)."""
    a, b = _operands(a, b)
    return fx.minimumf(a, b)


def where(c, a, b):
    """a where c else b; c a boolean vector or scalar (a Python bool picks at trace time)."""
    if isinstance(c, bool):
        return a if c else b
    c, a, b = _operands(c, a, b)
    return c.select(a, b)


def logical_and(a, b):
    a, b = _operands(a, b)
    return a & b


def logical_or(a, b):
    a, b = _operands(a, b)
    return a | b


def logical_not(a):
    if isinstance(a, bool):
        return not a
    return a ^ True


def to_float(c):
    """A boolean vector or scalar as 1.0 / 0.0 in fp32."""
    if isinstance(c, bool):
        return fx.Float32(1.0 if c else 0.0)
    return c.select(fx.Float32(1.0), fx.Float32(0.0))


def cast(v, dtype: str):
    """v rounded to bf16 / fp16 (round to nearest even) and back to fp32."""
    return _scalar(v).to(_CAST[dtype]).to(fx.Float32)
