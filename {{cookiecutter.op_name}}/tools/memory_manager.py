"""Read and write a workspace's iteration memory (memory/v<N>.json), validated by the JSON Schema.

    python tools/memory_manager.py create --workspace W --version v0
    python tools/memory_manager.py update --workspace W --version v0 \\
        --set 'performance.latency_us=384.2' --set 'correctness.status=PASS'
    python tools/memory_manager.py update --workspace W --version v0 \\
        --append 'references={"path": "reference/gpu_specs.json", "source_type": "datasheet"}'
    python tools/memory_manager.py read --workspace W [--version v0]
    python tools/memory_manager.py list --workspace W
    python tools/memory_manager.py mask|unmask --workspace W --version v1

Every write is checked against reference/v_iteration.schema.json (jsonschema, draft 2020-12) and
lands atomically (temp file + rename): a bad --set or --append changes nothing. --set takes a dotted
path that the schema defines, and converts the text to the schema's type (number, integer, boolean,
null or string). Records with "masked": true are skipped by read and by `read` without --version.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "reference" / "v_iteration.schema.json"
ARRAY_FIELDS = ("isa_metric_progress", "search_log", "pitfalls_and_fixes", "references")
VERSION = re.compile(r"^v[0-9]+$")


class MemoryRecordError(ValueError):
    """A refused read or write; str() is the one-line reason."""


def _schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def path_of(workspace: str | os.PathLike, version: str) -> Path:
    if not VERSION.match(version):
        raise MemoryRecordError(f"version '{version}' is not v<N> (e.g. v0)")
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
    validator = jsonschema.Draft202012Validator(_schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(record), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.path) or "(top level)"
        raise MemoryRecordError(f"schema violation at {where}: {e.message}")


def _write(path: Path, record: dict) -> None:
    validate(record)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def _load(path: Path) -> dict:
    if not path.exists():
        raise MemoryRecordError(f"{path} does not exist; run `create` first")
    return json.loads(path.read_text())


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
    if path.exists() and not force:
        raise MemoryRecordError(f"{path} exists; use --force to start it over")
    _write(path, blank(version))
    return path


def update(workspace, version: str, sets: list[str] = (), appends: list[str] = (), values: dict | None = None) -> dict:
    """Apply 'a.b=value' sets, 'array={json}' appends and already-typed values; validate; write atomically."""
    path = path_of(workspace, version)
    record = _load(path)
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
    _write(path, record)
    return record


def read(workspace, version: str | None = None) -> dict | None:
    """One record, or the newest unmasked one; masked records are skipped (None)."""
    if version:
        record = _load(path_of(workspace, version))
        return None if record.get("masked") else record
    for _version, record in reversed(list_records(workspace)):
        if not record.get("masked"):
            return record
    return None


def list_records(workspace) -> list[tuple[str, dict]]:
    files = sorted(Path(workspace, "memory").glob("v*.json"), key=lambda p: int(p.stem[1:]) if VERSION.match(p.stem) else -1)
    return [(p.stem, json.loads(p.read_text())) for p in files if VERSION.match(p.stem)]


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
    try:
        if args.cmd == "create":
            print(f"created {create(args.workspace, args.version, args.force)}")
        elif args.cmd == "update":
            update(args.workspace, args.version, args.set, args.append)
            print(f"updated {path_of(args.workspace, args.version)}")
        elif args.cmd == "read":
            record = read(args.workspace, args.version)
            print(json.dumps(record, indent=2) if record else "no unmasked record")
        elif args.cmd == "list":
            for version, record in list_records(args.workspace):
                print(f"{version}  {'masked' if record.get('masked') else 'active'}  "
                      f"{record['correctness'].get('status')}  {record['performance'].get('latency_us')} us  "
                      f"{record['optimization'].get('action_category')}")
        else:
            set_mask(args.workspace, args.version, args.cmd == "mask")
            print(f"{args.cmd}ed {path_of(args.workspace, args.version)}")
    except MemoryRecordError as err:
        print(f"memory_manager: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
