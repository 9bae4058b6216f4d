"""Real model code through the lowering: tests/lowering_corpus/real_models.py, module bodies copied from transformers,
diffusers, timm and torch (each names its upstream class), lowered or refused as OUTCOME says.

Each function is traced as a user would give it: with no annotations, except the ones the README's parameter rule
asks of a user where a name cannot tell (a one-element learned scalar `"[]"`, a mask `"bool"`, a [N] vector whose
name is not one of the rule's). A function that lowers is held to itself: its IR, interpreted in float64 at shapes
the trace never saw, gives the function's outputs. A refused one gets one line that names its line of the corpus and
the cause, never an internal error or a tracer's size symbol (s75).
"""

from __future__ import annotations

import re

import pytest
import torch
from helpers import ROOT

from tools.lower import capture, ir

CORPUS = ROOT / "tests" / "lowering_corpus" / "real_models.py"
import real_models  # noqa: E402

CASES = {c["fn"]: c for c in real_models.CASES}

# What each function does today: its class, or a refusal and the words that name its cause. A change to the
# lowering that lowers more (or refuses for another reason) updates this table.
OUTCOME = {
    **{name: "elementwise" for name in (
        "gelu_tanh_python", "pytorch_gelu_tanh", "new_gelu", "gelu_python", "gelu_activation", "fast_gelu",
        "quick_gelu", "clipped_gelu", "accurate_gelu", "mish_python", "mish", "silu", "laplace", "relu_squared",
        "sqrt_softplus", "xielu", "bloom_gelu", "hard_sigmoid", "hard_swish", "hard_mish", "prelu", "llama_mlp_act",
        "t5_gated_act", "qwen3_next_attn_gate", "gemma2_final_logit_softcap", "granite_logits_scaling",
        "granite_residual", "bloom_dropout_add", "gemma_embed_normalizer", "deepseek_v3_sigmoid_scores", "temperature_warper",
        "bitnet_post_quant_process",
        # one value per row: a [B, S] padding mask over [B, S, D] or a [T, 1] gate over [T, D], in the row cell
        "mamba2_apply_mask_to_padding_states", "deformable_detr_mask_value", "qwen2_moe_shared_expert_combine",
        # one value per row broadcast over some of x's dims: per sample (DDPM's noise) or per channel (LayerScale2d)
        "ddpm_add_noise", "timm_layer_scale_2d", "dac_snake1d",
        # an input read in equal parts (x.chunk(2, -1), x[..., ::2]): [M, 2N] in, [M, N] out, in the row cell
        "diffusers_geglu", "diffusers_swiglu", "gpt_oss_apply_gate", "phi3_gate_up_act",
        # RoPE: q, k [.., D] in halves or lanes, cos/sin broadcast over the heads, whole rows out, in the row cell
        "llama_apply_rotary_pos_emb", "cohere_apply_rotary_pos_emb", "qwen2_vl_apply_rotary_pos_emb_vision",
        "deepseek_v3_apply_rotary_pos_emb_interleave", "diffusers_apply_rotary_emb",
        "diffusers_apply_rotary_emb_halves")},
    **{name: "reduction" for name in (
        "llama_rmsnorm", "qwen2_rmsnorm", "mixtral_rmsnorm", "deepseek_v3_rmsnorm", "gemma_rmsnorm", "gemma3n_rmsnorm",
        "llama4_l2norm", "olmo2_rmsnorm", "t5_layernorm", "diffusers_rmsnorm", "cohere_layernorm",
        "cohere_qk_layernorm", "olmo_layernorm", "nemotron_layernorm1p", "chameleon_layernorm",
        "qwen3_next_rmsnorm_gated", "bert_residual_layernorm", "llama_attn_scores_softmax",
        # adaLN: [B, D] shift and scale, made [B, 1, D] by the function's [:, None], over x [B, S, D]
        "diffusers_ada_layer_norm_zero", "sd35_ada_layer_norm_zero_x", "diffusers_ada_layer_norm_continuous",
        "colpali_retrieval_embeddings", "esm_embeddings_norm_mask",  # a norm, then a per-row padding mask
        "gemma2_attn_softcap_softmax", "gpt_neo_causal_softmax", "min_p_mask", "typical_shifted_scores", "bitnet_act_quant",
        # a constant made by torch.distributions (Normal(0, 1).icdf: folded at the bake), then a mean + std cutoff
        "gemma3n_gaussian_topk", "gemma3n_mlp_act",
        # quantizers whose values leave as int8 / fp8 e4m3 (the final .to(), done by the store)
        "bitnet_activation_quant", "quantize_fp8_per_row",
        # a QK-norm: x [.., H*64] viewed as heads of 64 in the function, rows of 64
        "qwen3_q_norm")},
    **{name: "gemm" for name in ("bert_intermediate", "gpt_bigcode_fc_act", "diffusers_approximate_gelu",
                                 "granite_lm_head", "gemma2_lm_head_softcap")},
    # matmuls the GEMM head does not take: not the first step on the parameters, a second one, C split in halves
    **{name: "is not at the head" for name in ("bert_pooler", "deepseek_v3_router", "mixtral_router", "gpt2_conv1d")},
    "bitnet_auto_bitlinear": "`weight_scale` (annotated '[1]') is not an input a GEMM's epilogue takes",
    **{name: "is a second matmul" for name in ("clip_mlp", "llama_mlp")},
    "phi3_gate_up_proj_act": "torch.split splits a tensor into 2 pieces",
    "gpt_oss_sink_softmax": "Sizes of tensors must match",  # sinks cat'ed as an extra column of the row
    # refused, each for its cause
    "qwen3_q_norm_transposed": "torch.transpose reorders dims",
    # q and k (or query and key) with different head counts: not one kernel's rows
    **{name: "does not have" for name in ("olmo_apply_rotary_pos_emb_bshd", "glm_apply_rotary_pos_emb",
                                          "llama4_apply_rotary_emb", "llama_eager_attention", "gemma2_eager_attention",
                                          "gpt_oss_eager_attention")},
    "mamba2_rmsnorm_gated": "torch.view makes a tensor",  # groups viewed back to the whole row before the weight
    "timm_layernorm2d": "Expected weight to be of same shape",  # NCHW: the norm is over dim 1, not the row
    "gptj_apply_rotary_pos_emb": "The size of tensor",  # sin/cos [B, S, D/2] repeat_interleave'd: not x's dims
    "afmoe_router": "not enough values to unpack",  # a 3-D GEMM input (and a topk after it)
    **{name: "torch.topk selects" for name in ("gpt_oss_router", "top_k_warper", "min_p_warper", "epsilon_warper",
                                               "llama4_router")},
    "repetition_penalty": "torch.gather selects",
    "fixed_cross_entropy": "an integer input (token ids, class indices) has no kernel form",  # traced as float
    "gemma_scaled_embedding": "torch.embedding selects",
    "top_p_warper": "torch.sort selects",
    "switch_top1_router": "torch.argmax selects",
    **{name: "reduces over a dim other than the last one" for name in ("bitnet_weight_quant",
                                                                         "convnext_layernorm_channels_first")},
    "bert_self_output": "torch.var is a reduction; a GEMM's epilogue is pointwise",
    "clip_logits_per_text": "`logit_scale` (annotated '[]') is not an input a GEMM's epilogue takes",
}


