"""Lane-level numpy model of the FlyDSL decode-attention cell's algorithm (split-K attend + merge kernels).

One job: re-implement the formulas of {{cookiecutter.op_name}}/patterns/decode_attention/flydsl/kernel.py per
lane (a wave's 64 lanes as numpy vectors): the head-chunk / split plan, Q/K/V buffer-load offsets with
out-of-range semantics (num_records = the sequence's valid length, so reads past it return 0), the CDNA MFMA
16x16x16 operand/result layouts, the key mask (-inf past the length), the online softmax with cross-lane
max/sum, bf16 rounding of P, the partial outputs + log-sum-exp, and the merge kernel. Each case runs with the
cache tail past every sequence's length filled with NaN and with 6e4 (either must not leak into the output),
for the CU counts of MI300X (304), MI355X (256) and MI308X (80), and compares with a float64 reference
(relative error < 2e-2). The model keeps its own plan(); a case also fails when it differs from the cell's
kernel.plan() (imported from a minimal compile-only workspace).

It does NOT check the compiler (FlyDSL's lowering, the ISA) or the hardware: nothing runs on a GPU.
Batches too big for numpy are modelled on their first sequences (the plan still uses the real batch).

usage: .venv/bin/python benchmarks/models/decode_attention_flydsl.py [--all] [NAME_SUBSTRING ...] [mut=no_oob|no_mask]
       (no names: small stand-ins that cross every boundary, well under a minute; --all: also the harness's
       representative and boundary cases of tools/patterns/decode_attention, slow; mut=...: break the model on purpose to see it
       fail: no_mask fails every case, no_oob the NaN-filled ones). Exit status 1 if any case fails.
"""

import math
import sys
import tempfile
import time
from pathlib import Path

import cell
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools import registry, shapes  # noqa: E402


def load_kernel(tmp, arch="gfx942"):
    """Import the cell's kernel.py (benchmarks/models/cell.py: no GPU, no cutlass)."""
    return cell.load_kernel(tmp, "decode_attention", "gqa", arch)


kernel = None  # the cell's kernel module, set by main()

TILE = 16
LOG2E = 1.4426950408889634
NEG_BIG = -1.0e30


def bf16_round(x):
    x = np.asarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    out = b.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, out)


def mfma_16x16x16(a, b, c):
    """a, b: [64, 4] lane operands, c: [64, 4]; A[l%16][4(l//16)+i], B[4(l//16)+i][l%16], D[4(l//16)+i][l%16]."""
    A = np.zeros((16, 16))
    Bm = np.zeros((16, 16))
    A[_R, _K] = a
    Bm[_K, _R] = b
    with np.errstate(invalid="ignore", over="ignore"):
        D = A @ Bm
    return D[_K, _R] + c


