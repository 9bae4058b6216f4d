"""memory_manager: the seed's commands verbatim, schema validation, refusals that leave the file untouched, masking,
no PASS without evidence, broken records reported without hiding the good ones, durable 0644 writes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

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


@pytest.mark.parametrize("sets, says", [
    # the command on a NOT_RUN record: nothing was measured
    (["correctness.status=PASS", "quality_gate.result=PASS"], "correctness.rel_err: a PASS needs measured evidence"),
    (["correctness.status=PASS"], "correctness.rel_err: a PASS needs measured evidence"),
    (["correctness.status=PASS", "correctness.rel_err=0.001", "quality_gate.result=PASS"],
     "performance.latency_us: a PASS needs measured evidence"),
    (["performance.latency_us=5", "quality_gate.result=PASS"], "correctness.status: a PASS needs measured evidence"),
    (["correctness.status=PASS", "correctness.rel_err=0.5", "correctness.tolerance=0.01"], "rel_err 0.5 >= tolerance 0.01"),
    (["correctness.status=PASS", "correctness.rel_err=0.001", "correctness.cases_total=3", "correctness.cases_passed=2"],
     "2 of 3 cases passed"),
])
def test_pass_without_measured_evidence_is_refused(tmp_path, cli, sets, says):
    mm.create(tmp_path, "v0")
    path = tmp_path / "memory" / "v0.json"
    before = path.read_bytes()
    done = cli("update", "--workspace", str(tmp_path), "--version", "v0", *[x for s in sets for x in ("--set", s)])
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert path.read_bytes() == before


def test_the_schema_itself_carries_the_pass_rule():
    record = mm.blank("v0")
    record["correctness"]["status"] = "PASS"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, SCHEMA)
    record["correctness"]["rel_err"] = 0.001
    jsonschema.validate(record, SCHEMA)
    record["quality_gate"]["result"] = "PASS"
    with pytest.raises(jsonschema.ValidationError):  # no latency measured
        jsonschema.validate(record, SCHEMA)
    record["performance"]["latency_us"] = 12.5
    jsonschema.validate(record, SCHEMA)


def test_version_field_must_be_the_file_name(tmp_path, cli):
    mm.create(tmp_path, "v0")
    before = (tmp_path / "memory" / "v0.json").read_bytes()
    done = cli("update", "--workspace", str(tmp_path), "--version", "v0", "--set", "version=v7")
    assert done.returncode == 2 and 'v0.json must say "version": "v0"' in done.stderr, done.stderr
    assert (tmp_path / "memory" / "v0.json").read_bytes() == before


@pytest.mark.parametrize("version", ["v2\n", "v2 ", "v", "v-1", "../v2", "V2"])
def test_version_is_matched_whole(tmp_path, cli, version):
    done = cli("create", "--workspace", str(tmp_path), "--version", version)
    assert done.returncode == 2 and "is not v<N>" in done.stderr, done.stderr
    assert not (tmp_path / "memory").exists() or not list((tmp_path / "memory").iterdir())


@pytest.mark.parametrize("broken", [
    "truncated", b'{"version": "v1"}', b"[1, 2]", b"\xff\xfe", b"",
])
def test_a_broken_record_is_reported_in_one_line_and_hides_nothing(tmp_path, cli, broken):
    mm.create(tmp_path, "v0")
    mm.create(tmp_path, "v1")
    v1 = tmp_path / "memory" / "v1.json"
    v1.write_bytes(v1.read_bytes()[:120] if broken == "truncated" else broken)
    ws = str(tmp_path)

    def one_line(done, code, prefix):
        assert done.returncode == code and "Traceback" not in done.stderr, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(prefix) and "v1.json is broken" in lines[0], done.stderr

    listed = cli("list", "--workspace", ws)
    one_line(listed, 1, "memory_manager: warning:")
    assert listed.stdout.startswith("v0  active")  # the good record is still served
    newest = cli("read", "--workspace", ws)
    one_line(newest, 1, "memory_manager: warning:")
    assert json.loads(newest.stdout)["version"] == "v0"
    one_line(cli("read", "--workspace", ws, "--version", "v1"), 2, "memory_manager: error:")
    before = v1.read_bytes()
    one_line(cli("update", "--workspace", ws, "--version", "v1", "--set", "performance.latency_us=3"), 2,
             "memory_manager: error:")
    assert v1.read_bytes() == before
    assert cli("update", "--workspace", ws, "--version", "v0", "--set", "performance.latency_us=3").returncode == 0


def test_records_are_written_0644_under_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        mm.create(tmp_path, "v0")
        mm.update(tmp_path, "v0", sets=["performance.latency_us=3"])
        assert stat.S_IMODE((tmp_path / "memory" / "v0.json").stat().st_mode) == 0o644
        os.umask(0o077)  # a stricter umask is respected, as for any new file
        mm.create(tmp_path, "v1")
        assert stat.S_IMODE((tmp_path / "memory" / "v1.json").stat().st_mode) == 0o600
    finally:
        os.umask(old)
    assert not list((tmp_path / "memory").glob(".*.tmp"))


def test_records_are_fsynced_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        mode = os.fstat(fd).st_mode
        events.append("fsync dir" if stat.S_ISDIR(mode) else f"fsync file {os.fstat(fd).st_size}")
        real_fsync(fd)

    def replace(src, dst):
        events.append(f"replace {Path(dst).name}")
        real_replace(src, dst)

    monkeypatch.setattr(mm.os, "fsync", fsync)
    monkeypatch.setattr(mm.os, "replace", replace)
    mm.create(tmp_path, "v0")
    size = (tmp_path / "memory" / "v0.json").stat().st_size
    assert events == [f"fsync file {size}", "replace v0.json", "fsync dir"]
