"""The reduction pattern's built-in ops as programs: each op is the PyTorch function below, named as the op.

A built-in bake traces the op's function through the same lowering as a user's (tools/lower: trace -> IR ->
lowered.py), so the row cell has one kernel and one run(): its data movement around the generated compute().
What each function does is what the op means (tools/patterns/reduction/__init__.py, OPS[op]["math"]): fp32 math,
one rounding to x's dtype on the store, NaN propagating through every max as torch's does.
"""

import torch
import torch.nn.functional as F

from tools.patterns.reduction import OPS

EPS = OPS["rmsnorm"]["params"]["eps"]


def sum(x):  # noqa: A001 -- the op's name
    return x.float().sum(-1).to(x.dtype)


def mean(x):
    return x.float().mean(-1).to(x.dtype)


def max(x):  # noqa: A001 -- the op's name
    return x.amax(-1)


def softmax(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def rmsnorm(x, weight, eps=EPS):
    return F.rms_norm(x.float(), (x.shape[-1],), weight.float(), eps=eps).to(x.dtype)
