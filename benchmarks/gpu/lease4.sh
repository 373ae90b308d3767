#!/usr/bin/env bash
# The H100 lease of 2026-11-24 (fourth): QLoRA on the Llama-3-70B shape at its largest batch (issue 16).
# The search (doubling, then bisection; each probe a fresh process that builds the 70B model in nf4
# layer by layer and runs 2 steps) and the measurement at the batch found take longer than one
# 10-minute call, so each call runs the suite for up to 560 s with --resume: probes that ended are
# written to /root/q/<gpu-slug>/.max_batch/ as they end and replayed by the next call, which probes
# only what no earlier call finished. Repeat `bash benchmarks/gpu/lease4.sh` until the log says the
# case ended. The set and log are copied to $OUT/q.tgz after every call. No power, clock or MIG changes.
set -u
OUT=${OUT:-/tmp/out}
R=/root/q
mkdir -p "$R" "$OUT"
if [ ! -d /tmp/site/pydantic ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
echo "== $(date -u +%T) call (llmbench commit ${LLMBENCH_GIT_COMMIT:-unset})" >>"$R/qlora70b.log"
nvidia-smi --query-gpu=name,power.limit,temperature.gpu,memory.used --format=csv,noheader >>"$R/qlora70b.log" 2>&1
timeout -s TERM 560 python3 -m llmbench run qlora-llama3 --out "$R" --resume -k model=llama-3-70b \
  -k max_batch=True -y >>"$R/qlora70b.log" 2>&1
echo "   exit $?" >>"$R/qlora70b.log"
tar czf "$OUT/q.tgz" -C "$R" .
tail -30 "$R/qlora70b.log"
ls -la "$R"/*/ "$R"/*/.max_batch/*/ 2>/dev/null
