"""The shape grammar's common parts: splitting the `shapes` input, parsing dims, and building op.json cases.

Template-side. Each pattern owns its grammar (``tools/patterns/<name>/__init__.py``: ``cases(text, role, dtype)``,
``DEFAULT_SHAPES``, ``tensors``, ``largest_buffer``); this module holds what they share, and the size checks every
pattern gets: the DSL's index limits and the GPU's memory. Every case carries

- ``name``  a stable id (``rep_4096x4096x4096``, ``bou_1000x4096@4160``), used by ``test_kernel.py --case``;
- ``role``  ``representative`` (timed) or ``boundary`` (correctness only: odd sizes, tails, strides);
- ``dims``  the pattern's dimension list, in grammar order;
- ``vars``  the names FLOP/byte formulas may use (``M``, ``N``, ``K``, ``numel``, ``total_len``, ...);
- pattern extras the inputs need: ``row_stride`` (reduction), ``seq_lens`` (decode attention).

Parsers raise ``catalog.InputError`` with one line: the item, what is wrong, and an example.
"""

from __future__ import annotations

import re

from tools import catalog
from tools.catalog import DTYPES, InputError

DIM = re.compile(r"^[1-9][0-9]*$")


def dims(item: str, count: tuple[int, ...], example: str) -> list[int]:
    """'4096x128' -> [4096, 128], or InputError when it is not a `count`-D shape of positive integers."""
    parts = item.lower().split("x")
    if len(parts) not in count or not all(DIM.match(p) for p in parts):
        want = " or ".join(f"{n}-D" for n in count)
        raise InputError(f"shapes: '{item}' is not a {want} shape of positive integers joined by 'x'; e.g. '{example}'")
    return [int(p) for p in parts]


def items(text: str) -> list[str]:
    """The ';'-separated items of a shapes input."""
    found = [s.strip() for s in text.split(";") if s.strip()]
    if not found:
        raise InputError("shapes: no shape given; leave it empty for the built-in set")
    return found


def case(role: str, label: str, dims_: list[int], names: dict, dtype: str, extra: dict | None = None) -> dict:
    """One op.json case."""
    return {"name": f"{role[:3]}_{label}", "role": role, "dims": dims_,
            "vars": {**names, "elem_bytes": DTYPES[dtype]["bytes"]}, "timed": role == "representative",
            **(extra or {})}


def check(pattern, dsl, dtype: str, text: str, gpu: str | None = None, op: str | None = None, tensors=None) -> None:
    """Raise InputError when the user's shapes do not parse for this pattern and dtype, break the DSL's index
    limits, or need more memory than the GPU has (its HBM, from reference/gpu_specs.json). The pattern says which
    tensors a case has (``tensors(case, op)``; a lowered op passes its own ``tensors(case)``), the DSL what its kernels
    can address, the catalogue what the GPU holds."""
    if not text.strip():
        return
    op = op or pattern.DEFAULT_OP
    memory = catalog.memory(gpu) if gpu else None
    for c in pattern.cases(text, "representative", dtype):
        label, found = c["name"][4:], tensors(c) if tensors else pattern.tensors(c, op)
        for name, (elems, _size) in found.items():
            if elems >= dsl.MAX_ELEMENTS:
                raise InputError(f"shapes: '{label}': {name} has {elems} elements; {dsl.LABEL} kernels address a "
                                 f"tensor's elements with 32-bit offsets, so at most {dsl.MAX_ELEMENTS - 1}: use "
                                 "smaller shapes")
        nbytes = pattern.largest_buffer(c)
        if dsl.MAX_BUFFER_BYTES and nbytes >= dsl.MAX_BUFFER_BYTES:
            raise InputError(f"shapes: '{label}' needs {nbytes} bytes in one buffer; {dsl.LABEL} buffer accesses "
                             f"address under {dsl.MAX_BUFFER_BYTES / 2**30:g} GiB (32-bit offsets), so split the tensor "
                             "or use smaller shapes")
        total = sum(elems * size for elems, size in found.values())
        if memory and total > memory["bytes"]:
            parts = ", ".join(f"{name} {elems * size / 1e9:.3g} GB" for name, (elems, size) in found.items())
            raise InputError(f"shapes: '{label}' needs {total / 1e9:.4g} GB for its tensors ({parts}), more than the "
                             f"{gpu}'s {memory['gb']:g} GB ({memory['source']}); use smaller shapes")


def build_cases(pattern, dtype: str, text: str) -> list[dict]:
    """Representative cases (the user's shapes, or the built-in set) plus the built-in boundary cases, deduplicated."""
    defaults = pattern.DEFAULT_SHAPES
    cases = pattern.cases(text if text.strip() else ";".join(defaults["representative"]), "representative", dtype)
    cases += pattern.cases(";".join(defaults.get(f"boundary_{dtype}", defaults["boundary"])), "boundary", dtype)
    unique = {}
    for c in cases:
        unique.setdefault(c["name"], c)
    return list(unique.values())

