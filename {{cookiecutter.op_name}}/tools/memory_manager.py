"""Read and write a workspace's iteration memory (memory/v<N>.json), validated by the JSON Schema.

    python tools/memory_manager.py create --workspace W --version v0
    python tools/memory_manager.py update --workspace W --version v0 \\
        --set 'performance.latency_us=384.2' --set 'correctness.rel_err=0.0031' --set 'correctness.status=PASS'
    python tools/memory_manager.py update --workspace W --version v0 \\
        --append 'references={"path": "reference/gpu_specs.json", "source_type": "datasheet"}'
    python tools/memory_manager.py read --workspace W [--version v0]
    python tools/memory_manager.py list --workspace W
    python tools/memory_manager.py mask|unmask --workspace W --version v1

Every write is checked against reference/v_iteration.schema.json (jsonschema, draft 2020-12), then
against the rules a schema cannot state (check()), and lands atomically and durably: a temp file
(mode 0644 less the umask, like any new file), fsynced, renamed over the record, then the folder
fsynced. Every read-modify-write (create, update, mask) holds an exclusive lock on the memory folder
(fcntl.flock on its own descriptor, so no lock file is left to commit), so concurrent updates each
land: none overwrites another's append. A bad --set or --append changes nothing, and neither does a
write the disk refuses (full, read-only): one line says so. Every read is bounded (tools/files.py):
a record that is a directory, a device (a symlink to /dev/zero) or larger than the cap is broken. --set takes a dotted path that the schema defines,
and converts the text to the schema's type (number, integer, boolean, null or string). Records with
"masked": true are skipped by read and by `read` without --version.

A record cannot claim more than was measured. The schema says it where JSON Schema can (its allOf
if/then rules): correctness.status PASS needs a measured correctness.rel_err and no failed_cases;
quality_gate.result PASS needs correctness PASS and a measured performance.latency_us. check() adds
what needs two fields compared: rel_err below the tolerance, every case passed (and more than none),
and the record's version equal to its file name (memory/v0.json says "version": "v0"; --set
version=v7 there is refused). And a write that claims PASS needs the workspace's own evidence
(evidence()): results/results.json from a GPU run, with cases that all passed, its rel_err and the
record's below op.json's tolerance, which no --set changes (correctness.tolerance can only be op.json's).
The seed's `update --set ... correctness.status=PASS` works verbatim where that evidence exists.

Versions are v<N> (no leading zeros: v01 would name v1 twice), matched whole (fullmatch: 'v2\\n' is refused, not made into a file name). A record
that cannot be read back (truncated, hand-broken, failing the schema) is broken: `read --version` and
`update` of it are refused with one line naming the file; `list` and `read` report it in one line on
stderr, keep serving the good records, and exit 1 (as ls does for an entry it cannot read).
Exit codes: 0 done, 1 done but a broken record was reported, 2 refused (nothing written).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import json
import os
import re
import secrets
import sys
from pathlib import Path

import jsonschema
from files import FileProblem, load_json, load_json_if_file, refuse

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "reference" / "v_iteration.schema.json"
ARRAY_FIELDS = ("isa_metric_progress", "search_log", "pitfalls_and_fixes", "references")
GATED = ("correctness", "quality_gate")  # a write that sets these and claims PASS needs the workspace's evidence
VERSION = re.compile(r"v(0|[1-9][0-9]*)")  # always .fullmatch(): re's `$` also matches before a trailing newline


class MemoryRecordError(ValueError):
    """A refused read or write; str() is the one-line reason."""


class BrokenRecordError(MemoryRecordError):
    """A record on disk that cannot be read back: not JSON, or not a valid record."""


def _schema() -> dict:
    return load_json(SCHEMA_PATH)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def path_of(workspace: str | os.PathLike, version: str) -> Path:
    if not VERSION.fullmatch(version):
        raise MemoryRecordError(f"version {version!r} is not v<N> with N written without leading zeros (e.g. v0, "
                                "v12)")
    return Path(workspace) / "memory" / f"{version}.json"


def blank(version: str) -> dict:
    """A new record: nothing measured yet, so every figure is null and every gate NOT_RUN."""
    return {
        "version": version, "masked": False, "timestamp": _now(),
        "performance": {k: None for k in ("latency_us", "tflops", "bandwidth_gbps", "tflops_peak_utilization_pct",
                                          "bandwidth_peak_utilization_pct")},
        "optimization": {"action_category": "baseline" if version == "v0" else None, "action_description": None},
        "profile_evidence": {},
        "correctness": {"rel_err": None, "status": "NOT_RUN"},
        "isa_metric_progress": [], "search_log": [], "pitfalls_and_fixes": [], "references": [],
        "quality_gate": {"result": "NOT_RUN", "failure_reason": "not measured yet"},
        "git_commit_hash": None,
    }


def validate(record: dict) -> None:
    """The schema's verdict, as one line. A broken allOf rule is quoted by its description (the rule in words)."""
    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(record), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.path) or "(top level)"
        rule = list(e.absolute_schema_path)
        why = f"{schema['allOf'][rule[1]]['description']} ({e.message})" if rule[:1] == ["allOf"] else e.message
        raise MemoryRecordError(f"schema violation at {where}: {why}")


