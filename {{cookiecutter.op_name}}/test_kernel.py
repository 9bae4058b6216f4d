"""Correctness and timing harness for this workspace's kernel (the same file serves every kbaseline cell).

    python test_kernel.py                   # every case in op.json: correctness, then timing
    python test_kernel.py --compile-only    # no GPU needed: compile for op.json's target, check ISA markers
    python test_kernel.py --case rep_8192x8192 --no-timing
    TEST_TIMEOUT_SEC=60 python test_kernel.py --timeout 900

Each case draws fresh random inputs (never zeros), poisons the output with NaN, runs kernel.run,
and compares against reference.py evaluated in float64: rel_err = ||out - ref|| / ||ref||. NaN
anywhere (an unwritten or invalid output) fails. A case gets PASS, FAIL or TIMEOUT_FAIL; a case
that could not run (no GPU) is NOT_RUN, never PASS.

Timeouts: each case runs under SIGALRM (TEST_TIMEOUT_SEC, default 30) and a timeout becomes
TIMEOUT_FAIL while later cases still run. --timeout bounds the whole run: cases that find no time
left are TIMEOUT_FAIL. A watchdog thread backs SIGALRM up for hangs inside native code (a GPU kernel
that never returns): it records the case and ends the process.

Timing: two figures per case, for the kernel and for PyTorch (reference.baseline on the native dtype)
alike, in the same run on the same inputs, so every ratio is one of like measurements:
- GPU time (`latency_us`): CUDA events around each launch, L2 flushed before each one (a cold cache),
  median of many runs after warm-up. What the kernel costs the GPU.
- call latency (`call_us`): warm, back-to-back calls with no sync in between, as a model's forward
  makes them, timed on the host clock until the GPU has finished the last one, per call. What a user
  waits. `host_us` is the host's share alone (the time to submit), so `call_bound` says which side sets
  the pace: "host" when submitting a call takes as long as running it, "gpu" otherwise.
torch.compile of reference.baseline (default mode, compiled afresh per case) is the second baseline, timed the
same two ways with the kernel's ratios against it (`torch_compile_latency_us`, `speedup_vs_torch_compile`);
`--no-torch-compile` turns it off, and where torch.compile fails on the reference the case says why and keeps eager.
A 1 GiB device-to-device copy is timed like the kernels: the achievable-bandwidth ceiling the report
compares against. Each case's first call is timed too (`first_call_s`): it includes the compile of
any kernel variant the case is the first to need, which a user feels once per process.

A kernel demo (the user's existing kernel, op.json `demo`) runs on every case after V0, on the same inputs: checked
against the reference, V0 checked against it, and timed with the same two timers; a demo that raises, hangs or
needs a missing package is recorded per case and the run goes on (section "The kernel demo").

Results go to results/results.json after every case. Exit codes: 0 all passed, 1 a case failed or
timed out, 2 not run (no matching GPU).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import signal
import statistics
import sys
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
OP_PATH = HERE / "op.json"
OP = json.loads(OP_PATH.read_text()) if OP_PATH.is_file() else {}  # {} outside a workspace: benchmarks/ reuse bench()
RESULTS = HERE / "results" / "results.json"
EXIT_OK, EXIT_FAIL, EXIT_NOT_RUN = 0, 1, 2


class CaseTimeout(Exception):
    """Raised by SIGALRM when a case runs past its budget."""


def _on_alarm(signum, frame):
    raise CaseTimeout("case exceeded its time limit")


# --------------------------------------------------------------------------------------------
# Correctness
# --------------------------------------------------------------------------------------------

# A lowered function that decides by a threshold on a value it rounded (op.json lowering.rounded_thresholds: min-p
# sampling's `probs < min_p * probs.max()` on a bf16 softmax) may see an element within one rounding of its threshold
# decided the other way by the kernel, which rounds where the function does, than by the float64 reference, which
# does not: those elements may differ in NaN / infinity, at most this share of the output (at least one element), and
# each case counts them. Every other function gets none. The share that flips was measured on the H200 (kbaseline's
# benchmarks/2026-12-03-h200-real-models.md, min_p_mask).
THRESHOLD_FLIP_SHARE = 1e-3


def special_mismatches(out, ref) -> int:
    """Elements where out and ref differ in being NaN, +inf or -inf."""
    import torch

    out64, ref64 = out.double(), ref.double()
    return int((torch.isnan(out64) != torch.isnan(ref64)).sum() + (torch.isposinf(out64) != torch.isposinf(ref64)).sum()
               + (torch.isneginf(out64) != torch.isneginf(ref64)).sum())


def rel_err(out, ref, allowed: int = 0) -> float:
    """||out - ref|| / ||ref|| in float64 over the elements finite in both; NaN (a FAIL) when out has a NaN or an
    infinity where ref has none, or lacks one ref has, at more than `allowed` elements (0 but for a threshold on a
    rounded value: THRESHOLD_FLIP_SHARE). A reference may be NaN on purpose (var of one element, softmax of an all
    -inf row): the kernel must then be NaN at exactly those elements."""
    import torch

    out64, ref64 = out.double(), ref.double()
    if special_mismatches(out64, ref64) > allowed:
        return float("nan")
    finite = torch.isfinite(ref64) & torch.isfinite(out64)
    denom = ref64[finite].norm().item()
    diff = (out64[finite] - ref64[finite]).norm().item()
    return diff / denom if denom > 0 else diff


def allowed_flips(ref) -> int:
    """Elements of an output that may be decided the other way at a threshold on a rounded value (see above)."""
    if not (OP.get("lowering") or {}).get("rounded_thresholds"):
        return 0
    return max(1, int(THRESHOLD_FLIP_SHARE * ref.numel()))


def output_dtypes(torch_dtype, count: int) -> list:
    """Each output's dtype: the op's output dtype (the input dtype; bf16 for fp8 inputs: op.json out_torch_dtype), or
    the dtype a lowered op's function returns there (fp32, int8, fp8: op.json output_dtypes)."""
    import torch

    import host  # the workspace's; this file is also imported outside one (benchmarks/ reuse bench())

    out_dtype = getattr(torch, OP["out_torch_dtype"]) if OP.get("out_torch_dtype") else torch_dtype
    return [d or out_dtype for d in host.out_dtypes(OP.get("output_dtypes") or ["input"] * count)]


