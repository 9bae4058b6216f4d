"""After V0: make the next version (V1, V2, ...) of this workspace's kernel from your edit, measured against its parent.

    python tools/iterate.py --action "two rows per CTA below N=1024" --category tiling
    python tools/iterate.py --action "..." --category pipelining --no-torch-compile --rounds 400

Edit kernel.py (or any code file of the workspace), then run it on a GPU of the workspace's vendor:

1. the version: the next after the highest unmasked record (tools/versions.py), its parent that record, and the
   parent's kernel read back from the parent's commit ("V<N>: ...", exported with `git archive` into a temporary
   folder and imported as a second package beside the current one: tools/../__init__.py keeps the two apart);
2. correctness: every case of op.json, exactly as V0 runs them (test_kernel.run_cases: fresh inputs, NaN-poisoned
   outputs, float64 reference, SIGALRM per case), into results/results.json;
3. the A/B: per timed case, the parent's kernel, the current one, torch eager and torch.compile of the reference
   (unless --no-torch-compile, or where it fails) on the same inputs, launch by launch in a rotating order in
   this one process, the L2 flushed before each launch. A round's ratio is parent / current GPU time; the speedup
   is the median ratio and its spread the 95% interval of that median (order statistics, no distribution assumed).
   Ratios measured this way are stable to about a percent where times taken in separate runs are not;
4. ISA metric progress against the README's targets (test_kernel.py --compile-only, tools/isa_metrics.py);
5. profile evidence of the headline case (tools/profile_evidence.py: ncu with a fixed section set and
   `--clock-control none` where it can read the counters, else torch.profiler; it says which);
6. the quality gate: PASS needs every case to pass and, on every timed case, no slowdown beyond the spread (the
   interval's upper end at or above 1.0x). Then memory/v<N>.json (schema-validated), reports/v<N>_report.md, the
   README's "Versions" table, results/versions.png and, for a PASS, the commit "V<N>: <action>". A failed attempt is
   recorded `masked: true` with its reason and is not committed (--commit-failed commits it as "V<N> (masked): ...");
   your kernel.py is left as it is either way.

On a machine without a GPU of the workspace's vendor it prints NOT RUN, writes nothing and exits 2: no version
is made from what did not run. Exit codes: 0 PASS (committed unless --no-commit), 1 FAIL (masked), 2 not run or
refused (one line).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import compute_utilization
import files
import gpu_detect
import isa_metrics
import memory_manager
import readme
import run_baseline
import versions
import wiki_route
from files import git

WS = Path(__file__).resolve().parent.parent
CATEGORIES = [c for c in memory_manager._field_schema("optimization.action_category")["enum"] if c not in
              ("baseline", None)]
CODE = ("*.py",)  # what a version is made of: the workspace's code files (op.json, records and docs are not)
EXIT_PASS, EXIT_FAIL, EXIT_NOT_RUN = 0, 1, 2
# what an A/B record shares with test_kernel.py's timing record (results/results.json keeps the harness's fields)
HARNESS_FIELDS = ("latency_us", "torch_latency_us", "speedup_vs_torch", "torch_compile_latency_us",
                  "speedup_vs_torch_compile", "torch_compile_call_us", "torch_compile_error", "call_us", "host_us",
                  "call_bound", "torch_call_us", "call_speedup_vs_torch")


class Refused(Exception):
    """One line: why nothing was run or written."""


# --------------------------------------------------------------------------------------------
# the two kernels side by side
# --------------------------------------------------------------------------------------------

def package(folder: Path, name: str):
    """A workspace folder imported as package `name` through the current workspace's __init__.py."""
    spec = importlib.util.spec_from_file_location(name, WS / "__init__.py", submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def export(ws: Path, commit: str, dest: Path) -> None:
    """The tree of `commit` written into dest (git archive | tar): the parent version as it was committed."""
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ws, capture_output=True)
    if archive.returncode != 0:
        raise Refused(f"cannot read commit {commit[:10]} ({archive.stderr.decode().strip()[:200]})")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


def changed_files(ws: Path, parent_dir: Path) -> list[str]:
    """The workspace's code files that differ from the parent's (or that only one of them has)."""
    names = {p.relative_to(ws).as_posix() for pattern in CODE for p in ws.glob(pattern)}
    names |= {p.relative_to(parent_dir).as_posix() for pattern in CODE for p in parent_dir.glob(pattern)}
    return sorted(n for n in names if not ((ws / n).is_file() and (parent_dir / n).is_file()
                                           and (ws / n).read_bytes() == (parent_dir / n).read_bytes()))


