"""Hand-written lowered.py files for the input model's kinds (tests/lowered_examples/CONTRACT.md), compiled by both
DSLs' cell tests (tests/test_lowered_cutedsl.py, tests/test_lowered_flydsl.py): one text each, so the CuTe DSL and
FlyDSL cells are held to the same programs."""

# The input model's other kinds, in the user's parameter order: a runtime scalar first (so x is not input 0), a
# bool mask (launched as its bytes), a vector; a softmax over the masked row, rounded (pw.round: v_rndne_f32).
MASK_SCALAR = '''
import pointwise as pw

SOURCE = "test:mask_scalar"
INPUTS = ("alpha", "x", "mask", "w")
KINDS = ("scalar", "row", "row", "vector")
DTYPES = ("float", "float", "bool", "float")
WIDTHS = (1, 1, 1, 1)
ARGS = ((0, "whole", 0), (1, "whole", 0), (2, "whole", 0), (3, "whole", 0))
OUTPUTS = ("row", "reduced")
OUT_WIDTHS = (1, 1)
OUT_HOW = ("whole", "whole")
DIMS = ()
HEADS = None
RANK = None
OUT_DTYPES = ("input", "fp32")
REDUCTIONS = ("max", "sum")
PASSES = (0, 0)
ONLINE = (None, 0)
LATE = ()
USES_N = False


def compute(alpha, x, mask, w, n, reduce):
    mask = mask != 0.0
    s = pw.where(mask, x * alpha + w, -1e30)
    m = reduce("max", s)
    e = pw.exp(s - m)
    z = reduce("sum", e)
    m, e = reduce("rebase", (m, e))
    return (pw.round(e * pw.reciprocal(z) * 127.0), m + pw.log(z))
'''
# The elementwise cell's analogue: no reduce() calls, one row output.
MASK_SCALAR_ELEMENTWISE = (
    MASK_SCALAR.replace('REDUCTIONS = ("max", "sum")', "REDUCTIONS = ()").replace("PASSES = (0, 0)", "PASSES = ()")
    .replace("ONLINE = (None, 0)", "ONLINE = ()")
    .replace('OUTPUTS = ("row", "reduced")', 'OUTPUTS = ("row",)').replace("OUT_WIDTHS = (1, 1)", "OUT_WIDTHS = (1,)")
    .replace('OUT_HOW = ("whole", "whole")', 'OUT_HOW = ("whole",)')
    .replace('OUT_DTYPES = ("input", "fp32")', 'OUT_DTYPES = ("input",)')
    .replace('    m = reduce("max", s)\n', "    m = 0.0\n").replace('    z = reduce("sum", e)\n', "    z = 2.0\n")
    .replace('    m, e = reduce("rebase", (m, e))\n', "")
    .replace(", m + pw.log(z))", ",)"))
# A wide input read in parts, as the lowering writes it for x.chunk(2, -1) (PARTS) and for x[..., ::2], x[..., 1::2]
# (LANES): x is [M, 2N], the output [M, N]; a wide program always runs in the reduction (row) cell.
PARTS = '''
import pointwise as pw

SOURCE = "test:parts"
INPUTS = ("x", "w")
KINDS = ("row", "vector")
DTYPES = ("float", "float")
WIDTHS = (2, 1)
ARGS = ((0, "part", 0), (0, "part", 1), (1, "whole", 0))
OUTPUTS = ("row",)
OUT_WIDTHS = (1,)
OUT_HOW = ("whole",)
DIMS = ()
HEADS = None
RANK = None
OUT_DTYPES = ("input",)
REDUCTIONS = ()
PASSES = ()
ONLINE = ()
LATE = ()
USES_N = False


def compute(x_part0, x_part1, w, n, reduce):
    return (x_part0 * pw.sigmoid(x_part0) * x_part1 * w,)
'''
LANES = PARTS.replace('ARGS = ((0, "part", 0), (0, "part", 1), (1, "whole", 0))',
                      'ARGS = ((0, "lane", 0), (0, "lane", 1), (1, "whole", 0))')
