#!/usr/bin/env bash
# Vision and host-bound training on one GPU: the ViT-B/16 precision study (vision-precision: fp32, tf32,
# amp fp16/bf16, pure fp16, TensorRT fp16 where torch-tensorrt is installed), the host-bound batch sweep
# (host-bound, batch 1 to 10240 with 0 and 4 DataLoader workers), and `llmbench doctor` for the read-only
# MIG listing. No power-limit changes (the power-sweep suite is not run here).
#   bash docs/runbooks/gpu/vision-hostbound.sh      (result sets in $OUT/results, a log per suite)
# Time: about 7 minutes (each case is a fresh process: ~10 s of imports and build, then its steps);
# the torch.compile pair (about 1 minute of compile each) runs only if the rest took under 5 minutes.
set -u
. "$(dirname "$0")/_setup.sh"
mkdir -p "$OUT/results"
start=$(date +%s)
run() {  # run SUITE [filters...]: one llmbench run, logged; a failure does not stop the script
  local suite=$1; shift
  echo "== $(date -u +%T) $suite $*" | tee -a "$OUT/vision-hostbound.log"
  python3 -m llmbench run "$suite" --out "$OUT/results" --resume "$@" -y >>"$OUT/$suite.log" 2>&1 \
    || echo "   exit $? (see $suite.log)" | tee -a "$OUT/vision-hostbound.log"
}
nvidia-smi --query-gpu=name,power.limit,mig.mode.current --format=csv >"$OUT/gpu.txt" 2>&1
python3 -m llmbench doctor >"$OUT/doctor.txt" 2>&1
run vision-precision -k channels_last=False -k compile=False
run host-bound -k num_workers=0,4 -k batch=1,16,256,1024,10240
if [ $(( $(date +%s) - start )) -lt 300 ]; then
  run vision-precision -k precision=amp-bf16 -k channels_last=False -k compile=True
fi
nvidia-smi --query-gpu=name,power.limit --format=csv >>"$OUT/gpu.txt" 2>&1  # unchanged: nothing set it
echo "done in $(( $(date +%s) - start )) s" | tee -a "$OUT/vision-hostbound.log"
