"""real_models.py's functions as a user hands them to the template: the same upstream bodies, called with the
annotations the README's parameter rule asks for where a parameter's name cannot tell its kind (a one-element learned
scalar `"[]"` / `"[1]"`, a boolean mask, a [N] vector not named like one). A bake copies real_models.py beside this
file (a sibling import), and the traced lines are the upstream bodies' own. EXPECT is bench_lowered.py's: each
function's cell, number of outputs and (optionally) the shapes to bake it with. These are the functions the H200 runs of the "Real models' ops" round bake.
"""

import real_models as upstream


def gpt_neo_causal_softmax(attn_weights, causal_mask: "[M, N] bool"):  # noqa: F722
    return upstream.gpt_neo_causal_softmax(attn_weights, causal_mask)


def bitnet_act_quant(activation):
    return upstream.bitnet_act_quant(activation)


def xielu(x, alpha_p: "[1]", alpha_n: "[1]", beta: "[]", eps: "[]"):  # noqa: F722
    return upstream.xielu(x, alpha_p, alpha_n, beta, eps)


def prelu(input, weight):  # noqa: A002 -- upstream's name
    return upstream.prelu(input, weight)


def min_p_mask(scores):
    return upstream.min_p_mask(scores)


def deepseek_v3_sigmoid_scores(router_logits, e_score_correction_bias: "[N]"):  # noqa: F821
    return upstream.deepseek_v3_sigmoid_scores(router_logits, e_score_correction_bias)


def phi3_gate_up_act(up_states):
    return upstream.phi3_gate_up_act(up_states)


def gpt_oss_apply_gate(gate_up):
    return upstream.gpt_oss_apply_gate(gate_up)


def bitnet_activation_quant(input):  # noqa: A002 -- upstream's name
    return upstream.bitnet_activation_quant(input)


def quantize_fp8_per_row(x):
    return upstream.quantize_fp8_per_row(x)


def gemma2_final_logit_softcap(logits):
    return upstream.gemma2_final_logit_softcap(logits)


def llama_rope(q: "[B, S, H, D]", k: "[B, S, H, D]", cos: "[S, D]", sin: "[S, D]"):  # noqa: F722, F821
    """RoPE on q and k together, half rotation (rotate_half): cos/sin [S, D] broadcast over B and H."""
    return upstream.llama_apply_rotary_pos_emb(q, k, cos, sin)


def cohere_rope(q: "[B, S, H, D]", k: "[B, S, H, D]", cos: "[S, D]", sin: "[S, D]"):  # noqa: F722, F821
    """RoPE on q and k together, interleaved pairs (x[..., ::2], x[..., 1::2]): cos/sin [S, D]."""
    return upstream.cohere_apply_rotary_pos_emb(q, k, cos, sin)


def qwen3_q_norm(q_proj_out, weight, head_dim: int = 128, variance_epsilon: float = 1e-6):
    """QK-norm over heads: q [T, H*128] viewed as [T, H, 128] inside the function, RMS-normalised per head."""
    return upstream.qwen3_q_norm(q_proj_out, weight, head_dim, variance_epsilon)


def sd35_ada_layer_norm_zero_x(hidden_states: "[B, S, D]", shift_msa: "[B, D]", scale_msa: "[B, D]",  # noqa: F722, F821
                               shift_msa2: "[B, D]", scale_msa2: "[B, D]"):  # noqa: F722, F821
    """adaLN (DiT, SD3.5): one LayerNorm of x [B, S, D], two modulations by [B, D] shifts and scales broadcast over S by
    the function's own [:, None]. Every case passed on the H200 on 2026-12-05
    (benchmarks/2026-12-05-h200-per-row.md)."""
    return upstream.sd35_ada_layer_norm_zero_x(hidden_states, shift_msa, scale_msa, shift_msa2, scale_msa2)


