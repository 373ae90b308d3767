#!/usr/bin/env bash
# Training on one GPU: QLoRA on Llama-3-8B and the Llama-3-70B shape, the transformers Trainer on
# gpt2-medium (and t5-large if time allows), fp8 training of a few Llama-3-8B-shaped layers against bf16,
# and DDP/FSDP scaling on a machine with 2 or more GPUs. Transformer Engine's fp8 cases are skipped with
# the install command where it is missing.
#   bash docs/runbooks/gpu/training.sh      (result sets in $OUT/results, a log per suite)
# Time: about 8.5 minutes on one GPU: QLoRA 8B ~2 min (4 cases), the 70B shape ~1.5 min (built in nf4
# layer by layer), the Trainer ~2 min, fp8 training ~2.5 min; t5-large only if the rest took under 7
# minutes; ddp-scaling about 3 minutes more where 2 GPUs are present. The 70B max_batch search is not run
# here (each probe rebuilds the model: run `llmbench run qlora-llama3 -k max_batch=True --resume`).
set -u
. "$(dirname "$0")/_setup.sh"
mkdir -p "$OUT/results"
start=$(date +%s)
run() {  # run SUITE [filters...]: one llmbench run, logged; a failure does not stop the script
  local suite=$1; shift
  echo "== $(date -u +%T) $suite $*" | tee -a "$OUT/training.log"
  python3 -m llmbench run "$suite" --out "$OUT/results" --resume "$@" -y >>"$OUT/$suite.log" 2>&1 \
    || echo "   exit $? (see $suite.log)" | tee -a "$OUT/training.log"
}
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv >"$OUT/gpu.txt" 2>&1
run qlora-llama3 -k model=llama-3-8b -k method=qlora -k gradient_checkpointing=True -k optimizer=adamw
run qlora-llama3 -k model=llama-3-70b -k max_batch=False
run trainer-variations -k model=gpt2-medium
run fp8-training -k layers=4
if [ $(( $(date +%s) - start )) -lt 420 ]; then
  run trainer-variations -k model=t5-large -k tf32=True
fi
if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
  run ddp-scaling -k gpus=2
fi
echo "done in $(( $(date +%s) - start )) s" | tee -a "$OUT/training.log"
