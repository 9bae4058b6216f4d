"""Decode-attention variants from real model code, as plain PyTorch functions of one decode step.

The bodies are copied from transformers (5.25.0 unless a docstring says 4.44.2), vLLM's and NeMo's reference code,
and the papers' equations, and adapted to one calling convention, for the template's decode lowering
(tools/lower/attention.py) to recognise, lower and check. No model library is imported: each docstring names the
upstream function or class it comes from and what was changed.

The convention:
- ``q [B, Hq, D]``: one query token per sequence, at position ``seq_lens[b] - 1``;
- ``k_cache, v_cache [B, S, Hkv, D]``: the caches; key positions ``>= seq_lens[b]`` hold stale data, which every
  function masks out itself (Hq = G * Hkv, any G >= 1, Hkv = 1 included);
- ``seq_lens [B]`` int32, ``1 <= len <= S``;
- then optional float vectors, one value per query head ``[Hq]`` or per sequence ``[B]`` (annotated ``"[B]"``),
  then Python constants with defaults. Names and order vary as in real code (two functions take the caches first,
  one takes the lengths before them): the tracer tells q, K and V apart by dataflow.
- The result is ``out [B, Hq, D]`` in q's dtype.

``EXPECT`` maps each function to "lower", or to "refuse: WORD" where WORD is a word the one-line refusal should
contain. ``VECTORS`` says, for each function with vectors, which are per head ("head") or per sequence ("batch").
To add a variant: write the function under the convention (copy the upstream body, keep its forms and names, cite
it), check it against an explicit loop on random CPU tensors with stale cache slots, and add it to both dicts.
"""

import math

import torch
import torch.nn.functional as F