# --------------------------------------------------------------------------------------------
# the A/B: launch by launch, in alternation
# --------------------------------------------------------------------------------------------

def median_interval(values: list[float], z: float = 1.96) -> tuple[float, float, float]:
    """(median, low, high): the median and its distribution-free 95% interval (the order statistics n/2 -+ z*sqrt(n)/2)."""
    v = sorted(values)
    n = len(v)
    lo = max(0, math.floor(n / 2 - z * math.sqrt(n) / 2))
    hi = min(n - 1, math.ceil(n / 2 + z * math.sqrt(n) / 2))
    return statistics.median(v), v[lo], v[hi]


def alternate(fns: dict, tk, seconds: float, max_rounds: int) -> dict[str, list[float]]:
    """GPU time (us) of each fn per round: every round runs each once in a rotating order, the L2 flushed before
    each launch (test_kernel's flush buffer), CUDA events around each; rounds fill `seconds`, at most max_rounds."""
    import torch

    flush = tk.l2_flush_buffer()
    names = list(fns)
    for fn in fns.values():
        fn()
    torch.cuda.synchronize()
    started = time.perf_counter()
    for name in names:
        flush.zero_()
        fns[name]()
    torch.cuda.synchronize()
    per_round = max(time.perf_counter() - started, 1e-6)
    rounds = int(min(max_rounds, max(30, seconds / per_round)))
    events = {n: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(rounds)]
              for n in names}
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            start, end = events[name][r]
            flush.zero_()
            start.record()
            fns[name]()
            end.record()
        if r % 64 == 63:
            torch.cuda.synchronize()  # keeps the queue short: a host that waits on a full queue distorts nothing,
    torch.cuda.synchronize()          # but bounded work between syncs keeps the rotation honest
    return {n: [s.elapsed_time(e) * 1e3 for s, e in events[n]] for n in names}


def ab_case(case: dict, cur, par, tk, torch_dtype, seed: int, use_compile: bool, seconds: float, max_rounds: int) -> dict:
    """One timed case: the A/B record (speedup and interval over the parent, eager and compile ratios, call times)."""
    inputs = cur.reference.make_inputs(case, torch_dtype, "cuda", seed)
    out_cur, out_par = cur.run(*inputs), par.run(*inputs)
    fns = {"current": lambda: cur.run(*inputs, out=out_cur), "parent": lambda: par.run(*inputs, out=out_par),
           "torch": lambda: cur.reference.baseline(*inputs)}
    rec: dict = {}
    if use_compile:
        try:
            compiled = tk.compiled_baseline(cur.reference.baseline)
            compiled(*inputs)
            fns["torch_compile"] = lambda: compiled(*inputs)
        except Exception as err:  # torch.compile cannot take this reference: eager stays the baseline
            rec["torch_compile_error"] = f"{type(err).__name__}: {err}".splitlines()[0][:300]
    times = alternate(fns, tk, seconds, max_rounds)
    cur_t = times["current"]
    speedup, low, high = median_interval([p / c for p, c in zip(times["parent"], cur_t)])
    rec.update(latency_us=statistics.median(cur_t), parent_latency_us=statistics.median(times["parent"]),
               torch_latency_us=statistics.median(times["torch"]), rounds=len(cur_t), speedup=speedup,
               speedup_low=low, speedup_high=high,
               speedup_vs_torch=statistics.median([t / c for t, c in zip(times["torch"], cur_t)]))
    if "torch_compile" in times:
        rec.update(torch_compile_latency_us=statistics.median(times["torch_compile"]),
                   speedup_vs_torch_compile=statistics.median([t / c for t, c in zip(times["torch_compile"], cur_t)]))
    kc, tc = tk.call_latency(fns["current"], rec["latency_us"]), tk.call_latency(fns["torch"], rec["torch_latency_us"])
    rec.update(call_us=kc["call_us"], host_us=kc["host_us"], call_bound=kc["call_bound"], torch_call_us=tc["call_us"],
               call_speedup_vs_torch=tc["call_us"] / kc["call_us"],
               parent_call_us=tk.call_latency(fns["parent"], rec["parent_latency_us"])["call_us"])
    if "torch_compile" in fns:
        rec["torch_compile_call_us"] = tk.call_latency(fns["torch_compile"], rec["torch_compile_latency_us"])["call_us"]
    return rec


# --------------------------------------------------------------------------------------------
# measuring (GPU) and recording (anywhere)
# --------------------------------------------------------------------------------------------

