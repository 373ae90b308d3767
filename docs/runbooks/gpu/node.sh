#!/usr/bin/env bash
# The two-GPU machine (nvidia-h100-x2) as one background job that outlives a device command, steps in
# order (STEPS, default all of them):
#   oneshot   `llmbench oneshot --budget ${BUDGET:-15m}` of the headline from a fresh machine: cases side by
#             side over both GPUs (the default with several GPUs), its --dry-run quote kept beside it
#   plain     benchmarks/plain_vllm_tp.py: vLLM outside llmbench, TP2 and two replicas at totals 1/2 and 32
#   tp70b     the tp-vs-replicas suite's 70B-class fp8 cases not yet in its committed set (--resume of it)
#   serving   the serving-tp-vs-dp suite (one TP2 endpoint against two data-parallel copies), --resume of
#             the committed set where there is one
#   alone     the headline cases given in ALONE_IDS (id,id,...), one at a time on GPU 0: the same
#             machine's alone runs against which the oneshot's side-by-side figures are read
#             (benchmarks/beside_vs_alone.py ONESHOT_SET --machine ALONE_SET)
#   binding   the headline cases given in ALONE_IDS on GPU 0, nothing beside them, BIND_ROUNDS times (default 1):
#             with the host's every core (into $WORK/bind-all), then bound to the cores a side-by-side run
#             gives GPU 0's slot (BIND_CPUS, default harness/launch's first share; into $WORK/bind-half): does
#             the binding alone move a case that read differently beside others than alone?
#   plain-one benchmarks/plain_vllm_tp.py on one GPU (batches 1, 16, 32): the plain replicas' baseline
#   neighbour benchmarks/neighbour_load.py: vLLM fp8 decode on GPU 0, quiet against a compiling neighbour
#   tuning    does a neighbour's compilation change what a cold compile's kernel tuning picks? TUNE_ID of the
#             fp8-kernel-tuning suite (default: its transformers fp8 batch-1 case with torchao's process-wide
#             kernel settings, generate/a116c5185493) on GPU 0 and cores 0-15, cold each time,
#             TUNE_ROUNDS times (default 2) alone and as often while benchmarks/neighbour_load.py's loader
#             compiles on GPU 1 and cores 16-31; read each run's info.gpu_busy_ms_per_step and top kernels
#             (GPU-side, so the loader's load on the host during the timed part moves them little).
#             `tuning:SUITE:ID` names another suite's case for that step (e.g.
#             tuning:fp8-kernel-tuning:generate/216a154e2bf6, batch 1 with torchao's settings undone)
#   kernel-tuning  the fp8-kernel-tuning suite's cases with torchao's process-wide inductor settings undone
#             (library_kernel_settings = false: the headline's fp8 cases), cold, one at a time on GPU 0: set-up
#             and decode against the committed runs of the same cases with those settings
# Needs vLLM in /tmp/vsite (the carried pieces .vl1 ... .vlN, docs/runbooks/gpu/README.md), except for
# the steps tuning and kernel-tuning, and .whl/.
# From the repository root on the GPU machine:
#   LLMBENCH_GIT_COMMIT=<hash> bash docs/runbooks/gpu/node.sh start
#   bash docs/runbooks/gpu/node.sh wait SECONDS       (again until it says JOB DONE)
# `wait` packs $WORK (bundle, result sets, logs, the plain check's JSON) into $OUT/work.tgz each time.
set -u
WORK=${WORK:-/root/node}
OUT=${OUT:-/tmp/llmbench-out}
. "$(dirname "$0")/_job.sh"
if [ "${1:-start}" = start ]; then
  . "$(dirname "$0")/_setup.sh"
  for s in ${STEPS:-oneshot}; do
    case $s in tuning|tuning:*|kernel-tuning) ;;  # the only steps that run no vLLM
      *) PYTHONPATH=/tmp/vsite:$PYTHONPATH python3 -c "import vllm" 2>/dev/null \
           || { echo "vLLM does not import from /tmp/vsite: install it first (the last piece's vllm-install.sh)"; exit 1; }
         break ;;
    esac
  done
  mkdir -p "$WORK"; rm -f "$WORK/done"
  for d in results/*/; do  # the committed two-GPU sets, for tp70b's and serving's --resume (under the GPU's slug)
    for suite in tp-vs-replicas serving-tp-vs-dp; do
      compgen -G "$d/$suite-*.json" >/dev/null && mkdir -p "$WORK/r/$(basename "$d")" \
        && cp "$d"/$suite-*.json "$WORK/r/$(basename "$d")/"
    done
  done
  cat >"$WORK/job.sh" <<JOB
set -u
export PYTHONPATH=/tmp/vsite:$PYTHONPATH PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1${LLMBENCH_GIT_COMMIT:+ LLMBENCH_GIT_COMMIT=$LLMBENCH_GIT_COMMIT}
cd $PWD
step() { echo "== \$(date -u +%T) \$1"; }
nvidia-smi topo -m > $WORK/topo.txt 2>&1
env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS)=' > $WORK/multicast.txt
for s in ${STEPS:-oneshot plain tp70b serving}; do
  t0=\$(date +%s); step "\$s"
  case \$s in
    oneshot) python3 -m llmbench oneshot --dry-run --out $WORK/oneshot --budget ${BUDGET:-15m} >$WORK/dryrun.txt 2>&1
             python3 -m llmbench oneshot --budget ${BUDGET:-15m} --out $WORK/oneshot >$WORK/oneshot.log 2>&1 ;;
    plain)   python3 benchmarks/plain_vllm_tp.py --out $WORK/plain-vllm.json >$WORK/plain.log 2>&1 ;;
    tp70b)   python3 -m llmbench run tp-vs-replicas --gpus 0,1 --out $WORK/r --resume -k model=llama-3-70b \
               -y >$WORK/tp70b.log 2>&1 ;;
    serving) python3 -m llmbench run serving-tp-vs-dp --gpus 0,1 --out $WORK/r --resume -y >$WORK/serving.log 2>&1 ;;
    alone)   python3 -m llmbench run headline --gpus 0 --out $WORK/alone -k id=${ALONE_IDS:-} -y >$WORK/alone.log 2>&1 ;;
    binding) half=${BIND_CPUS:-\$(python3 -c 'from llmbench.hardware.cpus import cpu_list, cpu_shares; print(cpu_list(cpu_shares(2)[0]))')}
             echo "bound to \$half" >>$WORK/binding.log
             for r in \$(seq ${BIND_ROUNDS:-1}); do
               python3 -m llmbench run headline --gpus 0 --out $WORK/bind-all -k id=${ALONE_IDS:-} -y >>$WORK/binding.log 2>&1
               taskset -c \$half python3 -m llmbench run headline --gpus 0 --out $WORK/bind-half -k id=${ALONE_IDS:-} \
                 -y >>$WORK/binding.log 2>&1
             done ;;
    plain-one) python3 benchmarks/plain_vllm_tp.py --layouts one --batches 1,16,32 --out $WORK/plain-one.json \
               >$WORK/plain-one.log 2>&1 ;;
    neighbour) python3 benchmarks/neighbour_load.py --out $WORK/neighbour.json >$WORK/neighbour.log 2>&1 ;;
    tuning|tuning:*)
             suite=fp8-kernel-tuning id=${TUNE_ID:-generate/a116c5185493}
             [ "\$s" = tuning ] || { suite=\${s#tuning:}; id=\${suite#*:}; suite=\${suite%%:*}; }
             for r in \$(seq ${TUNE_ROUNDS:-2}); do
               taskset -c 0-15 python3 -m llmbench run \$suite --gpus 0 -k id=\$id \
                 --out $WORK/tune-alone -y >>$WORK/tuning.log 2>&1
               CUDA_VISIBLE_DEVICES=1 setsid taskset -c 16-31 python3 benchmarks/neighbour_load.py --load \
                 >>$WORK/tune-load.log 2>&1 & lp=\$!  # a group of its own: its compile workers go with it
               sleep 20  # the loader compiling before the case starts
               taskset -c 0-15 python3 -m llmbench run \$suite --gpus 0 -k id=\$id \
                 --out $WORK/tune-beside -y >>$WORK/tuning.log 2>&1
               kill -- -\$lp; wait \$lp
             done ;;
    kernel-tuning) python3 -m llmbench run fp8-kernel-tuning --gpus 0 -k library_kernel_settings=false \
               --out $WORK/kernel-tuning -y >$WORK/kernel-tuning.log 2>&1 ;;
  esac
  step "\$s: exit \$?, \$(( \$(date +%s) - t0 )) s"
done
touch $WORK/done
JOB
  start_job "$WORK"
  sleep 2; cat "$WORK/job.log"
else
  LOG_TAIL=14 wait_job "$WORK" "$OUT" "${2:-540}"
fi
