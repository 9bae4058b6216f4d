"""Roofline: ceilings from the cited and measured specs, one point per measured case, the report's embed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import report
import roofline
from compute_utilization import load_specs
from helpers import ROOT, SPECS_PATH, WS_TEMPLATE

SPECS = load_specs(SPECS_PATH)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_ws(tmp_path, dtype="bf16", results=None):
    ws = tmp_path / "ws"
    (ws / "reference").mkdir(parents=True)
    shutil.copy(ROOT / "reference" / "gpu_specs.json", ws / "reference")
    op = {"op": "silu_mul", "pattern": "elementwise", "gpu": "H200", "dtype": dtype,
          "formulas": {"flops": "5*numel", "bytes": "3*numel*elem_bytes"},
          "cases": [{"name": "rep_a", "vars": {"numel": 1 << 28, "elem_bytes": 2}, "timed": True},
                    {"name": "bnd_7", "vars": {"numel": 7, "elem_bytes": 2}, "timed": False}]}
    (ws / "op.json").write_text(json.dumps(op))
    if results:
        (ws / "results").mkdir()
        (ws / "results" / "results.json").write_text(json.dumps(results))
    return ws, op


RAN = {"ran": True, "device": "NVIDIA H200", "device_copy": {"gbps": 4200.0},
       "cases": [{"name": "rep_a", "status": "PASS", "latency_us": 400.0, "torch_latency_us": 500.0},
                 {"name": "bnd_7", "status": "PASS"}]}
NOT_RUN = {"ran": False, "not_run_reason": "no NVIDIA GPU", "cases": [{"name": "rep_a", "status": "NOT_RUN"}]}


def test_ceilings_cite_and_measure():
    labels = [c["label"] for c in roofline.ceilings({"gpu": "H200", "dtype": "bf16"}, SPECS, RAN)]
    assert labels == ["HBM 4800 GB/s (cited)", "device copy 4200 GB/s (this run)", "dense bf16 989.4 TFLOP/s (cited)",
                      "cublas bf16 8192 678 TFLOP/s (measured 2026-11-30)"]
    fp32 = roofline.ceilings({"gpu": "H200", "dtype": "fp32"}, SPECS, None)
    assert [c["value"] for c in fp32] == [4800, 4273, 67.0]  # no bf16 matmul rate on an fp32 plot; copy from specs


def test_measured_cases_become_points(tmp_path):
    ws, op = make_ws(tmp_path, results=RAN)
    (pt,) = roofline.points(op, RAN)  # bnd_7 has no latency: no point
    assert pt["intensity"] == pytest.approx(5 / 6)
    assert pt["tflops"] == pytest.approx(5 * (1 << 28) / 400e-6 / 1e12)
    assert pt["torch_tflops"] == pytest.approx(5 * (1 << 28) / 500e-6 / 1e12)
    done = roofline.plot(ws, op, RAN, SPECS)
    assert done["points"] == 1 and done["path"].read_bytes()[:8] == PNG_MAGIC
    assert report.roofline_section(done)[2] == "![roofline](results/roofline.png)"


def test_not_run_draws_only_ceilings_and_says_so(tmp_path):
    ws, op = make_ws(tmp_path)
    done = roofline.plot(ws, op, NOT_RUN, SPECS)
    assert done["points"] == 0 and done["path"].is_file()
    assert done["note"] == "No points were measured (not run: no NVIDIA GPU); only the ceilings are drawn."
    assert roofline.points(op, NOT_RUN) == []


def test_no_matplotlib_removes_a_stale_plot(tmp_path, monkeypatch):
    ws, op = make_ws(tmp_path)
    (ws / "results").mkdir()
    (ws / "results" / "roofline.png").write_bytes(PNG_MAGIC)

    def no_mpl(*args):
        raise ImportError("No module named 'matplotlib'")

    monkeypatch.setattr(roofline, "draw", no_mpl)
    done = roofline.plot(ws, op, NOT_RUN, SPECS)
    assert done["path"] is None and not (ws / "results" / "roofline.png").exists()
    section = "\n".join(report.roofline_section(done))
    assert "![roofline]" not in section and "No roofline plot: not drawn: matplotlib is not installed" in section


def test_cli(tmp_path):
    ws, _ = make_ws(tmp_path, results=RAN)
    done = subprocess.run([sys.executable, str(WS_TEMPLATE / "tools" / "roofline.py"), "--workspace", str(ws)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 measured case(s) on NVIDIA H200" in done.stdout and (ws / "results" / "roofline.png").is_file()
