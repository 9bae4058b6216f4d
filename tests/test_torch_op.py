"""host.torch_op: the kernel as a torch.library custom op, so that torch.compile can call it (CPU, no GPU needed).

The GPU kernel cannot run here, so a pure-torch stand-in takes run()'s place; everything else is the workspace's
own: host.py's registration and reference.py as the fake-tensor rule. The GPU half (the real kernel inside
torch.compile(fullgraph=True)) is tests/test_gpu.py's graph test.
"""

from __future__ import annotations

import sys

import pytest
from conftest import load_module

torch = pytest.importorskip("torch")
F = torch.nn.functional


@pytest.fixture(scope="module")
def rmsnorm_ws(workspace_of):
    ws = workspace_of("H200", "rmsnorm")
    reference = load_module(ws / "reference.py", "reference_for_torch_op", ws)
    return sys.modules["host"], reference  # the host.py that reference.py imported, from the same workspace


def stand_in(x, weight, out=None):
    """What the kernel computes (fp32 math, one rounding), in torch: run()'s place on a machine with no GPU."""
    return F.rms_norm(x.float(), (x.shape[-1],), weight.float(), eps=1e-6).to(x.dtype)


def test_the_custom_op_passes_torch_library_opcheck(rmsnorm_ws):
    host, reference = rmsnorm_ws
    op = host.torch_op(stand_in, reference.reference, name="rmsnorm_opcheck")
    x, w = torch.randn(8, 64, dtype=torch.bfloat16), torch.randn(64, dtype=torch.bfloat16)
    torch.library.opcheck(op, ([x, w],))  # schema, fake-tensor rule against the real call, dynamic shapes


def test_torch_compile_fullgraph_calls_the_op_and_knows_its_output(rmsnorm_ws):
    host, reference = rmsnorm_ws
    op = host.torch_op(stand_in, reference.reference, name="rmsnorm_compiled")
    assert host.torch_op(stand_in, reference.reference, name="rmsnorm_compiled") is op  # registered once
    assert torch.ops.kbaseline.rmsnorm_compiled is not None

    def model(x, w):
        return op([x * 2.0, w]) + 1.0  # the op inside ordinary torch code: one graph, no break

    x, w = torch.randn(5, 32, dtype=torch.bfloat16), torch.randn(32, dtype=torch.bfloat16)
    got = torch.compile(model, backend="aot_eager", fullgraph=True)(x, w)
    assert got.shape == x.shape and got.dtype == x.dtype
    torch.testing.assert_close(got, stand_in(x * 2.0, w) + 1.0)
