"""Lane-level numpy model of the FlyDSL reduction cell's index math and reduction algorithm.

One job: take the launch plan of {{cookiecutter.op_name}}/patterns/reduction/flydsl/kernel.py (its own plan() and
_pick_vec()) and check, for boundary shapes [M, N] with row stride ld, bf16 and fp32 vectors, and every op
(sum, mean, max, softmax, rmsnorm), that
  * the lane/vector mapping covers every element of a row exactly once and nothing else (register path: the
    first two and last two workgroups; looped path: every iteration), and no vector leaves the tensor's span
    (num_records);
  * the kernel's fold order in numpy fp32 (per-lane vectors, then across lanes; the looped path's online
    softmax; the -inf shift; NaN and +-inf propagation) matches torch in float64 (relative error < 2e-4, same
    NaN / inf positions), on up to 40 rows with a NaN, an all -inf row, a leading -inf half, a +inf and a
    large row planted.
It does NOT check the compiler (FlyDSL's lowering; that is read from the ISA) or the hardware: nothing runs on
a GPU.

usage: .venv/bin/python benchmarks/models/reduction_flydsl.py [MxN[@ld] ...]
       (no shapes: the boundary cases below, well under a minute). Exit status 1 if any case fails.
"""

import math
import sys
import tempfile
import time
from pathlib import Path

import cell
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]


def load_kernel(tmp, arch="gfx942"):
    """Import the cell's kernel.py (benchmarks/models/cell.py: no GPU, no cutlass)."""
    return cell.load_kernel(tmp, "reduction", "sum", arch)


kernel = None  # the cell's kernel module, set by main()

L = math.log2(math.e)
F = np.float32


def lane_slots(cfg, nv, row_local_lanes):
    """For the register path: list over lanes t of the row vector indices j it loads (None = skipped)."""
    out = []
    for t in range(cfg["tpr"]):
        out.append([(k * cfg["tpr"] + t) if (cfg["full"] or k * cfg["tpr"] + t < nv) else None
                    for k in range(cfg["chunks"])])
    return out


