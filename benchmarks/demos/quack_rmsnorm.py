"""quack's RMSNorm as a kernel demo (benchmarks/bench_demo.py): the built-in rmsnorm workspace's reference.

quack (Dao-AILab, pip `quack-kernels`) is a CuTe DSL library; `quack.rmsnorm.rmsnorm(x, weight=None, bias=None,
residual=None, out_dtype=None, residual_dtype=None, eps=1e-6, prenorm=False)` normalises the rows of x [M, N]. The
wrapper pins eps to the built-in reference's 1e-6 and takes the op's inputs by name (x, weight).
"""

from quack.rmsnorm import rmsnorm as _quack_rmsnorm


def rmsnorm(x, weight):
    return _quack_rmsnorm(x, weight, eps=1e-6)
