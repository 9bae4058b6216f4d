"""The CuTe DSL decode-attention cell runs a lowered decode variant (tests/lowered_examples/CONTRACT_DECODE.md).

Each example compiles for sm_90a on the CPU on both paths (tensor cores, D <= 128; CUDA cores, D = 256), with the
variant in its PTX (the soft cap's tanh.approx, the key range's int(lo)), no local memory, and no more ptxas spill
than the built-in's; a custom scale alone compiles to the built-in's PTX; a 1024-key window over a
4096-key cache plans a quarter of the grid. A pure-torch emulation of the kernel's key range, splits, online softmax
and merge (sinks, fully masked splits, an empty range) checks that arithmetic against a plain softmax.

Each test workspace is the built-in op's, arranged by tools/scaffold.py, with op.json switched to "op": "lowered",
"inputs" to lowered.INPUTS, and an example copied in as lowered.py, as the template's tracer does.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess

import pytest
from helpers import ROOT, load_package, make_lowered
from tools import scaffold, spec

EXAMPLES = ROOT / "tests" / "lowered_examples"
ALL = "lowered_decode_alibi_softcap_window_sinks.py"
SCALE = "lowered_decode_scale.py"
WINDOW = "lowered_decode_window.py"

# (B, Hq, Hkv, S, D) -> the path it takes: one shape per distinct compile of each path (G = 4, D = 128 on the tensor
# cores: every corpus variant compiles there, tests/test_lowering_compiles.py)
SHAPES = {
    (3, 8, 8, 777, 64): "mma",       # MHA, G = 1, D = 64: one head padded to an m16 tile
    (4, 16, 8, 4096, 256): "cc",     # G = 2, D = 256 on CUDA cores
    (32, 32, 8, 4096, 64): "mma",    # G = 4, D = 64: 32-key warp tiles
}


@pytest.fixture(scope="module")
def decode_kernel(tmp_path_factory):
    """example file name (None: the built-in gqa) -> the workspace's kernel module, arranged and loaded once."""
    made = {}

    def get(example: str | None):
        if example not in made:
            name = (example or "gqa").removesuffix(".py")
            dest = tmp_path_factory.mktemp("decode") / name
            scaffold.workspace(dest, spec.context(pattern="decode_attention", op="gqa", gpu="H200", dtype="bf16",
                                                  op_name=dest.name, run_baseline="no"))
            if example:
                make_lowered(dest, (EXAMPLES / example).read_text(), "cutedsl")
            made[example] = load_package(dest, f"decode_{name}").kernel
        return made[example]

    return get


@pytest.fixture(scope="module")
def compiled(decode_kernel, tmp_path_factory):
    """(example, shape) -> (PTX, ptxas (registers, spill bytes) or None), compiled once per module."""
    done = {}

    def get(example: str | None, shape: tuple):
        if (example, shape) not in done:
            kernel = decode_kernel(example)
            out = tmp_path_factory.mktemp("ptx")
            case = {"vars": dict(zip(("B", "Hq", "Hkv", "S", "D"), shape))}
            ptx = kernel.compile_only(case, out)
            done[(example, shape)] = ptx, _ptxas(ptx, out)
        return done[(example, shape)]

    return get


def _ptxas(ptx: str, tmp_path):
    """(registers, spill bytes) of the one entry, from ptxas -v; None without ptxas."""
    if not shutil.which("ptxas"):
        return None
    (tmp_path / "k.ptx").write_text(ptx)
    done = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (regs,) = (int(n) for n in re.findall(r"Used (\d+) registers", done.stderr))
    (spill,) = (int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads",
                                                     done.stderr))
    return regs, spill


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("example", [ALL, WINDOW])
def test_variant_compiles_on_both_paths(compiled, decode_kernel, example, shape):
    """The variant's code is in the PTX of each path: the key range (int(lo), int(hi): cvt.rzi), the soft cap
    (tanh.approx, a bf16 workspace's tolerance covers it), the fused merge; no local memory; ptxas spills no more
    than for the built-in, and the registers leave room for the 2 CTAs per SM the plan counts on."""
    ptx, regs = compiled(example, shape)
    builtin_ptx, builtin_regs = compiled(None, shape)
    mma = SHAPES[shape] == "mma"
    assert ".target sm_90a" in ptx and ".local" not in ptx and ptx.count(".entry") == 1
    assert bool(re.search(r"mma\.sync\.aligned\.m16n8k16", ptx)) == mma
    assert "atom.global.acq_rel.add" in ptx and "ex2.approx" in ptx
    assert "cvt.rzi.s32.f32" in ptx and "cvt.rzi.s32.f32" not in builtin_ptx  # key_range's bounds, per CTA
    assert ("tanh.approx.f32" in ptx) == (example == ALL)
    assert ("minnctapersm" in ptx) == (not mma)  # CUDA cores: ptxas takes the registers it needs (docstring)
    if regs:
        (r, spill), (_, builtin_spill) = regs, builtin_regs
        assert spill <= builtin_spill, (regs, builtin_regs)
        assert r * 128 * 2 <= 65536, regs


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_custom_scale_alone_costs_nothing(compiled, shape):
    """SCORE, MASK, RANGE and SINK all False: the variant's PTX is the built-in's (the scale is the runtime qscale)."""
    assert compiled(SCALE, shape)[0] == compiled(None, shape)[0]


