"""Lane-level numpy model of the FlyDSL gemm cell's index math (c = a @ b.T, both K-major).

One job: re-trace the kernel body of {{cookiecutter.op_name}}/patterns/gemm/flydsl/kernel.py lane by lane, using
the cell's own index helpers (lds_offset, b_tile_row, xcd_remap, raster, choose_config), and check that the
index math computes C = A @ B.T exactly. Modelled: buffer-load offsets with the 0x80000000 out-of-range
redirect (a load past num_records reads 0, a store past it is dropped), the LDS writes/reads and their swizzle,
the 1- or 2-stage K-tile pipeline, the MFMA operand/result lane layouts (FlyDSL's CDNA3 MmaAtom TV layouts:
A/B lane l holds row l%16, K = KPT*(l//16)+v; C lane l holds row 4*(l//16)+r, column l%16), and the epilogue
stores. Inputs are small integers, so the fp32 sums are exact.

A case fails when: max|C - A @ B.T| != 0, a C element is not written exactly once, a store straddles
num_records or a 16-byte store is misaligned, an LDS slot of a tile is not written exactly once or is read
unwritten, the launch order -> tile mapping is not a bijection, or a ds_read_b128 / ds_write_b128 has a bank
conflict (8 lanes x 16 B per cycle, 32 banks x 4 B; the swizzle is meant to make it conflict-free).

It does NOT check the compiler (FlyDSL's lowering, the ISA) or the hardware: nothing runs on a GPU. Big shapes
(over 64 tiles) are modelled on the corner tiles and a few inner ones only.

usage: .venv/bin/python benchmarks/models/gemm_flydsl.py [gfx942|gfx950] [MxNxK ...]
       (no arch: both; no shapes: small boundary cases, well under a minute). Exit status 1 if any case fails.
"""

import sys
import tempfile
import time
from pathlib import Path

import cell
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ARCHS = ("gfx942", "gfx950")
# small boundary cases: tiny/ragged M and N, a K tail, N % 8 != 0 (2-byte stores), several K tiles (stage
# alternation), and two shapes big enough for the 256x128 tiles (modelled on their edge tiles)
DEFAULT_SHAPES = ["129x8x8", "1x520x64", "257x130x200", "1000x1000x136", "4095x4097x72", "4096x4096x200"]


def load_kernel(arch, tmp):
    """Import the cell's kernel.py (benchmarks/models/cell.py: no GPU, no cutlass)."""
    return cell.load_kernel(tmp, "gemm", "matmul", arch)


K = None  # the cell's kernel module, set by main()


OOBU = 2**31


def _u32(x):
    return np.asarray(x, dtype=np.int64) & 0xFFFFFFFF


