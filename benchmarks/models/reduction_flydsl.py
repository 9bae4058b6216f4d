"""Lane-level numpy model of the FlyDSL reduction cell's index math and reduction algorithm.

One job: take the launch plan of {{cookiecutter.op_name}}/patterns/reduction/flydsl/kernel.py (its own plan(),
budget() and flydsl_lowered.pick_vec()) and the lowered.py that a bake writes for each built-in op (sum, mean, max,
softmax, rmsnorm: tools/patterns/reduction/programs.py), and check, for boundary shapes [M, N] with row stride ld,
bf16 and fp32 vectors, that
  * the lane/vector mapping covers every element of a row exactly once and nothing else (register path: the
    first two and last two workgroups; looped path: every iteration; split-row path: every iteration in exactly
    one of the G workgroups of kernel.split(), each with a whole slice), and no vector leaves the tensor's span
    (num_records);
  * the kernel's algorithm in numpy fp32 -- compute() of the op's lowered.py run on each lane's values (a numpy
    `pointwise`), with the cell's reduce(): each chunk folded, a chunk that was not loaded (NaN here: the kernel
    does not zero-fill its registers) replaced by the identity, the in-lane fold, then
    across the row's lanes; on the looped path the passes of lowered.PASSES, the online max / sum pairs of
    lowered.ONLINE (running max, its -inf shift, the rescale, the row combine), and a last pass for the row outputs
    -- and, where op.json's compute units make the cell split the row (kernel.split(): few long rows), the
    split-row path as well: kernel A per pass (each workgroup's slices, its lanes folded into partials [M, G,
    slots]), kernel B (every workgroup combines the row's partials, lane g holding partial g, then stores its
    slices) -- matches torch in float64 (relative error < 2e-4, same NaN / inf positions), on up to 40 rows with a
    NaN, an all -inf row, a leading -inf half (split: whole workgroups of -inf before the finite ones), a +inf, a
    large row, a row that is -inf but one value of -150 (lanes and workgroups that saw only -inf beside a row max
    far below -88: exp(0 - M) would overflow), one whose -inf half is followed by values near -200 (a running max
    rising from -inf to below -88) and a -inf trailing half (split: the last workgroups see only -inf) planted.
It does NOT check the compiler (FlyDSL's lowering; that is read from the ISA) or the hardware: nothing runs on
a GPU.

usage: .venv/bin/python benchmarks/models/reduction_flydsl.py [MxN[@ld] ...] [mut=shifted|no_mask|split_shifted]
       (no shapes: the boundary cases below, well under a minute). Exit status 1 if any case fails.
       mut=shifted rescales by exp(shift(m_old) - shift(m_new)) and combines by exp(shift(m_t) - shift(M)), both
       shifted, as a check that the model is not vacuous: the planted rows then overflow to 0 * inf = NaN.
       mut=no_mask drops the per-chunk mask of reduce(): the chunks that were not loaded hold NaN (the kernel does
       not zero-fill its registers), so every row with a partial chunk turns NaN.
       mut=split_shifted shifts only the split-row path's combine of the workgroups' online pairs, exp(shift(m_g) -
       shift(M)): a workgroup that saw only -inf beside a row max far below -88 then adds 0 * inf = NaN.
"""

import importlib.util
import math
import sys
import tempfile
import time
import types
from pathlib import Path

import cell
import numpy as np
import torch

from tools import scaffold  # noqa: E402 -- cell puts the template root on sys.path

ROOT = Path(__file__).resolve().parents[2]
OPS = ("sum", "mean", "max", "softmax", "rmsnorm")

kernel = None  # the cell's kernel module, set by main()
programs = {}  # op -> its lowered.py module (compute() on numpy values)
MUTATION = None

L = math.log2(math.e)
F = np.float32


def load_kernel(tmp, arch="gfx942"):
    """Import the cell's kernel.py (benchmarks/models/cell.py: no GPU, no cutlass)."""
    return cell.load_kernel(tmp, "reduction", "sum", arch)


# ---- a numpy `pointwise` for lowered.py: fp32 in, fp32 out, as the cell's pw functions compute ----------------

def _exp(a):
    return np.exp2((np.asarray(a, F) * F(L)).astype(F)).astype(F)  # v_exp_f32 after a multiply by log2(e)


