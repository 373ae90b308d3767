#!/usr/bin/env bash
# Code paths and the noise floor on one H100 or H200, as one background job that outlives a single
# device command (each is limited to 10 minutes), in this order:
#   1. fp8 linear as its users run it: benchmarks/fp8_linear_check.py (plain torch + torchao, the
#      independent check: step `check`) and the fp8-linear-modes suite (step `modes`);
#   2. MAMF (bf16, fp8): the best sustained matmul rate beside the search's burst;
#   3. decode-fusion: bf16 compiled decode at batch 1 and 8, fused and unfused (code path recorded);
#   4. the headline's noise-floor cases, 3 passes of fresh processes (`run --repeat 3`; NOISE_REPEAT):
#      gemm bf16/fp8, device copy, bf16 and fp8 compiled decode at batch 1 and 8, TTFT at 2048 (eager),
#      one QLoRA step, one linear_fp8 case.
# A step may name its cases: `modes:ID,ID` runs those fp8-linear-modes cases, `noise:ID,ID` one pass of
# those headline cases (to complete the passes of an earlier machine).
# All runs of the job share one torch.compile cache (LLMBENCH_COMPILE_CACHE), so a model and precision
# compiles once; each case records whether its compile was warm.
#
# Needs .whl/ (../shared/gpu/fetch-wheels.sh: torchao, bitsandbytes; and pydantic with its pinned
# pydantic-core, annotated-types, typing-inspection). From the repo root on the GPU machine:
#   bash docs/runbooks/gpu/noise_and_paths.sh start [STEPS]   # default "check modes mamf fusion noise"
#   bash docs/runbooks/gpu/noise_and_paths.sh wait SECONDS    # follow the log; then pack what exists
# `wait` packs $WORK (result sets, logs) into $OUT/work.tgz each time, so every call brings back what
# finished so far. Commit result sets as results/<gpu-slug>/ (headline passes, fp8-linear-modes,
# decode-fusion, mamf) after checking them.
# The machine's copy of the checkout may carry a stale .git: send the commit that runs along, as
# `LLMBENCH_GIT_COMMIT=<hash> bash docs/runbooks/gpu/noise_and_paths.sh start` (llmbench_info reads it first).
set -u
WORK=${WORK:-/root/lbw}
OUT=${OUT:-/tmp/llmbench-out}
cmd=${1:-start}
. "$(dirname "$0")/_job.sh"
if [ "$cmd" = start ]; then
  mkdir -p "$WORK/res"
  rm -f "$WORK/done"  # a finished job of an earlier run on the same disk
  steps=${2:-check modes mamf fusion noise}
  NOISE_IDS=gemm/fb0173adb9ac,gemm/bfd808afeea7,gemm/cd2acda1afa4,gemm/f8ae838730d8,bandwidth/47fa88f5e794,generate/fc8a70147524,generate/216a154e2bf6,generate/a9040064628c,generate/f713057bea7d,generate/500f16d47f32,qlora/f76c4f602102,linear_fp8/b8704e182946
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed"; exit 1; }
  cat >"$WORK/job.sh" <<JOB
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 LLMBENCH_COMPILE_CACHE=$WORK/compile-cache${LLMBENCH_GIT_COMMIT:+ LLMBENCH_GIT_COMMIT=$LLMBENCH_GIT_COMMIT}
cd $PWD
step() { echo "== \$(date -u +%T) \$1"; }
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,clocks.sm,temperature.gpu --format=csv >$WORK/gpu-before.txt 2>&1
for s in $steps; do
  ids=\${s#*:}; [ "\$ids" = "\$s" ] && ids=""
  case \${s%%:*} in
  check)
    step "fp8 plain-torch check"
    python3 benchmarks/fp8_linear_check.py --json $WORK/fp8_check.json >$WORK/fp8_check.log 2>&1 ;;
  modes)
    step "fp8-linear-modes"
    python3 -m llmbench run fp8-linear-modes --out $WORK/res -y \${ids:+-k id=\$ids} >>$WORK/fp8-linear-modes.log 2>&1 ;;
  mamf)
    step "mamf bf16, fp8"
    python3 -m llmbench run mamf -k precision=bf16,fp8 --out $WORK/res -y >$WORK/mamf.log 2>&1 ;;
  fusion)
    step "decode-fusion"
    python3 -m llmbench run decode-fusion --out $WORK/res -y >$WORK/decode-fusion.log 2>&1 ;;
  noise)
    if [ -n "\$ids" ]; then repeat=1; else repeat=\${NOISE_REPEAT:-3}; ids=$NOISE_IDS; fi
    step "headline noise-floor cases x\$repeat: \$ids"
    python3 -m llmbench run headline --repeat \$repeat -y --out $WORK/res -k id=\$ids >>$WORK/noise.log 2>&1 ;;
  esac
done
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,clocks.sm,temperature.gpu --format=csv >$WORK/gpu-after.txt 2>&1
step done
touch $WORK/done
JOB
  start_job "$WORK"
  echo "started: $steps"
  exit 0
fi
if [ "$cmd" = wait ]; then
  wait_job "$WORK" "$OUT" "${2:-540}"
fi