def poison(dtype) -> float:
    """What an output is filled with before the kernel runs: NaN (rel_err fails on it), or for an int8 output, which
    has no NaN, -128: a quantizer's clamp reaches it rarely enough that an element left unwritten shows as error."""
    return float("nan") if dtype.is_floating_point else -128.0


def run_case(case: dict, kernel_run, reference, make_inputs, device: str, torch_dtype, tolerance: float, seed: int) -> dict:
    """One correctness case. Raises CaseTimeout through to the caller.

    An op with several outputs (a lowered function returning a tuple) is checked output by output: each poisoned,
    each compared, and the case's rel_err is the worst of them."""
    import torch

    inputs = make_inputs(case, torch_dtype, device, seed)
    ref = reference(*[t.double() if t.is_floating_point() else t for t in inputs])
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    outs = [torch.full(r.shape, poison(d), dtype=d, device=device)  # a skipped element stays poisoned
            for r, d in zip(refs, output_dtypes(torch_dtype, len(refs)))]
    started = time.perf_counter()
    kernel_run(*inputs, out=outs[0] if len(outs) == 1 else tuple(outs))  # the case's first call: it compiles what is new
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    first_call_s = time.perf_counter() - started
    unwritten = sum(special_mismatches(o, r) for o, r in zip(outs, refs))
    errs = [rel_err(o, r, allowed_flips(r)) for o, r in zip(outs, refs)]
    err = float("nan") if any(math.isnan(e) for e in errs) else max(errs)
    passed = not math.isnan(err) and err < tolerance
    record = {"rel_err": None if math.isnan(err) else err, "status": "PASS" if passed else "FAIL",
              "first_call_s": round(first_call_s, 4)}
    if any(allowed_flips(r) for r in refs):  # the count is evidence either way: a PASS says how many flipped
        record["threshold_flips"] = unwritten
    if not passed:
        record["error"] = (
            f"{unwritten} output element(s) NaN or infinite where the reference is not, or the other way round "
            "(unwritten or invalid)"
            if unwritten > 0 or math.isnan(err) else f"rel_err {err:.3e} >= tolerance {tolerance:g}"
        )
    return record


class Watchdog:
    """Ends the process if one case outlives SIGALRM (a hang in native code never returns to Python)."""

    def __init__(self, on_expire):
        self._on_expire = on_expire
        self._timer = None

    def arm(self, seconds: float, case_name: str):
        self.disarm()
        self._timer = threading.Timer(seconds, self._on_expire, args=(case_name,))
        self._timer.daemon = True
        self._timer.start()

    def disarm(self):
        if self._timer:
            self._timer.cancel()
            self._timer = None


