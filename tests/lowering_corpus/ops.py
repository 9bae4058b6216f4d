"""The lowering corpus: user functions as a kernel engineer writes them, each lowered (or refused) by tools/lower.

`EXPECT` says what each must become: ("elementwise" | "reduction", number of outputs), or ("refused", words the
one-line refusal must contain). tests/test_lowering.py holds every function to it, checks each lowering against
the function in float64, and compiles every lowered one for sm_90a, gfx942 and gfx950; benchmarks/bench_lowered.py
runs the named ones on the H200 through the template's V0 flow.

`GEMM_EXPECT` does the same for the GEMM class (("gemm", 1)), kept apart from `EXPECT`: the GEMM cells compile their
epilogues in their own tests (test_gemm_epilogue.py, test_flydsl_gemm.py), once per code path, not once per function.
Its first four are tests/lowered_examples/lowered_gemm_<name>.py, byte for byte (line numbers included).
"""

import math

import torch
import torch.nn.functional as F

EPS = 1e-6
SCALE = 0.125

# ----------------------------------------------------------------------------------------- elementwise


def gelu_tanh_mul(x, y):
    return F.gelu(x, approximate="tanh") * y


def gelu_erf(x):
    return F.gelu(x)


def swiglu(gate, up):
    return F.silu(gate) * up


def bias_gelu(x, bias):
    return F.gelu(x + bias)


def where_clamp(x, y):
    z = x * y + 0.5
    return torch.where(z > 0, z, 0.1 * z).clamp(-2.0, 2.0)


def leaky_softplus(x):
    return F.leaky_relu(x, 0.2) + F.softplus(x)


def transcendental_mix(x):
    return torch.exp2(x * 0.5) - torch.log1p(x.abs()) + torch.sqrt(x * x + 1.0) * torch.tanh(x)


def sigmoid_gate(x, y):
    return torch.sigmoid(x) * y + (1 - torch.sigmoid(x)) * x


def pow_and_reciprocal(x):
    return x.pow(3) + (x * x + 1).reciprocal() + x.square() * SCALE


def erf_and_rsqrt(x):
    return torch.erf(x) * torch.rsqrt(x * x + 2.0)


def minimum_maximum(x, y):
    return torch.maximum(x, y) - torch.minimum(x, 0.5 * y)


def relu_squared(x):
    return F.relu(x) ** 2


def scaled_residual(x, residual, scale: float = 0.5):
    return residual + scale * x


def cast_roundtrip(x, y):
    return (x.float() * y.float()).to(x.dtype) + y


def two_outputs(x, y):
    s = x + y
    return s, F.silu(s)


def fp32_output(x):
    return F.silu(x.float())


def neg_abs_div(x, y):
    return -x.abs() / (y * y + 1.0)


# ----------------------------------------------------------------------------------------- row reductions


def layer_norm(x, weight, bias, eps: float = 1e-5):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def layer_norm_by_hand(x, weight, bias):
    mean = x.float().mean(-1, keepdim=True)
    var = (x.float() - mean).pow(2).mean(-1, keepdim=True)
    return ((x.float() - mean) * torch.rsqrt(var + 1e-5) * weight + bias).to(x.dtype)


def rmsnorm_one_plus(x, weight, eps=EPS):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * (1 + weight.float())).to(x.dtype)


def fused_add_rmsnorm(x, residual, weight, eps=EPS):
    h = x + residual
    v = h.float().pow(2).mean(-1, keepdim=True)
    return h, (h.float() * torch.rsqrt(v + eps)).to(x.dtype) * weight


def rms_norm_functional(x, weight):
    return F.rms_norm(x, (x.shape[-1],), weight, 1e-6)


def softmax_temperature(x, temperature: float = 0.7):
    return torch.softmax(x / temperature, dim=-1)


def log_softmax(x):
    return F.log_softmax(x.float(), dim=-1)


def logsumexp(x):
    return torch.logsumexp(x.float(), dim=-1)


def softmax_and_lse(x):
    m = x.amax(-1, keepdim=True)
    e = torch.exp(x - m)
    s = e.sum(-1, keepdim=True)
    return e / s, (torch.log(s) + m).squeeze(-1)


def l2_normalize(x):
    return F.normalize(x, dim=-1)


def variance_std(x):
    return x.var(-1), x.std(-1, correction=0, keepdim=True)


def row_max_min(x):
    return x.max(dim=-1).values - x.amin(-1)


def row_norm(x):
    return x.norm(p=2, dim=-1)


