#!/usr/bin/env bash
# Capacity under an SLO on one H200 (slo_capacity.py): vLLM's OpenAI server, Llama-3-8B shape with
# random weights, bf16 then fp8; `serve-bench --search concurrency` under the MLPerf Llama-3.1-8B server
# and interactive presets (capacity with its interval), `vllm bench serve` beside `serve-bench` at one
# concurrency on the same server, then SGLang's server where sglang imports (else the reason, logged);
# last, benchmarks/serving_client_ceiling.py: llmbench's client in 1, 2 and 4 processes and `vllm bench
# serve` against the same fake server (the clients' own ceilings, side by side).
# Longer than one 10-minute command (two engine starts of ~2.5 min and four searches): a background job.
#   bash docs/runbooks/gpu/slo_capacity.sh start          # needs vLLM in /tmp/vsite (fetch-vllm.sh)
#   bash docs/runbooks/gpu/slo_capacity.sh wait SECONDS   # follow it; packs $WORK into $OUT/work.tgz
# PRECISIONS=bf16 runs one precision only (about 9 minutes).
# Time: about 24 minutes on an H200 (fp8 9.3, SGLang 4.5): keep a `wait` running, a machine idle for 30 s is handed back.
set -u
WORK=${WORK:-/root/lbslo}
OUT=${OUT:-/tmp/llmbench-out}
cmd=${1:-start}
. "$(dirname "$0")/_job.sh"
if [ "$cmd" = start ]; then
  mkdir -p "$WORK"
  rm -f "$WORK/done"
  PYTHONPATH=/tmp/vsite python3 -c "import vllm" 2>/dev/null \
    || { echo "vLLM does not import from /tmp/vsite: install it first (the last piece's vllm-install.sh)"; exit 1; }
  cat > "$WORK/job.sh" <<JOB
cd "$PWD"
export PYTHONPATH=/tmp/vsite:$PWD PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 VLLM_CACHE_ROOT=/tmp/vllm-cache HF_HUB_OFFLINE=1
nvidia-smi --query-gpu=name,memory.used --format=csv
python3 docs/runbooks/gpu/slo_capacity.py "$WORK" ${PRECISIONS:-bf16 fp8}
echo "exit \$?"
# SGLang's server where its wheels are in /tmp/sg-site (sglang.sh): its pins first, then vLLM's set without
# vllm itself (a view of links: SGLang imports vllm where it finds it)
if [ -d /tmp/sg-site/sglang ]; then
  view=/tmp/sg-vsite; rm -rf "\$view"; mkdir -p "\$view"
  for e in /tmp/vsite/*; do case \${e##*/} in vllm|vllm-*.dist-info) ;; *) ln -s "\$e" "\$view/" ;; esac; done
  PYTHONPATH=/tmp/sg-site:\$view:$PWD python3 docs/runbooks/gpu/slo_capacity.py "$WORK" sglang
  echo "sglang exit \$?"
fi
# the client's own ceiling against the fake server, 1, 2 and 4 processes, and vllm bench serve beside it
PYTHONPATH=$PWD/benchmarks:/tmp/vsite:$PWD python3 benchmarks/serving_client_ceiling.py --procs 1,2,4 --vllm \
  --output-lens 1,128 --out "$WORK/client-ceiling.json" > "$WORK/client-ceiling.log" 2>&1
echo "ceiling exit \$?"
touch "$WORK/done"
JOB
  start_job "$WORK"
  echo "started: $WORK/job.log"
else
  wait_job "$WORK" "$OUT" "${2:-540}"
fi
