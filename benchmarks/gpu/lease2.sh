#!/usr/bin/env bash
# One call of the second lease of 2026-11-24 (after Transformer Engine is installed in /tmp/te-site by
# fetch-te.sh's te-install.sh): the fp8-training TE recipes again (issue 16: they had failed on a cuDNN
# clash, now imported through engines/te_import.py), the between-run spread of the cheap ceilings
# cases (issue 14: 3 fresh processes each, `run --repeat 3`), and subsets of host-bound and vision
# (issue 19; no power changes). Each step has its own time limit (what was left of the lease: about 7 min);
# everything lands in one tar ($OUT/lease2.tgz) and one log, since few files come back from a call.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/results" "$OUT/spread"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/te-site:/tmp/site:$PWD PYTHONUNBUFFERED=1 || exit
start=$(date +%s)
step() {  # step SECONDS llmbench-args...: one llmbench command, cut off after SECONDS (finished cases kept)
  local limit=$1; shift
  echo "== $(date -u +%T) (+$(( $(date +%s) - start )) s) llmbench $*" >>"$OUT/lease2.log"
  timeout -s TERM "$limit" python3 -m llmbench "$@" -y >>"$OUT/lease2.log" 2>&1
  echo "   exit $?" >>"$OUT/lease2.log"
  tar czf "$OUT/lease2.tgz" -C "$OUT" results spread  # after every step: a cut-off call keeps what finished
}
nvidia-smi --query-gpu=name,power.limit,temperature.gpu --format=csv >>"$OUT/lease2.log" 2>&1
step 140 run ceilings --out "$OUT/spread" --repeat 3 \
  -k id=gemm/fb0173adb9ac,gemm/bfd808afeea7,bandwidth/cf58bc2fe894,bandwidth/47fa88f5e794
step 70 run host-bound --out "$OUT/results" -k num_workers=0,4 -k batch=1,256,10240
step 130 run vision-precision --out "$OUT/results" -k channels_last=False -k compile=False \
  -k precision=fp32,amp-bf16,fp16
step 70 run fp8-training --out "$OUT/results" -k layers=4 -k recipe=te-delayed
python3 -m llmbench spread "$OUT"/spread/*/*.json --format markdown >>"$OUT/lease2.log" 2>&1
rm -rf "$OUT/results" "$OUT/spread"
echo "done in $(( $(date +%s) - start )) s" >>"$OUT/lease2.log"
tail -60 "$OUT/lease2.log"
