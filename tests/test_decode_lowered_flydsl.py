"""FlyDSL decode-attention cell on a lowered variant (lowered_examples/CONTRACT_DECODE.md): each decode example
compiles, in the cell, to gfx942 and gfx950 ISA on the CPU with the cell's data movement intact (MFMA, dwordx4 K/V
loads, no scratch, no LDS) and its variant's marks: score() per key (the soft cap's tanh: one more v_exp_f32 and
v_rcp_f32 per score, kpos converted per key), the vectors loaded once per wave, the key range in scalar registers in
both kernels, the sink in the merge, and a window plan of a quarter of the full cache's splits. A custom scale alone
compiles to the built-in op's code. Every pw function compiles on the contract's fp32 scalars, vectors in bf16 too.

A workspace is baked for the built-in op (gqa), then turned into a lowered-op workspace as the template does (op.json
"op": "lowered" and "inputs": lowered.INPUTS, the example copied in as lowered.py beside kernel.py and pointwise.py).
Compiles run in children, one per target (tests/flydsl_batch.py); the group size G is a runtime value, so each
(example, dtype, D) compiles once per target. Compiled only: no AMD GPU runs these kernels here. The split / merge
arithmetic itself (key range, empty splits, sinks) is checked by a float64 torch model against the softmax.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import tempfile
import sys
import types
from collections import Counter
from pathlib import Path

import flydsl_batch
import pytest
import torch
from helpers import ROOT, lowered_constants, make_lowered
from test_flydsl_compile import HAVE_FLYDSL, metadata, needs_flydsl
from tools import scaffold

EXAMPLES = Path(__file__).resolve().parent / "lowered_examples"
ALIBI, SCALE, WINDOW = ("lowered_decode_alibi_softcap_window_sinks.py", "lowered_decode_scale.py",
                        "lowered_decode_window.py")
ARCHS = ("gfx942", "gfx950")

# Every pw function on the contract's scalars (b, h, kpos, length, the score and the vectors' values), a "batch" vector
# beside a "head" one, a keep() of logical ops, a sink() of a where().
PW_SCALARS = '''
import pointwise as pw

SOURCE = "test:pw_scalars"
INPUTS = ("q", "k_cache", "v_cache", "seq_lens", "bias", "temp")
ROLES = ("q", "k", "v", "lens", "batch", "head")
VECTORS = ("bias", "temp")
SCORE = True
MASK = True
RANGE = False
WINDOW = None
SINK = True


def scale(d):
    return 0.1


def score(s, b, h, kpos, length, bias, temp):
    t = pw.exp(s) + pw.exp2(s) + pw.log(pw.abs(s) + 1.0) + pw.log2(pw.abs(s) + 1.0) + pw.log1p(pw.abs(s))
    t = t + pw.expm1(s) + pw.sqrt(pw.abs(s)) + pw.rsqrt(pw.abs(s) + 1.0) + pw.tanh(s) + pw.sigmoid(s) + pw.erf(s)
    t = t + pw.reciprocal(temp + 2.0) + pw.round(s) + pw.floor(s) + pw.ceil(s) + pw.trunc(s) + pw.pow(pw.abs(s), 1.5)
    t = t + pw.maximum(s, bias) + pw.minimum(s, 0.5) + pw.where(kpos > h, s, 1.0) + pw.to_float(kpos < length)
    t = t + pw.sin(s) + pw.cos(s * temp)
    t = t + pw.cast(s, "bf16") + pw.cast(s, "fp16") + s / temp
    return t * (1.0 / 64.0)


def keep(b, h, kpos, length, bias, temp):
    return pw.logical_and(pw.logical_or(kpos >= b, kpos < 4.0), pw.logical_not(kpos > length + bias))


def key_range(b, length):
    return (0.0, length)


def sink(b, h, bias, temp):
    return pw.where(h > 3.0, bias * temp, -1.0)
'''
SOURCES = {"pw_scalars": PW_SCALARS}

# (example, dtype, shape): the three examples at G = 4, D = 128 on one shape (the built-in "gqa" too: what they are
# compared with), and at G = 16, D = 64 (V rows as dwordx2); the pw functions at G = 16, D = 64.
HEADLINE = "4x32x8x4096x128"  # a 1024-key window over S 4096: 16 -> 4 splits of 256 (MIN_SPLIT_KEYS caps the count)
VARIANTS = [
    ("gqa", "bf16", HEADLINE),
    (ALIBI, "bf16", HEADLINE),
    (WINDOW, "bf16", HEADLINE),
    (SCALE, "bf16", HEADLINE),
    (ALIBI, "fp16", "4x16x1x2048x64@mixed"),
    (SCALE, "fp16", "5x16x1x3001x64@mixed"),
    ("pw_scalars", "bf16", "2x64x4x1024x64@mixed"),
]  # the corpus's variants compile at G = 4, D = 128 too (tests/test_lowering_compiles.py), vectors in the dtype


def source(example: str) -> str:
    return SOURCES[example] if example in SOURCES else (EXAMPLES / example).read_text()


def declared(example: str) -> dict:
    """The example's module-level constants (INPUTS, ROLES, flags ...), read without importing it."""
    return lowered_constants(source(example))


