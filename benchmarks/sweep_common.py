"""What the four regime sweeps share (sweep_gemm, sweep_decode, sweep_reduction, sweep_elementwise): one GPU timer,
one rule for rotated input copies, one way to load a baked workspace, and, for the memory-bound cells, one point's
measurement against torch eager and torch.compile.

- gpu_us(fns, calls) / kernel_time: torch.profiler's CUDA time (kernels and memsets) of `calls` calls cycling over
  `fns`, summed over every kernel a call launches, divided by `calls`; each fn is called once first (warm-up).
- host_us(fn, n, warmup, sync): the host's submit time of one call, back-to-back calls with no sync inside a round,
  best of 5 rounds (host_cost_probe.py on the GPU, custom_op_dispatch.py on any machine).
- copies(per_copy, round_bytes, cap): how many input copies to rotate over so that one round of them holds at
  least round_bytes (enough that a call never finds its inputs in the L2), at least two and at most cap.
- bake(tmp, pattern, op) / load_workspace(ws): an H200 bf16 workspace through tools.scaffold.workspace (no bake
  step, no baseline run) and its kernel.py and reference.py, imported afresh (workspaces share module names).
- measure(kernel, reference, case, ...): one point of an elementwise or reduction cell: inputs from the workspace's
  reference.make_inputs, a NaN-poisoned check against reference.reference on fp32 copies, then the GPU time of
  run() and of reference.baseline (torch eager), and of CompiledBaseline (torch.compile of the same function).
- MemorySweep: the rest of a memory-bound sweep (reduction, elementwise): per op a workspace, per point its case,
  plan and measure(), the JSON after each point, a deadline, --list (bake, load, plan: no GPU) and --render.
- add_modes / write_rows / read_rows: the CPU modes every sweep has (--render, --list) and its JSON.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import importlib
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools import registry, scaffold, spec  # noqa: E402

TOLERANCE = 1e-2  # relative Frobenius error of ours against the reference: the bf16 tolerance of every harness
WORKSPACE_MODULES = ("host", "cutedsl_runtime", "reference", "kernel", "pointwise", "lowered", "user_logic")


def kernel_time(fns, calls: int, warm: bool = True) -> tuple[float, list[str]]:
    """(us per call, the kernels' names, longest first): torch.profiler CUDA time of `calls` calls cycling through
    `fns`, every kernel and memset of a call summed. warm: call each fn once first (compiles, plans, allocator)."""
    import torch

    if warm:
        for fn in fns:
            fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fns[i % len(fns)]()
        torch.cuda.synchronize()
    events = sorted(prof.key_averages(), key=lambda e: -e.self_device_time_total)
    return (sum(e.self_device_time_total for e in events) / calls,
            [e.key for e in events if e.self_device_time_total > 0])  # the runtime API calls take no GPU time


def gpu_us(fns, calls: int, warm: bool = True) -> float:
    """Mean GPU time of one call in us (kernel_time without the names)."""
    return kernel_time(fns, calls, warm)[0]


def host_us(fn, n: int = 3000, warmup: int = 50, sync: Callable[[], object] | None = None) -> float:
    """Microseconds of host time per fn(): `warmup` calls, then the best of 5 rounds of n // 5 back-to-back calls.
    sync (torch.cuda.synchronize on a GPU) runs after the warm-up and after each round, outside its clock: the
    shapes timed this way are tiny, so the GPU keeps up and the rounds measure submission alone."""
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n // 5):
            fn()
        best = min(best, (time.perf_counter() - t0) / (n // 5) * 1e6)
        if sync:
            sync()
    return best


def copies(per_copy: int, round_bytes: int, cap: int) -> int:
    """Copies to rotate: the fewest whose bytes reach round_bytes, clamped to [2, cap]: never fewer than two, so no
    call runs on the buffers of the call before it (whose last ~50 MB are still in the L2)."""
    return max(2, min(cap, -(-round_bytes // max(1, per_copy))))


AB_ROUND_BYTES = 256 << 20  # an A/B's rotated copies per round: far past the 50 MB L2


def ab_sets(reference, case: dict, first: list, per_copy: int) -> list:
    """An A/B's input sets: `first` (bf16, seed 0) and more copies from reference.make_inputs, enough that a round of
    them holds AB_ROUND_BYTES (copies(), at most 64)."""
    import torch

    return [first] + [reference.make_inputs(case, torch.bfloat16, "cuda", seed)
                      for seed in range(1, copies(per_copy, AB_ROUND_BYTES, 64))]


def ab_calls(per_copy: int) -> int:
    """Calls per timing of an A/B point: ~1 GB of traffic, 20..400 calls."""
    return max(20, min(400, int(2e9 // max(per_copy, 1))))


def ab_times(sides: dict, calls: int, rounds: int = 4) -> dict:
    """{side: best GPU us} of sides ({name: zero-argument calls, one per input set}): kernel_time of each in turn,
    `rounds` times with the order reversed every round (so that no side is always timed first), each keeping its
    best round (ab_workspaces.py, bench_one_path.py)."""
    best = {}
    for r in range(rounds):
        for side in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
            best[side] = min(best.get(side, math.inf), kernel_time(sides[side], calls)[0])
    return best


def bake(tmp: Path, pattern: str, op: str | None = None) -> Path:
    """An H200 bf16 workspace of `pattern` (and `op`) under tmp, arranged as a bake would, without the V0 run."""
    extra = {"op": op} if op else {}
    return scaffold.workspace(Path(tmp) / (op or pattern), spec.context(pattern=pattern, gpu="H200", dtype="bf16",
                                                                        run_baseline="no", **extra))


def bake_user(tmp: Path, logic: str, **extra) -> Path:
    """An H200 workspace of a user's function (logic: "file.py:name") under tmp/name, arranged as a bake would,
    without the V0 run; extra: more template fields (shapes=...)."""
    name = logic.rsplit(":", 1)[1]
    return scaffold.workspace(Path(tmp) / name, spec.context(pytorch_logic=logic, gpu="H200", run_baseline="no",
                                                             **extra))


def load_workspace(ws: Path, kernel: bool = True):
    """(kernel, reference) of a workspace, imported afresh: the previous workspace's modules (host.py reads its own
    op.json) leave sys.modules and sys.path first. kernel=False: reference only (kernel is None; no DSL import)."""
    for name in WORKSPACE_MODULES:
        sys.modules.pop(name, None)
    sys.path[:] = [p for p in sys.path if not (Path(p) / "op.json").is_file()]
    sys.path.insert(0, str(ws))
    return (importlib.import_module("kernel") if kernel else None), importlib.import_module("reference")


def _nbytes(t) -> int:
    return t.numel() * t.element_size()


def rel_err(out, ref) -> float | None:
    """||out - ref|| / ||ref|| in fp32; None when it is NaN (an unwritten or NaN output)."""
    err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
    return None if math.isnan(err) else err


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


class CompiledBaseline:
    """torch.compile(reference.baseline, dynamic=False, fullgraph=True) of each op, one graph per caller's key.

    Dim 0 of every input of the first input's rank (reduction: x's M; elementwise: numel) is marked dynamic when it
    is > 1, so one graph serves a key's sizes (the caller's key: what changes the code, e.g. (op, N, M == 1)); it is
    compiled, and inductor autotunes it, on the first size the key meets. The recompile limit is raised so no key
    falls back to eager silently. Compiling stops when budget_s of compile warm-up is spent: later new keys get a
    note instead of a time."""

    def __init__(self, budget_s: float, backend: str = "inductor", device: str = "cuda"):
        import torch._dynamo

        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, 1024)
        self.budget_s, self.backend, self.device = budget_s, backend, device
        self.spent_s = 0.0
        self.functions: dict = {}
        self.keys: set = set()
        self.failed: dict = {}  # key -> the note of its failed compile (not retried)

    def calls(self, op: str, baseline, key, sets) -> tuple[list | None, dict]:
        """One zero-argument call per input set, or None; and what the row records (compile_s or compile_note)."""
        import torch
        import torch._dynamo

        if key in self.failed:
            return None, {"compile_note": self.failed[key]}
        if key not in self.keys and self.spent_s >= self.budget_s:
            return None, {"compile_note": f"not compiled: the {self.budget_s:.0f} s compile time box was spent"}
        fn = self.functions.get(op)
        if fn is None:
            fn = self.functions[op] = torch.compile(baseline, backend=self.backend, dynamic=False, fullgraph=True)
        rank = sets[0][0].dim()
        for inputs in sets:
            for t in inputs:
                if t.dim() == rank and t.shape[0] > 1:
                    torch._dynamo.mark_dynamic(t, 0)
        record = {}
        if key not in self.keys:
            t0 = time.perf_counter()
            try:
                fn(*sets[0])
                _sync(self.device)
            except Exception as err:  # a compile failure costs the column, not the point
                self.failed[key] = f"compile failed: {type(err).__name__}: {err}"[:300]
                return None, {"compile_note": self.failed[key]}
            finally:
                self.spent_s += time.perf_counter() - t0
            self.keys.add(key)
            record["compile_s"] = round(time.perf_counter() - t0, 2)
        return [lambda x=x: fn(*x) for x in sets], record


def measure(kernel, reference, case: dict, torch_dtype, round_bytes: int, cap: int, calls: int,
            compiled: CompiledBaseline | None = None, op: str = "", compile_key=None, device: str = "cuda") -> dict:
    """One point: copies of reference.make_inputs (enough for round_bytes, at most cap), ours checked on copy 0 (out
    poisoned with NaN, rel_err against reference.reference on fp32 copies), then GPU us of run(), of
    reference.baseline and of its torch.compile, each warmed up on every copy and timed over `calls` calls.
    Ratios are torch / ours (> 1: ours is faster). A point that fails its check is not timed.

    Both sides get their outputs alike: eager allocates one per call from torch's caching allocator, so ours is
    timed as run(*inputs), which allocates the same way. Where the output lives changes a memory-bound kernel's
    time by more than the kernels differ: on the H200, add 2^18 took 1.74 us into a rotated preallocated buffer
    and 1.52 us into the allocator's block, for ours and for torch.add(out=) alike (2026-12-02-h200-round4.md).
    ours_out_us (run(..., out=) into each copy's own buffer) is recorded beside it."""
    import torch

    first = reference.make_inputs(case, torch_dtype, device, 0)
    eager_out = reference.baseline(*first)
    per_copy = sum(_nbytes(t) for t in first) + _nbytes(eager_out)
    count = copies(per_copy, round_bytes, cap)
    sets = [first] + [reference.make_inputs(case, torch_dtype, device, seed) for seed in range(1, count)]
    out = torch.full_like(eager_out, float("nan"))
    kernel.run(*first, out=out)
    err = rel_err(out, reference.reference(*(t.float() for t in first)))
    row = {"bytes": per_copy, "copies": count, "calls": calls, "rel_err": err,
           "agree": err is not None and err < TOLERANCE}
    if row["agree"]:
        row.update(_time_sides(kernel, reference, sets, [out] + [torch.empty_like(eager_out) for _ in sets[1:]],
                               calls, compiled, op, compile_key))
        row["ours_gbps"] = per_copy / row["ours_us"] / 1e3
    del sets, first, eager_out, out
    if device == "cuda":
        torch.cuda.empty_cache()
    return row


ROUNDS = 2  # each side is timed this many times, in turn with the others: the first timing at a new size can be slow


def _time_sides(kernel, reference, sets, outs, calls: int, compiled, op: str, compile_key) -> dict:
    """GPU us (and the kernels) of ours, torch eager and torch.compile on the same rotating sets; the ratios.

    Whichever side is timed first at a new size can come out slow: at add 2^26 on the H200 the first side timed
    took 103.5 us, whether it was ours allocating or ours into out=, and the same kernel timed again 93.4-93.8 us
    (2026-12-02-h200-round4.md). So the sides are timed in turn, ROUNDS times, and each keeps its best round; every
    round is recorded ({side}_rounds_us)."""
    sides = {"ours": [lambda x=x: kernel.run(*x) for x in sets],  # allocating its output as eager does
             "ours_out": [lambda x=x, o=o: kernel.run(*x, out=o) for x, o in zip(sets, outs)],
             "eager": [lambda x=x: reference.baseline(*x) for x in sets]}
    row = {}
    if compiled is not None:
        fns, row = compiled.calls(op, reference.baseline, compile_key, sets)
        if fns is not None:
            sides["compile"] = fns
    for r in range(ROUNDS):  # the sides in turn, ROUNDS times; each side's best round counts
        for side, fns in sides.items():
            us, names = kernel_time(fns, calls)
            row.setdefault(f"{side}_rounds_us", []).append(round(us, 3))
            row[f"{side}_us"] = min(row[f"{side}_rounds_us"])
            row[f"{side}_kernels"] = [name[:80] for name in names[:4]]
    row["ratio"] = row["eager_us"] / row["ours_us"]
    if "compile_us" in row:
        row["compile_ratio"] = row["compile_us"] / row["ours_us"]
    return row


def add_modes(parser):
    """The CPU modes of a sweep: --render (table and PNGs again from the JSON) and --list (the points and skips)."""
    parser.add_argument("--render", action="store_true", help="re-render the table and PNGs from the JSON, no GPU")
    parser.add_argument("--list", action="store_true", help="print the grid's points (and why any is skipped), no GPU")
    return parser


def knobs(args) -> dict:
    """--set NAME=VALUE pairs as {NAME: value}; each value a Python literal (ast.literal_eval: never eval)."""
    return {k: ast.literal_eval(v) for k, v in (s.split("=", 1) for s in getattr(args, "set", []))}


def apply_knobs(module, knobs: dict) -> None:
    """Override a kernel module's tuning globals for an A/B: a dict knob updates the module's dict, any other value
    replaces it. A knob the module does not have is a typo: AttributeError."""
    for name, value in knobs.items():
        old = getattr(module, name)
        setattr(module, name, {**old, **value} if isinstance(old, dict) else value)


def write_rows(path: Path, meta: dict, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")


def read_rows(path: Path) -> tuple[dict, list[dict]]:
    data = json.loads(Path(path).read_text())
    return data, data["rows"]



def cell(row: dict | None, key: str = "ratio"):
    """A heatmap cell of a row: its ratio, or the word for why it has none."""
    if row is None:
        return "-"
    if row.get("skip"):
        return "skip"
    if "error" in row:
        return "error"
    if not row.get("agree"):
        return "FAIL"
    return row.get(key, "n/c")  # n/c: no torch.compile time (time box, failure, --no-compile)


def fmt(value, spec: str = ".1f", bold_below: float | None = None) -> str:
    """A table number ('' when absent), bold when below bold_below."""
    if value is None:
        return ""
    text = format(value, spec)
    return f"**{text}**" if bold_below is not None and value < bold_below else text


def progress(row: dict) -> str:
    """One line per point while a sweep runs."""
    if row.get("skip") or "error" in row:
        return row.get("skip") or row["error"]
    ratio = f", eager / ours {row['ratio']:.2f}" if "ratio" in row else ""
    ratio += f", compile / ours {row['compile_ratio']:.2f}" if "compile_ratio" in row else ""
    return f"{'agree' if row.get('agree') else 'check FAIL'} (rel_err {row.get('rel_err')}){ratio}, {row['seconds']} s"


@dataclass
class MemorySweep:
    """A sweep of a memory-bound cell (reduction, elementwise) over its grid against torch eager and torch.compile:
    the loop, --list, --render and the exit code are here; the grid, the table and the heatmaps are the sweep's.

    A point is a dict with "op" and "skip" (None, or why it is skipped) and the sweep's own dims."""

    pattern: str
    ops: tuple                                  # the ops, in table order
    shape: Callable[[dict], str]                # a point's shape in the pattern's grammar, e.g. "4096x8192"
    name: Callable[[dict], str]                 # a point's name in the progress lines
    compile_key: Callable[[dict], tuple]        # what changes torch.compile's graph (the op is added)
    compile_graphs: str                         # the same in words, for the JSON
    plan: Callable[[object, dict], dict]        # (kernel, case) -> the cell's launch facts the row records
    table: Callable[[list], str]
    heatmaps: Callable[[list, Path], list]
    target: float = 0.9                         # the threshold: no point below 0.9x torch eager
    rotate_bytes: int = 256 << 20               # inputs + output bytes per round of rotated copies (5x the L2)
    max_copies: int = 256
    calls: int = 20                             # profiled calls per side and point

    def parser(self, doc: str, compile_budget_s: float, deadline_s: float) -> argparse.ArgumentParser:
        p = add_modes(argparse.ArgumentParser(description=doc.split("\n\n")[0]))
        p.add_argument("--out", type=Path, required=True, help="path stem: writes <out>.json and <out>-<op>*.png")
        p.add_argument("--op", nargs="+", choices=self.ops, default=list(self.ops))
        p.add_argument("--no-compile", action="store_true", help="no torch.compile column")
        p.add_argument("--compile-budget-s", type=float, default=compile_budget_s)
        p.add_argument("--deadline-s", type=float, default=deadline_s, help="points left after this are not run")
        p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="A/B: override a kernel module global (a Python literal; a dict updates a dict), "
                            "e.g. --set 'UNROLL={\"add\": 4}'")
        return p

    def case(self, pt: dict) -> dict:
        (case,) = registry.pattern(self.pattern).cases(self.shape(pt), "representative", "bf16")
        return case

    def workspaces(self, tmp: Path, pts: list[dict], kernel: bool = True, knobs: dict | None = None):
        """(op, kernel, reference, that op's points) per op, each op's workspace baked and loaded in turn, with the
        kernel module's `knobs` overridden before its first compile."""
        for op in dict.fromkeys(pt["op"] for pt in pts):
            k, reference = load_workspace(bake(tmp, self.pattern, op), kernel)
            apply_knobs(k, knobs or {})
            yield op, k, reference, [pt for pt in pts if pt["op"] == op]

    def listing(self, pts: list[dict], knobs: dict | None = None) -> str:
        """Every point with the cell's plan of it (or why it is skipped): the workspaces bake and load, no GPU."""
        lines = []
        with tempfile.TemporaryDirectory(prefix=f"kb-sweep-{self.pattern}-list-") as tmp:
            for _, kernel, _, mine in self.workspaces(Path(tmp), pts, knobs=knobs):
                for pt in mine:
                    plan = pt["skip"] or " ".join(f"{k}={v}" for k, v in self.plan(kernel, self.case(pt)).items())
                    lines.append(f"{self.name(pt)}: {plan}")
        lines.append(f"{len(pts)} points, {sum(not pt['skip'] for pt in pts)} to measure")
        return "\n".join(lines)

    def run(self, args, pts: list[dict], out_json: Path) -> list[dict]:
        """Measure every point not skipped, in order; the JSON is rewritten after each."""
        import torch

        t0 = time.time()
        compiled = None if args.no_compile else CompiledBaseline(args.compile_budget_s)
        meta = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "pattern": self.pattern,
                "dtype": "bf16", "date": datetime.date.today().isoformat(),
                "knobs": knobs(args),
                "timer": f"torch.profiler CUDA kernel time per call, {self.calls} calls, rotating copies >= "
                         f"{self.rotate_bytes >> 20} MB per round (at most {self.max_copies})",
                "compile": None if compiled is None else f"inductor, fullgraph, one graph per {self.compile_graphs}, "
                                                         f"{args.compile_budget_s:.0f} s time box"}
        rows = []
        with tempfile.TemporaryDirectory(prefix=f"kb-sweep-{self.pattern}-") as tmp:
            for op, kernel, reference, mine in self.workspaces(Path(tmp), pts, knobs=knobs(args)):
                for pt in mine:
                    row = dict(pt)
                    if not row["skip"] and time.time() - t0 > args.deadline_s:
                        row["skip"] = f"not run: the sweep's {args.deadline_s:.0f} s deadline had passed"
                    if not row["skip"]:
                        started = time.time()
                        try:
                            case = self.case(pt)
                            row.update(self.plan(kernel, case))
                            row.update(measure(kernel, reference, case, torch.bfloat16, self.rotate_bytes,
                                               self.max_copies, self.calls, compiled, op, (op, *self.compile_key(pt))))
                        except Exception as err:  # a failing point is recorded, the sweep goes on
                            row["error"] = f"{type(err).__name__}: {err}"[:300]
                            torch.cuda.empty_cache()
                        row["seconds"] = round(time.time() - started, 2)
                    rows.append(row)
                    print(f"{self.name(pt)}: {progress(row)}", flush=True)
                    write_rows(out_json, {**meta, "seconds": round(time.time() - t0, 1),
                                          "compile_spent_s": compiled and round(compiled.spent_s, 1)}, rows)
        return rows

    def summary(self, rows: list[dict]) -> str:
        """The table's last line: how many points were timed, and which fall below the target."""
        timed = [r for r in rows if isinstance(cell(r), float)]
        below = [self.name(r) for r in timed if r["ratio"] < self.target]
        return f"{len(timed)} points timed, {len(below)} below {self.target}x torch eager: {', '.join(below) or 'none'}"

    def main(self, args, pts: list[dict]) -> int:
        """--list, --render, or the sweep; then the table and the PNGs. 1 when a point disagrees or fails."""
        import matplotlib  # noqa: F401 - the PNGs come last: a missing module must show before the sweep

        out_json = args.out.with_name(args.out.name + ".json")
        if args.list:
            print(self.listing(pts, knobs(args)))
            return 0
        rows = read_rows(out_json)[1] if args.render else self.run(args, pts, out_json)
        print(self.table(rows))
        print(self.summary(rows))
        for path in self.heatmaps(rows, args.out):
            print("wrote", path)
        timed = [r for r in rows if not r.get("skip")]
        return 0 if timed and all(r.get("agree") and "error" not in r for r in timed) else 1


def skipped_row(row: dict, columns: int) -> str | None:
    """The rest of a table line for a point with no times (why, then empty cells), or None when it was timed."""
    if row.get("skip") or "error" in row or not row.get("agree"):
        why = row.get("skip") or row.get("error") or f"check FAIL, rel_err {row.get('rel_err')}"
        return f" {why} |" + " |" * (columns - 1)
    return None
