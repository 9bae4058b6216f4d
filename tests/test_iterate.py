"""After V0, on the CPU: tools/iterate.py's honesty and bookkeeping, and baked workspaces imported as packages.

- with no GPU, iterate.py says NOT RUN, exits 2 and writes nothing (no record, no commit, no PASS);
- a fake V1 made from a second kernel.py goes through iterate's own bookkeeping (numbering after the highest
  unmasked record, the parent's commit read back, memory/v1.json through the schema, the README table, the plot,
  the "V1: ..." commit); a deliberate regression as V2 is masked with its reason and not committed, and the next
  attempt takes v2 again while the masked one is kept in memory/masked/. The measurements are the test's own
  stand-in for a GPU run (results/results.json written as the harness would), never a claim about a kernel;
- four baked workspaces (one per pattern) import side by side from their parent folders, each with its own op spec
  and its own torch custom op, which torch.library.opcheck passes on the CPU (its CPU path is the reference), and
  torch.compile(fullgraph=True) takes two of them in one graph.

Each check runs in a child process, inside a copy of a matrix bake (the session's bakes are reused, never changed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers import read_json

FAKE_VERSIONS = textwrap.dedent('''
    import json, subprocess, sys
    from pathlib import Path
    ws = Path.cwd()
    sys.path.insert(0, str(ws / "tools"))
    import iterate, memory_manager, run_baseline, versions
    op = json.loads((ws / "op.json").read_text())
    head = iterate.compute_utilization.headline_case(op)["name"]

    def fake_gpu_run(version, speedup, low, high):
        """What _measure returns after a GPU run, made up by this test (results/results.json written as the harness does)."""
        cases = [{"name": c["name"], "role": c["role"], "dims": c["dims"], "status": "PASS", "rel_err": 1e-3}
                 for c in op["cases"]]
        for r in cases:
            if r["name"] == head:
                r.update(latency_us=100.0, torch_latency_us=150.0, speedup_vs_torch=1.5, torch_compile_latency_us=120.0,
                         speedup_vs_torch_compile=1.2, call_us=101.0, torch_call_us=151.0, call_bound="gpu")
        payload = {"ran": True, "device": "test stand-in", "torch": "-", "date": "2026-12-04T00:00:00+00:00",
                   "tolerance": op["tolerance"], "cases": cases, "all_passed": True}
        (ws / "results" / "results.json").write_text(json.dumps(payload))
        version_, parent = versions.next_version(ws)
        assert version_ == version, (version_, version)
        commit, found = versions.commit_of(ws, parent)
        ab = {head: {"speedup": speedup, "speedup_low": low, "speedup_high": high, "latency_us": 100.0,
                     "parent_latency_us": 100.0 * speedup, "rounds": 200, "torch_latency_us": 150.0,
                     "speedup_vs_torch": 1.5, "torch_compile_latency_us": 120.0, "speedup_vs_torch_compile": 1.2,
                     "call_us": 101.0}}
        return {"results": payload, "ab": ab, "util": run_baseline.utilization_rows(op, payload),
                "parent": {"version": parent, "commit": commit, "found": found, "changed": ["kernel.py"]},
                "profile": {"tool": "none", "bottleneck": "not measured", "metrics": {}, "notes": "test stand-in"},
                "isa_metrics": None}

    def subjects():
        return subprocess.run(["git", "log", "--format=%s"], capture_output=True, text=True).stdout.splitlines()

    # the order statistics of the A/B interval
    med, lo, hi = iterate.median_interval([1.0 + i / 100 for i in range(101)])
    assert abs(med - 1.5) < 1e-9 and lo < med < hi and hi - lo < 0.25, (med, lo, hi)

    # V1: a second kernel.py, faster than its parent (v0, read back from the scaffold commit)
    (ws / "kernel.py").write_text((ws / "kernel.py").read_text() + "\\n# V1: the test's second kernel\\n")
    assert iterate.record_version(ws, op, "v1", fake_gpu_run("v1", 1.10, 1.08, 1.12), "a faster kernel", "tiling") == 0
    v1 = memory_manager.read(ws, "v1")
    assert v1["quality_gate"]["result"] == "PASS" and not v1["masked"], v1["quality_gate"]
    assert v1["versus_parent"]["version"] == "v0" and v1["versus_parent"]["speedup"] == 1.10
    assert v1["optimization"]["parent_version"] == "v0" and v1["optimization"]["action_category"] == "tiling"
    assert v1["performance"]["speedup_vs_torch_compile"] == 1.2, v1["performance"]
    assert subjects()[0] == "V1: a faster kernel", subjects()
    assert versions.commit_of(ws, "v1")[0] == subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                                                            text=True).stdout.strip()

    # V2: a deliberate regression beyond its spread: masked, with its reason, not committed
    (ws / "kernel.py").write_text((ws / "kernel.py").read_text() + "# V2: slower\\n")
    assert iterate.record_version(ws, op, "v2", fake_gpu_run("v2", 0.90, 0.89, 0.91), "a slower kernel", "other") == 1
    v2 = json.loads((ws / "memory" / "v2.json").read_text())
    assert v2["masked"] and v2["quality_gate"]["result"] == "FAIL", v2["quality_gate"]
    assert "slower than v1 beyond the measured spread" in v2["quality_gate"]["failure_reason"]
    assert memory_manager.read(ws, "v2") is None and memory_manager.read(ws)["version"] == "v1"
    assert subjects()[0] == "V1: a faster kernel", subjects()

    # a slowdown inside the spread passes; the masked v2 is kept aside, and the number is v2 again
    assert iterate.record_version(ws, op, "v2", fake_gpu_run("v2", 0.99, 0.97, 1.01), "noise", "other") == 0
    assert len(list((ws / "memory" / "masked").glob("v2.*.json"))) == 1
    assert subjects()[0] == "V2: noise" and versions.next_version(ws) == ("v3", "v2")
    readme = (ws / "README.md").read_text()
    assert "## Versions" in readme and "| v1 | a faster kernel | tiling | 100.0 | 1.100x" in readme, readme
    assert (ws / "results" / "versions.png").stat().st_size > 1000
    assert (ws / "reports" / "v1_report.md").is_file()
    records, broken = memory_manager.list_records(ws)
    assert [v for v, _ in records] == ["v0", "v1", "v2"] and not broken
    print("fake versions ok")
''')

SIDE_BY_SIDE = textwrap.dedent('''
    import importlib, math, sys, torch
    parents, names = sys.argv[1::2], sys.argv[2::2]
    sys.path[:0] = parents
    mods = [importlib.import_module(n) for n in names]
    for m in mods:  # each its own spec, its own modules
        assert m.OP["op_name"] == m.__name__ == m.host.OP["op_name"], (m.__name__, m.host.OP["op_name"])
        assert m.reference.host is m.host and m.host.__name__ == m.__name__ + ".host", m.host.__name__
    assert len({m.OP["pattern"] for m in mods}) == len(mods)
    assert not {"host", "kernel", "reference", "cutedsl_runtime", "lowered", "user_logic"} & set(sys.modules)
    for m in mods:  # the smallest case of each, on the CPU (the op's CPU path is the reference)
        small = min(m.OP["cases"], key=lambda c: math.prod(c["dims"]))
        inputs = m.reference.make_inputs(small, getattr(torch, m.OP["torch_dtype"]), "cpu", 0)
        torch.library.opcheck(getattr(torch.ops, m.__name__).run, tuple(inputs))
    # no gradient: a floating input that requires grad is refused in grad mode, and runs under no_grad
    op, m = getattr(torch.ops, mods[0].__name__).run, mods[0]
    inputs = m.reference.make_inputs(min(m.OP["cases"], key=lambda c: math.prod(c["dims"])),
                                     getattr(torch, m.OP["torch_dtype"]), "cpu", 0)
    grad = [t.clone().requires_grad_(True) if t.is_floating_point() else t for t in inputs]
    try:
        op(*grad)
    except RuntimeError as err:
        assert "has no gradient" in str(err), err
    else:
        raise AssertionError("an input that requires grad was not refused")
    with torch.no_grad():
        op(*grad)
    print("opcheck ok")
''')


def _copy(baked: Path, dest: Path) -> Path:
    shutil.copytree(baked, dest, symlinks=True)
    return dest


def _run(code: str, cwd: Path, *args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_iterate_is_not_run_without_a_gpu(matrix, tmp_path):
    ws = _copy(matrix[("H200", "softmax")].project_path, tmp_path / "softmax_h200")
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ws, capture_output=True, text=True).stdout
    done = subprocess.run([sys.executable, "tools/iterate.py", "--action", "two rows per CTA", "--category", "tiling"],
                          cwd=ws, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "NOT RUN" in done.stdout and "PASS" not in done.stdout + done.stderr
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ws, capture_output=True, text=True).stdout
    assert after == before and not (ws / "memory" / "v1.json").exists()
    assert read_json(ws / "memory" / "v0.json")["quality_gate"]["result"] == "NOT_RUN"
    bad = subprocess.run([sys.executable, "tools/iterate.py", "--action", "x", "--category", "baseline"], cwd=ws,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--category" in bad.stderr


def test_fake_versions_bookkeeping_masking_and_schema(matrix, tmp_path):
    ws = _copy(matrix[("H200", "softmax")].project_path, tmp_path / "softmax_h200")
    done = _run(FAKE_VERSIONS, ws)
    assert done.returncode == 0 and "fake versions ok" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


def test_workspaces_import_side_by_side_and_opcheck(matrix):
    """Four baked workspaces import as packages in one process, each with its own spec and modules; each one's
    torch.ops.<name>.run passes torch.library.opcheck on the CPU, and refuses an input that requires grad."""
    cells = [matrix[("H200", op)].project_path for op in ("softmax", "matmul", "gqa", "silu_mul")]
    args = [str(a) for p in cells for a in (p.parent, p.name)]
    done = _run(SIDE_BY_SIDE, Path.cwd(), *args)
    assert done.returncode == 0 and "opcheck ok" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


def test_custom_ops_compile_in_one_graph(matrix, tmp_path):
    code = textwrap.dedent('''
        import sys, torch
        sys.path[:0] = sys.argv[1:3]
        import softmax_h200 as a, silu_mul_h200 as b
        x = torch.randn(4, 64, dtype=torch.bfloat16)
        y = torch.randn(4, 64, dtype=torch.bfloat16)

        def layer(x, y):
            return torch.ops.softmax_h200.run(torch.ops.silu_mul_h200.run(x, y))

        got = torch.compile(layer, fullgraph=True, backend="aot_eager")(x, y)
        assert torch.allclose(got.float(), layer(x, y).float()) and got.dtype == torch.bfloat16
        print("compiled ok", a.OP["op"], b.OP["op"])
    ''')
    parents = [str(matrix[("H200", op)].project_path.parent) for op in ("softmax", "silu_mul")]
    done = _run(code, tmp_path, *parents)
    assert done.returncode == 0 and "compiled ok softmax silu_mul" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]


def test_package_is_in_every_bake(matrix):
    for baked in matrix.values():
        assert (baked.project_path / "__init__.py").is_file() and (baked.project_path / "tools" / "iterate.py").is_file()
    assert json.loads((next(iter(matrix.values())).project_path / "op.json").read_text())["op_name"]