def decode_workspace(dest: Path, example: str, dtype: str, arch: str, shape: str) -> Path:
    """A gqa workspace of the shape; for an example, turned into a lowered-op one as the template's bake does."""
    ws = scaffold.compile_workspace(dest / "ws", "decode_attention", "gqa", dtype, arch, shape)
    return ws if example == "gqa" else make_lowered(ws, source(example), "flydsl")


_SPACES: dict = {}


def start_compiles():
    """Every (variant, arch)'s workspace, laid out now, and their compiles started in the background (one child per
    target: flydsl_batch.background, called by conftest once collected). A variant's vectors compile in the
    workspace's dtype (compile_only's default, as make_inputs draws them)."""
    if not HAVE_FLYDSL:
        return None
    if not _SPACES:
        root = Path(tempfile.mkdtemp(prefix="kbaseline-decode-"))
        _SPACES.update({(v, arch): decode_workspace(root / f"{i}_{arch}", v[0], v[1], arch, v[2])
                        for i, v in enumerate(VARIANTS) for arch in ARCHS})
    jobs = {arch: [(ws, None) for (v, a), ws in _SPACES.items() if a == arch] for arch in ARCHS}
    return flydsl_batch.background(__name__, jobs, describe=True)


@pytest.fixture(scope="module")
def compiled():
    """Every (variant, arch)'s ISA and describe(), compiled once (start_compiles)."""
    if not HAVE_FLYDSL:
        return {}
    results = flydsl_batch.results(start_compiles())
    failed = {str(ws): r["error"] for done in results.values() for ws, r in done.items() if "error" in r}
    assert not failed, failed
    out = {}
    for (v, arch), ws in _SPACES.items():
        op = "gqa" if v[0] == "gqa" else "lowered"
        files = list((ws / "build").glob(f"kernel_{op}_{v[1]}*.{arch}.s"))
        assert len(files) == 1 and files[0].read_text() == results[arch][ws]["isa"], files
        out[(v[0], v[1], arch)] = results[arch][ws]
    return out


def kernels(isa: str) -> dict[str, str]:
    """{"split" | "merge": the kernel's code} of a compiled pair (the lowered_ prefix dropped)."""
    found = {}
    for m in re.finditer(r"^(?:lowered_)?(split|merge)_kernel_\d+:\n(.*?)^\.Lfunc_end", isa, re.M | re.S):
        found[m.group(1)] = m.group(2)
    assert set(found) == {"split", "merge"}, list(found)
    return found


def mnemonics(code: str) -> Counter:
    """How many of each instruction, s_nop (a hazard's wait states, which the schedule decides) left out."""
    return Counter(word for word in (line.split()[0] for line in code.splitlines()
                                     if line.startswith("\t") and not line.startswith("\t.")) if word != "s_nop")