def check(record: dict, path: Path) -> None:
    """The schema, then what it cannot state: a PASS agrees with its own figures, and the version is the file's."""
    validate(record)
    if record["version"] != path.stem:
        raise MemoryRecordError(f"version: {path.name} must say \"version\": \"{path.stem}\", not {record['version']!r}; "
                                f"a record's version is its file name, so create --version {record['version']} instead")
    c = record["correctness"]
    if c.get("status") == "PASS":
        if c.get("tolerance") is not None and c["rel_err"] >= c["tolerance"]:
            raise MemoryRecordError(f"correctness: status PASS but rel_err {c['rel_err']:g} >= tolerance "
                                    f"{c['tolerance']:g}; record FAIL, or the rel_err the tests measured")
        if c.get("cases_total") is not None and c.get("cases_passed") != c["cases_total"]:
            raise MemoryRecordError(f"correctness: status PASS but {c.get('cases_passed')} of {c['cases_total']} cases "
                                    f"passed; record FAIL, or the counts the tests measured")
        if c.get("cases_total") == 0:
            raise MemoryRecordError("correctness: status PASS but cases_total is 0: nothing was checked; record "
                                    "NOT_RUN, or the counts the tests measured")


def evidence(workspace, record: dict) -> None:
    """A PASS claimed in a write stands on the workspace's own results/results.json from a GPU run: every case
    passed, and its rel_err and the record's are below op.json's tolerance (the record's own cannot differ)."""
    c, gate = record["correctness"], record["quality_gate"]
    claims = [f for f, v in (("correctness.status", c.get("status")), ("quality_gate.result", gate.get("result")))
              if v == "PASS"]
    if not claims:
        return
    ws = Path(workspace)
    need = f"{' and '.join(claims)}=PASS needs this workspace's own evidence"
    run = "run `python tools/run_baseline.py` on the GPU, or record NOT_RUN/FAIL"
    try:
        op, results = load_json_if_file(ws / "op.json"), load_json_if_file(ws / "results" / "results.json")
    except FileProblem as err:
        raise MemoryRecordError(f"{need}, and it cannot be read: {err}") from None
    if not isinstance(results, dict):
        raise MemoryRecordError(f"{need}: results/results.json from a GPU run, and there is none; {run}")
    if not isinstance(op, dict) or not isinstance(op.get("tolerance"), (int, float)):
        raise MemoryRecordError(f"{need}: {ws / 'op.json'} with the op's tolerance, which is not there; {run}")
    tolerance = op["tolerance"]
    if not results.get("ran"):
        raise MemoryRecordError(f"{need}, but results/results.json says not run ({results.get('not_run_reason')}); {run}")
    cases = [r for r in results.get("cases") or [] if isinstance(r, dict)]
    passed = [r for r in cases if r.get("status") == "PASS"]
    if not cases or len(passed) != len(cases):
        raise MemoryRecordError(f"{need}, but results/results.json has {len(passed)} of {len(cases)} cases passed; "
                                "record FAIL, or fix the kernel and run again")
    measured = [r.get("rel_err") for r in cases]
    if any(not isinstance(e, (int, float)) or not e < tolerance for e in measured):
        raise MemoryRecordError(f"{need}, but results/results.json has a rel_err not below op.json's tolerance "
                                f"{tolerance:g}; record FAIL")
    if c.get("tolerance") is not None and c["tolerance"] != tolerance:
        raise MemoryRecordError(f"correctness.tolerance: {c['tolerance']:g} is not op.json's {tolerance:g}; the "
                                "tolerance is the op's, and no --set changes it (drop that --set)")
    if not (isinstance(c.get("rel_err"), (int, float)) and c["rel_err"] < tolerance):
        raise MemoryRecordError(f"correctness: status PASS but rel_err {c.get('rel_err')} is not below op.json's "
                                f"tolerance {tolerance:g}; record FAIL, or the rel_err the tests measured")