def conflict_degree(byte_addrs):
    """Max over 8-lane groups of the number of lanes sharing one 16-byte bank slot (1 = conflict-free)."""
    a = np.asarray(byte_addrs).reshape(-1, 8)
    slots = (a // 16) % 8
    worst = 1
    for row in slots:
        worst = max(worst, np.bincount(row, minlength=8).max())
    return int(worst)


def emulate(m, n, k, arch, cfg=None, tiles_subset=None, check_conflicts=True):
    cfg = cfg or K.choose_config(m, n, arch)
    wide = arch == "gfx950"
    rng = np.random.default_rng(m * 7 + n * 13 + k)
    A = rng.integers(-3, 4, size=(m, k)).astype(np.float64)
    B = rng.integers(-3, 4, size=(n, k)).astype(np.float64)
    Af, Bf = A.reshape(-1), B.reshape(-1)
    nr_a, nr_b, nr_c = m * k * 2, n * k * 2, m * n * 2
    C = np.full(m * n, np.nan)
    writes = np.zeros(m * n, dtype=np.int64)

    tm, tn = cfg.tile_m, cfg.tile_n
    wave_m, wave_n = tm // 2, tn // 2
    mt, npairs = wave_m // 16, wave_n // 32
    rows_per_load = K.THREADS // (K.TILE_K // K.CHUNK)
    loads_a, loads_b = tm // rows_per_load, tn // rows_per_load
    tiles_m, tiles_n = -(-m // tm), -(-n // tn)
    total = tiles_m * tiles_n
    k_tiles = -(-k // K.TILE_K)

    # the launch order -> tile mapping must be a bijection
    seen = set()
    for bid in range(total):
        pid = K.xcd_remap(bid, total)
        assert 0 <= pid < total, (bid, pid)
        pm, pn = K.raster(pid, tiles_m, tiles_n, cfg.group_m)
        assert 0 <= pm < tiles_m and 0 <= pn < tiles_n, (bid, pm, pn)
        seen.add((pm, pn))
    assert len(seen) == total

    tid = np.arange(K.THREADS)
    lane, wave = tid & 63, tid >> 6
    g, i = lane >> 4, lane & 15
    wm, wn = wave >> 1, wave & 1
    r_t, c_t = tid >> 3, tid & 7
    a_rows = [q * rows_per_load + r_t for q in range(loads_a)]
    b_rows = [q * rows_per_load + r_t for q in range(loads_b)]
    a_row = [wm * wave_m + 16 * t + i for t in range(mt)]
    b_row = [wn * wave_n + K.b_tile_row(p, t, i) for p in range(npairs) for t in range(2)]
    worst = {"ds_write": 1, "ds_read": 1}

    def gather(flat, nbytes, off):
        off = _u32(off)
        out = np.zeros((len(off), 8))
        ok = off < nbytes
        assert np.all(off[ok] % 16 == 0) and np.all(off[ok] + 16 <= nbytes), "straddling/misaligned load"
        idx = off[ok] // 2
        out[ok] = flat[idx[:, None] + np.arange(8)]
        return out

    bids = range(total) if tiles_subset is None else tiles_subset
    for bid in bids:
        pid = K.xcd_remap(bid, total)
        pm, pn = K.raster(pid, tiles_m, tiles_n, cfg.group_m)
        m0, n0 = pm * tm, pn * tn
        a_base = [(m0 + r) * (k * 2) + c_t * 16 for r in a_rows]
        b_base = [(n0 + r) * (k * 2) + c_t * 16 for r in b_rows]
        a_ok = [m0 + r < m for r in a_rows]
        b_ok = [n0 + r < n for r in b_rows]
        lds_a = np.full((cfg.stages, tm * K.TILE_K), np.nan)
        lds_b = np.full((cfg.stages, tn * K.TILE_K), np.nan)
        acc = np.zeros((mt * 2 * npairs, K.THREADS, 4))

        def load_tile(kt):
            k_ok = kt * K.TILE_K + c_t * K.CHUNK < k
            k_bytes = kt * K.TILE_K * 2
            regs = [gather(Af, nr_a, np.where(ok & k_ok, base + k_bytes, OOBU)) for base, ok in zip(a_base, a_ok)]
            regs += [gather(Bf, nr_b, np.where(ok & k_ok, base + k_bytes, OOBU)) for base, ok in zip(b_base, b_ok)]
            return regs

        def store_tile(regs, stage):
            cnt_a = np.zeros(tm * K.TILE_K, dtype=np.int64)
            cnt_b = np.zeros(tn * K.TILE_K, dtype=np.int64)
            for q, r in enumerate(a_rows):
                off = K.lds_offset(r, c_t)
                if check_conflicts:
                    worst["ds_write"] = max(worst["ds_write"], conflict_degree(off * 2))
                lds_a[stage, off[:, None] + np.arange(8)] = regs[q]
                np.add.at(cnt_a, off[:, None] + np.arange(8), 1)
            for q, r in enumerate(b_rows):
                off = K.lds_offset(r, c_t)
                if check_conflicts:
                    worst["ds_write"] = max(worst["ds_write"], conflict_degree(off * 2))
                lds_b[stage, off[:, None] + np.arange(8)] = regs[loads_a + q]
                np.add.at(cnt_b, off[:, None] + np.arange(8), 1)
            assert np.all(cnt_a == 1) and np.all(cnt_b == 1), "LDS tile not written exactly once"

        def mfma(x, y, d):
            """x, y: [256 lanes of the workgroup, 8]; per wave: D += Aop . Bop with FlyDSL's CDNA3 layouts."""
            ln = np.arange(64)
            kpt = 8 if wide else 4
            halves = [(0, 8)] if wide else [(0, 4), (4, 8)]
            xw, yw = x.reshape(4, 64, 8), y.reshape(4, 64, 8)
            d = d.reshape(4, 64, 4).copy()
            for lo, hi in halves:
                Aop = np.zeros((4, 16, 4 * kpt))
                Bop = np.zeros((4, 4 * kpt, 16))
                for v in range(kpt):
                    Aop[:, ln % 16, kpt * (ln // 16) + v] = xw[:, :, lo + v]
                    Bop[:, kpt * (ln // 16) + v, ln % 16] = yw[:, :, lo + v]
                D = Aop @ Bop
                for r in range(4):
                    d[:, :, r] += D[:, 4 * (ln // 16) + r, ln % 16]
            return d.reshape(256, 4)

        def read_lds(lds, row, chunk):
            """One ds_read_b128 per lane of 16-byte chunk `chunk` of tile row `row`, with its bank-conflict degree."""
            off = K.lds_offset(row, chunk)
            if check_conflicts:
                for w in range(4):
                    worst["ds_read"] = max(worst["ds_read"], conflict_degree(off[64 * w:64 * w + 64] * 2))
            return lds[off[:, None] + np.arange(8)]

        def compute_tile(acc, stage):
            for kk in range(K.TILE_K // 32):
                chunk = 4 * kk + g
                av = [read_lds(lds_a[stage], r, chunk) for r in a_row]
                bv = [read_lds(lds_b[stage], r, chunk) for r in b_row]
                assert not any(np.isnan(v).any() for v in av + bv), "read an unwritten LDS slot"
                acc = np.stack([mfma(bv[j], av[t], acc[t * len(b_row) + j])
                                for t in range(mt) for j in range(len(b_row))])
            return acc

        store_tile(load_tile(0), 0)
        for kt in range(0, k_tiles - 1):
            nxt = load_tile(kt + 1)
            if cfg.stages == 1:
                acc = compute_tile(acc, 0)
                store_tile(nxt, 0)
            else:
                acc = compute_tile(acc, kt & 1)
                store_tile(nxt, (kt + 1) & 1)
        acc = compute_tile(acc, 0 if cfg.stages == 1 else (k_tiles - 1) & 1)

        for t in range(mt):
            row = m0 + wm * wave_m + 16 * t + i
            row_ok = row < m
            for p in range(npairs):
                col = n0 + wn * wave_n + 32 * p + 8 * g
                out = np.concatenate([acc[t * 2 * npairs + 2 * p], acc[t * 2 * npairs + 2 * p + 1]], axis=1)
                if cfg.vec_store:
                    off = _u32(np.where(row_ok & (col < n), (row * n + col) * 2, OOBU))
                    ok = off < nr_c
                    assert np.all(off[ok] % 16 == 0) and np.all(off[ok] + 16 <= nr_c), "bad 16-byte store"
                    idx = off[ok] // 2
                    C[idx[:, None] + np.arange(8)] = out[ok]
                    np.add.at(writes, idx[:, None] + np.arange(8), 1)
                else:
                    for e in range(8):
                        off = _u32(np.where(row_ok & (col + e < n), (row * n + col + e) * 2, OOBU))
                        ok = off < nr_c
                        idx = off[ok] // 2
                        C[idx] = out[ok, e]
                        np.add.at(writes, idx, 1)

    ref = (A @ B.T).reshape(-1)
    if tiles_subset is None:
        assert np.all(writes == 1), f"C elements written {writes.min()}..{writes.max()} times"
        err = np.abs(C - ref).max()
    else:
        assert writes.max() == 1
        sel = writes == 1
        err = np.abs(C[sel] - ref[sel]).max()
    return cfg, float(err), worst


def edge_tiles(m, n, cfg):
    """Launch ids of the corner tiles and a few inner ones (for shapes of more than 64 tiles), or None = all."""
    tm_, tn_ = -(-m // cfg.tile_m), -(-n // cfg.tile_n)
    tiles = tm_ * tn_
    if tiles <= 64:
        return None
    want = {(0, 0), (tm_ - 1, tn_ - 1), (tm_ - 1, 0), (0, tn_ - 1), (tm_ // 2, tn_ - 1), (tm_ - 1, tn_ // 2),
            (tm_ // 2, tn_ // 2)}
    return sorted(b for b in range(tiles) if K.raster(K.xcd_remap(b, tiles), tm_, tn_, cfg.group_m) in want)


def run_case(arch, shape):
    """One line per case; True when it passes."""
    t0 = time.time()
    try:
        m, n, k = map(int, shape.split("x"))
        cfg = K.choose_config(m, n, arch)
        subset = edge_tiles(m, n, cfg)
        cfg, err, worst = emulate(m, n, k, arch, cfg, subset)
        ok = err == 0 and max(worst.values()) == 1
        why = "" if ok else (" max|C-ref| != 0" if err else " bank conflicts")
    except AssertionError as e:  # the model's invariants (coverage, bounds, LDS, bijection)
        ok, why, cfg, err, worst, subset = False, f" {e or 'assertion failed'}", None, float("nan"), {}, None
    where = "all workgroups" if subset is None else f"workgroups {subset}"
    print(f"{'OK  ' if ok else 'FAIL'} {arch} {shape}: cfg={cfg.tag if cfg else '?'} max|C-ref|={err} "
          f"conflicts={worst} ({where}) {time.time() - t0:.1f}s{why}", flush=True)
    return ok


def main(argv):
    global K
    archs = [a for a in argv if a in ARCHS] or list(ARCHS)
    shapes = [a for a in argv if a not in ARCHS] or DEFAULT_SHAPES
    with tempfile.TemporaryDirectory() as tmp:
        K = load_kernel(archs[0], tmp)
        fails = sum(not run_case(arch, s) for arch in archs for s in shapes)
    print(f"gemm_flydsl: {fails} of {len(archs) * len(shapes)} cases failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