pw = types.ModuleType("pointwise")
pw.exp = _exp
pw.exp_shifted = lambda a, b: _exp((np.asarray(a, F) - np.asarray(b, F)).astype(F))  # FlyDSL's: subtract first
pw.reciprocal = lambda a: (F(1) / np.asarray(a, F)).astype(F)
pw.rsqrt = lambda a: (F(1) / np.sqrt(np.asarray(a, F))).astype(F)
pw.sqrt = lambda a: np.sqrt(np.asarray(a, F)).astype(F)
pw.log = lambda a: np.log(np.asarray(a, F)).astype(F)
pw.maximum = lambda a, b: np.maximum(a, b).astype(F)
pw.minimum = lambda a, b: np.minimum(a, b).astype(F)
pw.where = lambda c, a, b: np.where(c, a, b).astype(F)
pw.full_like = lambda v, s: np.full_like(v, s, dtype=F)


def load_programs(tmp: Path) -> dict:
    """{op: its lowered.py} as a bake writes it (a compile workspace per op), imported with the numpy pointwise."""
    out = {}
    for op in OPS:
        ws = scaffold.compile_workspace(tmp / f"ws_{op}", "reduction", op, "bf16", "gfx942")
        spec = importlib.util.spec_from_file_location(f"lowered_{op}", ws / "lowered.py")
        module = importlib.util.module_from_spec(spec)
        saved, sys.modules["pointwise"] = sys.modules.get("pointwise"), pw
        try:
            spec.loader.exec_module(module)
        finally:
            if saved is None:
                sys.modules.pop("pointwise")
            else:
                sys.modules["pointwise"] = saved
        out[op] = module
    return out


def facts(module):
    """The schedule of a lowered.py as flydsl_lowered.facts() reads it (older bakes: one pass per reduction)."""
    red = tuple(module.REDUCTIONS)
    return red, tuple(getattr(module, "PASSES", range(len(red)))), tuple(getattr(module, "ONLINE", (None,) * len(red)))


def loads_of(module) -> int:
    """The loads of a program with no wide inputs: one per row, broadcast or vector input (kernel._loads)."""
    return max(1, sum(kind != "scalar" for kind in module.KINDS))


# ---- the plan's coverage ----------------------------------------------------------------------------------------

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


# ---- the kernel's algorithm -------------------------------------------------------------------------------------

def vectors_of(lanes: int, chunks: int, j0: int, nv: int):
    """Row vector j of each lane's chunk k (j0 + k*lanes + t), [lanes, chunks], and whether it lies in the row."""
    j = j0 + np.arange(chunks)[None, :] * lanes + np.arange(lanes)[:, None]
    return j, j < nv


GARBAGE = F(np.nan)  # what a register tensor holds where no vector was loaded: the kernel does not zero-fill them


def gather(t, j, ok, vec):
    """A lane's loaded values of t ([M, N] or [N]) for vectors j: [.., lanes, chunks*vec]; not loaded: NaN (the
    register tensors are not filled first, so they may hold anything: NaN is the worst, a masked chunk must drop
    it)."""
    e = (np.where(ok, j, 0)[..., None] * vec + np.arange(vec)).reshape(j.shape[0], -1)  # [lanes, chunks*vec]
    mask = np.repeat(ok, vec, axis=1)
    return np.where(mask, t[..., e], GARBAGE).astype(F)


def scatter(out, value, j, ok, vec):
    """A row output's lane values [M, lanes, chunks*vec] to out [M, N] (the stores of vectors in the row)."""
    e = (j[..., None] * vec + np.arange(vec)).reshape(j.shape[0], -1)
    mask = np.repeat(ok, vec, axis=1)
    out[:, e[mask]] = np.broadcast_to(value, (out.shape[0], *e.shape))[:, mask]


def lane_partial(kind, v, ok, vec, shape):
    """_lane_partial: each chunk (vector) folded, a not-loaded chunk's partial replaced by the identity (one select
    per chunk), the chunks folded -> [M, lanes]."""
    u = np.broadcast_to(-np.asarray(v, F) if kind == "min" else np.asarray(v, F), shape)
    ident = F(0) if kind == "sum" else F(-np.inf)
    u = u.reshape(*u.shape[:-1], -1, vec)  # [M, lanes, chunks, vec]
    part = u.sum(-1, dtype=F) if kind == "sum" else u.max(-1)  # numpy max propagates NaN
    if MUTATION != "no_mask":
        part = np.where(ok, part, ident)
    return part.sum(-1, dtype=F) if kind == "sum" else part.max(-1)


