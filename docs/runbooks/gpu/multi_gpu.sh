#!/usr/bin/env bash
# Two GPUs joined by NVLink: the interconnect's ceiling and data-parallel scaling, each beside its plain
# torch check on the same machine. In order: plain_collectives.py (all-reduce bus bandwidth, 1 MiB to
# 1 GiB), the `collectives` suite (all four collectives over the same sizes), plain_ddp.py (the
# ddp-scaling model bare on one GPU and under DDP on two), and `ddp-scaling -k gpus=2` (DDP and FSDP2
# against the bare baseline). NVLink multicast stays off (the machine's NCCL_NVLS_ENABLE=0 is kept; the
# scripts and llmbench's ranks set it where missing); NCCL_ALGO is never set. Runs as a background job
# (one device command is limited to 10 minutes), from the repository root on the GPU machine:
#   LLMBENCH_GIT_COMMIT=<hash> bash docs/runbooks/gpu/multi_gpu.sh start
#   bash docs/runbooks/gpu/multi_gpu.sh wait SECONDS    # then $OUT/work.tgz: sets, logs, plain JSON
#   STEPS="collectives" bash docs/runbooks/gpu/multi_gpu.sh start    # some of plain-coll collectives plain-ddp ddp
# Result sets go to $WORK/sets (commit them under results/<gpu-slug>/); the plain checks' JSON to
# $WORK/plain-*.json. Time on two GPUs: about 11 minutes (doctor 10 s, plain-coll 11 s, the 24 collectives
# cases 7 min at 16-18 s each: every case starts torchrun and NCCL; plain-ddp 27 s; ddp 2.5 min).
set -u
WORK=${WORK:-/root/lbm}
OUT=${OUT:-/tmp/llmbench-out}
cmd=${1:-start}
. "$(dirname "$0")/_job.sh"
if [ "$cmd" = start ]; then
  rm -rf "$WORK"; mkdir -p "$WORK"
  OUT=$WORK . "$(dirname "$0")/_setup.sh" || { echo "wheel install failed"; exit 1; }
  cat >"$WORK/job.sh" <<JOB
set -u
export PYTHONPATH=$PYTHONPATH PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=\${NCCL_NVLS_ENABLE:-0}${LLMBENCH_GIT_COMMIT:+ LLMBENCH_GIT_COMMIT=$LLMBENCH_GIT_COMMIT}
cd $PWD
nvidia-smi topo -m >$WORK/topo.txt 2>&1
step() {  # step NAME COMMAND...: one logged step; a failure does not stop the job
  local name=\$1; shift
  echo "== \$(date -u +%T) \$name"
  "\$@" >$WORK/\$name.log 2>&1 || echo "   exit \$? (see \$name.log)"
}
for s in ${STEPS:-doctor plain-coll collectives plain-ddp ddp}; do
  case \$s in
    doctor) step doctor python3 -m llmbench doctor ;;
    plain-coll) step plain-coll python3 -m torch.distributed.run --standalone --nproc_per_node=2 benchmarks/plain_collectives.py --out $WORK/plain-collectives.json ;;
    collectives) step collectives python3 -m llmbench run collectives --gpus 0,1 --out $WORK/sets --resume -y ;;
    plain-ddp) step plain-ddp python3 -m torch.distributed.run --standalone --nproc_per_node=2 benchmarks/plain_ddp.py --model llama-3-8b --layers 4 --batch 2 --seq 2048 --warmup 3 --steps 10 --out $WORK/plain-ddp.json ;;
    ddp) step ddp python3 -m llmbench run ddp-scaling --gpus 0,1 -k gpus=2 --out $WORK/sets --resume -y ;;
  esac
done
echo "== \$(date -u +%T) done"
touch $WORK/done
JOB
  start_job "$WORK"
  echo "started"
  exit 0
fi
if [ "$cmd" = wait ]; then
  LOG_TAIL=${LOG_TAIL:-14} wait_job "$WORK" "$OUT" "${2:-540}"
fi
