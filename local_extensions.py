"""Jinja extension for cookiecutter.json: derives kbaseline's private keys at prompt time.

cookiecutter puts the template root on sys.path and loads ``local_extensions.KbaselineExtension``
(see ``_extensions`` in cookiecutter.json). It adds:

- ``kbaseline_root``: the template repo's absolute path, so hooks can call ``tools/`` even though
  cookiecutter runs them with cwd = the new workspace and ``_repo_dir`` may be relative.
- ``kb_gpu``: ``auto`` -> the detected GPU, or ``H200`` when none is found (the pre-gen hook says so).
- ``kb_derive(key)``: arch / target / framework / vendor of a GPU name, ``unknown`` if not a GPU.
- ``kb_op(pattern)``: ``default`` -> the pattern's default op.
- ``kb_abspath``: a path made absolute against the directory cookiecutter was started from.
- ``kb_logic_function``: the function a ``pytorch_logic`` spec names (or its file's only public one).
- ``kb_op_info``, ``kb_cell``, ``kb_headline``, ``kb_isa_targets``, ``kb_code``: catalogue and cited-spec facts
  for the workspace README (the op's math, the cell's design and levers, the headline case's roofline).
- ``kb_check_op_name``: refuses a bad op_name before any folder is made (see its docstring).

Other filters never raise: bad values pass through and the pre-gen hook rejects them with a clear line.

"""

import os
import sys

from jinja2.ext import Extension

ROOT = os.path.dirname(os.path.abspath(__file__))


if os.path.join(ROOT, "tools") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "tools"))

import catalog  # noqa: E402
import compute_utilization  # noqa: E402
import gpu_detect  # noqa: E402
import isa_metrics  # noqa: E402
import shapes  # noqa: E402
import validate_inputs  # noqa: E402

_detected = None


def kb_gpu(value):
    global _detected
    if value != "auto":
        return value
    if _detected is None:
        _detected = gpu_detect.detect()
    return _detected["name"] or "H200"


def kb_gpu_note(value):
    if value != "auto":
        return ""
    kb_gpu(value)
    if _detected["name"]:
        return f"gpu=auto: detected {_detected['raw']} -> {_detected['name']}"
    if _detected["raw"]:
        return f"gpu=auto: {_detected['raw']} is not a supported model; generating for H200 (pass gpu=<model> to choose)"
    return "gpu=auto: no GPU found; generating for H200 (pass gpu=<model> to choose)"


def kb_derive(gpu, key):
    return catalog.GPUS.get(gpu, {}).get(key, "unknown")


def kb_op(op, pattern):
    return catalog.resolve_op(pattern, op) if pattern in catalog.PATTERNS else op


def kb_abspath(path):
    path = str(path).strip()
    if not path:
        return ""
    file_part, sep, func = path.rpartition(":")
    if not sep or not func.isidentifier():
        file_part, sep, func = path, "", ""
    return os.path.abspath(os.path.expanduser(file_part)) + sep + func


def kb_op_info(op, pattern):
    """The catalogue entry of an op: inputs, math, FLOP and byte formulas, params."""
    return catalog.OPS.get(pattern, {}).get(op, {"inputs": ["x"], "flops": "0", "bytes": "0", "math": "?"})


def kb_cell(pattern, framework):
    """What a built cell teaches in the workspace README: semantics notes, design, levers, ncu kernel regex."""
    return catalog.CELLS.get((pattern, framework), {})


def _op_like(gpu, pattern, op, dtype, shapes_text):
    """The op.json fields the roofline and ISA-target helpers read, at render time (None for a refused input)."""
    spec = catalog.GPUS.get(gpu)
    if not spec or (pattern, spec["framework"]) not in catalog.CELLS or op not in catalog.OPS.get(pattern, {}):
        return None
    try:
        cases = shapes.build_cases(pattern, dtype, shapes_text)
    except catalog.InputError:
        return None
    return {"pattern": pattern, "op": op, "gpu": gpu, "dtype": dtype, "vendor": spec["vendor"],
            "framework": spec["framework"], "formulas": catalog.op_formulas(pattern, op), "cases": cases}


def kb_headline(gpu, pattern, op, dtype, shapes_text):
    """The headline case on the roofline (compute_utilization's rule and math), plus the measured ceilings."""
    op_like = _op_like(gpu, pattern, op, dtype, shapes_text)
    if op_like is None:
        return {}
    specs = compute_utilization.load_specs()
    case = compute_utilization.headline_case(op_like)
    flops, nbytes = compute_utilization.case_work(op_like, case)
    roof = compute_utilization.roofline(gpu, dtype, flops, nbytes, specs)
    measured = specs.get("measured", {}).get(gpu, {})
    return {**roof, "case": case["name"], "flops": flops, "bytes": nbytes,
            "flops_expr": op_like["formulas"]["flops"], "bytes_expr": op_like["formulas"]["bytes"],
            "command": compute_utilization.command(op_like, case, roof["roofline_floor_us"] / 1e3),
            "copy_gbps": measured.get("device_copy_gbps"), "matmul_tflops": measured.get("cublas_bf16_8192_tflops")}


def kb_isa_targets(gpu, pattern, op, dtype, shapes_text):
    """This op's ISA optimization targets (tools/isa_metrics.targets), for the workspace README's table."""
    op_like = _op_like(gpu, pattern, op, dtype, shapes_text)
    return isa_metrics.targets(op_like, compute_utilization.load_specs()) if op_like else []


def kb_code(text):
    return f"`{text}`"


def kb_check_op_name(name):
    """Refuse a bad op_name while prompting, before cookiecutter makes a folder of it.

    The pre-gen hook runs only after the output folder exists, and for a name like 'a/b' cookiecutter
    would leave 'a/' behind. Same check and message as the hook (validate_inputs).
    """
    try:
        validate_inputs.check_op_name(name)
    except catalog.InputError as err:
        print(f"kbaseline: error: {err}", file=sys.stderr)
        raise SystemExit(1) from None
    return name


def kb_logic_function(path):
    return validate_inputs.logic_function(path) if str(path).strip() else ""


class KbaselineExtension(Extension):
    def __init__(self, environment):
        super().__init__(environment)
        environment.globals["kbaseline_root"] = ROOT
        environment.filters.update(
            kb_gpu=kb_gpu, kb_gpu_note=kb_gpu_note, kb_derive=kb_derive, kb_op=kb_op, kb_abspath=kb_abspath,
            kb_logic_function=kb_logic_function, kb_op_info=kb_op_info,
            kb_check_op_name=kb_check_op_name, kb_cell=kb_cell, kb_headline=kb_headline, kb_code=kb_code,
            kb_isa_targets=kb_isa_targets,
        )
