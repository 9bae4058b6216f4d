"""The four regime sweeps (benchmarks/sweep_{gemm,decode,reduction,elementwise}.py) on CPU: their grids and skips,
the rotation rule, --render from a small synthetic JSON, and one memory-bound point measured end to end on CPU
tensors (a stand-in kernel, the timer replaced) through a workspace's own reference.py and torch.compile's graph
keys. The GPU timing itself runs on the H200 only.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"

import sweep_common  # noqa: E402
import sweep_decode  # noqa: E402
import sweep_elementwise  # noqa: E402
import sweep_gemm  # noqa: E402
import sweep_reduction  # noqa: E402


def test_reduction_grid_skips_the_two_largest_x_per_op():
    pts = sweep_reduction.points()
    assert len(pts) == 3 * 9 * 5
    skipped = {(p["op"], p["M"], p["N"]): p["skip"] for p in pts if p["skip"]}
    assert set(skipped) == {(op, m, 131072) for op in sweep_reduction.OPS for m in (16384, 65536)}
    assert all("8 GB" in skipped[(op, 65536, 131072)] and "2^31" in skipped[(op, 16384, 131072)]
               for op in sweep_reduction.OPS)
    first_n = [p["M"] for p in pts if p["op"] == "softmax" and p["N"] == 1000]
    assert first_n == sorted(sweep_reduction.M_GRID, reverse=True)  # torch.compile's graph of an N: at the largest M


def test_elementwise_grid_and_its_int32_skip():
    pts = sweep_elementwise.points()
    assert [p["numel"] for p in pts if p["op"] == "add"] == [2**k for k in range(28, 9, -2)]
    assert len(pts) == 20 and not any(p["skip"] for p in pts)
    (big,) = sweep_elementwise.points(["add"], [2**31])
    assert "int32" in big["skip"]
    assert sweep_elementwise.label(2**28) == "2^28" and sweep_elementwise.label(1000) == "1000"


def test_gemm_and_decode_grids():
    pts = sweep_gemm.points()
    assert len(pts) == 6 * 3 * 3 and pts[0] == (1, 4096, 4096) and pts[-1] == (4096, 14336, 14336)
    dec = sweep_decode.points()
    assert len(dec) == 4 * 3 * 4 * 2
    assert all(p["skip"] for p in dec if p["B"] * p["S"] * 8 * p["D"] >= 2**31)
    assert not any(p["skip"] for p in dec if p["B"] <= 4)


def test_copies_reach_the_round_and_respect_the_cap():
    assert sweep_common.copies(100, 1000, 32) == 10
    assert sweep_common.copies(300, 1000, 32) == 4  # rounds up: a round holds at least round_bytes
    assert sweep_common.copies(10**12, 1000, 32) == 2  # never a call on the previous call's buffers
    assert sweep_common.copies(1, 1000, 32) == 32


def _reduction_row(op, m, n, **values):
    base = {"op": op, "M": m, "N": n, "x_bytes": m * n * 2, "skip": None}
    timed = {"agree": True, "rel_err": 3e-3, "path": "register-resident rows", "threads_per_row": 128, "vec": 8,
             "grid_blocks": m, "copies": 4, "ours_us": 10.0, "eager_us": 5.0, "ours_gbps": 100.0, "ratio": 0.5}
    return {**base, **timed, **values}


def test_reduction_render(tmp_path, capsys):
    rows = [_reduction_row("softmax", 1, 1000, compile_us=12.0, compile_ratio=1.2),
            {"op": "softmax", "M": 1, "N": 4096, "x_bytes": 8192, "skip": "x is too big"},
            {"op": "softmax", "M": 4, "N": 1000, "x_bytes": 8000, "skip": None, "error": "RuntimeError: boom"},
            _reduction_row("softmax", 4, 4096, agree=False, rel_err=None),
            _reduction_row("sum", 1, 1000, ratio=1.3)]
    sweep_common.write_rows(tmp_path / "red.json", {"device": "test"}, rows)
    assert sweep_reduction.main(["--out", str(tmp_path / "red"), "--render"]) == 1  # an error and a FAIL
    out = capsys.readouterr().out
    assert "**0.50**" in out and "x is too big" in out and "RuntimeError: boom" in out and "check FAIL" in out
    assert "2 points timed, 1 below 0.9x torch eager: softmax 1x1000" in out
    assert {p.name for p in tmp_path.glob("*.png")} == {"red-softmax.png", "red-softmax-compile.png", "red-sum.png"}


def test_elementwise_render(tmp_path, capsys):
    rows = [{"op": "add", "numel": n, "skip": None, "agree": True, "rel_err": 0.0, "tile_elements": 8192,
             "grid_blocks": 1, "copies": 256, "ours_us": 2.0, "eager_us": 2.0 * r, "ours_gbps": 3.0, "ratio": r}
            for n, r in ((1024, 0.95), (4096, 1.1))]
    sweep_common.write_rows(tmp_path / "ew.json", {"device": "test"}, rows)
    assert sweep_elementwise.main(["--out", str(tmp_path / "ew"), "--render"]) == 0
    out = capsys.readouterr().out
    assert "| add | 2^10 | 1 | 256 | 2.0 | 1.9 |" in out and "0 below 0.9x" in out
    assert (tmp_path / "ew-add.png").is_file()


def test_gemm_render(tmp_path, capsys):
    row = {"M": 1, "N": 4096, "K": 4096, "path": "GEMV", "status": "PASS", "rel_err": 1e-3, "kernel_us": 11.0,
           "cublas_us": 12.0, "ratio": 12 / 11, "kernel_tbps": 3.0, "kernel_tflops": 3.0}
    sweep_common.write_rows(tmp_path / "g.json", {"device": "test"}, [row, {**row, "M": 16, "ratio": 0.8}])
    assert sweep_gemm.main(["--out", str(tmp_path / "g.json"), "--render"]) == 0
    assert "0.80" in capsys.readouterr().out
    assert (tmp_path / "g-K4096.png").is_file()


def test_decode_render(tmp_path, capsys):
    pts = sweep_decode.points()
    timed = {**pts[0], "ours_us": 20.0, "sdpa_us": 18.0, "ratio": 0.9, "rel_err_vs_sdpa": 1e-3, "agree": True,
             "copies": 32, "path": "mma", "splits": 4, "grid_blocks": 128, "waves": 1.0}
    skip = next(p for p in pts if p["skip"])
    (tmp_path / "d.json").write_text(json.dumps({"rows": [timed, skip]}))
    assert sweep_decode.main(["--out", str(tmp_path / "d"), "--render"]) == 0
    assert "| 0.90 | yes |" in capsys.readouterr().out
    assert {p.name for p in tmp_path.glob("*.png")} == {"d-d64.png", "d-d128.png"}


@pytest.fixture
def cpu_timer(monkeypatch):
    """kernel_time on CPU: each fn called once (the calls run), the same 'time' for every side."""
    def fake(fns, calls, warm=True):
        for fn in fns:
            fn()
        return 2.0, ["cpu"]

    monkeypatch.setattr(sweep_common, "kernel_time", fake)


def test_measure_a_reduction_point_on_cpu(tmp_path, cpu_timer):
    import torch

    _, reference = sweep_common.load_workspace(sweep_common.bake(tmp_path, "reduction", "rmsnorm"), kernel=False)
    assert reference.host.OP["op"] == "rmsnorm"
    _, other = sweep_common.load_workspace(sweep_common.bake(tmp_path, "elementwise", "silu_mul"), kernel=False)
    assert other.host.OP["op"] == "silu_mul" and reference.host.OP["op"] == "rmsnorm"  # fresh modules each

    calls = []

    def run(*inputs, out=None):  # the cell's interface: allocates its output unless given one
        calls.append(out is None)
        result = reference.baseline(*inputs)
        return result if out is None else out.copy_(result)

    good = SimpleNamespace(run=run)
    sweep = sweep_reduction.SWEEP
    graphs = []
    compiled = sweep_common.CompiledBaseline(60.0, backend=lambda gm, ex: graphs.append(gm) or gm, device="cpu")
    rows = {}
    for m in (64, 16, 1):
        pt = {"op": "rmsnorm", "M": m, "N": 256, "skip": None}
        rows[m] = sweep_common.measure(good, reference, sweep.case(pt), torch.bfloat16, 200_000, 3, 5, compiled,
                                       "rmsnorm", ("rmsnorm", *sweep.compile_key(pt)), device="cpu")
    r = rows[64]
    assert r["agree"] and r["rel_err"] < 1e-2 and r["copies"] == 3 and r["bytes"] == 2 * 64 * 256 * 2 + 256 * 2
    assert r["ratio"] == 1.0 and r["compile_ratio"] == 1.0 and "compile_s" in r and "compile_s" not in rows[16]
    assert len(graphs) == 2  # one graph for M = 64 and 16 (M dynamic), one for M = 1
    assert "ours_out_us" in r and True in calls and False in calls  # timed allocating (as eager) and into out=

    bad = SimpleNamespace(run=lambda *inputs, out: out)  # writes nothing: the NaN poison stays
    row = sweep_common.measure(bad, reference, sweep.case({"M": 4, "N": 256}), torch.bfloat16, 1, 1, 5, device="cpu")
    assert not row["agree"] and row["rel_err"] is None and "ratio" not in row
    assert sweep_common.cell({**row, "skip": None}) == "FAIL"

    boxed = sweep_common.CompiledBaseline(0.0, backend="eager", device="cpu")
    fns, note = boxed.calls("rmsnorm", reference.baseline, ("rmsnorm", 256, False), [[torch.ones(2, 256)]])
    assert fns is None and "time box" in note["compile_note"]
