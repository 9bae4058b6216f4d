"""Row functions the issue names that the lowering corpus does not hold, baked by benchmarks/bench_cluster.py from
this file (pytorch_logic=benchmarks/models/row_ops.py:<name>)."""

import torch.nn.functional as F


def log_softmax_temperature(x, temperature: float = 0.7):
    """log_softmax(x / T) in x's dtype: a sampling step's log-probabilities at temperature T."""
    return F.log_softmax(x / temperature, dim=-1)


def gated_residual(x, gate, residual):
    """residual + x * sigmoid(gate): a three-input elementwise op (a gated residual), for run()'s host cost."""
    return residual + x * gate.sigmoid()