def names(case: dict) -> dict:
    """The dim-name annotations of an N-D function (RoPE's q "[L0, L1, L2, N]" and cos "[L0, L2, N]"): x, the first
    tensor of rank 3 or more, names its dims; another tensor of rank 2 or more with x's last dim takes the name of
    x's dim of the same size, in order, or a name of its own where x has none (GQA's k with fewer heads: refused)."""
    shapes = case["shapes"]
    x = next((s for s in shapes.values() if len(s) >= 3), None)
    if x is None:
        return {}
    dims = [f"L{i}" for i in range(len(x) - 1)] + ["N"]
    made = {}
    for name, shape in shapes.items():
        if tuple(shape) in (tuple(x[:-1]), (*x[:-1], 1)):  # x's leading dims: one value per row ([B, S] over [B, S, D])
            made[name] = f"[{','.join(dims[:-1] + ['1'] * (len(shape) == len(x)))}]"
            continue
        if shape and shape[-1] != x[-1] and case["cls"] in ("elementwise", "reduction"):
            lead = _lead_names(shape, x[:-1], dims[:-1])  # some of x's leading dims, by size: one value per row
            if lead:
                made[name] = f"[{','.join(lead)}]"
                continue
        if len(shape) < 2 or shape[-1] != x[-1] or tuple(shape) == tuple(x):
            continue
        found, start = [], 0
        for k, size in enumerate(shape[:-1]):
            at = next((i for i in range(start, len(x) - 1) if x[i] == size), None)
            found.append("1" if size == 1 else dims[at] if at is not None else f"K{k}")
            start = at + 1 if at is not None else start
        made[name] = f"[{','.join([*found, 'N'])}]"
    return {next(n for n, s in shapes.items() if s is x): f"[{','.join(dims)}]", **made}


def _lead_names(shape, lead, names) -> list | None:
    """The names of `shape`'s dims as some of x's leading dims `lead` (sizes, named `names`), matched by size in
    order (1 stays 1), or None when a dim matches none."""
    found, start = [], 0
    for size in shape:
        if size == 1:
            found.append("1")
            continue
        at = next((i for i in range(start, len(lead)) if lead[i] == size), None)
        if at is None:
            return None
        found.append(names[at])
        start = at + 1
    return found if any(n != "1" for n in found) else None


