# The reduction cell's LOADS experiment on the H200, in two device calls of under 10 minutes each (carry .carry):
#   bash benchmarks/loads_ab.sh softmax     # softmax at the quack shapes and the headline
#   bash benchmarks/loads_ab.sh others      # rmsnorm (quack, torch.compile) and F.layer_norm (torch.compile)
# It first applies benchmarks/experiments/load_paths.patch (the kernel's LOADS knob and bench_cluster.py's variants) to
# this copy of the tree. Each writes $OUT/loads-<part>.json; `python3 benchmarks/bench_cluster.py render FILE` makes
# the table on a CPU. above256_v64 is quack's geometry through registers, staged_v64 the same geometry staged in smem:
# the pair isolates the staging; l2_256 the load hint alone.
set -e
case "$1" in softmax|others) ;; *) echo "usage: bash benchmarks/loads_ab.sh softmax|others" >&2; exit 2 ;; esac
[ -n "${OUT:-}" ] || { echo "loads_ab.sh: run it on the device (\$OUT is its output folder): it patches this tree" >&2; exit 2; }
grep -q '^LOADS = ' "{{cookiecutter.op_name}}/patterns/reduction/cutedsl/kernel.py" ||
  patch -p1 --forward < benchmarks/experiments/load_paths.patch
source benchmarks/device_setup.sh
export PATH=$PATH:/tmp/site/bin
V="--variant default --variant l2_256 --variant staged --variant above256_v64 --variant staged_v64"
case "$1" in
  softmax) python3 benchmarks/bench_cluster.py run --out "$OUT/loads-softmax.json" --op softmax $V \
             --shape 4096x32000 --shape 1024x128256 --shape 8x131072 --shape 32768x8192 --shape 4096x16384 ;;
  others)  python3 benchmarks/bench_cluster.py run --out "$OUT/loads-others.json" --op rmsnorm --op layer_norm $V \
             --shape 128x8192 --shape 16384x5120 --shape 32768x8192 --shape 4096x16384 ;;
esac