_L = np.arange(64)[:, None]
_I = np.arange(4)[None, :]
_R = np.broadcast_to(_L % 16, (64, 4))          # row of A / column of B and D held by lane l
_K = 4 * (_L // 16) + _I                        # k of A and B (row of D) held by lane l, item i


class Buf:
    """A buffer resource over a flat element array: base element offset, num_records bytes, element size."""

    def __init__(self, arr, base_elems, nbytes, esize):
        self.arr, self.base, self.nbytes, self.esize = arr, base_elems, nbytes, esize

    def load(self, byte_off, nbytes):
        """Per-lane load of nbytes at byte_off (int array [64]); out-of-range dwords read 0."""
        n = nbytes // self.esize
        bo = np.asarray(byte_off, dtype=np.int64)[:, None] + np.arange(n)[None, :] * self.esize
        ok = (bo // 4) * 4 + 4 <= self.nbytes
        idx = np.where(ok, self.base + bo // self.esize, 0)
        return np.where(ok, self.arr[idx], 0.0)


def split_kernel(q, kf, vf, lens, opart, lse, B, hq, hkv, S, splits, split_size, qscale, d, heads, chunk, split, bh):
    lane = np.arange(64)
    g, j = lane // 16, lane % 16
    b = bh // hkv
    kvh = bh - b * hkv
    group = hq // hkv
    head0 = kvh * group + chunk * 16
    n_heads = min(group - chunk * 16, 16)
    seqlen = min(int(lens[b]), S)
    s0 = split * split_size
    nch, dv, row_bytes = d // 32, d // 16, d * 2
    if not s0 < seqlen:
        return
    s1 = min(s0 + split_size, seqlen)
    kv_stride = hkv * row_bytes
    seq_elems = b * S * hkv * d
    nrec = (kf.size - seq_elems) * 2 if "no_oob" in MUT else seqlen * kv_stride
    rk = Buf(kf, seq_elems, nrec, 2)
    rv = Buf(vf, seq_elems, nrec, 2)
    rq = Buf(q, 0, q.size * 2, 2)
    q_off = ((b * hq + head0 + j) * d + g * 8) * 2
    qv = [np.where((j < n_heads)[:, None], rq.load(q_off + u * 64, 16), 0.0) for u in range(nch)]
    k_lane = kvh * row_bytes + g * 16
    v_lane = kvh * row_bytes + j * (dv * 2)

    def load_tile(k0):
        ks = [rk.load((k0 + j) * kv_stride + k_lane + u * 64, 16) for u in range(nch)]
        vs = []
        for i in range(4):
            base = (k0 + g * 4 + i) * kv_stride + v_lane
            vs.append(np.concatenate([rv.load(base + w * 16, min(16, dv * 2)) for w in range(max(1, dv // 8))], 1))
        return ks, vs

    def tile(k0):
        return load_tile(k0 if k0 < s1 else seqlen)

    def attend(ks, vs, k0, m, lsum, acc):
        s = np.zeros((64, 4))
        for u in range(nch):
            for h in range(2):
                s = mfma_16x16x16(ks[u][:, 4 * h:4 * h + 4], qv[u][:, 4 * h:4 * h + 4], s)
        key = k0 + g * 4
        lim = 10**9 if "no_mask" in MUT else s1
        tt = np.stack([np.where(key + i < lim, s[:, i] * qscale, -np.inf) for i in range(4)], 1)
        mt = np.fmax.reduce(tt, axis=1)
        mt = np.fmax(mt, mt[lane ^ 16])
        mt = np.fmax(mt, mt[lane ^ 32])
        m_new = np.fmax(m, mt)
        alpha = np.exp2(m - m_new)
        with np.errstate(invalid="ignore"):
            p = np.exp2(tt - m_new[:, None])
        lsum = lsum * alpha + p.sum(1)
        pv = bf16_round(p)
        out = []
        for e in range(dv):
            a = np.stack([vs[i][:, e] for i in range(4)], 1)
            out.append(mfma_16x16x16(a, pv, acc[e] * alpha[:, None]))
        return m_new, lsum, out

    n_pairs = (s1 - s0 + 2 * TILE - 1) // (2 * TILE)
    m = np.full(64, NEG_BIG)
    lsum = np.zeros(64)
    acc = [np.zeros((64, 4)) for _ in range(dv)]
    ka, va = tile(s0)
    for t in range(n_pairs):
        k0 = s0 + t * 2 * TILE
        kb, vb = tile(k0 + TILE)
        m, lsum, acc = attend(ka, va, k0, m, lsum, acc)
        ka, va = tile(k0 + 2 * TILE)
        if k0 + TILE < s1:
            m, lsum, acc = attend(kb, vb, k0 + TILE, m, lsum, acc)
    lsum = lsum + lsum[lane ^ 16]
    lsum = lsum + lsum[lane ^ 32]
    inv = 1.0 / lsum
    for ln in range(64):
        if j[ln] < n_heads:
            head = head0 + j[ln]
            row = (b * hq + head) * splits + split
            vals = [acc[e][ln, r] * inv[ln] for r in range(4) for e in range(dv)]
            base = row * d + g[ln] * 4 * dv
            opart[base:base + 4 * dv] = vals
            if g[ln] == 0:
                lse[row] = m[ln] + math.log2(lsum[ln])


def merge_kernel(opart, lse, lens, out, hq, S, splits, split_size, d, hb, b):
    cpr = d // 4
    hpw = 64 // cpr
    for lane in range(64):
        head = hb * hpw + lane // cpr
        c = lane % cpr
        seqlen = min(int(lens[b]), S)
        n = (seqlen + split_size - 1) // split_size
        if head < hq:
            row0 = (b * hq + head) * splits
            mx = NEG_BIG
            for s in range(n):
                mx = max(mx, lse[row0 + s])
            num = np.zeros(4)
            den = 0.0
            for s in range(n):
                w = 2.0 ** (lse[row0 + s] - mx)
                o = opart[(row0 + s) * d + c * 4:(row0 + s) * d + c * 4 + 4]
                num = num + o * w
                den += w
            out[(b * hq + head) * d + c * 4:(b * hq + head) * d + c * 4 + 4] = num / den


def plan(B, Hq, Hkv, S, D, cus):
    """The model's own launch plan; run_case checks it equals the cell's kernel.plan()."""
    group = Hq // Hkv
    heads = min(group, 16)
    chunks = -(-group // 16)
    items = B * Hkv * chunks
    want = -(-(cus * 8) // items)
    splits = max(1, min(want, -(-S // 256)))
    split_size = -(-(-(-S // splits)) // TILE) * TILE
    splits = -(-S // split_size)
    return heads, chunks, splits, split_size


def reference(q, k, v, lens):
    B, hq, d = q.shape
    hkv = k.shape[2]
    G = hq // hkv
    out = np.zeros_like(q)
    for b in range(B):
        L = int(lens[b])
        for h in range(hq):
            kk = k[b, :L, h // G]
            vv = v[b, :L, h // G]
            s = kk @ q[b, h] / math.sqrt(d)
            p = np.exp(s - s.max())
            out[b, h] = p @ vv / p.sum()
    return out


MUT = set()  # mutations that must make a case fail: "no_oob" (whole-tensor bound), "no_mask" (no -inf)


def run_case(B, Hq, Hkv, S, D, lens, fill, cus, seed=0, plan_B=None):
    rng = np.random.default_rng(seed)
    q = bf16_round(rng.standard_normal((B, Hq, D))).astype(np.float64)
    k = bf16_round(rng.standard_normal((B, S, Hkv, D))).astype(np.float64)
    v = bf16_round(rng.standard_normal((B, S, Hkv, D))).astype(np.float64)
    for b in range(B):
        k[b, lens[b]:] = fill
        v[b, lens[b]:] = fill
    heads, chunks, splits, split_size = plan(plan_B or B, Hq, Hkv, S, D, cus)
    kp = kernel.plan(plan_B or B, Hq, Hkv, S, D, cus)
    assert (kp["heads"], kp["chunks"], kp["splits"], kp["split_size"]) == (heads, chunks, splits, split_size), \
        f"model plan {(heads, chunks, splits, split_size)} != kernel.plan {kp}"
    opart = np.full(B * Hq * splits * D, np.nan)
    lse = np.full(B * Hq * splits, np.nan)
    qscale = 1.0 / math.sqrt(D) * LOG2E
    lens_a = np.array(lens)
    for bh in range(B * Hkv):
        for split in range(splits):
            for chunk in range(chunks):
                split_kernel(q.ravel(), k.ravel(), v.ravel(), lens_a, opart, lse, B, Hq, Hkv, S, splits, split_size,
                             qscale, D, heads, chunk, split, bh)
    out = np.full(B * Hq * D, np.nan)
    hpw = 64 // (D // 4)
    for b in range(B):
        for hb in range(-(-Hq // hpw)):
            merge_kernel(opart, lse, lens_a, out, Hq, S, splits, split_size, D, hb, b)
    ref = reference(q, k, v, lens_a)
    out = out.reshape(B, Hq, D)
    err = np.abs(out - ref).max() / np.abs(ref).max()
    return err, (heads, chunks, splits, split_size)


# small stand-ins that still cross every boundary (full runs of the big harness cases are slow in numpy):
# (name, B, Hq, Hkv, S, D, seq_lens)
SMALL = [
    ("small_mixed_g4", 3, 8, 2, 300, 128, [1, 17, 300]),
    ("small_mqa_g32", 2, 32, 1, 100, 64, [33, 100]),
    ("small_g12", 2, 24, 2, 200, 64, [199, 5]),
    ("small_g20_d256", 2, 20, 1, 70, 256, [70, 3]),
    ("small_mqa_g64", 1, 64, 1, 40, 128, [37]),
    ("small_splits_g8", 2, 16, 2, 2000, 64, [2000, 1013]),  # several splits; one ends inside a split
]
CUS = (304, 256, 80)  # MI300X, MI355X, MI308X


def main(argv):
    global kernel
    MUT.update(a[4:] for a in argv if a.startswith("mut="))
    only = [a for a in argv if not a.startswith("mut=") and a != "--all"]
    todo = list(SMALL)
    if "--all" in argv or only:
        todo = [(c["name"], *c["dims"], c["seq_lens"]) for c in shapes.build_cases(registry.pattern("decode_attention"), "bf16", "")]
        todo += SMALL
    fails = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        kernel = load_kernel(tmp)
        for name, B, Hq, Hkv, S, D, lens in todo:
            if only and not any(o in name for o in only):
                continue
            plan_B = B
            if B * S * Hkv * D > 2e7:  # model a few sequences of big batches (the plan still uses the real B)
                keep = max(1, min(4, int(2e7 // (S * Hkv * D))))
                B, lens = min(B, keep), lens[:min(B, keep)]
            for fill in (np.nan, 6e4):
                for cus in CUS:
                    t0 = time.time()
                    try:
                        err, p = run_case(B, Hq, Hkv, S, D, lens, fill, cus, plan_B=plan_B)
                        ok, why = bool(err < 2e-2), ""
                    except AssertionError as e:
                        err, p, ok, why = float("nan"), None, False, f" -- {e}"
                    total += 1
                    fails += not ok
                    print(f"{'OK  ' if ok else 'FAIL'} {name:24s} B{B}/{plan_B} lens{lens[:4]} fill={fill} cus={cus} "
                          f"plan(heads, chunks, splits, size)={p} rel_err={err:.2e} {time.time() - t0:.1f}s{why}",
                          flush=True)
    print(f"decode_attention_flydsl: {fails} of {total} cases failed" + (f" (mut={sorted(MUT)})" if MUT else ""))
    return 1 if fails or not total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