def hints(case: dict) -> dict:
    """The annotations a user adds where the parameter rule cannot tell from a name: scalars, masks, vectors, and an
    N-D function's dim names (names)."""
    if case["cls"] == "gemm":
        return {}
    made = names(case)
    x = next(iter(case["shapes"].values()))  # a 2-D function's x: its first tensor
    for name, shape in case["shapes"].items():
        if name in made:
            continue
        note = {0: "[]"}.get(len(shape), "[1]" if tuple(shape) == (1,) else "[N]" if len(shape) == 1 else "")
        if len(x) == 2 and x[0] != x[1] and tuple(shape) in ((x[0],), (x[0], 1)):  # one value per row of x
            note = "[M]" if len(shape) == 1 else "[M,1]"
        if len(shape) == 2 and (name in ir.VECTOR_NAMES or name.endswith(("_weight", "_bias"))):
            note = "[M,N]"  # a matrix named like a vector
        note += "bool" if case.get("dtypes", {}).get(name) == "bool" else ""
        if note:
            made[name] = note
    return {**made, **case.get("hints", {})}  # a case's own, where the rule above cannot tell (a weight per channel)


@pytest.fixture(scope="module")
def lowered() -> dict:
    return {name: capture.lower(str(CORPUS), name, hints(CASES[name])) for name in OUTCOME}


def test_the_corpus_is_real_and_large():
    assert len(CASES) >= 40
    assert all(re.match(r"(transformers|diffusers|timm|torch)/", c["upstream"]) for c in CASES.values())
    lowered_count = sum(v in ("elementwise", "reduction", "gemm") for v in OUTCOME.values())
    assert lowered_count >= 50, lowered_count


@pytest.mark.parametrize("name", sorted(OUTCOME))
def test_each_lowers_or_is_refused_for_its_cause(lowered, name):
    result, want = lowered[name], OUTCOME[name]
    if want in ("elementwise", "reduction", "gemm"):
        assert result["ok"], result
        assert result["ir"]["class"] == want
        return
    assert not result["ok"], f"{name} lowered; OUTCOME says it is refused ({want})"
    error = result["error"]
    assert want in error, error
    assert "\n" not in error and "internal error" not in error
    assert not re.search(r"\bs\d+\b", error), f"a tracer's size symbol reached the user: {error}"
    assert "real_models.py:" in error, error  # the user's own line


def _inputs(case: dict, program: dict, rows: int, n: int) -> dict:
    """Float64 inputs at an unseen size: rows [rows, n] (an N-D x's dims rows, 2, 3, ... each its own size, its
    broadcast inputs their own dims; a function viewing rows as heads of c, [rows, 3c]), vectors [n] ([c]), scalars
    in their shape, masks boolean. A wide input or vector is r times n."""
    g = torch.Generator().manual_seed(7)
    heads = program.get("heads")
    x = ir.x_input(program)
    sizes = {d: size for d, size in zip(x.get("names", [])[:-1], (rows, 2, 3, 5))} | {"1": 1}
    made = {}
    for spec in program["inputs"]:
        width = spec.get("width", 1)
        if spec["kind"] == "row":
            shape = [*(sizes[d] for d in spec["names"][:-1]), n * width] if "names" in spec else [rows, n * width]
            shape[-1] = 3 * heads if heads else shape[-1]
        elif spec["kind"] == "per_row":  # x's leading dims (named, or M), with the 1 the function takes it in
            shape = [1 if d == 1 or d == "1" else sizes[d] if d in sizes else rows
                     for d in spec.get("names") or spec.get("dims")]
        else:
            shape = {"vector": [heads or n * width]}.get(spec["kind"], spec.get("dims", []))
        t = torch.randn(shape, generator=g, dtype=torch.float64)
        made[spec["name"]] = t > 0 if spec.get("dtype") == "bool" else t
    return made


@pytest.mark.parametrize("name", sorted(n for n, v in OUTCOME.items() if v in ("elementwise", "reduction")))
@pytest.mark.parametrize("rows,n", [(3, 10), (1, 48)])
def test_the_ir_is_the_function_at_unseen_shapes(lowered, name, rows, n):
    program = lowered[name]["ir"]
    case = CASES[name]
    values = _inputs(case, program, rows, n)
    want = getattr(real_models, name)(**values)
    got = ir.interpret(program, values)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(want) == len(got)
    for w, o in zip(want, got):
        w, o = w.double(), o.double()
        assert w.shape == o.shape
        both = torch.isfinite(w) & torch.isfinite(o)
        assert torch.equal(torch.isfinite(w), torch.isfinite(o))
        tol = max(1e-5, capture.tolerance(w.dtype))
        assert (w[both] - o[both]).norm() <= tol * max(1e-30, w[both].norm().item()) + 1e-12


def test_every_function_of_the_corpus_has_its_outcome():
    """No corpus function goes unchecked: OUTCOME names each one, lowered or refused."""
    assert set(OUTCOME) == set(CASES)


def test_every_dsl_implements_the_whole_vocabulary():
    """One vocabulary (ir.VOCABULARY): every `pw.` function a generated lowered.py may call is defined in every DSL's
    pointwise.py, so adding an op without its DSL functions fails here, not in a user's bake."""
    import ast

    for dsl in ("cutedsl", "flydsl"):
        tree = ast.parse((ROOT / "{{cookiecutter.op_name}}" / "dsl" / dsl / "pointwise.py").read_text())
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert set(ir.PW_FUNCTIONS) <= defined, (dsl, sorted(set(ir.PW_FUNCTIONS) - defined))
