"""The decode-attention pattern: one query token per sequence against its KV cache (MHA, GQA, MQA).

Template side: the registry reads this module; the workspace gets its facts through op.json. The workspace side
of the pattern is ``{{cookiecutter.op_name}}/patterns/decode_attention/`` (reference.py and one kernel per DSL).
"""

from __future__ import annotations

import random

from tools import shapes
from tools.catalog import InputError

PROMPT = "Decode attention: GQA, split-KV, variable lengths"
DEFAULT_OP = "gqa"
DTYPES = ["bf16", "fp16"]
SHAPES_HELP = ("BxHqxHkvxSxD shapes separated by ';', each optionally '@L' (every length L) or '@mixed', "
               "e.g. '32x32x8x4096x128;8x32x8x4096x128@mixed'")

OPS = {
    "gqa": {"inputs": ["q", "k_cache", "v_cache", "seq_lens"], "flops": "4*Hq*D*total_len",
            "bytes": "2*Hkv*D*total_len*elem_bytes + 2*B*Hq*D*elem_bytes + 4*B", "out": "[B, Hq, D]",
            "params": {"scale": None},
            "math": "out[b, h] = softmax(q[b, h] . k[b, :len_b, h // (Hq/Hkv)]^T * scale) @ v[b, :len_b, h // (Hq/Hkv)]"
                    "  (scale = 1/sqrt(D); fp32 math)"},
}
FORMULA_NOTES = {"flops": "q.k and p.v: 2 FLOP each per (query head, key, d)",
                 "bytes": "K and V read once for the real lengths (total_len = sum of seq_lens), q read and out "
                          "written once, seq_lens as int32"}

PHASE1 = {
    "inputs": "`q` [B, Hq, D] (heads and D contiguous; any batch stride, so a view of a fused QKV output needs no "
              "copy); `k_cache`, `v_cache` [B, S_max, Hkv, D] (contiguous, the usual KV-cache layout); `seq_lens` "
              "[B] int32, 1 <= len <= S_max. Output `out` [B, Hq, D].",
    "shapes": "Hq a multiple of Hkv (GQA; MHA when equal, MQA when Hkv = 1); D in {64, 128, 256}; the cases below.",
    "precision": "inputs and output in the dtype; scores, the online softmax (running max and sum) and the "
                 "P.V accumulation in fp32.",
    "masks": "key positions >= seq_lens[b] are masked out (they hold stale data in a real cache, and large "
             "values in the test inputs, so a leak fails); scale = 1/sqrt(D).",
    "boundaries": "seq_len 1, lengths that are not a multiple of the split size, mixed lengths in one batch, "
                  "and splits that receive no keys.",
    "special": "a fully masked split contributes nothing (its log-sum-exp is -inf); every sequence has >= 1 key.",
}
BASELINE = ("the timed baseline is torch SDPA with enable_gqa=True on the cache layout, with a key mask only when "
            "some sequence is shorter than S_max")
WIKI_WORDS = ["attention", "decode", "gqa", "flash", "kv cache", "kv-cache", "paged"]
# the gpu-wiki's operator families of this pattern (its JSON records' scope.operator_family, matched exactly)
WIKI_FAMILIES = ["flash-attention", "paged-attention", "mla"]
# A stream like the memory-bound patterns, but with per-split softmax reductions and a merge pass: a wider margin.
ISA_TARGETS = {"kind": "attention", "tensor_core": False, "vec_stores": False}

