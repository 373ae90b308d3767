#!/usr/bin/env bash
# Issue 41's host-state probe (benchmarks/host_state_probe.py) as one background job that outlives a
# device command: fresh processes one after another on GPU 0, each given by one RUNS entry
# "label[:option,option]" (options of the probe without their dashes), e.g. the default
#   RUNS="plain-1 workers:shutdown-workers plain-2 freeze:gc-freeze"
# UNTIL and EVERY (seconds after compiling; default 120 and 10) set each process's points.
# From the repository root on the GPU machine (.whl/ carried: torchao):
#   bash docs/runbooks/gpu/host_state.sh start
#   bash docs/runbooks/gpu/host_state.sh wait SECONDS     (again until it says JOB DONE)
set -u
WORK=${WORK:-/root/hoststate}
OUT=${OUT:-/tmp/llmbench-out}
. "$(dirname "$0")/_job.sh"
if [ "${1:-start}" = start ]; then
  . "$(dirname "$0")/_setup.sh"
  mkdir -p "$WORK"; rm -f "$WORK/done"
  cat >"$WORK/job.sh" <<JOB
set -u
export PYTHONPATH=$PYTHONPATH PYTHONUNBUFFERED=1
cd $PWD
nproc >$WORK/host.txt; lscpu >>$WORK/host.txt 2>&1; nvidia-smi -L >>$WORK/host.txt
for r in ${RUNS:-plain-1 workers:shutdown-workers plain-2 freeze:gc-freeze}; do
  label=\${r%%:*}; opts=
  case \$r in *:*) for o in \$(echo \${r#*:} | tr , ' '); do opts="\$opts --\$o"; done ;; esac
  echo "== \$(date -u +%T) \$label\$opts"
  python3 benchmarks/host_state_probe.py --label \$label \$opts --until ${UNTIL:-120} --every ${EVERY:-10} \
    --out $WORK/\$label.json 2>$WORK/\$label.err
  echo "== \$(date -u +%T) \$label: exit \$?"
done
touch $WORK/done
JOB
  start_job "$WORK"
  sleep 2; cat "$WORK/job.log"
else
  LOG_TAIL=3 wait_job "$WORK" "$OUT" "${2:-540}"
fi