def row_fold(kind, part):
    """The lanes' partials [M, lanes] -> the row result [M, 1, 1] (DPP and LDS: any fixed order)."""
    r = part.sum(-1, dtype=F) if kind == "sum" else part.max(-1)
    return (-r if kind == "min" else r)[:, None, None]


def shift(m):
    return np.where(m == -np.inf, F(0), m).astype(F)


class RowReduce:
    """The register path's reduce(): every call is the row's result."""

    def __init__(self, ok, vec, shape):
        self.ok, self.vec, self.shape = ok, vec, shape

    def __call__(self, kind, v):
        if kind == "rebase":
            return v
        return row_fold(kind, lane_partial(kind, v, self.ok, self.vec, self.shape))


class PassReduce:
    """_PassReduce: pass p of the looped path (p = the reduction passes: the last pass, every result known)."""

    def __init__(self, program, ok, vec, shape, acc, known, p):
        self.red, self.passes, self.online = facts(program)
        self.ok, self.vec, self.shape, self.acc, self.known, self.p = ok, vec, shape, acc, known, p
        self.calls, self.moved = 0, {}

    def __call__(self, kind, v):
        if kind == "rebase":
            return v
        q, self.calls = self.calls, self.calls + 1
        if self.passes[q] < self.p:
            return self.known[q]
        if self.passes[q] > self.p:
            return self.acc[q][..., None]
        part = lane_partial(kind, v, self.ok, self.vec, self.shape)
        if q in self.online:
            old = self.acc[q]
            new = np.maximum(old, part)
            self.acc[q] = new
            self.moved[q] = (old, shift(new))
            return shift(new)[..., None]
        if self.online[q] is not None:
            old, s = self.moved[self.online[q]]
            self.acc[q] = self.acc[q] * _exp((shift(old) if MUTATION == "shifted" else old) - s) + part
        else:
            self.acc[q] = self.acc[q] + part if kind == "sum" else np.maximum(self.acc[q], part)
        return self.acc[q][..., None]


def row_results(program, p, acc, known, shifted=None):
    """_row_results: known[q] ([M, 1, 1]) for the reductions of pass p from the lane partials acc[q] ([M, lanes]); an
    online sum's s_t rescaled to the row max M first, s_t * exp(m_t - shift(M)) (m_t unshifted; mut=shifted shifts
    it). The split-row path folds a workgroup's lanes and then the row's workgroup partials with it (`shifted`: the
    combine's own mutation)."""
    red, passes, online = facts(program)
    shifted = MUTATION == "shifted" if shifted is None else shifted
    for q, kind in enumerate(red):
        if passes[q] == p:
            part = acc[q]
            if online[q] is not None:
                mt = shift(acc[online[q]]) if shifted else acc[online[q]]
                part = part * _exp(mt - shift(known[online[q]][:, :, 0]))
            known[q] = row_fold(kind, part)


def store(program, results, outs, j, ok, vec, first):
    """compute()'s results to the outputs: a row output's lane values, a reduced output's row value (once)."""
    for o, kind in enumerate(program.OUTPUTS):
        if kind == "row":
            scatter(outs[o], results[o], j, ok, vec)
        elif first:
            outs[o][:] = np.broadcast_to(results[o], (outs[o].shape[0], 1, 1))[:, 0, 0]


def model(program, x, w, vec, cfg):
    """x [M, N] fp32 (w [N]: rmsnorm's weight): each output as the kernel computes it, in numpy fp32."""
    m, n = x.shape
    nv = n // vec
    inputs = {"row": x, "vector": w}
    outs = [np.full((m, n) if kind == "row" else (m,), np.nan, F) for kind in program.OUTPUTS]
    n_f = F(nv * vec)
    if not cfg["looped"]:
        j, ok = vectors_of(cfg["tpr"], cfg["chunks"], 0, nv)
        values = [gather(inputs[kind], j, ok, vec) for kind in program.KINDS]
        shape = (m, *j.shape[:1], j.shape[1] * vec)
        store(program, program.compute(*values, n_f, RowReduce(ok, vec, shape)), outs, j, ok, vec, True)
        return outs
    red, passes, online = facts(program)
    T, ch, iters = cfg["threads"], cfg["chunks"], cfg["iters"]
    acc = [np.full((m, T), F(0) if kind == "sum" else F(-np.inf), F) for kind in red]
    known = {}
    last = max(passes) + 1 if passes else 0
    shape = (m, T, ch * vec)
    for p in range(last + ("row" in program.OUTPUTS)):
        whole = nv // (T * ch)  # slices with every vector in the row: unpredicated, no mask
        for it in range(iters):
            j, ok = vectors_of(T, ch, it * T * ch, nv)
            if it < whole:
                assert ok.all(), "a whole slice with a vector past the row"
            else:
                assert it == whole == iters - 1, "more than one partial slice"
            values = [gather(inputs[kind], j, ok, vec) for kind in program.KINDS]
            results = program.compute(*values, n_f, PassReduce(program, ok, vec, shape, acc, known, p))
            if p == last:
                store(program, results, outs, j, ok, vec, it == 0)
        row_results(program, p, acc, known)
    if "row" not in program.OUTPUTS:
        j, ok = vectors_of(T, ch, 0, nv)
        zeros = [np.zeros(shape, F) for _ in program.KINDS]
        store(program, program.compute(*zeros, n_f, PassReduce(program, ok | True, vec, shape, acc, known, last)),
              outs, j, ok, vec, True)
    return outs


