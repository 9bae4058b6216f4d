"""Hand-written example of a lowered decode-attention variant (CONTRACT_DECODE.md): a custom softmax scale only."""

from __future__ import annotations

import pointwise as pw  # noqa: F401 -- every lowered.py imports it

SOURCE = "example:scale"
INPUTS = ("q", "k_cache", "v_cache", "seq_lens")
ROLES = ("q", "k", "v", "lens")
VECTORS = ()
SCORE = False
MASK = False
RANGE = False
WINDOW = None
SINK = False


def scale(d):
    return 0.0625


def score(s, b, h, kpos, length):
    return s


def keep(b, h, kpos, length):
    return True


def key_range(b, length):
    return (0.0, length)


def sink(b, h):
    return 0.0