def _clean(text: str) -> None:
    """Two kernels of 64-lane waves, no scratch or spills, no LDS."""
    assert metadata(text, "wavefront_size") == [64, 64]
    assert "scratch_" not in text and metadata(text, "private_segment_fixed_size") == [0, 0]
    assert metadata(text, "vgpr_spill_count") == [0, 0] and metadata(text, "sgpr_spill_count") == [0, 0]
    assert metadata(text, "group_segment_fixed_size") == [0, 0]


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("example", "dtype", "shape"), [v for v in VARIANTS if v[0] != "gqa"])
def test_lowered_decode_isa(compiled, arch, example, dtype, shape):
    """The cell's data movement on every variant: the target, MFMA for q.K^T and P.V, K/V with 128-bit buffer loads
    (V rows with dwordx2 at D = 64), no scratch, no LDS; the key range only where RANGE asks (its bounds moved to
    scalar registers: one v_readfirstlane each in both kernels, beside the built-in's one, its integer division's),
    kpos converted per key only where score() or keep() run."""
    text = compiled[(example, dtype, arch)]["isa"]
    facts, d = declared(example), int(shape.split("@")[0].split("x")[-1])
    assert f'.amdgcn_target "amdgcn-amd-amdhsa-unknown-{arch}"' in text
    _clean(text)
    split, merge = kernels(text).values()
    assert re.search(r"^\s*v_mfma_f32_16x16x(16|32)", split, re.M), "no MFMA"
    assert "buffer_load_dwordx4" in split, "no 128-bit K loads"
    if d == 64:
        assert "buffer_load_dwordx2" in split, "D = 64: V rows as dwordx2"
    bounds = (split.count("v_readfirstlane_b32"), merge.count("v_readfirstlane_b32"))
    assert bounds == (1 + 2 * facts["RANGE"],) * 2, "key_range()'s lo_b and hi_b in scalar registers iff RANGE"
    per_key = split.count("v_cvt_f32_i32")
    assert (per_key >= 8) == (facts["SCORE"] or facts["MASK"]), "kpos: 4 scores per tile, 2 tiles per loop step"


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
def test_variant_marks(compiled, arch):
    """On one shape and dtype, against the custom scale alone (the built-in's code): the soft cap's tanh is one more
    v_exp_f32 and one more v_rcp_f32 per score (4 scores per tile, 2 tiles per loop step); the ALiBi slopes are one
    load per wave (the sinks, unused by score() and keep(), not loaded in kernel 1); the key range adds one
    v_readfirstlane per bound in each kernel; the sink adds one v_exp_f32 to the merge (2^(sink - M))."""
    alibi, window, scale = (kernels(compiled[(e, "bf16", arch)]["isa"]) for e in (ALIBI, WINDOW, SCALE))
    for op in ("v_exp_f32", "v_rcp_f32"):
        assert alibi["split"].count(op) == scale["split"].count(op) + 8, op
        assert window["split"].count(op) == scale["split"].count(op), op
    narrow = r"buffer_load_ushort\s"  # a bf16 vector value (the workspace's dtype): a 16-bit load
    assert len(re.findall(narrow, alibi["split"])) == len(re.findall(narrow, scale["split"])) + 1, "slopes: one load"
    assert len(re.findall(narrow, window["split"])) == len(re.findall(narrow, scale["split"])), "no vectors"
    for name in ("split", "merge"):
        for ranged in (alibi, window):
            assert ranged[name].count("v_readfirstlane_b32") == scale[name].count("v_readfirstlane_b32") + 2, name
    assert alibi["merge"].count("v_exp_f32") == window["merge"].count("v_exp_f32") + 1, "the sink's 2^(sink - M)"


