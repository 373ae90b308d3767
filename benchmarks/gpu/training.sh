#!/usr/bin/env bash
# Training scenarios on one H200 (issue 16): QLoRA on Llama-3-8B and the 70B shape, the transformers
# Trainer on gpt2-medium, fp8 training of a few Llama-3-8B-shaped layers against bf16.
#
# Needs first (see /work/shared/gpu/README.md):
#   - wheels in .whl/ (sent along): bitsandbytes==0.50.2, torchao==0.18.0, pydantic and its pinned
#     pydantic-core (../shared/gpu/fetch-wheels.sh, then fetch-wheels.sh pydantic==X pydantic-core==Y);
#   - Transformer Engine in /tmp/te-site if the te-* fp8 cases should run (fetch-te.sh); without it
#     they are `skipped` with the install command, and everything else runs.
# Run from the repo root:  bash benchmarks/gpu/training.sh   (writes $OUT/results and $OUT/*.log)
#
# Expected time: about 8.5 minutes, from these estimates (each case is a fresh process: ~10 s of
# imports, plus its build, plus 3 warm-up + 10 timed steps):
#   QLoRA 8B, 4 cases (batch 1 and 4 x seq 512 and 1024, checkpointing, AdamW): nf4 build of 8B
#     params ~10 s; a step at 4 x 1024 is 4*8e9*4096 + recompute ~ 1.6e14 FLOPs, ~0.5 s at ~40% of
#     790 TFLOP/s (nf4 dequantisation on top): ~30 s a case, 2 min.
#   QLoRA 70B shape, batch 1 x 512, 1 case: nf4 build of 70B params layer by layer ~60 s; a step
#     ~1.4e14 + 0.7e14 recompute FLOPs ~ 1 s: ~1.5 min. The max_batch case is NOT run here: each
#     probe rebuilds the 70B model (~1 min), and doubling + bisection to ~batch 16 takes 6-8 probes.
#   trainer gpt2-medium, 6 cases (fp32/fp16/bf16 x tf32 off/on, 8 x 512): ~2e13 FLOPs a step,
#     0.05-0.4 s: ~20 s a case, 2 min.
#   fp8-training, 4 layers of the 8B shape, 2 x 2048, 5 cases (bf16; torchao tensorwise, rowwise;
#     TE delayed, current): each case trains bf16 and then the recipe, 13 steps each, ~30 s: 2.5 min.
#   t5-large runs only if the whole script so far took under 7 minutes (about 1.5 min more).
#   ddp-scaling (DDP and FSDP2 on 2 GPUs against 1) runs only on a machine with 2+ GPUs
#   (nvidia-h200-x2: about 3 min for its 2 two-GPU cases); on one GPU it is not started.
set -u
OUT=${OUT:-/tmp/llmbench-out}
mkdir -p "$OUT/results"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 || exit
[ -d /tmp/te-site ] && export PYTHONPATH=/tmp/te-site:$PYTHONPATH
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