def softcap_softmax(x, cap: float = 30.0):
    return torch.softmax(cap * torch.tanh(x / cap), dim=-1)


def where_epilogue_softmax(x):
    p = torch.softmax(x, dim=-1)
    return torch.where(x > 0, p, torch.zeros_like(p)).clamp(max=0.5)


def mean_center(x):
    return x - x.mean(dim=1, keepdim=True)


def sum_by_hand_divided(x):
    return x.sum(-1, keepdim=True) / x.shape[-1]


def z_score_clamped(x):
    z = (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-6)
    return z.clamp(-3.0, 3.0)


# ----------------------------------------------------------------------------------------- refused


def sum_over_rows(x):
    return x.sum(0)


def cumulative(x):
    return torch.cumsum(x, dim=-1)


def argmax_indices(x):
    return x.argmax(-1).float()


def in_place(x):
    x.mul_(2.0)
    return x


def transpose(x):
    return x.t().contiguous()


def whole_tensor_sum(x):
    return x / x.sum()


def uses_rows(x):
    return x * x.shape[0]


def variadic(*tensors):
    return tensors[0] + tensors[1]


# ----------------------------------------------------------------------------------------- GEMM epilogues


def bias_gelu_tanh(x, w, bias):
    return F.gelu(F.linear(x, w, bias), approximate="tanh")


def bias_relu_squared(x, w, bias):
    return torch.relu(x @ w.T + bias) ** 2


def residual_add(x, w, residual):
    return x @ w.T + residual


def col_scale_bf16(x, w, col_scale: "[N]"):  # noqa: F821 -- a shape annotation, not a name
    return ((x @ w.T).float() * col_scale).to(torch.bfloat16)


def bare_matmul(a, b):
    return torch.matmul(a, b.t())


def linear_no_bias(x, w):
    return F.linear(x, w)


def row_scale_mm(x, w, row_scale):
    return torch.mm(x, w.T) * row_scale[:, None]


def row_scale_keepdim(x, w, scale: "[M, 1]"):  # noqa: F821 -- the annotation wins over the name `scale`
    return (x @ w.mT) * scale + 1.0


def residual_bias_silu(x, w, bias, residual):
    return F.silu(x @ w.transpose(0, 1) + bias + residual)


# ----------------------------------------------------------------------------------------- GEMM, refused


def two_matmuls(x, w, w2):
    return (x @ w.T) @ w2.T


def matmul_not_at_head(x, w):
    return F.silu(x) @ w.T


def gemm_softmax(x, w):
    return torch.softmax(x @ w.T, dim=-1)


def not_k_major(a, b):
    return a @ b


def gemm_two_outputs(x, w, bias):
    y = x @ w.T
    return y, y + bias


def batched_matmul(a, b):
    return torch.bmm(a, b.transpose(-1, -2))


GEMM_EXPECT = {
    "bias_gelu_tanh": ("gemm", 1), "bias_relu_squared": ("gemm", 1), "residual_add": ("gemm", 1),
    "col_scale_bf16": ("gemm", 1), "bare_matmul": ("gemm", 1), "linear_no_bias": ("gemm", 1),
    "row_scale_mm": ("gemm", 1), "row_scale_keepdim": ("gemm", 1), "residual_bias_silu": ("gemm", 1),
    "two_matmuls": ("refused", "is a second matmul"),
    "matmul_not_at_head": ("refused", "is not at the head"),
    "gemm_softmax": ("refused", "is a reduction"),
    "not_k_major": ("refused", "not K-major"),
    "gemm_two_outputs": ("refused", "returns 2 outputs"),
    "batched_matmul": ("refused", "batched"),
}


def preference_logsigmoid(chosen, rejected, beta: float = 0.1):
    """A DPO-style loss per element: F.logsigmoid, which aten traces as log_sigmoid_forward (value, buffer)."""
    return -F.logsigmoid(beta * (chosen - rejected))


def entropy_term(p, q):
    """An elementwise KL term as losses write it: xlogy (0 where p is 0, NaN for a NaN q: a NaN constant in
    lowered.py), with infinities of q zeroed (isinf); then, to compile the new forms once, weighted by torch.sinc
    (sin(pi x) / (pi x), 1 at 0) and torch.hypot (scaled: no square overflows)."""
    kl = torch.xlogy(p, p) - torch.xlogy(p, q)
    return torch.where(torch.isinf(q), 0.0, kl) * torch.sinc(p) + torch.hypot(p, q)