def run_cases(cases, kernel_run, reference, make_inputs, *, device, torch_dtype, tolerance,
              case_timeout, deadline=None, on_record=lambda records: None, grace=15.0) -> list[dict]:
    """Run every case under SIGALRM; a failure or timeout is recorded and the next case still runs."""
    records: list[dict] = []

    def hard_timeout(case_name):
        records.append({"name": case_name, "status": "TIMEOUT_FAIL",
                        "error": "hung in native code past the SIGALRM limit; process ended by the watchdog"})
        on_record(records)
        os._exit(EXIT_FAIL)

    watchdog = Watchdog(hard_timeout)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for i, case in enumerate(cases):
            base = {"name": case["name"], "role": case["role"], "dims": case["dims"]}
            budget = case_timeout if deadline is None else min(case_timeout, deadline - time.monotonic())
            if budget < 1:
                records.append({**base, "status": "TIMEOUT_FAIL", "error": "no time left in the --timeout budget"})
                on_record(records)
                continue
            started = time.monotonic()
            signal.alarm(max(1, int(budget)))
            watchdog.arm(budget + grace, case["name"])
            try:
                result = run_case(case, kernel_run, reference, make_inputs, device, torch_dtype, tolerance, seed=1000 + i)
            except CaseTimeout:
                result = {"status": "TIMEOUT_FAIL", "error": f"exceeded {int(budget)} s (TEST_TIMEOUT_SEC)"}
            except Exception as err:  # a crash is this case's FAIL, not the end of the run
                result = {"status": "FAIL", "error": f"{type(err).__name__}: {err}"[:2000],
                          "traceback": traceback.format_exc(limit=4)[-4000:]}
            finally:
                signal.alarm(0)
                watchdog.disarm()
            records.append({**base, **result, "seconds": round(time.monotonic() - started, 3)})
            on_record(records)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return records


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------

def l2_flush_buffer():
    """A device buffer whose zero_() evicts the L2 before a timed launch: twice the L2, at least 256 MiB."""
    import torch

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return torch.empty(max(2 * l2, 256 << 20), dtype=torch.int8, device="cuda")


def bench(fn, *, warmup_ms: float = 50.0, rep_ms: float = 300.0, max_iters: int = 500) -> dict:
    """Median device time of fn() in microseconds: CUDA events per launch, L2 flushed before each."""
    import torch

    flush = l2_flush_buffer()
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    warm = 0
    while (time.perf_counter() - t0) * 1e3 < warmup_ms or warm < 3:
        fn()
        warm += 1
        torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(max_iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(max_iters)]
    per_iter = max((time.perf_counter() - t0) * 1e3 / warm, 1e-3)
    iters = int(min(max_iters, max(10, rep_ms / per_iter)))
    for i in range(iters):
        flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e3 for s, e in zip(starts[:iters], ends[:iters])]
    return {"median_us": statistics.median(times), "min_us": min(times), "iters": iters}