def measure(ws: Path, op: dict, version: str, parent: str, args) -> dict:
    """Steps 1-5 on the GPU: correctness, the A/B per timed case, ISA progress, profile evidence."""
    commit, found = versions.commit_of(ws, parent)
    if commit is None:
        raise Refused(f"no commit to read {parent}'s kernel from ({found}); commit the workspace first")
    with tempfile.TemporaryDirectory(prefix=f"kb_{parent}_") as tmp:
        export(ws, commit, Path(tmp))
        changed = changed_files(ws, Path(tmp))
        if not changed:
            raise Refused(f"no code file differs from {parent}'s ({found}); edit kernel.py first, then run it again")
        print(f"iterate: {version} from {parent} ({found}); changed: {', '.join(changed)}", flush=True)
        cur, par = package(ws, "kb_current"), package(Path(tmp), f"kb_{parent}")
        return _measure(ws, op, cur, par, args, {"version": parent, "commit": commit, "found": found,
                                                "changed": changed})


def _measure(ws: Path, op: dict, cur, par, args, parent: dict) -> dict:
    import torch

    tk = cur.test_kernel
    usable, device, reason = tk.gpu_state()
    if not usable:
        raise Refused(f"NOT RUN: {reason}")
    torch_dtype = getattr(torch, op["torch_dtype"])
    case_timeout = float(args.case_timeout)
    payload = {"op": op["op"], "pattern": op["pattern"], "gpu": op["gpu"], "dtype": op["dtype"], "ran": True,
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "tolerance": op["tolerance"], "case_timeout_s": case_timeout, "device": device,
               "torch": torch.__version__, "made_by": "tools/iterate.py"}

    def save(records):
        payload["cases"] = records
        tk.write_results(payload)

    records = tk.run_cases(op["cases"], cur.run, cur.reference.reference, cur.reference.make_inputs, device="cuda",
                           torch_dtype=torch_dtype, tolerance=op["tolerance"], case_timeout=case_timeout, on_record=save)
    payload["device_copy"] = tk.copy_ceiling()
    ab = {}
    by_name = {c["name"]: c for c in op["cases"]}
    for i, rec in enumerate(records):
        if rec["status"] == "PASS" and by_name[rec["name"]]["timed"]:
            print(f"iterate: A/B on {rec['name']} ...", flush=True)
            ab[rec["name"]] = ab_case(by_name[rec["name"]], cur, par, tk, torch_dtype, 2000 + i,
                                      not args.no_torch_compile, args.seconds, args.rounds)
            rec.update({k: v for k, v in ab[rec["name"]].items() if k in HARNESS_FIELDS})
    payload["all_passed"] = all(r["status"] == "PASS" for r in records)
    errs = [r["rel_err"] for r in records if r.get("rel_err") is not None]
    payload["max_rel_err"] = max(errs) if errs else None
    save(records)
    util = run_baseline.utilization_rows(op, payload)
    subprocess.run([sys.executable, "test_kernel.py", "--compile-only"], cwd=ws, timeout=600)
    head = compute_utilization.headline_case(op)["name"]
    import profile_evidence

    evidence = profile_evidence.evidence(head) if head in ab else {
        "tool": "none", "bottleneck": "not measured", "metrics": {},
        "notes": f"the headline case {head} did not pass, so it was not profiled"}
    return {"results": payload, "ab": ab, "util": util, "parent": parent, "profile": evidence,
            "isa_metrics": isa_metrics.read_workspace(ws, op)}


def gate(measured: dict) -> tuple[str, str | None]:
    """PASS: every case passed, the headline case was timed, and no timed case is slower beyond its spread."""
    cases = measured["results"]["cases"]
    failed = [r["name"] for r in cases if r["status"] != "PASS"]
    if failed:
        return "FAIL", f"{len(failed)} case(s) not PASS: {', '.join(failed)}"
    if not measured["ab"]:
        return "FAIL", "no timed case was measured"
    slower = [f"{name} {r['speedup']:.3f}x [{r['speedup_low']:.3f}, {r['speedup_high']:.3f}]"
              for name, r in measured["ab"].items() if r["speedup_high"] < 1.0]
    if slower:
        return "FAIL", f"slower than {measured['parent']['version']} beyond the measured spread: {'; '.join(slower)}"
    return "PASS", None


