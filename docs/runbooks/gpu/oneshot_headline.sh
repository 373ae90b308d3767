#!/usr/bin/env bash
# `llmbench oneshot` of the headline suite as a fresh rented machine runs it, vLLM included, as one
# background job that outlives a single device command (each is limited to 10 minutes):
#   1. `oneshot --dry-run`: the quote, kept beside the run (dryrun.txt);
#   2. `oneshot --budget $BUDGET` (default 15m): doctor, the headline suite (its vLLM cases on one
#      started engine per precision: share_engines), the bundle; what does not fit is left for step 3;
#   3. with RESUME=1: `oneshot --resume <that bundle>`, the cases the budget left, in a second part;
#      RESUME_FROM=<bundle> does only this, on another machine (the bundle carried in the checkout).
# Needs .whl/ (../shared/gpu/fetch-wheels.sh: torchao, bitsandbytes, pydantic and its pins) and vLLM
# installed in /tmp/vsite (../shared/gpu/fetch-vllm.sh: its pieces, then .vlN/vllm-install.sh); `start`
# refuses to begin where vLLM does not import (NO_VLLM=1 runs the headline without its vLLM cases).
# From the repo root on the GPU machine:
#   LLMBENCH_GIT_COMMIT=<hash> bash docs/runbooks/gpu/oneshot_headline.sh start
#   bash docs/runbooks/gpu/oneshot_headline.sh wait SECONDS    # follow the log; then pack what exists
# `wait` packs $WORK (bundles, result sets, logs) into $OUT/work.tgz each time. Commit the bundle's
# result set as results/<gpu-slug>/ and the bundle under results/<gpu-slug>/bundles/.
set -u
WORK=${WORK:-/root/lbo}
OUT=${OUT:-/tmp/llmbench-out}
cmd=${1:-start}
. "$(dirname "$0")/_job.sh"
if [ "$cmd" = start ]; then
  mkdir -p "$WORK"
  rm -f "$WORK/done"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed"; exit 1; }
  # the headline's six vLLM cases are skipped, not failed, where vLLM does not import: say so now, not
  # after the run (NO_VLLM=1: run without them)
  if [ "${NO_VLLM:-0}" != 1 ] && ! PYTHONPATH=/tmp/vsite:/tmp/site python3 -c "import vllm" 2>/dev/null; then
    echo "vLLM does not import from /tmp/vsite: install it first (.vlN/vllm-install.sh), or NO_VLLM=1 to run without it"
    exit 1
  fi
  cat >"$WORK/job.sh" <<JOB
set -u
export PYTHONPATH=/tmp/vsite:/tmp/site:$PWD PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1${LLMBENCH_GIT_COMMIT:+ LLMBENCH_GIT_COMMIT=$LLMBENCH_GIT_COMMIT}
cd $PWD
step() { echo "== \$(date -u +%T) \$1"; }
if [ -z "${RESUME_FROM:-}" ]; then
step "dry-run"
python3 -m llmbench oneshot --dry-run --out $WORK/oneshot >$WORK/dryrun.txt 2>&1
step "oneshot --budget ${BUDGET:-15m}"
start=\$(date +%s)
python3 -m llmbench oneshot --budget ${BUDGET:-15m} --out $WORK/oneshot >$WORK/oneshot.log 2>&1
echo "oneshot wall: \$(( \$(date +%s) - start )) s" >>$WORK/oneshot.log
fi
if [ "${RESUME:-0}" = 1 ] || [ -n "${RESUME_FROM:-}" ]; then
  bundle=\${RESUME_FROM:-\$(ls -t $WORK/oneshot/*.tar.gz | head -n 1)}
  step "oneshot --resume \$bundle"
  start=\$(date +%s)
  python3 -m llmbench oneshot --resume "\$bundle" --out $WORK/oneshot >$WORK/resume.log 2>&1
  echo "resume wall: \$(( \$(date +%s) - start )) s" >>$WORK/resume.log
fi
step done
touch $WORK/done
JOB
  start_job "$WORK"
  echo "started"
  exit 0
fi
if [ "$cmd" = wait ]; then
  LOG_TAIL=12 wait_job "$WORK" "$OUT" "${2:-540}"
fi
