"""Each pattern's reference.py, imported from the template repo on the CPU: the ground truth must itself be right.

Each built-in reference is checked against an independent formulation, its inputs against the case
(shapes, strides, lengths), and the timed torch baseline against the reference.
"""

from __future__ import annotations

import math

import pytest
import torch
from helpers import WS_TEMPLATE, load_module
from tools import registry, shapes


@pytest.fixture(scope="module")
def workspaces():
    """Each pattern's plain-Python reference, imported from the template repo, with its op's cases and inputs."""
    loaded = {}
    for pattern, op in [("gemm", "matmul"), ("reduction", "softmax"), ("reduction", "rmsnorm"), ("reduction", "sum"),
                        ("reduction", "max"), ("decode_attention", "gqa")]:
        module = load_module(WS_TEMPLATE / "patterns" / pattern / "reference.py", f"reference_{op}", WS_TEMPLATE)
        spec = registry.pattern(pattern)
        loaded[op] = (Reference(module, op, spec.OPS[op]["inputs"]),
                      {"cases": shapes.build_cases(spec, "bf16", ""), "params": spec.OPS[op].get("params", {})})
    return loaded


class Reference:
    """One op of a reference module, as a workspace of that op sees it (outside a workspace there is no op.json)."""

    def __init__(self, module, op, inputs):
        self.reference = module.BUILT_IN[op]
        self.baseline = getattr(module, "sdpa", self.reference)
        self._module, self._inputs = module, inputs

    def make_inputs(self, case, dtype, device, seed):
        if "inputs" in self._module.make_inputs.__code__.co_varnames:
            return self._module.make_inputs(case, dtype, device, seed, inputs=self._inputs)
        return self._module.make_inputs(case, dtype, device, seed)


def case(spec, name):
    return next(c for c in spec["cases"] if c["name"] == name)


def f64(inputs):
    return [t.double() if t.is_floating_point() else t for t in inputs]


def test_gemm_reference_is_a_times_b_transposed(workspaces):
    ref, spec = workspaces["matmul"]
    a, b = ref.make_inputs(case(spec, "bou_129x8x8"), torch.float32, "cpu", 0)
    assert a.shape == (129, 8) and b.shape == (8, 8)
    expected = torch.tensor([[sum(a[i, k].item() * b[j, k].item() for k in range(8)) for j in range(8)]
                             for i in range(129)], dtype=torch.float64)
    torch.testing.assert_close(ref.reference(*f64([a, b])), expected)


def test_reduction_inputs_honour_the_row_stride(workspaces):
    ref, spec = workspaces["softmax"]
    (x,) = ref.make_inputs(case(spec, "bou_1000x4096@4160"), torch.bfloat16, "cpu", 0)
    assert x.shape == (1000, 4096) and x.stride() == (4160, 1) and not x.is_contiguous()


def test_softmax_rows_sum_to_one_and_match_the_definition(workspaces):
    ref, spec = workspaces["softmax"]
    (x,) = ref.make_inputs(case(spec, "bou_4096x7"), torch.float32, "cpu", 0)
    out = ref.reference(x.double())
    torch.testing.assert_close(out.sum(-1), torch.ones(4096, dtype=torch.float64))
    e = torch.exp(x.double() - x.double().amax(-1, keepdim=True))
    torch.testing.assert_close(out, e / e.sum(-1, keepdim=True))


def test_rmsnorm_matches_its_formula(workspaces):
    ref, spec = workspaces["rmsnorm"]
    assert spec["params"] == {"eps": 1e-6}
    x, w = ref.make_inputs(case(spec, "bou_4096x1000"), torch.float32, "cpu", 0)
    x, w = x.double(), w.double()
    expected = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(ref.reference(x, w), expected)


def test_sum_and_max_reduce_the_last_dim(workspaces):
    ref, spec = workspaces["sum"]
    (x,) = ref.make_inputs(case(spec, "bou_1x4096"), torch.float32, "cpu", 0)
    assert ref.reference(x.double()).shape == (1,)
    assert ref.reference(x.double()).item() == pytest.approx(math.fsum(x.double().tolist()[0]))
    ref_max, _ = workspaces["max"]
    assert ref_max.reference(x.double()).item() == x.max().item()


def naive_attention(q, k, v, lens):
    """One (sequence, head) at a time: the textbook formula, no grouping tricks."""
    batch, hq, d = q.shape
    group = hq // k.shape[2]
    out = torch.empty_like(q)
    for b in range(batch):
        for h in range(hq):
            keys, values = k[b, : lens[b], h // group], v[b, : lens[b], h // group]
            p = torch.softmax(keys @ q[b, h] / math.sqrt(d), dim=0)
            out[b, h] = p @ values
    return out


@pytest.mark.parametrize("name", ["bou_3x8x8x777x64@mixed", "bou_4x16x1x2048x128@mixed", "bou_4x32x8x1024x128@1"])
def test_attention_reference_masks_and_groups(workspaces, name):
    ref, spec = workspaces["gqa"]
    c = case(spec, name)
    q, k, v, lens = ref.make_inputs(c, torch.float32, "cpu", 0)
    assert lens.dtype == torch.int32 and lens.tolist() == c["seq_lens"]
    assert (k[0, c["seq_lens"][0]:] == 8.0).all() if c["seq_lens"][0] < c["dims"][3] else True
    out = ref.reference(*f64([q, k, v, lens]))
    torch.testing.assert_close(out, naive_attention(*f64([q, k, v]), c["seq_lens"]))
    # the torch baseline (SDPA with a key mask) agrees with the reference
    torch.testing.assert_close(ref.baseline(q, k, v, lens), out.float(), atol=2e-5, rtol=2e-5)
