"""The elementwise pattern's built-in ops as programs: each op is the PyTorch function below, named as the op.

A built-in bake traces the op's function through the same lowering as a user's (tools/lower: trace -> IR ->
lowered.py), so the elementwise cell has one kernel and one run(): its data movement around the generated
compute(). Each function computes in fp32 and rounds once to x's dtype (silu_mul's product is not rounded between
the gate and the multiply); gelu is the exact erf form, torch's default.
"""

import torch.nn.functional as F


def add(x, y):
    return x + y


def mul(x, y):
    return x * y


def silu(x):
    return F.silu(x)


def gelu(x):
    return F.gelu(x)


def relu(x):
    return F.relu(x)


def silu_mul(x, y):
    return (F.silu(x.float()) * y.float()).to(x.dtype)
