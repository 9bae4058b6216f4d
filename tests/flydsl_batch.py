"""FlyDSL compiles of many workspaces in one child process: what every FlyDSL compile test shares.

FlyDSL cannot share a process with CuTe DSL, so the tests compile in children. One child per workspace would import
torch and the workspace harness again for every compile (~2.3 s each); one child per batch imports them once and each
workspace's own modules afresh (kernel, host, its runtime, lowered.py ...), in the workspace's folder, as the
workspace's own CLI would. A batch of one target starts in that target's compile-only environment (rocm_env), so each
compile_only compiles in the child itself (rocm_env.compiles_here) instead of starting one more interpreter per compile;
a batch that mixes targets compiles each in a child of its own, as a workspace does.

A job is (workspace, what): "check" runs the workspace's `test_kernel.py --compile-only` path (compile_only_check:
the ISA markers, results/compile_only.json) and gives {"returncode"}; a case dict (or None: op.json's first case)
runs kernel.compile_only(case, "build") and gives {"isa"}, with {"describe": kernel.describe(case)} besides when
asked. Every result also has "output" (what the job printed) and, when it raised or the child died, "error".
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import rocm_env

_CHILD = """
import contextlib, importlib, importlib.util, io, json, os, sys, traceback
from pathlib import Path
MODULES = ("test_kernel", "kernel", "host", "flydsl_runtime", "flydsl_lowered", "lowered", "pointwise", "reference",
           "user_logic")
results = {}
for ws, what, describe in json.loads(sys.argv[1]):
    for name in MODULES:
        sys.modules.pop(name, None)
    os.chdir(ws)
    sys.path.insert(0, ws)
    out, result = io.StringIO(), {}
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            if what == "check":
                spec = importlib.util.spec_from_file_location("test_kernel", Path(ws) / "test_kernel.py")
                harness = sys.modules["test_kernel"] = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(harness)
                result["returncode"] = harness.compile_only_check(Path(ws) / "build")
            else:
                kernel = importlib.import_module("kernel")
                case = what or kernel.OP_SPEC["cases"][0]
                result["isa"] = kernel.compile_only(case, "build")
                if describe:
                    result["describe"] = kernel.describe(case)
    except Exception:
        result["error"] = traceback.format_exc()
    sys.path.remove(ws)
    results[ws] = {**result, "output": out.getvalue()[-4000:]}
print(json.dumps(results))
"""


def run(jobs: list[tuple[Path, object]], describe: bool = False, timeout: float = 3600) -> dict[Path, dict]:
    """{workspace: result} of each (workspace, "check" | case | None) job, all in one child (see the docstring)."""
    targets = {json.loads((Path(ws) / "op.json").read_text())["target"] for ws, _ in jobs}
    env = rocm_env.rocm_env(targets.pop()) if len(targets) == 1 else None
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([[str(ws), what, describe] for ws, what in jobs])],
                          capture_output=True, text=True, timeout=timeout, env=env)
    if done.returncode:
        return {ws: {"error": (done.stdout + done.stderr)[-4000:], "output": ""} for ws, _ in jobs}
    results = json.loads(done.stdout.strip().splitlines()[-1])
    return {ws: results[str(ws)] for ws, _ in jobs}


def isa_of(jobs: list[tuple[Path, object]]) -> dict[Path, str]:
    """{workspace: ISA} of compile jobs; any job's failure fails the caller's test with its traceback."""
    results = run(jobs)
    failed = {str(ws): r["error"] for ws, r in results.items() if "error" in r}
    assert not failed, failed
    return {ws: r["isa"] for ws, r in results.items()}


_BACKGROUND: dict[str, dict] = {}
_CHILDREN: dict[tuple[str, ...], Future] = {}
_POOL = ThreadPoolExecutor(max_workers=1)  # one batch at a time beside the main test process: the CI has 2 cores


def background(key: str, jobs_by_arch: dict[str, list[tuple[Path, object]]], describe: bool = False) -> dict:
    """{arch: future of run(jobs, describe)} for jobs that a test module lays out once a session (by key), started on a
    shared background pool: conftest calls each collected module's start_compiles() once pytest has collected it (in
    file order, the order the modules' tests run), so the FlyDSL compiles run beside the CuTe DSL tests in the main
    process instead of before the module's tests. results() waits for them."""
    if key not in _BACKGROUND:
        _BACKGROUND[key] = {arch: _POOL.submit(run, jobs, describe) for arch, jobs in jobs_by_arch.items()}
    return _BACKGROUND[key]


def child(argv: list[str], timeout: float = 900) -> Future:
    """The future of one FlyDSL child, `subprocess.run(argv)` (its output captured as text), on the same background
    pool, once a session per argv. A test module whose tests are such children (the numpy models, run() with HIP
    stubbed) starts them in its start_compiles(), so they run on the second core while the main process runs the
    tests before them; a test started alone (`-k`) starts its own here and waits for it."""
    key = tuple(map(str, argv))
    if key not in _CHILDREN:
        _CHILDREN[key] = _POOL.submit(subprocess.run, list(key), capture_output=True, text=True, timeout=timeout)
    return _CHILDREN[key]


def results(futures: dict) -> dict:
    """{arch: {workspace: result}} of background()'s futures, once they are done."""
    return {arch: future.result() for arch, future in futures.items()}
