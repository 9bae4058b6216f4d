"""memory_manager: the seed's commands verbatim, schema validation, refusals that leave the file untouched, masking."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import memory_manager as mm
import pytest
from conftest import ROOT

SCHEMA = json.loads((ROOT / "reference" / "v_iteration.schema.json").read_text())


@pytest.fixture
def cli(tools_ws):
    """The workspace's `python tools/memory_manager.py ...`, verbatim."""
    def run(*args):
        return subprocess.run([sys.executable, str(tools_ws / "tools" / "memory_manager.py"), *args], capture_output=True,
                              text=True)
    return run


def test_schema_is_a_real_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_seed_create_and_update_commands(tmp_path, cli):
    ws = str(tmp_path / "kernel_opt_demo")
    assert cli("create", "--workspace", ws, "--version", "v0").returncode == 0
    done = cli("update", "--workspace", ws, "--version", "v0",
               "--set", "performance.latency_us=384.2",
               "--set", "performance.tflops=3.49",
               "--set", "performance.bandwidth_gbps=4190.5",
               "--set", "performance.tflops_peak_utilization_pct=0.35",
               "--set", "performance.bandwidth_peak_utilization_pct=87.3",
               "--set", "optimization.action_category=baseline",
               "--set", "optimization.action_description=128-bit vectorized elementwise kernel",
               "--set", "correctness.rel_err=0.0031",
               "--set", "correctness.status=PASS",
               "--set", "quality_gate.result=PASS")
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "kernel_opt_demo" / "memory" / "v0.json").read_text())
    jsonschema.validate(record, SCHEMA)
    assert record["performance"]["latency_us"] == 384.2 and record["correctness"]["status"] == "PASS"
    assert record["masked"] is False


@pytest.mark.parametrize("bad", [
    "performance.latencyus=1",           # unknown field
    "nonsense=1",                        # unknown top-level field
    "performance.latency_us=fast",       # wrong type
    "performance.latency_us=-3",         # below the schema's minimum
    "correctness.status=MAYBE",          # not in the enum
    "masked=perhaps",                    # not a boolean
    "performance=1",                     # an object, not a leaf
    "performance.latency_us",            # not FIELD=VALUE
])
def test_bad_set_is_refused_and_file_left_byte_identical(tmp_path, bad, cli):
    mm.create(tmp_path, "v0")
    path = tmp_path / "memory" / "v0.json"
    before = path.read_bytes()
    done = cli("update", "--workspace", str(tmp_path), "--version", "v0",
               "--set", "performance.latency_us=5", "--set", bad)
    assert done.returncode == 2 and "memory_manager: error:" in done.stderr
    assert path.read_bytes() == before


def test_append_arrays_and_refuse_bad_entries(tmp_path):
    mm.create(tmp_path, "v0")
    mm.update(tmp_path, "v0", appends=['references={"path": "/tmp/gpu-wiki/README.md", "source_type": "gpu-wiki"}',
                                       'pitfalls_and_fixes={"pitfall": "p", "fix": "f"}'])
    record = mm.read(tmp_path, "v0")
    assert record["references"][0]["source_type"] == "gpu-wiki" and len(record["pitfalls_and_fixes"]) == 1
    before = (tmp_path / "memory" / "v0.json").read_bytes()
    with pytest.raises(mm.MemoryRecordError):
        mm.update(tmp_path, "v0", appends=['references={"path": 3}'])
    assert (tmp_path / "memory" / "v0.json").read_bytes() == before


def test_masked_records_are_skipped(tmp_path, cli):
    mm.create(tmp_path, "v0")
    mm.create(tmp_path, "v1")
    mm.update(tmp_path, "v1", sets=["optimization.action_category=tiling"])
    assert mm.read(tmp_path)["version"] == "v1"
    assert cli("mask", "--workspace", str(tmp_path), "--version", "v1").returncode == 0
    assert mm.read(tmp_path)["version"] == "v0"
    assert mm.read(tmp_path, "v1") is None
    assert "no unmasked record" not in cli("read", "--workspace", str(tmp_path)).stdout
    mm.set_mask(tmp_path, "v1", False)
    assert mm.read(tmp_path)["version"] == "v1"


def test_create_refuses_to_overwrite(tmp_path, cli):
    mm.create(tmp_path, "v0")
    assert cli("create", "--workspace", str(tmp_path), "--version", "v0").returncode == 2
    assert cli("create", "--workspace", str(tmp_path), "--version", "v0", "--force").returncode == 0