def counted_row_stats(x):
    """Booleans reduced over the row: a count (a sum of x != 0), NaNs ignored (torch.nansum), an any, an all and a
    max(dim).values. Rows with no positive value, or all far below zero, or all zero, become 0."""
    nonzero = (x != 0).sum(-1, keepdim=True)
    mean = x.nansum(-1, keepdim=True) / nonzero.clamp(min=1)
    keep = (x > 0).any(-1, keepdim=True) & ~(x < -1e4).all(-1, keepdim=True) & (x != 0).max(-1, keepdim=True).values
    return torch.where(keep, x - mean, 0.0)


def inplace_activations(x, y):
    """Activations run in place on values the function made (modules built with inplace=True: nn.SiLU(inplace=True),
    timm's act_layer(inplace=True)), then torch.nan_to_num and torch.logaddexp2."""
    h = F.silu(x + y, inplace=True)
    h = F.hardswish(h * 2, inplace=True) + F.leaky_relu(x * 0.5, 0.1, inplace=True)
    h = F.elu(h, inplace=True) + F.hardtanh(y * 3, inplace=True) + F.mish(x - y, inplace=True)
    return torch.logaddexp2(torch.nan_to_num(h, nan=0.0, posinf=1e4, neginf=-1e4), y)


def decibels_and_hyperbolics(x, y):
    """Ops torch does not decompose, written in the vocabulary's (convert.REWRITES): a spectrogram's decibels
    (10 log10 of a clamped power, torchaudio's amplitude_to_DB), erfc, sinh, cosh and logical_xor; then torch.aminmax
    over the row (decomposed), which makes this a row reduction."""
    db = 10.0 * torch.log10(torch.clamp(x * x, min=1e-10))
    h = torch.sinh(y * 0.5) - torch.cosh(y * 0.25) + torch.erfc(x) + torch.rad2deg(y) * 0.01
    h = torch.where(torch.logical_xor(x > 0, y > 0), h, -h)
    lo, hi = torch.aminmax(db, dim=-1, keepdim=True)
    return (db - lo) / (hi - lo + 1.0) + h


EXPECT = {
    "gelu_tanh_mul": ("elementwise", 1), "gelu_erf": ("elementwise", 1), "swiglu": ("elementwise", 1),
    "bias_gelu": ("elementwise", 1), "where_clamp": ("elementwise", 1), "leaky_softplus": ("elementwise", 1),
    "preference_logsigmoid": ("elementwise", 1), "entropy_term": ("elementwise", 1),
    "transcendental_mix": ("elementwise", 1), "sigmoid_gate": ("elementwise", 1),
    "pow_and_reciprocal": ("elementwise", 1), "erf_and_rsqrt": ("elementwise", 1),
    "minimum_maximum": ("elementwise", 1), "relu_squared": ("elementwise", 1),
    "scaled_residual": ("elementwise", 1), "cast_roundtrip": ("elementwise", 1), "two_outputs": ("elementwise", 2),
    "fp32_output": ("elementwise", 1), "neg_abs_div": ("elementwise", 1), "inplace_activations": ("elementwise", 1),
    "layer_norm": ("reduction", 1), "layer_norm_by_hand": ("reduction", 1), "rmsnorm_one_plus": ("reduction", 1),
    "fused_add_rmsnorm": ("reduction", 2), "rms_norm_functional": ("reduction", 1),
    "softmax_temperature": ("reduction", 1), "log_softmax": ("reduction", 1), "logsumexp": ("reduction", 1),
    "softmax_and_lse": ("reduction", 2), "l2_normalize": ("reduction", 1), "variance_std": ("reduction", 2),
    "row_max_min": ("reduction", 1), "row_norm": ("reduction", 1), "softcap_softmax": ("reduction", 1),
    "where_epilogue_softmax": ("reduction", 1), "mean_center": ("reduction", 1),
    "sum_by_hand_divided": ("reduction", 1), "z_score_clamped": ("reduction", 1), "counted_row_stats": ("reduction", 1),
    "decibels_and_hyperbolics": ("reduction", 1),
    "sum_over_rows": ("refused", "reduces over a dim other than the last"),
    "cumulative": ("refused", "torch.cumsum"),
    "argmax_indices": ("refused", "argmax"),
    "in_place": ("refused", "in place"),
    "transpose": ("refused", "ops.py:"),
    "whole_tensor_sum": ("refused", "ops.py:"),
    "uses_rows": ("refused", "number of rows M"),
    "variadic": ("refused", "*tensors"),
}
assert math.isfinite(SCALE)