@contextlib.contextmanager
def locked(workspace):
    """An exclusive lock on the workspace's memory folder for one read-modify-write (flock on the folder itself)."""
    folder = Path(workspace) / "memory"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as err:
        raise MemoryRecordError(f"cannot use {folder} ({err.strerror}); check the --workspace path and its "
                                "permissions") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(path: Path, record: dict) -> None:
    """Check, then write durably: temp file (0644 less the umask), fsync, rename over the record, fsync the folder."""
    check(record, path)
    data = (json.dumps(record, indent=2) + "\n").encode()
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)  # the umask applies, as to any new file
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)
    except OSError as err:
        raise MemoryRecordError(f"cannot write {path} ({err.strerror}); it is unchanged: free space or fix the "
                                "folder's permissions, then run it again") from None


def _load(path: Path) -> dict:
    """A record read back and checked like a write; anything else is a BrokenRecordError naming the file."""
    if not path.exists() and not path.is_symlink():
        raise MemoryRecordError(f"{path} does not exist; run `create` first")
    fix = f"fix it, or start it over with `create --version {path.stem} --force`"
    try:
        record = load_json(path)
    except FileProblem as err:
        raise BrokenRecordError(f"{path} is broken: {err}; {fix}") from None
    if not isinstance(record, dict):
        raise BrokenRecordError(f"{path} is broken: a JSON {type(record).__name__}, not a record object; {fix}")
    try:
        check(record, path)
    except MemoryRecordError as err:
        raise BrokenRecordError(f"{path} is broken: {err}; {fix}") from None
    return record


def _field_schema(dotted: str) -> dict:
    """The schema of a dotted field, following $ref; refuses names the schema does not define."""
    schema = _schema()
    node = schema
    for part in dotted.split("."):
        props = node.get("properties", {})
        if part not in props:
            known = ", ".join(sorted(props)) or "none"
            raise MemoryRecordError(f"unknown field '{dotted}' ('{part}' is not one of: {known})")
        node = props[part]
        while "$ref" in node:
            node = schema["$defs"][node["$ref"].split("/")[-1]] | {k: v for k, v in node.items() if k != "$ref"}
    return node


def convert(dotted: str, text: str):
    """Turn --set text into the type the schema wants for this field."""
    node = _field_schema(dotted)
    types = node.get("type", "string")
    types = [types] if isinstance(types, str) else types
    if "object" in types or "array" in types:
        raise MemoryRecordError(f"'{dotted}' is an {types[0]}; set its fields one by one, or use --append for arrays")
    if text == "null" and "null" in types:
        return None
    if "boolean" in types and text in ("true", "false"):
        return text == "true"
    if "integer" in types and re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if "number" in types:
        try:
            value = float(text)
        except ValueError:
            pass
        else:
            if value == value and abs(value) != float("inf"):
                return value
    if "string" in types:
        return text
    raise MemoryRecordError(f"'{text}' is not a valid {' or '.join(types)} for '{dotted}'")


def _assign(record: dict, dotted: str, value) -> None:
    node = record
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value


def create(workspace, version: str, force: bool = False) -> Path:
    path = path_of(workspace, version)
    with locked(workspace):
        if path.exists() and not force:
            raise MemoryRecordError(f"{path} exists; use --force to start it over")
        _write(path, blank(version))
    return path


