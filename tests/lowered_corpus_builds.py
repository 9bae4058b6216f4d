"""The lowering corpus's workspaces, and their FlyDSL compiles started in the background as soon as pytest has
collected tests/test_lowering_compiles.py.

Every lowered corpus function gets one workspace per compile target (H200: sm_90a, MI300X: gfx942, MI355X: gfx950),
arranged by tools/scaffold.py from a trace made in this process (tools.lower.lower_here: the corpus is ours). The
FlyDSL compiles then run on a background thread, beside the rest of the suite, which mostly keeps one core busy: the
second core does them. Each one is the workspace's own `test_kernel.py --compile-only` path (compile_only_check: the
ISA markers, results/compile_only.json), run in ONE child per target (tests/flydsl_batch.py): one interpreter per
workspace instead cost ~2.3 s of imports each, 70 times.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import flydsl_batch
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


def start() -> dict:
    """{target: {name: workspace}} and the background FlyDSL compiles ({target: future of {workspace: result}});
    once a session."""
    if not _started:
        root = Path(tempfile.mkdtemp(prefix="kbaseline-lowered-"))
        built = {t: {n: workspace(root, n, t) for n in names()} for t in TARGETS}
        pool = ThreadPoolExecutor(max_workers=1)
        compiled = {t: pool.submit(flydsl_batch.run, [(ws, "check") for ws in built[t].values()])
                    for t in ("gfx942", "gfx950") if HAVE_FLYDSL}
        _started.update(workspaces=built, compiled=compiled)
    return _started