def call_latency(fn, gpu_us: float, budget_s: float = 0.2, bound_ratio: float = 0.9, max_calls: int = 200) -> dict:
    """Warm, back-to-back fn() calls with no sync between them, as a model's forward makes them.

    host_us: host time to submit one call; call_us: wall time per call until the GPU finished the last one
    (host included). When submitting takes at least bound_ratio of the whole call, the host sets the pace.
    At most max_calls calls: the driver queues about a thousand launches before a launch blocks, and a
    host that waits on a full queue would measure the GPU's time as its own."""
    import torch

    n = int(min(max_calls, max(20, budget_s * 1e6 / max(gpu_us, 1.0))))
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    host_us, call_us = (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6
    return {"host_us": host_us, "call_us": call_us, "call_bound": "host" if host_us >= bound_ratio * call_us else "gpu",
            "calls": n}


def time_case(case: dict, kernel_run, baseline, make_inputs, torch_dtype, seed: int) -> dict:
    """Kernel and torch (reference.baseline) on the same inputs, both timers, one run."""
    inputs = make_inputs(case, torch_dtype, "cuda", seed)
    out = kernel_run(*inputs)  # allocates the output once; the timed launches reuse it

    def ours():
        kernel_run(*inputs, out=out)

    def theirs():
        baseline(*inputs)

    k, t = bench(ours), bench(theirs)
    kc, tc = call_latency(ours, k["median_us"]), call_latency(theirs, t["median_us"])
    return {"latency_us": k["median_us"], "torch_latency_us": t["median_us"],
            "speedup_vs_torch": t["median_us"] / k["median_us"], "timing_iters": k["iters"],
            "call_us": kc["call_us"], "host_us": kc["host_us"], "call_bound": kc["call_bound"],
            "torch_call_us": tc["call_us"], "torch_host_us": tc["host_us"], "torch_call_bound": tc["call_bound"],
            "call_speedup_vs_torch": tc["call_us"] / kc["call_us"], "calls": kc["calls"]}


def compiled_baseline(fn):
    """torch.compile(fn) in its default mode, the second timed baseline: what a user gets from torch for free.

    Dynamo's caches are reset first, so each case compiles for its own shapes (and never falls back to eager
    past the recompile limit after many cases): the compiled code is specialized like the kernel's launch plan."""
    import torch

    torch._dynamo.reset()
    return torch.compile(fn)


def time_compiled(case: dict, baseline, make_inputs, torch_dtype, seed: int, kernel: dict) -> dict:
    """torch.compile of reference.baseline on the case's inputs (the same seed as the kernel's timing): its compile
    time, both timers, and the kernel's ratios against it (`kernel` is time_case's record)."""
    import torch

    inputs = make_inputs(case, torch_dtype, "cuda", seed)
    fn = compiled_baseline(baseline)
    started = time.perf_counter()
    fn(*inputs)  # compiles
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - started
    return {**time_peer(lambda: fn(*inputs), kernel, "torch_compile"), "torch_compile_s": round(compile_s, 2)}


def time_peer(call, kernel: dict, name: str) -> dict:
    """A peer of the kernel (torch.compile, the user's demo) with the kernel's two timers, and the kernel's ratios
    against it (`kernel` is time_case's record): <name>_latency_us (cold-L2 GPU time), <name>_call_us and
    <name>_host_us (back-to-back calls), speedup_vs_<name> and call_speedup_vs_<name>."""
    t = bench(call)
    c = call_latency(call, t["median_us"])
    return {f"{name}_latency_us": t["median_us"], f"speedup_vs_{name}": t["median_us"] / kernel["latency_us"],
            f"{name}_call_us": c["call_us"], f"{name}_host_us": c["host_us"], f"{name}_call_bound": c["call_bound"],
            f"call_speedup_vs_{name}": c["call_us"] / kernel["call_us"]}


def copy_ceiling(nbytes: int = 1 << 30) -> dict:
    """The achievable bandwidth here: a device-to-device copy timed by bench(), counting read + write bytes."""
    import torch

    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda").normal_()
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src))
    return {"gbps": 2 * nbytes / (t["median_us"] * 1e-6) / 1e9, "latency_us": t["median_us"], "bytes_copied": nbytes}


# --------------------------------------------------------------------------------------------
# The kernel demo (op.json `demo`): the user's existing kernel, checked and timed as a peer of V0
# --------------------------------------------------------------------------------------------
# Imported here, on the GPU, and nowhere else (the bake only parsed it). On every case it gets the inputs the
# reference and V0 got (the same seed), by name or by position as op.json `demo.mapping` says, after V0 ran on them
# (a demo that writes its inputs in place cannot change V0's case). Its record, per case, under `demo`:
#   status   AGREE / DISAGREE (its output against the reference, the same tolerance), or why it gave nothing:
#            ERROR (it raised, or returned outputs of another count or shape), TIMEOUT (SIGALRM, TEST_TIMEOUT_SEC),
#            MISSING_PACKAGE (a module it imports is not installed here)
#   rel_err  its output against the reference; v0_rel_err: V0's output against the demo's
# A demo that disagrees is not a V0 failure. Where the demo is the reference (no pytorch_logic: op.json
# demo.role == "reference"), V0's own status is judged against the demo's output where the demo ran
# (`checked_against: "demo"`; its rel_err against the named op's expression is kept as `expression_rel_err`), and
# against reference.py where it did not. Timing: the demo is timed after V0 and torch on the same inputs, with the
# same two timers (demo_latency_us: cold-L2 GPU time; demo_call_us: warm back-to-back calls, host included).

DEMO = OP.get("demo")
DEMO_RAN = ("AGREE", "DISAGREE")