def record_version(ws: Path, op: dict, version: str, measured: dict, action: str, category: str,
                   commit: bool = True, commit_failed: bool = False) -> int:
    """Step 6: the gate, memory/<version>.json, the version report, the README table, the plot, the commit."""
    result, why = gate(measured)
    results, ab, util = measured["results"], measured["ab"], measured["util"]
    head = compute_utilization.headline_case(op)["name"]
    moved = versions.keep_masked(ws, version)
    if moved:
        print(f"iterate: the earlier failed attempt at {version} is kept as {moved.relative_to(ws)}", flush=True)
    route = wiki_route.route(op)
    specs = wiki_route.cited_specs(compute_utilization.load_specs(ws / "reference" / "gpu_specs.json"), op, route)
    cases = results["cases"]
    failed = [r["name"] for r in cases if r["status"] != "PASS"]
    errs = [r["rel_err"] for r in cases if r.get("rel_err") is not None]
    statuses = {r["status"] for r in cases}
    values = {
        "op": {"name": op["op_name"], "pattern": op["pattern"], "op": op["op"], "gpu": op["gpu"],
               "target": op["target"], "framework": op["framework"], "dtype": op["dtype"]},
        "masked": result != "PASS",
        "optimization.action_category": category, "optimization.action_description": action,
        "optimization.parent_version": measured["parent"]["version"],
        "correctness.rel_err": max(errs) if errs else None,
        "correctness.status": "PASS" if not failed else ("FAIL" if "FAIL" in statuses else "TIMEOUT_FAIL"),
        "correctness.tolerance": op["tolerance"], "correctness.cases_total": len(cases),
        "correctness.cases_passed": len(cases) - len(failed), "correctness.failed_cases": failed,
        "profile_evidence": measured["profile"],
        "isa_metric_progress": isa_metrics.progress(op, specs, measured.get("isa_metrics"), util.get(head)),
        "quality_gate.result": result, "quality_gate.failure_reason": why,
        "environment": {"device": results.get("device"), "torch": results.get("torch"), "date": results.get("date")},
    }
    if head in util:
        u = util[head]
        values.update({f"performance.{k}": u[k] for k in run_baseline.HEADLINE_FIELDS if k in u})
        values["performance.case"] = head
    values["performance.per_case"] = [{"case": n, **{k: u[k] for k in run_baseline.PER_CASE_FIELDS
                                                     if u.get(k) is not None}} for n, u in util.items()]
    if ab:
        name = head if head in ab else next(iter(ab))
        values["versus_parent"] = {
            "version": measured["parent"]["version"], "commit": measured["parent"].get("commit"), "case": name,
            **{k: ab[name][k] for k in ("speedup", "speedup_low", "speedup_high", "latency_us", "parent_latency_us",
                                        "rounds")},
            "method": "launch by launch in rotating order, one process, L2 flushed before each launch; median of "
                      "per-round parent/current ratios, 95% interval of the median",
            "per_case": [{"case": n, **{k: r[k] for k in ("speedup", "speedup_low", "speedup_high", "latency_us",
                                                           "parent_latency_us", "rounds")}} for n, r in ab.items()]}
    memory_manager.create(ws, version, force=True)
    memory_manager.update(ws, version, values=values)
    (ws / "results" / f"{version}.json").write_text(json.dumps(
        {k: measured[k] for k in ("results", "ab", "parent", "profile")}, indent=2, default=str) + "\n")
    write_report(ws, op, version, measured, result, why, action, category)
    readme.write(ws, op)
    versions.plot(ws)
    number = version[1:]
    print(f"iterate: {version} {result}" + (f": {why}" if why else "") + f"; memory/{version}.json", flush=True)
    if result == "PASS" and commit or result != "PASS" and commit_failed:
        subject = f"V{number}: {action}" if result == "PASS" else f"V{number} (masked): {action}"
        sha, refused = run_baseline.git_commit(ws, subject)
        print(f"iterate: committed {sha[:10]} {subject!r}" if sha else
              f"iterate: warning: git refused the commit ({refused}); everything is recorded, uncommitted"
              if refused else "iterate: nothing new to commit", flush=True)
    elif result != "PASS":
        print("iterate: not committed (a failed attempt; --commit-failed commits it); your kernel.py is unchanged",
              flush=True)
    return EXIT_PASS if result == "PASS" else EXIT_FAIL