# A quantizer: the row's int8 values (the user's final .to(torch.int8), done by the store: truncation toward zero)
# and its fp32 scale; QUANT_FP8 the same stored as float8_e4m3fn (OCP e4m3 on both targets: gfx942's converter
# writes FNUZ, so the cell converts v / 2, flydsl_lowered.e4m3fn_bytes); the elementwise cell's analogues with a
# constant scale.
QUANT = '''
import pointwise as pw

SOURCE = "test:quant"
INPUTS = ("x",)
KINDS = ("row",)
DTYPES = ("float",)
WIDTHS = (1,)
ARGS = ((0, "whole", 0),)
OUTPUTS = ("row", "reduced_keepdim")
OUT_WIDTHS = (1, 1)
OUT_HOW = ("whole", "whole")
DIMS = ()
HEADS = None
RANK = None
OUT_DTYPES = ("int8", "fp32")
REDUCTIONS = ("max",)
PASSES = (0,)
ONLINE = (None,)
LATE = ()
USES_N = False


def compute(x, n, reduce):
    s = 127.0 * pw.reciprocal(pw.maximum(reduce("max", pw.abs(x)), 1e-5))
    return (pw.minimum(pw.maximum(pw.round(x * s), -128.0), 127.0), 1.0 / s)
'''
QUANT_FP8 = QUANT.replace('OUT_DTYPES = ("int8", "fp32")', 'OUT_DTYPES = ("fp8", "fp32")')
QUANT_ELEMENTWISE = (
    QUANT.replace('OUTPUTS = ("row", "reduced_keepdim")', 'OUTPUTS = ("row",)').replace("OUT_WIDTHS = (1, 1)",
                                                                                      "OUT_WIDTHS = (1,)")
    .replace('OUT_HOW = ("whole", "whole")', 'OUT_HOW = ("whole",)')
    .replace('OUT_DTYPES = ("int8", "fp32")', 'OUT_DTYPES = ("int8",)').replace('REDUCTIONS = ("max",)', "REDUCTIONS = ()")
    .replace("PASSES = (0,)", "PASSES = ()").replace("ONLINE = (None,)", "ONLINE = ()")
    .replace('reduce("max", pw.abs(x))', "4.0").replace(", 1.0 / s)", ",)"))
QUANT_FP8_ELEMENTWISE = QUANT_ELEMENTWISE.replace('OUT_DTYPES = ("int8",)', 'OUT_DTYPES = ("fp8",)')
# RoPE as the lowering writes it (tools/lower/convert.py): q [B, S, H, D] read in halves (x[..., :D/2], x[..., D/2:]),
# cos/sin [S, D] broadcast over B and H (host.broadcast_rows' [L0, L1, L2, D] views, stride 0 where broadcast), and the
# output [B, S, H, D] written in halves (torch.cat); ROPE_LANES the interleaved form (x[..., ::2], stack + flatten).
ROPE = '''
import pointwise as pw

SOURCE = "test:rope"
INPUTS = ("q", "cos", "sin")
KINDS = ("row", "broadcast", "broadcast")
DTYPES = ("float", "float", "float")
WIDTHS = (2, 2, 2)
ARGS = ((0, "part", 0), (0, "part", 1), (1, "part", 0), (1, "part", 1), (2, "part", 0), (2, "part", 1))
OUTPUTS = ("row",)
OUT_WIDTHS = (2,)
OUT_HOW = ("part",)
DIMS = (("B", "S", "H", "D"), ("S", "D"), ("S", "D"))
HEADS = None
RANK = None
OUT_DTYPES = ("input",)
REDUCTIONS = ()
PASSES = ()
ONLINE = ()
LATE = ()
USES_N = False


def compute(q_part0, q_part1, cos_part0, cos_part1, sin_part0, sin_part1, n, reduce):
    return (q_part0 * cos_part0 - q_part1 * sin_part0, q_part1 * cos_part1 + q_part0 * sin_part1)
'''
ROPE_LANES = ROPE.replace('"part"', '"lane"')
# A QK-norm as the lowering writes it: x [T, H*c] viewed as heads of c = 128 (HEADS), RMS-normalised per head.
HEADS = '''
RANK = None
import pointwise as pw

SOURCE = "test:heads"
INPUTS = ("x", "weight")
KINDS = ("row", "vector")
DTYPES = ("float", "float")
WIDTHS = (1, 1)
ARGS = ((0, "whole", 0), (1, "whole", 0))
OUTPUTS = ("row",)
OUT_WIDTHS = (1,)
OUT_HOW = ("whole",)
DIMS = ()
HEADS = 128
RANK = None
OUT_DTYPES = ("input",)
REDUCTIONS = ("sum",)
PASSES = (0,)
ONLINE = (None,)
LATE = (1,)
USES_N = True


def compute(x, weight, n, reduce):
    return (weight * x * pw.rsqrt(reduce("sum", x * x) * pw.reciprocal(n) + 1e-6),)
'''
# Heads over two row inputs (a residual added before the norm): both come as the model passes them, [T, H*c], and
# the launcher views both as heads.
HEADS_RESIDUAL = (
    HEADS.replace('INPUTS = ("x", "weight")', 'INPUTS = ("x", "residual", "weight")')
    .replace('KINDS = ("row", "vector")', 'KINDS = ("row", "row", "vector")')
    .replace('DTYPES = ("float", "float")', 'DTYPES = ("float", "float", "float")')
    .replace("WIDTHS = (1, 1)", "WIDTHS = (1, 1, 1)")
    .replace('ARGS = ((0, "whole", 0), (1, "whole", 0))', 'ARGS = ((0, "whole", 0), (1, "whole", 0), (2, "whole", 0))')
    .replace('def compute(x, weight, n, reduce):\n    return (weight * x * pw.rsqrt(reduce("sum", x * x)',
             'def compute(x, residual, weight, n, reduce):\n    s = x + residual\n'
             '    return (weight * s * pw.rsqrt(reduce("sum", s * s)'))