def demo_failure(err: BaseException, timeout_s: float) -> dict:
    """A demo record for an exception: TIMEOUT, MISSING_PACKAGE (a module that is not one of the demo's own files)
    or ERROR."""
    if isinstance(err, CaseTimeout):
        return {"status": "TIMEOUT", "error": f"exceeded {int(timeout_s)} s (TEST_TIMEOUT_SEC)"}
    own = {name.removesuffix(".py") for name in DEMO["copied"]}
    if isinstance(err, ModuleNotFoundError) and err.name and err.name.split(".")[0] not in own:
        return {"status": "MISSING_PACKAGE", "error": f"{err.name} is not installed here (pip install it to run the demo)"}
    return {"status": "ERROR", "error": f"{type(err).__name__}: {err}"[:600],
            "traceback": traceback.format_exc(limit=4)[-2000:]}


def load_demo(timeout_s: float) -> tuple:
    """(the demo's callable, None), or (None, the record of why it cannot run): demo/ goes on sys.path after the
    workspace's own folder, so a name of ours always means ours."""
    import importlib

    if str(HERE / "demo") not in sys.path:
        sys.path.append(str(HERE / "demo"))
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(max(1, int(timeout_s)))
    try:
        return getattr(importlib.import_module(DEMO["module"]), DEMO["function"]), None
    except BaseException as err:  # noqa: BLE001 - whatever the user's module does on import is recorded, not raised
        if isinstance(err, KeyboardInterrupt):
            raise
        return None, demo_failure(err, timeout_s)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _e(value) -> str:
    return "-" if value is None else f"{value:.2e}"


def demo_call(fn, inputs):
    """The demo on the op's inputs, mapped as the reference's are (op.json demo.mapping)."""
    if DEMO["mapping"] == "by name":
        return fn(**dict(zip(OP["inputs"], inputs)))
    return fn(*inputs)


def as_outputs(value) -> list:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def check_demo_case(case: dict, fn, kernel_run, reference, make_inputs, torch_dtype, tolerance: float, seed: int) -> dict:
    """The demo on one case: its output against the reference, and V0's output against the demo's."""
    import torch

    inputs = make_inputs(case, torch_dtype, "cuda", seed)  # the draw V0 and the reference got (same seed)
    refs = as_outputs(reference(*[t.double() if t.is_floating_point() else t for t in inputs]))
    ours = as_outputs(kernel_run(*inputs))
    theirs = as_outputs(demo_call(fn, inputs))
    torch.cuda.synchronize()
    if len(theirs) != len(refs) or not all(isinstance(t, torch.Tensor) for t in theirs):
        return {"status": "ERROR", "error": f"returned {len(theirs)} value(s) ({', '.join(type(t).__name__ for t in theirs)}); "
                                            f"the reference returns {len(refs)} tensor(s)"}
    shapes = [(tuple(t.shape), tuple(r.shape)) for t, r in zip(theirs, refs)]
    if any(a != b for a, b in shapes):
        return {"status": "ERROR", "error": "output shapes " + ", ".join(f"{a} (reference {b})" for a, b in shapes)}
    errs = [rel_err(t, r) for t, r in zip(theirs, refs)]
    against = [rel_err(o, t) for o, t in zip(ours, theirs)]
    err = float("nan") if any(math.isnan(e) for e in errs) else max(errs)
    v0 = float("nan") if any(math.isnan(e) for e in against) else max(against)
    record = {"status": "AGREE" if err < tolerance else "DISAGREE", "rel_err": None if math.isnan(err) else err,
              "v0_rel_err": None if math.isnan(v0) else v0}
    if record["status"] == "DISAGREE":
        record["error"] = ("NaN or infinite where the reference is not, or the other way round" if math.isnan(err)
                           else f"rel_err {err:.3e} >= tolerance {tolerance:g} against the reference")
    return record


def judge_by_demo(rec: dict, tolerance: float) -> None:
    """Where the demo is the reference: V0's case judged against the demo's output where the demo ran."""
    demo = rec["demo"]
    if demo["status"] not in DEMO_RAN or rec["status"] == "TIMEOUT_FAIL" or "error" in rec and rec.get("rel_err") is None:
        rec["checked_against"] = f"reference.py (the demo gave no output: {demo['status']})"
        return
    rec["expression_rel_err"] = rec.get("rel_err")
    v0 = demo.get("v0_rel_err")
    passed = v0 is not None and v0 < tolerance
    rec.update(checked_against="demo", rel_err=v0, status="PASS" if passed else "FAIL")
    rec.pop("error", None)
    if not passed:
        rec["error"] = (f"rel_err {v0:.3e} >= tolerance {tolerance:g} against the demo" if v0 is not None else
                        "NaN or infinite where the demo's output is not, or the other way round")


