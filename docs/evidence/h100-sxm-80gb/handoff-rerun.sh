#!/usr/bin/env bash
# Issue 40: the headline's transformers and vLLM (generate) cases re-run after the engine hand-off,
# as one background job (vLLM installed in /tmp/vsite first). start | wait SECONDS
set -u
WORK=/root/g40; OUT=${OUT:-/tmp/llmbench-out}
. benchmarks/gpu/_job.sh
if [ "${1:-start}" = start ]; then
  rm -rf /tmp/site; mkdir -p $WORK; rm -f $WORK/done
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
  cat > $WORK/job.sh <<JOB
set -u
export PYTHONPATH=/tmp/vsite:/tmp/site:$PWD PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 LLMBENCH_GIT_COMMIT=$(cat .scratch/commit)
cd $PWD
t0=\$(date +%s)
nvidia-smi --query-gpu=name,memory.used,utilization.gpu,clocks.sm --format=csv,noheader
python3 -c "import vllm; print('vllm', vllm.__version__)"
python3 -m llmbench run headline -k scenario=generate --out $WORK/r > $WORK/run.log 2>&1
echo "run wall: \$(( \$(date +%s) - t0 )) s" >> $WORK/run.log
python3 benchmarks/plain_reference.py --help > /dev/null 2>&1
touch $WORK/done
JOB
  start_job $WORK
  sleep 5; cat $WORK/job.log
else
  LOG_TAIL=12 wait_job $WORK $OUT "${2:-560}"
fi
