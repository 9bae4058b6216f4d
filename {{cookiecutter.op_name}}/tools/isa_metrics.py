"""Read the compiled kernel's ISA and measure it against this op's ISA optimization targets.

    python tools/isa_metrics.py [--workspace .] [--json]

Which ISA is read (newest first, from `build/`, the dump dir of `python test_kernel.py --compile-only`):
- NVIDIA: SASS when a cubin and `cuobjdump`/`nvdisasm` exist (a cubin is assembled from the PTX with
  `ptxas` when only ptxas is installed); otherwise the PTX (`kernel_*.ptx`). `ptxas -v` on the PTX gives the
  physical registers and spills; PTX `.reg` declarations are virtual registers and say nothing about spills.
- AMD: the AMDGPU assembly (`kernel_*.s` / `.amdgcn`, FlyDSL), whose metadata holds `.vgpr_count`,
  spill counts, `.private_segment_fixed_size` (scratch) and `.group_segment_fixed_size` (LDS).

What is counted: tensor-core instructions (wgmma.mma_async / HGMMA; v_mfma), global loads and stores by
width in bits (ld.global.v4.b32 = 128, LDG.E.128 = 128, global_load_dwordx4 = 128), TMA bulk copies,
registers, spills / local memory, and shared memory (LDS) bytes.

`targets(op, specs)` is pure: from op.json fields (``isa_targets``: what the pattern and cell promise; the DSL's
ISA vocabulary in ``framework_info.isa``; dtype, gpu, formulas, cases) and gpu_specs.json it derives the targets
of the op's roofline position. The template calls it to write the
workspace README's target table; `progress()` fills memory's `isa_metric_progress` after a run.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import compute_utilization
import files

WS = Path(__file__).resolve().parent.parent
NOT_RUN = "not run"

# Share of the same-run device-copy bandwidth a memory-bound kernel should reach. The copy is what the
# memory system delivers to a pure stream; an elementwise or reduction kernel is that stream plus register
# math, and this project's H200 elementwise kernels reached 97-99% of it
# (benchmarks/2026-11-30-h200-elementwise.md), so 90% is a floor a correct streaming design meets. Decode
# attention adds per-split softmax reductions and a second (split-K combine) pass over a small partial
# buffer, so it keeps a wider margin.
COPY_FRACTION = {"memory": 0.90, "attention": 0.80}

PTX_TYPE_BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
                 "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32,
                 "b64": 64, "u64": 64, "s64": 64, "f64": 64, "b128": 128}
SASS_WIDTH = {"U8": 8, "S8": 8, "U16": 16, "S16": 16, "64": 64, "128": 128}
AMD_WIDTH = {"dword": 32, "dwordx2": 64, "dwordx3": 96, "dwordx4": 128, "b32": 32, "b64": 64, "b96": 96,
             "b128": 128, "short": 16, "ushort": 16, "sshort": 16, "b16": 16, "byte": 8, "ubyte": 8, "sbyte": 8,
             "u16": 16, "i16": 16, "u8": 8, "i8": 8}


# --------------------------------------------------------------------------------------------
# Parsers: one ISA text in, a metrics dict out
# --------------------------------------------------------------------------------------------

def _empty(isa: str) -> dict:
    return {"isa": isa, "tensor_core": {}, "global_loads": {}, "global_stores": {}, "tma": 0,
            "registers": None, "spill_bytes": None, "spill_count": None, "local_bytes": 0, "local_known": False,
            "local_instructions": 0,
            "shared_bytes": 0, "dynamic_shared": False, "notes": []}


def _bump(counts: dict, key, n: int = 1) -> None:
    counts[key] = counts.get(key, 0) + n


def _ptx_width(qualifiers: str) -> int:
    quals = qualifiers.strip(".").split(".")
    vec = next((int(q[1:]) for q in quals if re.fullmatch(r"v[248]", q)), 1)
    bits = next((PTX_TYPE_BITS[q] for q in reversed(quals) if q in PTX_TYPE_BITS), 32)
    return vec * bits


def _declared_bytes(text: str, space: str) -> tuple[int, bool]:
    """Bytes of `.local`/`.shared` arrays declared in PTX, and whether an unsized (dynamic) one exists."""
    total, dynamic = 0, False
    for m in re.finditer(rf"^\s*(?:\.extern\s+)?\.{space}\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+[\w$]+\[(\d*)\]", text, re.M):
        if m.group(2):
            total += PTX_TYPE_BITS.get(m.group(1), 8) // 8 * int(m.group(2))
        else:
            dynamic = True
    return total, dynamic


def ptx_metrics(text: str) -> dict:
    """Counts from PTX text (comments stripped)."""
    code = re.sub(r"//[^\n]*", "", text)
    out = _empty("PTX")
    for m in re.finditer(r"\b(ld|st)\.global((?:\.[\w:]+)*)\s", code):
        _bump(out["global_loads" if m.group(1) == "ld" else "global_stores"], _ptx_width(m.group(2)))
    for m in re.finditer(r"\bcp\.async\.c[ag]\.shared(?:::cta)?\.global[\w.:]*\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(\d+)", code):
        _bump(out["global_loads"], 8 * int(m.group(1)))  # cp.async: 4, 8 or 16 bytes per thread
    out["tma"] = len(re.findall(r"\bcp\.async\.bulk\.tensor", code))
    for m in re.finditer(r"\b(wgmma\.mma_async|mma\.sync|tcgen05\.mma)\b", code):
        _bump(out["tensor_core"], m.group(1))
    out["local_bytes"], _ = _declared_bytes(code, "local")
    out["local_instructions"] = len(re.findall(r"\b(?:ld|st)\.local\b", code))
    out["shared_bytes"], out["dynamic_shared"] = _declared_bytes(code, "shared")
    virtual = sum(int(n) for n in re.findall(r"^\s*\.reg\s+\.\w+\s+%\w+<(\d+)>", code, re.M))
    out["virtual_registers"] = virtual
    out["notes"].append(f"PTX `.reg` declares {virtual} virtual registers: ptxas allocates the physical ones, "
                        "and register spills appear only after ptxas (ptxas -v or SASS)")
    return out


def ptxas_usage(text: str) -> dict:
    """Registers, spills, stack and static smem from `ptxas -v` output (summed over entry functions)."""
    regs = [int(n) for n in re.findall(r"Used (\d+) registers", text)]
    spills = sum(int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text))
    stack = sum(int(n) for n in re.findall(r"(\d+) bytes stack frame", text))
    smem = sum(int(n) for n in re.findall(r"(\d+) bytes smem", text))
    return {"registers": max(regs) if regs else None, "spill_bytes": spills if regs else None,
            "stack_bytes": stack, "shared_bytes": smem}


def sass_metrics(text: str, res_usage: str = "") -> dict:
    """Counts from `cuobjdump -sass` / `nvdisasm` text, plus `cuobjdump -res-usage` lines when given."""
    out = _empty("SASS")
    for m in re.finditer(r"\b(LDGSTS|LDG|STG)\b((?:\.\w+)*)", text):
        quals = m.group(2).strip(".").split(".")
        width = next((SASS_WIDTH[q] for q in quals if q in SASS_WIDTH), 32)
        _bump(out["global_stores" if m.group(1) == "STG" else "global_loads"], width)
    for m in re.finditer(r"\b(HGMMA|HMMA|IMMA|UTCHMMA|UTCQMMA)\b", text):
        _bump(out["tensor_core"], m.group(1))
    out["tma"] = len(re.findall(r"\bUTMALDG\b|\bUTMASTG\b", text))
    out["local_instructions"] = len(re.findall(r"\b(?:LDL|STL)\b", text))
    if res_usage:
        regs = [int(n) for n in re.findall(r"REG:(\d+)", res_usage)]
        out["registers"] = max(regs) if regs else None
        local = [int(n) for n in re.findall(r"(?:LOCAL|STACK):(\d+)", res_usage)]
        out.update(local_bytes=max(local, default=0), local_known=bool(regs), allocation_source="cuobjdump -res-usage",
                   shared_bytes=sum(int(n) for n in re.findall(r"SHARED:(\d+)", res_usage)))
    return out


def amd_metadata(text: str, key: str) -> list[int]:
    """A numeric field, one value per kernel in the file: '.vgpr_count' (code-object metadata, also under a
    YAML '- '), '.amdhsa_next_free_vgpr' (kernel descriptor) or '; NumVgprs' (the compiler's comment block)."""
    return [int(v) for v in re.findall(rf"^[\s-]*;?\s*{re.escape(key)}[:\s]\s*(\d+)", text, re.M)]


def _amd_meta(text: str, *keys: str) -> int | None:
    """The first of `keys` found; with several kernels in one file (a split and a merge kernel), the largest."""
    for key in keys:
        found = amd_metadata(text, key)
        if found:
            return max(found)
    return None


def amdgpu_metrics(text: str) -> dict:
    """Counts from AMDGPU assembly (LLVM `.s`), its code-object metadata and the compiler's comment block."""
    code = re.sub(r";[^\n]*", "", text)
    out = _empty("AMDGPU")
    for m in re.finditer(r"\b(?:global|buffer)_(load|store)_(?:lds_)?([a-z]+(?:x[234])?|[bui]\d+)(?:_d16(?:_hi)?)?\b",
                         code):
        width = AMD_WIDTH.get(m.group(2))
        if width:
            _bump(out["global_loads" if m.group(1) == "load" else "global_stores"], width)
    for m in re.finditer(r"\b(v_s?mfma\w*)", code):
        _bump(out["tensor_core"], "v_mfma" if m.group(1).startswith("v_mfma") else "v_smfmac")
    out["registers"] = _amd_meta(text, ".vgpr_count", "; NumVgprs", ".amdhsa_next_free_vgpr")
    out["agpr_count"] = _amd_meta(text, ".agpr_count", "; NumAgprs")
    spills = [n for n in (_amd_meta(text, ".vgpr_spill_count"), _amd_meta(text, ".sgpr_spill_count")) if n is not None]
    scratch = _amd_meta(text, ".private_segment_fixed_size", ".amdhsa_private_segment_fixed_size", "; ScratchSize")
    out.update(local_bytes=scratch or 0, local_known=scratch is not None, spill_count=sum(spills) if spills else None,
               allocation_source="AMDGPU kernel metadata",
               local_instructions=len(re.findall(r"\bscratch_(?:load|store)_", code)))
    out["shared_bytes"] = _amd_meta(text, ".group_segment_fixed_size", ".amdhsa_group_segment_fixed_size") or 0
    return out


# --------------------------------------------------------------------------------------------
# Finding and reading the workspace's compiled kernel
# --------------------------------------------------------------------------------------------

def _tool(*names: str) -> str | None:
    return next((found for name in names if (found := shutil.which(name))), None)


def _run(*cmd: str) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr if done.returncode == 0 else ""


def isa_file(ws: Path) -> Path | None:
    """The ISA the last compile-only wrote (results/compile_only.json), else the newest build/kernel_* file."""
    build = ws / "build"
    record = ws / "results" / "compile_only.json"
    if record.is_file():
        named = build / files.load_json(record).get("isa_file", "")
        if named.is_file():
            return named
    found = [f for f in build.glob("kernel_*") if f.suffix in (".ptx", ".s", ".amdgcn", ".sass")]
    return max(found, key=lambda f: f.stat().st_mtime) if found else None


def _nvidia(path: Path, target: str) -> dict:
    text = files.read_text(path)
    if path.suffix == ".sass":
        return sass_metrics(text)
    metrics = ptx_metrics(text)
    ptxas, dumper = _tool("ptxas"), _tool("cuobjdump", "nvdisasm")
    cubin = next(iter(sorted(path.parent.glob("*.cubin"))), None)
    with tempfile.TemporaryDirectory() as tmp:
        if ptxas:
            made = Path(tmp) / "kernel.cubin"
            usage = ptxas_usage(_run(ptxas, f"-arch={target}", "-v", str(path), "-o", str(made)))
            if usage["registers"] is not None:
                metrics.update(registers=usage["registers"], spill_bytes=usage["spill_bytes"], local_known=True,
                               local_bytes=max(metrics["local_bytes"], usage["stack_bytes"]),
                               shared_bytes=max(metrics["shared_bytes"], usage["shared_bytes"]))
                metrics["allocation_source"] = f"ptxas -arch={target} -v"
                cubin = cubin or made
        if cubin and dumper:
            flag = ["-sass"] if dumper.endswith("cuobjdump") else []
            sass = _run(dumper, *flag, str(cubin))
            res = _run(dumper, "-res-usage", str(cubin)) if dumper.endswith("cuobjdump") else ""
            if sass:
                keep = {k: metrics.get(k) for k in ("registers", "spill_bytes", "local_known", "shared_bytes", "notes",
                                                    "allocation_source")}
                metrics = sass_metrics(sass, res)
                metrics.update({k: v for k, v in keep.items() if metrics.get(k) in (None, 0, [], False)})
                metrics["notes"].append(f"instructions from {Path(dumper).name} of {cubin.name}")
    return metrics


# ISA family (op.json framework_info.isa.family, from the DSL's module) -> reader of one compiled file
READERS = {"ptx": _nvidia, "amdgpu": lambda path, target: amdgpu_metrics(files.read_text(path))}


def read_workspace(ws: Path, op: dict) -> dict | None:
    """Metrics of the workspace's compiled kernel, or None when nothing has been compiled yet."""
    path = isa_file(ws)
    if path is None:
        return None
    family = op["framework_info"]["isa"]["family"]
    if family not in READERS:
        raise ValueError(f"isa_metrics: no reader for ISA family {family!r} (op.json framework_info.isa); "
                         f"known: {', '.join(READERS)}")
    metrics = READERS[family](path, op["target"])
    metrics["file"] = str(path.relative_to(ws)) if path.is_relative_to(ws) else str(path)
    return metrics


# --------------------------------------------------------------------------------------------
# Targets (pure) and progress against them
# --------------------------------------------------------------------------------------------

def roofline_position(op: dict, specs: dict) -> dict:
    """Arithmetic intensity of the timed cases against the GPU's ridge point (cited dense peak / HBM)."""
    name, spec = compute_utilization.gpu_spec(op["gpu"], specs)
    timed = [c for c in op["cases"] if c.get("timed", True)] or op["cases"]
    roofs = [compute_utilization.roofline(name, op["dtype"], *compute_utilization.case_work(op, c), specs) for c in timed]
    intensities = [r["arithmetic_intensity"] for r in roofs]
    # the most intense case decides; with no cited peak there is no ridge, and the pattern's own kind says
    bound = max(roofs, key=lambda r: r["arithmetic_intensity"])["bound"] or (
        "compute" if op["isa_targets"]["kind"] == "compute" else "memory")
    return {"gpu": name, "spec": spec, "peak": spec["dense_tflops"].get(op["dtype"], {}),
            "bandwidth_gbps": roofs[0]["peak_bandwidth_gbps"], "ridge": roofs[0]["ridge_point"], "bound": bound,
            "intensity_min": min(intensities), "intensity_max": max(intensities)}


def _position_text(pos: dict, op: dict) -> str:
    ai = (f"{pos['intensity_min']:.3g}" if pos["intensity_min"] == pos["intensity_max"]
          else f"{pos['intensity_min']:.3g}-{pos['intensity_max']:.3g}")
    if pos["ridge"] is None:
        return f"arithmetic intensity {ai} FLOP/B; no cited dense {op['dtype']} peak for {pos['gpu']}, so no ridge point"
    side = "below" if pos["bound"] == "memory" else "at or above"
    return (f"arithmetic intensity {ai} FLOP/B is {side} the ridge point {pos['ridge']:.0f} FLOP/B "
            f"({pos['peak']['value']:g} TFLOP/s / {pos['bandwidth_gbps']:g} GB/s): {pos['bound']}-bound")


def targets(op: dict, specs: dict) -> list[dict]:
    """This op's ISA optimization targets, from its roofline position and the cited specs.

    Each is {metric, target, why, source, key}; `key` links it to a measured value in progress().
    """
    pos = roofline_position(op, specs)
    spec, want, words = pos["spec"], op["isa_targets"], op["framework_info"]["isa"]
    where = _position_text(pos, op)
    cited = f"reference/gpu_specs.json ({spec['hbm_bandwidth_gbps']['source']['title']})"
    measured = specs.get("measured", {}).get(pos["gpu"], {})
    kind = "attention" if want["kind"] == "attention" else pos["bound"]
    out = []
    if want.get("tensor_core"):
        out.append({"key": "tensor_core", "metric": f"tensor-core instructions: {words['tensor_core']}",
                    "target": "present",
                    "why": f"the matrix products run on the {words['cores']}: the cited {op['dtype']} dense peak "
                           f"({pos['peak'].get('value')} TFLOP/s) is a tensor-core figure; {where}",
                    "source": f"reference/gpu_specs.json ({pos['peak'].get('kind', 'no figure')})"})
    if want.get("tma"):
        out.append({"key": "tma", "metric": "TMA bulk tensor copies: cp.async.bulk.tensor / UTMALDG",
                    "target": "present", "why": "Hopper feeds wgmma from shared memory loaded by the TMA engine, "
                                                "freeing threads from address math",
                    "source": "sm_90a ISA (PTX ISA: cp.async.bulk.tensor)"})
    if kind in ("memory", "attention"):
        out.append({"key": "vec_loads", "metric": f"128-bit global loads: {words['vec128_load']}", "target": "present",
                    "why": f"{where}; 16 B per thread per access is the widest global access, the fewest "
                           "instructions per byte moved", "source": cited})
        if want.get("vec_stores"):
            out.append({"key": "vec_stores", "metric": f"128-bit global stores: {words['vec128_store']}", "target": "present",
                        "why": "the output is as large as an input: its stores stream as many bytes as the loads",
                        "source": cited})
    out.append({"key": "spills", "metric": "register spills / local (scratch) memory", "target": "0 B",
                "why": "a spill is extra memory traffic per thread, on top of the compulsory bytes of the roofline",
                "source": "ptxas -v / SASS LDL/STL; AMDGPU .vgpr_spill_count, .private_segment_fixed_size"})
    if kind in ("memory", "attention"):
        frac = COPY_FRACTION[kind]
        copy = measured.get("device_copy_gbps")
        copy_src = (f"measured device copy {copy} GB/s ({measured.get('date')}, {measured.get('method')})" if copy
                    else "the device copy timed in the same run (results.json device_copy)")
        out.append({"key": "copy_pct", "metric": "bandwidth, % of the measured device-copy bandwidth",
                    "target": f">= {100 * frac:.0f}%",
                    "why": f"{where}: time = bytes / bandwidth, and a device-to-device copy is the achievable "
                           f"bandwidth (cited HBM {pos['bandwidth_gbps']:g} GB/s)", "source": f"{cited}; {copy_src}"})
    else:
        out.append(_peak_target(op, pos, measured, where))
    return out


def _peak_target(op: dict, pos: dict, measured: dict, where: str) -> dict:
    """% of the cited dense peak: the vendor library's measured rate on this GPU is the achievable share."""
    peak = pos["peak"].get("value")
    lib = next(((k, v) for k, v in measured.items() if k.endswith("_tflops") and f"_{op['dtype']}_" in k), None)
    row = {"key": "peak_pct", "metric": f"TFLOP/s, % of the dense {op['dtype']} peak",
           "source": f"reference/gpu_specs.json ({pos['peak'].get('source', {}).get('title', 'no source')})"}
    if peak and lib:
        row.update(target=f">= {100 * lib[1] / peak:.0f}%",
                   why=f"{where}; the vendor library reached {lib[1]} TFLOP/s ({lib[0]}) = "
                       f"{100 * lib[1] / peak:.0f}% of {peak:g} on this GPU",
                   source=row["source"] + f"; measured {measured.get('date')}")
    else:
        row.update(target="as close as the vendor library",
                   why=f"{where}; no measured library rate for {pos['gpu']} {op['dtype']} in gpu_specs.json "
                       "`measured`, so no % is set: time the vendor library and record it there")
    return row


def _vec_current(metrics: dict, side: str) -> tuple[str, bool]:
    counts = metrics[side]
    total = sum(counts.values())
    widths = ", ".join(f"{w}-bit x{n}" for w, n in sorted(counts.items(), reverse=True)) or "none"
    return f"{counts.get(128, 0)} of {total} ({widths})", counts.get(128, 0) > 0


def _isa_current(key: str, metrics: dict) -> tuple[object, bool | None]:
    """(current, met) of an ISA target from parsed metrics; met None when this ISA cannot show it."""
    if key == "tensor_core":
        n = sum(metrics["tensor_core"].values())
        return (", ".join(f"{k} x{v}" for k, v in metrics["tensor_core"].items()) or "none"), n > 0
    if key == "tma":
        return metrics["tma"], metrics["tma"] > 0
    if key in ("vec_loads", "vec_stores"):
        return _vec_current(metrics, "global_loads" if key == "vec_loads" else "global_stores")
    return _spill_current(metrics)


def _spill_current(m: dict) -> tuple[object, bool | None]:
    """Spills and local memory; definite only when the allocator's numbers are known (ptxas, SASS, AMDGPU)."""
    used = m["local_bytes"] or m["local_instructions"] or m["spill_bytes"] or m["spill_count"]
    if m["local_known"]:
        spilled = (f"{m['spill_bytes']} B spilled" if m["spill_bytes"] is not None else
                   f"{m['spill_count']} registers spilled" if m["spill_count"] is not None else "spills in local")
        return f"{m['local_bytes']} B local/scratch, {spilled}", not used
    if used:
        return f"{m['local_bytes']} B .local, {m['local_instructions']} local accesses", False
    return "no .local in the PTX; register spills are not visible without ptxas", None


def _perf_current(key: str, target: str, perf: dict | None, not_run: str | None) -> tuple[object, bool | None]:
    if not_run:
        return f"{NOT_RUN} ({not_run})", None
    field = "copy_bandwidth_utilization_pct" if key == "copy_pct" else "tflops_peak_utilization_pct"
    value = (perf or {}).get(field)
    if value is None:
        return "not measured", None
    threshold = re.search(r"([\d.]+)%", target)
    return round(value, 1), (value >= float(threshold.group(1))) if threshold else None


def progress(op: dict, specs: dict, metrics: dict | None, perf: dict | None, not_run: str | None = None) -> list[dict]:
    """memory `isa_metric_progress`: each target with its current value and whether it is met.

    metrics: read_workspace() output (None: nothing compiled); perf: the headline case's utilization row;
    not_run: why nothing ran on a GPU (performance targets then say so and are not judged).
    """
    rows = []
    for t in targets(op, specs):
        if t["key"] in ("copy_pct", "peak_pct"):
            current, met = _perf_current(t["key"], t["target"], perf, not_run)
            source = f"{NOT_RUN}: {not_run}" if not_run else "results/utilization.json (headline case)"
        elif metrics is None:
            current, met, source = "no compiled ISA (run python test_kernel.py --compile-only)", None, "build/"
        else:
            current, met = _isa_current(t["key"], metrics)
            source = f"{metrics['isa']}: {metrics.get('file', '?')}"
            if t["key"] == "spills" and metrics.get("allocation_source"):
                source += f" ({metrics['allocation_source']})"
        rows.append({"metric": t["metric"], "target": t["target"], "current": current, "met": met, "source": source})
    return rows


def markdown(rows: list[dict]) -> str:
    met = {True: "yes", False: "no", None: "-"}
    lines = ["| metric | target | current | met |", "|---|---|---|---|"]
    lines += [f"| {r['metric']} | {r['target']} | {r['current']} | {met[r['met']]} |" for r in rows]
    return "\n".join(lines)


def summary(metrics: dict) -> str:
    """One line about the instruction mix, registers and shared memory."""
    def widths(counts):
        return ", ".join(f"{w}-bit x{n}" for w, n in sorted(counts.items(), reverse=True)) or "none"
    regs = metrics["registers"]
    unit = "VGPRs" if metrics["isa"] == "AMDGPU" else "registers"
    reg_text = f"{regs} {unit}/thread" if regs is not None else (
        f"{metrics.get('virtual_registers', '?')} virtual PTX registers (physical count needs ptxas)")
    shared = (f"{metrics['shared_bytes']} B " + ("LDS (group segment)" if unit == "VGPRs" else "static shared")
              + (" + dynamic (size set at launch)" if metrics["dynamic_shared"] else ""))
    tc = ", ".join(f"{k} x{v}" for k, v in metrics["tensor_core"].items()) or "none"
    return (f"{metrics['isa']} `{metrics.get('file', '?')}`: global loads {widths(metrics['global_loads'])}; "
            f"stores {widths(metrics['global_stores'])}; tensor-core {tc}; "
            + ("" if metrics["isa"] == "AMDGPU" else f"TMA {metrics['tma']}; ") + f"{reg_text}; "
            f"{_spill_current(metrics)[0]}; {shared}.")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="ISA metrics of the compiled kernel against this op's targets.")
    p.add_argument("--workspace", type=Path, default=WS, help="the workspace (default: this one)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = p.parse_args(argv)
    ws = args.workspace.resolve()
    try:
        op = files.load_json(ws / "op.json")
        specs = compute_utilization.load_specs(ws / "reference" / "gpu_specs.json")
        metrics = read_workspace(ws, op)
        results = files.load_json_if_file(ws / "results" / "results.json") or {}
        util = (files.load_json_if_file(ws / "results" / "utilization.json") or {}) if results.get("ran") else {}
    except files.FileProblem as err:
        return files.refuse("isa_metrics", f"{err} (--workspace is the folder holding op.json)")
    perf = max(util.values(), key=lambda u: u["bytes"]) if util else None
    not_run = None if results.get("ran") else results.get("not_run_reason", "no results/results.json")
    rows = progress(op, specs, metrics, perf, not_run)
    if args.json:
        print(json.dumps({"metrics": metrics, "progress": rows}, indent=2, default=str))
        return 0
    print(summary(metrics) if metrics else "No compiled ISA in build/: run `python test_kernel.py --compile-only`.")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
