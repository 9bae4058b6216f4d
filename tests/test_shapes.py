"""Shape grammars: every pattern's built-in cases, the case variables formulas use, and the extras inputs need."""

from __future__ import annotations

import resource
import subprocess
import sys

import compute_utilization
import pytest
from helpers import ROOT
from tools import catalog, registry, shapes
from tools.catalog import InputError

GEMM, REDUCTION, ATTENTION = (registry.pattern(n) for n in ("gemm", "reduction", "decode_attention"))


@pytest.mark.parametrize("pattern", list(registry.patterns()))
def test_builtin_cases_evaluate_every_formula(pattern):
    module = registry.pattern(pattern)
    cases = shapes.build_cases(module, module.DTYPES[0], "")
    assert any(c["timed"] for c in cases) and any(c["role"] == "boundary" for c in cases)
    assert len({c["name"] for c in cases}) == len(cases)
    for op in module.OPS.values():
        for case in cases:
            assert compute_utilization.evaluate(op["flops"], case["vars"]) > 0
            assert compute_utilization.evaluate(op["bytes"], case["vars"]) > 0


def test_gemm_case_and_its_numbers():
    (case,) = GEMM.cases("4096x14336x4096", "representative", "bf16")
    assert case["name"] == "rep_4096x14336x4096" and case["vars"] == {"M": 4096, "N": 14336, "K": 4096, "elem_bytes": 2}
    f = GEMM.OPS["matmul"]
    assert compute_utilization.evaluate(f["flops"], case["vars"]) == 2 * 4096 * 14336 * 4096
    assert compute_utilization.evaluate(f["bytes"], case["vars"]) == 2 * (4096 * 4096 + 14336 * 4096 + 4096 * 14336)


def test_gemm_k_alignment_depends_on_dtype():
    GEMM.cases("8x8x8", "boundary", "bf16")
    with pytest.raises(InputError, match="K=12 is not a multiple of 8"):
        GEMM.cases("8x8x12", "boundary", "fp16")


def test_reduction_row_stride():
    (case,) = REDUCTION.cases("1000x4096@4160", "boundary", "fp32")
    assert case["row_stride"] == 4160 and case["vars"]["N"] == 4096 and case["vars"]["elem_bytes"] == 4
    (plain,) = REDUCTION.cases("7x3", "boundary", "bf16")
    assert "row_stride" not in plain


def test_attention_lengths():
    full, one, mixed = ATTENTION.cases("4x8x2x512x64;4x8x2x512x64@1;16x8x2x512x64@mixed", "boundary", "bf16")
    assert full["seq_lens"] == [512] * 4 and full["vars"]["total_len"] == 2048
    assert one["seq_lens"] == [1] * 4 and one["vars"]["total_len"] == 4
    lens = mixed["seq_lens"]
    assert len(lens) == 16 and min(lens) == 1 and max(lens) == 512 and len(set(lens)) > 4
    assert lens == ATTENTION.cases("16x8x2x512x64@mixed", "boundary", "bf16")[0]["seq_lens"]
    assert mixed["vars"]["total_len"] == sum(lens)


