"""compute_utilization: a hand-checked case, the seed's CLI verbatim, and expressions and numbers that must be refused."""

from __future__ import annotations

import json
import subprocess
import sys

import compute_utilization as cu
import pytest
from tools import registry
from tools.catalog import InputError

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


def test_seed_command_line_verbatim(tools_ws):
    done = subprocess.run([sys.executable, str(tools_ws / "tools" / "compute_utilization.py"), "--gpu", "H200", "--dtype", "bf16",
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


def refusal(tools_ws, *args: str) -> subprocess.CompletedProcess:
    """The CLI on bad input, in a child bounded in time (20 s) and memory (2 GiB): a hang or a runaway integer
    fails the test instead of the machine. A refusal is exit 2 and one `compute_utilization: error:` line."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    argv = {"--gpu": "H200", "--dtype": "bf16", "--flops-expr": "1", "--bytes-expr": "1", "--time-ms": "1"}
    for flag, value in zip(args[::2], args[1::2]):
        argv[flag] = value
    try:
        done = subprocess.run([sys.executable, str(tools_ws / "tools" / "compute_utilization.py"),
                               *[x for kv in argv.items() for x in kv]], capture_output=True, text=True, timeout=20,
                              preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args} still running after 20 s")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("compute_utilization: error:"), done.stderr
    return done


def test_nested_powers_are_refused_at_once(tools_ws):
    # each power is checked before it is computed: the first 10**64 is already beyond 1e30, so nothing grows
    done = refusal(tools_ws, "--flops-expr", "((((10**64)**64)**64)**64)**64")
    assert "'10**64' is beyond 1e30" in done.stderr


@pytest.mark.parametrize("expr, says", [
    ("((10**64)**64)**2", "beyond 1e30"),
    ("(-8)**0.5", "not a real number"),
    ("ceil(1e308*10)", "beyond 1e30"),
    ("max(1)", "max() takes 2 or more argument(s), got 1"),
    ("+".join(["1"] * 5000), "nested too deeply to parse"),
])
def test_expressions_that_crashed_are_one_line_refusals(tools_ws, expr, says):
    assert says in refusal(tools_ws, "--flops-expr", expr).stderr


def test_long_sums_are_evaluated_without_recursion():
    # 1500 terms parse, and evaluate on an explicit stack (a recursive evaluator passes Python's 1000 frames)
    assert cu.evaluate("+".join(["x"] * 1500), {"x": 2}) == 3000


@pytest.mark.parametrize("args, says", [
    (("--flops-expr", "-5"), "FLOP count is -5"),
    (("--bytes-expr", "0"), "byte count is 0"),
    (("--time-ms", "nan"), "argument --time-ms: 'nan' is not a finite number > 0"),
    (("--time-ms", "inf"), "argument --time-ms: 'inf' is not a finite number > 0"),
    (("--time-ms", "0"), "argument --time-ms: '0' is not a finite number > 0"),
    (("--copy-gbps", "-100"), "argument --copy-gbps: '-100' is not a finite number > 0"),
    (("--grid-blocks", "-5"), "argument --grid-blocks: '-5' is not an integer >= 1"),
])
def test_nonsense_numbers_are_refused(tools_ws, args, says):
    assert says in refusal(tools_ws, *args).stderr


def test_gpu_names_agree_with_the_template(tools_ws):
    # gpu_specs.json is the tool's list; the template refuses what cookiecutter.json's choice lacks, h200 included
    names = list(cu.load_specs()["gpus"])
    for name in names + [n.lower() for n in names] + ["A100", " H200"]:
        try:
            registry.gpu(name)
            template_takes = True
        except InputError:
            template_takes = False
        try:
            cu.gpu_spec(name)
            tool_takes = True
        except cu.ExprError:
            tool_takes = False
        assert tool_takes == template_takes, name
    assert "did you mean H200?" in refusal(tools_ws, "--gpu", "h200").stderr


def test_peak_label_says_dense_once():
    text = cu.format_result(cu.compute("H200", "bf16", 1e12, 1e9, 1.0))
    assert "(BF16 Tensor Core, dense)" in text and "dense, dense" not in text
