{%- set op = cookiecutter.__op -%}
{%- set pattern = cookiecutter.pattern -%}
{%- set params = (op | kb_op_info(pattern)).inputs | join(", ") -%}
"""PyTorch reference for `{{ op }}` ({{ pattern }}): the ground truth test_kernel.py checks against.

{% if cookiecutter.pytorch_logic -%}
The logic is yours: `{{ cookiecutter.__pytorch_logic_function }}` from {{ cookiecutter.pytorch_logic }}, copied here as
user_logic.py. The harness generates this op's inputs ({{ params }}) and hands them to your function
by parameter name when its parameters are named {{ params }}, otherwise by position.
{%- else -%}
Built in: the plain PyTorch expression of the op.
{%- endif %}

- reference(*inputs): the harness calls it on float64 copies of the floating-point inputs, so the
  reference adds no rounding error of its own; integer inputs (seq_lens) are passed unchanged.
- baseline(*inputs): what "torch" means in the timing: called on the native-dtype inputs in the same
  run, with the same timer, as the kernel.
- make_inputs(case, dtype, device, seed): fresh random inputs for one op.json case: never zeros,
  which hide unwritten outputs.
"""

{% if cookiecutter.pytorch_logic -%}
import inspect

import torch
from user_logic import {{ cookiecutter.__pytorch_logic_function }} as user_function
{% else -%}
{%- if pattern == "decode_attention" %}
import math

{% endif -%}
import torch
{%- if op not in ["add", "mul", "sum", "mean", "max", "softmax", "matmul"] %}
import torch.nn.functional as F
{%- endif %}
{% endif %}
INPUTS = [{% for name in params.split(", ") %}"{{ name }}"{{ ", " if not loop.last }}{% endfor %}]
{%- if op == "rmsnorm" %}
EPS = 1e-6  # torch.nn.functional.rms_norm's eps here, and the kernel's (op.json params.eps)
{%- endif %}


def reference({{ params }}):
{%- if cookiecutter.pytorch_logic %}
    """Your function, called with this op's inputs mapped by name (or by position)."""
    tensors = dict(zip(INPUTS, ({{ params }},)))
    names = list(inspect.signature(user_function).parameters)
    if set(INPUTS) <= set(names):
        return user_function(**tensors)
    return user_function(*tensors.values())
{%- elif op == "add" %}
    return x + y
{%- elif op == "mul" %}
    return x * y
{%- elif op == "silu" %}
    return F.silu(x)
{%- elif op == "gelu" %}
    return F.gelu(x)  # exact erf form (approximate="none"), the same as the kernel
{%- elif op == "relu" %}
    return F.relu(x)
{%- elif op == "silu_mul" %}
    return F.silu(x) * y  # SwiGLU: x is the gate projection, y the up projection
{%- elif op == "sum" %}
    return x.sum(dim=-1)  # torch accumulates 16-bit inputs in fp32 and rounds once
{%- elif op == "mean" %}
    return x.mean(dim=-1)
{%- elif op == "max" %}
    return x.amax(dim=-1)
{%- elif op == "softmax" %}
    return torch.softmax(x, dim=-1)
{%- elif op == "rmsnorm" %}
    return F.rms_norm(x, (x.shape[-1],), weight, eps=EPS)
{%- elif op == "matmul" %}
    return a @ b.T  # nn.Linear's layout: both operands K-major
{%- elif op == "gqa" %}
    """Masked softmax attention for one query token per sequence, grouped so K/V are never copied per head."""
    batch, hq, d = q.shape
    s_max, hkv = k_cache.shape[1], k_cache.shape[2]
    qg = q.view(batch, hkv, hq // hkv, d)  # query heads h = kv * group + g share KV head kv
    scores = torch.einsum("bkgd,bskd->bkgs", qg, k_cache) / math.sqrt(d)
    valid = torch.arange(s_max, device=q.device)[None, :] < seq_lens[:, None]  # [B, S_max]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("bkgs,bskd->bkgd", probs, v_cache).reshape(batch, hq, d)
{%- endif %}
{% if pattern == "decode_attention" and not cookiecutter.pytorch_logic %}

_MASKS = {}


def baseline({{ params }}):
    """torch SDPA with GQA on the cache layout, as a serving stack calls it. The key mask (None when every
    sequence is full) is built once per input set, outside the timed launches, so torch is not charged a
    host sync."""
    key = (seq_lens.data_ptr(), k_cache.shape[1])
    if key not in _MASKS:
        s_max = k_cache.shape[1]
        full = bool((seq_lens == s_max).all())
        _MASKS[key] = None if full else (torch.arange(s_max, device=q.device)[None, :] < seq_lens[:, None])[:, None, None, :]
    out = F.scaled_dot_product_attention(q.unsqueeze(2), k_cache.transpose(1, 2), v_cache.transpose(1, 2),
                                         attn_mask=_MASKS[key], enable_gqa=True)
    return out.squeeze(2)
{%- else %}


def baseline(*inputs):
    """torch eager on the native dtype: the reference itself."""
    return reference(*inputs)
{%- endif %}


def make_inputs(case, dtype, device, seed):
    """Fresh standard-normal inputs for one op.json case, in the order of INPUTS."""
    gen = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape):
        return torch.randn(shape, dtype=dtype, device=device, generator=gen)
{% if pattern == "elementwise" %}
    return [randn(*case["dims"]) for _ in INPUTS]
{%- elif pattern == "reduction" %}
    m, n = case["dims"]
    stride = case.get("row_stride") or n
    x = randn(m, stride)[:, :n]  # a padded row stride when stride > n: the kernel must honour x.stride(0)
{%- if op == "rmsnorm" %}
    return [x, randn(n)]
{%- else %}
    return [x]
{%- endif %}
{%- elif pattern == "gemm" %}
    m, n, k = case["dims"]
    return [randn(m, k), randn(n, k)]
{%- elif pattern == "decode_attention" %}
    batch, hq, hkv, s_max, d = case["dims"]
    seq_lens = torch.tensor(case["seq_lens"], dtype=torch.int32, device=device)
    k_cache, v_cache = randn(batch, s_max, hkv, d), randn(batch, s_max, hkv, d)
    stale = torch.arange(s_max, device=device)[None, :] >= seq_lens[:, None]  # slots past each length
    k_cache[stale] = 8.0  # stale cache slots hold large values: reading them ruins the result, so a leak fails
    v_cache[stale] = 1000.0
    return [randn(batch, hq, d), k_cache, v_cache, seq_lens]
{%- endif %}
