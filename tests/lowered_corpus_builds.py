"""The lowering corpus's workspaces, and their FlyDSL compiles started in the background as soon as pytest has
collected tests/test_lowering_compiles.py.

Every lowered corpus function gets one workspace per compile target (H200: sm_90a, MI300X: gfx942, MI355X: gfx950),
arranged by tools/scaffold.py from a trace made in this process (tools.lower.lower_here: the corpus is ours). The
AMD targets' workspaces are arranged, and their FlyDSL compiles run, on a background thread, beside the rest of the
suite, which mostly keeps one core busy: the second core does them. Each one is the workspace's own
`test_kernel.py --compile-only` path (compile_only_check: the ISA markers, results/compile_only.json), run in ONE
child per target (tests/flydsl_batch.py): one interpreter per workspace instead cost ~2.3 s of imports each, 70
times.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import flydsl_batch
from tools import lower, scaffold, spec
from tools.lower import codegen

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "lowering_corpus" / "ops.py"
TARGETS = {"sm_90a": "H200", "gfx942": "MI300X", "gfx950": "MI355X"}
HAVE_FLYDSL = importlib.util.find_spec("flydsl") is not None
_started: dict = {}


# Real model code as users annotate it (annotated.py over real_models.py), each on a code path of its own: RoPE read
# and written in halves and in interleaved lanes with cos/sin broadcast over the heads, a QK-norm over heads of 128,
# SD3.5's adaLN ([B, D] shifts and scales over x [B, S, D], two outputs) and Gemma's normalizer (a constant rounded to
# the workspace's dtype in the kernel); shapes as on the H200.
ANNOTATED_SHAPES = {"llama_rope": "1x64x4x128", "cohere_rope": "1x64x4x128", "qwen3_q_norm": "64x1024",
                    "sd35_ada_layer_norm_zero_x": "2x32x1024", "gemma_embed_normalizer": "64x2048",
                    "esm_embeddings_norm_mask": "2x32x1024"}
ANNOTATED = CORPUS.parent / "annotated.py"


# Decode attention from real model code (decode_variants.py): one workspace per distinct code path. Variants whose
# lowered.py differ only in constants, names, comments or the scale (Granite's 1/64 and vLLM's 1/8 against
# Llama's 1/sqrt(D)) compile the same kernel, so the first of each such group stands for the others.
DECODE = CORPUS.parent / "decode_variants.py"


def _code_path(text: str) -> str:
    """lowered.py without what does not change the kernel's code: docstrings, comments, the names and order of the
    inputs, numbers, module constants and scale()."""
    text = re.sub(r'""".*?"""', "", text, flags=re.S)
    text = re.sub(r"#.*", "", text)
    text = re.sub(r"def scale\(d\):\n(    .*\n)+", "", text + "\n")
    lines = [line.rstrip() for line in text.splitlines() if line.strip() and not line.startswith(("SOURCE", "INPUTS",
                                                                                                    "ROLES"))]
    return re.sub(r"^[A-Z_]+ = N$", "", re.sub(r"\b\d+(\.\d+)?(e-?\d+)?\b", "N", "\n".join(lines)), flags=re.M)


@functools.cache
def decode_names() -> list[str]:
    import decode_variants

    seen, picked = set(), []
    for name, outcome in decode_variants.EXPECT.items():
        if outcome != "lower":
            continue
        key = _code_path(codegen.generate(lower.lower_here(str(DECODE), name)["ir"], "bf16"))
        if key not in seen:
            seen.add(key)
            picked.append(name)
    return picked


def names() -> list[str]:
    import ops

    lowered = [name for name, (kind, _) in ops.EXPECT.items() if kind != "refused"]
    return lowered + list(ANNOTATED_SHAPES) + decode_names()


def workspace(root: Path, name: str, target: str) -> Path:
    path = ANNOTATED if name in ANNOTATED_SHAPES else DECODE if name in decode_names() else CORPUS
    lower.lower_here(str(path), name)
    shapes = {"shapes": ANNOTATED_SHAPES[name]} if name in ANNOTATED_SHAPES else {}
    return scaffold.workspace(root / target / name, spec.context(pytorch_logic=f"{path}:{name}",
                                                                 gpu=TARGETS[target], run_baseline="no", **shapes))


def start() -> dict:
    """{"workspaces": {"sm_90a": {name: workspace}}, "amd": {target: future of ({name: workspace}, {workspace:
    result})}}; once a session. The traces and the sm_90a workspaces are made here; the AMD targets' workspaces are
    arranged on the background thread, then compiled there (their traces are cached by then: no torch there)."""
    if not _started:
        root = Path(tempfile.mkdtemp(prefix="kbaseline-lowered-"))
        built = {"sm_90a": {n: workspace(root, n, "sm_90a") for n in names()}}
        pool = ThreadPoolExecutor(max_workers=1)

        def amd(target: str) -> tuple[dict, dict]:
            spaces = {n: workspace(root, n, target) for n in names()}
            return spaces, flydsl_batch.run([(ws, "check") for ws in spaces.values()])

        _started.update(workspaces=built, amd={t: pool.submit(amd, t) for t in ("gfx942", "gfx950") if HAVE_FLYDSL})
    return _started