def update(workspace, version: str, sets: list[str] = (), appends: list[str] = (), values: dict | None = None) -> dict:
    """Apply 'a.b=value' sets, 'array={json}' appends and already-typed values; validate; write atomically, under
    the folder's lock (read, change, write: a concurrent update waits, then reads this one's result)."""
    path = path_of(workspace, version)
    with locked(workspace):
        record = _change(_load(path), sets, appends, values)
        if any(f.partition("=")[0].strip().startswith(GATED) for f in [*sets, *(values or {})]):
            check(record, path)  # the record's own rules first, then what it rests on
            evidence(workspace, record)
        _write(path, record)
    return record


def _change(record: dict, sets, appends, values) -> dict:
    for item in sets:
        dotted, sep, text = item.partition("=")
        if not sep or not dotted.strip():
            raise MemoryRecordError(f"--set '{item}' is not FIELD=VALUE (e.g. performance.latency_us=12.5)")
        _assign(record, dotted.strip(), convert(dotted.strip(), text))
    for dotted, value in (values or {}).items():
        _field_schema(dotted)
        _assign(record, dotted, value)
    for item in appends:
        field, sep, text = item.partition("=")
        if field not in ARRAY_FIELDS:
            raise MemoryRecordError(f"--append field '{field}' is not one of {', '.join(ARRAY_FIELDS)}")
        try:
            entry = json.loads(text)
        except json.JSONDecodeError as err:
            raise MemoryRecordError(f"--append {field}: value is not JSON ({err.msg})") from None
        record[field].append(entry)
    record["timestamp"] = _now()
    return record


def read(workspace, version: str | None = None, broken: list[str] | None = None) -> dict | None:
    """One record, or the newest unmasked good one; masked records are skipped (None). Without a version, the
    one-line reasons for broken records are appended to `broken` (when given) and the good ones still served."""
    if version:
        record = _load(path_of(workspace, version))
        return None if record.get("masked") else record
    records, problems = list_records(workspace)
    if broken is not None:
        broken.extend(problems)
    for _version, record in reversed(records):
        if not record.get("masked"):
            return record
    return None


def list_records(workspace) -> tuple[list[tuple[str, dict]], list[str]]:
    """([(version, record)] in version order, [one line per broken record]): one bad file hides nothing else."""
    if not Path(workspace).is_dir():
        raise MemoryRecordError(f"--workspace {workspace}: no such folder; give the workspace's path (the folder "
                                "holding op.json and memory/)")
    files = sorted((p for p in Path(workspace, "memory").glob("v*.json") if VERSION.fullmatch(p.stem)),
                   key=lambda p: int(p.stem[1:]))
    records, broken = [], []
    for p in files:
        try:
            records.append((p.stem, _load(p)))
        except BrokenRecordError as err:
            broken.append(str(err))
    return records, broken


def set_mask(workspace, version: str, masked: bool) -> None:
    update(workspace, version, values={"masked": masked})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Schema-validated iteration memory (memory/v<N>.json).")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("create", "update", "read", "list", "mask", "unmask"):
        s = sub.add_parser(name)
        s.add_argument("--workspace", required=True)
        if name != "list":
            s.add_argument("--version", required=name not in ("read",))
        if name == "create":
            s.add_argument("--force", action="store_true", help="overwrite an existing record")
        if name == "update":
            s.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
            s.add_argument("--append", action="append", default=[], metavar="ARRAY=JSON")
    args = p.parse_args(argv)
    broken: list[str] = []
    try:
        if args.cmd == "create":
            print(f"created {create(args.workspace, args.version, args.force)}")
        elif args.cmd == "update":
            update(args.workspace, args.version, args.set, args.append)
            print(f"updated {path_of(args.workspace, args.version)}")
        elif args.cmd == "read":
            record = read(args.workspace, args.version, broken)
            print(json.dumps(record, indent=2) if record else "no unmasked record")
        elif args.cmd == "list":
            records, broken = list_records(args.workspace)
            for version, record in records:
                print(f"{version}  {'masked' if record.get('masked') else 'active'}  "
                      f"{record['correctness'].get('status')}  {record['performance'].get('latency_us')} us  "
                      f"{record['optimization'].get('action_category')}")
        else:
            set_mask(args.workspace, args.version, args.cmd == "mask")
            print(f"{args.cmd}ed {path_of(args.workspace, args.version)}")
    except (MemoryRecordError, FileProblem) as err:
        return refuse("memory_manager", err)
    for line in broken:
        print(f"memory_manager: warning: {line}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
