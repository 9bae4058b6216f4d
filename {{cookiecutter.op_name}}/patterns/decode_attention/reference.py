"""PyTorch reference for decode attention: the ground truth test_kernel.py checks the kernel against.

- ``reference(q, k_cache, v_cache, seq_lens)``: masked softmax attention for one query token per sequence,
  grouped so K/V are never copied per head; the harness calls it on float64 copies (seq_lens unchanged). Or your
  own function when the workspace was baked with ``pytorch_logic``.
- ``baseline(...)``: what "torch" means in the timing: torch SDPA with ``enable_gqa=True`` on the cache layout,
  as a serving stack calls it, timed in the same run with the same timer as the kernel.
- ``make_inputs(case, dtype, device, seed)``: fresh inputs for one op.json case. Cache slots past each sequence's
  length hold large values, so a kernel that reads them fails.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

import host


def gqa(q, k_cache, v_cache, seq_lens):
    """out[b, h] = softmax(q[b, h] . K[b, :len_b, h // G]^T / sqrt(D)) @ V[b, :len_b, h // G], G = Hq / Hkv."""
    batch, hq, d = q.shape
    s_max, hkv = k_cache.shape[1], k_cache.shape[2]
    qg = q.view(batch, hkv, hq // hkv, d)  # query heads h = kv * group + g share KV head kv
    scores = torch.einsum("bkgd,bskd->bkgs", qg, k_cache) / math.sqrt(d)
    valid = torch.arange(s_max, device=q.device)[None, :] < seq_lens[:, None]  # [B, S_max]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("bkgs,bskd->bkgd", probs, v_cache).reshape(batch, hq, d)


BUILT_IN = {"gqa": gqa}
reference = host.reference_for(BUILT_IN)

_MASKS = {}


def sdpa(q, k_cache, v_cache, seq_lens):
    """torch SDPA with GQA on the cache layout. The key mask (None when every sequence is full) is built once per
    input set, outside the timed launches, so torch is not charged a host sync."""
    key = (seq_lens.data_ptr(), k_cache.shape[1])
    if key not in _MASKS:
        s_max = k_cache.shape[1]
        full = bool((seq_lens == s_max).all())
        _MASKS[key] = None if full else (torch.arange(s_max, device=q.device)[None, :] < seq_lens[:, None])[:, None, None, :]
    out = F.scaled_dot_product_attention(q.unsqueeze(2), k_cache.transpose(1, 2), v_cache.transpose(1, 2),
                                         attn_mask=_MASKS[key], enable_gqa=True)
    return out.squeeze(2)


baseline = sdpa if host.OP.get("reference", {}).get("source") != "user" else reference


def make_inputs(case: dict, dtype: torch.dtype, device: str, seed: int) -> list:
    """q, k_cache, v_cache, seq_lens; a lowered variant's inputs in its own order (op.json `kinds`: each input's role),
    its vectors in the dtype (as a model holds them), one value per query head or per sequence, in [0.1, 0.6) (ALiBi
    slopes, sinks, biases)."""
    generator = torch.Generator(device=device).manual_seed(seed)
    randn = host.randn(generator, dtype, device)
    batch, hq, hkv, s_max, d = case["dims"]
    seq_lens = torch.tensor(case["seq_lens"], dtype=torch.int32, device=device)
    k_cache, v_cache = randn(batch, s_max, hkv, d), randn(batch, s_max, hkv, d)
    stale = torch.arange(s_max, device=device)[None, :] >= seq_lens[:, None]  # slots past each length
    k_cache[stale] = 8.0  # stale cache slots hold large values: reading them ruins the result, so a leak fails
    v_cache[stale] = 1000.0
    made = {"q": randn(batch, hq, d), "k": k_cache, "v": v_cache, "lens": seq_lens}
    roles = host.OP.get("kinds") if host.OP.get("op") == "lowered" else None
    if not roles:
        return [made[r] for r in ("q", "k", "v", "lens")]
    size = {"head": hq, "batch": batch}
    return [made[r] if r in made else (torch.rand(size[r], generator=generator, device=device) * 0.5 + 0.1).to(dtype)
            for r in roles.values()]
