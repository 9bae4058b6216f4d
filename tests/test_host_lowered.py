"""host.py's side of a lowered op, on the CPU: rank-3 rows through a 2-D row cell (rows_nd), the inputs a case makes
(masks, scalars, wide inputs: lowered_input) and the outputs' dtypes (out_dtypes). The GPU kernel cannot run here,
so a pure-torch stand-in takes the row cell's run() place."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from helpers import ROOT, load_module

torch = pytest.importorskip("torch")
host = load_module(ROOT / "{{cookiecutter.op_name}}" / "host.py", "host_for_lowered_tests")

LOWERED = SimpleNamespace(SOURCE="test:nd", INPUTS=("alpha", "x", "w"), KINDS=("scalar", "row", "vector"),
                          DTYPES=("float", "float", "float"), WIDTHS=(1, 1, 1),
                          OUTPUTS=("row", "reduced", "reduced_keepdim"), OUT_WIDTHS=(1, 1, 1),
                          OUT_HOW=("whole", "whole", "whole"), DIMS=(), HEADS=None, RANK=None)


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
    given = host.rows_nd(LOWERED, stand_in, [alpha, x, w], outs)  # the harness's poisoned outputs, written in place
    assert all(torch.allclose(o, v) for o, v in zip(outs, want))
    assert len(given) == 3 and all(g is o for g, o in zip(given, outs)), "out= hands back the tensors given"


def test_a_function_bound_to_rank_2_refuses_x_of_another_rank_in_one_line():
    """lowered.RANK (a function naming a dim by position, x.mean(dim=1)): 2-D rows run, x of rank 3 or 1 is refused
    before the cell sees it, in one line that names the fix; no output is written."""
    bound = SimpleNamespace(**{**vars(LOWERED), "RANK": 2})
    x, w, alpha = torch.randn(6, 10), torch.randn(10), torch.tensor(0.5)
    assert torch.allclose(host.rows_nd(bound, stand_in, [alpha, x, w], None)[0], x * alpha * w)
    for wrong in (x.reshape(2, 3, 10), x[0]):
        with pytest.raises(ValueError) as err:
            host.rows_nd(bound, stand_in, [alpha, wrong, w], None)
        words = str(err.value)
        assert "\n" not in words and words.startswith("test:nd: the function names a dim by its position")
        assert f"got x of shape {tuple(wrong.shape)}" in words and "dim=-1" in words


def test_the_elementwise_cells_check_the_rank_with_the_operands():
    """The elementwise cells take x whole (no rows_nd): host.lowered_operands, which every cell's first call of a
    signature runs (its rank is in the signature), refuses x of another rank than RANK before anything else."""
    bound = SimpleNamespace(**{**vars(LOWERED), "RANK": 2, "KINDS": ("scalar", "row", "vector"), "OUTPUTS": ("row",)})
    with pytest.raises(ValueError, match="got x of shape \\(2, 3, 10\\)"):
        host.lowered_operands(bound, [torch.tensor(0.5), torch.randn(2, 3, 10), torch.randn(10)], None, [(2, 3, 10)],
                              True)


@pytest.mark.parametrize("x_names,c_names,shape", [
    (("B", "S", "H", "D"), ("S", "D"), (2, 5, 3, 8)),  # RoPE's cos [S, D] against q [B, S, H, D]
    (("B", "H", "S", "D"), ("B", "S", "D"), (2, 3, 5, 8)),  # Llama's cos [B, S, D] against q [B, H, S, D]
    (("B", "S", "H", "D"), ("B", "S", "D"), (2, 5, 3, 8)),  # B and S merge into one mode (contiguous in cos)
    (("B", "H", "S", "D"), ("B", "1", "S", "D"), (2, 3, 5, 8)),  # a dim of size 1: an attention mask's [B, 1, S, N]
    (("T", "D"), ("D",), (7, 8)),  # all rows broadcast: stride 0 throughout
    (("B", "S", "D"), ("B", "D"), (2, 5, 8)),  # adaLN's shift [B, D] over x [B, S, D]: stride 0 over S
])
def test_broadcast_rows_pair_each_row_of_x_with_its_row_of_the_input(x_names, c_names, shape):
    """host.broadcast_rows' [L0, L1, L2, W] view, read row-major as the row cell's layout reads it, is the input
    broadcast as the function broadcasts it (to x's shape by the dims' names), row for row: no copy."""
    lowered = SimpleNamespace(SOURCE="test:bcast", INPUTS=("x", "c"), KINDS=("row", "broadcast"),
                              DIMS=(x_names, c_names))
    x = torch.randn(shape)
    sizes = dict(zip(x_names, shape))
    c = torch.randn([1 if d == "1" else sizes[d] for d in c_names])
    view = host.broadcast_rows(lowered, x, c, 1)
    assert view.dim() == 4 and view.data_ptr() == c.data_ptr()
    want = c.reshape([c.shape[c_names.index(d)] if d in c_names else 1 for d in x_names]).expand(shape)
    assert torch.equal(view.reshape(-1, shape[-1]), want.reshape(-1, shape[-1]))


def test_x_flattened_past_the_dims_its_inputs_broadcast_by_is_refused_in_one_line():
    """RoPE's q [B, S, H, D] passed as [B*S*H, D] rows: cos [S, D] pairs with x's dims by name, and S is no longer
    one of them, so the call is refused (it would pair every row with cos's first), naming the dims to pass."""
    lowered = SimpleNamespace(SOURCE="test:bcast", INPUTS=("q", "cos"), KINDS=("row", "broadcast"),
                              DIMS=(("B", "S", "H", "D"), ("S", "D")))
    with pytest.raises(ValueError, match=r"q must be \[B, S, H, D\] .* got \(30, 8\)"):
        host.broadcast_rows(lowered, torch.randn(30, 8), torch.randn(5, 8), 1)


def test_heads_run_as_rows_of_the_head_and_come_back_as_heads():
    """A function that views x [T, H*c] as heads (HEADS = c): the cell gets T*H rows of c, the output is [T, H, c]."""
    lowered = SimpleNamespace(SOURCE="test:heads", INPUTS=("x", "w"), KINDS=("row", "vector"), OUTPUTS=("row",),
                              HEADS=4, DIMS=(), RANK=None)
    x, w = torch.randn(3, 12), torch.randn(4)

    def cell(x, w, out=None):
        assert tuple(x.shape) == (9, 4)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)) * w

    got = host.rows_nd(lowered, cell, [x, w], None)
    heads = x.view(3, 3, 4)
    assert torch.allclose(got, heads * torch.rsqrt(heads.pow(2).mean(-1, keepdim=True)) * w)


