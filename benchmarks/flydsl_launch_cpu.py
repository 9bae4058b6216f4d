"""FlyDSL's launch path on a CPU: each FlyDSL cell's run(), end to end but for the HIP call, checked and timed.

    python benchmarks/flydsl_launch_cpu.py --check                     # the launch ABI and the signature cache
    python benchmarks/flydsl_launch_cpu.py --out new.json              # host µs per run(), this checkout
    python benchmarks/flydsl_launch_cpu.py --out old.json --template DIR   # ... or another checkout's cells
    python benchmarks/flydsl_launch_cpu.py heads --out FILE               # the reduction cell on a QK-norm's heads

No AMD GPU here, so nothing runs on one. Each cell is compiled for real (FlyDSL on CPU placeholders, as
run() compiles it, no COMPILE_ONLY), in a workspace baked by the checkout's tools/scaffold.py, in a child
process; then only what needs a GPU is replaced:
- FlyDSL's JIT'd host function (what calls hipModuleGetFunction + hipModuleLaunchKernel) by a no-op C function
  (libc's getpid) called through the same ctypes CFUNCTYPE: its ctypes call is paid, the HIP calls are not;
- torch.Tensor.is_cuda reads True, so that CPU tensors pass host.py's "on the GPU" checks;
- the stream, the arch, the CU count and the HIP error read are constants.
Every other line of run(), host.py's checks and FlyDSL's argument packing run as they would on the GPU
machine (the CPU build of torch, CPU tensors: attribute reads and views cost about what they cost there).

--check asserts, per cell: the first call compiles once, prepares once and launches once; the ABI slots that
FlyDSL filled hold the right pointers, sizes, scalars and stream; a second call of the same signature with
another size neither compiles nor runs host.py's checks; refused calls raise host.py's errors and launch
nothing; a HIP error that FlyDSL's runtime recorded raises. The test suite runs it (tests/test_flydsl_launch.py).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CELLS = {"elementwise": "silu_mul", "reduction": "rmsnorm", "gemm": "matmul", "decode_attention": "gqa"}
LOWERED = {"heads": ("reduction", "HEADS")}  # timed only when named: a cell running tests/lowered_sources.py's program
ARCH = "gfx942"
STREAM = 0x5EED  # the stand-in for torch's current stream handle


# ------------------------------------------------------------------------------------------------ parent


def bake(template: Path, dest: Path, pattern: str, op: str) -> Path:
    """A compile workspace of `pattern` baked by `template`'s own tools/scaffold.py (another checkout's cells)."""
    code = ("import sys; from pathlib import Path; from tools import scaffold; "
            f"scaffold.compile_workspace(Path({str(dest)!r}), {pattern!r}, {op!r}, 'bf16', {ARCH!r})")
    subprocess.run([sys.executable, "-c", code], cwd=template, check=True, capture_output=True, text=True)
    return dest


def child_env(ws: Path) -> dict:
    sys.path.insert(0, str(ws / "tools"))
    import rocm_env

    env = rocm_env.rocm_env(ARCH)
    env.pop("COMPILE_ONLY")  # compile for real: flyc.compile returns a callable
    env.update(FLYDSL_RUNTIME_ENABLE_CACHE="0", PYTHONDONTWRITEBYTECODE="1")
    return env


def run_cell(template: Path, pattern: str, check: bool, tmp: Path) -> dict:
    if pattern in LOWERED:  # the cell's workspace, its lowered.py then replaced as the tests do (tests/helpers.py)
        cell, source = LOWERED[pattern]
        ws = bake(template, tmp / pattern, cell, CELLS[cell])
        code = (f"import sys; from pathlib import Path; sys.path.insert(0, 'tests'); from helpers import make_lowered; "
                f"from lowered_sources import {source}; make_lowered(Path({str(ws)!r}), {source}, 'flydsl')")
        subprocess.run([sys.executable, "-c", code], cwd=template, check=True, capture_output=True, text=True)
    else:
        ws = bake(template, tmp / pattern, pattern, CELLS[pattern])
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", pattern,
                           *(["--check"] if check else [])], cwd=ws, env=child_env(ws), capture_output=True,
                          text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{pattern}: child failed (exit {done.returncode})\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------ child


class Stubs:
    """What a CPU cannot do, replaced before kernel.py is imported. With `counting`, every launch is counted and
    leaves the ABI slot values FlyDSL filled in `abi` (a Python callback); without, it is a no-op C function."""

    def __init__(self, counting: bool):
        import flydsl.compiler as flyc
        import torch
        from flydsl.compiler.jit_executor import CallState, CompiledArtifact

        import flydsl_runtime as rt

        torch.Tensor.is_cuda = property(lambda self: True)
        stream = type("S", (), {"cuda_stream": STREAM})()
        torch.cuda.current_stream = lambda device=None: stream  # the old cells (cheaper than the real one)
        props = type("P", (), {"multi_processor_count": rt.COMPUTE_UNITS})()
        torch.cuda.get_device_properties = lambda device=None: props  # the old cells (likewise)
        rt.device_target = lambda op: rt.TARGET
        rt.device_compute_units = lambda device: rt.COMPUTE_UNITS
        rt._stream_reader = lambda: (lambda device: STREAM)
        self.error = 0
        rt._error_taker = lambda: (lambda: self.error)
        self.launches, self.abi, self.keep = 0, None, []
        noop = ctypes.cast(ctypes.CDLL(None).getpid, ctypes.c_void_p).value
        fast = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(noop)  # the JIT'd host function's ctypes call, minus HIP
        compile_ = flyc.compile

        def compile_stub(launcher, *args):
            fn = compile_(launcher, *args)
            if fn is not None and fn._call_state is None:  # compiled on CPU tensors: no engine until a first call
                state = CallState(fn._call_spec, fast)
                if counting:
                    state._func_exe = self._counter(state)
                fn._call_state, fn._runtime_ready = state, True
            return fn

        flyc.compile = compile_stub
        CompiledArtifact._get_func_exe = lambda artifact: fast  # a @flyc.jit launcher called directly

    def _counter(self, state):
        def record(packed):
            self.launches += 1
            self.abi = [_slot_value(s) for s in state._tls.storages]

        exe = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(record)
        self.keep.append(exe)
        return exe


def _slot_value(s):
    if isinstance(s, ctypes.Array):  # a dynamic layout: int32 sizes (all tensors here are 1-D, unit stride)
        return list(memoryview(bytes(s)).cast("i"))
    return s.value or 0


def expect_abi(*args) -> list:
    """The slot values a launch with these runtime arguments must leave: a tensor is its pointer then its size."""
    out = []
    for a in args:
        out += [a.data_ptr(), [a.numel()]] if hasattr(a, "data_ptr") else [a]
    return [*out, STREAM]


def same_abi(got, want) -> bool:
    return len(got) == len(want) and all(abs(g - w) <= 1e-6 * abs(w) if isinstance(w, float) else g == w
                                         for g, w in zip(got, want))


def refused(stubs, fn, words: str, error=ValueError) -> None:
    before = stubs.launches
    try:
        fn()
    except error as exc:
        assert words in str(exc), f"refused with {exc!r}, expected {words!r}"
    else:
        raise AssertionError(f"not refused (expected {words!r})")
    assert stubs.launches == before, "a refused call launched"


def counting_host(kernel, name: str) -> list:
    """Count the calls of one host.py check that kernel.py makes (its full checks run in _prepare only)."""
    calls = []
    original = getattr(kernel.host, name)

    def wrapped(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    setattr(kernel.host, name, wrapped)
    return calls


def check_cell(pattern: str, kernel, stubs) -> list[str]:
    import torch

    bf16 = torch.bfloat16
    done = []

    def first_and_second(host_fn, first, second, abi_first, abi_second):
        """The first call runs host.py once, compiles once, launches once; a second call of the same signature
        with other sizes runs neither host.py nor the compiler; both leave the ABI slots their arguments say."""
        calls = counting_host(kernel, host_fn)
        first()
        assert stubs.launches == 1 and len(calls) == 1, (stubs.launches, len(calls))
        assert len(kernel._compiled) == 1 and len(kernel._launches) == 1, (kernel._compiled, kernel._launches)
        assert same_abi(stubs.abi, abi_first()), (stubs.abi, abi_first())
        second()
        assert stubs.launches == 2 and len(calls) == 1, "a signature hit ran host.py's checks again"
        assert len(kernel._compiled) == 1 and len(kernel._launches) == 1, (kernel._compiled, kernel._launches)
        assert same_abi(stubs.abi, abi_second()), (stubs.abi, abi_second())
        done.append("one compile, one host.py check, one launch; a hit skips both; ABI slots right")

    if pattern == "elementwise":
        # one program path (silu_mul's lowered.py): the launcher's tensor slots (inputs, outputs: its launcher of
        # 3 slots, lw.short_slots), then N; both calls below SMALL_N elements, so one variant (one vector per lane)
        x, y = torch.randn(1000, 1111, dtype=bf16), torch.randn(1000, 1111, dtype=bf16)
        out = torch.empty_like(x)
        x1, y1, o1 = torch.randn(4099, dtype=bf16), torch.randn(4099, dtype=bf16), torch.empty(4099, dtype=bf16)
        launch_args = lambda *ts: (*kernel.lw.short_slots([t.view(-1) for t in ts]), ts[0].shape[-1])  # noqa: E731
        first_and_second("lowered_operands", lambda: kernel.run(x, y, out=out), lambda: kernel.run(x1, y1, out=o1),
                         lambda: expect_abi(*launch_args(x, y, out)), lambda: expect_abi(*launch_args(x1, y1, o1)))
        refused(stubs, lambda: kernel.run(x.t(), y, out=out), "(row) must be a contiguous")
        refused(stubs, lambda: kernel.run(x.t(), y), "(row) must be a contiguous")  # before any new output's words
        refused(stubs, lambda: kernel.run(x1[1:], y1[1:], out=o1[1:]), "16-byte boundary")
        refused(stubs, lambda: kernel.run(x, y, out=o1), "out must be a contiguous")
        refused(stubs, lambda: kernel.run(x, y.half(), out=out), "of dtype torch.bfloat16")
        refused(stubs, lambda: kernel.run(x, out=out), "takes 2 input(s)")
        empty = torch.empty(0, dtype=bf16)
        assert kernel.run(empty, empty, out=empty) is empty and stubs.launches == 2
        done.append("refusals in host.py's words, no launch; an empty tensor launches nothing")
        y0 = kernel.run(x, y)  # new outputs: torch.empty_like(x), x being contiguous
        assert y0.shape == x.shape and y0.dtype == bf16 and y0.is_contiguous(), (y0.shape, y0.stride())
        assert same_abi(stubs.abi, expect_abi(*launch_args(x, y, y0))), stubs.abi
        done.append("a new output has x's shape and dtype")
        stubs.error = 1
        try:
            kernel.run(x, y, out=out)
        except RuntimeError as exc:
            assert "silu_mul: the HIP launch failed (hipError_t 1)" in str(exc), exc
        else:
            raise AssertionError("a HIP error FlyDSL's runtime recorded did not raise")
        stubs.error = 0
        done.append("a HIP error recorded by FlyDSL's runtime raises")
    elif pattern == "reduction":
        x, w = torch.randn(128, 8192, dtype=bf16), torch.randn(8192, dtype=bf16)
        out = torch.empty_like(x)
        base = torch.randn(77, 8192 + 64, dtype=bf16)
        xp, op_ = base[:, :8192], torch.empty(77, 8192, dtype=bf16)  # padded rows: another signature (the stride)
        # one program path (rmsnorm's lowered.py, its launcher of 3 slots: lw.short_slots): the tensor slots (x's
        # rows as a 1-D span, weight, out), each slot's row stride in vectors (0: not a row), M, N / vec, the loop
        # count
        launch_args = lambda t, o: (  # noqa: E731
            *kernel.lw.short_slots([t.as_strided(((t.shape[0] - 1) * t.stride(0) + t.shape[1],), (1,)), w,
                                    o.view(-1)]),
            *kernel.lw.short_slots([t.stride(0) // 8, 0, 0]), t.shape[0], 8192 // 8, 1)
        x2, o2 = x[:40], out[:40]
        first_and_second("lowered_operands", lambda: kernel.run(x, w, out=out), lambda: kernel.run(x2, w, out=o2),
                         lambda: expect_abi(*launch_args(x, out)), lambda: expect_abi(*launch_args(x2, o2)))
        kernel.run(xp, w, out=op_)
        assert len(kernel._launches) == 2 and len(kernel._compiled) == 1, "a padded stride is a new signature only"
        assert same_abi(stubs.abi, expect_abi(*launch_args(xp, op_))), stubs.abi
        for t in (x, xp, x.view(4, 32, 8192)):  # new outputs: x's layout when x is packed, else contiguous
            y0 = kernel.run(t, w)
            assert y0.shape == t.shape and y0.dtype == bf16 and y0.is_contiguous(), (y0.shape, y0.stride())
            if t.dim() == 2:
                assert same_abi(stubs.abi, expect_abi(*launch_args(t, y0))), stubs.abi
        done.append("new outputs in x's shape, contiguous (packed, padded and [B, S, D] rows)")
        refused(stubs, lambda: kernel.run(x, w, out=out[:5]), "out must be a contiguous")
        refused(stubs, lambda: kernel.run(x, w[:4096], out=out), "weight (vector) must be a contiguous")
        refused(stubs, lambda: kernel.run(x[:0], w, out=out[:0]), "empty input")
        refused(stubs, lambda: kernel.run(x.t(), w, out=out), "last dim must be contiguous")
        refused(stubs, lambda: kernel.run(x, out=out), "takes 2 input(s)")
        done.append("refusals in host.py's words, no launch")
    elif pattern == "gemm":
        a, b = torch.randn(128, 4096, dtype=bf16), torch.randn(4096, 4096, dtype=bf16)
        out = torch.empty(128, 4096, dtype=bf16)
        a2, out2 = a[:16], out[:16]  # M = 16: the same small-tile choice on 304 CUs
        first_and_second("matmul_dims", lambda: kernel.run(a, b, out=out), lambda: kernel.run(a2, b, out=out2),
                         lambda: expect_abi(a, b, out, 128, 4096, 4096), lambda: expect_abi(a2, b, out2, 16, 4096, 4096))
        big = torch.randn(4096, 4096, dtype=bf16)
        kernel.run(big, b, out=torch.empty(4096, 4096, dtype=bf16))
        assert len(kernel._compiled) == 2 and len(kernel._launches) == 2, "4096^3: the 256x128 tiles"
        refused(stubs, lambda: kernel.run(a, b[:, :4000], out=out), "need a [M,K] and b [N,K]")
        refused(stubs, lambda: kernel.run(a[:, 4:], b[:, 4:], out=out), "contiguous GPU tensors")
        refused(stubs, lambda: kernel.run(a, b, out=out[:5]), "out must be a contiguous")
        assert (kernel.run(a[:, :0], b[:, :0], out=out) == 0).all() and stubs.launches == 3
        done.append("refusals in host.py's words, no launch; K = 0 zero-fills without a launch")
    else:
        B, Hq, Hkv, S, D = 2, 32, 8, 1024, 128
        q, k = torch.randn(B, Hq, D, dtype=bf16), torch.randn(B, S, Hkv, D, dtype=bf16)
        v, lens, out = torch.randn_like(k), torch.full((B,), S, dtype=torch.int32), torch.empty(B, Hq, D, dtype=bf16)
        p = kernel.plan(B, Hq, Hkv, S, D, kernel.COMPUTE_UNITS)
        scalars = (B, Hq * D, Hq, Hkv, S, p["chunks"], p["splits"], p["split_size"],  # Hq * D: q's batch stride
                   kernel._softmax_scale(D) * kernel.LOG2E)

        def launch_args():
            (o_part, lse), _ = next(iter(kernel._launches.values())).facts
            return (q.view(-1), k.view(-1), v.view(-1), lens, o_part, lse, out.view(-1), *scalars)

        lens2 = torch.tensor([5, 700], dtype=torch.int32)  # same signature: seq_lens values are device data
        first_and_second("decode_dims", lambda: kernel.run(q, k, v, lens, out=out), lambda: kernel.run(q, k, v, lens2, out=out),
                         lambda: expect_abi(*launch_args()),
                         lambda: expect_abi(*launch_args()[:3], lens2, *launch_args()[4:]))
        refused(stubs, lambda: kernel.run(q, k, v[:, :512], lens, out=out), "expects q[B, Hq, D]")
        refused(stubs, lambda: kernel.run(q, k, v, lens.long(), out=out), "seq_lens must be int32")
        refused(stubs, lambda: kernel.run(q.transpose(0, 1), k, v, lens, out=out), "shapes q")
        refused(stubs, lambda: kernel.run(q.transpose(0, 1).contiguous().transpose(0, 1), k, v, lens, out=out),
                "has strides")  # heads not contiguous (a batch stride alone is fine: tests/test_decode_lowered_flydsl)
        refused(stubs, lambda: kernel.run(q, k.transpose(1, 2).contiguous().transpose(1, 2), v, lens, out=out),
                "contiguous GPU tensor")
        done.append("refusals in host.py's words, no launch")
    return done


def time_cell(pattern: str, kernel, stubs) -> list[dict]:
    import torch

    bf16 = torch.bfloat16
    if pattern == "elementwise":
        x, y = torch.randn(1000, 1111, dtype=bf16), torch.randn(1000, 1111, dtype=bf16)
        x1, y1 = x.view(-1), y.view(-1)
        cases = [("silu_mul 1000x1111", (x, y), torch.empty_like(x)), ("silu_mul 1-D 1111000", (x1, y1),
                                                                         torch.empty_like(x1))]
    elif pattern == "reduction":
        x, w = torch.randn(128, 8192, dtype=bf16), torch.randn(8192, dtype=bf16)
        y = torch.empty_like(x)
        cases = [("rmsnorm 128x8192", (x, w), y), ("rmsnorm [4, 32, 8192]", (x.view(4, 32, 8192), w), y.view(4, 32, 8192))]
    elif pattern == "gemm":
        a, b = torch.randn(128, 4096, dtype=bf16), torch.randn(4096, 4096, dtype=bf16)
        cases = [("matmul 128x4096x4096", (a, b), torch.empty(128, 4096, dtype=bf16))]
    elif pattern == "heads":  # a QK-norm: q [T, 8*128] viewed [T, 8, 128] inside the function
        q, w = torch.randn(64, 1024, dtype=bf16), torch.randn(128, dtype=bf16)
        cases = [("qk-norm heads of 128, q 64x1024", (q, w), torch.empty(64, 8, 128, dtype=bf16))]
    else:
        q, k = torch.randn(1, 32, 128, dtype=bf16), torch.randn(1, 8192, 8, 128, dtype=bf16)
        cases = [("gqa B1 Hq32 Hkv8 S8192 D128", (q, k, torch.randn_like(k), torch.full((1,), 8192, dtype=torch.int32)),
                  torch.empty_like(q))]
    rows = []
    for label, inputs, out in cases:
        start = time.perf_counter()
        kernel.run(*inputs, out=out)  # compile (the first case only), prepare
        first = time.perf_counter() - start
        rows.append({"cell": pattern, "case": label, "first_call_s": round(first, 3),
                     **us_per_call(lambda: kernel.run(*inputs, out=out))})
        rows.append({"cell": pattern, "case": f"{label}, run() allocating", **us_per_call(lambda: kernel.run(*inputs))})
    if pattern == "elementwise" and hasattr(kernel, "_launches"):  # the pieces of one call, this checkout's cell
        x, y = cases[0][1]
        out = cases[0][2]
        x1, y1, o1 = x.view(-1), y.view(-1), out.view(-1)
        fn = next(iter(kernel._compiled.values()))
        launch = next(iter(kernel._launches.values()))
        getpid = ctypes.CDLL(None).getpid
        slots = getattr(kernel.lw, "short_slots", kernel.lw.slots)([x1, y1, o1])
        launcher = getattr(kernel, "LAUNCHERS", {len(slots): kernel.elementwise_launch})[len(slots)]
        parts = {
            f"FlyDSL call alone: {len(slots)} tensor slots + N + stream, fills + ctypes call":
                lambda: fn(*slots, 1111, *launch.constexprs, 0),
            "Launch alone (adds constexprs, stream read, error read)": lambda: launch(*slots, 1111),
            "the @flyc.jit launcher called directly (its cache key built per call)":
                lambda: launcher(*slots, 1111, *launch.constexprs, 0),
            "x.view(-1)": lambda: x.view(-1),
            "x.as_strided((n,), (1,))": lambda: x.as_strided((1111000,), (1,)),
            "x.is_contiguous()": lambda: x.is_contiguous(),
            "x.data_ptr()": lambda: x.data_ptr(),
            "x.get_device()": lambda: x.get_device(),
            "x.shape == y.shape": lambda: x.shape == y.shape,
            "hasattr(x, 'torch_tensor') (a miss, twice per tensor in FlyDSL's fills)": lambda: hasattr(x, "torch_tensor"),
            "a ctypes call of a C function (getpid)": lambda: getpid(),
            "signature tuple + dict lookup": lambda: kernel._launches.get(
                (((x.dtype, x.get_device()), (y.dtype, y.get_device())), None, (), 1, x.numel() < kernel.SMALL_N)),
        }
        rows += [{"cell": "parts", "case": name, **us_per_call(f)} for name, f in parts.items()]
    return rows


def us_per_call(fn, n: int = 5000, repeats: int = 7) -> dict:
    runs = [timeit.timeit(fn, number=n) / n * 1e6 for _ in range(repeats)]
    return {"run_us_min": round(min(runs), 3), "run_us_median": round(statistics.median(runs), 3)}


def child(pattern: str, check: bool) -> None:
    sys.path.insert(0, os.getcwd())
    stubs = Stubs(counting=check)
    import kernel

    result = check_cell(pattern, kernel, stubs) if check else time_cell(pattern, kernel, stubs)
    print(json.dumps(result))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="assert the launch ABI and the signature cache")
    p.add_argument("--out", type=Path, help="write the timing rows here")
    p.add_argument("--template", type=Path, default=ROOT, help="the checkout whose cells to bake (default: this one)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("patterns", nargs="*", default=list(CELLS))
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.check)
        return 0
    with tempfile.TemporaryDirectory(prefix="kb-flylaunch-") as tmp:
        results = {pattern: run_cell(args.template.resolve(), pattern, args.check, Path(tmp)) for pattern in args.patterns}
    if args.check:
        for pattern, done in results.items():
            print(f"{pattern}: " + "; ".join(done))
        return 0
    rows = [row for cell_rows in results.values() for row in cell_rows]
    for row in rows:
        first = f"   first call {row['first_call_s']:6.2f} s" if "first_call_s" in row else ""
        print(f"{row['case'][:70]:70} min {row['run_us_min']:7.2f} us   median {row['run_us_median']:7.2f} us{first}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
