"""A lowered decode-attention variant's facts for the template (no torch): op.json's entry, its tensors, its plan's
Phase-1 semantics, and its key range in plain Python.

tools/lower/attention.py (in the tracing child) makes the program; this module is what the bake reads of it, beside
tools/lower/__init__.py's row and GEMM forms. The program (class "decode_attention"):

    inputs   [{"name", "role", "kind"}] in signature order; role (= kind) q | k | v | lens | head | batch
    nodes    IR nodes (tools/lower/ir.py) over the leaves s, b, h, kpos, length and the vectors' names
    score    a reference (or "s": the scaled q.k itself); keep: [references] (conjuncts); sink: a reference or None
    range    {"lo", "hi"}: references or None (None: the kernel's own 0 and length); window: int or None
    scale    {"k", "p"}: the factor k * D^p on q.k
    outputs  one: [B, Hq, D] in q's dtype
"""

from __future__ import annotations

from tools.lower import ir

ROLE_WORDS = {"q": "q [B, Hq, D], one query token per sequence", "k": "the key cache [B, S, Hkv, D]",
              "v": "the value cache [B, S, Hkv, D]", "lens": "seq_lens [B] int32 (1 <= len <= S)",
              "head": "one value per query head [Hq]", "batch": "one value per sequence [B]"}


# The comparisons on plain numbers (the vocabulary folds arithmetic; a comparison's result is a condition, which the
# row converter keeps as a node): a key range evaluated on the host, and attention.py's where-on-constants rule.
ORDER = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
         "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def is_decode(program: dict) -> bool:
    return program.get("class") == "decode_attention"


def value(program: dict, ref, env: dict) -> float:
    """A reference's value in plain Python (the leaves in `env`), through the vocabulary's constant folds."""
    if not isinstance(ref, str):
        return float(ref)
    if ref in env:
        return env[ref]
    node = next(n for n in program["nodes"] if n["id"] == ref)
    spec = ir.VOCABULARY[node["op"]]
    args = [value(program, a, env) for a in node["args"]]
    got = spec.fold(*args) if spec.fold is not None else ORDER[node["op"]](*args)
    env[ref] = float(got)
    return env[ref]


def key_range(program: dict, length: int, b: int = 0) -> tuple[int, int]:
    """[lo, hi) of the keys the kernel reads for a sequence of `length` (clamped to [0, length))."""
    env = {"length": float(length), "b": float(b)}
    lo = value(program, program["range"]["lo"], dict(env)) if program["range"]["lo"] is not None else 0.0
    hi = value(program, program["range"]["hi"], dict(env)) if program["range"]["hi"] is not None else float(length)
    lo, hi = max(0, int(lo)), min(length, int(hi))
    return lo, max(lo, hi)


def read_len(program: dict, seq_lens: list[int]) -> int:
    """The keys a case reads over all its sequences: sum of hi - lo (a window reads fewer than total_len)."""
    return sum(hi - lo for lo, hi in (key_range(program, n, b) for b, n in enumerate(seq_lens)))


def fit_case(program: dict, case: dict) -> dict:
    """A decode case with the variant's `read_len` (the keys its key range reads) among its formula variables."""
    return {**case, "vars": {**case["vars"], "read_len": read_len(program, case["seq_lens"])}}


def vectors(program: dict) -> list[dict]:
    return [i for i in program["inputs"] if i["role"] in ("head", "batch")]


