"""host.py's side of a lowered op, on the CPU: rank-3 rows through a 2-D row cell (rows_nd), the inputs a case makes
(masks, scalars, wide inputs: lowered_input) and the outputs' dtypes (out_dtypes). The GPU kernel cannot run here,
so a pure-torch stand-in takes the row cell's run() place."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import ROOT, load_module

torch = pytest.importorskip("torch")
host = load_module(ROOT / "{{cookiecutter.op_name}}" / "host.py", "host_for_lowered_tests")

LOWERED = SimpleNamespace(SOURCE="test:nd", INPUTS=("alpha", "x", "w"), KINDS=("scalar", "row", "vector"),
                          DTYPES=("float", "float", "float"), WIDTHS=(1, 1, 1),
                          OUTPUTS=("row", "reduced", "reduced_keepdim"))


def stand_in(alpha, x, w, out=None):
    """A 2-D row cell: x [M, N] only (as the CuTe and FlyDSL cells launch), three outputs by OUTPUTS."""
    assert x.dim() == 2, "rows_nd hands the cell 2-D rows"
    y = x * alpha * w
    made = (y, y.sum(-1), y.amax(-1, keepdim=True))
    if out is None:
        return made
    for o, v in zip(out, made):
        o.copy_(v)
    return tuple(out)


def test_rank_3_rows_run_as_2_d_and_come_back_in_x_shape():
    x, w, alpha = torch.randn(4, 6, 10), torch.randn(10), torch.tensor(0.5)
    got = host.rows_nd(LOWERED, stand_in, [alpha, x, w], None)
    want = (x * alpha * w, (x * alpha * w).sum(-1), (x * alpha * w).amax(-1, keepdim=True))
    assert [tuple(g.shape) for g in got] == [(4, 6, 10), (4, 6), (4, 6, 1)]
    assert all(torch.allclose(g, v) for g, v in zip(got, want))
    outs = (torch.full((4, 6, 10), float("nan")), torch.full((4, 6), float("nan")), torch.full((4, 6, 1), float("nan")))
    host.rows_nd(LOWERED, stand_in, [alpha, x, w], outs)  # the harness's poisoned outputs are written in place
    assert all(torch.allclose(o, v) for o, v in zip(outs, want))


def test_output_dtypes_by_name():
    assert host.out_dtypes(["input", "fp32", "int8", "fp8"]) == [None, torch.float32, torch.int8,
                                                                  torch.float8_e4m3fn]
