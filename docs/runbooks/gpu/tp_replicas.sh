#!/usr/bin/env bash
# Tensor parallel against replicas on the two-GPU machine (nvidia-h100-x2): the tp-vs-replicas suite
# (Llama-3-8B bf16 decode on vLLM: one GPU at batch 1/16/32, one TP2 engine at batch 1/32, two engines
# side by side at batch 1/16 each; then the 70B-class fp8 cases), as one background job that outlives a
# device command. Run from the repository root:
#   vLLM first: the carried pieces (.vl1 ... .vlN, docs/runbooks/gpu/README.md), back to back; then
#     LLMBENCH_GIT_COMMIT=<hash> bash docs/runbooks/gpu/tp_replicas.sh start
#     bash docs/runbooks/gpu/tp_replicas.sh wait 540     (again until it says JOB DONE)
# Time: about 12 minutes for the 8B cases (engine starts: one for the one-GPU cases, one TP2 of about 4
# minutes, two side by side per replica case), the 70B cases after them within BUDGET_70B seconds.
# Result sets in $WORK/r/<gpu-slug>/, logs in $WORK; `wait` packs $WORK into $OUT/work.tgz.
set -u
WORK=${WORK:-/root/tpr}
OUT=${OUT:-/tmp/llmbench-out}
. "$(dirname "$0")/_job.sh"
if [ "${1:-start}" = start ]; then
  . "$(dirname "$0")/_setup.sh"
  mkdir -p "$WORK"; rm -f "$WORK/done"
  cat >"$WORK/job.sh" <<JOB
set -u
export PYTHONPATH=/tmp/vsite:$PYTHONPATH PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 VLLM_CACHE_ROOT=/tmp/vllm-cache${LLMBENCH_GIT_COMMIT:+ LLMBENCH_GIT_COMMIT=$LLMBENCH_GIT_COMMIT}
cd $PWD
env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS)=' > $WORK/multicast.txt
nvidia-smi topo -m > $WORK/topo.txt 2>&1
python3 -c "import vllm; print('vllm', vllm.__version__)"
t0=\$(date +%s)
python3 -m llmbench run tp-vs-replicas --gpus 0,1 --out $WORK/r -k model=llama-3-8b -y > $WORK/run-8b.log 2>&1
echo "8b wall: \$(( \$(date +%s) - t0 )) s" >> $WORK/run-8b.log
python3 -m llmbench run tp-vs-replicas --gpus 0,1 --out $WORK/r --resume -k model=llama-3-70b \
  --budget \${BUDGET_70B:-600} -y > $WORK/run-70b.log 2>&1
touch $WORK/done
JOB
  start_job "$WORK"
  sleep 5; cat "$WORK/job.log"
else
  LOG_TAIL=14 wait_job "$WORK" "$OUT" "${2:-540}"
fi
