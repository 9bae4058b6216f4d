"""Hand-written example of a lowered decode-attention variant (CONTRACT_DECODE.md): a 1024-key sliding window."""

from __future__ import annotations

import pointwise as pw  # noqa: F401 -- every lowered.py imports it

SOURCE = "example:window"
INPUTS = ("q", "k_cache", "v_cache", "seq_lens")
ROLES = ("q", "k", "v", "lens")
VECTORS = ()
SCORE = False
MASK = True
RANGE = True
WINDOW = 1024
SINK = False


def scale(d):
    return d ** -0.5


def score(s, b, h, kpos, length):
    return s


def keep(b, h, kpos, length):
    return kpos >= length - 1024.0


def key_range(b, length):
    return (length - 1024.0, length)


def sink(b, h):
    return 0.0
