"""GPU time of the reduction cell's leading-dims launch against its [M, N] launch, on the same bytes: one workspace,
one process, one timer (sweep_common.ab_times: torch.profiler, rotated copies past the L2, order reversed each round).

    python3 benchmarks/leading_dims_ab.py --out FILE.json     # on the GPU (device_setup.sh first)

A contiguous x [*lead, N] of rank >= 3 runs on a launcher compiled on x's rank: its flat row index decodes into the
nested (lead) mode with a div/mod per leading dim. Side "[B, S, D]" passes the model's tensors as they are; side
"[M, N]" passes the same storage viewed as rows (x.view(-1, N), a per-row input .view(-1)), which runs the 2-D
launcher. Both read and write the same bytes, so the difference is the row decode alone.

Heads of c (Qwen3's QK-norm: q [T, H*128], viewed [T, H, 128] inside the function): side "[B, S, D]" is run(q, w),
which launches on that view of q (rank 3); side "[M, N]" is host.rows_nd's [T*H, 128] rows, the path such a q took
before.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sweep_common import ROOT, ab_calls, ab_times, bake_user, copies, load_workspace, rel_err  # noqa: E402

CASES = {  # name: (pytorch_logic, leading shapes of x, N, whether a bool [*lead] mask rides along)
    "qwen3_q_norm": ("tests/lowering_corpus/annotated.py:qwen3_q_norm", [(32768,), (64,)], 4096, False),
    "rms_norm_functional": ("tests/lowering_corpus/ops.py:rms_norm_functional", [(4, 8192), (2, 64), (64, 128, 4)],
                            4096, False),
    "mamba2_apply_mask_to_padding_states": ("tests/lowering_corpus/annotated.py:mamba2_apply_mask_to_padding_states",
                                            [(4, 8192), (2, 64)], 4096, True),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import torch

    tmp = Path(tempfile.mkdtemp())
    rows = []
    for name, (logic, leads, n, masked) in CASES.items():
        kernel, reference = load_workspace(bake_user(tmp, str(ROOT / logic), dtype="bf16"))
        for lead in leads:
            try:
                rows.append(_point(kernel, reference, lead, n, masked, name))
            except Exception as exc:  # one point's failure is its row, not the call's end
                rows.append({"function": name, "x": [*lead, n], "error": f"{type(exc).__name__}: {exc}"[:400]})
            print(json.dumps(rows[-1]), flush=True)
            if args.out:
                args.out.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    return 0


def _point(kernel, reference, lead: tuple, n: int, masked: bool, name: str) -> dict:
    """One shape's A/B: both sides checked against the reference first, then timed on rotated copies."""
    import torch

    def inputs(seed: int) -> list:
        gen = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(*lead, n, device="cuda", dtype=torch.bfloat16, generator=gen)
        second = (torch.rand(*lead, device="cuda", generator=gen) > 0.2) if masked else \
            torch.randn(n, device="cuda", dtype=torch.bfloat16, generator=gen)
        return [x, second]

    per_copy = 2 * 2 * n * int(torch.tensor(lead).prod())  # bf16 x read once and written once
    sets = [inputs(seed) for seed in range(copies(per_copy, 256 << 20, 64))]
    heads = kernel.lowered.HEADS
    if heads:  # the weight is one head long; the old path is host.rows_nd's rows of one head
        sets = [[x, torch.randn(heads, device="cuda", dtype=torch.bfloat16)] for x, _ in sets]
        flat = [(kernel.lowered, kernel._run_rows, s, None) for s in sets]
        old = kernel.host.rows_nd
    else:
        flat = [[x.view(-1, n), s.view(-1) if masked else s] for x, s in sets]
        old = kernel.run
    out_nd, out_2d = kernel.run(*sets[0]), old(*flat[0])
    ref = reference.reference(*[t.float() if t.is_floating_point() else t for t in sets[0]])
    errors = {"[B, S, D]": rel_err(out_nd, ref), "[M, N]": rel_err(out_2d.view(out_nd.shape), ref)}
    assert all(e is not None and e < 1e-2 for e in errors.values()), errors
    assert any(len(key) > 2 and key[-2] == len(lead) + bool(heads) for key in kernel._compiled), \
        "no launcher compiled on x's rank: the A/B would time the [M, N] launch twice"
    sides = {"[B, S, D]": [lambda s=s: kernel.run(*s) for s in sets],
             "[M, N]": [lambda s=s: old(*s) for s in flat]}
    best = ab_times(sides, ab_calls(per_copy))
    return {"function": name, "x": [*lead, n], "us": {k: round(v, 2) for k, v in best.items()},
            "nd_over_2d": round(best["[B, S, D]"] / best["[M, N]"], 4), "rel_err": errors}


if __name__ == "__main__":
    sys.exit(main())