def test_scale_and_softmax_units(decode_kernel):
    """qscale: scale * log2(e) (base-2 scores), or scale alone when score() follows (it takes natural units)."""
    log2e = 1 / math.log(2)
    assert decode_kernel(SCALE)._qscale(128) == pytest.approx(0.0625 * log2e)
    assert decode_kernel(WINDOW)._qscale(128) == pytest.approx(128 ** -0.5 * log2e)
    assert decode_kernel(ALL)._qscale(64) == pytest.approx(64 ** -0.5)
    assert decode_kernel(None)._qscale(128) == pytest.approx(128 ** -0.5 * log2e)


@pytest.mark.parametrize("shape,quarter", [((1, 32, 8, 4096, 128), True), ((1, 8, 8, 4096, 64), True),
                                           ((32, 32, 8, 4096, 128), False)])
def test_a_window_plans_the_window(decode_kernel, shape, quarter):
    """A 1024-key window over S = 4096 sizes the splits over 1024 keys: with few items a quarter of the CTAs (and
    of the splits); with many (one split each) the same CTAs, each a quarter as long. describe() says so."""
    full, windowed = decode_kernel(None).plan(*shape), decode_kernel(WINDOW).plan(*shape)
    ctas = [p["grid"][0] * p["grid"][1] * p["grid"][2] for p in (full, windowed)]
    assert windowed["splits"] * windowed["split_size"] >= 1024 > (windowed["splits"] - 1) * windowed["split_size"]
    assert windowed["splits"] * windowed["split_size"] * 4 == full["splits"] * full["split_size"]
    assert ctas[1] * 4 == ctas[0] if quarter else ctas[1] == ctas[0]
    d = decode_kernel(WINDOW).describe({"vars": dict(zip(("B", "Hq", "Hkv", "S", "D"), shape))})
    assert "1024-key window" in d["why_splits"] and d["grid_blocks"] == ctas[1] and "key_range" in d["variant"]
    assert decode_kernel(ALL).plan(*shape) == windowed  # the same WINDOW, the same plan


def test_run_refuses_cpu_tensors_in_host_words(decode_kernel):
    """run(*inputs) takes lowered.INPUTS in order and checks them in host.py before compiling anything."""
    torch = pytest.importorskip("torch")
    kernel = decode_kernel(ALL)
    made = {"q": torch.randn(2, 8, 64, dtype=torch.bfloat16), "k": torch.randn(2, 32, 2, 64, dtype=torch.bfloat16),
            "v": torch.randn(2, 32, 2, 64, dtype=torch.bfloat16), "lens": torch.tensor([5, 32], dtype=torch.int32),
            "head": torch.rand(8)}
    inputs = [made[role] for role in kernel.lowered.ROLES]
    with pytest.raises(ValueError, match="GPU"):
        kernel.run(*inputs)
    with pytest.raises(ValueError, match="takes 6 input"):
        kernel.run(*inputs[:4])


# ------------------------------------------------------------------------------------------------
# The kernel's arithmetic, emulated in float64: key range -> splits -> steps (online softmax) -> merge + sinks
# ------------------------------------------------------------------------------------------------

