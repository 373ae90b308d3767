# Sourced by the scripts here that run as a background job outliving one device command
# (noise_and_paths.sh, oneshot_headline.sh): starting the job, and following it.
#   start_job WORK            runs WORK/job.sh detached (setsid nohup), its output in WORK/job.log
#   wait_job WORK OUT LIMIT   follows the job until WORK/done or LIMIT seconds, prints each log's tail
#                             (LOG_TAIL lines), packs WORK into OUT/work.tgz (its compile cache left out),
#                             and says JOB DONE or JOB RUNNING; at once, with status 1, where
#                             WORK holds no job (a fresh machine: the job's was handed back)
start_job() {
  setsid nohup bash "$1/job.sh" >"$1/job.log" 2>&1 < /dev/null &
}
wait_job() {
  local work=$1 out=$2 limit=${3:-540} t0
  if [ ! -e "$work/job.sh" ]; then  # a fresh machine: the one that ran the job was handed back
    echo "no job in $work: this machine never started one (the one that did was handed back); start it again"
    return 1
  fi
  t0=$(date +%s)
  while [ ! -e "$work/done" ] && [ $(( $(date +%s) - t0 )) -lt "$limit" ]; do sleep 10; done
  cat "$work/job.log"
  for f in "$work"/*.log; do echo "--- $f"; tail -n "${LOG_TAIL:-4}" "$f"; done
  mkdir -p "$out"
  tar -czf "$out/work.tgz" -C "$work" --exclude=compile-cache --exclude='.max_batch' . 2>/dev/null
  ls -la "$out"
  if [ -e "$work/done" ]; then echo "JOB DONE"; else echo "JOB RUNNING"; fi
}
