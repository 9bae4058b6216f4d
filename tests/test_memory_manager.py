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
from helpers import ROOT

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


def evidence(ws: Path, tolerance: float = 0.01, ran: bool = True, cases=(("big", "PASS", 0.0031),)) -> None:
    """What a GPU run leaves in a workspace: op.json's tolerance and results/results.json."""
    (ws / "results").mkdir(parents=True, exist_ok=True)
    (ws / "op.json").write_text(json.dumps({"tolerance": tolerance}))
    (ws / "results" / "results.json").write_text(json.dumps(
        {"ran": ran, "device": "NVIDIA H200" if ran else None, "not_run_reason": None if ran else "no NVIDIA GPU",
         "cases": [{"name": n, "status": s, "rel_err": e} for n, s, e in cases]}))


def test_seed_create_and_update_commands(tmp_path, cli):
    ws = str(tmp_path / "kernel_opt_demo")
    evidence(tmp_path / "kernel_opt_demo")
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
    assert_refused_unchanged(tmp_path, cli, sets, says)


def assert_refused_unchanged(ws, cli, sets, says) -> None:
    """`update --set ...` on a fresh v0 record is refused in one line naming `says`, and the record is unchanged."""
    mm.create(ws, "v0")
    path = ws / "memory" / "v0.json"
    before = path.read_bytes()
    done = cli("update", "--workspace", str(ws), "--version", "v0", *[x for s in sets for x in ("--set", s)])
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


@pytest.mark.parametrize("version", ["v2\n", "v2 ", "v", "v-1", "../v2", "V2", "v01", "v00"])
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


def test_concurrent_appends_all_land(tmp_path, cli, tools_ws):
    """Twelve `update --append` at once: each read-modify-write holds the memory folder's lock, so none is lost."""
    mm.create(tmp_path, "v0")
    procs = [subprocess.Popen([sys.executable, str(tools_ws / "tools" / "memory_manager.py"), "update", "--workspace",
                               str(tmp_path), "--version", "v0", "--append",
                               f'references={{"path": "ref{i}.md", "source_type": "gpu-wiki"}}'],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(12)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    paths = sorted(r["path"] for r in mm.read(tmp_path, "v0")["references"])
    assert paths == sorted(f"ref{i}.md" for i in range(12))
    assert sorted(p.name for p in (tmp_path / "memory").iterdir()) == ["v0.json"]  # no lock file left to commit


@pytest.mark.parametrize("setup, sets, says", [
    # the commands on a NOT RUN workspace (a CPU machine): no GPU results
    (dict(ran=False), ["correctness.rel_err=0.0001", "correctness.status=PASS"], "results.json says not run"),
    (None, ["correctness.rel_err=0.0001", "correctness.status=PASS"], "results/results.json from a GPU run, and there is none"),
    # op.json's tolerance, which the record's own cannot change
    ({}, ["correctness.rel_err=0.5", "correctness.status=PASS"], "rel_err 0.5 is not below op.json's tolerance 0.01"),
    ({}, ["correctness.tolerance=1e9", "correctness.rel_err=5", "correctness.status=PASS"],
     "correctness.tolerance: 1e+09 is not op.json's 0.01"),
    (dict(cases=()), ["correctness.rel_err=0.001", "correctness.status=PASS"], "0 of 0 cases passed"),
    ({}, ["correctness.rel_err=0.001", "correctness.status=PASS", "correctness.cases_total=0",
          "correctness.cases_passed=0"], "cases_total is 0"),
    (dict(cases=(("a", "PASS", 0.001), ("b", "FAIL", 0.3))), ["correctness.rel_err=0.001", "correctness.status=PASS"],
     "1 of 2 cases passed"),
    (dict(cases=(("a", "PASS", 0.02),)), ["correctness.rel_err=0.001", "correctness.status=PASS"],
     "not below op.json's tolerance 0.01"),
])
def test_pass_needs_the_workspaces_own_gpu_evidence(tmp_path, cli, setup, sets, says):
    """correctness.status=PASS / quality_gate.result=PASS stand on results/results.json from a GPU run, every case
    passed, rel_err below op.json's tolerance; refused in one line, nothing written, where that is missing."""
    if setup is not None:
        evidence(tmp_path, **setup)
    assert_refused_unchanged(tmp_path, cli, sets, says)


@pytest.mark.parametrize("make, says", [
    (lambda p: p.symlink_to("/dev/zero"), "is a character device (a symlink to /dev/zero), not a regular file"),
    (lambda p: p.mkdir(), "is a directory, not a regular file"),
    (lambda p: p.write_text('{"version": "v1", "masked": fa'), "is not valid JSON (Expecting value at line 1"),
])
def test_every_read_is_bounded_and_a_bad_record_named(tmp_path, tools_ws, make, says):
    """A record that is a symlink to /dev/zero is refused by what it is, before a byte is read (it used to be read
    until the OOM killer stopped it); `list` keeps serving the good records and exits 1."""
    mm.create(tmp_path, "v0")
    make(tmp_path / "memory" / "v1.json")
    done = subprocess.run([sys.executable, "-c", "import resource, runpy, sys; "
                           "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
                           f"sys.argv = ['memory_manager.py', 'list', '--workspace', {str(tmp_path)!r}]; "
                           f"sys.path.insert(0, {str(tools_ws / 'tools')!r}); "
                           f"runpy.run_path({str(tools_ws / 'tools' / 'memory_manager.py')!r}, run_name='__main__')"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout.startswith("v0  active"), done.stdout + done.stderr
    assert says in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_list_of_a_missing_workspace_and_a_full_disk_are_one_line(tmp_path, cli, monkeypatch, capsys):
    done = cli("list", "--workspace", str(tmp_path / "nonexistent"))
    assert done.returncode == 2 and done.stderr.startswith("memory_manager: error: --workspace") \
        and "no such folder" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    mm.create(tmp_path, "v0")
    before = (tmp_path / "memory" / "v0.json").read_bytes()

    def full(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mm.os, "fsync", full)
    assert mm.main(["update", "--workspace", str(tmp_path), "--version", "v0", "--set", "performance.latency_us=5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memory_manager: error: cannot write") and "(No space left on device)" in err \
        and len(err.splitlines()) == 1, err
    assert (tmp_path / "memory" / "v0.json").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "memory").iterdir()) == ["v0.json"]
