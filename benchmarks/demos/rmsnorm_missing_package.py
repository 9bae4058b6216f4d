"""A kernel demo whose package is not installed (benchmarks/bench_demo.py): every case is MISSING_PACKAGE."""

from kbaseline_absent_kernels import rmsnorm as _absent


def rmsnorm(x, weight):
    return _absent(x, weight)
