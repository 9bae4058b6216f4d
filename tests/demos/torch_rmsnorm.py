"""A kernel demo that is a plain torch function (test data): RMSNorm with a weight, eps 1e-6."""

import torch.nn.functional as F


def rmsnorm(x, weight):
    return F.rms_norm(x, (x.shape[-1],), weight, eps=1e-6)
