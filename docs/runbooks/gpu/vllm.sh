#!/usr/bin/env bash
# vLLM's offline engine through the generate scenario: Llama-3-8B-shaped (random weights,
# load_format="dummy"), compiled (torch.compile + CUDA graphs), bf16 and fp8. The input-128 cases of
# vllm-llama3-8b first (batch 1/8/32, both precisions), then input 2048 at batch 1; what does not fit its
# --budget is left for the next run of this script (--resume continues the result set).
#   bash docs/runbooks/gpu/vllm.sh      (needs vLLM installed; result sets in $OUT/results)
# Time: about 8 minutes. Each case is a new process and a new vLLM start: the first of each precision
# ~2.5 min (compile and CUDA graphs), later ones ~45-60 s (vLLM's compile cache in VLLM_CACHE_ROOT).
set -u
. "$(dirname "$0")/_setup.sh"
export VLLM_NO_USAGE_STATS=1 VLLM_CACHE_ROOT=${VLLM_CACHE_ROOT:-/tmp/vllm-cache}  # local disk, shared by the cases
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