def time_demo(case: dict, fn, make_inputs, torch_dtype, seed: int, kernel: dict) -> dict:
    """The demo on the case's timing inputs (the seed V0's timing used), both timers, V0's ratios against it."""
    inputs = make_inputs(case, torch_dtype, "cuda", seed)
    return time_peer(lambda: demo_call(fn, inputs), kernel, "demo")


def run_demo(records: list[dict], cases: list[dict], kernel_run, reference, make_inputs, torch_dtype, tolerance: float,
             case_timeout: float, timing: bool, save, grace: float = 15.0) -> dict:
    """The demo on every case (after V0's and torch's), then timed where it ran and V0 was timed; payload `demo`.
    A hang in native code that SIGALRM cannot reach ends the process through the watchdog, with the hung case
    recorded as the demo's TIMEOUT (V0's records are all saved by then)."""
    by_name = {c["name"]: c for c in cases}

    def hard_timeout(case_name):
        rec = next(r for r in records if r["name"] == case_name)
        rec["demo"] = {"status": "TIMEOUT", "error": "hung in native code past the SIGALRM limit; the watchdog ended "
                                                     "the process (later demo cases not run)"}
        save(records)
        os._exit(EXIT_OK if all(r["status"] == "PASS" for r in records) else EXIT_FAIL)

    fn, failed = load_demo(case_timeout)
    watchdog = Watchdog(hard_timeout)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for i, rec in enumerate(records):
            if "role" not in rec:  # a watchdog record of V0's own hang: nothing to compare
                continue
            if failed:
                rec["demo"] = dict(failed)
            else:
                signal.alarm(max(1, int(case_timeout)))
                watchdog.arm(case_timeout + grace, rec["name"])
                try:
                    rec["demo"] = check_demo_case(by_name[rec["name"]], fn, kernel_run, reference, make_inputs,
                                                  torch_dtype, tolerance, seed=1000 + i)
                except BaseException as err:  # noqa: BLE001 - the demo's failure is its record, V0's run goes on
                    if isinstance(err, KeyboardInterrupt):
                        raise
                    rec["demo"] = demo_failure(err, case_timeout)
                finally:
                    signal.alarm(0)
                    watchdog.disarm()
            if DEMO["role"] == "reference":
                judge_by_demo(rec, tolerance)
            if timing and rec["demo"]["status"] in DEMO_RAN and "latency_us" in rec and "call_us" in rec:
                signal.alarm(max(1, int(case_timeout * 4)))
                watchdog.arm(case_timeout * 4 + grace, rec["name"])
                try:
                    rec.update(time_demo(by_name[rec["name"]], fn, make_inputs, torch_dtype, 2000 + i, rec))
                except BaseException as err:  # noqa: BLE001
                    if isinstance(err, KeyboardInterrupt):
                        raise
                    rec["demo_timing_error"] = demo_failure(err, case_timeout * 4)["error"]
                finally:
                    signal.alarm(0)
                    watchdog.disarm()
            save(records)
    finally:
        signal.signal(signal.SIGALRM, previous)
    statuses = [r["demo"]["status"] for r in records if "demo" in r]
    return {"function": DEMO["function"], "file": DEMO["file"], "role": DEMO["role"], "call": DEMO["call"],
            **{s.lower(): statuses.count(s) for s in ("AGREE", "DISAGREE", "ERROR", "TIMEOUT", "MISSING_PACKAGE")}}


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

def gpu_state() -> tuple[bool, str, str]:
    """(usable, device name, reason if not): a GPU of op.json's `device` (its vendor label and torch backend)."""
    try:
        import torch
    except ImportError:
        return False, "", "torch is not installed"
    label, backend = OP["device"]["label"], OP["device"]["torch_backend"]
    if not torch.cuda.is_available():
        return False, "", f"no {label} GPU"
    here = "hip" if getattr(torch.version, "hip", None) else "cuda"
    if here != backend:
        return False, torch.cuda.get_device_name(0), f"the GPU here is not {label} ({torch.cuda.get_device_name(0)})"
    return True, torch.cuda.get_device_name(0), ""


def write_results(payload: dict) -> None:
    RESULTS.parent.mkdir(exist_ok=True)
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    tmp.replace(RESULTS)


def marker_count(marker: dict, text: str) -> int:
    """How often an ISA marker occurs in the compiled text: its `regex` where it has one (an instruction whose
    qualifiers vary: ld.global.L2::cache_hint.v4 is a 128-bit load too), else its `text` as written."""
    return len(re.findall(marker["regex"], text)) if "regex" in marker else text.count(marker["text"])


