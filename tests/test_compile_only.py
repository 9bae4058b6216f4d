"""Compile-only: every Hopper cell compiles for sm_90a on the CPU and its PTX shows what the cell promises.

The workspace's own `test_kernel.py --compile-only` checks op.json's markers; these tests also count the
instructions that make each kernel what it is (128-bit accesses, warpgroup MMA, TMA, shuffles).
"""

from __future__ import annotations

import json
import re
import shutil
import functools
import subprocess
import sys
import tempfile
from pathlib import Path

import isa_metrics
import pytest
from helpers import PATTERN_OPS, load_package, ptxas_usage, read_json
from tools import registry


@functools.cache
def compiled_copy(baked) -> Path:
    """A copy of a baked workspace after its own `test_kernel.py --compile-only`, once per workspace: one compile per
    distinct path. The copy keeps the bake that other tests read (test_bake's file list) as the bake left it."""
    ws = Path(tempfile.mkdtemp()) / baked.name
    shutil.copytree(baked, ws, ignore=shutil.ignore_patterns(".git", "__pycache__", "build"))
    done = subprocess.run([sys.executable, "test_kernel.py", "--compile-only"], cwd=ws, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return ws


def compile_workspace(baked) -> str:
    """The PTX of the workspace's own compile-only run (compiled_copy)."""
    ws = compiled_copy(baked)
    report = read_json(ws / "results" / "compile_only.json")
    assert report["ok"] and report["target"] == "sm_90a"
    ptx = (ws / "build" / report["isa_file"]).read_text()
    assert ".target sm_90a" in ptx and ".local" not in ptx
    return ptx


@pytest.mark.parametrize("op", PATTERN_OPS["elementwise"])
def test_elementwise_markers(workspace_of, op):
    """Every built-in op is a program (lowered.py) in the cell's one kernel: at the headline size each row input
    loads 2 vectors per thread (unroll_for), each one 128-bit access, and each output stores as many."""
    ws = workspace_of("H200", op)
    assert "def compute(" in (ws / "lowered.py").read_text()
    ptx = compile_workspace(ws)
    n_inputs = 2 if op in ("add", "mul", "silu_mul") else 1
    unroll = 2
    assert ptx.count("ld.global.v4") == unroll * n_inputs
    assert ptx.count("st.global.v4") == unroll


def test_elementwise_small_tensors_take_one_vector_per_thread(workspace_of, tmp_path):
    """Below SMALL_N elements the cell compiles its one-vector-per-thread variant: one 128-bit load per input, one
    store."""
    kernel = load_package(workspace_of("H200", "add"), "add_small").kernel
    ptx = kernel.compile_only({"vars": {"numel": 4096}, "dims": [4096]}, tmp_path)
    assert kernel.unroll_for(4096) == 1 and kernel.unroll_for(kernel.SMALL_N) == 2
    assert ptx.count("ld.global.v4") == 2 and ptx.count("st.global.v4") == 1


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_elementwise_other_dtypes_vectorize(workspace_of, tmp_path, dtype):
    ws = workspace_of("H200", "silu_mul")
    kernel = load_package(ws, f"silu_mul_{dtype}").kernel
    ptx = kernel.compile_only(None, tmp_path, dtype=dtype)
    assert ptx.count("ld.global.v4") == 4 and ptx.count("st.global.v4") == 2


@pytest.mark.parametrize("op", PATTERN_OPS["reduction"])
def test_reduction_markers(workspace_of, op):
    ptx = compile_workspace(workspace_of("H200", op))
    markers = registry.cell("reduction", "cutedsl")["isa_markers"]["required"]
    loads, = [m for m in markers if m["text"] == "ld.global.v4"]
    assert re.search(loads["regex"], ptx) and "shfl.sync.bfly" in ptx  # 128-bit loads, with or without an L2 policy
    if op in ("softmax", "rmsnorm"):  # the row is written back from registers with 128-bit stores
        assert "st.global.v4" in ptx


def test_long_softmax_reads_its_row_twice(workspace_of, tmp_path):
    """The looped path schedules softmax's max and sum in one pass (lowered.ONLINE: the online softmax), so a row of
    2**20 reads x in two passes, the reductions, then the outputs; each pass is a loop over whole slices (no
    predicates) and one partial slice, LOOP_CHUNKS 128-bit loads each."""
    ws = workspace_of("H200", "softmax")
    lowered = (ws / "lowered.py").read_text()
    assert "PASSES = (0, 0)" in lowered and "ONLINE = (None, 0)" in lowered
    kernel = load_package(ws, "softmax_long").kernel
    ptx = kernel.compile_only({"dims": [8, 1 << 20]}, tmp_path)
    assert ptx.count("ld.global.v4") == 2 * 2 * kernel.LOOP_CHUNKS
    assert ptx.count("st.global.v4") == 2 * kernel.LOOP_CHUNKS
    assert kernel.describe({"dims": [8, 1 << 20]})["path"] == "looped (one CTA per row, 2 passes)"


def test_long_softmax_rows_split_across_a_cluster(workspace_of, tmp_path):
    """A softmax row of 131072 bf16 is split across a cluster of 16 CTAs of 256 threads (4 chunks each), read once
    into registers and written once; its max and its sum cross the cluster once, together, as one (max, sum) pair
    (the plan's "pair"), with no CTA barrier: every warp sends its pair with one 8-byte st.async into every CTA's
    shared memory (16 x 8 pairs), completed on the receiver's mbarrier (the direct exchange)."""
    kernel = load_package(workspace_of("H200", "softmax"), "softmax_cluster").kernel
    ptx = kernel.compile_only({"dims": [8, 131072]}, tmp_path)
    plan = kernel.describe({"dims": [8, 131072]})
    assert (plan["cluster"], plan["threads_per_cta"], plan["chunks_per_thread"], plan["grid_blocks"]) == (16, 256, 4, 128)
    assert plan["smem_bytes"] == (8 + 4 * 16 * 8) * 2 + 16 + 8 * 16 * 8 + 8
    assert "as one (max, sum) pair" in plan["data_movement"]
    many = kernel.describe({"dims": [4096, 32000]})["data_movement"]  # the many-rows cluster of 2: every warp's pair
    assert "every warp's result to every CTA" in many and "as one (max, sum) pair" in many
    assert ptx.count("ld.global.v4") == 4 and ptx.count("st.global.v4") == 4
    assert ptx.count("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32") == 1
    assert ptx.count("mbarrier.try_wait.parity") >= 1 and "barrier.cluster.wait" in ptx
    assert not re.search(r"\bbar(?:rier)?\.sync\b", ptx)


def test_cluster_exchange_of_one_send_a_cta(workspace_of, tmp_path):
    """CLUSTER_DIRECT off (the exchange before it, kept for A/B: bench_cluster.py's exchange_cta): each CTA reduces
    its share first, through shared memory and a CTA barrier, and one thread a peer sends the CTA's result: here
    softmax's (max, sum) pair (the plan's "pair"), one barrier and one 8-byte send for both."""
    kernel = load_package(workspace_of("H200", "softmax"), "softmax_cluster_cta").kernel
    assert kernel.CLUSTER_DIRECT is True
    kernel.CLUSTER_DIRECT = False
    try:
        ptx = kernel.compile_only({"dims": [8, 131072]}, tmp_path)
        smem = kernel.describe({"dims": [8, 131072]})["smem_bytes"]
    finally:
        kernel.CLUSTER_DIRECT = True
    assert len(re.findall(r"\bbar(?:rier)?\.sync\b", ptx)) == 1
    assert ptx.count("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32") == 1
    assert smem == 4 * 8 * 2 + (8 + 4 * 16) * 2 + 16 + 8 * 16 + 8


def test_a_register_row_predicates_its_last_chunk_alone(workspace_of, tmp_path):
    """kernel._whole_chunks: every register-path plan gives a thread ceil(NV / (TPR * CLUSTER)) chunks, at every N
    and VEC (softmax's one load, rmsnorm's two), so every chunk but the last exists for every thread and only the last
    is predicated (TAIL_PREDICATES, off until timed on the H200). At 1024x128256 (a cluster of 8, 8 chunks, the last
    partial) the loads then address every chunk from one base register; with every chunk predicated each has its own."""
    softmax = load_package(workspace_of("H200", "softmax"), "softmax_tail").kernel
    rmsnorm = load_package(workspace_of("H200", "rmsnorm"), "rmsnorm_tail").kernel
    default, softmax.TAIL_PREDICATES, rmsnorm.TAIL_PREDICATES = softmax.TAIL_PREDICATES, True, True
    checked = 0
    for kernel in (softmax, rmsnorm):
        for n in [*range(1, 4097, 7), *range(4096, 300000, 997), 5120, 5600, 32000, 128256, 131072, 262144]:
            for vec in (8, 4, 2, 1):
                for _, cfg in kernel.plans(n, vec) if n % vec == 0 else ():
                    nv = n // vec
                    if not cfg["looped"]:
                        stride = cfg["tpr"] * cfg["cluster"]
                        assert cfg["chunks"] == -(-nv // stride), (n, vec, cfg)
                        assert (kernel._whole_chunks(cfg["chunks"], cfg["full"]) ==
                                cfg["chunks"] - (nv % stride != 0)), (n, vec, cfg)
                        checked += 1
    assert checked > 3000

    def bases(tail: bool) -> int:
        softmax.TAIL_PREDICATES = tail
        softmax._compiled.clear()
        ptx = softmax.compile_only({"dims": [1024, 128256]}, tmp_path / str(tail))
        return len(set(re.findall(r"ld\.global\.v4\.b32\s+\{[^}]*\}, \[(%rd\d+)", ptx)))

    try:
        assert (bases(True), bases(False)) == (1, 8)
    finally:
        softmax.TAIL_PREDICATES = rmsnorm.TAIL_PREDICATES = default
        softmax._compiled.clear()


def test_every_ab_the_device_runs_names_knobs_the_kernel_has(workspace_of):
    """A device call is scarce: every variant and op that benchmarks/cluster_ab.sh asks bench_cluster.py for exists,
    and every knob a variant sets is still a knob of the reduction cell (a removed knob would stop the call at its
    first shape, on the GPU)."""
    import bench_cluster

    kernel = load_package(workspace_of("H200", "softmax"), "softmax_knobs").kernel
    owners = {k: bench_cluster.knob_owner(kernel, k) for k in bench_cluster._KNOBS}
    missing = [k for k, (module, name) in owners.items() if not name.isupper() or not hasattr(module, name)]
    assert not missing, f"bench_cluster.VARIANTS sets knobs the kernel does not have: {missing}"
    script = (Path(bench_cluster.__file__).parent / "cluster_ab.sh").read_text()
    variants, ops = set(re.findall(r"--variant ([a-z]\w*)", script)), set(re.findall(r"--op ([a-z]\w*)", script))
    assert variants and ops
    assert variants <= set(bench_cluster.VARIANTS), variants - set(bench_cluster.VARIANTS)
    assert ops <= {*bench_cluster.SHAPES, *bench_cluster.USER}, ops - {*bench_cluster.SHAPES, *bench_cluster.USER}


def test_online_pair_leaves_the_warp_once(workspace_of, tmp_path):
    """ONLINE_EXCHANGE (on: benchmarks/2026-12-06-online-pair.md): softmax's max and sum leave the warp as one pair, so
    a row of one CTA has one bar.sync where it had two, and a cluster row one 8-byte st.async and one mbarrier wait
    where it had two 4-byte ones. compute()'s reduce("rebase") then moves the warp's exps to the row's max with one
    multiply each, so a value's exp is still taken once: the pair adds only scalar exps a thread (the received pairs'
    rescale and the rebase's). The pairs' shared memory is in describe()'s count. The many-rows plan is compiled
    with MANY_ROWS_DIRECT off, its exchange once a CTA, so that what changes is the pair's alone (its direct
    exchange, which only a pair takes, is test_many_rows_direct_exchange_is_quacks_kernel's)."""
    kernel = load_package(workspace_of("H200", "softmax"), "softmax_online").kernel
    assert kernel.ONLINE_EXCHANGE is True
    shapes = {"cluster": [8, 131072], "many": [1024, 128256], "cta": [32768, 8192], "pairs_apart": [4096, 32000]}
    ptx, smem = {}, {}
    kernel.MANY_ROWS_DIRECT = False
    try:
        for online in (False, True):
            kernel.ONLINE_EXCHANGE = online
            kernel._compiled.clear()
            for name, dims in shapes.items():
                ptx[name, online] = kernel.compile_only({"dims": dims}, tmp_path / f"{name}_{online}")
                smem[name, online] = kernel.describe({"dims": dims})["smem_bytes"]
    finally:
        kernel.ONLINE_EXCHANGE, kernel.MANY_ROWS_DIRECT = True, True
        kernel._compiled.clear()

    def count(pattern, name, online):
        return len(re.findall(pattern, ptx[name, online]))

    for name in ("cluster", "many", "cta"):
        assert 0 < count(r"ex2\.approx", name, True) - count(r"ex2\.approx", name, False) <= 8, name
    assert ptx["pairs_apart", True] == ptx["pairs_apart", False]  # the many-rows plan's cluster of 2: _pair_exchange
    assert [count(r"bar\.sync", "cta", on) for on in (False, True)] == [2, 1]
    assert [count(r"bar\.sync", "many", on) for on in (False, True)] == [2, 1]  # CTAs of 256 a row, 8 a cluster
    assert [count(r"bar\.sync", "cluster", on) for on in (False, True)] == [0, 0]  # the direct exchange
    for name in ("cluster", "many"):
        assert [count(r"st\.async", name, on) for on in (False, True)] == [2, 1], name
        assert count(r"st\.async\S*v2\.b32", name, True) == 1 and count(r"mbarrier\.try_wait", name, True) == 1
    assert smem["cluster", True] == smem["cluster", False] + 8 * 16 * 8 + 8  # a pair from each of 16 x 8 warps
    assert smem["many", True] == smem["many", False] + 8 * 8 + 8  # a pair from each of the 8 CTAs
    assert smem["cta", True] == smem["cta", False]
    stale = shutil.copytree(workspace_of("H200", "softmax"), tmp_path / "stale", ignore=shutil.ignore_patterns(".git"))
    lowered = (stale / "lowered.py").read_text()
    (stale / "lowered.py").write_text(re.sub(r'^ +\w+, \w+ = reduce\("rebase".*\n', "", lowered, flags=re.M))
    old = load_package(stale, "softmax_no_rebase").kernel
    old.ONLINE_EXCHANGE = True  # a lowered.py without the rebase would store the warp's frame: refused at compile
    with pytest.raises(ValueError, match="not followed by reduce"):
        old.compile_only({"dims": shapes["cta"]}, tmp_path / "stale_ptx")


def test_many_softmax_rows_take_fewer_fuller_ctas(workspace_of, tmp_path):
    """Where rows outnumber what the GPU holds at a time (kernel.plans), the H200's softmax rows of 131072 take
    quack's geometry: 8 CTAs of 256 threads of 8 chunks, ptxas held to 3 CTAs an SM (.minnctapersm 3, .maxntid 256,
    at most 85 registers, no spill), compiled with no GPU (the launch names its shared-memory carveout). The plan
    starts at two waves of those rows; below, 16 CTAs of 4 chunks. Rows that would need CTAs of 512 keep one plan,
    and so does the H100, whose HBM gives each SM less; a row of 262144, whose few-rows plan would be CTAs of 512,
    takes it at every M on both."""
    kernel = load_package(workspace_of("H200", "softmax"), "softmax_many").kernel
    (one, few), (start, many) = kernel.plans(131072, 8)
    assert (one, few["cluster"], few["chunks"], few["min_ctas"]) == (1, 16, 4, 0)
    assert (many["cluster"], many["tpr"], many["chunks"], many["min_ctas"]) == (8, 256, 8, 3)
    assert start == 2 * (132 * 3 // 8)
    assert kernel.describe({"dims": [start - 1, 131072]})["grid_blocks"] == (start - 1) * 16
    assert kernel.describe({"dims": [start, 131072]})["grid_blocks"] == start * 8
    ptx = kernel.compile_only({"dims": [1024, 131072]}, tmp_path)
    assert ".minnctapersm 3" in ptx and re.search(r"\.maxntid 256, 1, 1", ptx)
    assert ptx.count("ld.global.v4") == 8 and ptx.count("st.global.v4") == 8
    if shutil.which("ptxas"):
        (regs, spill), = ptxas_usage(ptx, tmp_path)
        assert regs <= 65536 // (3 * 256) and spill == 0, (regs, spill)
    assert len(kernel.plans(300000, 8)) == 1, "CTAs of 512 at 3 an SM would leave 42 registers for 64 values"
    h100 = load_package(workspace_of("H100", "softmax"), "softmax_many_h100").kernel
    assert [start for start, _ in h100.plans(131072, 8)] == [1]
    for k in (kernel, h100):  # a full cluster of CTAs of 512 would be the few-rows plan: never taken
        ((one, only),) = k.plans(262144, 8)
        assert (one, only["cluster"], only["threads"], only["chunks"], only["min_ctas"]) == (1, 16, 256, 8, 3)


def test_many_rows_direct_exchange_is_quacks_kernel(workspace_of, tmp_path):
    """MANY_ROWS_DIRECT (on: bench_cluster.py's many_apart lost to it on an H100,
    benchmarks/2026-12-06-h100-many-direct.md): the many-rows plan's cluster row sends each warp's online (max, sum)
    pair to every CTA, with no CTA barrier: quack's softmax kernel (one 8-byte st.async, no bar.sync), in 80
    registers with no spill. Only a program with an online pair takes it: a max has one value to send and keeps one
    send a CTA; so does the knob off (a CTA barrier, the pair sent once a CTA)."""
    kernel = load_package(workspace_of("H200", "softmax"), "softmax_many_direct").kernel
    assert kernel.MANY_ROWS_DIRECT is True
    (_, few), (_, many) = kernel.plans(131072, 8)
    ptx = kernel.compile_only({"dims": [1024, 131072]}, tmp_path)
    smem = kernel.describe({"dims": [1024, 131072]})["smem_bytes"]
    (_, two), = [p for p in kernel.plans(32000, 8) if p[1]["min_ctas"]]
    assert (many["cluster"], many["min_ctas"], many["direct"], many["pair"]) == (8, 3, True, True)
    assert (two["cluster"], two["direct"], two["pair"]) == (2, True, True)  # a cluster of 2 exchanges the pair too
    assert not re.search(r"\bbar(?:rier)?\.sync\b", ptx)
    assert ptx.count("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32") == 1
    assert smem == (8 + 4 * 8 * 8) * 2 + 16 + 8 * 8 * 8 + 8  # every warp's partial and pair from 8 CTAs of 8 warps
    if shutil.which("ptxas"):
        (regs, spill), = ptxas_usage(ptx, tmp_path)
        assert regs <= 65536 // (3 * 256) and spill == 0, (regs, spill)
    kernel.MANY_ROWS_DIRECT = False
    try:
        (_, few_off), (_, apart) = kernel.plans(131072, 8)
        off = kernel.compile_only({"dims": [1024, 131072]}, tmp_path / "apart")
    finally:
        kernel.MANY_ROWS_DIRECT = True
        kernel._compiled.clear()
    assert few_off == few, "the few-rows plan is the knob's own (CLUSTER_DIRECT)"
    assert (apart["cluster"], apart["min_ctas"], apart["direct"]) == (8, 3, False)
    assert re.search(r"\bbar(?:rier)?\.sync\b", off), "one send a CTA: the CTA's warps meet first"
    amax = load_package(workspace_of("H200", "max"), "max_many_direct").kernel
    many_max = [cfg for _, cfg in amax.plans(131072, 8) if cfg["min_ctas"]]
    assert many_max and not any(cfg["direct"] for cfg in many_max)


def test_rows_below_one_wave_take_twice_the_threads(workspace_of, tmp_path):
    """Rows of one CTA each, no more of them than the GPU's SMs (kernel._sub_wave_plans): 16 values a thread in twice
    the threads (rmsnorm N = 5120: whole warps, 320 of 2 up to M = 132, then 160 of 4; N = 8192: 512 threads of 2,
    then the full-SM plan); never the looped path nor a cluster; a row split across a cluster, or held by one warp,
    keeps its one plan. Both plans of N = 5120 are compiled for sm_90a with no GPU: the wide one has .reqntid 320
    and two 128-bit loads a tensor per thread."""
    kernel = load_package(workspace_of("H200", "rmsnorm"), "rmsnorm_sub_wave").kernel
    shape = [(start, cfg["threads"], cfg["chunks"], cfg["cluster"], cfg["looped"]) for start, cfg in kernel.plans(8192, 8)]
    assert shape[0] == (1, 512, 2, 1, False) and shape[1][0] == kernel.SM_COUNT + 1
    assert [(s, c["threads"], c["chunks"], c["full"]) for s, c in kernel.plans(5120, 8)] == [
        (1, 320, 2, True), (kernel.SM_COUNT + 1, 160, 4, True)]
    assert len(kernel.plans(16384, 8)) == 1 and kernel.plans(16384, 8)[0][1]["cluster"] == 2
    assert {c["tpr"] for _, c in kernel.plans(256, 8)} == {32}, "a short row already has a thread per vector"
    assert {c["tpr"] for _, c in kernel.plans(1024, 8)} == {32}, "a row of one warp reduces by shuffles alone"
    assert [(s, c["tpr"]) for s, c in kernel.plans(2048, 8)] == [(1, 128), (kernel.SM_COUNT + 1, 64)]
    wide = kernel.compile_only({"dims": [kernel.SM_COUNT, 5120]}, tmp_path)
    full = kernel.compile_only({"dims": [kernel.SM_COUNT + 1, 5120]}, tmp_path)
    assert re.search(r"\.reqntid 320, 1, 1", wide) and re.search(r"\.reqntid 160, 1, 1", full)
    assert wide.count("ld.global.v4") == 4 and full.count("ld.global.v4") == 8  # x and weight: 2 chunks, then 4
    assert kernel.describe({"dims": [kernel.SM_COUNT, 5120]})["grid_blocks"] == kernel.SM_COUNT
    kept, kernel.SUB_WAVE_VALUES = kernel.SUB_WAVE_VALUES, 0  # bench_cluster.py's one_wave_256: the plan of any M
    try:
        assert len(kernel.plans(8192, 8)) == 1
    finally:
        kernel.SUB_WAVE_VALUES = kept


def test_rmsnorm_weight_converted_after_the_reduction(workspace_of, tmp_path):
    """CONVERT_LATE (the few-rows plan's; off until timed on the H200): rmsnorm's weight, loaded with x, is converted
    to fp32 only after the row's reduction, so it is held across it as 16 words of bf16 pairs, not 32 fp32 values:
    every conversion of the weight comes after the CTA barrier, and ptxas fits the kernel in 64 registers (4 CTAs of
    256 an SM). SUB_WAVE_VALUES 0 keeps that plan at every M (not the full-SM plan, which converts late anyway)."""
    kernel = load_package(workspace_of("H200", "rmsnorm"), "rmsnorm_convert_late").kernel
    assert kernel.CONVERT_LATE is False
    kept = kernel.SUB_WAVE_VALUES
    kernel.CONVERT_LATE, kernel.SUB_WAVE_VALUES = True, 0
    try:
        ptx = kernel.compile_only({"dims": [32768, 8192]}, tmp_path)
    finally:
        kernel.CONVERT_LATE, kernel.SUB_WAVE_VALUES = False, kept
    before, after = re.split(r"\bbar(?:rier)?\.sync\b", ptx, maxsplit=1)
    assert before.count("cvt.f32.bf16") == 32 and after.count("cvt.f32.bf16") == 32, "x's 32 values, then weight's"
    if shutil.which("ptxas"):
        (regs, spill), = ptxas_usage(ptx, tmp_path)
        assert regs <= 64 and spill == 0, (regs, spill)


def test_rmsnorm_full_sm_plan(workspace_of, tmp_path):
    """kernel._full_sm_plan: rmsnorm's rows of 8192 bf16, more of them than SMs, in CTAs of 512 threads of 16 values
    held to 4 CTAs an SM (.minnctapersm 4, .maxntid 512), the weight converted after the reduction, every load with an
    L2 evict_last policy (createpolicy; ld.global.L2::cache_hint): ptxas fits it in 32 registers with no spill, 2048
    threads an SM, the occupancy of Inductor's rmsnorm at 32768x8192. Where the CTAs of 512 would not be whole (N =
    5120, 7168) and in fp32 (whose held weight would spill) the plan does not apply; below one wave the sub-wave
    plan keeps ptxas's own choice."""
    kernel = load_package(workspace_of("H200", "rmsnorm"), "rmsnorm_full_sm").kernel
    (_, wide), (start, cfg) = kernel.plans(8192, 8)
    assert start == kernel.SM_COUNT + 1 and (wide["min_ctas"], wide["l2_last"]) == (0, False)
    assert (cfg["threads"], cfg["chunks"], cfg["cluster"], cfg["min_ctas"], cfg["full"]) == (512, 2, 1, 4, True)
    assert cfg["convert_late"] and cfg["l2_last"]
    assert not any(c["l2_last"] or c["min_ctas"] for n, vec in ((5120, 8), (7168, 8), (8192, 4), (4096, 4))
                   for _, c in kernel.plans(n, vec)), "only whole CTAs of 512, 16-bit elements"
    ptx = kernel.compile_only({"dims": [32768, 8192]}, tmp_path)
    assert ".minnctapersm 4" in ptx and re.search(r"\.maxntid 512, 1, 1", ptx)
    assert "createpolicy.fractional.L2::evict_last" in ptx
    loads = re.findall(r"ld\.global\S*", ptx)
    assert len(loads) == 4 and all("L2::cache_hint" in ld for ld in loads), loads  # x and weight, 2 chunks each
    before, after = re.split(r"\bbar(?:rier)?\.sync\b", ptx, maxsplit=1)
    assert before.count("cvt.f32.bf16") == 16 and after.count("cvt.f32.bf16") == 16, "x's 16 values, then weight's"
    assert "4 CTAs an SM (many rows)" in kernel.describe({"dims": [32768, 8192]})["path"]
    assert "L2 evict_last" in kernel.describe({"dims": [32768, 8192]})["data_movement"]
    if shutil.which("ptxas"):
        (regs, spill), = ptxas_usage(ptx, tmp_path)
        assert regs <= 32 and spill == 0, (regs, spill)


def test_rmsnorm_reload_holds_nothing_across_the_reduction(workspace_of, tmp_path):
    """RELOAD (off until timed on the H200): rmsnorm's x is read again after the reduction (from L2) instead of held
    across it, and the weight is loaded after it; the row holds nothing across its reduction, so 64 values a thread,
    quack's split of a row of 32768 over a cluster of 2 CTAs of 256, fit 80 registers (3 CTAs an SM) where the held
    row takes 123. Every load is issued twice for x and once for the weight, 8 vectors each."""
    kernel = load_package(workspace_of("H200", "rmsnorm"), "rmsnorm_reload").kernel
    assert kernel.RELOAD is False
    kept = kernel.VALUES_PER_THREAD
    kernel.RELOAD, kernel.VALUES_PER_THREAD = True, 64
    try:
        cfg = kernel.plan(32768, 8, 1024)
        ptx = kernel.compile_only({"dims": [1024, 32768]}, tmp_path)
    finally:
        kernel.RELOAD, kernel.VALUES_PER_THREAD = False, kept
    assert (cfg["cluster"], cfg["threads"], cfg["chunks"]) == (2, 256, 8)
    assert len(re.findall(r"ld\.global\S*", ptx)) == 24, "x's 8 vectors twice, the weight's 8 once"
    if shutil.which("ptxas"):
        (regs, spill), = ptxas_usage(ptx, tmp_path)
        assert regs <= 80 and spill == 0, (regs, spill)


def test_gemm_markers(workspace_of):
    ptx = compile_workspace(workspace_of("H200", "matmul"))
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.bf16\.bf16", ptx), "bf16 WGMMA, fp32 accumulate"
    assert "cp.async.bulk.tensor" in ptx and "mbarrier" in ptx


def test_gemm_fp16_compiles(workspace_of):
    ptx = compile_workspace(workspace_of("H100", "matmul"))
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16", ptx)


def test_decode_attention_markers(workspace_of):
    ptx = compile_workspace(workspace_of("H200", "gqa"))  # headline G = 4: the tensor-core path, fused merge
    assert "mma.sync.aligned.m16n8k16" in ptx and "ex2.approx" in ptx and "atom.global.acq_rel.add" in ptx


def _decode_ptx(workspace_of, tmp_path, shape):
    ws = workspace_of("H200", "gqa")
    kernel = load_package(ws, "gqa_" + shape.replace("x", "_").replace("@", "_")).kernel
    (case,) = registry.pattern("decode_attention").cases(shape, "representative", "bf16")
    return kernel, case, kernel.compile_only(case, tmp_path)


# (shape, path, tiles of keys per warp, resident CTAs per SM the plan counts on): every path of plan()
DECODE_PATHS = [
    ("32x32x8x4096x128", "mma", 16, 2),   # headline G = 4 on the tensor cores: one split, no merge
    ("1x32x8x8192x128", "mma", 16, 2),    # small B*Hkv: 32 splits, the fused merge
    ("32x16x1x4096x128", "mma", 16, 2),   # MQA G = 16, 32 pairs < 132 SMs: two CTAs of 8 heads per item
    ("256x32x1x1024x128", "mma", 16, 2),  # MQA G = 32, 256 pairs: all 32 heads in one CTA, two m16 tiles
    ("32x32x8x4096x64", "mma", 32, 2),    # D = 64: 32-key warp tiles
    ("3x8x8x777x64", "mma", 32, 2),       # MHA: its one head padded to an m16 tile on the tensor cores
    ("2x16x2x1000x256", "cc", 0, 2),      # D = 256 on CUDA cores
]


@pytest.mark.parametrize("shape,path,kt,ctas", DECODE_PATHS)
def test_decode_attention_paths(workspace_of, tmp_path, shape, path, kt, ctas):
    """Each path compiles to what its plan says: mma.sync (or none), the fused merge's acq_rel atomic and fences,
    128-bit partial loads, one kernel entry, no local memory, and registers that allow the CTAs per SM it plans."""
    kernel, case, ptx = _decode_ptx(workspace_of, tmp_path, shape)
    p = kernel.plan(*(case["vars"][k] for k in ("B", "Hq", "Hkv", "S", "D")))
    assert p["mma"] == (path == "mma") and (not p["mma"] or p["unroll"] == kt)
    assert p["slots"] == ctas * kernel.NUM_SMS
    # the CTAs per SM the plan counts on fit the SM's 228 KiB of shared memory (1 KiB per CTA reserved)
    assert ctas * (kernel.describe(case)["smem_bytes_per_cta"] + 1024) <= 228 * 1024
    mma = re.search(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32", ptx)
    assert bool(mma) == (path == "mma") and ("ldmatrix" in ptx) == (path == "mma")
    assert "atom.global.acq_rel.add" in ptx and ptx.count("fence.acq_rel.gpu") >= 2
    assert "ld.global.v4" in ptx and "cp.async.cg.shared.global" in ptx and ".local" not in ptx
    assert ptx.count(".entry") == 1 and "griddepcontrol" not in ptx  # one launch: the merge is fused
    if shutil.which("ptxas"):
        (regs, spill), = ptxas_usage(ptx, tmp_path)
        assert spill == 0 and regs * 128 * ctas <= 65536, (regs, ctas)


def test_decode_attention_plan_regimes(workspace_of):
    """plan() per regime on 132 SMs: many splits for few (sequence, KV head) items, few for many, every split a
    whole number of CTA steps, the split grid covering S_max, and describe() naming the path and the regime."""
    kernel = load_package(workspace_of("H200", "gqa"), "gqa_plan").kernel
    small = kernel.plan(1, 32, 8, 8192, 128)
    middle = kernel.plan(32, 32, 8, 4096, 128)
    mha = kernel.plan(32, 8, 8, 4096, 128)
    assert small["splits"] * small["items"] >= 0.9 * small["slots"] and small["splits"] > 16  # ~one full wave
    assert middle["splits"] == 1 and middle["items"] >= 0.9 * middle["slots"]  # 256 items fill a wave: no merge
    assert mha["splits"] == 1 and mha["mma"] and mha["rows"] == 16  # G = 1 padded to an m16 tile
    mqa = kernel.plan(32, 16, 1, 4096, 128)  # fewer (b, kv head) pairs than SMs: chunks of 8 heads side by side
    assert (mqa["heads"], mqa["chunks"], mqa["grid"][0]) == (8, 2, 2) and mqa["items"] == 32 * 2
    wide = kernel.plan(32, 128, 8, 4096, 128)  # 256 pairs: the group of 16 heads stays in one CTA
    assert (wide["heads"], wide["chunks"]) == (16, 1)
    # chunk CTAs read the same K/V twice over: one more slot per warp in flight; unchunked items keep two
    assert mqa["stages"] == kernel.MMA_STAGES_DEEP > wide["stages"] == middle["stages"] == kernel.MMA_STAGES
    # a grid of one to two waves (B64 Hkv8: 512 CTAs for 264 slots) runs as two full rounds of 2 deeper CTAs per SM
    assert kernel.plan(64, 32, 8, 2048, 128)["stages"] == kernel.MMA_STAGES_DEEP
    assert kernel.plan(128, 32, 8, 2048, 128)["stages"] == kernel.MMA_STAGES  # four waves: 2 stages
    for B, Hq, Hkv, S, D in [(1, 32, 8, 8192, 128), (32, 16, 1, 4096, 128), (4, 32, 8, 32768, 64), (3, 8, 8, 777, 64)]:
        p = kernel.plan(B, Hq, Hkv, S, D)
        assert p["split_size"] % p["block"] == 0 and p["splits"] * p["split_size"] >= S
        assert (p["splits"] - 1) * p["split_size"] < S and p["splits"] <= kernel.MAX_SPLITS
    (case,) = registry.pattern("decode_attention").cases("1x32x8x8192x128", "representative", "bf16")
    d = kernel.describe(case)
    assert d["path"].startswith("tensor cores") and d["regime"].startswith("small") and d["launches"] == 1
    assert d["merge"].startswith("fused")


def test_marker_check_can_fail(workspace_of, tmp_path):
    """The check is not a tautology: a marker the PTX lacks makes --compile-only exit 1."""
    src = workspace_of("H200", "relu")
    ws = tmp_path / "ws"
    subprocess.run(["cp", "-r", str(src), str(ws)], check=True)
    spec = read_json(ws / "op.json")
    spec["isa_markers"]["required"].append({"text": "wgmma.mma_async", "meaning": "not in an elementwise kernel"})
    (ws / "op.json").write_text(json.dumps(spec))
    done = subprocess.run([sys.executable, "test_kernel.py", "--compile-only"], cwd=ws, capture_output=True, text=True)
    assert done.returncode == 1 and "MISSING" in done.stdout


@pytest.mark.parametrize("key,expect", [
    (("H200", "matmul"), {"tensor_core": True, "tma": True}),
    (("H200", "softmax"), {"loads128": True, "stores128": True}),
    (("H200", "gqa"), {"tensor_core": True, "loads128": True}),  # G = 4: mma.sync
    (("H200", "silu_mul"), {"loads128": True, "stores128": True}),
    (("MI355X", "silu_mul"), {"loads128": True, "stores128": True}),  # FlyDSL: compiled to gfx950 at bake time
    (("MI355X", "softmax"), {"loads128": True, "stores128": True, "lds": True}),
    (("MI300X", "matmul"), {"tensor_core": True, "loads128": True, "stores128": True, "lds": True}),
    (("MI308X", "gqa"), {"tensor_core": True, "loads128": True, "stores128": True}),  # two kernels in one file
])
def test_isa_metrics_reads_every_cells_compile_output(workspace_of, key, expect):
    """tools/isa_metrics.py on each cell's real compile-only output: the instructions that define the cell."""
    ws = workspace_of(*key)
    op = read_json(ws / "op.json")
    if op["vendor"] == "nvidia":
        compile_workspace(ws)
        ws = compiled_copy(ws)
    m = isa_metrics.read_workspace(ws, op)
    assert m["isa"] == ("PTX" if op["vendor"] == "nvidia" else "AMDGPU") or m["isa"] == "SASS"
    assert bool(m["tensor_core"]) == expect.get("tensor_core", False)
    assert (m.get("tma", 0) > 0) == expect.get("tma", False)
    assert (m["global_loads"].get(128, 0) > 0) == expect.get("loads128", False)
    if "stores128" in expect:
        assert m["global_stores"].get(128, 0) > 0
    assert not m.get("local_bytes")
    if op["vendor"] == "nvidia" and shutil.which("ptxas"):  # physical registers and spills need ptxas
        assert m["registers"] > 0 and m["spill_bytes"] == 0, m
    if op["vendor"] == "amd":  # the AMDGPU metadata always says: spill counts and the scratch segment
        assert m["local_known"] and m["spill_count"] == 0 and m["local_instructions"] == 0, m
        assert (m["shared_bytes"] > 0) == expect.get("lds", False), m
