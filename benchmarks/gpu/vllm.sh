#!/usr/bin/env bash
# vLLM on the H200: the generate scenario on vLLM's offline engine, Llama-3-8B-shaped (random weights,
# load_format="dummy"), compiled (torch.compile + CUDA graphs), bf16 and fp8 (quantization="fp8").
# Subset of scenarios/vllm-llama3-8b.toml: input 128 at batch 1/8/32 for both precisions, then input
# 2048 at batch 1; the other cases run later with the same command (they --resume the result set).
#
# Needs first (the lead): vLLM 0.26.0 from /work/shared/gpu/fetch-vllm.sh, installed to /tmp/vsite,
# and pydantic importable (the same wheel set carries it); i.e. run this AFTER
#   bash .vlN/vllm-install.sh && export PYTHONPATH=/tmp/vsite:$PYTHONPATH
# Expected time: about 8 minutes (estimate, not measured). Each case is a new process and a new vLLM
# start; the measurement itself is seconds (a batch-32 decode step reads 16 GB of bf16 weights: ~4 ms
# at 4.3 TB/s, so a 128-token generate() is ~0.5 s, and a case times 3 or more of them for >= 2 s).
#   first case of each precision: ~2.5 min (vLLM's first start of an 8B model: torch.compile and
#     CUDA graphs, as seen on this machine); llmbench captures 7 CUDA graphs (sizes up to 32) instead
#     of vLLM's default 67, so somewhat less;
#   later cases of the same precision: ~45-60 s (process and vLLM imports ~20 s, dummy weights ~5 s,
#     compile loaded from VLLM_CACHE_ROOT: batch slots, max_model_len and graph sizes are rounded up
#     to buckets, so the cases of one precision share one compile-cache entry; graphs and KV profile
#     ~10 s);
#   so 2 x ~150 s + 6 x ~50 s = ~10 min for all 8; --budget stops starting cases at ~7.5 min and the
#   rest stay for a later run of this script (--resume).
set -u
export PYTHONPATH=${PYTHONPATH:-}:$PWD PYTHONUNBUFFERED=1
export VLLM_NO_USAGE_STATS=1 VLLM_CACHE_ROOT=${VLLM_CACHE_ROOT:-/tmp/vllm-cache}  # local disk, shared by the cases
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/results" "$VLLM_CACHE_ROOT"
python3 -c "import vllm, pydantic; print('vllm', vllm.__version__, '- pydantic ok')" 2>&1 | tee "$OUT/vllm-imports.log"
start=$SECONDS
# --resume: a result set of this suite already in $OUT/results is continued (none: a new one starts)
python3 -m llmbench run vllm-llama3-8b --out "$OUT/results" --resume --budget 360 \
  -k input_len=128 2>&1 | tee "$OUT/vllm-128.log"
left=$((450 - (SECONDS - start)))
if [ "$left" -ge 60 ]; then
  python3 -m llmbench run vllm-llama3-8b --out "$OUT/results" --resume --budget "$left" \
    -k input_len=2048 -k batch_size=1 2>&1 | tee "$OUT/vllm-2048.log"
else
  echo "no time left for the input_len=2048 cases: run this script again (--resume)" | tee "$OUT/vllm-2048.log"
fi
du -sh "$VLLM_CACHE_ROOT" 2>/dev/null | tee -a "$OUT/vllm-128.log"
