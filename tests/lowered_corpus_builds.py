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


# Real model code with N-D rows (annotated.py over real_models.py): RoPE read and written in halves and in
# interleaved lanes with cos/sin broadcast over the heads, and a QK-norm over heads of 128; shapes as on the H200.
N_D = {"llama_rope": "1x64x4x128", "cohere_rope": "1x64x4x128", "qwen3_q_norm": "64x1024"}
ANNOTATED = CORPUS.parent / "annotated.py"


def names() -> list[str]:
    sys.path.insert(0, str(CORPUS.parent))
    import ops

    return [name for name, (kind, _) in ops.EXPECT.items() if kind != "refused"] + list(N_D)


def workspace(root: Path, name: str, target: str) -> Path:
    path = ANNOTATED if name in N_D else CORPUS
    lower.lower_here(str(path), name)
    shapes = {"shapes": N_D[name]} if name in N_D else {}
    return scaffold.workspace(root / target / name, spec.context(pytorch_logic=f"{path}:{name}",
                                                                 gpu=TARGETS[target], run_baseline="no", **shapes))


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
