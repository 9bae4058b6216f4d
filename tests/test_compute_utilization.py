"""compute_utilization: a hand-checked case, the seed's CLI verbatim, and expressions that must be refused."""

from __future__ import annotations

import json
import subprocess
import sys

import compute_utilization as cu
import pytest



def test_hand_checked_h200_bf16():
    # 2^28-element silu_mul: 5 FLOP and 6 bytes (2 reads + 1 write of bf16) per element, in 0.4 ms.
    n = 2**28
    r = cu.compute("H200", "bf16", 5 * n, 6 * n, 0.4, grid_blocks=131072)
    # by hand: 1.610612736e9 B / 4e-4 s = 4026.53 GB/s; / 4800 = 83.886%
    assert r["bandwidth_gbps"] == pytest.approx(4026.531840, rel=1e-9)
    assert r["bandwidth_peak_utilization_pct"] == pytest.approx(83.88608, rel=1e-6)
    # 1.34217728e9 FLOP / 4e-4 s = 3.3554 TFLOP/s; / 989.4 (dense bf16) = 0.33914%
    assert r["tflops"] == pytest.approx(3.3554432, rel=1e-9)
    assert r["tflops_peak_utilization_pct"] == pytest.approx(0.339139, rel=1e-5)
    # intensity 5/6 FLOP/B vs ridge 989.4e12 / 4.8e12 = 206.125 -> memory-bound
    assert r["arithmetic_intensity"] == pytest.approx(5 / 6)
    assert r["ridge_point"] == pytest.approx(206.125, rel=1e-9)
    assert r["bound"] == "memory"
    assert r["waves"] == pytest.approx(131072 / 132)
    assert "Datasheet" in r["sources"]["bandwidth"]["title"]


def test_seed_command_line_verbatim_and_case_insensitive_gpu(tools_ws):
    done = subprocess.run([sys.executable, str(tools_ws / "tools" / "compute_utilization.py"), "--gpu", "h200", "--dtype", "bf16",
                           "--flops-expr", "2*4096*4096*4096", "--bytes-expr", "3*4096*4096*2",
                           "--time-ms", "0.25", "--grid-blocks", "264"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "GPU H200" in done.stdout and "TFLOPS" in done.stdout and "GB/s" in done.stdout
    assert "2.00" in done.stdout  # 264 blocks / 132 SMs = 2.00 waves


def test_names_from_vars():
    names = cu.parse_vars(["M=4096", "N=2*4096", "K=4096"])
    assert cu.evaluate("2*M*N*K", names) == 2 * 4096 * 8192 * 4096
    assert cu.evaluate("ceil(M/3) + max(1, N) - floor(2.5) ** 2", names) == 1366 + 8192 - 4


@pytest.mark.parametrize("expr", [
    "__import__('os').system('touch {marker}')",
    "open('{marker}', 'w')",
    "(1).__class__.__bases__",
    "[x for x in ()]",
    "lambda: 0",
    "M if True else 0",
    "9**9**9",
])
def test_injection_is_refused_and_nothing_runs(tmp_path, expr, tools_ws):
    marker = tmp_path / "pwned"
    text = expr.format(marker=marker)
    with pytest.raises(cu.ExprError):
        cu.evaluate(text, {"M": 1})
    done = subprocess.run([sys.executable, str(tools_ws / "tools" / "compute_utilization.py"), "--gpu", "H200", "--dtype", "bf16", "--flops-expr", text,
                           "--bytes-expr", "1", "--time-ms", "1"], capture_output=True, text=True)
    assert done.returncode == 2 and "compute_utilization: error:" in done.stderr
    assert not marker.exists()


def test_unknown_name_and_gpu_are_clear_errors():
    with pytest.raises(cu.ExprError, match="unknown name 'K'"):
        cu.evaluate("2*K", {"M": 1})
    with pytest.raises(cu.ExprError, match="unknown GPU 'A100'"):
        cu.compute("A100", "bf16", 1, 1, 1)


def test_every_peak_cites_a_source():
    specs = cu.load_specs()
    assert set(specs["gpus"]) == {"H200", "H100", "H20", "MI300X", "MI308X", "MI355X"}
    for name, spec in specs["gpus"].items():
        items = [spec["hbm_bandwidth_gbps"], spec["compute_units"], *spec["dense_tflops"].values()]
        for item in items:
            assert item["value"] is None and item["note"] or item["value"] > 0, name
            assert item["source"]["title"] and item["source"]["url"].startswith("https://"), name
            assert item["source"]["kind"] in {"datasheet", "whitepaper", "product-page", "press", "third-party"}, name
        assert {"bf16", "fp16", "fp32"} <= set(spec["dense_tflops"]), name
    assert specs["gpus"]["H200"]["dense_tflops"]["bf16"]["value"] == 989.4  # 1979 "with sparsity" / 2
    assert specs["gpus"]["MI300X"]["dense_tflops"]["bf16"]["value"] == 1307.4  # not the 2614.9 sparsity figure


def test_missing_vendor_figure_is_refused_not_guessed():
    with pytest.raises(cu.ExprError, match="no cited dense bf16 peak"):
        cu.compute("MI308X", "bf16", 1, 1, 1)


def test_roofline_without_a_cited_peak_is_a_bandwidth_floor():
    # MI308X publishes no compute figure: no ridge, no bound, and the floor is bytes / cited HBM (5300 GB/s)
    r = cu.roofline("MI308X", "bf16", 1e9, 5.3e9)
    assert r["ridge_point"] is None and r["bound"] is None
    assert r["roofline_floor_us"] == pytest.approx(1000.0)
    g = cu.roofline("H200", "bf16", 2 * 8192**3, 3 * 2 * 8192**2)  # 8192^3 GEMM: compute floor 1.111 ms
    assert g["bound"] == "compute" and g["roofline_floor_us"] == pytest.approx(2 * 8192**3 / 989.4e12 * 1e6)


def test_headline_and_command_round_trip(tools_ws):
    op = {"gpu": "H200", "dtype": "bf16", "formulas": {"flops": "2*M*N*K", "bytes": "(M*K + N*K + M*N)*elem_bytes"},
          "cases": [{"name": "small", "timed": True, "vars": {"M": 64, "N": 64, "K": 64, "elem_bytes": 2}},
                    {"name": "big", "timed": True, "vars": {"M": 4096, "N": 4096, "K": 4096, "elem_bytes": 2}},
                    {"name": "huge_untimed", "timed": False, "vars": {"M": 8192, "N": 8192, "K": 8192, "elem_bytes": 2}}]}
    case = cu.headline_case(op)
    assert case["name"] == "big"  # the timed case moving the most bytes
    line = cu.command(op, case, 0.19)
    assert "--var M=4096" in line and "--time-ms 0.19" in line
    done = subprocess.run(["bash", "-c", line.replace("python tools/compute_utilization.py", f"{sys.executable} {tools_ws / 'tools' / 'compute_utilization.py'}")
                           + " --json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    flops, _nbytes = cu.case_work(op, case)
    assert json.loads(done.stdout)["tflops"] == pytest.approx(flops / 0.19e-3 / 1e12)
