"""Shape grammars and test cases: turn the `shapes` input (or the built-in set) into op.json cases.

Template-side. Each pattern has one grammar; every case it yields carries

- ``name``  a stable id (``rep_4096x4096x4096``, ``bou_1000x4096@4160``), used by ``--case``;
- ``role``  ``representative`` (timed) or ``boundary`` (correctness only: odd sizes, tails, strides);
- ``dims``  the pattern's dimension list, in grammar order;
- ``vars``  the names FLOP/byte formulas may use (``M``, ``N``, ``K``, ``numel``, ``total_len``, ...);
- pattern extras the inputs need: ``row_stride`` (reduction), ``seq_lens`` (decode attention).

| pattern | grammar | example |
|---|---|---|
| elementwise | ``N`` or ``MxN`` | ``268435456;8192x8192`` |
| reduction | ``MxN`` or ``MxN@S`` (row stride ``S`` >= N elements) | ``32768x8192;1000x4096@4160`` |
| gemm | ``MxNxK`` (``C[M,N] = A[M,K] B[N,K]^T``) | ``4096x4096x4096`` |
| decode_attention | ``BxHqxHkvxSxD``, optional ``@L`` (every length L) or ``@mixed`` | ``32x32x8x4096x128`` |

Parsers raise ``catalog.InputError`` with one line: the item, what is wrong, and an example.
"""

from __future__ import annotations

import random
import re

from catalog import DTYPES, InputError

_DIM = re.compile(r"^[1-9][0-9]*$")
MAX_ELEMENTWISE_NUMEL = 2**31 - 2**20  # int32 indexing in the kernel, with one CTA tile of headroom
ATTENTION_HEAD_DIMS = (64, 128, 256)  # what the CuTe DSL kernel supports (D256 checked on the H200)

DEFAULT_SHAPES = {
    "elementwise": {
        "representative": ["268435456", "8192x8192", "4096x14336"],
        "boundary": ["1", "7", "1000x1001", "12345679", "3x16385"],
    },
    "reduction": {
        # 32768x8192 is the headline; 4096 x {4096, 5120, 8192} are LLM hidden sizes; 8x131072 is the large-N path
        "representative": ["32768x8192", "4096x4096", "4096x5120", "4096x8192", "8x131072"],
        "boundary": ["4096x1", "4096x7", "4096x1000", "1x4096", "1000x4096@4160", "333x65536"],
    },
    "gemm": {
        # square, LLM projections (N or K = 14336), and skinny decode-like M (memory-bound)
        "representative": ["8192x8192x8192", "4096x4096x4096", "4096x14336x4096", "4096x4096x14336",
                           "16x8192x8192", "64x8192x8192", "128x8192x8192"],
        "boundary": ["1000x1000x64", "1x4096x4096", "4095x4097x4096", "129x8x8"],
    },
    "decode_attention": {
        "representative": ["32x32x8x4096x128", "8x64x8x16384x128", "1x32x32x32768x128", "32x32x8x4096x64"],
        "boundary": ["4x32x8x1024x128@1", "2x32x8x4096x128@4093", "8x32x8x4096x128@mixed", "4x16x1x2048x128@mixed",
                     "3x8x8x777x64@mixed", "2x16x2x1000x256@mixed"],
    },
}


def _dims(item: str, count: tuple[int, ...], example: str) -> list[int]:
    parts = item.lower().split("x")
    if len(parts) not in count or not all(_DIM.match(p) for p in parts):
        want = " or ".join(f"{n}-D" for n in count)
        raise InputError(f"shapes: '{item}' is not a {want} shape of positive integers joined by 'x'; e.g. '{example}'")
    return [int(p) for p in parts]


