"""The workspace harness's timer, for the benchmark scripts: one timing method for every measurement here.

bench(), call_latency() and copy_ceiling() live in the template's test_kernel.py, the file every workspace runs; the
benchmarks import them from there rather than keep a copy (CUDA events per launch, L2 flushed before each,
median after warm-up; the copy ceiling counts read + write bytes of a 1 GiB device copy).

paired() is the benchmarks' own: two kernels whose times differ by a few percent, compared launch by launch.
"""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "{{cookiecutter.op_name}}" / "test_kernel.py"
_spec = importlib.util.spec_from_file_location("kbaseline_harness", _PATH)
_harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_harness)

bench = _harness.bench
copy_ceiling = _harness.copy_ceiling
l2_flush_buffer = _harness.l2_flush_buffer
call_latency = _harness.call_latency


def paired(fn_a, fn_b, *, pairs: int = 50) -> dict:
    """fn_a and fn_b timed in alternation, launch by launch: CUDA events around each launch, the L2 flushed before
    each (as bench() does), the order flipped every pair (a b, b a, ...). A GPU's clock drifts by a few percent over
    the seconds that two bench() calls take one after the other (a 1.5 ms GEMM heats it), so two medians taken
    apart can disagree by more than the difference being measured; within a pair both sides see the same clock.
    Returns each side's median us and ratio = the median over the pairs of time_a / time_b."""
    import torch

    flush = l2_flush_buffer()
    for _ in range(3):  # warm-up (and the first call's compile) outside the timed pairs
        fn_a(), fn_b()
    torch.cuda.synchronize()
    events = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(pairs)]
    for i, ev in enumerate(events):
        for j, fn in enumerate((fn_a, fn_b) if i % 2 == 0 else (fn_b, fn_a)):
            flush.zero_()
            ev[2 * j].record()
            fn()
            ev[2 * j + 1].record()
    torch.cuda.synchronize()
    a, b = [], []
    for i, ev in enumerate(events):
        first, second = ev[0].elapsed_time(ev[1]) * 1e3, ev[2].elapsed_time(ev[3]) * 1e3
        a.append(first if i % 2 == 0 else second)
        b.append(second if i % 2 == 0 else first)
    return {"a_us": statistics.median(a), "b_us": statistics.median(b),
            "ratio": statistics.median(x / y for x, y in zip(a, b)), "pairs": pairs}
