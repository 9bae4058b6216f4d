# The CuTe DSL reduction cell's open A/B on the H200 (issue 29's quack, torch.compile and host goals), in three
# device calls of under 10 minutes each (carry .carry):
#   bash benchmarks/cluster_ab.sh softmax    # softmax (quack, torch.compile) under every variant below
#   bash benchmarks/cluster_ab.sh tests      # the reduction cell's GPU tests with the knobs on (tree copies)
#   bash benchmarks/cluster_ab.sh others     # rmsnorm (quack, torch.compile), LayerNorm and log_softmax (compile)
#   bash benchmarks/cluster_ab.sh host       # run()'s host cost per call on every lowered run path (host_paths.py)
# Each writes $OUT/cluster-<part>.json; `python3 benchmarks/bench_cluster.py render FILE` makes the table on a CPU.
# The variants (bench_cluster.py VARIANTS) are the kernel's knobs, all off by default:
#   cluster_warps     each warp sends its partial to every CTA of the cluster, no CTA step (quack's exchange)
#   cluster_warps_40  ... with ptxas held to 5 CTAs of 256 per SM (48 registers where it chose 59)
#   v64_24warps       quack's geometry (64 values a thread) held to 3 CTAs of 256 (80 registers, quack's count)
#   late_always       rmsnorm's weight loaded after the reduction, freeing its 32 registers
#   32warps           ptxas held to 4 CTAs of 256 (rmsnorm at N = 8192: 64 registers where it chose 75)
#   cluster_loads3    three loads (F.layer_norm) may split a row across a cluster, now that two of them load late
#   stage             the early loads go to shared memory by cp.async, then to registers (quack's staging)
#   tile              a cluster row's CTA r owns one contiguous tile of the row, not every 16th run of TPR vectors
#   stage_tile(_v64)  both (and 64 values a thread: quack's 8 CTAs of 256 at N = 128256)
set -e
case "$1" in
  softmax|tests|others|host) ;;
  *) echo "usage: bash benchmarks/cluster_ab.sh softmax|tests|others|host" >&2; exit 2 ;;
esac
[ -n "${OUT:-}" ] || { echo "cluster_ab.sh: run it on the device (\$OUT is its output folder)" >&2; exit 2; }
source benchmarks/device_setup.sh
export PATH=$PATH:/tmp/site/bin
K="{{cookiecutter.op_name}}/patterns/reduction/cutedsl/kernel.py"
cd benchmarks
case "$1" in
  tests)
    # correctness of the knobs' paths: copies of the tree whose defaults are CLUSTER_WARPS, then STAGE_SMEM and
    # CTA_TILE together (this tree stays as it is)
    for knobs in CLUSTER_WARPS "STAGE_SMEM CTA_TILE"; do
      T=$(mktemp -d) && mkdir "$T/tree"
      (cd .. && tar --exclude=./.carry --exclude=./.venv -cf - .) | tar -xf - -C "$T/tree"
      for knob in $knobs; do
        sed -i "s/^$knob = False/$knob = True/" "$T/tree/$K" && grep -q "^$knob = True" "$T/tree/$K"
      done
      (cd "$T/tree" && python3 -m pytest -q -x tests/test_gpu.py -k "special_rows or cluster_max or cluster_row or reduction or late_loads") |
        tee "$OUT/gpu-tests-${knobs// /-}.txt" | tail -3
    done ;;
  softmax)
    python3 bench_cluster.py run --out "$OUT/cluster-softmax.json" --op softmax --variant default \
      --variant cluster_warps --variant stage --variant tile --variant stage_tile --variant stage_tile_v64 \
      --shape 4096x32000 --shape 1024x128256 --shape 8x131072 --shape 16x262144 --shape 32768x8192 ;;
  others)
    python3 bench_cluster.py run --out "$OUT/cluster-others.json" --op rmsnorm --op layer_norm --op layer_norm_by_hand \
      --op log_softmax_temperature --variant default --variant late_always --variant 32warps \
      --variant cluster_loads3 --variant stage --variant stage_tile \
      --shape 128x8192 --shape 16384x5120 --shape 32768x8192 --shape 4096x16384 --shape 4096x32000 ;;
  host)
    python3 host_paths.py --gpu --out "$OUT/cluster-host.json" ;;
esac