# One value per row (KINDS "per_row"), as the lowering writes it for `x.float() * scale[:, None]` with scale [M] and a
# bool keep_mask [M, 1] (launched as its M bytes), then an RMS norm of the scaled row with a [N] weight: each single
# value is read once per thread, at the thread's row, and compute() takes it as an fp32 scalar.
PER_ROW = '''
import pointwise as pw

SOURCE = "test:per_row"
INPUTS = ("x", "scale", "keep_mask", "weight")
KINDS = ("row", "per_row", "per_row", "vector")
DTYPES = ("float", "float", "bool", "float")
WIDTHS = (1, 1, 1, 1)
ARGS = ((0, "whole", 0), (1, "whole", 0), (2, "whole", 0), (3, "whole", 0))
OUTPUTS = ("row", "reduced")
OUT_WIDTHS = (1, 1)
OUT_HOW = ("whole", "whole")
DIMS = ()
HEADS = None
RANK = None
OUT_DTYPES = ("input", "fp32")
REDUCTIONS = ("sum",)
PASSES = (0,)
ONLINE = (None,)
LATE = (2, 3)
USES_N = True

EPS = 1e-06


def compute(x, scale, keep_mask, weight, n, reduce):
    keep_mask = keep_mask != 0.0
    t0 = x * scale
    t1 = t0 * t0
    t2 = reduce("sum", t1)
    t3 = t2 * pw.reciprocal(n)
    t4 = t3 + EPS
    t5 = pw.rsqrt(t4)
    t6 = t0 * t5
    t7 = t6 * weight
    t8 = pw.logical_not(keep_mask)
    t9 = pw.where(t8, 0.0, t7)
    t11 = t3 * scale
    return (t9, t11)
'''
# The same kind in a program without reductions (a Mamba padding mask, `hidden_states * attention_mask[:, :, None]`
# over [B, S, D]): it runs in the row cell (tools/lower/ir.py pattern), the only one that knows a value's row.
PER_ROW_ELEMENTWISE = '''
SOURCE = "test:per_row_elementwise"
INPUTS = ("hidden_states", "attention_mask")
KINDS = ("row", "per_row")
DTYPES = ("float", "bool")
WIDTHS = (1, 1)
ARGS = ((0, "whole", 0), (1, "whole", 0))
OUTPUTS = ("row",)
OUT_WIDTHS = (1,)
OUT_HOW = ("whole",)
DIMS = (("B", "S", "D"), ("B", "S"))
HEADS = None
RANK = None
OUT_DTYPES = ("input",)
REDUCTIONS = ()
PASSES = ()
ONLINE = ()
LATE = ()
USES_N = False


def compute(hidden_states, attention_mask, n, reduce):
    attention_mask = attention_mask != 0.0
    t0 = hidden_states * attention_mask
    return (t0,)
'''
# One value per row broadcast over some of x's leading dims (KINDS "broadcast_per_row"): a per-sample a [B] and a
# per-channel bool keep [C] over NCHW rows (DDPM's add_noise, masked by channel); each read once per thread through
# host.broadcast_rows' [L0, L1, L2] view (stride 0 where broadcast); and pw.sin on a vector, pw.cos on a scalar.
BROADCAST_PER_ROW = '''
import pointwise as pw

SOURCE = "test:broadcast_per_row"
INPUTS = ("x", "noise", "a", "keep")
KINDS = ("row", "row", "broadcast_per_row", "broadcast_per_row")
DTYPES = ("float", "float", "float", "bool")
WIDTHS = (1, 1, 1, 1)
ARGS = ((0, "whole", 0), (1, "whole", 0), (2, "whole", 0), (3, "whole", 0))
OUTPUTS = ("row",)
OUT_WIDTHS = (1,)
OUT_HOW = ("whole",)
DIMS = (("B", "C", "H", "W"), ("B", "C", "H", "W"), ("B",), ("C",))
HEADS = None
RANK = None
OUT_DTYPES = ("input",)
REDUCTIONS = ()
PASSES = ()
ONLINE = ()
LATE = ()
USES_N = False


def compute(x, noise, a, keep, n, reduce):
    keep = keep != 0.0
    t0 = pw.sqrt(a) * x + pw.sqrt(1.0 - a) * noise
    t1 = t0 + pw.sin(a * x) * pw.cos(a)
    return (pw.where(keep, t1, 0.0),)
'''
