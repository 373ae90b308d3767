#!/usr/bin/env bash
# The noise floor: the between-run spread of the headline cases (bf16 and fp8 8192^3 GEMMs, device copies
# of 1 and 4 GiB, compiled bf16 batch-1 decode of Llama-3-8B), each run a fresh process, interleaved as
# passes (`llmbench run --repeat 3`: pass 1 over the cases, then pass 2, then 3). Run it on separate
# machines of one GPU model where you can: `llmbench spread` pools every run of the same GPU and suite and
# counts the machines (anonymous GPU ids) behind each figure.
#   bash docs/runbooks/gpu/spread.sh      (result sets in $OUT/spread/<gpu-slug>/, summaries $OUT/spread.md/.json)
# Time: about 7 minutes: the ceilings cases ~1.7 min for 3 passes, the decode case 80-100 s a pass (most of
# it torch.compile); the decode passes are cut off (SIGTERM: finished passes are kept) near 9.5 minutes.
# To publish, commit the sets as results/spread/<gpu-slug>/ and the summaries as
# results/spread/<gpu-slug>-<date>.md/.json; NOT under results/<gpu-slug>/, where the 4-case ceilings
# passes would become the GPU's newest ceilings set (which publishing, --dry-run quotes and --resume take).
set -u
. "$(dirname "$0")/_setup.sh"
mkdir -p "$OUT/spread"
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
