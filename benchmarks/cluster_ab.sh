# The CuTe DSL reduction cell against its peers on the H200 (issue 29's quack, torch.compile and host goals), in
# device calls of under 10 minutes each (carry .carry):
#   bash benchmarks/cluster_ab.sh softmax    # softmax: quack, torch.compile, and the plans by M (kernel.plans)
#   bash benchmarks/cluster_ab.sh others     # rmsnorm (quack, torch.compile, CONVERT_LATE, 16 values a thread),
#                                            # LayerNorm, log_softmax
#   bash benchmarks/cluster_ab.sh knobs      # CLUSTER_DIRECT on every cluster shape of softmax, rmsnorm and max
#   bash benchmarks/cluster_ab.sh online     # softmax's max and sum exchanged as one pair (the default, the plan's
#                                            # "pair") against apart (pairs_apart), the many-rows plan's pair sent
#                                            # by every warp (the default) against one send a CTA (many_apart),
#                                            # softmax and log_softmax(x / T), after their GPU test on special rows
#   bash benchmarks/cluster_ab.sh subwave    # no more rows than SMs: twice the threads of half the values (the
#                                            # default) against the plan of any M (one_wave_256), after the GPU
#                                            # tests; the many-rows plan's exchange (default against many_apart)
#   bash benchmarks/cluster_ab.sh sweep      # every shape of every built-in reduction and the user functions
#                                            # against quack and torch.compile, softmax's pair exchanged apart too
#   bash benchmarks/cluster_ab.sh confirm    # a short call: bool masks' and special rows' GPU tests, subwave's
#                                            # A/Bs at the goal shapes, host cost with a bool mask
#   bash benchmarks/cluster_ab.sh goals      # the issue's open H200 goals and run()'s host cost, in one short call
#   bash benchmarks/cluster_ab.sh occupancy  # rows of one CTA at Inductor's occupancy: looped (looped_512,
#                                            # looped_256) or 16 values in CTAs of 512 (v16_cta512_3ctas, _4ctas)
#   bash benchmarks/cluster_ab.sh host       # run()'s host cost per call on every lowered run path (host_paths.py;
#                                            # AGAINST=OLD_TREE times an older template beside it)
#   bash benchmarks/cluster_ab.sh convert    # CONVERT_LATE (convert_late) against the default on the register rows of
#                                            # every program it changes: rmsnorm, F.layer_norm, fused add + rmsnorm
#   bash benchmarks/cluster_ab.sh rows       # the GPU tests of rows as stored (per-row, heads, leading dims) and the
#                                            # GPU time of x [B, S, D] against [M, N] (leading_dims_ab.py)
#   bash benchmarks/cluster_ab.sh fullsm     # the full-SM rmsnorm plan against its peers, its V0 (the built-in, the
#                                            # Llama and Gemma RMSNorms), then rmsnorm's long rows with quack's split
#                                            # (v64_late) and its reload of x (reload64, reload)
#   bash benchmarks/cluster_ab.sh tail       # the last chunk alone predicated and exp(a - m) as one FFMA (after_tail)
#                                            # against the default at softmax's quack goals, 1024x128256 first, then
#                                            # with ld.global.cg (ldcg), then the full-SM rmsnorm plan's peers, then
#                                            # rmsnorm's partial last chunks with and without the knob (tail)
#   bash benchmarks/cluster_ab.sh close      # issue 29's last two H200 goals in one call: softmax 1024x128256 (default,
#                                            # after_tail, quack), the full-SM rmsnorm plan's timing and its V0 flow
# REQUIRE=H200 in front of any of them stops at once on another card (a call that names nvidia-h200 may get an H100).
# Each writes $OUT/cluster-<part>.json after every shape; `python3 benchmarks/bench_cluster.py render FILE` makes
# the table on a CPU. A knob's A/B adds `--variant NAME` (bench_cluster.py VARIANTS); the last ones measured, and
# removed, are in benchmarks/2026-12-05-h200-knobs.md, 2026-12-05-leading-dims.md, 2026-12-06-h100-spread.md and
# 2026-12-06-h200-l2.md.
# Every step runs under a timeout, so that a kernel that hangs (CLUSTER_WARPS did) costs its step, not the call, and
# what finished still comes back.
set -e
case "$1" in
  softmax|others|knobs|online|subwave|confirm|goals|occupancy|host|rows|sweep|convert|fullsm|tail|close) ;;
  *) echo "usage: bash benchmarks/cluster_ab.sh softmax|others|knobs|online|subwave|confirm|goals|occupancy|host|rows|sweep|convert|fullsm|tail|close" >&2
     exit 2 ;;
