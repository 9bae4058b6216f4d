"""Draw this workspace's roofline to results/roofline.png: the GPU's ceilings and every measured case.

    python tools/roofline.py [--workspace .]

Ceilings: the cited dense peak for op.json's dtype and the cited HBM bandwidth (reference/gpu_specs.json),
the device copy measured in the same run (results.json `device_copy.gbps`, else gpu_specs.json
`measured`), and a measured library matmul rate for this dtype where gpu_specs.json has one. Points: each
timed case, at its arithmetic intensity (op.json formulas, evaluated safely with the case's vars) and
its achieved TFLOP/s (FLOP / median latency); torch eager on the same case as a hollow marker, the user's kernel
demo (op.json `demo`) as a hollow diamond. With no
run there are no points, and the plot and this module's note say so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import compute_utilization
import files

WS = Path(__file__).resolve().parent.parent
PNG = Path("results") / "roofline.png"


def ceilings(op: dict, specs: dict, results: dict | None) -> list[dict]:
    """Horizontal (compute, TFLOP/s) and sloped (memory, GB/s) ceilings, each with where it comes from."""
    name, spec = compute_utilization.gpu_spec(op["gpu"], specs)
    peak = spec["dense_tflops"].get(op["dtype"], {})
    measured = specs.get("measured", {}).get(name, {})
    out = [{"kind": "memory", "value": spec["hbm_bandwidth_gbps"]["value"], "style": "-",
            "label": f"HBM {spec['hbm_bandwidth_gbps']['value']:g} GB/s (cited)"}]
    copy = (results or {}).get("device_copy", {}).get("gbps")
    if copy:
        out.append({"kind": "memory", "value": copy, "style": "--", "label": f"device copy {copy:.0f} GB/s (this run)"})
    elif measured.get("device_copy_gbps"):
        out.append({"kind": "memory", "value": measured["device_copy_gbps"], "style": "--",
                    "label": f"device copy {measured['device_copy_gbps']} GB/s (measured {measured.get('date')})"})
    if peak.get("value"):
        out.append({"kind": "compute", "value": peak["value"], "style": "-",
                    "label": f"dense {op['dtype']} {peak['value']:g} TFLOP/s (cited)"})
    for key, value in measured.items():
        if key.endswith("_tflops") and f"_{op['dtype']}_" in key:
            out.append({"kind": "compute", "value": value, "style": "--",
                        "label": f"{key.removesuffix('_tflops').replace('_', ' ')} {value} TFLOP/s "
                                 f"(measured {measured.get('date')})"})
    return out


def points(op: dict, results: dict | None) -> list[dict]:
    """One point per case with a measured latency: intensity (FLOP/byte) and TFLOP/s, kernel and torch."""
    if not results or not results.get("ran"):
        return []
    cases = {c["name"]: c for c in op["cases"]}
    out = []
    for rec in results.get("cases", []):
        if "latency_us" not in rec or rec["name"] not in cases:
            continue
        flops, nbytes = compute_utilization.case_work(op, cases[rec["name"]])
        out.append({"case": rec["name"], "intensity": flops / nbytes, "tflops": flops / (rec["latency_us"] * 1e6),
                    "torch_tflops": flops / (rec["torch_latency_us"] * 1e6) if rec.get("torch_latency_us") else None,
                    "demo_tflops": flops / (rec["demo_latency_us"] * 1e6) if rec.get("demo_latency_us") else None})
    return out


def intensities(op: dict) -> list[float]:
    """FLOP/byte of every case from op.json's formulas: where the op sits, measured or not."""
    return [flops / nbytes for flops, nbytes in (compute_utilization.case_work(op, c) for c in op["cases"])]


def _x_range(ceils: list[dict], op: dict) -> tuple[float, float]:
    top = max((c["value"] for c in ceils if c["kind"] == "compute"), default=None)
    bw = min(c["value"] for c in ceils if c["kind"] == "memory")
    xs = intensities(op) + ([top * 1e3 / bw] if top else [])
    return min(xs) / 10, max(xs) * 10


