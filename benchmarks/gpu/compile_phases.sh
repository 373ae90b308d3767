#!/usr/bin/env bash
# Where a compiled case's first call goes, cold and then warm: the headline's compiled transformers
# cases of Llama-3-8B named by CASES (default: fp8 batch 8, whose first call took 243-504 s cold and
# 123 s warm against bf16's 33-54 and 19), each run twice into one kept compile cache
# (LLMBENCH_COMPILE_CACHE): the first run compiles into it, the second loads from it. Each case records
# compile_s, compile_phases_s (dynamo, aot_autograd, inductor, kernel_tuning, rest_of_call), the
# coordinate-descent steps it ran and the inductor settings its process had moved (code_path.compile);
# the summary prints them side by side.
#   bash benchmarks/gpu/compile_phases.sh          (result sets in $OUT/compile-phases/<gpu-slug>/)
#   CASES=generate/700e5b959973,generate/a116c5185493 bash benchmarks/gpu/compile_phases.sh
# Time: about 7 minutes for the default case on an H100 or H200 (two passes); each pass is cut off near
# 9.5 minutes in all. Not a published set: keep it out of results/<gpu-slug>/ (its cases would become
# the headline's newest runs there).
set -u
. "$(dirname "$0")/_setup.sh"
CASES=${CASES:-generate/700e5b959973}
dest="$OUT/compile-phases"
mkdir -p "$dest"
export LLMBENCH_COMPILE_CACHE="$OUT/compile-cache"
rm -rf "$LLMBENCH_COMPILE_CACHE"
start=$(date +%s)
for pass in cold warm; do
  left=$(( 570 - ($(date +%s) - start) ))
  echo "== $(date -u +%T) $pass: $CASES (at most ${left} s)" | tee -a "$OUT/compile-phases.log"
  timeout --signal=TERM "$left" python3 -m llmbench run headline --out "$dest" -y -k "id=$CASES" \
    >>"$OUT/compile-phases-$pass.log" 2>&1 || echo "   exit $? (see compile-phases-$pass.log)" | tee -a "$OUT/compile-phases.log"
done
python3 - "$dest" <<'PY' | tee -a "$OUT/compile-phases.log"
import json, sys
from pathlib import Path

for path in sorted(Path(sys.argv[1]).glob("*/*.json")):
    for case in json.loads(path.read_text())["cases"]:
        info, compile_ = case.get("info", {}), (case.get("code_path") or {}).get("compile", {})
        first = (case.get("metrics", {}).get("compile_s") or {}).get("value")
        print(path.name, case["id"], case["status"], f"first call {first:.1f} s" if first else "",
              info.get("compile_cache_state"), info.get("compile_phases_s"),
              "coordinate-descent steps:", info.get("coordinate_descent_benchmarks", 0),
              "process settings:", compile_.get("process_settings"))
PY
echo "done in $(( $(date +%s) - start )) s" | tee -a "$OUT/compile-phases.log"