def coverage(m, n, ld, vec, cfg):
    nv = n // vec
    if cfg["looped"]:
        step = cfg["threads"] * cfg["chunks"]
        seen = np.zeros(nv, int)
        for it in range(cfg["iters"]):
            for k in range(cfg["chunks"]):
                j = it * step + k * cfg["threads"] + np.arange(cfg["threads"])
                seen[j[j < nv]] += 1
        assert (seen == 1).all(), "looped coverage"
        return
    rows = cfg["rows"]
    grid = -(-m // rows)
    hit = np.zeros((m, nv), int)
    tid = np.arange(cfg["threads"])
    for b in sorted({0, 1, grid - 2, grid - 1} & set(range(grid))):
        row = b * rows + tid // cfg["tpr"]
        t = tid % cfg["tpr"]
        for k in range(cfg["chunks"]):
            j = k * cfg["tpr"] + t
            ok = (row < m) & (True if cfg["full"] else (j < nv))
            assert (j[ok] < nv).all(), "full flag wrong"
            np.add.at(hit, (row[ok], j[ok]), 1)
            # byte offset of the vector must stay inside the span (num_records)
            off = (row[ok] * (ld // vec) + j[ok]) * vec
            assert (off + vec <= (m - 1) * ld + n).all(), "vector past the span (num_records)"
    checked = sorted({0, 1, grid - 2, grid - 1} & set(range(grid)))
    rows_checked = [r for b in checked for r in range(b * rows, min(m, b * rows + rows))]
    assert (hit[rows_checked] == 1).all(), "register coverage"


def nanmax_prop(a, axis=None):
    return np.max(a, axis=axis)  # numpy max propagates NaN


def model(op, x, w, eps, vec, cfg):
    """x: [M, N] float32 numpy. Returns float32 numpy output, folding as the kernel does."""
    m, n = x.shape
    nv = n // vec
    ident = -np.inf if op in ("max", "softmax") else 0.0
    if not cfg["looped"]:
        tpr, ch = cfg["tpr"], cfg["chunks"]
        xv = np.full((m, tpr, ch, vec), ident, F)
        for t in range(tpr):
            for k in range(ch):
                j = k * tpr + t
                if j < nv:
                    xv[:, t, k, :] = x[:, j * vec:(j + 1) * vec]
        lanes = xv.reshape(m, tpr, ch * vec)
        if op in ("sum", "mean"):
            r = lanes.sum(-1, dtype=F).sum(-1, dtype=F)
            return r / F(n) if op == "mean" else r
        if op == "max":
            return nanmax_prop(nanmax_prop(lanes, -1), -1)
        if op == "softmax":
            mx = nanmax_prop(nanmax_prop(lanes, -1), -1)[:, None, None]
            with np.errstate(invalid="ignore", over="ignore"):
                e = np.exp2((lanes - mx) * F(L)).astype(F)
            s = e.sum(-1, dtype=F).sum(-1, dtype=F)[:, None, None]
            y = e * (F(1) / s)
        else:
            ss = (lanes * lanes).sum(-1, dtype=F).sum(-1, dtype=F)
            rstd = (F(1) / np.sqrt(ss / F(n) + F(eps)))[:, None, None]
            wv = np.zeros((tpr, ch, vec), F)
            for t in range(tpr):
                for k in range(ch):
                    j = k * tpr + t
                    if j < nv:
                        wv[t, k] = w[j * vec:(j + 1) * vec]
            y = lanes * rstd * wv.reshape(1, tpr, ch * vec)
        out = np.empty((m, n), F)
        yv = y.reshape(m, tpr, ch, vec)
        for t in range(tpr):
            for k in range(ch):
                j = k * tpr + t
                if j < nv:
                    out[:, j * vec:(j + 1) * vec] = yv[:, t, k]
        return out
    # looped
    T, ch, it_n = cfg["threads"], cfg["chunks"], cfg["iters"]
    step = T * ch
    acc = np.full((m, T), ident, F)
    rs = np.zeros((m, T), F)
    for it in range(it_n):
        xv = np.full((m, T, ch, vec), ident, F)
        for k in range(ch):
            j = it * step + k * T + np.arange(T)
            ok = j < nv
            for t in np.nonzero(ok)[0]:
                xv[:, t, k] = x[:, j[t] * vec:(j[t] + 1) * vec]
        lanes = xv.reshape(m, T, ch * vec)
        with np.errstate(invalid="ignore", over="ignore"):
            if op in ("sum", "mean"):
                acc = acc + lanes.sum(-1, dtype=F)
            elif op == "rmsnorm":
                acc = acc + (lanes * lanes).sum(-1, dtype=F)
            elif op == "max":
                acc = np.maximum(acc, nanmax_prop(lanes, -1))
            else:
                new = np.maximum(acc, nanmax_prop(lanes, -1))
                shift = np.where(new == -np.inf, F(0), new)
                e = np.exp2((lanes - shift[..., None]) * F(L)).astype(F)
                rs = rs * np.exp2((acc - shift) * F(L)).astype(F) + e.sum(-1, dtype=F)
                acc = new
    with np.errstate(invalid="ignore", over="ignore"):
        if op in ("sum", "mean"):
            r = acc.sum(-1, dtype=F)
            return r / F(n) if op == "mean" else r
        if op == "max":
            return nanmax_prop(acc, -1)
        if op == "softmax":
            mx = nanmax_prop(acc, -1)
            s = (rs * np.exp2((acc - mx[:, None]) * F(L))).sum(-1, dtype=F)
            return np.exp2((x - mx[:, None]) * F(L)).astype(F) * (F(1) / s)[:, None]
        rstd = F(1) / np.sqrt(acc.sum(-1, dtype=F) / F(n) + F(eps))
        return x * rstd[:, None] * w[None, :]


def reference(op, x, w, eps):
    xt = torch.from_numpy(x).double()
    if op == "sum":
        return xt.sum(-1)
    if op == "mean":
        return xt.mean(-1)
    if op == "max":
        return xt.amax(-1)
    if op == "softmax":
        return torch.softmax(xt, -1)
    return torch.nn.functional.rms_norm(xt, (x.shape[1],), torch.from_numpy(w).double(), eps=eps)


def compare(op, got, ref):
    got = torch.from_numpy(np.asarray(got, F)).double()
    nan_g, nan_r = torch.isnan(got), torch.isnan(ref)
    if not torch.equal(nan_g, nan_r):
        return f"NaN mismatch {int((nan_g != nan_r).sum())}"
    fin = ~nan_r
    inf_r = torch.isinf(ref[fin])
    if not torch.equal(torch.isinf(got[fin]), inf_r) or not torch.equal(got[fin][inf_r], ref[fin][inf_r]):
        return "inf mismatch"
    g, r = got[fin & ~torch.isinf(ref)], ref[fin & ~torch.isinf(ref)]
    if g.numel() == 0:
        return None
    err = ((g - r).abs() / (r.abs() + 1e-6 * (r.abs().max() + 1))).max().item()
    return None if err < 2e-4 else f"rel_err {err:.2e}"


# (M, N, ld): N = 1 and 7 (scalar vectors), ragged N, a row stride != N, one row, rows around the one-wave /
# several-waves / looped thresholds (32767, 32768, 32776), and N = 65536 / 131072 (looped path)
CASES = [(4096, 1, 1), (4096, 7, 7), (4096, 1000, 1000), (1, 4096, 4096), (1000, 4096, 4160), (333, 65536, 65536),
         (8, 131072, 131072), (4096, 5120, 5120), (64, 8192, 8192), (3, 1003, 1003), (5, 32768, 32768),
         (7, 32767, 32767), (2, 32776, 32776), (9, 1000, 1003)]


def parse(arg):
    """MxN or MxN@ld -> (M, N, ld)."""
    dims, _, ld = arg.partition("@")
    m, n = map(int, dims.split("x"))
    return m, n, int(ld) if ld else n


def run_case(m, n, ld, dtype, rng):
    """Check one (shape, dtype) for every op; print one line; True when it passes."""
    t0 = time.time()
    eb = kernel._BYTES[dtype]
    vec = kernel._pick_vec(eb, n, ld, [0, 0, 0])
    cfg = kernel.plan(n, vec)
    bad = []
    try:
        coverage(m, n, ld, vec, cfg)
    except AssertionError as e:
        bad.append(f"coverage: {e}")
    mm = min(m, 40)  # numerics on a few rows
    x = rng.standard_normal((mm, n)).astype(F)
    if mm >= 6:
        x[1, n // 3] = np.nan                       # one NaN
        x[2, :] = -np.inf                           # all -inf
        x[3, : n // 2] = -np.inf                    # leading -inf (online softmax hazard)
        x[4, n - 1] = np.inf                        # +inf
        x[5, :] = x[5, :] * 100                     # large
    w = rng.standard_normal(n).astype(F)
    for op in kernel.OPS:
        err = compare(op, model(op, x, w, 1e-6, vec, cfg), reference(op, x, w, 1e-6))
        if err:
            bad.append(f"{op}: {err}")
    path = "looped" if cfg["looped"] else "rows"
    print(f"{'FAIL' if bad else 'OK  '} {m}x{n}@{ld} {dtype}: vec {vec} {path} tpr {cfg['tpr']} chunks {cfg['chunks']} "
          f"rows/WG {cfg['rows']} full {cfg['full']} ops {','.join(kernel.OPS)} {time.time() - t0:.1f}s"
          + ("" if not bad else " -- " + "; ".join(bad)), flush=True)
    return not bad


def main(argv):
    global kernel
    cases = [parse(a) for a in argv] or CASES
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        kernel = load_kernel(tmp)
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0, inf - inf: the NaNs are compared
            results = [run_case(m, n, ld, dtype, rng) for (m, n, ld) in cases for dtype in ("bf16", "fp32")]
    fails = results.count(False)
    print(f"reduction_flydsl: {fails} of {len(results)} cases failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
