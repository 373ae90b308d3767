#!/usr/bin/env bash
# The seeds' other workloads on one H200 (issue 19): the ViT-B/16 precision study (vision) and the
# host-bound batch sweep (host_bound); `llmbench doctor` for the read-only MIG listing. NO power-limit
# changes: the power-sweep suite is not run here (the machines are shared; it was tested on a
# simulated NVML device).
#
# Needs first (see /work/shared/gpu/README.md): pydantic and its pinned pydantic-core as wheels in
# .whl/ (../shared/gpu/fetch-wheels.sh pydantic==X pydantic-core==Y). timm and nvidia-ml-py are on the
# machine; torch-tensorrt is not, so the trt-fp16 case is `skipped` with its install command.
# Run from the repo root:  bash benchmarks/gpu/seeds.sh   (writes $OUT/results and $OUT/*.log)
#
# Expected time: about 7 minutes (each case is a fresh process: ~8-10 s of imports and the build,
# then 3 warm-up + at least 10 timed steps and 1 s):
#   vision, ViT-B/16 (~34 GFLOP forward per 224px image, ~3x that to train), channels_last off,
#   compile off, 11 cases: training batch 160 is ~16 TFLOP a step: fp32 on CUDA cores (~67 TFLOP/s
#   peak) ~0.35 s, tf32 ~0.1 s, fp16/bf16 ~0.05 s; inference batch 2048 is ~69 TFLOP a batch: fp32
#   ~1.5 s (13 batches ~20 s), tf32 ~0.4 s, half precisions ~0.2 s. About 3 min in all.
#   vision with torch.compile (amp-bf16, training and inference): ~1 min of compile each, 2 min;
#   run only if the script so far took under 5 minutes.
#   host_bound, 10 cases (batch 1, 16, 256, 1024, 10240 x DataLoader workers 0 and 4; a 256-4096x4-10
#   fp32 MLP, ~0.3 GFLOP a sample to train: ~6 ms of GPU math at batch 1024 against the DataLoader's
#   per-sample indexing and collation; the host is the bottleneck until large
#   batches): ~8 s a case, under 2 min.
#   llmbench doctor: ~20 s.
set -u
OUT=${OUT:-/tmp/llmbench-out}
mkdir -p "$OUT/results"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 || exit
start=$(date +%s)
run() {  # run SUITE [filters...]: one llmbench run, logged; a failure does not stop the script
  local suite=$1; shift
  echo "== $(date -u +%T) $suite $*" | tee -a "$OUT/seeds.log"
  python3 -m llmbench run "$suite" --out "$OUT/results" --resume "$@" -y >>"$OUT/$suite.log" 2>&1 \
    || echo "   exit $? (see $suite.log)" | tee -a "$OUT/seeds.log"
}
nvidia-smi --query-gpu=name,power.limit,mig.mode.current --format=csv >"$OUT/gpu.txt" 2>&1
python3 -m llmbench doctor >"$OUT/doctor.txt" 2>&1
run vision-precision -k channels_last=False -k compile=False
run host-bound -k num_workers=0,4 -k batch=1,16,256,1024,10240
if [ $(( $(date +%s) - start )) -lt 300 ]; then
  run vision-precision -k precision=amp-bf16 -k channels_last=False -k compile=True
fi
nvidia-smi --query-gpu=name,power.limit --format=csv >>"$OUT/gpu.txt" 2>&1  # unchanged: nothing set it
echo "done in $(( $(date +%s) - start )) s" | tee -a "$OUT/seeds.log"
