# The V0-flow check on the H200, in one device call of under 10 minutes (carry .carry):
#   REQUIRE=H200 bash benchmarks/v0_confirm.sh
# every built-in elementwise and reduction op (v0_builtins.sh: the template's CLI, then test_kernel.py --no-timing)
# beside every function marked for the H200 (tests/lowering_corpus/annotated.py) baked by bench_lowered.py and run
# through its whole V0 flow (tools/run_baseline.py: rel_err gate, report, memory/v0.json, the V0 commit). The two
# share the GPU: what counts here is PASS, and no timing from this call is a comparison. Writes $OUT/v0/ (one JSON
# per built-in op), $OUT/v0-builtins.txt and $OUT/v0-annotated.json (bench_lowered.py's v0 rows).
set -u
[ -n "${OUT:-}" ] || { echo "v0_confirm.sh: run it on the device (\$OUT is its output folder)" >&2; exit 2; }
source benchmarks/device_setup.sh  # stops here on a card other than $REQUIRE, if set
export PATH=$PATH:/tmp/site/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
C="--corpus tests/lowering_corpus/annotated.py"
(timeout 420 bash benchmarks/v0_builtins.sh "$OUT/v0" > "$OUT/v0-builtins.txt" 2>&1) &
(timeout 420 python3 benchmarks/bench_lowered.py $C --out /tmp/ann --jobs 12 bake > /dev/null 2>&1 &&
 timeout 400 python3 benchmarks/bench_lowered.py $C --out /tmp/ann --jobs 8 v0 > "$OUT/v0-annotated.txt" 2>&1;
 cp /tmp/ann/v0.json "$OUT/v0-annotated.json" 2>/dev/null) &
wait
cat "$OUT/v0-builtins.txt"
tail -30 "$OUT/v0-annotated.txt"
