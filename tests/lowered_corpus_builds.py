"""The lowering corpus's workspaces, and their FlyDSL compiles started in the background as soon as pytest has
collected tests/test_lowering_compiles.py.

Every lowered corpus function gets one workspace per compile target (H200: sm_90a, MI300X: gfx942, MI355X: gfx950),
arranged by tools/scaffold.py from a trace made in this process (tools.lower.lower_here: the corpus is ours). The
FlyDSL compiles then run on a background thread, beside the rest of the suite, which mostly keeps one core busy: the
second core does them. Each one is the workspace's own `test_kernel.py --compile-only` path (compile_only_check: the
ISA markers, results/compile_only.json), run in ONE child per target (FlyDSL cannot share a process with CuTe DSL)
that imports torch once and each workspace's modules afresh; each compile_only still starts its own FlyDSL compile
child, as in a workspace. One interpreter per workspace instead cost ~2.3 s of imports each, 70 times.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tools import lower, scaffold, spec

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "lowering_corpus" / "ops.py"
TARGETS = {"sm_90a": "H200", "gfx942": "MI300X", "gfx950": "MI355X"}
HAVE_FLYDSL = importlib.util.find_spec("flydsl") is not None
_started: dict = {}


def names() -> list[str]:
    sys.path.insert(0, str(CORPUS.parent))
    import ops

    return [name for name, (kind, _) in ops.EXPECT.items() if kind != "refused"]


def workspace(root: Path, name: str, target: str) -> Path:
    lower.lower_here(str(CORPUS), name)
    return scaffold.workspace(root / target / name, spec.context(pytorch_logic=f"{CORPUS}:{name}",
                                                                 gpu=TARGETS[target], run_baseline="no"))


# The batch child: argv = workspaces; for each, its test_kernel.py's compile_only_check (what `--compile-only` runs),
# with that workspace's modules imported afresh; prints {workspace: {"returncode", "output"}} as JSON, last line.
_BATCH = """
import contextlib, importlib.util, io, json, os, sys, traceback
from pathlib import Path
results = {}
for ws in sys.argv[1:]:
    for name in ("test_kernel", "kernel", "host", "flydsl_runtime", "flydsl_lowered", "lowered", "pointwise",
                 "reference", "user_logic"):
        sys.modules.pop(name, None)
    os.chdir(ws)
    sys.path.insert(0, ws)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            spec = importlib.util.spec_from_file_location("test_kernel", Path(ws) / "test_kernel.py")
            harness = importlib.util.module_from_spec(spec)
            sys.modules["test_kernel"] = harness
            spec.loader.exec_module(harness)
            rc = harness.compile_only_check(Path(ws) / "build")
    except Exception:
        rc, out = -1, io.StringIO(out.getvalue() + traceback.format_exc())
    sys.path.remove(ws)
    results[ws] = {"returncode": rc, "output": out.getvalue()[-4000:]}
print(json.dumps(results))
"""


def _compile_batch(spaces: list[Path]) -> dict:
    """{workspace: {"returncode", "output"}} of each workspace's compile-only check, all in one child."""
    done = subprocess.run([sys.executable, "-c", _BATCH, *map(str, spaces)], capture_output=True, text=True,
                          timeout=3600)
    if done.returncode:
        return {ws: {"returncode": -1, "output": (done.stdout + done.stderr)[-4000:]} for ws in spaces}
    results = json.loads(done.stdout.strip().splitlines()[-1])
    return {ws: results[str(ws)] for ws in spaces}


def start() -> dict:
    """{target: {name: workspace}} and the background FlyDSL compiles ({target: future of {workspace: result}});
    once a session."""
    if not _started:
        root = Path(tempfile.mkdtemp(prefix="kbaseline-lowered-"))
        built = {t: {n: workspace(root, n, t) for n in names()} for t in TARGETS}
        pool = ThreadPoolExecutor(max_workers=1)
        compiled = {t: pool.submit(_compile_batch, list(built[t].values())) for t in ("gfx942", "gfx950")
                    if HAVE_FLYDSL}
        _started.update(workspaces=built, compiled=compiled)
    return _started
