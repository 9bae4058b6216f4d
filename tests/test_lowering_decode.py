"""Decode attention from real model code: each variant of tests/lowering_corpus/decode_variants.py lowers (or is
refused in one line, naming what), and its generated lowered.py computes the function.

Two checks per lowered variant, both on the CPU in float64:
- the IR against the function (tools/lower/attention.verify, run by the lowering itself at G = 1, 4, 8, 16 and D = 64,
  128 with mixed lengths and stale cache slots);
- lowered.py against the function, through an emulation of the decode cells' contract (CONTRACT_DECODE.md): for each
  (sequence, head) the keys of key_range() within [0, len), s = q.k * scale(D), score(), keep(), then the softmax
  with sink() in its denominator. The pointwise library is a plain-Python stand-in (PW), so what is checked is the
  generated code and the contract, not a DSL.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import types
from pathlib import Path

import decode_variants  # tests/lowering_corpus/, on the tests' import path
import pytest
import torch

from tools import lower
from tools.lower import attention, codegen

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "lowering_corpus" / "decode_variants.py"

LOWERS = [n for n, outcome in decode_variants.EXPECT.items() if outcome == "lower"]
REFUSED = {n: outcome.split(":", 1)[1].strip() for n, outcome in decode_variants.EXPECT.items() if outcome != "lower"}


def pw_stub() -> types.ModuleType:
    """`pointwise` in plain Python floats: the names lowered.py calls."""
    pw = types.ModuleType("pointwise")
    for name in ("exp", "log", "sqrt", "tanh", "erf", "floor", "ceil", "trunc", "log1p", "expm1", "log2"):
        setattr(pw, name, getattr(math, name))
    pw.exp2 = lambda a: 2.0 ** a
    pw.rsqrt = lambda a: 1.0 / math.sqrt(a)
    pw.sigmoid = lambda a: 1.0 / (1.0 + math.exp(-a))
    pw.abs, pw.reciprocal, pw.round = abs, (lambda a: 1.0 / a), round
    pw.pow, pw.maximum, pw.minimum = (lambda a, b: a ** b), max, min
    pw.where = lambda c, a, b: a if c else b
    pw.logical_and, pw.logical_or, pw.logical_not = (lambda a, b: a and b), (lambda a, b: a or b), (lambda a: not a)
    pw.to_float = float
    pw.cast = lambda v, dtype: v
    return pw


def load_lowered(program: dict, tmp_path: Path):
    path = tmp_path / f"lowered_{program['function']}.py"
    path.write_text(codegen.generate(program, "bf16"))
    sys.modules["pointwise"] = pw_stub()
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def emulate(lowered, tensors: dict) -> torch.Tensor:
    """The decode cells' contract, one (sequence, head) at a time, in float64."""
    by_role = dict(zip(lowered.ROLES, (tensors[n] for n in lowered.INPUTS)))
    q, k, v, lens = (by_role[r] for r in ("q", "k", "v", "lens"))
    vectors = [(tensors[n], r) for n, r in zip(lowered.INPUTS, lowered.ROLES) if r in ("head", "batch")]
    b_, hq, d = q.shape
    g = hq // k.shape[2]
    out = torch.zeros(b_, hq, d, dtype=torch.float64)
    for b in range(b_):
        length = int(lens[b])
        lo, hi = lowered.key_range(float(b), float(length)) if lowered.RANGE else (0.0, float(length))
        lo, hi = max(0, int(lo)), min(length, int(hi))
        for h in range(hq):
            vals = [float(t[h] if r == "head" else t[b]) for t, r in vectors]
            scores = []
            for kpos in range(lo, hi):
                s = float(q[b, h].double() @ k[b, kpos, h // g].double()) * lowered.scale(d)
                if lowered.SCORE:
                    s = lowered.score(s, float(b), float(h), float(kpos), float(length), *vals)
                if lowered.MASK and not lowered.keep(float(b), float(h), float(kpos), float(length), *vals):
                    s = -math.inf
                scores.append(s)
            logits = torch.tensor(scores, dtype=torch.float64)
            if lowered.SINK:
                logits = torch.cat([logits, torch.tensor([lowered.sink(float(b), float(h), *vals)],
                                                         dtype=torch.float64)])
            p = torch.softmax(logits, 0)[: hi - lo]
            out[b, h] = p @ v[b, lo:hi, h // g].double()
    return out


@pytest.fixture(scope="module")
def lowered_programs():
    return {name: lower.lower_here(str(CORPUS), name) for name in decode_variants.EXPECT}


def test_the_corpus_covers_the_variants_users_bring():
    assert len(LOWERS) >= 12 and len(REFUSED) >= 5


@pytest.mark.parametrize("name", LOWERS)
def test_variant_lowers_and_its_lowered_py_computes_it(name, lowered_programs, tmp_path):
    got = lowered_programs[name]
    assert got["ok"], got
    program = got["ir"]
    assert program["class"] == "decode_attention" and lower.ir.pattern(program) == "decode_attention"
    lowered = load_lowered(program, tmp_path)
    fn = getattr(decode_variants, name)
    roles = [i["role"] for i in program["inputs"]]
    sizes = {"B": 2, "Hkv": 2, "G": 3, "S": 23, "D": 16, "lens": [23, 9]}
    values = attention.example(roles, sizes, torch.float64, 7, sizes["lens"])
    tensors = dict(zip(lowered.INPUTS, values))
    want = fn(**tensors)  # its constants at their defaults, as traced
    got_out = emulate(lowered, tensors)
    assert (got_out - want.double()).norm() <= 1e-6 * want.double().norm(), name


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_not_one_decode_kernel_is_refused_in_one_line(name, lowered_programs):
    got = lowered_programs[name]
    assert not got["ok"] and "\n" not in got["error"], got
    assert REFUSED[name].lower() in got["error"].lower(), got["error"]


PAGED = '''
import torch


def paged_decode(q, k_pages, v_pages, block_table, seq_lens):
    k = k_pages[block_table].flatten(1, 2)
    v = v_pages[block_table].flatten(1, 2)
    s = torch.einsum("bhd,bshd->bhs", q, k)
    return torch.einsum("bhs,bshd->bhd", torch.softmax(s, -1), v)
'''


def test_attention_outside_the_decode_layout_is_told_the_layout(tmp_path):
    """A paged cache (a block table) is not one of the layouts the decode rule takes: the refusal says which it is."""
    path = tmp_path / "paged.py"
    path.write_text(PAGED)
    got = lower.lower_here(str(path), "paged_decode")
    assert not got["ok"] and "\n" not in got["error"]
    assert "k_cache and v_cache [B, S, Hkv, D]" in got["error"] and "paged cache" in got["error"], got["error"]


NOT_ATTENTION = '''
def scaled_first(x, a, b, c):
    """Four tensors in a file that names softmax; it runs on the probe's decode shapes, but it is not attention."""
    return x * 2.0
'''


def test_a_function_that_only_runs_on_decode_shapes_is_not_taken_for_attention(tmp_path):
    path = tmp_path / "not_attention.py"
    path.write_text(NOT_ATTENTION)
    got = lower.lower_here(str(path), "scaled_first")
    assert got["ok"] and got["ir"]["class"] == "elementwise", got