HEAD_DIMS = (64, 128, 256)  # what the kernels support
# Both kernels launch their split grid with B*Hkv CTAs on grid z, and the merge with B on grid y; CUDA caps grid y
# and z at 65535 (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"), and the FlyDSL
# cell keeps to the same bound. Checked before the lengths are built, so no shape can make a huge op.json.
MAX_GRID_YZ = 65535
DEFAULT_SHAPES = {
    "representative": ["32x32x8x4096x128", "8x64x8x16384x128", "1x32x32x32768x128", "32x32x8x4096x64"],
    "boundary": ["4x32x8x1024x128@1", "2x32x8x4096x128@4093", "8x32x8x4096x128@mixed", "4x16x1x2048x128@mixed",
                 "3x8x8x777x64@mixed", "2x16x2x1000x256@mixed",
                 # the tensor-core path's regimes: MQA G = 16 at an odd S_max, D = 64 (32-key tiles) with mixed
                 # lengths, one long ragged sequence over ~40 splits (the fused merge of many partials), MQA G = 32
                 # (4 CTAs of 8 heads per item)
                 "5x16x1x3001x128@mixed", "6x32x8x4096x64@mixed", "1x32x8x8192x128@8191", "3x32x1x2048x128@mixed"],
}


def _lengths(spec: str, b: int, s: int, item: str, seed: int) -> list[int]:
    if spec == "":
        return [s] * b
    if spec == "mixed":  # deterministic, spread over [1, S], with the extremes included when B allows
        rng = random.Random(seed)
        lens = [rng.randint(1, s) for _ in range(b)]
        if b >= 2:
            lens[0], lens[-1] = 1, s
        return lens
    if not shapes.DIM.match(spec) or int(spec) > s:
        raise InputError(f"shapes: '{item}': after '@' give a length 1..S ({s}) or 'mixed'; e.g. '8x32x8x4096x128@mixed'")
    return [int(spec)] * b


def cases(text: str, role: str, dtype: str) -> list[dict]:
    """`BxHqxHkvxSxD[@L|@mixed]` items -> cases with B, Hq, Hkv, S, D, total_len and the per-sequence seq_lens."""
    out = []
    for item in shapes.items(text):
        shape, _, lens = item.lower().partition("@")
        b, hq, hkv, s, d = shapes.dims(shape, (5,), "32x32x8x4096x128 (B x Hq x Hkv x S_max x D)")
        if hq % hkv:
            raise InputError(f"shapes: '{item}': Hq={hq} is not a multiple of Hkv={hkv}; GQA shares each KV head "
                             f"with Hq/Hkv query heads")
        if d not in HEAD_DIMS:
            raise InputError(f"shapes: '{item}': head dim D={d} is not supported; use one of "
                             f"{', '.join(map(str, HEAD_DIMS))}")
        if b * hkv > MAX_GRID_YZ:
            raise InputError(f"shapes: '{item}': B*Hkv = {b * hkv} CTAs on the launch grid's z axis, above its "
                             f"{MAX_GRID_YZ} limit; use B*Hkv <= {MAX_GRID_YZ} (B <= {MAX_GRID_YZ // hkv} with "
                             f"Hkv={hkv})")
        seq_lens = _lengths(lens, b, s, item, seed=b * 1000003 + s)
        names = {"B": b, "Hq": hq, "Hkv": hkv, "S": s, "D": d, "total_len": sum(seq_lens)}
        out.append(shapes.case(role, item.lower(), [b, hq, hkv, s, d], names, dtype, {"seq_lens": seq_lens}))
    return out


def tensors(case: dict, op: str) -> dict[str, tuple[int, int]]:
    """Every tensor the op reads or writes: name -> (elements, bytes per element)."""
    v = case["vars"]
    q = (v["B"] * v["Hq"] * v["D"], v["elem_bytes"])
    cache = (v["B"] * v["S"] * v["Hkv"] * v["D"], v["elem_bytes"])
    return {"q": q, "k_cache": cache, "v_cache": cache, "seq_lens": (v["B"], 4), "out": q}


def largest_buffer(case: dict) -> int:
    """Bytes of the largest range one buffer descriptor covers: one sequence's K (or V), or q/out."""
    v = case["vars"]
    return max(v["S"] * v["Hkv"] * v["D"], v["B"] * v["Hq"] * v["D"]) * v["elem_bytes"]
