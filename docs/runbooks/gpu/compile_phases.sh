#!/usr/bin/env bash
# Where a compiled case's first call goes, cold and then warm: compiled transformers cases of
# Llama-3-8B named by CASES, of the suite SUITE (default: fp8-kernel-tuning's fp8 batch 8 with torchao's
# process-wide kernel settings, whose first call took 170-504 s cold and 123 s warm against bf16's 12-54
# and 19; SUITE=headline for the headline's), each run twice into one kept compile cache
# (LLMBENCH_COMPILE_CACHE): the first run compiles into it, the second loads from it. Each case records
# compile_s, compile_phases_s (dynamo, aot_autograd, inductor, kernel_tuning, rest_of_call), the
# coordinate-descent steps it ran and the inductor settings its process had moved (code_path.compile);
# the summary prints them side by side. Runs as a background job (one device command is limited to
# 10 minutes), from the repository root on the GPU machine:
#   LLMBENCH_GIT_COMMIT=<hash> bash docs/runbooks/gpu/compile_phases.sh start
#   bash docs/runbooks/gpu/compile_phases.sh wait SECONDS    # then $OUT/work.tgz: sets, logs, summary
#   SUITE=headline CASES=generate/f713057bea7d,generate/a9040064628c bash docs/runbooks/gpu/compile_phases.sh start
# Time: about 7-12 minutes for the default case on an H100 or H200 (two passes). Not a published set:
# keep it out of results/<gpu-slug>/ (its cases would become their suites' newest runs there).
set -u
WORK=${WORK:-/root/lbc}
OUT=${OUT:-/tmp/llmbench-out}
cmd=${1:-start}
. "$(dirname "$0")/_job.sh"
if [ "$cmd" = start ]; then
  rm -rf "$WORK"; mkdir -p "$WORK"
  OUT=$WORK . "$(dirname "$0")/_setup.sh" || { echo "wheel install failed"; exit 1; }
  cat >"$WORK/job.sh" <<JOB
set -u
export PYTHONPATH=$PYTHONPATH PYTHONUNBUFFERED=1 LLMBENCH_COMPILE_CACHE=$WORK/compile-cache${LLMBENCH_GIT_COMMIT:+ LLMBENCH_GIT_COMMIT=$LLMBENCH_GIT_COMMIT}
cd $PWD
for pass in cold warm; do
  echo "== \$(date -u +%T) \$pass: ${CASES:-generate/700e5b959973}"
  python3 -m llmbench run ${SUITE:-fp8-kernel-tuning} --out $WORK/sets -y -k "id=${CASES:-generate/700e5b959973}" >$WORK/\$pass.log 2>&1 \
    || echo "   exit \$? (see \$pass.log)"
done
python3 $PWD/docs/runbooks/gpu/compile_phases_summary.py $WORK/sets
echo "== \$(date -u +%T) done"
touch $WORK/done
JOB
  start_job "$WORK"
  echo "started"
  exit 0
fi
if [ "$cmd" = wait ]; then
  LOG_TAIL=6 wait_job "$WORK" "$OUT" "${2:-540}"
fi