def split_iterations(cfg, groups, per, nv):
    """Workgroup g's loop iterations on the split-row path (_split_pass): whole slices [g*per, (g+1)*per), the last
    workgroup's up to the row's last whole slice, then its partial last slice if any."""
    step = cfg["threads"] * cfg["chunks"]
    whole = nv // step
    out = []
    for g in range(groups):
        its = list(range(g * per, whole if g == groups - 1 else g * per + per))
        if g == groups - 1 and whole < cfg["iters"]:
            its.append(whole)
        out.append(its)
    return out


def split_coverage(nv, cfg, groups, per):
    """split(): every loop iteration in exactly one workgroup, each workgroup with at least one whole slice, G at
    most the combine's 512 lanes."""
    its = split_iterations(cfg, groups, per, nv)
    whole = nv // (cfg["threads"] * cfg["chunks"])
    assert sorted(i for g in its for i in g) == list(range(cfg["iters"])), "split coverage"
    assert all(any(i < whole for i in g) for g in its), "a workgroup without a whole slice"
    assert 2 <= groups <= cfg["threads"], "G out of range"


def combine(program, partials, p):
    """_combine_partials: known[q] of the passes before p from the workgroup partials [M, G, slots]: lane t < G holds
    partial t, the other lanes of the 512 the identity (0; -inf for a max, a min's -v and an online max), folded by
    row_results as the kernel folds them (the online pair: M = max m_g, S = sum s_g * exp(m_g - shift(M)))."""
    red, passes, _ = facts(program)
    m, groups, _ = partials.shape
    lanes = [np.full((m, kernel.LOOP_LANES), F(0) if kind == "sum" else F(-np.inf), F) for kind in red]
    for q in range(len(red)):
        if passes[q] < p:
            lanes[q][:, :groups] = partials[:, :, q]
    known = {}
    for pp in range(p):
        row_results(program, pp, lanes, known, MUTATION in ("shifted", "split_shifted"))
    return known


def model_split(program, x, w, vec, cfg, groups, per):
    """The split-row path: kernel A per reduction pass (each workgroup's passes over its slices, its lanes folded,
    its partials written: a min as the max of -v), kernel B (the combine, then the outputs of each slice; a reduced
    output once, from workgroup 0's first slice). Partials of later passes are NaN until written: never read."""
    m, n = x.shape
    nv = n // vec
    inputs = {"row": x, "vector": w}
    outs = [np.full((m, n) if kind == "row" else (m,), np.nan, F) for kind in program.OUTPUTS]
    n_f = F(nv * vec)
    red, passes, _ = facts(program)
    T, ch = cfg["threads"], cfg["chunks"]
    last = max(passes) + 1 if passes else 0
    partials = np.full((m, groups, max(1, len(red))), np.nan, F)
    shape = (m, T, ch * vec)
    slices = split_iterations(cfg, groups, per, nv)
    for p in range(last + 1):
        combined = combine(program, partials, p)
        if p == last and "row" not in program.OUTPUTS:
            j, ok = vectors_of(T, ch, 0, nv)
            zeros = [np.zeros(shape, F) for _ in program.KINDS]
            acc = [np.full((m, T), np.nan, F) for _ in red]  # every call is of an earlier pass: never read
            reduce = PassReduce(program, ok | True, vec, shape, acc, combined, last)
            store(program, program.compute(*zeros, n_f, reduce), outs, j, ok, vec, True)
            break
        for g in range(groups):
            acc = [np.full((m, T), F(0) if kind == "sum" else F(-np.inf), F) for kind in red]
            known = dict(combined)
            for it in slices[g]:
                j, ok = vectors_of(T, ch, it * T * ch, nv)
                values = [gather(inputs[kind], j, ok, vec) for kind in program.KINDS]
                results = program.compute(*values, n_f, PassReduce(program, ok, vec, shape, acc, known, p))
                if p == last:
                    store(program, results, outs, j, ok, vec, it == 0)
            if p < last:
                mine = {}
                row_results(program, p, acc, mine)
                for q, kind in enumerate(red):
                    if passes[q] == p:
                        partials[:, g, q] = (-mine[q] if kind == "min" else mine[q])[:, 0, 0]
    return outs


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
         (7, 32767, 32767), (2, 32776, 32776), (9, 1000, 1003), (12, 131072, 131072), (9, 40960, 40960)]