def test_output_dtypes_by_name():
    assert host.out_dtypes(["input", "fp32", "int8", "fp8"]) == [None, torch.float32, torch.int8,
                                                                  torch.float8_e4m3fn]


PER_ROW = SimpleNamespace(SOURCE="test:per_row", INPUTS=("x", "s", "keep"), KINDS=("row", "per_row", "per_row"),
                          DTYPES=("float", "float", "bool"), WIDTHS=(1, 1, 1), OUTPUTS=("row",), OUT_WIDTHS=(1,),
                          OUT_HOW=("whole",), DIMS=(), HEADS=None, RANK=None)


def per_row_stand_in(x, s, keep, out=None):
    """A 2-D row cell as the kernels see a per-row input: x [M, N], each per-row input its M values (a mask's
    bytes), one per row."""
    assert x.dim() == 2 and s.shape == keep.shape == (x.shape[0],) and keep.dtype == torch.uint8
    y = x * s[:, None] * keep[:, None]
    return y if out is None else out.copy_(y)


@pytest.mark.parametrize("lead,trailing_one", [((6,), False), ((6,), True), ((2, 3), False), ((2, 3), True)])
def test_one_value_per_row_reaches_the_cell_as_its_m_values(lead, trailing_one):
    """A per-row input comes as the function takes it ([M], [M, 1], [B, S], [B, S, 1]); lowered_viewer makes it its M
    values (a bool mask its bytes: free views) and rows_nd, for x of rank 3, flattens it with x's rows, so row r of x
    meets value r."""
    x = torch.randn(*lead, 10)
    shape = (*lead, 1) if trailing_one else lead
    s, keep = torch.randn(shape), torch.rand(shape) > 0.3
    viewed = host.lowered_viewer(PER_ROW)([x, s, keep])
    assert viewed[1].data_ptr() == s.data_ptr() and viewed[1].shape == (s.numel(),)  # a view, not a copy
    got = host.rows_nd(PER_ROW, per_row_stand_in, viewed, None)
    want = x * s.reshape(*lead, 1) * keep.reshape(*lead, 1)
    assert got.shape == x.shape and torch.equal(got, want)