def write_report(ws: Path, op: dict, version: str, measured: dict, result: str, why: str | None, action: str,
                 category: str) -> Path:
    """reports/<version>_report.md: what changed, the gate, correctness, the A/B table, profile and ISA evidence."""
    parent, ab, prof = measured["parent"], measured["ab"], measured["profile"]
    cases = measured["results"]["cases"]
    lines = [f"# {version}: {action}", "",
             f"**Quality gate: {result}**" + (f": {why}" if why else "") + (" (masked: not committed)" if
                                                                            result != "PASS" else ""), "",
             f"- category: {category}; parent: {parent['version']} ({parent.get('found', '-')})",
             f"- changed files: {', '.join(parent.get('changed') or []) or '-'}",
             f"- device: {measured['results'].get('device')}, torch {measured['results'].get('torch')}, "
             f"{measured['results'].get('date')}", "",
             "## Correctness", "", "| case | rel_err | status |", "|---|---|---|",
             *[f"| {r['name']} | {versions.fmt(r.get('rel_err'), '.2e')} | {r['status']} |" for r in cases], "",
             "## Timing: same process, launch by launch", "",
             "| case | GPU time (us) | parent (us) | speedup vs parent [95%] | rounds | torch eager (us) | vs eager "
             "| torch.compile (us) | vs compile | call (us) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in ab.items():
        lines.append(f"| {name} | {r['latency_us']:.1f} | {r['parent_latency_us']:.1f} | {r['speedup']:.3f}x "
                     f"[{r['speedup_low']:.3f}, {r['speedup_high']:.3f}] | {r['rounds']} | {r['torch_latency_us']:.1f} "
                     f"| {r['speedup_vs_torch']:.2f}x | {versions.fmt(r.get('torch_compile_latency_us'), '.1f')} | "
                     f"{versions.fmt(r.get('speedup_vs_torch_compile'), '.2f')}x | {r['call_us']:.1f} |")
    errors = [f"- {n}: torch.compile not timed ({r['torch_compile_error']})" for n, r in ab.items()
              if r.get("torch_compile_error")]
    lines += ["", *errors, "", f"## Profile evidence ({prof.get('tool')})", "",
              f"- bottleneck: {prof.get('bottleneck')}", f"- command: `{prof.get('command')}`",
              f"- notes: {prof.get('notes')}", "",
              *[f"- {k}: {v}" for k, v in list((prof.get("metrics") or {}).items())[:40]], "",
              "![versions](../results/versions.png)", ""]
    return files.write_doc(ws, f"reports/{version}_report.md", "\n".join(lines))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Make the next version of the kernel: test, A/B, profile, gate, record.")
    p.add_argument("--action", required=True, help="what you changed, one line (the commit's subject)")
    p.add_argument("--category", required=True, help=f"one of {', '.join(CATEGORIES)}")
    p.add_argument("--no-torch-compile", action="store_true", help="time torch eager only, not torch.compile too")
    p.add_argument("--no-commit", action="store_true", help="record a PASS without committing it")
    p.add_argument("--commit-failed", action="store_true", help="commit a failed (masked) attempt too")
    p.add_argument("--seconds", type=float, default=2.0, help="A/B time budget per timed case (default 2 s)")
    p.add_argument("--rounds", type=int, default=1000, help="at most this many A/B rounds per case")
    p.add_argument("--case-timeout", type=float, default=30.0, help="seconds per correctness case (SIGALRM)")
    args = p.parse_args(argv)
    action = args.action.strip()
    try:
        if not action or "\n" in action or len(action) > 200:
            raise Refused("--action: give one line of at most 200 characters saying what you changed")
        if args.category not in CATEGORIES:
            raise Refused(f"--category {args.category!r}: choose one of {', '.join(CATEGORIES)}")
        op = files.load_json(WS / "op.json")
        found = gpu_detect.detect()
        if found["vendor"] != op["device"]["vendor"]:
            seen = f" (found {found['raw']})" if found["raw"] else ""
            print(f"iterate: NOT RUN: no {op['device']['label']} GPU here{seen}; nothing was measured, recorded or "
                  "committed. Run it on the GPU machine.")
            return EXIT_NOT_RUN
        version, parent = versions.next_version(WS)
        if parent is None:
            raise Refused("no v0 record: run `python tools/run_baseline.py` first")
        if git(WS, "rev-parse", "-q", "--verify", "HEAD").returncode != 0:
            raise Refused("the workspace has no commit to read the parent kernel from")
        measured = measure(WS, op, version, parent, args)
    except (Refused, memory_manager.MemoryRecordError, files.FileProblem) as err:
        print(f"iterate: {'' if str(err).startswith('NOT RUN') else 'error: '}{err}", file=sys.stderr)
        return EXIT_NOT_RUN
    return record_version(WS, op, version, measured, action, args.category, not args.no_commit, args.commit_failed)


if __name__ == "__main__":
    sys.exit(main())