esac
[ -n "${OUT:-}" ] || { echo "cluster_ab.sh: run it on the device (\$OUT is its output folder)" >&2; exit 2; }
source benchmarks/device_setup.sh  # stops here on a card other than $REQUIRE, if set
export PATH=$PATH:/tmp/site/bin
cd benchmarks
case "$1" in
  softmax)
    # every softmax shape of bench_cluster.py, under each plan: where (in M) each wins. The default is one of the two
    # at every shape (kernel.plans says which), so it is not timed a third time.
    timeout 560 python3 bench_cluster.py run --out "$OUT/cluster-softmax.json" --op softmax --variant few_rows \
      --variant many_rows ;;
  others)  # rmsnorm with CONVERT_LATE (its weight held as loaded across the reduction: 60 registers, not 75), and
    # with 16 values a thread (v16_cta512: 512 threads of 2 chunks at N = 8192, 44 registers; v16: a cluster of 2
    # CTAs of 256, 40): more threads an SM. Then the rest
    timeout 280 python3 bench_cluster.py run --out "$OUT/cluster-rmsnorm.json" --op rmsnorm --variant default \
      --variant convert_late --variant v16_cta512 --variant v16 --shape 128x8192 --shape 16384x5120 \
      --shape 32768x8192 --shape 8192x14336 --shape 16384x7168 --shape 8192x12288 || true
    timeout 250 python3 bench_cluster.py run --out "$OUT/cluster-others.json" --op layer_norm \
      --op layer_norm_by_hand --op log_softmax_temperature --variant default \
      --shape 32768x8192 --shape 4096x16384 --shape 4096x32000 ;;
  knobs)  # CLUSTER_DIRECT against the exchange before it (a CTA step, then one send a CTA: exchange_cta) on every
    # cluster shape
    timeout 330 python3 bench_cluster.py run --out "$OUT/cluster-knobs.json" --op softmax --op rmsnorm --op max \
      --variant default --variant exchange_cta --shape 8x131072 \
      --shape 1024x128256 --shape 4096x32000 --shape 1x32768 --shape 32x131072 --shape 64x65536 \
      --shape 16x262144 --shape 128x32000 --shape 128x8192 --shape 32768x8192 --shape 16384x5120 \
      --shape 8x65536 ;;
  subwave)  # rows of one CTA, no more of them than SMs: 512 threads of 16 values at N = 8192 (the default) against
    # 256 of 32 (one_wave_256), after the GPU tests of softmax's special rows and of every built-in reduction's V0
    # cases; then the many-rows plan's direct exchange (the default) against one send a CTA (many_apart)
    (cd .. && timeout 150 python3 -m pytest -q -x tests/test_gpu.py \
      -k "special_rows and (8192 or 32000 or 131072 or log_softmax)") > "$OUT/subwave-pytest.txt" 2>&1 || true
    tail -3 "$OUT/subwave-pytest.txt"
    (cd .. && timeout 200 bash benchmarks/v0_builtins.sh "$OUT/v0" reduction:sum reduction:mean \
      reduction:max reduction:softmax reduction:rmsnorm) > "$OUT/subwave-v0.txt" 2>&1 || true
    cat "$OUT/subwave-v0.txt"
    timeout 150 python3 bench_cluster.py run --out "$OUT/cluster-subwave.json" --op rmsnorm --op softmax \
      --op layer_norm --variant default --variant one_wave_256 --shape 128x8192 --shape 132x8192 --shape 64x4096 \
      --shape 128x5120 --shape 100x7168 --shape 128x2048 --shape 8x8192 --shape 256x8192 --shape 132x5120 || true
    timeout 120 python3 bench_cluster.py run --out "$OUT/cluster-many-direct.json" --op softmax --variant default \
      --variant many_apart --shape 16x262144 --shape 512x32000 --shape 256x128256 --shape 1024x128256 \
      --shape 4096x32000 ;;
  confirm)  # one short call for a GPU lent briefly: the GPU tests of bool masks and of softmax's special rows at
    # 131072, the two A/Bs of subwave at their goal shapes, and run()'s host cost with a bool mask
    (cd .. && timeout 130 python3 -m pytest -q tests/test_gpu.py \
      -k "bool_masks or (special_rows and (8192 or 131072))") > "$OUT/confirm-pytest.txt" 2>&1 || true
    tail -3 "$OUT/confirm-pytest.txt"
    timeout 80 python3 bench_cluster.py run --out "$OUT/confirm-many-direct.json" --op softmax --variant default \
      --variant many_apart --shape 1024x128256 --shape 16x262144 || true
    timeout 60 python3 bench_cluster.py run --out "$OUT/confirm-subwave.json" --op rmsnorm --variant default \
      --variant one_wave_256 --shape 128x8192 || true
    timeout 30 python3 host_paths.py --gpu --function mamba2_apply_mask_to_padding_states \
      --out "$OUT/confirm-host.json" || true
    timeout 30 python3 host_paths.py --gpu --function mamba2_apply_mask_to_padding_states --uint8-masks \
      --out "$OUT/confirm-host-uint8-masks.json" ;;
  goals)  # the open H200 goals in one short call: softmax at its quack shapes; rmsnorm at its quack and
    # torch.compile shapes, beside the two candidates for Inductor's occupancy; then run()'s host cost on every path
    timeout 110 python3 bench_cluster.py run --out "$OUT/goals-softmax.json" --op softmax --variant default \
      --shape 1024x128256 --shape 4096x32000 --shape 8x131072 || true
    timeout 140 python3 bench_cluster.py run --out "$OUT/goals-rmsnorm.json" --op rmsnorm --variant default \
      --variant v16_cta512_4ctas --variant looped_512 --shape 32768x8192 --shape 128x8192 --shape 16384x5120 || true
    timeout 200 python3 host_paths.py --gpu --out "$OUT/goals-host.json" ;;  # 90 s was too few on a slow host
  occupancy)  # rows of one CTA at Inductor's occupancy (its rmsnorm at 32768x8192: 32 registers, 100%; ours 75,
    # 37.5%, and 0.94x torch.compile on the H200): the looped path (x read twice, the second time from L2; 512 or
    # 256 threads of one chunk an iteration, 40 registers), and 16 values in CTAs of 512 held to 3 CTAs an SM (40
    # registers) or 4 (with CONVERT_LATE: 32, no spill)
    timeout 400 python3 bench_cluster.py run --out "$OUT/cluster-occupancy.json" --op rmsnorm --op softmax \
      --op layer_norm --variant default --variant looped_512 --variant looped_256 --variant v16_cta512_3ctas \
      --variant v16_cta512_4ctas --shape 32768x8192 --shape 16384x5120 --shape 16384x7168 ;;
  convert)  # the weight (and bias) held as loaded across the reductions, converted after them: 60 registers for
    # rmsnorm at N = 8192, not 75, so 4 CTAs of 256 an SM. On the H200 it took 32768x8192 from 264.66 to 258.71 us
    # and tied at 16384x7168 (2026-12-06-h200-goals.md); this times it on the other shapes before it can be a default
    timeout 150 python3 bench_cluster.py run --out "$OUT/convert-rmsnorm.json" --op rmsnorm --variant default \
      --variant convert_late --shape 32768x8192 --shape 16384x5120 --shape 16384x7168 --shape 8192x14336 \
      --shape 4096x28672 --shape 128x8192 --shape 132x8192 --shape 64x4096 --shape 1024x32768 || true
    timeout 80 python3 bench_cluster.py run --out "$OUT/convert-user.json" --op layer_norm --op fused_add_rmsnorm \
      --variant default --variant convert_late --shape 32768x8192 --shape 4096x16384 --shape 128x8192 ;;
  online)  # the knobs' GPU test first (NaN, -inf and underflow rows, each exchange), then their A/B
    (cd .. && timeout 180 python3 -m pytest -q -x tests/test_gpu.py \
      -k "special_rows and (32000 or 131072 or log_softmax)") > "$OUT/online-pytest.txt" 2>&1 || true
    tail -3 "$OUT/online-pytest.txt"
    timeout 300 python3 bench_cluster.py run --out "$OUT/cluster-online.json" --op softmax \
      --op log_softmax_temperature --variant default --variant pairs_apart --variant many_apart \
      --shape 8x131072 --shape 16x262144 --shape 1x32768 --shape 4096x32000 \
      --shape 512x32000 --shape 1024x128256 --shape 256x128256 --shape 32768x8192 --shape 128x32000 ;;
  sweep)
    timeout 200 python3 bench_cluster.py run --out "$OUT/cluster-sweep-softmax.json" --op softmax --variant default \
      --variant pairs_apart || true
    timeout 150 python3 bench_cluster.py run --out "$OUT/cluster-sweep-rows.json" --op rmsnorm --op max --op sum \
      --variant default || true
    timeout 150 python3 bench_cluster.py run --out "$OUT/cluster-sweep-user.json" --op layer_norm \
      --op layer_norm_by_hand --op fused_add_rmsnorm --op log_softmax_temperature --variant default ;;
  host)  # every run path (beside the tree in $AGAINST, when set: host_paths.py --against), then Mamba2's mask
    # viewed as uint8 per call (BOOL_MASKS off, as before 2026-12-06)
    timeout 400 python3 host_paths.py --gpu ${AGAINST:+--against "$AGAINST"} --out "$OUT/cluster-host.json" || true
    timeout 60 python3 host_paths.py --gpu --function mamba2_apply_mask_to_padding_states --uint8-masks \
      --out "$OUT/cluster-host-uint8-masks.json" ;;
  rows)
    (cd .. && timeout 300 python3 -m pytest -q -x tests/test_gpu.py -k "per_row_input or leading_dims or rank_3") \
      > "$OUT/rows-pytest.txt" 2>&1 || true; tail -3 "$OUT/rows-pytest.txt"
    timeout 250 python3 leading_dims_ab.py --out "$OUT/rows-leading-ab.json" ;;
  tail)  # TAIL_PREDICATES and pointwise's SHIFT_FMA (benchmarks/2026-12-07-h200-tail.md), the goal short of quack first
    timeout 150 python3 bench_cluster.py run --out "$OUT/tail.json" --op softmax --variant default \
      --variant after_tail --any-shape --shape 1024x128256 || true
    timeout 200 python3 bench_cluster.py run --out "$OUT/tail2.json" --op softmax --variant default \
      --variant after_tail --variant ldcg --any-shape --shape 4096x32000 --shape 8x131072 --shape 1024x128256 || true
    timeout 80 python3 bench_cluster.py run --out "$OUT/fullsm-rmsnorm.json" --op rmsnorm --variant default \
      --any-shape --shape 32768x8192 --shape 256x8192 || true
    # rmsnorm where its last chunk is partial (4096x28672: 0.965x quack on the H200; 48 fewer instructions with it)
    timeout 100 python3 bench_cluster.py run --out "$OUT/tail-rmsnorm.json" --op rmsnorm --variant default \
      --variant tail --any-shape --shape 4096x28672 --shape 16384x5600 || true ;;
  close)  # the two goals still open, the one short of quack first; each step's JSON comes back as it finishes
    timeout 150 python3 bench_cluster.py run --out "$OUT/tail.json" --op softmax --variant default \
      --variant after_tail --any-shape --shape 1024x128256 || true
    timeout 80 python3 bench_cluster.py run --out "$OUT/fullsm-rmsnorm.json" --op rmsnorm --variant default \
      --any-shape --shape 32768x8192 --shape 256x8192 || true
    (cd .. && timeout 150 bash benchmarks/v0_builtins.sh "$OUT/v0" reduction:rmsnorm) > "$OUT/fullsm-v0.txt" 2>&1 ||
      true
    tail -n 12 "$OUT/fullsm-v0.txt"
    timeout 120 python3 bench_cluster.py run --out "$OUT/tail2.json" --op softmax --variant default \
      --variant after_tail --any-shape --shape 4096x32000 --shape 8x131072 || true ;;
  fullsm)  # kernel._full_sm_plan (512 threads of 2 chunks, 4 CTAs an SM, L2 evict_last) against quack and
    # torch.compile; the V0 flow of the built-in rmsnorm and of two corpus RMSNorms, whose large cases take it
    # (107 s on an H100); then quack's split of the long rows (v64_late: 64 values a thread, a cluster of 2 at N =
    # 32768) and its reload of x (RELOAD, after its GPU test) where the H200 ran 0.89-0.98x quack
    # (benchmarks/2026-12-07-h200-l2-policy.md)
    timeout 150 python3 bench_cluster.py run --out "$OUT/fullsm-rmsnorm.json" --op rmsnorm --variant default \
      --any-shape --shape 32768x8192 --shape 4096x8192 --shape 256x8192 || true
    (cd .. && timeout 150 bash benchmarks/v0_builtins.sh "$OUT/v0" reduction:rmsnorm) > "$OUT/fullsm-v0.txt" 2>&1 ||
      true
    for fn in llama_rmsnorm gemma_rmsnorm; do
      ws=$(mktemp -d)
      (cd .. && python3 -m cookiecutter "$(pwd)" --no-input -o "$ws" gpu=H200 op_name=ws run_baseline=no \
        pytorch_logic=tests/lowering_corpus/real_models.py:$fn > /dev/null 2>&1) &&
        (cd "$ws/ws" && timeout 140 python3 tools/run_baseline.py --no-torch-compile) >> "$OUT/fullsm-v0.txt" 2>&1
      echo "$fn: rc $?" >> "$OUT/fullsm-v0.txt"
    done
    tail -n 12 "$OUT/fullsm-v0.txt"
    (cd .. && timeout 150 python3 -m pytest -q -rA tests/test_gpu.py -k reload) > "$OUT/fullsm-reload-pytest.txt" 2>&1 ||
      true; tail -n 2 "$OUT/fullsm-reload-pytest.txt"
    timeout 150 python3 bench_cluster.py run --out "$OUT/fullsm-long.json" --op rmsnorm --variant default \
      --variant v64_late --variant reload64 --variant reload --shape 1024x32768 --shape 4096x28672 \
      --shape 8192x12288 || true ;;
esac