def op_spec(program: dict) -> dict:
    """op.json's entry, in the form of the built-in "gqa" (tools/patterns/decode_attention): K and V read for the
    keys the variant attends (read_len), q read and out written once, the vectors once."""
    vec = " + ".join(("Hq" if i["role"] == "head" else "B") + "*4" for i in vectors(program))
    score_steps = len(program["nodes"]) if program["score"] != "s" else 0  # an upper bound: keep/range share nodes
    parts = [w for w, on in (("a score program", program["score"] != "s"), (f"{len(program['keep'])} mask(s)",
                                                                          bool(program["keep"])),
                             ("a key range", program["range"]["lo"] is not None or program["range"]["hi"] is not None),
                             ("a sink logit", program["sink"] is not None)) if on]
    return {"inputs": [i["name"] for i in program["inputs"]],
            "flops": "4*Hq*D*read_len" + (f" + {score_steps}*Hq*read_len" if score_steps else ""),
            "bytes": "2*Hkv*D*read_len*elem_bytes + 2*B*Hq*D*elem_bytes + 4*B" + (f" + {vec}" if vec else ""),
            "out": "[B, Hq, D]", "params": {"scale": None},
            "math": f"the user's `{program['function']}` ({program['file']}), lowered: decode attention with "
                    + (", ".join(parts) if parts else "its own scale") + f"; scale = {scale_words(program)}",
            "flops_note": "q.k and p.v: 2 FLOP each per (query head, key read, d); one FLOP per score step per "
                          "(query head, key read)",
            "bytes_note": "K and V read once for the keys the variant attends (read_len: each sequence's key range, "
                          "a window's keys only), q read and out written once, seq_lens as int32, each vector once",
            "title": f"{program['function']} (lowered from {program['file']})",
            "semantics": f"Your function, `{signature(program)}`, runs as this workspace's decode kernel: its scores, "
                         "masks, key range and sinks inside the split-KV online softmax."}


def scale_words(program: dict) -> str:
    k, p = program["scale"]["k"], program["scale"]["p"]
    return f"{k:g}" if p == 0 else ("" if k == 1 else f"{k:g} * ") + {-0.5: "1/sqrt(D)", -1.0: "1/D", 0.5: "sqrt(D)",
                                                                      1.0: "D"}[p]


def signature(program: dict) -> str:
    shapes = {"q": "[B, Hq, D]", "k": "[B, S, Hkv, D]", "v": "[B, S, Hkv, D]", "lens": "[B] int32", "head": "[Hq]",
              "batch": "[B]"}
    return (f"{program['function']}({', '.join(i['name'] + ' ' + shapes[i['role']] for i in program['inputs'])}) "
            "-> [B, Hq, D]")


def tensors(case: dict, program: dict) -> dict[str, tuple[int, int]]:
    """Every tensor a case allocates: name -> (elements, bytes per element)."""
    v = case["vars"]
    size = {"q": v["B"] * v["Hq"] * v["D"], "k": v["B"] * v["S"] * v["Hkv"] * v["D"], "lens": v["B"], "head": v["Hq"],
            "batch": v["B"]}
    size["v"] = size["k"]
    eb = {"lens": 4, "head": 4, "batch": 4}
    found = {i["name"]: (size[i["role"]], eb.get(i["role"], v["elem_bytes"])) for i in program["inputs"]}
    return {**found, "out": (size["q"], v["elem_bytes"])}


def phase1(program: dict, base: dict) -> dict:
    """The plan's Phase-1 semantics of the variant."""
    inputs = "; ".join(f"`{i['name']}` {ROLE_WORDS[i['role']]}" for i in program["inputs"])
    steps = len(program["nodes"])
    window = program.get("window")
    return {
        **base,
        "inputs": f"traced from `{program['function']}` ({program['file']}), told apart by the dataflow: {inputs}. "
                  "Output [B, Hq, D] in q's dtype.",
        "precision": "inputs in the dtype; the scores, the score program, the online softmax and P.V in fp32 (casts "
                     f"the function makes on the scores are not repeated); scale = {scale_words(program)}.",
        "masks": ("keys past seq_lens[b] are never read (the kernel's bound, which the function's own mask matches)"
                  + (f"; {len(program['keep'])} per-key mask(s) (keep())" if program["keep"] else "")
                  + ("; a key range per sequence (key_range()): only [lo, hi) is read"
                     + (f", at most {window} keys (a sliding window)" if window else "")
                     if program["range"]["lo"] is not None or program["range"]["hi"] is not None else "")
                  + (f"; a score program of {steps} step(s) (score())" if program["score"] != "s" else "")
                  + ("; a sink logit per head joins the softmax denominator (sink())" if program["sink"] is not None
                     else "") + "."),
        "special": "the program was checked against the function itself in float64 at G = 1, 4, 8 and 16, D = 64 "
                   "and 128, with mixed lengths and stale cache slots past them.",
    }


def summary(program: dict) -> str:
    """The bake's one line on the lowered variant."""
    parts = op_spec(program)["math"].split(": ", 1)[1]
    return f"{len(program['inputs'])} input(s), {parts}"