def draw(path: Path, title: str, ceils: list[dict], pts: list[dict], op: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lo, hi = _x_range(ceils, op)
    top = max((c["value"] for c in ceils if c["kind"] == "compute"), default=None)
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=110)
    for c in ceils:
        if c["kind"] == "compute":
            ax.plot([lo, hi], [c["value"]] * 2, c["style"], color="tab:red", label=c["label"])
        else:  # TFLOP/s = GB/s * FLOP/byte / 1000, capped by the highest compute ceiling
            knee = top * 1e3 / c["value"] if top else hi
            ax.plot([lo, min(knee, hi)], [c["value"] * lo / 1e3, c["value"] * min(knee, hi) / 1e3], c["style"],
                    color="tab:blue", label=c["label"])
    ai = intensities(op)
    ax.axvspan(min(ai) / 1.15, max(ai) * 1.15, color="tab:green", alpha=0.12, label="this op's cases (op.json FLOP/byte)")
    for p in pts:
        ax.plot(p["intensity"], p["tflops"], "o", color="black")
        ax.annotate(p["case"], (p["intensity"], p["tflops"]), textcoords="offset points", xytext=(6, -10), fontsize=7)
        if p["torch_tflops"]:
            ax.plot(p["intensity"], p["torch_tflops"], "o", mfc="none", color="gray")
        if p.get("demo_tflops"):  # the user's kernel demo, same case, same run
            ax.plot(p["intensity"], p["demo_tflops"], "D", mfc="none", color="tab:purple")
    if pts:
        ax.plot([], [], "o", color="black", label="kernel (measured)")
        ax.plot([], [], "o", mfc="none", color="gray", label="torch eager (measured)")
    if any(p.get("demo_tflops") for p in pts):
        ax.plot([], [], "D", mfc="none", color="tab:purple", label=f"your kernel demo `{op['demo']['function']}` (measured)")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), xlabel="arithmetic intensity (FLOP/byte)",
           ylabel="TFLOP/s", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def plot(ws: Path, op: dict, results: dict | None, specs: dict | None = None, not_run_reason: str | None = None) -> dict:
    """Write results/roofline.png. Returns {path (None when not drawn), points, note} for the report."""
    specs = specs or compute_utilization.load_specs(ws / "reference" / "gpu_specs.json")
    png = ws / PNG
    ceils, pts = ceilings(op, specs, results), points(op, results)
    ran = bool(results and results.get("ran"))
    reason = not_run_reason or (results or {}).get("not_run_reason") or "no results/results.json"
    if pts:
        note = f"{len(pts)} measured case(s) on {results.get('device')}; hollow markers: torch eager, same run" + (
            "; hollow diamonds: your kernel demo, same run." if any(p.get("demo_tflops") for p in pts) else ".")
    elif ran:
        note = "No points: no case was timed (timed cases failed correctness)."
    else:
        note = f"No points were measured (not run: {reason}); only the ceilings are drawn."
    try:
        draw(png, f"{op['op']} {op['dtype']} on {op['gpu']}" + ("" if pts else " (no measured points)"), ceils, pts, op)
    except ImportError as err:
        png.unlink(missing_ok=True)  # never leave a stale plot that the report would embed
        return {"path": None, "points": 0, "note": f"not drawn: matplotlib is not installed here ({err})"}
    return {"path": png, "points": len(pts), "note": note}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Draw the roofline with the measured cases to results/roofline.png.")
    p.add_argument("--workspace", type=Path, default=WS, help="the workspace (default: this one)")
    args = p.parse_args(argv)
    ws = args.workspace.resolve()
    try:
        op = files.load_json(ws / "op.json")
        results = files.load_json_if_file(ws / "results" / "results.json")
    except files.FileProblem as err:
        return files.refuse("roofline", err)
    done = plot(ws, op, results)
    print(f"roofline: {done['path'] or 'no plot'}: {done['note']}")
    return 0 if done["path"] else 1


if __name__ == "__main__":
    sys.exit(main())