def _product(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _items(text: str) -> list[str]:
    items = [s.strip() for s in text.split(";") if s.strip()]
    if not items:
        raise InputError("shapes: no shape given; leave it empty for the built-in set")
    return items


def elementwise_cases(text: str, role: str, dtype: str) -> list[dict]:
    cases = []
    for item in _items(text):
        dims = _dims(item, (1, 2), "268435456;8192x8192")
        if _product(dims) > MAX_ELEMENTWISE_NUMEL:
            raise InputError(f"shapes: '{item}' has {_product(dims)} elements, above the kernel's int32 limit of "
                             f"{MAX_ELEMENTWISE_NUMEL}; split the tensor or use smaller shapes")
        names = {"numel": _product(dims)}
        names.update({"N": dims[0]} if len(dims) == 1 else {"M": dims[0], "N": dims[1]})
        cases.append(_case(role, "x".join(map(str, dims)), dims, names, dtype))
    return cases


def reduction_cases(text: str, role: str, dtype: str) -> list[dict]:
    cases = []
    for item in _items(text):
        shape, _, stride = item.partition("@")
        dims = _dims(shape, (2,), "32768x8192 or 1000x4096@4160")
        m, n = dims
        extra = {}
        if stride:
            if not _DIM.match(stride) or int(stride) < n:
                raise InputError(f"shapes: '{item}': the row stride after '@' must be an integer >= N ({n}); "
                                 f"e.g. '1000x4096@4160'")
            extra["row_stride"] = int(stride)
        if m * extra.get("row_stride", n) >= 2**31:
            raise InputError(f"shapes: '{item}' spans {m * extra.get('row_stride', n)} elements, above the int32 "
                             f"index range; use fewer rows")
        cases.append(_case(role, item.lower(), dims, {"M": m, "N": n, "numel": m * n}, dtype, extra))
    return cases


def gemm_cases(text: str, role: str, dtype: str) -> list[dict]:
    cases = []
    align = 16 // DTYPES[dtype]["bytes"]
    for item in _items(text):
        m, n, k = _dims(item, (3,), "4096x4096x4096 (M x N x K)")
        if k % align:
            raise InputError(f"shapes: '{item}': K={k} is not a multiple of {align}: rows of A and B "
                             f"must be 16-byte aligned ({align} {dtype} elements) for TMA / dwordx4 buffer loads, so pad K "
                             f"to {-(-k // align) * align}")
        cases.append(_case(role, item.lower(), [m, n, k], {"M": m, "N": n, "K": k}, dtype))
    return cases


def _lengths(spec: str, b: int, s: int, item: str, seed: int) -> list[int]:
    if spec == "":
        return [s] * b
    if spec == "mixed":  # deterministic, spread over [1, S], with the extremes included when B allows
        rng = random.Random(seed)
        lens = [rng.randint(1, s) for _ in range(b)]
        if b >= 2:
            lens[0], lens[-1] = 1, s
        return lens
    if not _DIM.match(spec) or int(spec) > s:
        raise InputError(f"shapes: '{item}': after '@' give a length 1..S ({s}) or 'mixed'; e.g. '8x32x8x4096x128@mixed'")
    return [int(spec)] * b


def decode_attention_cases(text: str, role: str, dtype: str) -> list[dict]:
    cases = []
    for item in _items(text):
        shape, _, lens = item.lower().partition("@")
        b, hq, hkv, s, d = _dims(shape, (5,), "32x32x8x4096x128 (B x Hq x Hkv x S_max x D)")
        if hq % hkv:
            raise InputError(f"shapes: '{item}': Hq={hq} is not a multiple of Hkv={hkv}; GQA shares each KV head "
                             f"with Hq/Hkv query heads")
        if d not in ATTENTION_HEAD_DIMS:
            raise InputError(f"shapes: '{item}': head dim D={d} is not supported; use one of "
                             f"{', '.join(map(str, ATTENTION_HEAD_DIMS))}")
        seq_lens = _lengths(lens, b, s, item, seed=b * 1000003 + s)
        names = {"B": b, "Hq": hq, "Hkv": hkv, "S": s, "D": d, "total_len": sum(seq_lens)}
        cases.append(_case(role, item.lower(), [b, hq, hkv, s, d], names, dtype, {"seq_lens": seq_lens}))
    return cases


def _case(role: str, label: str, dims: list[int], names: dict, dtype: str, extra: dict | None = None) -> dict:
    return {"name": f"{role[:3]}_{label}", "role": role, "dims": dims,
            "vars": {**names, "elem_bytes": DTYPES[dtype]["bytes"]}, "timed": role == "representative",
            **(extra or {})}


CASE_BUILDERS = {
    "elementwise": elementwise_cases,
    "reduction": reduction_cases,
    "gemm": gemm_cases,
    "decode_attention": decode_attention_cases,
}


FLYDSL_MAX_TENSOR_BYTES = 2**31  # FlyDSL buffer descriptors: 32-bit num_records and per-lane byte offsets


def largest_buffer(case: dict) -> int:
    """Bytes of the largest range one buffer descriptor covers: a whole tensor, or one sequence's K (or V)."""
    v = case["vars"]
    if "K" in v:
        elems = max(v["M"] * v["K"], v["N"] * v["K"], v["M"] * v["N"])
    elif "Hkv" in v:
        elems = max(v["S"] * v["Hkv"] * v["D"], v["B"] * v["Hq"] * v["D"])
    elif case.get("row_stride"):
        elems = (v["M"] - 1) * case["row_stride"] + v["N"]
    else:
        elems = v["numel"]
    return elems * v["elem_bytes"]


def check(pattern: str, dtype: str, text: str, framework: str = "cutedsl") -> None:
    """Raise InputError when the user's shapes do not parse for this pattern, dtype and framework."""
    if not text.strip():
        return
    for case in CASE_BUILDERS[pattern](text, "representative", dtype):
        nbytes = largest_buffer(case)
        if framework == "flydsl" and nbytes >= FLYDSL_MAX_TENSOR_BYTES:
            raise InputError(f"shapes: '{case['name'][4:]}' needs {nbytes} bytes in one buffer; FlyDSL buffer accesses "
                             f"address under 2 GiB (32-bit offsets), so split the tensor or use smaller shapes")


def build_cases(pattern: str, dtype: str, text: str) -> list[dict]:
    """Representative cases (the user's shapes, or the built-in set) plus the built-in boundary cases, deduplicated."""
    build = CASE_BUILDERS[pattern]
    defaults = DEFAULT_SHAPES[pattern]
    cases = build(text if text.strip() else ";".join(defaults["representative"]), "representative", dtype)
    cases += build(";".join(defaults["boundary"]), "boundary", dtype)
    seen, unique = set(), []
    for case in cases:
        if case["name"] not in seen:
            seen.add(case["name"])
            unique.append(case)
    return unique
