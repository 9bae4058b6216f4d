"""The whole V0 flow of this workspace, in one command:

    python tools/run_baseline.py            # on a GPU of the workspace's vendor

    1. python test_kernel.py --compile-only   the ISA markers of the compiled kernel
    2. python test_kernel.py                  correctness per case (SIGALRM) + timing vs torch eager
    3. compute_utilization                    TFLOPS, GB/s, % of the cited dense peaks, roofline position
       roofline, isa_metrics                  results/roofline.png; the compiled ISA against the op's targets
    4. baseline_report.md, plans/v0_plan.md   written from the results (the plan holds the gpu-wiki route)
    5. memory/v0.json                         through memory_manager (schema-validated)
    6. git commit -m "V0: baseline kernel"

`--not-run REASON` writes the report and memory as NOT RUN and why. `--bake` is what the template's post-gen
hook calls once, in a freshly arranged workspace: it writes the README (tools/readme.py), compiles to the
target's ISA when op.json's DSL compiles at bake time (FlyDSL, with no AMD GPU here), records NOT RUN, commits
the scaffold, and then runs the V0 flow above when `run_baseline` allows and a GPU of the target's vendor is here;
in a workspace that already has its commits it is refused in one line (it would sweep your edits into a second
scaffold commit). The README, plan and report are regenerated through tools/files.py: edits of yours that no
commit holds are kept beside them (`<name>.<timestamp>.orig`), and a line says so.
Its NOT RUN records do not import the kernel's DSL or matplotlib (the first run describes the kernel and
draws the roofline), and its scaffold commit does not sign (`-c commit.gpgsign=false`).
Exit codes: 0 all passed (--bake: the scaffold is committed, and V0 passed where it ran), 1 a case failed or timed
out, 2 not run or refused, 3 (--bake) the scaffold commit was refused.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import compute_utilization
import files
from files import git
import gpu_detect
import isa_metrics
import memory_manager
import readme
import reference_kernels
import report
import roofline
import wiki_route

WS = Path(__file__).resolve().parent.parent
COMPILE_TIMEOUT_S = 300  # the bake-time compile takes a few seconds; this only stops a hang
SCAFFOLD_NOT_COMMITTED = 3  # exit code of --bake when git refused the scaffold commit (and said why)
COMMIT_PATHS = ["kernel.py", "test_kernel.py", "reference.py", "baseline_report.md", "memory", "README.md",
                "plans", "results", "op.json"]


def git_commit(ws: Path, message: str, paths: list[str] | None = None, sign: bool = True) -> tuple[str | None, str]:
    """Stage paths (default: everything) and commit, with a local identity when none is configured.

    Returns (sha, "") on a commit, (None, "") when there is nothing to commit, and (None, git's reason) when git
    refused. `sign=False` commits with `-c commit.gpgsign=false`: the scaffold commit must not depend on a signing
    key being at hand; the V0 commit keeps the user's own setting.
    """
    if not files.own_repo(ws):
        git(ws, "init", "-q")  # its own repository, also when baked inside another one (e.g. the template's)
    git(ws, "add", "--", *(p for p in (paths or ["."]) if (ws / p).exists()))
    if git(ws, "diff", "--cached", "--quiet").returncode == 0 and git(ws, "rev-parse", "-q", "--verify", "HEAD").returncode == 0:
        return None, ""  # nothing staged on top of an existing commit
    options = [] if sign else ["-c", "commit.gpgsign=false"]
    if not git(ws, "config", "user.email").stdout.strip():
        options += ["-c", "user.name=kbaseline", "-c", "user.email=kbaseline@localhost"]
    done = subprocess.run(["git", *options, "commit", "-q", "-m", message], cwd=ws, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        return None, lines[-1] if lines else f"git commit exited {done.returncode}"
    return git(ws, "rev-parse", "HEAD").stdout.strip(), ""


def load_op(ws: Path = WS) -> dict:
    return files.load_json(ws / "op.json")


def kernel_config(op: dict, case: dict) -> dict | None:
    sys.path.insert(0, str(WS))
    try:
        import kernel
    except Exception as err:  # no DSL installed here: the report says so instead of a configuration
        print(f"run_baseline: note: kernel.py not importable here ({type(err).__name__}: {err})", file=sys.stderr)
        return None
    return kernel.describe(case)


# test_kernel.py's call-latency figures (warm back-to-back calls, host included), carried as measured
CALL_FIELDS = ("call_us", "host_us", "call_bound", "torch_call_us", "torch_host_us", "torch_call_bound",
               "call_speedup_vs_torch")
# the second baseline, torch.compile of the reference (test_kernel.time_compiled), carried as measured
# the user's kernel demo (test_kernel.time_demo), carried as measured; memory keeps them per case and for the headline
DEMO_FIELDS = ("demo_latency_us", "demo_call_us", "speedup_vs_demo", "call_speedup_vs_demo")
COMPILE_FIELDS = ("torch_compile_latency_us", "speedup_vs_torch_compile", "torch_compile_call_us",
                  "call_speedup_vs_torch_compile", "torch_compile_s", "torch_compile_error")


# what memory/v0.json keeps of each timed case, and, for the headline case, beside it in `performance`
PER_CASE_FIELDS = ("latency_us", "tflops", "bandwidth_gbps", "tflops_peak_utilization_pct",
                   "bandwidth_peak_utilization_pct", "torch_latency_us", "speedup_vs_torch", "call_us", "torch_call_us",
                   "call_bound", "first_call_s", "torch_compile_latency_us", "speedup_vs_torch_compile",
                   "torch_compile_call_us")
HEADLINE_FIELDS = (*PER_CASE_FIELDS, "arithmetic_intensity", "bound", "copy_bandwidth_utilization_pct")


def utilization_rows(op: dict, results: dict) -> dict[str, dict]:
    cases = {c["name"]: c for c in op["cases"]}
    copy_gbps = results.get("device_copy", {}).get("gbps")
    rows = {}
    for rec in results.get("cases", []):
        if "latency_us" not in rec:
            continue
        case = cases[rec["name"]]
        cfg = kernel_config(op, case) or {}
        flops, nbytes = compute_utilization.case_work(op, case)
        time_ms = rec["latency_us"] / 1e3
        u = compute_utilization.compute(op["gpu"], op["dtype"], flops, nbytes, time_ms, cfg.get("grid_blocks"), copy_gbps)
        u.update({k: rec[k] for k in (*CALL_FIELDS, *COMPILE_FIELDS) if k in rec}, torch_latency_us=rec["torch_latency_us"],
                 speedup_vs_torch=rec["speedup_vs_torch"], first_call_s=rec.get("first_call_s"),
                 command=compute_utilization.command(op, case, time_ms, cfg.get("grid_blocks"), copy_gbps))
        u.update({k: rec[k] for k in DEMO_FIELDS if k in rec})
        rows[rec["name"]] = u
    return rows


def write_memory(ws: Path, op: dict, results: dict | None, util: dict, isa_rows: list[dict],
                 not_run_reason: str | None, route: dict | None = None, specs: dict | None = None) -> None:
    """memory/v0.json; `references` and `search_log` name what the gpu-wiki route actually read (paths, record ids)."""
    memory_manager.create(ws, "v0", force=True)
    route = route or wiki_route.route(op)
    _lines, wiki_refs = report.wiki_status(op, route)
    refs: dict[str, dict] = {}
    for ref in report.spec_sources(op, specs or report.cited(op, route)) + wiki_refs:
        refs[ref["path"]] = {**refs.get(ref["path"], {}), **ref}  # a wiki figure's source is a routed P0 entry too
    values = {
        "op": {"name": op["op_name"], "pattern": op["pattern"], "op": op["op"], "gpu": op["gpu"],
               "target": op["target"], "framework": op["framework"], "dtype": op["dtype"]},
        "optimization.action_category": "baseline",
        "optimization.action_description": op["baseline_summary"],
        "references": list(refs.values()),
        "pitfalls_and_fixes": op["pitfalls"],
        "search_log": report.wiki_search_log(op, route),
        "isa_metric_progress": isa_rows,
    }
    head = git(ws, "rev-parse", "HEAD")
    if head.returncode == 0:
        values["git_commit_hash"] = head.stdout.strip()
    if not results or not results.get("ran"):
        reason = not_run_reason or (results or {}).get("not_run_reason") or "not run"
        values.update({"correctness.status": "NOT_RUN", "correctness.not_run_reason": reason,
                       "quality_gate.result": "NOT_RUN", "quality_gate.failure_reason": f"not run: {reason}"})
        memory_manager.update(ws, "v0", values=values)
        return
    cases = results["cases"]
    failed = [r["name"] for r in cases if r["status"] != "PASS"]
    statuses = {r["status"] for r in cases}
    status = "PASS" if not failed else ("FAIL" if "FAIL" in statuses else "TIMEOUT_FAIL")
    errs = [r["rel_err"] for r in cases if r.get("rel_err") is not None]
    values.update({
        "correctness.rel_err": max(errs) if errs else None, "correctness.status": status,
        "correctness.tolerance": op["tolerance"], "correctness.cases_total": len(cases),
        "correctness.cases_passed": len(cases) - len(failed), "correctness.failed_cases": failed,
        "environment": {"device": results.get("device"), "torch": results.get("torch"), "date": results.get("date")},
    })
    head_name = compute_utilization.headline_case(op)["name"]
    if head_name in util:
        u = util[head_name]
        values.update({f"performance.{k}": u[k] for k in HEADLINE_FIELDS if k in u})
        values["performance.case"] = head_name
    values["performance.device"] = results.get("device")
    values["performance.kernel_import_s"] = results.get("kernel_import_s")
    if results.get("demo"):  # the kernel demo: its agreement, and its times beside V0's for the headline case
        values["correctness.demo"] = results["demo"]
        values.update({f"performance.{k}": util[head_name][k] for k in DEMO_FIELDS if k in util.get(head_name, {})})
    values["performance.per_case"] = [{"case": n, **{k: u[k] for k in (*PER_CASE_FIELDS, *DEMO_FIELDS)
                                                     if u.get(k) is not None}}
                                      for n, u in util.items()]
    if failed:
        gate, why = "FAIL", f"{len(failed)} case(s) not PASS: {', '.join(failed)}"
    elif head_name not in util:
        gate, why = "FAIL", f"headline case {head_name} was not timed"
    else:
        gate, why = "PASS", None
    values.update({"quality_gate.result": gate, "quality_gate.failure_reason": why})
    memory_manager.update(ws, "v0", values=values)


def with_compile_status(reason: str, op: dict, compile_check: dict | None) -> str:
    """A NOT RUN reason that also says whether the kernel compiled for the target on this machine."""
    if compile_check and compile_check.get("target") == op["target"]:
        state = "compiled for" if compile_check.get("ok") else "compile-only check FAILED for"
        return f"{state} {op['target']}; not run on hardware: {reason}"
    return reason


def record(ws: Path, op: dict, results: dict | None, not_run_reason: str | None = None, quick: bool = False) -> None:
    """Steps 3-5: utilization, the plan and report, and memory, from whatever results exist.

    `quick` (the bake's NOT RUN records) neither imports kernel.py (its DSL takes about a second to import) nor
    draws the roofline (matplotlib): the plan and report say so, and the first run, or `--not-run REASON`, fills
    both in.
    """
    compile_check = report.load_json(ws / "results" / "compile_only.json")
    ran = bool(results and results.get("ran"))
    reason = None if ran else with_compile_status(
        not_run_reason or (results or {}).get("not_run_reason") or "not run", op, compile_check)
    head = compute_utilization.headline_case(op)
    later = "written by the first run (`python tools/run_baseline.py`), or now by `python tools/run_baseline.py " \
            "--not-run REASON`, which imports the kernel's DSL"
    config = f"not described at bake time: {later}" if quick else kernel_config(op, head)
    route = wiki_route.route(op)  # Phase 2, read once: the plan, the report, the memory and every peak cite it
    route["kernels"] = reference_kernels.find(op, route)  # the wiki's reference kernels of this arch, DSL, pattern
    specs = wiki_route.cited_specs(compute_utilization.load_specs(ws / "reference" / "gpu_specs.json"), op, route)
    util = utilization_rows(op, results) if ran else {}
    if util:
        (ws / "results" / "utilization.json").write_text(json.dumps(util, indent=2) + "\n")
    metrics = isa_metrics.read_workspace(ws, op)
    isa = {"metrics": metrics, "rows": isa_metrics.progress(op, specs, metrics, util.get(head["name"]), reason)}
    plot = ({"path": None, "points": 0, "note": "not drawn at bake time (nothing was measured); the first run draws "
                                                "it, or `python tools/roofline.py` now (the ceilings only)"}
            if quick else roofline.plot(ws, op, results, specs, reason))
    report.write_plan(ws, op, config, route, specs)
    report.write_report(ws, op, results, util, config, reason, compile_check, isa, plot, route, specs)
    write_memory(ws, op, results, util, isa["rows"], reason, route, specs)


def run_tests(ws: Path, timeout: float, torch_compile: bool = True) -> dict | None:
    """Steps 1-2 in a child process, so a hang that even the watchdog misses cannot stop the flow."""
    subprocess.run([sys.executable, "test_kernel.py", "--compile-only"], cwd=ws, timeout=600)
    try:
        subprocess.run([sys.executable, "test_kernel.py", "--timeout", str(timeout),
                        *([] if torch_compile else ["--no-torch-compile"])], cwd=ws, timeout=timeout + 120)
    except subprocess.TimeoutExpired:
        print(f"run_baseline: test_kernel.py killed after {timeout + 120:.0f} s", file=sys.stderr)
    results = report.load_json(ws / "results" / "results.json")
    if results and results.get("ran"):
        done = {r["name"] for r in results.get("cases", [])}
        for c in load_op(ws)["cases"]:
            if c["name"] not in done:
                results.setdefault("cases", []).append({"name": c["name"], "role": c["role"], "dims": c["dims"],
                                                        "status": "TIMEOUT_FAIL", "error": "run killed before this case"})
        results["all_passed"] = all(r["status"] == "PASS" for r in results["cases"])
    return results


def run_decision(op: dict) -> tuple[bool, str]:
    """(run now?, why not). auto and yes both need a GPU of the target's vendor; yes only says it louder."""
    if op["run_baseline"] == "no":
        return False, "run_baseline=no; run `python tools/run_baseline.py` on the GPU when ready"
    found = gpu_detect.detect()
    if found["vendor"] != op["device"]["vendor"]:
        seen = f" (found {found['raw']})" if found["raw"] else ""
        return False, f"no {op['device']['label']} GPU{seen}"
    return True, ""


def compile_at_bake(ws: Path, op: dict) -> None:
    """FlyDSL with no AMD GPU here: compile to the target's ISA now, so the records can say "compiled for"."""
    print(f"kbaseline: compiling the kernel for {op['target']} with {op['framework_info']['label']} on this machine "
          f"(no GPU needed; a few seconds) ...", flush=True)
    start = time.perf_counter()
    import rocm_env  # the FlyDSL workspace's tools/rocm_env.py (compile_at_bake is FlyDSL's alone)

    try:  # the child starts in the target's compile-only environment, so it compiles in itself: one interpreter
        env = rocm_env.rocm_env(op["target"])
    except rocm_env.RocmEnvError:  # ... or the child's compile says in its one line what is missing
        env = None
    try:
        subprocess.run([sys.executable, "test_kernel.py", "--compile-only"], cwd=ws, timeout=COMPILE_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        print(f"kbaseline: warning: the compile did not finish in {COMPILE_TIMEOUT_S} s; stopped it (run `python "
              "test_kernel.py --compile-only` to retry)", flush=True)
        return
    print(f"kbaseline: compile step took {time.perf_counter() - start:.1f} s", flush=True)


def bake(ws: Path) -> int:
    """The template's post-gen step: README, NOT RUN records and the scaffold commit; then V0 when a GPU allows.

    The hooks ignore SIGINT, and so does this step until the scaffold is committed (tools/interrupts.py in the
    template): a bake, once begun, finishes. The V0 run after it takes Ctrl-C again.
    """
    if files.own_repo(ws) and git(ws, "rev-parse", "-q", "--verify", "HEAD").returncode == 0:
        print(f"run_baseline: error: --bake is the template's one-time step for a new workspace, and {ws.name} is "
              "baked already (it has commits); nothing was changed. Run `python tools/run_baseline.py` for V0, or "
              "`python tools/readme.py` to regenerate the README", file=sys.stderr)
        return 2
    op = load_op(ws)
    readme.write(ws, op)
    go, reason = run_decision(op)
    if op["run_baseline"] == "yes" and not go:
        print(f"kbaseline: warning: run_baseline=yes but {reason}; the report and memory say NOT RUN", flush=True)
    if not go and op["framework_info"]["compile_at_bake"]:  # still prove the kernel compiles to real ISA
        compile_at_bake(ws, op)
    record(ws, op, None, reason or "V0 run starting now", quick=True)
    _sha, refused = git_commit(ws, f"Scaffold {op['op_name']}: {op['op']} {op['dtype']} {op['pattern']} for "
                                   f"{op['gpu']} ({op['framework']}, {op['target']})"
                                   + ("" if go else f"; V0 not run: {reason}"), sign=False)
    if refused:
        print(f"kbaseline: warning: git refused the scaffold commit ({refused}); the workspace {ws.name} is complete "
              "but uncommitted: fix that and run `git add -A && git commit -m Scaffold` in it", flush=True)
        return SCAFFOLD_NOT_COMMITTED
    if not go:
        print(f"kbaseline: workspace {ws.name} ready; V0 not run: {reason}", flush=True)
        return 0
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the workspace is complete: Ctrl-C stops the V0 run
    print(f"kbaseline: running the V0 flow on {gpu_detect.detect()['raw']} (Ctrl-C stops it; the workspace is "
          "kept) ...", flush=True)
    try:
        code = main([])
    except KeyboardInterrupt:
        print(f"\nkbaseline: V0 run interrupted; workspace {ws.name} is complete: run `python tools/run_baseline.py` "
              "in it to run V0 again", flush=True)
        return 130
    print(f"kbaseline: V0 flow finished ({'all PASS' if code == 0 else 'see baseline_report.md'})", flush=True)
    return code


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Run the V0 flow: test, measure, report, memory, commit.")
    p.add_argument("--not-run", metavar="REASON", help="record NOT RUN (and why) without running anything")
    p.add_argument("--bake", action="store_true", help="the template's post-gen step (README, scaffold commit, V0)")
    p.add_argument("--timeout", type=float, default=1800, help="whole test run budget in seconds")
    p.add_argument("--no-commit", action="store_true", help="leave the results uncommitted")
    p.add_argument("--no-torch-compile", action="store_true", help="time torch eager only, not torch.compile too")
    args = p.parse_args(argv)
    if args.bake:
        return bake(WS)
    op = load_op()
    if args.not_run:
        record(WS, op, None, args.not_run)
        return 2
    results = run_tests(WS, args.timeout, not args.no_torch_compile)
    if not results or not results.get("ran"):
        reason = (results or {}).get("not_run_reason", "test_kernel.py produced no results")
        record(WS, op, results, reason)
        print(f"run_baseline: NOT RUN: {reason}")
        return 2
    record(WS, op, results)
    if not args.no_commit:
        sha, refused = git_commit(WS, "V0: baseline kernel", COMMIT_PATHS)
        print(f"run_baseline: committed {sha}" if sha else
              f"run_baseline: warning: git refused the V0 commit ({refused}); the results are recorded, uncommitted"
              if refused else "run_baseline: nothing new to commit")
    passed = results["all_passed"]
    print(f"run_baseline: {'PASS' if passed else 'FAIL'}; see baseline_report.md")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