def diffusers_ada_layer_norm_continuous(x: "[B, S, D]", scale: "[B, D]", shift: "[B, D]"):  # noqa: F722, F821
    """adaLN (SD3's norm_out): (1 + scale)[:, None, :] computed in scale's own dims, then broadcast over S. Every case
    passed on the H200 on 2026-12-05 (benchmarks/2026-12-05-h200-per-row.md)."""
    return upstream.diffusers_ada_layer_norm_continuous(x, scale, shift)


def gemma_embed_normalizer(hidden_states):
    """Gemma's embeddings times torch.tensor(sqrt(2048), dtype=x.dtype): 45.25 in bf16, 45.2548 in fp32. Every case
    passed on the H200 on 2026-12-05 (benchmarks/2026-12-05-h200-per-row.md)."""
    return upstream.gemma_embed_normalizer(hidden_states)


def mamba2_apply_mask_to_padding_states(hidden_states: "[B, S, D]", attention_mask: "[B, S]"):  # noqa: F722, F821
    """Mamba2's padding mask: one value per row of [B, S, D]. Every case passed on the H200 on 2026-12-05
    (benchmarks/2026-12-05-h200-per-row.md)."""
    return upstream.mamba2_apply_mask_to_padding_states(hidden_states, attention_mask)


def colpali_retrieval_embeddings(embeddings: "[B, S, D]", attention_mask: "[B, S]"):  # noqa: F722, F821
    """ColPali's L2-normalised embeddings, then the padding mask. Every case passed on the H200 on 2026-12-05
    (benchmarks/2026-12-05-h200-per-row.md)."""
    return upstream.colpali_retrieval_embeddings(embeddings, attention_mask)


def esm_embeddings_norm_mask(embeddings: "[B, S, D]", attention_mask: "[B, S]", layer_norm_weight,  # noqa: F722, F821
                             layer_norm_bias):
    """ESM's LayerNorm (weight and bias), then the padding mask. Every case passed on the H200 on 2026-12-05
    (benchmarks/2026-12-05-h200-per-row.md)."""
    return upstream.esm_embeddings_norm_mask(embeddings, attention_mask, layer_norm_weight, layer_norm_bias)


def qwen2_moe_shared_expert_combine(expert_output, shared_expert_output, shared_gate_logits: "[M, 1]"):  # noqa: F722, F821
    """Qwen2-MoE's shared expert gated by sigmoid of a [T, 1] logit, plus the routed experts. Every case passed on the
    H200 on 2026-12-05 (benchmarks/2026-12-05-h200-per-row.md)."""
    return upstream.qwen2_moe_shared_expert_combine(expert_output, shared_expert_output, shared_gate_logits)


def ddpm_add_noise(original_samples: "[B, C, H, W]", noise: "[B, C, H, W]", alphas_cumprod_t: "[B]"):  # noqa: F722, F821
    """DDPM's forward diffusion: one value per sample [B] over NCHW rows of W. Every case passed on the H200 on
    2026-12-05 (benchmarks/2026-12-05-h200-per-row.md)."""
    return upstream.ddpm_add_noise(original_samples, noise, alphas_cumprod_t)


def timm_layer_scale_2d(x: "[B, C, H, W]", gamma: "[C]"):  # noqa: F722, F821
    """timm's LayerScale2d: one gamma per channel over NCHW rows of W. Every case passed on the H200 on 2026-12-05
    (benchmarks/2026-12-05-h200-per-row.md)."""
    return upstream.timm_layer_scale_2d(x, gamma)


def dac_snake1d(hidden_states: "[B, C, T]", alpha: "[1, C, 1]"):  # noqa: F722, F821
    """DAC's Snake activation: torch.sin, one alpha per channel over rows of T. Every case passed on the H200 on
    2026-12-05 (benchmarks/2026-12-05-h200-per-row.md)."""
    return upstream.dac_snake1d(hidden_states, alpha)


