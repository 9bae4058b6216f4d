# The ten newest real-model functions (tests/lowering_corpus/annotated.py: one value per row, broadcast per-row
# values, sin, adaLN, Gemma's normalizer) on the H200, in one device call of under 10 minutes (carry .carry):
#   bash benchmarks/annotated_v0_perf.sh
# baked through the template (pytorch_logic, pattern auto), then each workspace's V0 flow (tools/run_baseline.py:
# every case's rel_err gate, the report, memory/v0.json and the V0 commit), then the timed comparison against
# torch.compile and eager on the headline shape (bench_lowered.py perf: one workspace at a time). The JSON goes to
# $OUT after each step, so a call stopped by its limit still returns what finished.
set -e
[ -n "${OUT:-}" ] || { echo "annotated_v0_perf.sh: run it on the device (\$OUT is its output folder)" >&2; exit 2; }
source benchmarks/device_setup.sh
export PATH=$PATH:/tmp/site/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
C="--corpus tests/lowering_corpus/annotated.py"
N="mamba2_apply_mask_to_padding_states esm_embeddings_norm_mask qwen2_moe_shared_expert_combine ddpm_add_noise
   dac_snake1d colpali_retrieval_embeddings timm_layer_scale_2d sd35_ada_layer_norm_zero_x
   diffusers_ada_layer_norm_continuous gemma_embed_normalizer"
python3 benchmarks/bench_lowered.py $C --out /tmp/ann --jobs 10 bake $N 2>&1 | tail -3
python3 benchmarks/bench_lowered.py $C --out /tmp/ann --jobs 5 v0 $N 2>&1 | tail -14
cp /tmp/ann/*.json "$OUT/" 2>/dev/null || true
python3 benchmarks/bench_lowered.py $C --out /tmp/ann perf $N 2>&1 | grep -v Warn | tail -30
cp /tmp/ann/*.json "$OUT/" 2>/dev/null || true
