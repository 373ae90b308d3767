#!/usr/bin/env bash
# One call of the H100 lease of 2026-11-24 (third), after Transformer Engine is installed in /tmp/te-site
# by fetch-te.sh's te-install.sh. `bash benchmarks/gpu/lease3.sh 1` then `... 2` (then `... 3` if the
# lease has time): each part fits one 10-minute call. Result sets live in /root/lease3 (kept on the warm
# machine between calls, so each suite stays one set, continued with --resume) and are copied to
# $OUT/lease3.tgz after every step, with one log. No power, clock or MIG changes.
#   part 1: fp8-training at 4 layers, all five recipes (issue 16: the TE recipes again, now imported
#           against torch's cuDNN by hardware/cudnn.py); host-bound batch 1..10240 x workers 0 and 4
#           (issue 19: GPU-busy fraction from profiler kernel time). ~6 min with TE's build before it.
#   part 2: QLoRA on the 70B shape at its largest batch (issue 16: doubling then bisection, each probe
#           a fresh process that builds the 70B nf4 model, ~30-60 s a probe). Up to ~9 min.
#   part 3: vision tf32 and amp-fp16, vision with torch.compile (amp-bf16, fp16; ~1 min of compile
#           each), fp8-training on the whole 8B shape (32 layers, torchao; oom is a result). ~9 min.
set -u
part=${1:?part 1, 2 or 3}
OUT=${OUT:-/tmp/out}
R=/root/lease3
mkdir -p "$R" "$OUT"
if [ ! -d /tmp/site/pydantic ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit
fi
export PYTHONPATH=/tmp/te-site:/tmp/site:$PWD PYTHONUNBUFFERED=1
start=$(date +%s)
step() {  # step SECONDS llmbench-args...: one llmbench command, cut off after SECONDS (finished cases kept)
  local limit=$1; shift
  echo "== $(date -u +%T) part $part (+$(( $(date +%s) - start )) s) llmbench $*" >>"$R/lease3.log"
  timeout -s TERM "$limit" python3 -m llmbench "$@" -y >>"$R/lease3.log" 2>&1
  echo "   exit $?" >>"$R/lease3.log"
  tar czf "$OUT/lease3.tgz" -C "$R" .  # after every step: a cut-off call keeps what finished
}
case $part in
1)  # after te-install.sh (~2.5 min) in the same call
  nvidia-smi --query-gpu=name,power.limit,temperature.gpu --format=csv >>"$R/lease3.log" 2>&1
  step 100 run fp8-training --out "$R" --resume -k layers=4
  step 250 run host-bound --out "$R" --resume -k num_workers=0,4
  ;;
2)
  step 560 run qlora-llama3 --out "$R" --resume -k model=llama-3-70b -k max_batch=True
  ;;
3)
  step 100 run vision-precision --out "$R" --resume -k channels_last=False -k compile=False \
    -k precision=tf32,amp-fp16
  step 250 run vision-precision --out "$R" --resume -k precision=amp-bf16,fp16 -k channels_last=False \
    -k compile=True
  step 180 run fp8-training --out "$R" --resume -k layers=32
  ;;
esac
echo "part $part done in $(( $(date +%s) - start )) s" >>"$R/lease3.log"
tar czf "$OUT/lease3.tgz" -C "$R" .
tail -40 "$R/lease3.log"