def _repeat_kv(hidden_states, n_rep: int):
    """transformers/models/llama/modeling_llama.py: repeat_kv, verbatim ([B, Hkv, S, D] -> [B, Hkv * n_rep, S, D])."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


# ============================================================================================== variants that lower


def llama_eager(query, key_cache, value_cache, cache_seqlens):
    """The plain GQA baseline, matmul + repeat_kv form. transformers llama/modeling_llama.py: eager_attention_forward
    (scaling = head_dim**-0.5, dropout off); the additive mask is masking_utils' causal_mask_function (kv_idx <=
    q_idx) as transformers materialises it for eager: 0 where kept, torch.finfo(dtype).min elsewhere."""
    b, hq, d = query.shape
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    kv_idx = torch.arange(key_cache.shape[1], device=query.device)
    q_idx = cache_seqlens[:, None] - 1
    zero = torch.tensor(0.0, device=query.device, dtype=query.dtype)  # masking_utils.eager_mask
    attention_mask = torch.where(kv_idx[None, :] <= q_idx, zero, torch.finfo(query.dtype).min)
    attn_weights = torch.matmul(query.unsqueeze(2), key_states.transpose(2, 3)) * d**-0.5
    attn_weights = attn_weights + attention_mask[:, None, None, :]
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous().reshape(b, hq, d)


def vllm_ref_einsum(q, k_cache, v_cache, seq_lens, scale: float = 0.125):
    """The plain GQA baseline, einsum + repeat_interleave form. vLLM tests/kernels/attention/test_flashinfer.py:
    ref_paged_attn (decode: query_len 1, no block table, batched): q *= scale, repeat_interleave of the KV heads,
    einsum, masked_fill(-inf) of the keys past the query, softmax in fp32, einsum with V."""
    n_rep = q.shape[1] // k_cache.shape[2]
    k = torch.repeat_interleave(k_cache, n_rep, dim=2)
    v = torch.repeat_interleave(v_cache, n_rep, dim=2)
    attn = torch.einsum("bhd,bkhd->bhk", q * scale, k).float()
    mask = torch.arange(k_cache.shape[1], device=q.device)[None, :] >= seq_lens[:, None]
    attn = attn.masked_fill(mask[:, None, :], float("-inf"))
    attn = torch.softmax(attn, dim=-1).to(v.dtype)
    return torch.einsum("bhk,bkhd->bhd", attn, v)


def gemma2_softcap(query, key_cache, value_cache, cache_seqlens, softcap: float = 50.0,
                   query_pre_attn_scalar: float = 256.0):
    """Softcapped scores. transformers gemma2/modeling_gemma2.py: eager_attention_forward with
    Gemma2Attention.scaling = config.query_pre_attn_scalar**-0.5 and attn_logit_softcapping 50.0 (Gemma2Config
    defaults): scores / softcap, tanh, * softcap, then the additive causal mask."""
    b, hq, d = query.shape
    n_rep = hq // key_cache.shape[2]
    key_states = _repeat_kv(key_cache.transpose(1, 2), n_rep)
    value_states = _repeat_kv(value_cache.transpose(1, 2), n_rep)
    attn_weights = torch.matmul(query.unsqueeze(2), key_states.transpose(2, 3)) * query_pre_attn_scalar**-0.5
    attn_weights = attn_weights / softcap
    attn_weights = torch.tanh(attn_weights)
    attn_weights = attn_weights * softcap
    kv_idx = torch.arange(key_cache.shape[1], device=query.device)
    causal = kv_idx[None, :] <= (cache_seqlens[:, None] - 1)
    zero = torch.tensor(0.0, device=query.device, dtype=query.dtype)
    attention_mask = torch.where(causal, zero, torch.finfo(query.dtype).min)[:, None, None, :]
    attn_weights = attn_weights + attention_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous().view(b, hq, d)


def gemma2_softcap_window(query, key_cache, value_cache, cache_seqlens, softcap: float = 50.0,
                          query_pre_attn_scalar: float = 256.0, sliding_window: int = 4096):
    """Softcap and a sliding window together: Gemma-2's sliding layers. transformers gemma2: eager_attention_forward
    as in gemma2_softcap, with the mask of masking_utils.sliding_window_causal_mask_function = and_masks(
    sliding_window_overlay (kv_idx > q_idx - sliding_window), causal_mask_function); sliding_window 4096 (config)."""
    b, hq, d = query.shape
    n_rep = hq // key_cache.shape[2]
    key_states = _repeat_kv(key_cache.transpose(1, 2), n_rep)
    value_states = _repeat_kv(value_cache.transpose(1, 2), n_rep)
    attn_weights = torch.matmul(query.unsqueeze(2), key_states.transpose(2, 3)) * query_pre_attn_scalar**-0.5
    attn_weights = torch.tanh(attn_weights / softcap) * softcap
    kv_idx = torch.arange(key_cache.shape[1], device=query.device)[None, :]
    q_idx = cache_seqlens[:, None] - 1
    keep = (kv_idx > q_idx - sliding_window) & (kv_idx <= q_idx)
    zero = torch.tensor(0.0, device=query.device, dtype=query.dtype)
    attn_weights = attn_weights + torch.where(keep, zero, torch.finfo(query.dtype).min)[:, None, None]
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).reshape(b, hq, d)


def mistral_sliding_window(q, k_cache, v_cache, lengths, window: int = 4096):
    """A sliding window. transformers mistral/modeling_mistral.py: eager_attention_forward (= llama's) under
    masking_utils.sliding_window_causal_mask_function(config.sliding_window = 4096): a key is kept when
    q_idx - window < kv_idx <= q_idx; the boolean mask becomes the additive finfo.min mask of eager attention."""
    b, hq, d = q.shape
    key_states = _repeat_kv(k_cache.permute(0, 2, 1, 3), hq // k_cache.shape[2])
    value_states = _repeat_kv(v_cache.permute(0, 2, 1, 3), hq // v_cache.shape[2])
    kv_idx = torch.arange(k_cache.shape[1], device=q.device).view(1, 1, 1, -1)
    q_idx = (lengths - 1).view(-1, 1, 1, 1)
    mask = (kv_idx > q_idx - window) & (kv_idx <= q_idx)
    attn_weights = torch.matmul(q[:, :, None, :], key_states.transpose(2, 3)) * (1.0 / math.sqrt(d))
    attn_weights = attn_weights.masked_fill(~mask, torch.finfo(attn_weights.dtype).min)
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(attn_weights, value_states).squeeze(2)


def bloom_alibi(query, key_cache, value_cache, seq_lens, slopes):
    """ALiBi, BLOOM form. transformers bloom/modeling_bloom.py: build_alibi_tensor (alibi = slopes * position, the
    position (cumsum(mask) - 1) * mask = the key index when there is no left padding) and BloomAttention.forward:
    alibi.baddbmm(batch1=query, batch2=key, beta=1.0, alpha=inv_norm_factor), + additive mask, softmax in fp32.
    The slopes are an input [Hq] (upstream: _get_alibi_slopes(num_heads)); BLOOM is MHA, GQA added by repeat_kv."""
    b, hq, d = query.shape
    s = key_cache.shape[1]
    key_layer = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_layer = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    arange_tensor = torch.arange(s, device=query.device)[None, None, :]
    alibi = (slopes[None, :, None] * arange_tensor).reshape(hq, 1, s).repeat(b, 1, 1).to(query.dtype)
    query_layer = query.reshape(b * hq, 1, d)
    key_layer = key_layer.reshape(b * hq, s, d).transpose(-1, -2)
    attention_scores = alibi.baddbmm(batch1=query_layer, batch2=key_layer, beta=1.0, alpha=1.0 / math.sqrt(d))
    attn_weights = attention_scores.view(b, hq, 1, s)
    padding = torch.arange(s, device=query.device)[None, :] < seq_lens[:, None]
    zero = torch.tensor(0.0, device=query.device, dtype=query.dtype)
    attn_weights = attn_weights + torch.where(padding, zero, torch.finfo(query.dtype).min)[:, None, None, :]
    attention_probs = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    context_layer = torch.bmm(attention_probs.view(b * hq, 1, s), value_layer.reshape(b * hq, s, d))
    return context_layer.view(b, hq, d)


def mpt_alibi(query, key_cache, value_cache, seq_lens, slopes, softmax_scale: float = 0.125):
    """ALiBi, MPT form: the bias is slope * (key_pos - (S - 1)), built from torch.arange(1 - S, 1), a per-row shift
    of BLOOM's. transformers mpt/modeling_mpt.py: build_mpt_alibi_tensor (slopes an input [Hq]) and
    MptAttention.forward: scores * softmax_scale + position_bias, masked_fill(finfo.min), softmax(scores.float())."""
    b, hq, d = query.shape
    s = key_cache.shape[1]
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    alibi = torch.arange(1 - s, 1, dtype=torch.int32, device=query.device).view(1, 1, 1, s)
    position_bias = (alibi * slopes.view(1, hq, 1, 1)).squeeze(0)
    attention_scores = torch.matmul(query.unsqueeze(2), key_states.transpose(-1, -2)) * softmax_scale
    attention_scores = attention_scores + position_bias
    attention_mask = torch.arange(s, device=query.device).view(1, 1, 1, s) >= seq_lens.view(b, 1, 1, 1)
    attention_scores = attention_scores.masked_fill(attention_mask, torch.finfo(query.dtype).min)
    attn_weights = F.softmax(attention_scores.float(), dim=-1).to(value_states.dtype)
    return torch.matmul(attn_weights, value_states).view(b, hq, d)


def falcon_alibi(q, k_cache, v_cache, seq_lens, alibi_slopes):
    """ALiBi, Falcon form: the bias divided by sqrt(head_dim) and merged into the mask. transformers
    falcon/modeling_falcon.py: FalconModel.forward (causal_mask = masked_fill(alibi / sqrt(head_dim), causal_mask <
    -1, min_dtype)) and eager_attention_forward (scores * scaling + causal_mask). Upstream rounds the slopes to bf16
    (build_alibi_tensor's slopes.bfloat16()); here they stay in their dtype."""
    b, hq, d = q.shape
    s = k_cache.shape[1]
    min_dtype = torch.finfo(q.dtype).min
    arange_tensor = torch.arange(s, device=q.device)[None, None, :]
    alibi = (alibi_slopes[None, :, None] * arange_tensor).to(q.dtype)  # [1, Hq, S]
    zero = torch.tensor(0.0, device=q.device, dtype=q.dtype)
    causal_mask = torch.where(arange_tensor < seq_lens[:, None, None], zero, min_dtype)  # [B, 1, S]
    causal_mask = torch.masked_fill(alibi / math.sqrt(d), causal_mask < -1, min_dtype)  # [B, Hq, S]
    key_states = _repeat_kv(k_cache.transpose(1, 2), hq // k_cache.shape[2])
    value_states = _repeat_kv(v_cache.transpose(1, 2), hq // v_cache.shape[2])
    attn_weights = torch.matmul(q.unsqueeze(2), key_states.transpose(2, 3)) * d**-0.5
    attn_weights = attn_weights + causal_mask.unsqueeze(2)
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(attn_weights, value_states).squeeze(2)


def gpt_oss_sinks(query, key_cache, value_cache, seq_lens, sinks):
    """Attention sinks. transformers gpt_oss/modeling_gpt_oss.py: eager_attention_forward, verbatim from the sinks
    on: the per-head logit sinks [Hq] is concatenated to the scores, the row max subtracted, softmax, the sink column
    dropped ([..., :-1]) before P.V (the sinks cast to the scores' dtype: here they may come in fp32). scaling =
    head_dim**-0.5; the additive causal mask as in llama_eager."""
    b, hq, d = query.shape
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    query = query.unsqueeze(2)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * d**-0.5
    kv_idx = torch.arange(key_cache.shape[1], device=query.device)
    zero = torch.tensor(0.0, device=query.device, dtype=query.dtype)
    attention_mask = torch.where(kv_idx[None, :] < seq_lens[:, None], zero, torch.finfo(query.dtype).min)
    attn_weights = attn_weights + attention_mask[:, None, None, :]
    sinks = sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1).to(attn_weights.dtype)
    combined_logits = torch.cat([attn_weights, sinks], dim=-1)
    combined_logits = combined_logits - combined_logits.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined_logits, dim=-1, dtype=combined_logits.dtype)
    scores = probs[..., :-1]  # we drop the sink here
    attn_weights = F.dropout(scores, p=0.0, training=False).to(value_states.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous().view(b, hq, d)


def gpt_oss_sliding_sinks(key_cache, value_cache, query, seq_lens, sinks, sliding_window: int = 128):
    """Sinks and a sliding window: gpt-oss's "sliding_attention" layers (config.sliding_window = 128). Caches first.
    transformers gpt_oss: eager_attention_forward as in gpt_oss_sinks, under masking_utils'
    sliding_window_causal_mask_function (a key is kept when q_idx - sliding_window < kv_idx <= q_idx)."""
    b, hq, d = query.shape
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    attn_weights = torch.matmul(query.unsqueeze(2), key_states.transpose(2, 3)) * d**-0.5
    kv_idx = torch.arange(key_cache.shape[1], device=query.device)[None, :]
    q_idx = seq_lens[:, None] - 1
    keep = (kv_idx <= q_idx) & (kv_idx > q_idx - sliding_window)
    attn_weights = attn_weights.masked_fill(~keep[:, None, None, :], torch.finfo(attn_weights.dtype).min)
    sinks = sinks.reshape(1, -1, 1, 1).expand(b, -1, 1, -1).to(attn_weights.dtype)
    combined_logits = torch.cat([attn_weights, sinks], dim=-1)
    combined_logits = combined_logits - combined_logits.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined_logits, dim=-1, dtype=combined_logits.dtype)
    attn_weights = probs[..., :-1].to(value_states.dtype)
    return torch.matmul(attn_weights, value_states).reshape(b, hq, d)


def granite_scale(query, key_cache, value_cache, cache_seqlens, attention_multiplier: float = 0.015625):
    """A custom constant scale. transformers granite/modeling_granite.py: GraniteAttention.scaling =
    config.attention_multiplier (0.015625 = 1/64 in granite-3.0-2b's config, not head_dim**-0.5), passed as
    `scaling` to eager_attention_forward (= llama's)."""
    b, hq, d = query.shape
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    attn_weights = torch.matmul(query.unsqueeze(2), key_states.transpose(2, 3)) * attention_multiplier
    kv_idx = torch.arange(key_cache.shape[1], device=query.device)
    zero = torch.tensor(0.0, device=query.device, dtype=query.dtype)
    mask = torch.where(kv_idx[None, :] < cache_seqlens[:, None], zero, float("-inf"))
    attn_weights = attn_weights + mask[:, None, None, :]
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(attn_weights, value_states).squeeze(2)


def phi2_fp32_qk(query_states, key_cache, value_cache, seq_lens):
    """q and K upcast to fp32 before the product, `/ math.sqrt(head_dim)`. transformers 4.44.2 phi/modeling_phi.py:
    PhiAttention.forward ("Queries and keys upcast to fp32 is required by Phi-2 to avoid overflow"), attn_weights +=
    causal_mask, softmax(dtype=float32).to(value dtype)."""
    b, hq, d = query_states.shape
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    attn_weights = torch.matmul(
        query_states.unsqueeze(2).to(torch.float32), key_states.to(torch.float32).transpose(2, 3)
    ) / math.sqrt(d)
    kv_idx = torch.arange(key_cache.shape[1], device=query_states.device)
    zero = torch.tensor(0.0, device=query_states.device, dtype=torch.float32)
    causal_mask = torch.where(kv_idx[None, :] < seq_lens[:, None], zero, torch.finfo(torch.float32).min)
    attn_weights += causal_mask[:, None, None, :]
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).reshape(b, hq, d)


def bigcode_mqa_fp32_softmax(query, key_cache, value_cache, seq_lens, layer_idx: int = 3):
    """MQA (StarCoder: one KV head; the same code serves any Hkv) with the fp32 "unscaled" softmax. transformers
    4.44.2 gpt_bigcode/modeling_gpt_bigcode.py: GPTBigCodeAttention._attn (scale_factor = 1 / (unscale *
    sqrt(head_dim)), unscale = layer_idx + 1) and upcast_masked_softmax (x.to(float32) * unscale, where(mask, x,
    finfo.min), softmax, back to the input dtype). The KV heads broadcast by 5.25's repeat_kv."""
    b, hq, d = query.shape
    unscale = layer_idx + 1
    scale_factor = unscale**-1 / d**0.5
    key = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    attn_weights = torch.matmul(query.unsqueeze(2), key.transpose(-1, -2)) * scale_factor
    attention_mask = (torch.arange(key_cache.shape[1], device=query.device)[None, :] < seq_lens[:, None])
    mask_value = torch.full([], torch.finfo(torch.float32).min, dtype=torch.float32, device=query.device)
    x = attn_weights.to(torch.float32) * unscale
    x = torch.where(attention_mask[:, None, None, :], x, mask_value)
    attn_weights = F.softmax(x, dim=-1).to(query.dtype)
    return torch.matmul(attn_weights, value).view(b, hq, d)


def per_head_bias(q, k_cache, v_cache, seq_lens, head_bias):
    """A per-head additive bias [Hq] on every score of the head. No upstream model: a learned per-head logit offset
    (softmax-invariant, so the output equals the baseline's; it checks that a head vector in score() lowers)."""
    b, hq, d = q.shape
    k = _repeat_kv(k_cache.transpose(1, 2), hq // k_cache.shape[2])
    v = _repeat_kv(v_cache.transpose(1, 2), hq // v_cache.shape[2])
    scores = torch.matmul(q.unsqueeze(2), k.transpose(2, 3)) / math.sqrt(d) + head_bias[None, :, None, None]
    valid = torch.arange(k_cache.shape[1], device=q.device)[None, :] < seq_lens[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    return torch.matmul(scores.softmax(dim=-1).to(v.dtype), v).squeeze(2)


def kerple_log(query, key_cache, value_cache, seq_lens, bias_p, bias_a):
    """A smooth function of distance, KERPLE-log (Chi et al. 2022): bias = -p * log(1 + a * (q_pos - k_pos)), with
    learned per-head p, a > 0 ([Hq] each). NeMo Megatron's kerple_log_forward (the decode branch takes row
    seq_len_k - 1 of the bias, i.e. q_pos = len - 1), clamps p and a at eps = 1e-2 as it does."""
    b, hq, d = query.shape
    bias_p = bias_p.clamp(min=1e-2)[None, :, None]
    bias_a = bias_a.clamp(min=1e-2)[None, :, None]
    kv_idx = torch.arange(key_cache.shape[1], device=query.device)[None, :]
    q_idx = seq_lens[:, None] - 1
    diff = (q_idx - kv_idx).clamp(min=0).to(query.dtype)[:, None, :]  # tril: distances of future keys are 0
    bias = -bias_p * torch.log(1 + bias_a * diff)  # log kernel
    n_rep = hq // key_cache.shape[2]
    k = torch.repeat_interleave(key_cache, n_rep, dim=2)
    v = torch.repeat_interleave(value_cache, n_rep, dim=2)
    x = torch.einsum("bhd,bshd->bhs", query, k) / math.sqrt(d) + bias
    x = torch.where((kv_idx <= q_idx)[:, None, :], x, float("-inf"))
    return torch.einsum("bhs,bshd->bhd", torch.softmax(x.float(), dim=-1).to(v.dtype), v)


def sdpa_pack_gqa(query, key_cache, value_cache, cache_seqlens, scaling: float = 0.125):
    """SDPA with a boolean positional mask, GQA by a grouped view of q. transformers integrations/sdpa_attention.py:
    sdpa_attention_forward's one-query-token path (pack_gqa: query [B, Hq, 1, D] -> [B, Hkv, G, D]; a mask shared by
    the heads stays [B, 1, 1, S]) and F.scaled_dot_product_attention(attn_mask=bool, scale=scaling)."""
    b, hq, d = query.shape
    hkv = key_cache.shape[2]
    query = query.reshape(b, hkv, hq // hkv, d)
    key, value = key_cache.transpose(1, 2), value_cache.transpose(1, 2)
    attention_mask = torch.arange(key_cache.shape[1], device=query.device)[None, :] < cache_seqlens[:, None]
    attn_output = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask[:, None, None, :],
                                                 dropout_p=0.0, scale=scaling)
    return attn_output.reshape(b, hq, d)


def sdpa_enable_gqa_window(seq_lens, q, k_cache, v_cache, window: int = 1024):
    """SDPA with enable_gqa=True and a sliding-window mask from positions; the lengths come first. transformers
    sdpa_attention_forward with use_gqa_in_sdpa (enable_gqa) under sliding_window_causal_mask_function."""
    b, hq, d = q.shape
    kv_idx = torch.arange(k_cache.shape[1], device=q.device)[None, :]
    q_idx = seq_lens[:, None].long() - 1
    mask = (kv_idx <= q_idx) & (kv_idx > q_idx - window)
    out = F.scaled_dot_product_attention(q[:, :, None], k_cache.transpose(1, 2), v_cache.transpose(1, 2),
                                         attn_mask=mask[:, None, None, :], enable_gqa=True)
    return out[:, :, 0]


def llama4_temperature(query, key_cache, value_cache, seq_lens, floor_scale: float = 8192.0,
                       attn_scale: float = 0.1):
    """Query temperature by position (a score factor per sequence). transformers llama4/modeling_llama4.py:
    Llama4TextAttention.forward, NoPE layers with attn_temperature_tuning: attn_scales = log1p(floor((positions +
    1) / floor_scale)) * attn_scale + 1, query_states * attn_scales; positions + 1 = seq_lens at decode."""
    b, hq, d = query.shape
    attn_scales = torch.log1p(torch.floor(seq_lens.float() / floor_scale)) * attn_scale + 1.0
    query_states = (query * attn_scales.view(b, 1, 1)).to(query.dtype)
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    attn_weights = torch.matmul(query_states.unsqueeze(2), key_states.transpose(2, 3)) * d**-0.5
    valid = torch.arange(key_cache.shape[1], device=query.device)[None, :] < seq_lens[:, None]
    attn_weights = attn_weights.masked_fill(~valid[:, None, None, :], torch.finfo(attn_weights.dtype).min)
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(attn_weights, value_states).squeeze(2)


def llama4_temperature_vector(query, key_cache, value_cache, lengths, attn_scales: "[B]"):  # noqa: F821
    """The same temperature, computed by the caller and passed as a per-sequence vector [B] (how a serving engine
    hands it over: one value per decode token). transformers llama4: Llama4TextAttention.forward."""
    b, hq, d = query.shape
    query_states = (query * attn_scales.view(b, 1, 1)).to(query.dtype)
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    attn_weights = torch.matmul(query_states.unsqueeze(2), key_states.transpose(2, 3)) * d**-0.5
    valid = torch.arange(key_cache.shape[1], device=query.device)[None, :] < lengths[:, None]
    attn_weights = attn_weights.masked_fill(~valid[:, None, None, :], torch.finfo(attn_weights.dtype).min)
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(attn_weights, value_states).squeeze(2)


def llama4_chunked(value_cache, key_cache, query, seq_lens, attention_chunk_size: int = 8192):
    """Chunked local attention: a key is kept when it is in the query's chunk. Caches first, V before K.
    transformers masking_utils.py: chunked_overlay (kv_idx // chunk_size == q_idx // chunk_size, no left padding)
    and causal_mask_function; Llama-4's attention_chunk_size = 8192."""
    b, hq, d = query.shape
    kv_idx = torch.arange(key_cache.shape[1], device=query.device)[None, :]
    q_idx = seq_lens[:, None] - 1
    keep = (kv_idx // attention_chunk_size == q_idx // attention_chunk_size) & (kv_idx <= q_idx)
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    attn_weights = torch.matmul(query.unsqueeze(2), key_states.transpose(2, 3)) * d**-0.5
    zero = torch.tensor(0.0, device=query.device, dtype=query.dtype)
    attn_weights = attn_weights + torch.where(keep, zero, torch.finfo(query.dtype).min)[:, None, None]
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(attn_weights, value_states).transpose(1, 2).reshape(b, hq, d)


# ====================================================================================== refusals (not one kernel)


def diff_attention_two_softmaxes(q, k_cache, v_cache, seq_lens, lambda_full: float = 0.8):
    """Two softmaxes: differential attention (Ye et al. 2024, Diff Transformer eq. 1): (softmax(Q1 K1^T / sqrt(d))
    - lambda * softmax(Q2 K2^T / sqrt(d))) V with Q, K split in halves along the head dim."""
    b, hq, d = q.shape
    k = torch.repeat_interleave(k_cache, hq // k_cache.shape[2], dim=2)
    v = torch.repeat_interleave(v_cache, hq // v_cache.shape[2], dim=2)
    q1, q2 = q.chunk(2, dim=-1)
    k1, k2 = k.chunk(2, dim=-1)
    valid = (torch.arange(k_cache.shape[1], device=q.device)[None, :] < seq_lens[:, None])[:, None, :]
    a1 = torch.einsum("bhd,bshd->bhs", q1, k1).div(math.sqrt(d // 2)).masked_fill(~valid, float("-inf"))
    a2 = torch.einsum("bhd,bshd->bhs", q2, k2).div(math.sqrt(d // 2)).masked_fill(~valid, float("-inf"))
    attn = torch.softmax(a1, dim=-1) - lambda_full * torch.softmax(a2, dim=-1)
    return torch.einsum("bhs,bshd->bhd", attn, v)


def softmax_over_heads(q, k_cache, v_cache, seq_lens):
    """A softmax over the query heads instead of the keys (heads compete for each key). No upstream model: a common
    mistake (dim=1 for dim=-1), and no decode kernel."""
    b, hq, d = q.shape
    k = _repeat_kv(k_cache.transpose(1, 2), hq // k_cache.shape[2])
    v = _repeat_kv(v_cache.transpose(1, 2), hq // v_cache.shape[2])
    scores = torch.matmul(q.unsqueeze(2), k.transpose(2, 3)) / math.sqrt(d)
    valid = torch.arange(k_cache.shape[1], device=q.device)[None, :] < seq_lens[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], torch.finfo(scores.dtype).min)
    return torch.matmul(F.softmax(scores, dim=1), v).squeeze(2)


def learned_position_table(q, k_cache, v_cache, seq_lens, position_weights: "[S, S]"):  # noqa: F821
    """A learned [S_max, S_max] bias table indexed by (query, key) position (Swin's relative_position_bias_table /
    T5's relative_attention_bias are lookups of this kind): the row of the query position is gathered."""
    b, hq, d = q.shape
    k = _repeat_kv(k_cache.transpose(1, 2), hq // k_cache.shape[2])
    v = _repeat_kv(v_cache.transpose(1, 2), hq // v_cache.shape[2])
    position_bias = position_weights[(seq_lens - 1).long()]  # [B, S]
    scores = torch.matmul(q.unsqueeze(2), k.transpose(2, 3)) / math.sqrt(d) + position_bias[:, None, None, :]
    valid = torch.arange(k_cache.shape[1], device=q.device)[None, :] < seq_lens[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    return torch.matmul(scores.softmax(-1).to(v.dtype), v).squeeze(2)


def llama_eager_training_dropout(query, key_cache, value_cache, seq_lens, dropout: float = 0.1):
    """Dropout on the probabilities in training mode. transformers llama: eager_attention_forward with
    module.training = True and config.attention_dropout = 0.1: F.dropout(attn_weights, p, training=True)."""
    b, hq, d = query.shape
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    attn_weights = torch.matmul(query.unsqueeze(2), key_states.transpose(2, 3)) * d**-0.5
    valid = torch.arange(key_cache.shape[1], device=query.device)[None, :] < seq_lens[:, None]
    attn_weights = attn_weights.masked_fill(~valid[:, None, None, :], torch.finfo(attn_weights.dtype).min)
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=dropout, training=True)
    return torch.matmul(attn_weights, value_states).squeeze(2)


def qwen3_next_output_gate(query, key_cache, value_cache, seq_lens, gate_logits):
    """An output epilogue: the attention output times a sigmoid gate. transformers qwen3_next/modeling_qwen3_next.py:
    Qwen3NextAttention.forward, attn_output * torch.sigmoid(gate), the gate from the q projection's second half
    (here one learned logit per head [Hq], for the calling convention)."""
    b, hq, d = query.shape
    key_states = _repeat_kv(key_cache.transpose(1, 2), hq // key_cache.shape[2])
    value_states = _repeat_kv(value_cache.transpose(1, 2), hq // value_cache.shape[2])
    attn_weights = torch.matmul(query.unsqueeze(2), key_states.transpose(2, 3)) * d**-0.5
    valid = torch.arange(key_cache.shape[1], device=query.device)[None, :] < seq_lens[:, None]
    attn_weights = attn_weights.masked_fill(~valid[:, None, None, :], torch.finfo(attn_weights.dtype).min)
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value_states).squeeze(2)
    return attn_output * torch.sigmoid(gate_logits.to(query.dtype))[None, :, None]


def sdpa_is_causal_decode(q, k_cache, v_cache, seq_lens):
    """SDPA's is_causal=True with one query token: its mask is aligned to the top left, so the query sees key 0 only
    (transformers' sdpa_attention_forward sets is_causal only when q_length > 1 for this reason)."""
    b, hq, d = q.shape
    out = F.scaled_dot_product_attention(q[:, :, None], k_cache.transpose(1, 2), v_cache.transpose(1, 2),
                                         is_causal=True, enable_gqa=True)
    return out[:, :, 0]


EXPECT = {
    "llama_eager": "lower",
    "vllm_ref_einsum": "lower",
    "gemma2_softcap": "lower",
    "gemma2_softcap_window": "lower",
    "mistral_sliding_window": "lower",
    "bloom_alibi": "lower",
    "mpt_alibi": "lower",
    "falcon_alibi": "refuse: head dim",  # alibi / sqrt(head_dim): a constant of D inside the scores (only the scale may depend on D)
    "gpt_oss_sinks": "lower",
    "gpt_oss_sliding_sinks": "lower",
    "granite_scale": "lower",
    "phi2_fp32_qk": "lower",
    "bigcode_mqa_fp32_softmax": "lower",
    "per_head_bias": "lower",
    "kerple_log": "lower",
    "sdpa_pack_gqa": "lower",
    "sdpa_enable_gqa_window": "lower",
    "llama4_temperature": "lower",
    "llama4_temperature_vector": "lower",
    "llama4_chunked": "lower",
    "diff_attention_two_softmaxes": "refuse: softmax",
    "softmax_over_heads": "refuse: keys",
    "learned_position_table": "refuse: table",
    "llama_eager_training_dropout": "refuse: random",
    "qwen3_next_output_gate": "refuse: epilogue",
    "sdpa_is_causal_decode": "refuse: is_causal",
}

VECTORS = {
    "bloom_alibi": {"slopes": "head"},
    "mpt_alibi": {"slopes": "head"},
    "falcon_alibi": {"alibi_slopes": "head"},
    "gpt_oss_sinks": {"sinks": "head"},
    "gpt_oss_sliding_sinks": {"sinks": "head"},
    "per_head_bias": {"head_bias": "head"},
    "kerple_log": {"bias_p": "head", "bias_a": "head"},
    "llama4_temperature_vector": {"attn_scales": "batch"},
    "qwen3_next_output_gate": {"gate_logits": "head"},
}
