#!/usr/bin/env bash
# The H100 lease of 2026-11-24 (fourth): QLoRA on the Llama-3-70B shape at its largest batch (issue 16).
# The search (doubling, then bisection; each probe a fresh process that builds the 70B model in nf4
# layer by layer and runs 2 steps) and the measurement at the batch found take longer than one
# 10-minute call, so each call runs the suite for up to 560 s with --resume: probes that ended are
# written to /root/q/<gpu-slug>/.max_batch/ as they end and replayed by the next call, which probes
# only what no earlier call finished. Repeat `bash benchmarks/gpu/lease4.sh` until the log says the
# case ended. The set and log are copied to $OUT/q.tgz after every call. No power, clock or MIG changes.
#
# Then (same lease day) the QLoRA cases both GPUs share, so that the H100-vs-H200 tables join them:
# `bash benchmarks/gpu/lease4.sh SEED.json`, SEED being the GPU's committed qlora-llama3 set, copied to
# /root/q first (unless a call already did) so that --resume continues it: the 8B qlora cases with
# gradient checkpointing and AdamW (batch 1 and 4 x 512 and 1024 tokens), the 70B at batch 1 and at its
# largest batch, and the 8B's largest batch at 2048 tokens; whatever the seed set holds is not run again.
# Run so on the H100 (3 calls) and the H200 (4 calls on two machines: the first machine's search, at the
# commit before the measurement-oom fix, ended in oom at 65; after the fix a second machine searched
# afresh, since a record is reused only at the same llmbench commit, and its next call replayed that
# machine's own record; /root/q was also carried as an ignored folder, to be unpacked were the machine
# fresh). The H200's 8B largest-batch case was cut at its probe 16 when the session's device time ran out.
set -u
seed=${1:-}
OUT=${OUT:-/tmp/out}
R=/root/q
mkdir -p "$R" "$OUT"
if [ ! -d /tmp/site/pydantic ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
select=(-k model=llama-3-70b -k max_batch=True)
if [ -n "$seed" ]; then
  slug=$(basename "$(dirname "$seed")")
  mkdir -p "$R/$slug"
  [ -n "$(ls "$R/$slug"/qlora-llama3-*.json 2>/dev/null)" ] || cp "$seed" "$R/$slug/"
  select=(-k method=qlora -k gradient_checkpointing=True -k optimizer=adamw)
fi
echo "== $(date -u +%T) call (llmbench commit ${LLMBENCH_GIT_COMMIT:-unset})" >>"$R/qlora70b.log"
nvidia-smi --query-gpu=name,power.limit,temperature.gpu,memory.used --format=csv,noheader >>"$R/qlora70b.log" 2>&1
timeout -s TERM 560 python3 -m llmbench run qlora-llama3 --out "$R" --resume "${select[@]}" -y \
  >>"$R/qlora70b.log" 2>&1
echo "   exit $?" >>"$R/qlora70b.log"
tar czf "$OUT/q.tgz" -C "$R" .
tail -12 "$R/qlora70b.log"
ls -la "$R"/*/ "$R"/*/.max_batch/*/ 2>/dev/null