@pytest.mark.parametrize("pattern,text,message", [
    ("elementwise", "", "no shape given"),
    ("elementwise", "8192x", "is not a 1-D or 2-D shape"),
    ("reduction", "2x2x2x2x2x8", "is not a 2-D or 3-D or 4-D or 5-D shape"),
    ("reduction", "8x8@x", "row stride after '@' must be an integer >= N"),
    ("gemm", "0x8x8", "is not a 3-D shape"),
    ("decode_attention", "1x3x2x64x64", "Hq=3 is not a multiple of Hkv=2"),
    ("decode_attention", "1x2x2x64x64@0", "after '@' give a length 1..S"),
])
def test_refused(pattern, text, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        registry.pattern(pattern).cases(text, "representative", "bf16")


@pytest.mark.parametrize(("pattern", "text", "fits"), [
    ("gemm", "16384x16384x8192", True),          # C 512 MiB, A and B 256 MiB each
    ("gemm", "16384x65536x8192", False),         # C is 2 GiB
    ("reduction", "8193x65536@131072", False),   # the strided span (M-1)*stride+N, not M*N, is what x's descriptor covers
    ("reduction", "8192x65536", True),
    ("decode_attention", "1x32x8x1048576x128", False),  # one sequence's K: 2^20 x 8 x 128 x 2 B = 2 GiB
    ("decode_attention", "48x32x8x32768x128", True),   # the whole cache is larger (3.2 GB), each sequence is not
])
def test_flydsl_buffer_limit(pattern, text, fits):
    """FlyDSL's 32-bit buffer offsets: the largest range one descriptor covers must stay under 2 GiB."""
    module, cute, fly = registry.pattern(pattern), registry.dsls()["cutedsl"], registry.dsls()["flydsl"]
    shapes.check(module, cute, "bf16", text)  # no such limit on Hopper (its own: under 2^31 elements per tensor)
    if fits:
        shapes.check(module, fly, "bf16", text)
    else:
        with pytest.raises(InputError, match="bytes in one buffer; FlyDSL buffer accesses address under 2 GiB"):
            shapes.check(module, fly, "bf16", text)


@pytest.mark.parametrize(("pattern", "text", "message"), [
    ("gemm", "1099511627776x1099511627776x1099511627776", "A [M,K] has 1208925819614629174706176 elements"),
    ("gemm", "131072x16384x64", "C [M,N] has 2147483648 elements"),  # A and B are small; C is not
    ("decode_attention", "64x32x8x32768x128", "k_cache has 2147483648 elements"),  # the CuTe kernel's int32 index
    ("decode_attention", "8192x32x8x1x64@mixed", "B*Hkv = 65536 CTAs on the launch grid's z axis"),
])
def test_hopper_size_limits(pattern, text, message):
    """What the CuTe DSL kernels cannot index is refused with the numbers; nothing huge is built on the way."""
    module = registry.pattern(pattern)
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("*", r"\*")):
        shapes.check(module, registry.dsls()["cutedsl"], "bf16", text, "H200")


def test_decode_batch_is_bounded_before_its_lengths_are_built():
    """B = 2^40 used to build a 2^40-entry seq_lens list (MemoryError, or the OOM killer with '@mixed'); the grid
    bound comes first. Run in a child capped at 2 GiB of address space, so a regression cannot exhaust the machine."""
    code = ("from tools import registry\n"
            "from tools.catalog import InputError\n"
            "try:\n"
            "    registry.pattern('decode_attention').cases('1099511627776x32x8x4096x128@mixed', 'representative', 'bf16')\n"
            "except InputError as err:\n"
            "    print(err)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31)))
    assert "B*Hkv = 8796093022208 CTAs" in done.stdout, done.stderr[-500:]


def test_gpu_memory_limit(monkeypatch):
    """A shape whose tensors outgrow the GPU's HBM (reference/gpu_specs.json) is refused with the sizes."""
    assert catalog.memory("H200")["gb"] == 141 and catalog.memory("MI355X")["gb"] == 288
    shapes.check(REDUCTION, registry.dsls()["cutedsl"], "bf16", "32768x8192", "H20")
    monkeypatch.setattr(catalog, "memory", lambda gpu: {"gb": 1, "bytes": 10**9, "source": "a 1 GB test GPU"})
    with pytest.raises(InputError, match=r"shapes: '32768x8192' needs 1.074 GB for its tensors \(x 0.537 GB, out "
                                         r"0.537 GB\), more than the H20's 1 GB \(a 1 GB test GPU\)"):
        shapes.check(REDUCTION, registry.dsls()["cutedsl"], "bf16", "32768x8192", "H20", "softmax")


def test_n_d_shapes_are_for_a_lowered_function():
    """A reduction shape of rank 3 or more is a lowered function's N-D rows (its leading dims kept as ``lead``); the
    built-in ops take [M, N] and refuse it in one line."""
    from tools import spec

    (case,) = REDUCTION.cases("1x8192x32x128", "representative", "bf16")
    assert case["dims"] == [8192 * 32, 128] and case["lead"] == [1, 8192, 32]
    with pytest.raises(InputError, match="rank 3 or more is for your own function"):
        spec.build(spec.context(pattern="reduction", op="softmax", gpu="H200", shapes="4x8x16"))
