"""The lowering corpus's workspaces, and their FlyDSL compiles started in the background as soon as pytest has
collected tests/test_lowering_compiles.py.

Every lowered corpus function gets one workspace per compile target (H200: sm_90a, MI300X: gfx942, MI355X: gfx950),
arranged by tools/scaffold.py from a trace made in this process (tools.lower.lower_here: the corpus is ours). The
FlyDSL compiles (a child each: FlyDSL cannot share a process with CuTe DSL) then run one at a time on a background
thread, beside the rest of the suite, which mostly keeps one core busy: the second core does them.
"""

from __future__ import annotations

import importlib.util
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


def _compile_only(ws: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "test_kernel.py", "--compile-only"], cwd=ws, capture_output=True, text=True,
                          timeout=900)


def start() -> dict:
    """{target: {name: workspace}} and the background FlyDSL compiles ({(target, name): future}); once a session."""
    if not _started:
        root = Path(tempfile.mkdtemp(prefix="kbaseline-lowered-"))
        built = {t: {n: workspace(root, n, t) for n in names()} for t in TARGETS}
        pool = ThreadPoolExecutor(max_workers=1)
        futures = {(t, n): pool.submit(_compile_only, ws) for t in ("gfx942", "gfx950") if HAVE_FLYDSL
                   for n, ws in built[t].items()}
        _started.update(workspaces=built, futures=futures)
    return _started