def compile_only_check(out_dir: Path) -> int:
    """Compile with no GPU, then check the ISA markers op.json expects for this cell."""
    import kernel

    started = time.monotonic()
    text = kernel.compile_only(OP["cases"][0], out_dir)
    seconds = time.monotonic() - started
    checks = []
    required = OP["isa_markers"]["required"]
    # a marker of a step only some plans take (`at_least`: the cross-wave step of rows spanning waves) is expected
    # where the compiled case's plan (kernel.describe) reaches those sizes
    plan = kernel.describe(OP["cases"][0]) if any("at_least" in m for m in required) else {}
    for marker in required:
        short = {k: plan.get(k) for k, least in marker.get("at_least", {}).items()
                 if not (isinstance(plan.get(k), int) and plan[k] >= least)}
        if short:
            checks.append({"marker": marker["text"], "meaning": marker["meaning"], "expect": "not at this case's "
                           f"plan ({', '.join(f'{k} {v}' for k, v in short.items())})",
                           "count": marker_count(marker, text), "ok": True})
            continue
        count = marker_count(marker, text)
        checks.append({"marker": marker["text"], "meaning": marker["meaning"], "expect": "present", "count": count,
                       "ok": count > 0})
    for marker in OP["isa_markers"]["forbidden"]:
        count = marker_count(marker, text)
        checks.append({"marker": marker["text"], "meaning": marker["meaning"], "expect": "absent", "count": count,
                       "ok": count == 0})
    ok = all(c["ok"] for c in checks)
    print(f"compile-only: {OP['framework']} {OP['op']} {OP['dtype']} -> {OP['target']} in {seconds:.2f} s")
    for c in checks:
        print(f"  [{'ok' if c['ok'] else 'MISSING' if c['expect'] == 'present' else 'FOUND'}] "
              f"{c['marker']!r} {c['expect']} ({c['count']}x): {c['meaning']}")
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "compile_only.json").write_text(json.dumps(
        {"target": OP["target"], "seconds": seconds, "ok": ok, "checks": checks,
         "isa_file": max(out_dir.glob("kernel_*"), key=lambda f: f.stat().st_mtime).name}, indent=2) + "\n")
    return EXIT_OK if ok else EXIT_FAIL


