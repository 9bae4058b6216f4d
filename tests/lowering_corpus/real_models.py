"""A corpus of real model code for the lowering: module bodies copied from transformers, diffusers, timm and torch.

Each function is an upstream forward (or the named part of one) kept as close to verbatim as a plain function can
be: `self.weight`, `self.eps`, ... became parameters (tensors, or constants with the upstream default), `module.*`
became plain arguments, and dropout runs with training=False. The comment above each names its upstream file and
`Class.method`. `CASES` says, for each, the kernel class it should lower to ("elementwise" | "reduction" | "gemm" |
"decode_attention") or "refused" with words the refusal should contain, the shapes (and non-float dtypes) of its
tensor parameters, and why. Run this file to execute every case once in eager PyTorch on random inputs.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

# ===================================================================================================== activations


# transformers/activations.py: GELUTanh._gelu_tanh_python
def gelu_tanh_python(input):
    return input * 0.5 * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


# transformers/activations.py: GELUTanh.forward (= PytorchGELUTanh; self.act = partial(gelu, approximate="tanh"))
def pytorch_gelu_tanh(input):
    return F.gelu(input, approximate="tanh")


# transformers/activations.py: NewGELUActivation.forward
def new_gelu(input):
    return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


# transformers/activations.py: GELUActivation._gelu_python
def gelu_python(input):
    return input * 0.5 * (1.0 + torch.erf(input / math.sqrt(2.0)))


# transformers/activations.py: GELUActivation.forward (self.act = nn.functional.gelu)
def gelu_activation(input):
    return F.gelu(input)


# transformers/activations.py: FastGELUActivation.forward
def fast_gelu(input):
    return 0.5 * input * (1.0 + torch.tanh(input * 0.7978845608 * (1.0 + 0.044715 * input * input)))


# transformers/activations.py: QuickGELUActivation.forward
def quick_gelu(input):
    return input * torch.sigmoid(1.702 * input)


# transformers/activations.py: ClippedGELUActivation.forward ("gelu_10": min=-10, max=10; gelu = GELUActivation)
def clipped_gelu(x, min: float = -10.0, max: float = 10.0):
    return torch.clip(F.gelu(x), min, max)


# transformers/activations.py: AccurateGELUActivation.forward
def accurate_gelu(input, precomputed_constant: float = math.sqrt(2 / math.pi)):
    return 0.5 * input * (1 + torch.tanh(precomputed_constant * (input + 0.044715 * torch.pow(input, 3))))


# transformers/activations.py: MishActivation._mish_python
def mish_python(input):
    return input * torch.tanh(F.softplus(input))


# transformers/activations.py: MishActivation.forward (self.act = nn.functional.mish)
def mish(input):
    return F.mish(input)


# transformers/activations.py: SiLUActivation.forward
def silu(input):
    return F.silu(input)


# transformers/activations.py: LaplaceActivation.forward
def laplace(input, mu=0.707107, sigma=0.282095):
    input = (input - mu).div(sigma * math.sqrt(2.0))
    return 0.5 * (1.0 + torch.erf(input))


# transformers/activations.py: ReLUSquaredActivation.forward
def relu_squared(input):
    relu_applied = F.relu(input)
    squared = torch.square(relu_applied)
    return squared


# transformers/activations.py: SqrtSoftplusActivation.forward
def sqrt_softplus(input):
    return F.softplus(input).sqrt()


# transformers/activations.py: XIELUActivation._xielu_python (alpha_p, alpha_n: [1] parameters; beta, eps: 0-d buffers)
def xielu(x, alpha_p, alpha_n, beta, eps):
    alpha_p = F.softplus(alpha_p)
    alpha_n = beta + F.softplus(alpha_n)
    return torch.where(
        x > 0,
        alpha_p * x * x + beta * x,
        (torch.expm1(torch.min(x, eps)) - x) * alpha_n + beta * x,
    )


# transformers/models/bloom/modeling_bloom.py: bloom_gelu_forward
def bloom_gelu(x):
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


# timm/layers/activations.py: hard_sigmoid (inplace=False)
def hard_sigmoid(x):
    return F.relu6(x + 3.) / 6.


# timm/layers/activations.py: hard_swish (inplace=False)
def hard_swish(x):
    inner = F.relu6(x + 3.).div_(6.)
    return x.mul(inner)


# timm/layers/activations.py: hard_mish (inplace=False)
def hard_mish(x):
    return 0.5 * x * (x + 2).clamp(min=0, max=2)


# torch/nn/modules/activation.py: PReLU.forward (num_parameters = channels, the last dim of a [N, C] input)
def prelu(input, weight):
    return F.prelu(input, weight)


# ================================================================================== gated MLPs: the activation part


# transformers/models/llama/modeling_llama.py: LlamaMLP.forward, the act part: act_fn(gate_proj(x)) * up_proj(x)
def llama_mlp_act(gate, up):
    return F.silu(gate) * up


# transformers/models/phi3/modeling_phi3.py: Phi3MLP.forward, after gate_up_proj (activation_fn = silu)
def phi3_gate_up_act(up_states):
    gate, up_states = up_states.chunk(2, dim=-1)
    up_states = up_states * F.silu(gate)
    return up_states


# diffusers/models/activations.py: SwiGLU.forward, after self.proj (self.activation = nn.SiLU())
def diffusers_swiglu(hidden_states):
    hidden_states, gate = hidden_states.chunk(2, dim=-1)
    return hidden_states * F.silu(gate)


# diffusers/models/activations.py: GEGLU.forward, after self.proj (self.gelu(gate) = F.gelu(gate))
def diffusers_geglu(hidden_states):
    hidden_states, gate = hidden_states.chunk(2, dim=-1)
    return hidden_states * F.gelu(gate)


# transformers/models/gpt_oss/modeling_gpt_oss.py: GptOssExperts._apply_gate (alpha = 1.702, limit = 7.0)
def gpt_oss_apply_gate(gate_up, alpha: float = 1.702, limit: float = 7.0):
    gate, up = gate_up[..., ::2], gate_up[..., 1::2]
    gate = gate.clamp(min=None, max=limit)
    up = up.clamp(min=-limit, max=limit)
    glu = gate * torch.sigmoid(gate * alpha)
    gated_output = (up + 1) * glu
    return gated_output


# transformers/models/t5/modeling_t5.py: T5DenseGatedActDense.forward, the act part (act = gelu_new, eval dropout)
def t5_gated_act(wi_0_out, hidden_linear):
    hidden_gelu = new_gelu(wi_0_out)
    hidden_states = hidden_gelu * hidden_linear
    hidden_states = F.dropout(hidden_states, p=0.1, training=False)
    return hidden_states


# transformers/models/qwen3_next/modeling_qwen3_next.py: Qwen3NextAttention.forward, the output gate
def qwen3_next_attn_gate(attn_output, gate):
    attn_output = attn_output * torch.sigmoid(gate)
    return attn_output


# transformers/models/gemma3n/modeling_gemma3n.py: Gemma3nTextMLP._gaussian_topk (activation_sparsity 0.95, the
# first ten layers' in Gemma 3n's config): keep what lies above the row's mean + 1.645 std (a normal's 95% quantile)
def gemma3n_gaussian_topk(inputs, activation_sparsity: float = 0.95):
    target_sparsity_tensor = torch.tensor(activation_sparsity, dtype=torch.float32, device=inputs.device)
    # normal_dist and std_multiplier are adapted from jax.scipy.stats.norm.ppf().
    #
    # References:
    #   *   https://docs.jax.dev/en/latest/_autosummary/jax.scipy.stats.norm.ppf.html
    #   *   https://pytorch.org/docs/stable/distributions.html#torch.distributions.normal.Normal
    #   *   https://pytorch.org/docs/stable/distributions.html#torch.distributions.transformed_distribution.TransformedDistribution.icdf
    normal_dist = torch.distributions.normal.Normal(0, 1)
    std_multiplier: torch.Tensor = normal_dist.icdf(target_sparsity_tensor)
    std_multiplier = std_multiplier.type(inputs.dtype)
    inputs_mean = torch.mean(inputs, dim=-1, keepdim=True)
    inputs_std = torch.std(inputs, dim=-1, keepdim=True, unbiased=False)
    cutoff_x = inputs_mean + inputs_std * std_multiplier
    return nn.functional.relu(inputs - cutoff_x)


# transformers/models/gemma3n/modeling_gemma3n.py: Gemma3nTextMLP.forward between its projections (hidden_activation
# gelu_pytorch_tanh): the sparse gate, its activation, and * up_proj
def gemma3n_mlp_act(gate_proj, up_proj, activation_sparsity: float = 0.95):
    if activation_sparsity > 0.0:
        gate_proj = gemma3n_gaussian_topk(gate_proj, activation_sparsity)
    activations = F.gelu(gate_proj, approximate="tanh")
    return activations * up_proj


# ============================================================================================================ norms


# transformers/models/llama/modeling_llama.py: LlamaRMSNorm.forward
def llama_rmsnorm(hidden_states, weight, variance_epsilon: float = 1e-6):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    return weight * hidden_states.to(input_dtype)


# transformers/models/qwen2/modeling_qwen2.py: Qwen2RMSNorm.forward (copied from Llama)
def qwen2_rmsnorm(hidden_states, weight, variance_epsilon: float = 1e-6):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    return weight * hidden_states.to(input_dtype)


# transformers/models/mixtral/modeling_mixtral.py: MixtralRMSNorm.forward (copied from Llama)
def mixtral_rmsnorm(hidden_states, weight, variance_epsilon: float = 1e-5):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    return weight * hidden_states.to(input_dtype)


# transformers/models/deepseek_v3/modeling_deepseek_v3.py: DeepseekV3RMSNorm.forward (copied from Llama)
def deepseek_v3_rmsnorm(hidden_states, weight, variance_epsilon: float = 1e-6):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    return weight * hidden_states.to(input_dtype)


# transformers/models/gemma/modeling_gemma.py: GemmaRMSNorm._norm + GemmaRMSNorm.forward
def gemma_rmsnorm(x, weight, eps: float = 1e-6):
    def _norm(x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

    output = _norm(x.float())
    # Llama does x.to(float16) * w whilst Gemma is (x * w).to(float16)
    output = output * (1.0 + weight.float())
    return output.type_as(x)


# transformers/models/gemma3n/modeling_gemma3n.py: Gemma3nRMSNorm._norm + Gemma3nRMSNorm.forward (with_scale=True)
def gemma3n_rmsnorm(hidden_states, weight, variance_epsilon: float = 1e-6, with_scale: bool = True):
    def _norm(hidden_states):
        mean_squared = hidden_states.pow(2).mean(-1, keepdim=True) + variance_epsilon
        # Use torch.pow() (over torch.sqrt() or torch.rsqrt()) to address compiler differences between Torch and JAX
        return hidden_states * torch.pow(mean_squared, -0.5)

    normed_output = _norm(hidden_states.float())
    if with_scale:
        normed_output = normed_output * weight.float()
    return normed_output.type_as(hidden_states)


# transformers/models/llama4/modeling_llama4.py: Llama4TextWeightlessRMSNorm (= Llama4TextL2Norm) _norm + forward
def llama4_l2norm(x, variance_epsilon: float = 1e-6):
    def _norm(x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + variance_epsilon)

    return _norm(x.float()).type_as(x)


# transformers/models/olmo2/modeling_olmo2.py: Olmo2RMSNorm.forward (gpt_oss GptOssRMSNorm.forward is the same)
def olmo2_rmsnorm(hidden_states, weight, variance_epsilon: float = 1e-6):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    return (weight * hidden_states).to(input_dtype)  # main diff with Llama


# transformers/models/t5/modeling_t5.py: T5LayerNorm.forward
def t5_layernorm(hidden_states, weight, variance_epsilon: float = 1e-6):
    variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)

    # convert into half-precision if necessary
    if weight.dtype in [torch.float16, torch.bfloat16]:
        hidden_states = hidden_states.to(weight.dtype)

    return weight * hidden_states


# diffusers/models/normalization.py: RMSNorm.forward (the non-NPU path, elementwise_affine=True, no bias)
def diffusers_rmsnorm(hidden_states, weight, eps: float = 1e-6):
    input_dtype = hidden_states.dtype
    variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + eps)

    if weight is not None:
        # convert into half-precision if necessary
        if weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(weight.dtype)
        hidden_states = hidden_states * weight
    else:
        hidden_states = hidden_states.to(input_dtype)

    return hidden_states


# transformers/models/cohere/modeling_cohere.py: CohereLayerNorm.forward (hidden_size an int: the model's norms)
def cohere_layernorm(hidden_states, weight, variance_epsilon: float = 1e-5):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    mean = hidden_states.mean(-1, keepdim=True)
    variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
    hidden_states = (hidden_states - mean) * torch.rsqrt(variance + variance_epsilon)
    hidden_states = weight.to(torch.float32) * hidden_states
    return hidden_states.to(input_dtype)


# transformers/models/cohere/modeling_cohere.py: CohereLayerNorm.forward as CohereAttention.q_norm
# (hidden_size=(num_heads, head_dim): weight [H, D] on query_states [B, S, H, D]; stats over D only)
def cohere_qk_layernorm(hidden_states, weight, variance_epsilon: float = 1e-5):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    mean = hidden_states.mean(-1, keepdim=True)
    variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
    hidden_states = (hidden_states - mean) * torch.rsqrt(variance + variance_epsilon)
    hidden_states = weight.to(torch.float32) * hidden_states
    return hidden_states.to(input_dtype)


# transformers/models/olmo/modeling_olmo.py: OlmoLayerNorm.forward (no weight, no bias)
def olmo_layernorm(hidden_states):
    normalized_shape = (hidden_states.shape[-1],)
    orig_dtype = hidden_states.dtype
    return F.layer_norm(hidden_states.to(dtype=torch.float32), normalized_shape, None, None, eps=1e-5).to(
        orig_dtype
    )


# transformers/models/nemotron/modeling_nemotron.py: NemotronLayerNorm1P.forward (autocast casting left out)
def nemotron_layernorm1p(input, weight, bias, eps: float = 1e-5):
    normalized_shape = (input.shape[-1],)
    return F.layer_norm(input, normalized_shape, weight + 1.0, bias, eps)


# transformers/models/chameleon/modeling_chameleon.py: ChameleonLayerNorm.forward
# (hidden_size=(H, D): stats over D, then a per-head weight and bias [H, D])
def chameleon_layernorm(hidden_states, weight, bias):
    normalized_shape = (hidden_states.shape[-1],)
    hidden_states = F.layer_norm(hidden_states, normalized_shape, None, None, eps=1e-5)
    hidden_states = hidden_states * weight + bias
    return hidden_states


# transformers/models/qwen3/modeling_qwen3.py: Qwen3Attention.forward, q_norm on the per-head view
# query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)), Qwen3RMSNorm over head_dim only
def qwen3_q_norm(q_proj_out, weight, head_dim: int = 64, variance_epsilon: float = 1e-6):
    input_shape = q_proj_out.shape[:-1]
    hidden_shape = (*input_shape, -1, head_dim)
    hidden_states = q_proj_out.view(hidden_shape)
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    return weight * hidden_states.to(input_dtype)


# transformers/models/qwen3/modeling_qwen3.py: Qwen3Attention.forward, the whole q_norm line with .transpose(1, 2)
def qwen3_q_norm_transposed(q_proj_out, weight, head_dim: int = 64, variance_epsilon: float = 1e-6):
    input_shape = q_proj_out.shape[:-1]
    hidden_shape = (*input_shape, -1, head_dim)
    hidden_states = q_proj_out.view(hidden_shape)
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    query_states = (weight * hidden_states.to(input_dtype)).transpose(1, 2)
    return query_states


# transformers/models/qwen3_next/modeling_qwen3_next.py: Qwen3NextRMSNormGated.forward (activation = silu)
def qwen3_next_rmsnorm_gated(hidden_states, gate, weight, variance_epsilon: float = 1e-6):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    # Norm before gate
    hidden_states = hidden_states * torch.rsqrt(variance + variance_epsilon)
    hidden_states = weight * hidden_states.to(input_dtype)
    hidden_states = hidden_states * F.silu(gate.to(torch.float32))

    return hidden_states.to(input_dtype)


# transformers/models/mamba2/modeling_mamba2.py: Mamba2RMSNormGated.forward (norm over groups of group_size)
def mamba2_rmsnorm_gated(hidden_states, gate, weight, group_size: int = 64, variance_epsilon: float = 1e-6):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    if gate is not None:
        hidden_states = hidden_states * F.silu(gate.to(torch.float32))
    *prefix_dims, last_dim = hidden_states.shape
    group_count = last_dim // group_size
    hidden_states_group = hidden_states.view(*prefix_dims, group_count, group_size)
    variance = hidden_states_group.pow(2).mean(-1, keepdim=True)
    hidden_states_group = hidden_states_group * torch.rsqrt(variance + variance_epsilon)
    hidden_states = hidden_states_group.view(*prefix_dims, group_count * group_size)
    return weight * hidden_states.to(input_dtype)


# transformers/models/convnext/modeling_convnext.py: ConvNextLayerNorm.forward, data_format="channels_first"
def convnext_layernorm_channels_first(features, weight, bias, eps: float = 1e-6):
    input_dtype = features.dtype
    features = features.float()
    mean = features.mean(1, keepdim=True)
    variance = (features - mean).pow(2).mean(1, keepdim=True)
    features = (features - mean) / torch.sqrt(variance + eps)
    features = features.to(dtype=input_dtype)
    features = weight[:, None, None] * features + bias[:, None, None]
    return features


# timm/layers/norm.py: LayerNorm2d.forward (NCHW: normalises over C through a permute; _fast_norm False)
def timm_layernorm2d(x, weight, bias, eps: float = 1e-6):
    normalized_shape = (x.shape[1],)
    x = x.permute(0, 2, 3, 1)
    x = F.layer_norm(x, normalized_shape, weight, bias, eps)
    x = x.permute(0, 3, 1, 2)
    return x


# transformers/models/bert/modeling_bert.py: BertSelfOutput.forward minus self.dense: dropout, LayerNorm(h + input)
def bert_residual_layernorm(hidden_states, input_tensor, weight, bias, eps: float = 1e-12):
    hidden_states = F.dropout(hidden_states, p=0.1, training=False)
    hidden_states = F.layer_norm(hidden_states + input_tensor, (hidden_states.shape[-1],), weight, bias, eps)
    return hidden_states


# diffusers/models/normalization.py: AdaLayerNormZero.forward, from emb.chunk(6, dim=1) on (self.norm: LayerNorm
# without affine, eps 1e-6; emb's Linear is a GEMM of its own). shift and scale are [B, D], x is [B, S, D]
def diffusers_ada_layer_norm_zero(x, shift_msa, scale_msa):
    x = F.layer_norm(x, (x.shape[-1],), None, None, 1e-6) * (1 + scale_msa[:, None]) + shift_msa[:, None]
    return x


# diffusers/models/normalization.py: AdaLayerNormContinuous.forward, from torch.chunk(emb, 2, dim=1) on (SD3's
# norm_out: LayerNorm without affine, eps 1e-6): the arithmetic on scale happens in its own dims, [B, D]
def diffusers_ada_layer_norm_continuous(x, scale, shift):
    x = F.layer_norm(x, (x.shape[-1],), None, None, 1e-6) * (1 + scale)[:, None, :] + shift[:, None, :]
    return x


# diffusers/models/normalization.py: SD35AdaLayerNormZeroX.forward, from emb.chunk(9, dim=1) on: one norm, two
# modulations of it
def sd35_ada_layer_norm_zero_x(hidden_states, shift_msa, scale_msa, shift_msa2, scale_msa2):
    norm_hidden_states = F.layer_norm(hidden_states, (hidden_states.shape[-1],), None, None, 1e-6)
    hidden_states = norm_hidden_states * (1 + scale_msa[:, None]) + shift_msa[:, None]
    norm_hidden_states2 = norm_hidden_states * (1 + scale_msa2[:, None]) + shift_msa2[:, None]
    return hidden_states, norm_hidden_states2


# ============================================================================================================= RoPE


# transformers/models/llama/modeling_llama.py: rotate_half
def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


# transformers/models/llama/modeling_llama.py: apply_rotary_pos_emb (q, k [B, H, S, D]; cos, sin [B, S, D])
def llama_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


# transformers/models/olmo/modeling_olmo.py: apply_rotary_pos_emb, called with unsqueeze_dim=2 (q, k [B, S, H, D])
def olmo_apply_rotary_pos_emb_bshd(q, k, cos, sin, unsqueeze_dim=2):
    q_type, k_type = q.dtype, k.dtype
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed.to(q_type), k_embed.to(k_type)


# transformers/models/cohere/modeling_cohere.py: rotate_half (interleaved: "different from e.g. Llama")
def cohere_rotate_half(x):
    # Split and rotate. Note that this function is different from e.g. Llama.
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    rot_x = torch.stack([-x2, x1], dim=-1).flatten(-2)
    return rot_x


# transformers/models/cohere/modeling_cohere.py: apply_rotary_pos_emb
def cohere_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    dtype = q.dtype
    q = q.float()
    k = k.float()
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (cohere_rotate_half(q) * sin)
    k_embed = (k * cos) + (cohere_rotate_half(k) * sin)
    return q_embed.to(dtype=dtype), k_embed.to(dtype=dtype)


# transformers/models/glm/modeling_glm.py: rotate_half
def glm_rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., 0::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


# diffusers/models/embeddings.py: apply_rotary_emb (use_real=True, use_real_unbind_dim=-1: Flux, CogVideoX,
# HunyuanDiT); freqs_cis, the (cos, sin) pair of [S, D], as two parameters
def diffusers_apply_rotary_emb(x, cos, sin):
    cos = cos[None, None]
    sin = sin[None, None]
    cos, sin = cos.to(x.device), sin.to(x.device)

    # Used for flux, cogvideox, hunyuan-dit
    x_real, x_imag = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)  # [B, S, H, D//2]
    x_rotated = torch.stack([-x_imag, x_real], dim=-1).flatten(3)

    out = (x.float() * cos + x_rotated.float() * sin).to(x.dtype)
    return out


# diffusers/models/embeddings.py: apply_rotary_emb (use_real=True, use_real_unbind_dim=-2: Stable Audio, OmniGen,
# CogView4 and Cosmos); freqs_cis as two parameters
def diffusers_apply_rotary_emb_halves(x, cos, sin):
    cos = cos[None, None]
    sin = sin[None, None]
    cos, sin = cos.to(x.device), sin.to(x.device)

    # Used for Stable Audio, OmniGen, CogView4 and Cosmos
    x_real, x_imag = x.reshape(*x.shape[:-1], 2, -1).unbind(-2)  # [B, S, H, D//2]
    x_rotated = torch.cat([-x_imag, x_real], dim=-1)

    out = (x.float() * cos + x_rotated.float() * sin).to(x.dtype)
    return out


# transformers/models/glm/modeling_glm.py: apply_rotary_pos_emb (interleaved, partial: cos/sin cover rotary_dim < D)
def glm_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)

    # Interleave them instead of usual shape
    cos = cos[..., : cos.shape[-1] // 2].repeat_interleave(2, dim=-1)
    sin = sin[..., : sin.shape[-1] // 2].repeat_interleave(2, dim=-1)

    # Keep half or full tensor for later concatenation
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]

    # Apply rotary embeddings on the first half or full tensor
    q_embed = (q_rot * cos) + (glm_rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (glm_rotate_half(k_rot) * sin)

    # Concatenate back to full shape
    q_embed = torch.cat([q_embed, q_pass], dim=-1)
    k_embed = torch.cat([k_embed, k_pass], dim=-1)
    return q_embed, k_embed


# transformers/models/gptj/modeling_gptj.py: rotate_every_two
def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)  # in einsum notation: rearrange(x, '... d j -> ... (d j)')


# transformers/models/gptj/modeling_gptj.py: apply_rotary_pos_emb (tensor [B, S, H, D]; sin, cos [B, S, D/2])
def gptj_apply_rotary_pos_emb(tensor: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (tensor * cos) + (rotate_every_two(tensor) * sin)


# transformers/models/deepseek_v3/modeling_deepseek_v3.py: apply_rotary_pos_emb_interleave
def deepseek_v3_apply_rotary_pos_emb_interleave(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    # `cos`/`sin` are `cat(freqs, freqs)`; the first half holds the per-pair angle.
    cos = cos[..., : cos.shape[-1] // 2].unsqueeze(unsqueeze_dim)
    sin = sin[..., : sin.shape[-1] // 2].unsqueeze(unsqueeze_dim)

    q1, q2 = q[..., 0::2], q[..., 1::2]
    k1, k2 = k[..., 0::2], k[..., 1::2]

    q_embed = torch.cat([q1 * cos - q2 * sin, q2 * cos + q1 * sin], dim=-1)
    k_embed = torch.cat([k1 * cos - k2 * sin, k2 * cos + k1 * sin], dim=-1)
    return q_embed, k_embed


# transformers/models/qwen2_vl/modeling_qwen2_vl.py: apply_rotary_pos_emb_vision (q, k [S, H, D]; cos, sin [S, D])
def qwen2_vl_apply_rotary_pos_emb_vision(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    orig_q_dtype = q.dtype
    orig_k_dtype = k.dtype
    q, k = q.float(), k.float()
    cos, sin = cos.unsqueeze(-2).float(), sin.unsqueeze(-2).float()
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    q_embed = q_embed.to(orig_q_dtype)
    k_embed = k_embed.to(orig_k_dtype)
    return q_embed, k_embed


# transformers/models/llama4/modeling_llama4.py: apply_rotary_emb (complex freqs_cis [B, S, D/2])
def llama4_apply_rotary_emb(
    xq: torch.Tensor,
    xk: torch.Tensor,
    freqs_cis: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    xq_out = torch.view_as_real(xq_ * freqs_cis[:, :, None, :]).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis[:, :, None, :]).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


# ==================================================================================== attention scores and logits


# transformers/models/llama/modeling_llama.py: eager_attention_forward, from the scores on
# (attn_weights = matmul(q, k^T) comes in; the additive mask [B, 1, Sq, Sk]; eval dropout; query.dtype a constant)
def llama_attn_scores_softmax(attn_weights, attention_mask, scaling: float = 0.125, query_dtype=torch.float32):
    attn_weights = attn_weights * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask

    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_dtype)
    attn_weights = F.dropout(attn_weights, p=0.0, training=False)
    return attn_weights


# transformers/models/gemma2/modeling_gemma2.py: eager_attention_forward, from the scores on (softcap = 50.0,
# query.dtype a constant)
def gemma2_attn_softcap_softmax(attn_weights, attention_mask, scaling: float = 0.0625, softcap: float = 50.0,
                                query_dtype=torch.float32):
    attn_weights = attn_weights * scaling

    if softcap is not None:
        attn_weights = attn_weights / softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * softcap
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask

    # upcast attention to fp32
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_dtype)
    attn_weights = F.dropout(attn_weights, p=0.0, training=False)
    return attn_weights


# transformers/models/gpt_neo/modeling_gpt_neo.py: GPTNeoSelfAttention._attn, from the scores on
# (causal_mask = self.bias[...] a bool [1, 1, Sq, Sk]; attn_dropout in eval)
def gpt_neo_causal_softmax(attn_weights, causal_mask):
    mask_value = torch.finfo(attn_weights.dtype).min
    # Need to be a tensor, otherwise we get error: `RuntimeError: expected scalar type float but found double`.
    # Need to be on the same device, otherwise `RuntimeError: ..., x and y to be on the same device`
    mask_value = torch.tensor(mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
    attn_weights = torch.where(causal_mask, attn_weights, mask_value)

    attn_weights = F.softmax(attn_weights, dim=-1)
    return attn_weights


# transformers/models/gpt_oss/modeling_gpt_oss.py: eager_attention_forward, from the scores on (sinks [H])
def gpt_oss_sink_softmax(attn_weights, attention_mask, sinks):
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask

    sinks = sinks.reshape(1, -1, 1, 1).expand(attn_weights.shape[0], -1, attn_weights.shape[-2], -1)
    combined_logits = torch.cat([attn_weights, sinks], dim=-1)

    # This was not in the original implementation and slightly affect results; it prevents overflow in BF16/FP16
    # when training with bsz>1 we clamp max values.

    combined_logits = combined_logits - combined_logits.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined_logits, dim=-1, dtype=combined_logits.dtype)
    scores = probs[..., :-1]  # we drop the sink here
    return scores


# transformers/models/gemma2/modeling_gemma2.py: Gemma2ForCausalLM.forward, final logit softcapping (cap 30.0)
def gemma2_final_logit_softcap(logits, final_logit_softcapping: float = 30.0):
    logits = logits / final_logit_softcapping
    logits = torch.tanh(logits)
    logits = logits * final_logit_softcapping
    return logits


# transformers/models/gemma/modeling_gemma.py: GemmaModel.forward, the embeddings' normalizer (hidden_size 2048,
# Gemma-2B): a constant made in the hidden states' own dtype, so sqrt(2048) is 45.25 in bf16 and 45.2548 in fp32
def gemma_embed_normalizer(hidden_states, hidden_size: int = 2048):
    normalizer = torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype)
    hidden_states = hidden_states * normalizer
    return hidden_states


# transformers/models/mamba2/modeling_mamba2.py: apply_mask_to_padding_states (also Bamba's, FalconH1's): a [B, S]
# padding mask, one value per row of the [B, S, D] hidden states
def mamba2_apply_mask_to_padding_states(hidden_states, attention_mask):
    """
    Tunes out the hidden states for padding tokens, see https://github.com/state-spaces/mamba/issues/66
    """
    # NOTE: attention mask is a 2D boolean tensor
    if attention_mask is not None:
        dtype = hidden_states.dtype
        hidden_states = (hidden_states * attention_mask[:, :, None]).to(dtype)

    return hidden_states


# transformers/models/deformable_detr/modeling_deformable_detr.py: DeformableDetrMultiscaleDeformableAttention.forward,
# after value_proj: padded positions of the encoder's values zeroed
def deformable_detr_mask_value(value, attention_mask):
    if attention_mask is not None:
        # we invert the attention_mask
        value = value.masked_fill(~attention_mask[..., None], float(0))
    return value


# transformers/models/colpali/modeling_colpali.py: ColPaliForRetrieval.forward, after embedding_proj_layer: the L2
# normalisation of each token's embedding, then the padding mask
def colpali_retrieval_embeddings(embeddings, attention_mask=None):
    # L2 normalization
    embeddings = embeddings / embeddings.norm(dim=-1, keepdim=True)  # (batch_size, sequence_length, dim)

    if attention_mask is not None:
        embeddings = embeddings * attention_mask.unsqueeze(-1)  # (batch_size, sequence_length, dim)
    return embeddings


# transformers/models/esm/modeling_esm.py: EsmEmbeddings.forward, its end (emb_layer_norm_before; layer_norm_eps
# 1e-12): the LayerNorm, then the padding mask
def esm_embeddings_norm_mask(embeddings, attention_mask, layer_norm_weight, layer_norm_bias, eps: float = 1e-12):
    embeddings = F.layer_norm(embeddings, (embeddings.shape[-1],), layer_norm_weight, layer_norm_bias, eps)
    if attention_mask is not None:
        embeddings = (embeddings * attention_mask.unsqueeze(-1)).to(embeddings.dtype)
    return embeddings


# transformers/models/qwen2_moe/modeling_qwen2_moe.py: Qwen2MoeSparseMoeBlock.forward, after the experts: the shared
# expert's output gated by sigmoid of its one-logit gate (shared_expert_gate: Linear(hidden, 1), a [T, 1] per token)
def qwen2_moe_shared_expert_combine(expert_output, shared_expert_output, shared_gate_logits):
    shared_expert_output = F.sigmoid(shared_gate_logits) * shared_expert_output

    expert_output = expert_output + shared_expert_output
    return expert_output


# diffusers/schedulers/scheduling_ddpm.py: DDPMScheduler.add_noise, after alphas_cumprod[timesteps] (a gather, kept in
# PyTorch: alphas_cumprod_t is one value per sample [B]) and the .to()s: the forward diffusion of a training step
def ddpm_add_noise(original_samples, noise, alphas_cumprod_t):
    sqrt_alpha_prod = alphas_cumprod_t**0.5
    sqrt_alpha_prod = sqrt_alpha_prod.flatten()
    while len(sqrt_alpha_prod.shape) < len(original_samples.shape):
        sqrt_alpha_prod = sqrt_alpha_prod.unsqueeze(-1)

    sqrt_one_minus_alpha_prod = (1 - alphas_cumprod_t) ** 0.5
    sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.flatten()
    while len(sqrt_one_minus_alpha_prod.shape) < len(original_samples.shape):
        sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.unsqueeze(-1)

    noisy_samples = sqrt_alpha_prod * original_samples + sqrt_one_minus_alpha_prod * noise
    return noisy_samples


# timm/layers/layer_scale.py: LayerScale2d.forward (inplace=False): one gamma per channel of an NCHW tensor, whose rows
# are its last dim W
def timm_layer_scale_2d(x, gamma, inplace: bool = False):
    gamma = gamma.view(1, -1, 1, 1)
    return x.mul_(gamma) if inplace else x * gamma


# transformers/models/dac/modeling_dac.py: Snake1d.forward (alpha: nn.Parameter of torch.ones(1, hidden_dim, 1)):
# the DAC codec's periodic activation, one alpha per channel of [B, C, T], rows of T
def dac_snake1d(hidden_states, alpha):
    shape = hidden_states.shape
    hidden_states = hidden_states.reshape(shape[0], shape[1], -1)
    hidden_states = hidden_states + (alpha + 1e-9).reciprocal() * torch.sin(alpha * hidden_states).pow(2)
    hidden_states = hidden_states.reshape(shape)
    return hidden_states


# transformers/models/granite/modeling_granite.py: GraniteForCausalLM.forward, after lm_head (logits_scaling 8.0)
def granite_logits_scaling(logits, logits_scaling: float = 8.0):
    logits = logits / logits_scaling  # main diff with Llama
    return logits


# transformers/models/granite/modeling_granite.py: GraniteDecoderLayer.forward, the residual (multiplier 0.22)
def granite_residual(residual, hidden_states, residual_multiplier: float = 0.22):
    hidden_states = residual + hidden_states * residual_multiplier
    return hidden_states


# transformers/models/bloom/modeling_bloom.py: dropout_add (training=False)
def bloom_dropout_add(x: torch.Tensor, residual: torch.Tensor, prob: float = 0.1, training: bool = False):
    out = F.dropout(x, p=prob, training=training)
    out = residual + out
    return out


# transformers/models/gemma/modeling_gemma.py: GemmaTextScaledWordEmbedding.forward (embed_scale = sqrt(hidden))
def gemma_scaled_embedding(input_ids, weight, embed_scale):
    return F.embedding(input_ids, weight) * embed_scale.to(weight.dtype)


# ================================================================================================== MoE routers


# transformers/models/mixtral/modeling_mixtral.py: MixtralTopKRouter.forward (top_k = 2)
def mixtral_router(hidden_states, weight, top_k: int = 2):
    hidden_states = hidden_states.reshape(-1, weight.shape[1])
    router_logits = F.linear(hidden_states, weight)  # (seq_len, num_experts)
    router_probs = torch.nn.functional.softmax(router_logits.float(), dim=-1)
    router_top_value, router_indices = torch.topk(router_probs, top_k, dim=-1)  # (seq_len, top_k)
    router_top_value /= router_top_value.sum(dim=-1, keepdim=True)
    router_scores = router_top_value
    return router_logits, router_scores, router_indices


# transformers/models/gpt_oss/modeling_gpt_oss.py: GptOssTopKRouter.forward (top_k = 4)
def gpt_oss_router(hidden_states, weight, bias, top_k: int = 4):
    router_logits = F.linear(hidden_states, weight, bias)  # (num_tokens, num_experts)
    router_top_value, router_indices = torch.topk(router_logits, top_k, dim=-1)  # (num_tokens, top_k)
    router_scores = torch.nn.functional.softmax(router_top_value, dim=1, dtype=router_top_value.dtype)
    return router_logits, router_scores, router_indices


# transformers/models/deepseek_v3/modeling_deepseek_v3.py: DeepseekV3TopkRouter.forward
# (n_group 4, topk_group 2, top_k 4, norm_topk_prob True, routed_scaling_factor 2.5)
def deepseek_v3_router(hidden_states, weight, e_score_correction_bias, num_group: int = 4, topk_group: int = 2,
                       top_k: int = 4, norm_topk_prob: bool = True, routed_scaling_factor: float = 2.5):
    num_experts, hidden_dim = weight.shape
    hidden_states = hidden_states.view(-1, hidden_dim)
    router_logits = F.linear(hidden_states.type(torch.float32), weight.type(torch.float32))
    scores = router_logits.sigmoid()
    scores_for_choice = scores + e_score_correction_bias
    group_scores = (
        scores_for_choice.view(-1, num_group, num_experts // num_group)
        .topk(2, dim=-1)[0]
        .sum(dim=-1)
    )
    group_idx = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores)
    group_mask.scatter_(1, group_idx, 1)
    score_mask = (
        group_mask.unsqueeze(-1)
        .expand(-1, num_group, num_experts // num_group)
        .reshape(-1, num_experts)
    )
    scores_for_choice = scores_for_choice.masked_fill(~score_mask.bool(), float("-inf"))
    topk_indices = torch.topk(scores_for_choice, k=top_k, dim=-1, sorted=False)[1]
    topk_weights = scores.gather(1, topk_indices)
    if norm_topk_prob:
        denominator = topk_weights.sum(dim=-1, keepdim=True) + 1e-20
        topk_weights /= denominator
    topk_weights = topk_weights * routed_scaling_factor
    return router_logits, topk_weights, topk_indices


# transformers/models/deepseek_v3/modeling_deepseek_v3.py: DeepseekV3TopkRouter.forward, the sigmoid scoring
# (the two lines after the router's F.linear, before any topk)
def deepseek_v3_sigmoid_scores(router_logits, e_score_correction_bias):
    scores = router_logits.sigmoid()
    scores_for_choice = scores + e_score_correction_bias
    return scores, scores_for_choice


# transformers/models/llama4/modeling_llama4.py: Llama4Router.forward (super().forward = nn.Linear, top_k = 1)
def llama4_router(hidden_states, weight, top_k: int = 1):
    router_logits = F.linear(hidden_states, weight)
    router_top_value, router_indices = torch.topk(router_logits, top_k, dim=1)
    router_scores = torch.full_like(router_logits, float("-inf")).scatter_(1, router_indices, router_top_value)
    router_scores = torch.nn.functional.sigmoid(router_scores.float()).to(router_scores.dtype)
    return router_scores, router_logits


# transformers/models/afmoe/modeling_afmoe.py: AfmoeTokenChoiceRouter.forward (top_k 4, route_scale 1.0)
def afmoe_router(hidden_states, weight, expert_bias, top_k: int = 4, route_scale: float = 1.0):
    _, _, hidden_dim = hidden_states.shape
    hidden_states = hidden_states.view(-1, hidden_dim)

    router_logits = F.linear(hidden_states, weight).to(torch.float32)
    scores = torch.sigmoid(router_logits)

    _, selected_experts = torch.topk(scores + expert_bias, k=top_k, dim=1)
    top_scores = scores.gather(dim=1, index=selected_experts)
    denominator = top_scores.sum(dim=-1, keepdim=True) + 1e-20
    top_scores = top_scores / denominator
    top_scores = top_scores * route_scale
    return router_logits, top_scores, selected_experts


# transformers/models/switch_transformers/modeling_switch_transformers.py: SwitchTransformersTop1Router.forward,
# after self.classifier (eval: no jitter; expert_capacity 64)
def switch_top1_router(router_logits, num_experts: int = 8, expert_capacity: int = 64):
    # Apply Softmax and cast back to the original `dtype`
    router_probs = F.softmax(router_logits, dim=-1, dtype=torch.float32).to(router_logits.dtype)
    expert_index = torch.argmax(router_probs, dim=-1)
    expert_index = torch.nn.functional.one_hot(expert_index, num_classes=num_experts)
    token_priority = torch.cumsum(expert_index, dim=-2)
    # mask if the token routed to the expert will overflow
    expert_capacity_mask = token_priority <= expert_capacity
    expert_index = expert_index * expert_capacity_mask
    router_probs = torch.max(router_probs, dim=-1).values.unsqueeze(-1)
    return expert_index, router_probs, router_logits


# ========================================================================================================= samplers


# transformers/generation/logits_process.py: TemperatureLogitsWarper.__call__ (temperature 0.7)
def temperature_warper(input_ids, scores, temperature: float = 0.7):
    scores_processed = scores / temperature
    return scores_processed


# transformers/generation/logits_process.py: TopPLogitsWarper.__call__ (top_p 0.9, min_tokens_to_keep 1)
def top_p_warper(input_ids, scores, top_p: float = 0.9, filter_value: float = -float("Inf"),
                 min_tokens_to_keep: int = 1):
    sorted_logits, sorted_indices = torch.sort(scores, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)

    # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    # Keep at least min_tokens_to_keep
    sorted_indices_to_remove[..., -min_tokens_to_keep:] = 0

    # scatter sorted tensors to original indexing
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
    scores_processed = scores.masked_fill(indices_to_remove, filter_value)
    return scores_processed


# transformers/generation/logits_process.py: TopKLogitsWarper.__call__ (top_k 50)
def top_k_warper(input_ids, scores, top_k: int = 50, filter_value: float = -float("Inf")):
    top_k = min(top_k, scores.size(-1))  # Safety check
    # Remove all tokens with a probability less than the last token of the top-k
    indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
    scores_processed = scores.masked_fill(indices_to_remove, filter_value)
    return scores_processed


# transformers/generation/logits_process.py: MinPLogitsWarper.__call__ (min_p 0.1)
def min_p_warper(input_ids, scores, min_p: float = 0.1, filter_value: float = -float("Inf"),
                 min_tokens_to_keep: int = 1):
    # Convert logits to probabilities
    probs = torch.softmax(scores, dim=-1)
    # Get the probability of the top token for each sequence in the batch
    top_probs = probs.amax(dim=-1, keepdim=True)
    # Calculate the actual min_p threshold by scaling min_p with the top token's probability
    scaled_min_p = min_p * top_probs
    # Create a mask for tokens that have a probability less than the scaled min_p
    tokens_to_remove = probs < scaled_min_p

    # Keep at least min_tokens_to_keep tokens (clip k to vocab size if needed, avoids index out of range)
    k = min(min_tokens_to_keep, probs.shape[-1])
    sorted_indices = torch.topk(probs, k, dim=-1).indices
    tokens_to_remove.scatter_(-1, sorted_indices, False)

    scores_processed = scores.masked_fill(tokens_to_remove, filter_value)
    return scores_processed


# transformers/generation/logits_process.py: MinPLogitsWarper.__call__ up to the threshold mask, then masked_fill
# (min_tokens_to_keep's topk/scatter_ left out: the row-max part alone)
def min_p_mask(scores, min_p: float = 0.1, filter_value: float = -float("Inf")):
    # Convert logits to probabilities
    probs = torch.softmax(scores, dim=-1)
    # Get the probability of the top token for each sequence in the batch
    top_probs = probs.amax(dim=-1, keepdim=True)
    # Calculate the actual min_p threshold by scaling min_p with the top token's probability
    scaled_min_p = min_p * top_probs
    # Create a mask for tokens that have a probability less than the scaled min_p
    tokens_to_remove = probs < scaled_min_p
    scores_processed = scores.masked_fill(tokens_to_remove, filter_value)
    return scores_processed


# transformers/generation/logits_process.py: TypicalLogitsWarper.__call__ up to the shifted scores it sorts (the sort,
# gather, cumsum and scatter after it select and order: they stay in PyTorch)
def typical_shifted_scores(scores):
    # calculate entropy
    normalized = torch.nn.functional.log_softmax(scores, dim=-1)
    p = torch.exp(normalized)
    ent = -(normalized * p).nansum(-1, keepdim=True)

    # shift and sort
    shifted_scores = torch.abs((-normalized) - ent)
    return shifted_scores


# transformers/generation/logits_process.py: EpsilonLogitsWarper.__call__ (epsilon 3e-4)
def epsilon_warper(input_ids, scores, epsilon: float = 3e-4, filter_value: float = -float("Inf"),
                   min_tokens_to_keep: int = 1):
    # Determine which indices to remove
    probabilities = scores.softmax(dim=-1)
    indices_to_remove = probabilities < epsilon

    # Keep the words with the 'min_tokens_to_keep'-highest probabilities
    top_k = min(min_tokens_to_keep, scores.size(-1))  # Safety check
    indices_to_remove = indices_to_remove & (scores < torch.topk(scores, top_k)[0][..., -1, None])

    scores_processed = scores.masked_fill(indices_to_remove, filter_value)
    return scores_processed


# transformers/generation/logits_process.py: RepetitionPenaltyLogitsProcessor.__call__, the 2-D path (penalty 1.2)
def repetition_penalty(input_ids, scores, penalty: float = 1.2):
    vocab_size = scores.shape[-1]
    if input_ids.dim() == 1:
        input_ids = input_ids.unsqueeze(1)

    input_ids = input_ids.clamp(max=vocab_size)
    # Pad by 1 to absorb all the indices larger than output vocab that were clamped to the vocab
    scores = torch.nn.functional.pad(scores, (0, 1))

    score = torch.gather(scores, 1, input_ids)
    # if score < 0 then repetition penalty has to be multiplied to reduce the token probabilities
    score = torch.where(score < 0, score * penalty, score / penalty)
    scores_processed = scores.scatter(1, input_ids, score)
    scores_processed = scores_processed[..., :vocab_size]
    return scores_processed


# transformers/loss/loss_utils.py: fixed_cross_entropy (without **kwargs), the loss of ForCausalLMLoss and
# ForMaskedLMLoss: target holds class indices (int64), which no kernel here reads
def fixed_cross_entropy(source, target, num_items_in_batch=None, ignore_index: int = -100):
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = nn.functional.cross_entropy(source, target, ignore_index=ignore_index, reduction=reduction)
    if reduction == "sum":
        # just in case users pass an int for num_items_in_batch, which could be the case for custom trainer
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.to(loss.device)
        loss = loss / num_items_in_batch
    return loss


# ======================================================================================================= quantizers


_FP8_DTYPE = torch.float8_e4m3fn
_FP8_MIN = torch.finfo(_FP8_DTYPE).min
_FP8_MAX = torch.finfo(_FP8_DTYPE).max


# transformers/integrations/compressed_tensors.py: quantize_fp8_per_row
def quantize_fp8_per_row(x: torch.Tensor):
    x_float = x.to(torch.float32)
    row_max = x_float.abs().amax(dim=-1)  # (num_rows,)
    # Avoid division by zero for all-zero rows
    safe_max = torch.where(row_max > 0, row_max, torch.ones_like(row_max))
    scales = safe_max / _FP8_MAX  # float32
    x_fp8 = torch.clamp(x_float / scales.unsqueeze(-1), min=_FP8_MIN, max=_FP8_MAX).to(_FP8_DTYPE)
    return x_fp8, scales


# transformers/integrations/bitnet.py: ActQuant.forward (per-token absmax int8 fake quant, clamp_ in place)
def bitnet_act_quant(activation):
    dtype = activation.dtype
    activation = activation.float()
    scale = 127 / activation.abs().max(dim=-1, keepdim=True).values.clamp_(min=1e-5)
    activation = (activation * scale).round().clamp(-128, 127) / scale
    return activation.to(dtype)


# transformers/integrations/bitnet.py: BitLinear.activation_quant (returns int8 values and the [M, 1] scale)
def bitnet_activation_quant(input, num_bits=8):
    Qn = -(2 ** (num_bits - 1))
    Qp = 2 ** (num_bits - 1) - 1
    scale = Qp / input.abs().max(dim=-1, keepdim=True).values.clamp(min=1e-5)
    result = (input * scale).round().clamp(Qn, Qp)
    return result.to(torch.int8), scale


# transformers/integrations/bitnet.py: BitLinear.post_quant_process (input_scale [M, 1], weight_scale [1])
def bitnet_post_quant_process(input, input_scale, weight_scale):
    out = input / (input_scale * weight_scale)
    return out


# transformers/integrations/bitnet.py: WeightQuant.forward (ternary weights, one scale for the whole tensor)
def bitnet_weight_quant(weight):
    dtype = weight.dtype
    weight = weight.float()
    scale = 1.0 / weight.abs().mean().clamp_(min=1e-5)
    weight = (weight * scale).round().clamp(-1, 1) / scale
    return weight.to(dtype)


# ===================================================================================== linear + activation (GEMM)


# transformers/models/bert/modeling_bert.py: BertIntermediate.forward (dense, then intermediate_act_fn = gelu)
def bert_intermediate(hidden_states, weight, bias):
    hidden_states = F.linear(hidden_states, weight, bias)
    hidden_states = F.gelu(hidden_states)
    return hidden_states


# transformers/models/gpt_bigcode/modeling_gpt_bigcode.py: GPTBigCodeMLP.forward up to c_fc + act (gelu_pytorch_tanh)
def gpt_bigcode_fc_act(hidden_states, weight, bias):
    hidden_states = F.linear(hidden_states, weight, bias)
    hidden_states = F.gelu(hidden_states, approximate="tanh")
    return hidden_states


# transformers/models/granite/modeling_granite.py: GraniteForCausalLM.forward, lm_head then logits_scaling
def granite_lm_head(hidden_states, weight, logits_scaling: float = 8.0):
    logits = F.linear(hidden_states, weight)
    logits = logits / logits_scaling  # main diff with Llama
    return logits


# transformers/models/gemma2/modeling_gemma2.py: Gemma2ForCausalLM.forward, lm_head then final logit softcapping
def gemma2_lm_head_softcap(hidden_states, weight, final_logit_softcapping: float = 30.0):
    logits = F.linear(hidden_states, weight)
    logits = logits / final_logit_softcapping
    logits = torch.tanh(logits)
    logits = logits * final_logit_softcapping
    return logits


# transformers/models/clip/modeling_clip.py: CLIPModel.forward, the cosine similarity as logits (self.logit_scale: a
# learned 0-d tensor)
def clip_logits_per_text(text_embeds, image_embeds, logit_scale):
    logits_per_text = torch.matmul(text_embeds, image_embeds.t().to(text_embeds.device))
    logits_per_text = logits_per_text * logit_scale.exp().to(text_embeds.device)
    return logits_per_text


# diffusers/models/activations.py: ApproximateGELU.forward (self.proj = nn.Linear)
def diffusers_approximate_gelu(x, weight, bias):
    x = F.linear(x, weight, bias)
    return x * torch.sigmoid(1.702 * x)


# transformers/models/phi3/modeling_phi3.py: Phi3MLP.forward without down_proj: gate_up_proj, chunk, silu gate
def phi3_gate_up_proj_act(hidden_states, weight):
    up_states = F.linear(hidden_states, weight)

    gate, up_states = up_states.chunk(2, dim=-1)
    up_states = up_states * F.silu(gate)
    return up_states


# transformers/models/clip/modeling_clip.py: CLIPMLP.forward (fc1, quick_gelu, fc2)
def clip_mlp(hidden_states, fc1_weight, fc1_bias, fc2_weight, fc2_bias):
    hidden_states = F.linear(hidden_states, fc1_weight, fc1_bias)
    hidden_states = hidden_states * torch.sigmoid(1.702 * hidden_states)
    hidden_states = F.linear(hidden_states, fc2_weight, fc2_bias)
    return hidden_states


# transformers/models/llama/modeling_llama.py: LlamaMLP.forward (gate_proj, up_proj, down_proj, silu)
def llama_mlp(x, gate_proj_weight, up_proj_weight, down_proj_weight):
    down_proj = F.linear(F.silu(F.linear(x, gate_proj_weight)) * F.linear(x, up_proj_weight), down_proj_weight)
    return down_proj


# transformers/pytorch_utils.py: Conv1D.forward (GPT-2's linear: weight stored [in, out])
def gpt2_conv1d(x, weight, bias):
    nf = weight.shape[1]
    size_out = x.size()[:-1] + (nf,)
    x = torch.addmm(bias, x.view(-1, x.size(-1)), weight)
    x = x.view(size_out)
    return x


# transformers/models/bert/modeling_bert.py: BertSelfOutput.forward (dense, dropout, LayerNorm(h + input))
def bert_self_output(hidden_states, weight, input_tensor, bias, ln_weight, ln_bias, eps: float = 1e-12):
    hidden_states = F.linear(hidden_states, weight, bias)
    hidden_states = F.dropout(hidden_states, p=0.1, training=False)
    hidden_states = F.layer_norm(hidden_states + input_tensor, (hidden_states.shape[-1],), ln_weight, ln_bias, eps)
    return hidden_states


# transformers/models/bert/modeling_bert.py: BertPooler.forward (first token, dense, tanh)
def bert_pooler(hidden_states, weight, bias):
    # We "pool" the model by simply taking the hidden state corresponding
    # to the first token.
    first_token_tensor = hidden_states[:, 0]
    pooled_output = F.linear(first_token_tensor, weight, bias)
    pooled_output = torch.tanh(pooled_output)
    return pooled_output


# transformers/integrations/bitnet.py: AutoBitLinear.forward (online_quant False: ActQuant, linear, weight_scale)
def bitnet_auto_bitlinear(input, weight, bias, weight_scale):
    input = bitnet_act_quant(input)
    output = F.linear(input, weight, bias)
    output = output * weight_scale
    return output


# ================================================================================================ decode attention


# transformers/models/llama/modeling_llama.py: repeat_kv
def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


# transformers/models/llama/modeling_llama.py: eager_attention_forward
# (module.num_key_value_groups -> n_rep, module.training -> False; decode: query [B, H, 1, D], no mask)
def llama_eager_attention(query, key, value, attention_mask=None, scaling: float = 0.125, dropout: float = 0.0,
                          n_rep: int = 4):
    key_states = repeat_kv(key, n_rep)
    value_states = repeat_kv(value, n_rep)

    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask

    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=dropout, training=False)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()

    return attn_output, attn_weights


# transformers/models/gemma2/modeling_gemma2.py: eager_attention_forward (softcap 50.0; decode, GQA n_rep 2)
def gemma2_eager_attention(query, key, value, attention_mask=None, dropout: float = 0.0, scaling: float = 0.0625,
                           softcap: float = 50.0, n_rep: int = 2):
    key_states = repeat_kv(key, n_rep)
    value_states = repeat_kv(value, n_rep)

    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling

    if softcap is not None:
        attn_weights = attn_weights / softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * softcap
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask

    # upcast attention to fp32
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=dropout, training=False)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


# transformers/models/gpt_oss/modeling_gpt_oss.py: eager_attention_forward (sinks [H]; decode, GQA n_rep 4)
def gpt_oss_eager_attention(query, key, value, sinks, attention_mask=None, scaling: float = 0.125,
                            dropout: float = 0.0, n_rep: int = 4):
    key_states = repeat_kv(key, n_rep)
    value_states = repeat_kv(value, n_rep)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask

    sinks = sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
    combined_logits = torch.cat([attn_weights, sinks], dim=-1)

    # This was not in the original implementation and slightly affect results; it prevents overflow in BF16/FP16
    # when training with bsz>1 we clamp max values.

    combined_logits = combined_logits - combined_logits.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined_logits, dim=-1, dtype=combined_logits.dtype)
    scores = probs[..., :-1]  # we drop the sink here
    attn_weights = F.dropout(scores, p=dropout, training=False).to(value_states.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


# ============================================================================================================ CASES

X2 = (16, 256)  # [tokens, hidden]
X3 = (4, 16, 256)  # [batch, seq, hidden]
NCHW = (2, 3, 8, 16)  # an image batch [B, C, H, W]
D = 256
SCORES = (2, 8, 16, 16)  # [B, H, Sq, Sk]
MASK = (2, 1, 16, 16)  # an additive mask, broadcast over heads
QKV = (2, 8, 16, 64)  # [B, H, S, D]
CS = (2, 16, 64)  # cos / sin [B, S, D]
LOGITS = (4, 1024)  # [batch, vocab]
IDS = (4, 12)  # generated ids [batch, len]


def _case(fn, upstream, cls, shapes, dtypes=None, refusal=None, notes="", hints=None):
    return {"fn": fn, "upstream": upstream, "cls": cls, "shapes": shapes, "dtypes": dtypes or {},
            "refusal": refusal, "notes": notes, **({"hints": hints} if hints else {})}


_ACT = "transformers/activations.py"
_EW_1IN = "pointwise, one input"
CASES = [
    # ---------------------------------------------------------------------------------------------- activations
    _case("gelu_tanh_python", f"{_ACT}: GELUTanh._gelu_tanh_python", "elementwise", {"input": X2},
          notes="tanh GELU by hand: pow(x, 3.0), math.sqrt constant"),
    _case("pytorch_gelu_tanh", f"{_ACT}: GELUTanh.forward (PytorchGELUTanh)", "elementwise", {"input": X2},
          notes="F.gelu(approximate='tanh')"),
    _case("new_gelu", f"{_ACT}: NewGELUActivation.forward", "elementwise", {"input": X2}, notes=_EW_1IN),
    _case("gelu_python", f"{_ACT}: GELUActivation._gelu_python", "elementwise", {"input": X2},
          notes="erf GELU by hand"),
    _case("gelu_activation", f"{_ACT}: GELUActivation.forward", "elementwise", {"input": X2}, notes="F.gelu"),
    _case("fast_gelu", f"{_ACT}: FastGELUActivation.forward", "elementwise", {"input": X2}, notes=_EW_1IN),
    _case("quick_gelu", f"{_ACT}: QuickGELUActivation.forward", "elementwise", {"input": X2}, notes=_EW_1IN),
    _case("clipped_gelu", f"{_ACT}: ClippedGELUActivation.forward", "elementwise", {"x": X2},
          notes="torch.clip after F.gelu; min/max are float args with the gelu_10 defaults"),
    _case("accurate_gelu", f"{_ACT}: AccurateGELUActivation.forward", "elementwise", {"input": X2},
          notes="self.precomputed_constant as a defaulted float"),
    _case("mish_python", f"{_ACT}: MishActivation._mish_python", "elementwise", {"input": X2},
          notes="tanh(softplus(x))"),
    _case("mish", f"{_ACT}: MishActivation.forward", "elementwise", {"input": X2}, notes="F.mish"),
    _case("silu", f"{_ACT}: SiLUActivation.forward", "elementwise", {"input": X2}, notes="F.silu"),
    _case("laplace", f"{_ACT}: LaplaceActivation.forward", "elementwise", {"input": X2},
          notes="float default args mu/sigma, .div by a constant, erf"),
    _case("relu_squared", f"{_ACT}: ReLUSquaredActivation.forward", "elementwise", {"input": X2},
          notes="torch.square(relu)"),
    _case("sqrt_softplus", f"{_ACT}: SqrtSoftplusActivation.forward", "elementwise", {"input": X2},
          notes="DeepSeek V4 router scoring: softplus().sqrt()"),
    _case("xielu", f"{_ACT}: XIELUActivation._xielu_python", "elementwise",
          {"x": X2, "alpha_p": (1,), "alpha_n": (1,), "beta": (), "eps": ()},
          notes="learned scalars: alpha_p/alpha_n are [1] parameters, beta/eps 0-d buffers (eps is -1e-6 in the "
                "model); torch.min(x, eps) against a 0-d tensor; expm1"),
    _case("bloom_gelu", "transformers/models/bloom/modeling_bloom.py: bloom_gelu_forward", "elementwise",
          {"x": X2}, notes=_EW_1IN),
    _case("hard_sigmoid", "timm/layers/activations.py: hard_sigmoid", "elementwise", {"x": X2},
          notes="relu6(x + 3) / 6"),
    _case("hard_swish", "timm/layers/activations.py: hard_swish", "elementwise", {"x": X2},
          notes="div_ in place on a temporary (relu6's result), not on an input: functionalizes to div"),
    _case("hard_mish", "timm/layers/activations.py: hard_mish", "elementwise", {"x": X2},
          notes="clamp(min=0, max=2)"),
    _case("prelu", "torch/nn/modules/activation.py: PReLU.forward", "elementwise", {"input": X2, "weight": (D,)},
          notes="F.prelu with one slope per channel; for a 2-D input the channel dim is the last, so weight is a "
                "[N] vector (for 3-D+ input PReLU's channel is dim 1, not the last)"),
    # ---------------------------------------------------------------------------------------------- gated MLPs
    _case("llama_mlp_act", "transformers/models/llama/modeling_llama.py: LlamaMLP.forward (act part)",
          "elementwise", {"gate": (16, 1024), "up": (16, 1024)}, notes="silu(gate) * up"),
    _case("gemma3n_gaussian_topk", "transformers/models/gemma3n/modeling_gemma3n.py: Gemma3nTextMLP._gaussian_topk",
          "reduction", {"inputs": (16, 1024)},
          notes="Normal(0, 1).icdf(0.95) on a constant (an erfinv folded at the bake, its validation's dead checks "
                "skipped), then the row's mean + std as a cutoff, relu"),
    _case("gemma3n_mlp_act", "transformers/models/gemma3n/modeling_gemma3n.py: Gemma3nTextMLP.forward (between the "
          "projections)", "reduction", {"gate_proj": (16, 1024), "up_proj": (16, 1024)},
          notes="the gaussian top-k gate, gelu(tanh), * up"),
    _case("phi3_gate_up_act", "transformers/models/phi3/modeling_phi3.py: Phi3MLP.forward (after gate_up_proj)",
          "elementwise", {"up_states": (16, 2048)},
          notes="x.chunk(2, -1): the output is [T, I] from a [T, 2I] input (two contiguous column halves); "
                "needs an even last dim"),
    _case("diffusers_swiglu", "diffusers/models/activations.py: SwiGLU.forward (after proj)", "elementwise",
          {"hidden_states": (16, 2048)}, notes="chunk(2, -1), value first then gate; output half width"),
    _case("diffusers_geglu", "diffusers/models/activations.py: GEGLU.forward (after proj)", "elementwise",
          {"hidden_states": (16, 2048)}, notes="chunk(2, -1) then hidden * gelu(gate); output half width"),
    _case("gpt_oss_apply_gate", "transformers/models/gpt_oss/modeling_gpt_oss.py: GptOssExperts._apply_gate",
          "elementwise", {"gate_up": (16, 2048)},
          notes="interleaved gate/up: x[..., ::2], x[..., 1::2] (stride-2 column views); clamp(min=None, max=limit) "
                "and clamp(-limit, limit); output half width; needs an even last dim"),
    _case("t5_gated_act", "transformers/models/t5/modeling_t5.py: T5DenseGatedActDense.forward (act part)",
          "elementwise", {"wi_0_out": (16, 1024), "hidden_linear": (16, 1024)},
          notes="gelu_new(wi_0(x)) * wi_1(x), eval dropout (a no-op)"),
    _case("qwen3_next_attn_gate", "transformers/models/qwen3_next/modeling_qwen3_next.py: Qwen3NextAttention.forward "
          "(output gate)", "elementwise", {"attn_output": (2, 16, 2048), "gate": (2, 16, 2048)},
          notes="attn_output * sigmoid(gate)"),
    # ---------------------------------------------------------------------------------------------------- norms
    _case("llama_rmsnorm", "transformers/models/llama/modeling_llama.py: LlamaRMSNorm.forward", "reduction",
          {"hidden_states": X3, "weight": (D,)}, notes="fp32 upcast, rsqrt(mean(x^2) + eps), weight * x.to(dtype)"),
    _case("qwen2_rmsnorm", "transformers/models/qwen2/modeling_qwen2.py: Qwen2RMSNorm.forward", "reduction",
          {"hidden_states": X3, "weight": (D,)}, notes="copied from Llama"),
    _case("mixtral_rmsnorm", "transformers/models/mixtral/modeling_mixtral.py: MixtralRMSNorm.forward", "reduction",
          {"hidden_states": X3, "weight": (D,)}, notes="copied from Llama, eps 1e-5"),
    _case("deepseek_v3_rmsnorm", "transformers/models/deepseek_v3/modeling_deepseek_v3.py: DeepseekV3RMSNorm.forward",
          "reduction", {"hidden_states": X3, "weight": (D,)}, notes="copied from Llama"),
    _case("gemma_rmsnorm", "transformers/models/gemma/modeling_gemma.py: GemmaRMSNorm.forward", "reduction",
          {"x": X3, "weight": (D,)}, notes="(1 + weight.float()), nested _norm helper, type_as"),
    _case("gemma3n_rmsnorm", "transformers/models/gemma3n/modeling_gemma3n.py: Gemma3nRMSNorm.forward", "reduction",
          {"hidden_states": X3, "weight": (D,)}, notes="torch.pow(mean_sq, -0.5) instead of rsqrt"),
    _case("llama4_l2norm", "transformers/models/llama4/modeling_llama4.py: Llama4TextWeightlessRMSNorm.forward",
          "reduction", {"x": (2, 16, 8, 64)}, notes="weightless RMSNorm (Llama4 QK norm) over head_dim of [B,S,H,D]"),
    _case("olmo2_rmsnorm", "transformers/models/olmo2/modeling_olmo2.py: Olmo2RMSNorm.forward", "reduction",
          {"hidden_states": X3, "weight": (D,)}, notes="(weight * x).to(dtype): cast after the weight"),
    _case("t5_layernorm", "transformers/models/t5/modeling_t5.py: T5LayerNorm.forward", "reduction",
          {"hidden_states": X3, "weight": (D,)}, notes="variance in fp32, x itself not upcast; weight.dtype branch"),
    _case("diffusers_rmsnorm", "diffusers/models/normalization.py: RMSNorm.forward", "reduction",
          {"hidden_states": X3, "weight": (D,)}, notes="the non-NPU path with a weight"),
    _case("cohere_layernorm", "transformers/models/cohere/modeling_cohere.py: CohereLayerNorm.forward", "reduction",
          {"hidden_states": X3, "weight": (D,)}, notes="mean-centred LayerNorm by hand, no bias"),
    _case("cohere_qk_layernorm", "transformers/models/cohere/modeling_cohere.py: CohereLayerNorm.forward (q_norm)",
          "reduction", {"hidden_states": (2, 16, 8, 64), "weight": (8, 64)},
          notes="stats over head_dim of [B,S,H,D]; the weight is [H, D], one row per head, broadcast over B and S "
                "(not a [N] vector)"),
    _case("olmo_layernorm", "transformers/models/olmo/modeling_olmo.py: OlmoLayerNorm.forward", "reduction",
          {"hidden_states": X3}, notes="F.layer_norm with weight=None, bias=None"),
    _case("nemotron_layernorm1p", "transformers/models/nemotron/modeling_nemotron.py: NemotronLayerNorm1P.forward",
          "reduction", {"input": X3, "weight": (D,), "bias": (D,)}, notes="F.layer_norm(x, ..., weight + 1.0, bias)"),
    _case("chameleon_layernorm", "transformers/models/chameleon/modeling_chameleon.py: ChameleonLayerNorm.forward",
          "reduction", {"hidden_states": (2, 16, 8, 64), "weight": (8, 64), "bias": (8, 64)},
          notes="layer_norm over head_dim only, then a per-head [H, D] weight and bias"),
    _case("qwen3_q_norm", "transformers/models/qwen3/modeling_qwen3.py: Qwen3Attention.forward (q_norm on the view)",
          "reduction", {"q_proj_out": (4, 16, 512), "weight": (64,)},
          notes="views [B, S, H*D] as [B, S, H, D] (head_dim 64) and RMS-normalizes each head: rows of 64, not 512; "
                "the output is the 4-D view; last dim must be a multiple of head_dim"),
    _case("qwen3_q_norm_transposed", "transformers/models/qwen3/modeling_qwen3.py: Qwen3Attention.forward "
          "(q_norm line with .transpose(1, 2))", "refused", {"q_proj_out": (4, 16, 512), "weight": (64,)},
          refusal="real_models.py:",
          notes="the same norm, returned transposed to [B, H, S, D] (a non-contiguous output layout)"),
    _case("qwen3_next_rmsnorm_gated", "transformers/models/qwen3_next/modeling_qwen3_next.py: "
          "Qwen3NextRMSNormGated.forward", "reduction", {"hidden_states": X3, "gate": X3, "weight": (D,)},
          notes="RMSNorm, then * silu(gate) in the epilogue"),
    _case("mamba2_rmsnorm_gated", "transformers/models/mamba2/modeling_mamba2.py: Mamba2RMSNormGated.forward",
          "reduction", {"hidden_states": (2, 16, 512), "gate": (2, 16, 512), "weight": (512,)},
          notes="silu(gate) prologue, then RMS over groups of group_size=64 through a view [..., 8, 64]: the "
                "reduction rows are 64 long, not the last dim's 512; last dim must be a multiple of group_size"),
    _case("convnext_layernorm_channels_first", "transformers/models/convnext/modeling_convnext.py: "
          "ConvNextLayerNorm.forward (channels_first)", "refused",
          {"features": (2, 64, 8, 8), "weight": (64,), "bias": (64,)}, refusal="real_models.py:",
          notes="NCHW: mean and variance over dim 1 (C), not the row's last dim",
          hints={"features": "[B,C,H,W]", "weight": "[C]", "bias": "[C]"}),
    _case("timm_layernorm2d", "timm/layers/norm.py: LayerNorm2d.forward", "refused",
          {"x": (2, 64, 8, 8), "weight": (64,), "bias": (64,)}, refusal="real_models.py:",
          notes="NCHW: permute to NHWC, layer_norm over C, permute back: the reduced dim is dim 1 of the input"),
    _case("bert_residual_layernorm", "transformers/models/bert/modeling_bert.py: BertSelfOutput.forward "
          "(after dense)", "reduction", {"hidden_states": X3, "input_tensor": X3, "weight": (D,), "bias": (D,)},
          notes="eval dropout, then LayerNorm(h + residual), eps 1e-12"),
    _case("diffusers_ada_layer_norm_zero", "diffusers/models/normalization.py: AdaLayerNormZero.forward "
          "(after emb.chunk)", "reduction", {"x": X3, "shift_msa": (4, D), "scale_msa": (4, D)},
          notes="DiT's adaLN: LayerNorm without affine, then * (1 + scale[:, None]) + shift[:, None]: [B, D] "
                "modulations broadcast over the sequence through the function's own [:, None]"),
    _case("diffusers_ada_layer_norm_continuous", "diffusers/models/normalization.py: AdaLayerNormContinuous.forward "
          "(after emb.chunk)", "reduction", {"x": X3, "scale": (4, D), "shift": (4, D)},
          notes="(1 + scale)[:, None, :]: the modulation computed in scale's own [B, D] dims, then broadcast over S"),
    _case("sd35_ada_layer_norm_zero_x", "diffusers/models/normalization.py: SD35AdaLayerNormZeroX.forward "
          "(after emb.chunk)", "reduction",
          {"hidden_states": X3, **{k: (4, D) for k in ("shift_msa", "scale_msa", "shift_msa2", "scale_msa2")}},
          notes="one LayerNorm, two modulations of it: two outputs, four [B, D] inputs broadcast over S"),
    # ----------------------------------------------------------------------------------------------------- RoPE
    _case("llama_apply_rotary_pos_emb", "transformers/models/llama/modeling_llama.py: apply_rotary_pos_emb",
          "elementwise", {"q": QKV, "k": QKV, "cos": CS, "sin": CS},
          notes="2 outputs; q, k [B, H, S, D], cos/sin [B, S, D] unsqueezed at 1 (broadcast over heads); "
                "rotate_half = cat(-x2, x1) of the two column halves; D even"),
    _case("olmo_apply_rotary_pos_emb_bshd", "transformers/models/olmo/modeling_olmo.py: apply_rotary_pos_emb "
          "(unsqueeze_dim=2)", "elementwise", {"q": (2, 16, 8, 64), "k": (2, 16, 2, 64), "cos": CS, "sin": CS},
          notes="2 outputs of different shapes: q [B, S, H, D] and GQA k [B, S, Hkv, D]; cos/sin unsqueezed at 2"),
    _case("cohere_apply_rotary_pos_emb", "transformers/models/cohere/modeling_cohere.py: apply_rotary_pos_emb",
          "elementwise", {"q": QKV, "k": QKV, "cos": CS, "sin": CS},
          notes="2 outputs; interleaved rotate_half: stack([-x[1::2], x[::2]], -1).flatten(-2); fp32 upcast"),
    _case("diffusers_apply_rotary_emb", "diffusers/models/embeddings.py: apply_rotary_emb (use_real, unbind dim -1)",
          "elementwise", {"x": QKV, "cos": (16, 64), "sin": (16, 64)},
          notes="x [B, H, S, D] viewed as pairs (reshape(..., -1, 2).unbind(-1)): its interleaved lanes; cos and sin "
                "[S, D] broadcast over B and H"),
    _case("diffusers_apply_rotary_emb_halves", "diffusers/models/embeddings.py: apply_rotary_emb (use_real, unbind "
          "dim -2)", "elementwise", {"x": QKV, "cos": (16, 64), "sin": (16, 64)},
          notes="x [B, H, S, D] viewed as halves (reshape(..., 2, -1).unbind(-2)): x.chunk(2, -1)'s parts; cos and sin "
                "[S, D] broadcast over B and H"),
    _case("glm_apply_rotary_pos_emb", "transformers/models/glm/modeling_glm.py: apply_rotary_pos_emb",
          "elementwise", {"q": (2, 8, 16, 128), "k": (2, 2, 16, 128), "cos": CS, "sin": CS},
          notes="2 outputs (GQA: k has 2 heads); partial rotary: cos/sin cover 64 of head_dim 128, "
                "cos[..., :32].repeat_interleave(2), interleaved rotate_half, cat with the pass-through columns"),
    _case("gptj_apply_rotary_pos_emb", "transformers/models/gptj/modeling_gptj.py: apply_rotary_pos_emb",
          "elementwise", {"tensor": (2, 16, 8, 64), "sin": (2, 16, 32), "cos": (2, 16, 32)},
          notes="one tensor [B, S, H, D]; sin/cos [B, S, D/2] repeat_interleave(2) on a new head axis; "
                "rotate_every_two indexes x[:, :, :, ::2] (needs 4-D input); note the (tensor, sin, cos) order"),
    _case("deepseek_v3_apply_rotary_pos_emb_interleave", "transformers/models/deepseek_v3/modeling_deepseek_v3.py: "
          "apply_rotary_pos_emb_interleave", "elementwise", {"q": QKV, "k": QKV, "cos": CS, "sin": CS},
          notes="2 outputs; even/odd columns in, cat of the two rotated halves out (a column permutation)"),
    _case("qwen2_vl_apply_rotary_pos_emb_vision", "transformers/models/qwen2_vl/modeling_qwen2_vl.py: "
          "apply_rotary_pos_emb_vision", "elementwise",
          {"q": (64, 16, 80), "k": (64, 16, 80), "cos": (64, 80), "sin": (64, 80)},
          notes="2 outputs; q, k [S, H, D] (head_dim 80), cos/sin [S, D] unsqueezed at -2"),
    _case("llama4_apply_rotary_emb", "transformers/models/llama4/modeling_llama4.py: apply_rotary_emb", "refused",
          {"xq": (2, 16, 8, 64), "xk": (2, 16, 2, 64), "freqs_cis": (2, 16, 32)}, {"freqs_cis": "complex64"},
          refusal="view_as_complex", notes="complex multiply through view_as_complex/view_as_real"),
    # ----------------------------------------------------------------------------------- attention scores, logits
    _case("llama_attn_scores_softmax", "transformers/models/llama/modeling_llama.py: eager_attention_forward "
          "(after QK^T)", "reduction", {"attn_weights": SCORES, "attention_mask": MASK},
          notes="* scaling + additive mask [B, 1, Sq, Sk] broadcast over heads, softmax(dtype=float32)"),
    _case("gemma2_attn_softcap_softmax", "transformers/models/gemma2/modeling_gemma2.py: eager_attention_forward "
          "(after QK^T)", "reduction", {"attn_weights": SCORES, "attention_mask": MASK},
          notes="softcapping tanh(x / cap) * cap, then mask and softmax"),
    _case("gpt_neo_causal_softmax", "transformers/models/gpt_neo/modeling_gpt_neo.py: GPTNeoSelfAttention._attn "
          "(after QK^T)", "reduction", {"attn_weights": SCORES, "causal_mask": (1, 1, 16, 16)},
          {"causal_mask": "bool"},
          notes="torch.where(bool mask, x, torch.tensor(finfo.min)) with a 0-d tensor constant, then softmax"),
    _case("gpt_oss_sink_softmax", "transformers/models/gpt_oss/modeling_gpt_oss.py: eager_attention_forward "
          "(after QK^T)", "refused", {"attn_weights": SCORES, "attention_mask": MASK, "sinks": (8,)},
          refusal="real_models.py:",
          notes="attention sinks: a per-head logit cat'ed as an extra column, max-subtract, softmax, column dropped; "
                "a reduction over Sk + 1 that the row model cannot express as written"),
    _case("gemma2_final_logit_softcap", "transformers/models/gemma2/modeling_gemma2.py: Gemma2ForCausalLM.forward "
          "(softcapping)", "elementwise", {"logits": LOGITS}, notes="logits / cap, tanh, * cap"),
    _case("gemma_embed_normalizer", "transformers/models/gemma/modeling_gemma.py: GemmaModel.forward (normalizer)",
          "elementwise", {"hidden_states": X2},
          notes="x * torch.tensor(sqrt(2048), dtype=x.dtype): the constant is rounded to the workspace's dtype"),
    # one value per row: a [B, S] padding mask over [B, S, D], a [T, 1] gate over [T, D]
    _case("mamba2_apply_mask_to_padding_states", "transformers/models/mamba2/modeling_mamba2.py: "
          "apply_mask_to_padding_states", "elementwise", {"hidden_states": X3, "attention_mask": X3[:2]},
          {"attention_mask": "bool"}, notes="hidden_states * attention_mask[:, :, None]: one mask value per row"),
    _case("deformable_detr_mask_value", "transformers/models/deformable_detr/modeling_deformable_detr.py: "
          "DeformableDetrMultiscaleDeformableAttention.forward (after value_proj)", "elementwise",
          {"value": X3, "attention_mask": X3[:2]}, {"attention_mask": "bool"},
          notes="masked_fill(~attention_mask[..., None], 0): an inverted per-row mask"),
    _case("colpali_retrieval_embeddings", "transformers/models/colpali/modeling_colpali.py: "
          "ColPaliForRetrieval.forward (after embedding_proj_layer)", "reduction",
          {"embeddings": X3, "attention_mask": X3[:2]}, {"attention_mask": "bool"},
          notes="an L2 norm over the row, then the per-row padding mask"),
    _case("esm_embeddings_norm_mask", "transformers/models/esm/modeling_esm.py: EsmEmbeddings.forward (layer_norm, "
          "then the mask)", "reduction", {"embeddings": X3, "attention_mask": X3[:2], "layer_norm_weight": (D,),
                                          "layer_norm_bias": (D,)}, {"attention_mask": "bool"},
          notes="LayerNorm with weight and bias, then the per-row padding mask"),
    _case("qwen2_moe_shared_expert_combine", "transformers/models/qwen2_moe/modeling_qwen2_moe.py: "
          "Qwen2MoeSparseMoeBlock.forward (after the experts)", "elementwise",
          {"expert_output": X2, "shared_expert_output": X2, "shared_gate_logits": (X2[0], 1)},
          notes="sigmoid of a [T, 1] gate times the shared expert's [T, D], plus the routed experts' output"),
    # one value per row broadcast over some of x's dims: per sample [B] over NCHW, per channel [C] over NCHW
    _case("ddpm_add_noise", "diffusers/schedulers/scheduling_ddpm.py: DDPMScheduler.add_noise (after the gather)",
          "elementwise", {"original_samples": NCHW, "noise": NCHW, "alphas_cumprod_t": NCHW[:1]},
          notes="sqrt(a_t) * x + sqrt(1 - a_t) * noise, a_t [B] computed on in its own dims, then unsqueezed"),
    _case("timm_layer_scale_2d", "timm/layers/layer_scale.py: LayerScale2d.forward", "elementwise",
          {"x": NCHW, "gamma": NCHW[1:2]}, notes="x * gamma.view(1, -1, 1, 1): rows of W, one gamma per channel"),
    _case("dac_snake1d", "transformers/models/dac/modeling_dac.py: Snake1d.forward", "elementwise",
          {"hidden_states": NCHW[:2] + NCHW[3:], "alpha": (1, NCHW[1], 1)},
          notes="x + 1/alpha * sin(alpha * x)^2, alpha [1, C, 1] over [B, C, T]: torch.sin, one alpha per channel"),
    _case("granite_logits_scaling", "transformers/models/granite/modeling_granite.py: GraniteForCausalLM.forward "
          "(logits_scaling)", "elementwise", {"logits": LOGITS}, notes="logit scaling by a constant"),
    _case("granite_residual", "transformers/models/granite/modeling_granite.py: GraniteDecoderLayer.forward "
          "(residual_multiplier)", "elementwise", {"residual": X3, "hidden_states": X3},
          notes="residual + h * multiplier"),
    _case("bloom_dropout_add", "transformers/models/bloom/modeling_bloom.py: dropout_add", "elementwise",
          {"x": X3, "residual": X3}, notes="F.dropout(training=False) is the identity"),
    _case("gemma_scaled_embedding", "transformers/models/gemma/modeling_gemma.py: "
          "GemmaTextScaledWordEmbedding.forward", "refused", {"input_ids": IDS, "weight": (32, 256), "embed_scale": ()},
          {"input_ids": "int64"}, refusal="embedding",
          notes="an embedding gather (data-dependent rows), then * a 0-d embed_scale"),
    # ---------------------------------------------------------------------------------------------- MoE routers
    _case("mixtral_router", "transformers/models/mixtral/modeling_mixtral.py: MixtralTopKRouter.forward", "refused",
          {"hidden_states": X3, "weight": (8, 256)}, refusal="topk",
          notes="reshape, linear, softmax, topk, in-place renormalize (/=); 3 outputs incl. int64 indices"),
    _case("gpt_oss_router", "transformers/models/gpt_oss/modeling_gpt_oss.py: GptOssTopKRouter.forward", "refused",
          {"hidden_states": (64, 256), "weight": (32, 256), "bias": (32,)}, refusal="topk",
          notes="linear + topk, then softmax over the top-k"),
    _case("deepseek_v3_router", "transformers/models/deepseek_v3/modeling_deepseek_v3.py: "
          "DeepseekV3TopkRouter.forward", "refused",
          {"hidden_states": (32, 256), "weight": (16, 256), "e_score_correction_bias": (16,)}, refusal="topk",
          notes="sigmoid scoring, group-limited topk, scatter_, masked_fill, gather, /= ; num_experts % num_group == 0"),
    _case("deepseek_v3_sigmoid_scores", "transformers/models/deepseek_v3/modeling_deepseek_v3.py: "
          "DeepseekV3TopkRouter.forward (sigmoid scoring lines)", "elementwise",
          {"router_logits": (32, 16), "e_score_correction_bias": (16,)},
          notes="2 outputs: sigmoid(logits) and sigmoid + a per-expert [N] bias"),
    _case("llama4_router", "transformers/models/llama4/modeling_llama4.py: Llama4Router.forward", "refused",
          {"hidden_states": (32, 256), "weight": (16, 256)}, refusal="topk",
          notes="linear, topk, scatter_ into a -inf full_like, sigmoid"),
    _case("afmoe_router", "transformers/models/afmoe/modeling_afmoe.py: AfmoeTokenChoiceRouter.forward", "refused",
          {"hidden_states": X3, "weight": (16, 256), "expert_bias": (16,)}, refusal="topk",
          notes="sigmoid scoring + bias, topk, gather, renormalize"),
    _case("switch_top1_router", "transformers/models/switch_transformers/modeling_switch_transformers.py: "
          "SwitchTransformersTop1Router.forward (after classifier)", "refused", {"router_logits": (32, 8)},
          refusal="real_models.py:",
          notes="softmax, argmax, one_hot, cumsum over tokens, max; make_fx itself fails at one_hot (it reads the "
                "max index: aten._local_scalar_dense), so the refusal is the traced exception at that line"),
    # ------------------------------------------------------------------------------------------------- samplers
    _case("temperature_warper", "transformers/generation/logits_process.py: TemperatureLogitsWarper.__call__",
          "elementwise", {"input_ids": IDS, "scores": LOGITS}, {"input_ids": "int64"},
          notes="scores / temperature; input_ids is an unused int64 parameter of the processor signature"),
    _case("top_p_warper", "transformers/generation/logits_process.py: TopPLogitsWarper.__call__", "refused",
          {"input_ids": IDS, "scores": LOGITS}, {"input_ids": "int64"}, refusal="sort",
          notes="sort, softmax, cumsum, in-place slice assignment, scatter, masked_fill"),
    _case("top_k_warper", "transformers/generation/logits_process.py: TopKLogitsWarper.__call__", "refused",
          {"input_ids": IDS, "scores": LOGITS}, {"input_ids": "int64"}, refusal="topk",
          notes="threshold = topk(...)[0][..., -1, None], masked_fill(-inf)"),
    _case("min_p_warper", "transformers/generation/logits_process.py: MinPLogitsWarper.__call__", "refused",
          {"input_ids": IDS, "scores": LOGITS}, {"input_ids": "int64"}, refusal="topk",
          notes="softmax + amax are row reductions; the min_tokens_to_keep topk + scatter_ are not"),
    _case("min_p_mask", "transformers/generation/logits_process.py: MinPLogitsWarper.__call__ (up to the mask)",
          "reduction", {"scores": LOGITS},
          notes="softmax, then amax of the softmax (a reduction of a reduction's epilogue), threshold, masked_fill "
                "with -inf"),
    _case("typical_shifted_scores", "transformers/generation/logits_process.py: TypicalLogitsWarper.__call__ (up to "
          "the sort)", "reduction", {"scores": LOGITS},
          notes="log_softmax, exp, an entropy by torch.nansum (a sum of the non-NaN values), abs of the shift; "
                "ill-conditioned in bf16 (benchmarks/2026-12-07-h100-real-forms.md): not marked for the H200"),
    _case("epsilon_warper", "transformers/generation/logits_process.py: EpsilonLogitsWarper.__call__", "refused",
          {"input_ids": IDS, "scores": LOGITS}, {"input_ids": "int64"}, refusal="topk",
          notes="softmax threshold & topk threshold"),
    _case("fixed_cross_entropy", "transformers/loss/loss_utils.py: fixed_cross_entropy", "refused",
          {"source": (16, 1024), "target": (16,)}, {"target": "int64"}, refusal="real_models.py:",
          notes="class indices (int64) picked from each row by nll_loss's gather, then a mean over the rows"),
    _case("repetition_penalty", "transformers/generation/logits_process.py: RepetitionPenaltyLogitsProcessor.__call__",
          "refused", {"input_ids": IDS, "scores": LOGITS}, {"input_ids": "int64"}, refusal="real_models.py:",
          notes="int clamp of ids, pad, gather, where, scatter by ids (data-dependent columns)"),
    # ----------------------------------------------------------------------------------------------- quantizers
    _case("quantize_fp8_per_row", "transformers/integrations/compressed_tensors.py: quantize_fp8_per_row",
          "reduction", {"x": (32, 256)},
          notes="2 outputs: x in float8_e4m3fn [M, N] and scales [M] (one per row); abs().amax(-1), where, clamp"),
    _case("bitnet_act_quant", "transformers/integrations/bitnet.py: ActQuant.forward", "reduction", {"activation":
          (32, 256)}, notes="per-token absmax: abs().max(-1).values.clamp_ (in place on a temporary), round, clamp, "
                             "/ scale: a fake-quantized float output"),
    _case("bitnet_activation_quant", "transformers/integrations/bitnet.py: BitLinear.activation_quant", "refused",
          {"input": (32, 256)}, refusal="floating point",
          notes="2 outputs: int8 values and the [M, 1] scale; an int8 output is not floating point"),
    _case("bitnet_post_quant_process", "transformers/integrations/bitnet.py: BitLinear.post_quant_process",
          "elementwise", {"input": (32, 256), "input_scale": (32, 1), "weight_scale": (1,)},
          notes="per-row [M, 1] scale and a 1-element weight scale"),
    _case("bitnet_weight_quant", "transformers/integrations/bitnet.py: WeightQuant.forward", "refused",
          {"weight": (256, 256)}, refusal="real_models.py:",
          notes="one scale from the whole tensor's mean (abs().mean() over all dims), clamp_ in place"),
    # ------------------------------------------------------------------------------------------------------ GEMM
    _case("bert_intermediate", "transformers/models/bert/modeling_bert.py: BertIntermediate.forward", "gemm",
          {"hidden_states": (64, 256), "weight": (1024, 256), "bias": (1024,)}, notes="F.linear + bias, gelu"),
    _case("gpt_bigcode_fc_act", "transformers/models/gpt_bigcode/modeling_gpt_bigcode.py: GPTBigCodeMLP.forward "
          "(c_fc + act)", "gemm", {"hidden_states": (64, 256), "weight": (1024, 256), "bias": (1024,)},
          notes="F.linear + bias, gelu tanh"),
    _case("granite_lm_head", "transformers/models/granite/modeling_granite.py: GraniteForCausalLM.forward "
          "(lm_head, logits_scaling)", "gemm", {"hidden_states": (16, 256), "weight": (2048, 256)},
          notes="logit scaling epilogue"),
    _case("gemma2_lm_head_softcap", "transformers/models/gemma2/modeling_gemma2.py: Gemma2ForCausalLM.forward "
          "(lm_head, softcapping)", "gemm", {"hidden_states": (16, 256), "weight": (2048, 256)},
          notes="tanh softcap epilogue"),
    _case("clip_logits_per_text", "transformers/models/clip/modeling_clip.py: CLIPModel.forward (logits_per_text)",
          "refused", {"text_embeds": (16, 256), "image_embeds": (64, 256), "logit_scale": ()},
          refusal="is not an input a GEMM's epilogue takes",
          notes="a GEMM whose epilogue multiplies by exp of a 0-d tensor: a scalar epilogue input, refused in one "
                "line (it was read as C's shape [M, N] before)"),
    _case("diffusers_approximate_gelu", "diffusers/models/activations.py: ApproximateGELU.forward", "gemm",
          {"x": (64, 256), "weight": (1024, 256), "bias": (1024,)}, notes="proj, x * sigmoid(1.702 x)"),
    _case("phi3_gate_up_proj_act", "transformers/models/phi3/modeling_phi3.py: Phi3MLP.forward (no down_proj)",
          "refused", {"hidden_states": (16, 256), "weight": (2048, 256)}, refusal="C's shape",
          notes="a fused gate_up GEMM whose epilogue chunks C in two: the output [M, N/2] is not C's shape (a fusion "
                "target, refused as the GEMM class stands)"),
    _case("clip_mlp", "transformers/models/clip/modeling_clip.py: CLIPMLP.forward", "refused",
          {"hidden_states": (64, 256), "fc1_weight": (1024, 256), "fc1_bias": (1024,), "fc2_weight": (256, 1024),
           "fc2_bias": (256,)}, refusal="second matmul", notes="fc1, quick_gelu, fc2"),
    _case("llama_mlp", "transformers/models/llama/modeling_llama.py: LlamaMLP.forward", "refused",
          {"x": (16, 256), "gate_proj_weight": (1024, 256), "up_proj_weight": (1024, 256),
           "down_proj_weight": (256, 1024)}, refusal="second matmul", notes="three matmuls"),
    _case("gpt2_conv1d", "transformers/pytorch_utils.py: Conv1D.forward", "refused",
          {"x": (32, 256), "weight": (256, 768), "bias": (768,)}, refusal="not K-major",
          notes="addmm(bias, x, weight) with weight stored [K, N] (GPT-2 c_attn/c_fc)"),
    _case("bert_self_output", "transformers/models/bert/modeling_bert.py: BertSelfOutput.forward", "refused",
          {"hidden_states": (64, 256), "weight": (256, 256), "input_tensor": (64, 256), "bias": (256,),
           "ln_weight": (256,), "ln_bias": (256,)}, refusal="is a reduction",
          notes="dense then LayerNorm(h + residual): a GEMM with a row-reduction epilogue"),
    _case("bert_pooler", "transformers/models/bert/modeling_bert.py: BertPooler.forward", "refused",
          {"hidden_states": (4, 16, 256), "weight": (256, 256), "bias": (256,)}, refusal="real_models.py:",
          notes="hidden_states[:, 0] (a strided row gather) before the linear, then tanh"),
    _case("bitnet_auto_bitlinear", "transformers/integrations/bitnet.py: AutoBitLinear.forward", "refused",
          {"input": (32, 256), "weight": (512, 256), "bias": (512,), "weight_scale": (1,)},
          refusal="is not an input a GEMM's epilogue takes",
          notes="a one-element weight scale in the epilogue (refused by the GEMM parameter rule, first), and a "
                "per-token fake quant (a row reduction) before the linear: not at the head"),
    # ---------------------------------------------------------------------------------------- decode attention
    _case("llama_eager_attention", "transformers/models/llama/modeling_llama.py: eager_attention_forward",
          "decode_attention", {"query": (2, 8, 1, 64), "key": (2, 2, 128, 64), "value": (2, 2, 128, 64)},
          notes="decode (Sq = 1), GQA via repeat_kv (n_rep 4 = H / Hkv), no mask; returns (attn_output "
                "[B, 1, H, D], attn_weights [B, H, 1, Sk])"),
    _case("gemma2_eager_attention", "transformers/models/gemma2/modeling_gemma2.py: eager_attention_forward",
          "decode_attention", {"query": (2, 8, 1, 64), "key": (2, 4, 128, 64), "value": (2, 4, 128, 64)},
          notes="decode with tanh softcapping of the scores (cap 50), n_rep 2; 2 outputs as upstream"),
    _case("gpt_oss_eager_attention", "transformers/models/gpt_oss/modeling_gpt_oss.py: eager_attention_forward",
          "decode_attention",
          {"query": (2, 8, 1, 64), "key": (2, 2, 128, 64), "value": (2, 2, 128, 64), "sinks": (8,)},
          notes="decode with per-head attention sinks (an extra softmax column, dropped), n_rep 4; 2 outputs"),
]


def _inputs(case, seed=0):
    """Random inputs for a case's tensor parameters: floats by randn, bools by rand > 0.5, ints by randint."""
    g = torch.Generator().manual_seed(seed)
    args = {}
    for name, shape in case["shapes"].items():
        dtype = getattr(torch, case["dtypes"].get(name, "float32"))
        if dtype == torch.bool:
            args[name] = torch.rand(shape, generator=g) > 0.5
        elif not dtype.is_floating_point and not dtype.is_complex:
            args[name] = torch.randint(0, 8, shape, generator=g, dtype=dtype)
        else:
            args[name] = torch.randn(shape, generator=g, dtype=dtype)
    return args


if __name__ == "__main__":
    import collections

    names = [c["fn"] for c in CASES]
    assert len(names) == len(set(names)), "a function listed twice"
    failed = 0
    for case in CASES:
        try:
            out = globals()[case["fn"]](**_inputs(case))
            outs = out if isinstance(out, tuple) else (out,)
            shown = ", ".join(f"{list(o.shape)} {str(o.dtype).removeprefix('torch.')}" for o in outs)
            print(f"OK   {case['fn']:<46} {case['cls']:<16} -> {shown}")
        except Exception as e:  # noqa: BLE001 -- the self-check reports every case
            failed += 1
            print(f"FAIL {case['fn']:<46} {type(e).__name__}: {e}")
    print(dict(collections.Counter(c["cls"] for c in CASES)), f"{len(CASES)} cases, {failed} failed")
    raise SystemExit(1 if failed else 0)