@needs_flydsl
@pytest.mark.parametrize("arch", ARCHS)
def test_custom_scale_alone_is_the_builtin_code(compiled, arch):
    """lowered_decode_scale.py (a custom scale only: every flag false) compiles to the built-in op's instructions and
    registers; only the kernel names, the kernel arguments' offsets (the variant's vector slots) and so the order of
    the argument loads (and an s_nop) differ."""
    builtin, scale = compiled[("gqa", "bf16", arch)]["isa"], compiled[(SCALE, "bf16", arch)]["isa"]
    for name, code in kernels(builtin).items():
        assert mnemonics(kernels(scale)[name]) == mnemonics(code), name
    for key in ("vgpr_count", "sgpr_count", "agpr_count"):
        assert metadata(scale, key) == metadata(builtin, key), key


@needs_flydsl
def test_window_plans_a_quarter_of_the_splits(compiled):
    """A 1024-key window over S = 4096 (B4 Hq32 Hkv8 D128): the plan sizes the splits over min(S, WINDOW) keys, so the
    grid has a quarter of the full cache's splits at the same split size (16 -> 4 x 256 on MI300X's 304 CUs)."""
    for arch in ARCHS:
        full = compiled[(SCALE, "bf16", arch)]["describe"]
        for example in (WINDOW, ALIBI):
            plan = compiled[(example, "bf16", arch)]["describe"]
            assert plan["variant"]["keys_planned"] == 1024 and plan["variant"]["range"]
            assert plan["split_size_keys"] == full["split_size_keys"] == 256
            assert plan["splits"] * 4 == full["splits"] == 16
            assert plan["grid"] == [full["grid"][0], full["splits"] // 4, full["grid"][2]]
        assert full["variant"]["keys_planned"] == 4096 and full["variant"]["scale"] == 0.0625


@needs_flydsl
def test_every_pw_function_compiles_on_scalars(compiled):
    """PW_SCALARS: every pw function on fp32 scalars, inlined (no calls, no scratch), on both targets; its "batch"
    and "head" vectors in bf16 are 16-bit loads converted in registers: one per vector and kernel (both used by
    score() / keep() and by sink())."""
    for arch in ARCHS:
        text = compiled[("pw_scalars", "bf16", arch)]["isa"]
        _clean(text)
        assert "s_swappc" not in text, "a call: a pw function not inlined"
    text = compiled[("pw_scalars", "bf16", "gfx942")]["isa"]
    split, merge = kernels(text).values()
    assert split.count("buffer_load_ushort") == 2 and merge.count("buffer_load_ushort") == 2


LAUNCH_CHILD = """
import json, os, sys
sys.path[:0] = [sys.argv[1], os.getcwd()]
import flydsl_launch_cpu as fl
stubs = fl.Stubs(counting=True)
import kernel, torch

bf16, f32 = torch.bfloat16, torch.float32
B, Hq, Hkv, S, D = 2, 32, 8, 4096, 128
q, k = torch.randn(B, Hq, D, dtype=bf16), torch.randn(B, S, Hkv, D, dtype=bf16)
v, out = torch.randn_like(k), torch.empty(B, Hq, D, dtype=bf16)
lens, lens2 = torch.full((B,), S, dtype=torch.int32), torch.tensor([5, 4000], dtype=torch.int32)
slopes, sinks = torch.randn(Hq, dtype=f32), torch.randn(Hq, dtype=f32)
calls = fl.counting_host(kernel, "decode_operands")


def abi_of(seq_lens):
    (o_part, lse), scalars = next(iter(kernel._launches.values())).facts
    return fl.expect_abi(q.view(-1), k.view(-1), v.view(-1), seq_lens, o_part, lse, out.view(-1), slopes, sinks,
                         seq_lens, seq_lens, *scalars)


abi = []
for seq_lens in (lens, lens2):  # the second call: a signature hit (lengths are device data)
    kernel.run(q, k, v, seq_lens, slopes, sinks, out=out)
    abi.append(fl.same_abi(stubs.abi, abi_of(seq_lens)))
qkv = torch.randn(B, (Hq + 2 * Hkv) * D, dtype=bf16)  # q as a model has it: a view of the fused QKV output
qs = qkv[:, :Hq * D].view(B, Hq, D)
kernel.run(qs, k, v, lens, slopes, sinks, out=out)
(o_part, lse), strided = kernel._launches[list(kernel._launches)[-1]].facts
abi.append(fl.same_abi(stubs.abi, fl.expect_abi(qkv.view(-1)[:(B - 1) * qkv.stride(0) + Hq * D], k.view(-1), v.view(-1),
                                                lens, o_part, lse, out.view(-1), slopes, sinks, lens, lens, *strided)))
checks, launches = len(calls), stubs.launches
refusals = []
for args, words in (((q, k, v, lens, slopes[:8], sinks), "slopes must be a contiguous float tensor of shape (32,)"),
                    ((q, k, v, lens, slopes), "takes 6 input(s)")):
    try:
        kernel.run(*args, out=out)
    except ValueError as exc:
        refusals.append(words in str(exc))
scalars = next(iter(kernel._launches.values())).facts[1]
print(json.dumps({"launches": launches, "checks": checks, "compiled": len(kernel._compiled), "scalars": list(scalars),
                  "strided": list(strided), "abi": abi, "refusals": refusals,
                  "refused_launches": stubs.launches - launches}))
"""


@needs_flydsl
def test_run_launches_the_variant_with_its_vectors(tmp_path):
    """run(*lowered.INPUTS) on a CPU with the HIP call stubbed (benchmarks/flydsl_launch_cpu.py's Stubs): one compile,
    one host.decode_operands check, a launch per call (the second, other lengths, a signature hit; a third with q a
    view of a fused QKV output, its batch stride a launch scalar and no copy, a second check); the ABI slots
    hold q, k, v, seq_lens, the workspace, out, slopes and sinks (then seq_lens in the unused vector slots) and the
    window's plan: 4 splits of 256 over S = 4096, qscale = 1/sqrt(D) (score() takes natural units); a vector of the
    wrong shape and a missing input are refused in host.py's words."""
    import flydsl_launch_cpu  # benchmarks/, on the tests' import path
    ws = decode_workspace(tmp_path, ALIBI, "bf16", "gfx942", "2x32x8x4096x128")
    done = subprocess.run([sys.executable, "-c", LAUNCH_CHILD, str(ROOT / "benchmarks")], cwd=ws,
                          env=flydsl_launch_cpu.child_env(ws), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert (got["launches"], got["checks"], got["compiled"]) == (3, 2, 1), got
    # B, q's batch stride, Hq Hkv S, chunks, splits, size
    assert got["scalars"][:8] == [2, 32 * 128, 32, 8, 4096, 1, 4, 256], got["scalars"]
    assert abs(got["scalars"][8] - 128 ** -0.5) < 1e-12, "qscale: scale(D) alone (score() takes natural units)"
    assert got["strided"][:2] == [2, (32 + 2 * 8) * 128], got["strided"]  # a view of qkv: its row stride, no copy
    assert got["abi"] == [True, True, True], got
    assert got["refusals"] == [True, True] and got["refused_launches"] == 0, got


# ------------------------------------------------------------------------------------------------
# The split / merge arithmetic, modelled in float64 torch (no FlyDSL): what kernel 1 and kernel 2 compute per split
# ------------------------------------------------------------------------------------------------

LOG2E, NEG_BIG, TILE = math.log2(math.e), -1.0e30, 16
PW_TORCH = types.SimpleNamespace(tanh=torch.tanh, exp=torch.exp, where=torch.where, maximum=torch.maximum,
                                 minimum=torch.minimum, abs=torch.abs, log=torch.log, sigmoid=torch.sigmoid,
                                 exp_shifted=lambda a, b: torch.exp(a - b))
LATE_KEEP = '''
SOURCE = "test:late_keep"
INPUTS = ("q", "k_cache", "v_cache", "seq_lens", "sinks")
ROLES = ("q", "k", "v", "lens", "head")
VECTORS = ("sinks",)
SCORE, MASK, RANGE, WINDOW, SINK = False, True, False, None, True
def scale(d): return 0.3
def score(s, b, h, kpos, length, sinks): return s
def keep(b, h, kpos, length, sinks): return kpos >= length - 40.0  # the range stays [0, len): whole splits masked
def key_range(b, length): return (0.0, length)
def sink(b, h, sinks): return sinks
'''
NOTHING_KEPT = '''
SOURCE = "test:nothing_kept"
INPUTS = ("q", "k_cache", "v_cache", "seq_lens")
ROLES = ("q", "k", "v", "lens")
VECTORS = ()
SCORE, MASK, RANGE, WINDOW, SINK = False, True, False, None, False
def scale(d): return 0.3
def score(s, b, h, kpos, length): return s
def keep(b, h, kpos, length): return kpos < 0.0
def key_range(b, length): return (0.0, length)
def sink(b, h): return 0.0
'''


def torch_lowered(text: str):
    """A lowered.py run on float64 torch tensors (pw.* from PW_TORCH)."""
    module = types.ModuleType("lowered_torch")
    module.pw = PW_TORCH
    exec(compile(re.sub(r"^import pointwise as pw.*$", "", text, flags=re.M), "lowered.py", "exec"), module.__dict__)
    return module


def _keep(lw, b, h, kpos, length, vals):
    kept = lw.keep(b, h, kpos, length, *vals)
    return torch.as_tensor(kept).expand(kpos.shape) if isinstance(kept, bool) else kept


def model_kernels(lw, q, k, v, lens, vectors, split_size: int, splits: int):
    """Kernel 1 and kernel 2 as the cell runs them, per (sequence, head), in float64: the key range, splits of
    split_size keys from lo_b, the 16-key tiles of the online softmax from m = NEG_BIG, an empty split's partial
    (o = 0, lse = -inf), the merge over min(ceil((hi_b - lo_b) / split_size), splits) splits with the sink. Only
    keys in [lo_b, hi_b) are touched: every other K/V row is NaN here."""
    B, Hq, D = q.shape
    G, S = Hq // k.shape[2], k.shape[1]
    roles = [r for r in lw.ROLES if r in ("head", "batch")]
    out = torch.full_like(q, math.nan)
    for b in range(B):
        length = float(lens[b])
        lo, hi = lw.key_range(torch.tensor(float(b)), torch.tensor(length)) if lw.RANGE else (0.0, length)
        lo_b, hi_b = max(0, math.trunc(float(lo))), min(int(length), math.trunc(float(hi)))
        n = min(-(-max(hi_b - lo_b, 0) // split_size), splits)
        kpos = torch.arange(S, dtype=torch.float64)
        outside = (kpos < lo_b) | (kpos >= hi_b)
        kb, vb = k[b].clone(), v[b].clone()
        kb[outside], vb[outside] = math.nan, math.nan  # never read
        for h in range(Hq):
            vals = [vec[h] if role == "head" else vec[b] for vec, role in zip(vectors, roles)]
            scale = lw.scale(D)
            t = (kb[:, h // G] @ q[b, h]) * (scale if lw.SCORE else scale * LOG2E)
            if lw.SCORE:
                t = lw.score(t, float(b), float(h), kpos, length, *vals) * LOG2E
            if lw.MASK:
                t = torch.where(_keep(lw, float(b), float(h), kpos, length, vals), t, -math.inf)
            parts = []
            for j in range(n):
                s0 = lo_b + j * split_size
                s1 = min(s0 + split_size, hi_b)
                m, lsum, acc = NEG_BIG, 0.0, torch.zeros(D, dtype=torch.float64)
                for k0 in range(s0, s1, TILE):
                    tt = t[k0:min(k0 + TILE, s1)]
                    m_new = max(m, float(tt.max()))
                    alpha, p = 2.0 ** (m - m_new), torch.exp2(tt - m_new)
                    lsum, acc, m = lsum * alpha + float(p.sum()), acc * alpha + p @ vb[k0:k0 + len(tt), h // G], m_new
                assert not math.isnan(lsum) and not acc.isnan().any()
                empty = (torch.zeros(D, dtype=torch.float64), -math.inf)
                parts.append((acc / lsum, m + math.log2(lsum)) if lsum > 0 else empty)
            sink = float(lw.sink(float(b), float(h), *vals)) * LOG2E if lw.SINK else None
            mx = max([NEG_BIG] + [lse for _, lse in parts] + ([sink] if lw.SINK else []))
            num = sum((o * 2.0 ** (lse - mx) for o, lse in parts), torch.zeros(D, dtype=torch.float64))
            den = sum(2.0 ** (lse - mx) for _, lse in parts) + (2.0 ** (sink - mx) if lw.SINK else 0.0)
            out[b, h] = num / den if den > 0 else 0.0
    return out


def softmax_reference(lw, q, k, v, lens, vectors):
    """The variant by its definition: softmax over the kept keys kpos < len_b of score(q.k * scale), with the sink
    logit in the denominator; a row with nothing kept and no sink is 0 (the cell's choice: not NaN)."""
    B, Hq, D = q.shape
    G, S = Hq // k.shape[2], k.shape[1]
    roles = [r for r in lw.ROLES if r in ("head", "batch")]
    out = torch.empty_like(q)
    kpos = torch.arange(S, dtype=torch.float64)
    for b in range(B):
        length = float(lens[b])
        for h in range(Hq):
            vals = [vec[h] if role == "head" else vec[b] for vec, role in zip(vectors, roles)]
            s = (k[b, :, h // G] @ q[b, h]) * lw.scale(D)
            s = lw.score(s, float(b), float(h), kpos, length, *vals) if lw.SCORE else s
            kept = (kpos < length) & (_keep(lw, float(b), float(h), kpos, length, vals) if lw.MASK else True)
            s = torch.where(kept, s, -math.inf)
            if lw.SINK:
                s = torch.cat([s, torch.tensor([float(lw.sink(float(b), float(h), *vals))], dtype=s.dtype)])
            if not kept.any() and not lw.SINK:
                out[b, h] = 0.0
                continue
            p = torch.softmax(s, 0)[:S]
            out[b, h] = p[kept] @ v[b, kept, h // G]
    return out


@pytest.mark.parametrize("example", [ALIBI, WINDOW, SCALE, "late_keep", "nothing_kept"])
def test_split_range_and_merge_arithmetic(example):
    """The model of the two kernels (model_kernels) matches the softmax definition to 1e-9 in float64, NaN-free, with
    every K/V row outside [lo_b, hi_b) NaN: lengths 1, 700, 1300 over S 1300 (a 1024-key window starts at 276 in the
    last), splits of 256 (the window's plan: min(S, 1024) / 256 = 4 splits; else ceil(1300 / 256) = 6) and of 48
    (not a multiple of the 16-key tile); LATE_KEEP masks whole splits (empty partials) under a sink,
    NOTHING_KEPT every key without one (rows of 0)."""
    text = {"late_keep": LATE_KEEP, "nothing_kept": NOTHING_KEPT}.get(example) or source(example)
    lw = torch_lowered(text)
    gen = torch.Generator().manual_seed(7)
    B, Hkv, G, S, D = 3, 2, 4, 1300, 16
    q = torch.randn(B, Hkv * G, D, generator=gen, dtype=torch.float64)
    k = torch.randn(B, S, Hkv, D, generator=gen, dtype=torch.float64)
    v = torch.randn(B, S, Hkv, D, generator=gen, dtype=torch.float64)
    lens = torch.tensor([1, 700, 1300])
    vectors = [torch.randn(Hkv * G, generator=gen, dtype=torch.float64) * 0.1 for _ in lw.VECTORS]
    expected = softmax_reference(lw, q, k, v, lens, vectors)
    keys = min(S, lw.WINDOW) if lw.RANGE and lw.WINDOW else S
    for split_size in (256, 48):
        got = model_kernels(lw, q, k, v, lens, vectors, split_size, -(-keys // split_size))
        assert not got.isnan().any()
        torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-12)
    if example == "nothing_kept":
        assert not expected.any()