def seconds(parser: argparse.ArgumentParser, what: str, text: str) -> float:
    """A time limit: a positive, finite number of seconds; anything else ends the run here in one line, before any
    case runs or results/ is touched (0, nan, inf or a negative would mean no limit at all)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value < float("inf")):
        parser.exit(2, f"test_kernel.py: error: {what} {text!r} is not a positive number of seconds; give one, e.g. "
                       f"{'--timeout 900' if what.startswith('--') else 'TEST_TIMEOUT_SEC=60'}\n")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compile-only", action="store_true", help="compile for the target with no GPU; check ISA markers")
    parser.add_argument("--timeout", default=None, metavar="S", help="whole-run budget in seconds (positive)")
    parser.add_argument("--case", action="append", default=None,
                        help="run only this case (repeatable); a name op.json lacks is refused before anything runs")
    parser.add_argument("--no-timing", action="store_true", help="correctness only")
    parser.add_argument("--no-torch-compile", action="store_true",
                        help="time torch eager only (by default torch.compile of the reference is a second baseline)")
    args = parser.parse_args(argv)
    known = [c["name"] for c in OP.get("cases", [])]
    unknown = [name for name in args.case or [] if name not in known]
    if unknown:  # refused here, so nothing runs and results/ is left as it was
        parser.exit(2, f"test_kernel.py: error: --case {', '.join(unknown)}: not a case of op.json; "
                       f"known cases: {', '.join(known)}\n")
    sys.path.insert(0, str(HERE))

    if args.compile_only:
        return compile_only_check(HERE / "build")

    whole = seconds(parser, "--timeout", args.timeout) if args.timeout is not None else None
    deadline = time.monotonic() + whole if whole else None
    case_timeout = seconds(parser, "TEST_TIMEOUT_SEC", os.environ.get("TEST_TIMEOUT_SEC", "30"))
    cases = [c for c in OP["cases"] if not args.case or c["name"] in args.case]
    payload = {
        "op": OP["op"], "pattern": OP["pattern"], "gpu": OP["gpu"], "dtype": OP["dtype"],
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "tolerance": OP["tolerance"], "case_timeout_s": case_timeout,
    }
    usable, device_name, reason = gpu_state()
    if not usable:
        payload.update(ran=False, not_run_reason=reason, device=device_name or None,
                       cases=[{"name": c["name"], "role": c["role"], "dims": c["dims"], "status": "NOT_RUN"} for c in cases])
        write_results(payload)
        print(f"NOT RUN: {reason}; {len(cases)} case(s) not run. Nothing was checked.")
        return EXIT_NOT_RUN

    import torch

    started = time.perf_counter()
    import kernel  # the DSL's own import (cutlass, flydsl) is part of what a user's first call costs

    import_s = time.perf_counter() - started
    import reference

    torch_dtype = getattr(torch, OP["torch_dtype"])
    payload.update(ran=True, device=device_name, torch=torch.__version__, kernel_import_s=round(import_s, 3))

    def save(records):
        payload["cases"] = records
        write_results(payload)

    records = run_cases(cases, kernel.run, reference.reference, reference.make_inputs, device="cuda",
                        torch_dtype=torch_dtype, tolerance=OP["tolerance"], case_timeout=case_timeout,
                        deadline=deadline, on_record=save)
    if not args.no_timing:
        payload["device_copy"] = copy_ceiling()
        by_name = {c["name"]: c for c in cases}
        for i, rec in enumerate(records):
            if rec["status"] != "PASS" or not by_name[rec["name"]]["timed"]:
                continue
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.alarm(max(1, int(case_timeout * 4)))
            try:
                rec.update(time_case(by_name[rec["name"]], kernel.run, reference.baseline, reference.make_inputs,
                                     torch_dtype, seed=2000 + i))
            except CaseTimeout:
                rec["timing_error"] = "timing exceeded its time limit"
            finally:
                signal.alarm(0)
            if "latency_us" in rec and not args.no_torch_compile:  # its own budget: a slow compile costs only its row
                signal.alarm(max(1, int(case_timeout * 4)))
                try:
                    rec.update(time_compiled(by_name[rec["name"]], reference.baseline, reference.make_inputs,
                                             torch_dtype, 2000 + i, rec))
                except CaseTimeout:
                    rec["torch_compile_error"] = "torch.compile exceeded its time limit (compile included)"
                except Exception as err:  # torch.compile cannot take this reference: eager stays the baseline
                    rec["torch_compile_error"] = f"{type(err).__name__}: {err}".splitlines()[0][:300]
                finally:
                    signal.alarm(0)
            save(records)
        payload["torch_compile"] = "off (--no-torch-compile)" if args.no_torch_compile else "default mode, per case"

    if DEMO:  # the user's kernel demo, after V0 and torch (a native hang of the demo cannot cost V0's records)
        payload["demo"] = run_demo(records, cases, kernel.run, reference.reference, reference.make_inputs, torch_dtype,
                                   OP["tolerance"], case_timeout, not args.no_timing, save)
    errs = [r["rel_err"] for r in records if r.get("rel_err") is not None]
    payload.update(all_passed=all(r["status"] == "PASS" for r in records), max_rel_err=max(errs) if errs else None)
    save(records)
    width = max(len(r["name"]) for r in records)
    for r in records:
        err = f"{r['rel_err']:.2e}" if r.get("rel_err") is not None else "-"
        perf = (f"  GPU {r['latency_us']:9.1f} us  torch {r['torch_latency_us']:9.1f} us  {r['speedup_vs_torch']:.2f}x"
                + (f"  compile {r['torch_compile_latency_us']:9.1f} us  {r['speedup_vs_torch_compile']:.2f}x"
                   if "torch_compile_latency_us" in r else "")
                + f"  | call {r['call_us']:8.1f} us  torch {r['torch_call_us']:8.1f} us  ({r['call_bound']}-bound)"
                if "latency_us" in r else "")
        print(f"{r['name']:<{width}}  {r['status']:<12} rel_err {err}{perf}{'  ' + r['error'] if 'error' in r else ''}")
        if "demo" in r:
            d = r["demo"]
            mine = f"  demo GPU {r['demo_latency_us']:9.1f} us  V0 {r['speedup_vs_demo']:.2f}x" if "demo_latency_us" in r else ""
            print(f"{'':<{width}}  demo {d['status']:<15} rel_err {_e(d.get('rel_err'))}  V0 vs demo {_e(d.get('v0_rel_err'))}"
                  f"{mine}{'  ' + d['error'] if 'error' in d else ''}")
    print(f"{'ALL PASS' if payload['all_passed'] else 'FAILURES'}: {sum(r['status'] == 'PASS' for r in records)}/{len(records)} "
          f"cases on {device_name}; max rel_err {payload['max_rel_err']}")
    return EXIT_OK if payload["all_passed"] else EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