def _emulate(scores, v, lens, sink2, key_range, split_size, n_splits, block):
    """out [B, H, D] as the kernels compute it from base-2 scores [B, H, S] (-inf = dropped) and values [B, S, D]
    (one head per KV head here): _key_range, the split and step loops with NEG_BIG, _Variant.finish, _fused_merge."""
    torch = pytest.importorskip("torch")
    neg_big = -1.0e30
    B, H, _ = scores.shape
    out = torch.full((B, H, v.shape[-1]), float("nan"), dtype=torch.float64)
    for b in range(B):
        lo_f, hi_f = key_range(float(lens[b]))
        hi = max(min(int(hi_f), int(lens[b])), 0)
        lo = min(max(int(lo_f), 0), hi)
        hi = min(hi, lo + n_splits * split_size)
        n_valid = max((hi - lo + split_size - 1) // split_size, 1)
        for h in range(H):
            parts = []
            for j in range(n_valid):  # split j: keys [s0, s1); steps of `block` keys, one rescale per step
                s0 = lo + j * split_size
                s1 = min(s0 + split_size, hi)
                m, lsum, acc = neg_big, 0.0, torch.zeros(v.shape[-1], dtype=torch.float64)
                for base in range(s0, s1, block):
                    s = scores[b, h, base:min(base + block, s1)]
                    m_new = max(m, float(s.max()))
                    p = torch.exp2(s - m_new)
                    alpha = 2 ** (m - m_new)
                    lsum, acc, m = lsum * alpha + float(p.sum()), acc * alpha + p @ v[b, base:base + len(s)], m_new
                value = acc / lsum if lsum > 0 else torch.zeros_like(acc)
                parts.append((value, m + math.log2(lsum) if lsum > 0 else -math.inf, acc, lsum, m))
            if n_valid == 1:  # the direct write: acc / (l + 2^(sink - m)), both scaled by 2^-max(m, sink)
                _, _, acc, lsum, m = parts[0]
                top = max(m, sink2[h])
                den = lsum * 2 ** (m - top) + 2 ** (sink2[h] - top)
                out[b, h] = acc * 2 ** (m - top) / den if den > 0 else 0.0
                continue
            top = max(max(p[1] for p in parts), neg_big, sink2[h])
            weights = [2 ** (p[1] - top) for p in parts]
            tot = sum(weights) + 2 ** (sink2[h] - top)
            out[b, h] = sum(w / tot * p[0] for w, p in zip(weights, parts)) if tot > 0 else 0.0
    return out


def test_range_split_and_merge_arithmetic():
    """ALiBi + soft cap + a 100-key window + sinks, over lengths that make one split, several, a window that starts
    past key 0, a sequence whose every key keep() drops; and, without sinks, all keys dropped and an empty range.
    The emulated kernel matches softmax([scores, sink]) . [V, 0], with no NaN anywhere."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    B, H, S, D, W, split_size, block = 5, 3, 300, 8, 100, 32, 16
    n_splits = -(-W // split_size)
    lens = torch.tensor([7, 40, 300, 150, 64])
    slopes, sinks = torch.rand(H, generator=gen, dtype=torch.float64), torch.rand(H, generator=gen, dtype=torch.float64)
    raw = torch.randn(B, H, S, generator=gen, dtype=torch.float64) * 3
    v = torch.randn(B, S, D, generator=gen, dtype=torch.float64)
    kpos = torch.arange(S, dtype=torch.float64)
    length = lens[:, None, None].double()
    score = torch.tanh((raw + slopes[None, :, None] * (kpos - (length - 1))) / 50) * 50
    keep = (kpos > length - 1 - W) & (kpos < length)
    keep[4] = False  # sequence 4: keep() drops every key; only its sink remains
    s2 = torch.where(keep, score / math.log(2), -math.inf)
    sink2 = (sinks / math.log(2)).tolist()
    got = _emulate(s2, v, lens, sink2, lambda n: (n - W, n), split_size, n_splits, block)
    logits = torch.cat([torch.where(keep, score, -math.inf), sinks[None, :, None].expand(B, H, 1)], dim=-1)
    want = torch.einsum("bhs,bsd->bhd", torch.softmax(logits, dim=-1)[..., :S], v)
    assert not got.isnan().any()
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert got[4].abs().max() == 0
    # no sink, keys dropped everywhere, an empty range: zeros, not NaN
    empty = _emulate(torch.full((1, H, S), -math.inf, dtype=torch.float64), v[:1], lens[2:3], [-math.inf] * H,
                     lambda n: (n - W, n), split_size, n_splits, block)
    assert (empty == 0).all()
    empty = _emulate(s2[2:3], v[2:3], lens[2:3], [-math.inf] * H, lambda n: (n, n), split_size, n_splits, block)
    assert (empty == 0).all()
