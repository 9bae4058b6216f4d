"""Hand-written example of a lowered decode-attention variant (CONTRACT_DECODE.md): every feature at once."""

from __future__ import annotations

import pointwise as pw

SOURCE = "example:alibi_softcap_window_sinks"
INPUTS = ("query", "key_cache", "value_cache", "cache_seqlens", "slopes", "sinks")
ROLES = ("q", "k", "v", "lens", "head", "head")
VECTORS = ("slopes", "sinks")
SCORE = True
MASK = True
RANGE = True
WINDOW = 1024
SINK = True


def scale(d):
    return d ** -0.5


def score(s, b, h, kpos, length, slopes, sinks):
    t0 = s + slopes * (kpos - (length - 1.0))  # ALiBi: a per-head slope times the distance to the query
    t1 = pw.tanh(t0 * (1.0 / 50.0)) * 50.0  # Gemma-2 soft cap
    return t1


def keep(b, h, kpos, length, slopes, sinks):
    return kpos > length - 1.0 - 1024.0  # a 1024-key sliding window ending at the query


def key_range(b, length):
    return (length - 1024.0, length)


def sink(b, h, slopes, sinks):
    return sinks
