#!/usr/bin/env bash
# The noise floor (issue 14): the between-run spread of the headline cases, each run a fresh process,
# interleaved as passes (`llmbench run --repeat 3`: pass 1 over the cases, then pass 2, then 3), on one
# H100 or H200. Run it on two separate leases where you can: `llmbench spread` pools every run of the
# same GPU and suite, and counts the machines (anonymous GPU ids) behind each figure.
#
# Needs first (see /work/shared/gpu/README.md): pydantic and its pinned pydantic-core as wheels in
# .whl/ (../shared/gpu/fetch-wheels.sh pydantic==X pydantic-core==Y). Nothing else: bf16 and fp8 GEMMs,
# copies and compiled bf16 decode need only torch and transformers, which the machines have.
# Run from the repo root:  bash benchmarks/gpu/spread.sh   (writes $OUT/spread/<gpu-slug>/*.json, the
# result sets, $OUT/spread.md, $OUT/spread.json and $OUT/*.log)
#
# Expected time: about 7 minutes, from the case durations of the committed result sets (H100 and H200):
#   ceilings, 4 cases (bf16 and fp8 8192^3 GEMMs, device copies of 1 and 4 GiB): 6-7 s each (process
#     start, warm-up, at least 20 samples and 2 s), ~26 s a pass + ~8 s of fingerprint: 3 passes ~1.7 min;
#   inference-llama3-8b, compiled bf16 decode at batch 1, 128 in / 128 out (the README's 162 tok/s on
#     the H100, 196 on the H200): 81-101 s a fresh process (most of it torch.compile), 3 passes ~5 min.
#   The decode passes are cut off (SIGTERM: finished passes are kept) if the script nears 9.5 minutes.
# Afterwards commit $OUT/spread/<gpu-slug>/*.json as results/spread/<gpu-slug>/ and spread.md/json as
# results/spread/<gpu-slug>-<date>.md/.json. NOT under results/<gpu-slug>/: there the 4-case ceilings passes
# would become the newest ceilings set of the GPU, which `nox -s publish`, the roofline's measured copy
# ceiling, --dry-run quotes and --resume all take. A second lease adds its passes to the same folder;
# then `llmbench spread results/spread/<gpu-slug>/*.json` pools both (machines: 2).
set -u
OUT=${OUT:-/tmp/llmbench-out}
mkdir -p "$OUT/spread"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 || exit
start=$(date +%s)
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
echo "== $(date -u +%T) ceilings x3" | tee -a "$OUT/spread.log"
python3 -m llmbench run ceilings --out "$OUT/spread" --repeat 3 -y \
  -k id=gemm/fb0173adb9ac,gemm/bfd808afeea7,bandwidth/cf58bc2fe894,bandwidth/47fa88f5e794 \
  >>"$OUT/ceilings.log" 2>&1 || echo "   exit $? (see ceilings.log)" | tee -a "$OUT/spread.log"
left=$(( 570 - ($(date +%s) - start) ))
echo "== $(date -u +%T) inference-llama3-8b compiled bf16 batch 1 x3 (at most ${left} s)" | tee -a "$OUT/spread.log"
timeout --signal=TERM "$left" python3 -m llmbench run inference-llama3-8b --out "$OUT/spread" --repeat 3 -y \
  -k id=generate/fc8a70147524 >>"$OUT/inference.log" 2>&1 || echo "   exit $? (see inference.log)" | tee -a "$OUT/spread.log"
python3 -m llmbench spread "$OUT"/spread/*/*.json --format markdown --out "$OUT/spread.md" 2>>"$OUT/spread.log"
python3 -m llmbench spread "$OUT"/spread/*/*.json --format json --out "$OUT/spread.json" 2>>"$OUT/spread.log"
cat "$OUT/spread.md"
echo "done in $(( $(date +%s) - start )) s" | tee -a "$OUT/spread.log"