@pytest.mark.parametrize("bad,words", [
    (lambda x: torch.randn(7), "a contiguous (6,) (or (6, 1))"),
    (lambda x: torch.randn(6, 2)[:, 0], "a contiguous (6,) (or (6, 1))"),
    (lambda x: torch.randn(6, dtype=torch.float16), "dtype torch.float32"),
])
def test_a_per_row_input_of_another_shape_or_layout_is_refused_in_one_line(bad, words):
    """host.lowered_operands (every cell's first call of a signature, and any call the launcher refuses): a per-row
    input must hold M values of x's dtype, contiguous, as [M] or [M, 1]; anything else is one line naming it."""
    x = torch.randn(6, 10)
    cuda = type("OnGpu", (torch.Tensor,), {"is_cuda": property(lambda self: True)})  # the check wants a GPU x
    inputs = [x.as_subclass(cuda), bad(x), torch.ones(6, dtype=torch.bool)]
    with pytest.raises(ValueError) as err:
        host.lowered_operands(PER_ROW, inputs, None, [(6, 10)], False)
    assert "\n" not in str(err.value) and words in str(err.value) and "s (per_row)" in str(err.value)


@pytest.mark.parametrize("x_names,s_names,shape", [
    (("B", "C", "H", "W"), ("B",), (2, 3, 5, 8)),  # DDPM's add_noise: one value per sample over [B, C, H, W]
    (("B", "C", "H", "W"), ("C",), (2, 3, 5, 8)),  # timm's LayerScale2d: one value per channel, broadcast over B, H
    (("B", "C", "T"), ("1", "C", "1"), (2, 3, 8)),  # an audio model's [1, C, 1] per-channel parameter
    (("B", "S", "D"), ("B", "S"), (2, 5, 8)),  # every leading dim: a plain per-row input, here through the view
])
def test_one_value_per_row_broadcast_over_some_dims_pairs_each_row_with_its_value(x_names, s_names, shape):
    """broadcast_rows makes a per-row input that the function broadcasts over some of x's leading dims an [L0, L1,
    L2] view (stride 0 where broadcast, no copy) whose element r, in x's row-major order, is the value the function
    pairs with x's row r: what the cells' nested mode (CuTe DSL) or strided offset (FlyDSL) reads."""
    lowered = SimpleNamespace(SOURCE="test:bpr", INPUTS=("x", "s"), KINDS=("row", "broadcast_per_row"),
                              DIMS=(x_names, s_names))
    x = torch.randn(*shape)
    own = [shape[x_names.index(d)] if d != "1" else 1 for d in s_names]
    s = torch.randn(*own)
    view = host.broadcast_rows(lowered, x, s, 1)
    assert view.dim() == 3 and view.data_ptr() == s.data_ptr()
    aligned = s.reshape([shape[i] if d in s_names else 1 for i, d in enumerate(x_names[:-1])] + [1])
    assert torch.equal(view.reshape(-1), aligned.expand(*shape[:-1], 1).reshape(-1))