def parse(arg):
    """MxN or MxN@ld -> (M, N, ld)."""
    dims, _, ld = arg.partition("@")
    m, n = map(int, dims.split("x"))
    return m, n, int(ld) if ld else n


def run_case(m, n, ld, dtype, rng):
    """Check one (shape, dtype) for every op; print one line; True when it passes."""
    t0 = time.time()
    eb = kernel._BYTES[dtype]
    vec = kernel.lw.pick_vec(eb, n, [ld], [])
    mm = min(m, 40)  # numerics on a few rows
    x = rng.standard_normal((mm, n)).astype(F)
    if mm >= 6:
        x[1, n // 3] = np.nan                       # one NaN
        x[2, :] = -np.inf                           # all -inf
        x[3, : n // 2] = -np.inf                    # leading -inf (online softmax hazard)
        x[4, n - 1] = np.inf                        # +inf
        x[5, :] = x[5, :] * 100                     # large
    if mm >= 8:
        x[6, :] = -np.inf                           # -inf but one value far below -88: lanes with only -inf
        x[6, n // 2] = -150.0
        x[7, : n // 2] = -np.inf                    # -inf, then a running max that rises to about -200
        x[7, n // 2:] -= 200.0
    if mm >= 9:
        x[8, n // 2:] = -np.inf                     # a -inf suffix: split rows' last workgroups see only -inf
    w = rng.standard_normal(n).astype(F)
    bad, paths = [], set()
    for op in OPS:
        program = programs[op]
        cfg = kernel.plan(n, vec, *kernel.budget(loads_of(program)))
        groups, per = kernel.split(m, cfg, kernel.rt.COMPUTE_UNITS)
        paths.add(f"{'looped' if cfg['looped'] else 'rows'} tpr {cfg['tpr']} chunks {cfg['chunks']}"
                  + (f" split {groups}x{per}" if groups > 1 else ""))
        try:
            coverage(m, n, ld, vec, cfg)
            if groups > 1:
                split_coverage(n // vec, cfg, groups, per)
        except AssertionError as e:
            bad.append(f"{op} coverage: {e}")
        ref = reference(op, x, w, 1e-6)  # programs.py's eps
        err = compare(op, model(program, x, w, vec, cfg)[0], ref)  # a split row's looped path too (larger M)
        if err:
            bad.append(f"{op}: {err}")
        if groups > 1:
            err = compare(op, model_split(program, x, w, vec, cfg, groups, per)[0], ref)
            if err:
                bad.append(f"{op} split: {err}")
    print(f"{'FAIL' if bad else 'OK  '} {m}x{n}@{ld} {dtype}: vec {vec} {'; '.join(sorted(paths))} "
          f"{time.time() - t0:.1f}s" + ("" if not bad else " -- " + "; ".join(bad)), flush=True)
    return not bad


def main(argv):
    global kernel, programs, MUTATION
    MUTATION = next((a.split("=", 1)[1] for a in argv if a.startswith("mut=")), None)
    cases = [parse(a) for a in argv if not a.startswith("mut=")] or CASES
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        kernel = load_kernel(tmp)
        programs = load_programs(Path(tmp))
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # inf * 0, inf - inf: NaNs are compared
            results = [run_case(m, n, ld, dtype, rng) for (m, n, ld) in cases for dtype in ("bf16", "fp32")]
    fails = results.count(False)
    print(f"reduction_flydsl: {fails} of {len(results)} cases failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