def diffusers_rope(x: "[B, H, S, D]", cos: "[S, D]", sin: "[S, D]"):  # noqa: F722, F821
    """diffusers' apply_rotary_emb (Flux, CogVideoX, HunyuanDiT): x viewed as pairs, its interleaved lanes, with cos and
    sin [S, D] broadcast over B and H."""
    return upstream.diffusers_apply_rotary_emb(x, cos, sin)


def diffusers_rope_halves(x: "[B, H, S, D]", cos: "[S, D]", sin: "[S, D]"):  # noqa: F722, F821
    """diffusers' apply_rotary_emb (Stable Audio, OmniGen, CogView4, Cosmos): x viewed as [.., 2, D/2], its halves,
    with cos and sin [S, D] broadcast over B and H."""
    return upstream.diffusers_apply_rotary_emb_halves(x, cos, sin)


ADALN = "2x4096x3072;1x1024x1536;3x7x1000"  # x's [B, S, D] (SD3.5 large: 4096 image tokens of 1536; Flux: 3072)
ROPE = "1x8192x32x128;4x2048x32x128;1x1000x8x64;3x7x5x128"  # q's [B, S, H, D]
GLU = "8192x14336;4096x14336;1000x1001;7x4096"  # the output [M, N]: the input is [M, 2N] (2x14336 at the headline)
NCHW = "16x4x128x128;64x320x64x64;3x5x7x9"  # x's [B, C, H, W]: SD latents, a UNet block's activations, odd sizes
EXPECT = {"gpt_neo_causal_softmax": ("reduction", 1), "bitnet_act_quant": ("reduction", 1), "xielu": ("elementwise", 1),
          "prelu": ("elementwise", 1), "min_p_mask": ("reduction", 1), "deepseek_v3_sigmoid_scores": ("elementwise", 2),
          "gemma2_final_logit_softcap": ("elementwise", 1),
          # gated MLPs: elementwise programs whose input is read in parts, run in the row (reduction) cell
          "phi3_gate_up_act": ("reduction", 1, GLU), "gpt_oss_apply_gate": ("reduction", 1, GLU),
          # per-row absmax quantizers with round: int8 / fp8 e4m3 values and the scale
          "bitnet_activation_quant": ("reduction", 2), "quantize_fp8_per_row": ("reduction", 2),
          # N-D rows: RoPE's q and k [B, S, H, D] with cos/sin [S, D] broadcast over B and H (8192 tokens x 32 heads
          # x 128), and a QK-norm that views [T, 32*128] as heads of 128
          "llama_rope": ("reduction", 2, ROPE), "cohere_rope": ("reduction", 2, ROPE),
          "qwen3_q_norm": ("reduction", 1, "8192x4096;4096x4096;1000x1024;7x128"),
          "sd35_ada_layer_norm_zero_x": ("reduction", 2, ADALN),
          "diffusers_ada_layer_norm_continuous": ("reduction", 1, ADALN), "gemma_embed_normalizer": ("elementwise", 1),
          # one value per row: a [B, S] padding mask over [B, S, D] and a [T, 1] gate, in the row cell
          "mamba2_apply_mask_to_padding_states": ("reduction", 1, ADALN), "colpali_retrieval_embeddings":
              ("reduction", 1, ADALN), "esm_embeddings_norm_mask": ("reduction", 1, ADALN),
          "qwen2_moe_shared_expert_combine": ("reduction", 1),
          # one value per row broadcast over some of x's dims: per sample and per channel over NCHW (SD's latents)
          "ddpm_add_noise": ("reduction", 1, NCHW), "timm_layer_scale_2d": ("reduction", 1, NCHW),
          "dac_snake1d": ("reduction", 1, "16x1024x4096;4x64x24000;3x5x7"),  # DAC's channels and samples
          # a row viewed as pairs (its lanes), x [B, H, S, D]: Flux's 24 heads over 4096 + 512 tokens
          "diffusers_rope": ("reduction", 1, "1x24x4608x128;2x8x1000x64;3x5x7x128"),
          "diffusers_rope_halves": ("reduction", 1, "1x24x4096x64;2x8x1000x64;3x5x7x128")}
