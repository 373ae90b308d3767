"""Prints, for each compiled case in the result sets under a folder, where its first call went
(compile_phases.sh's summary): the first call, the cache state, the phases, the coordinate-descent
steps and the inductor settings the process had moved."""

import json
import sys
from pathlib import Path

for path in sorted(Path(sys.argv[1]).glob("*/*.json")):
    for case in json.loads(path.read_text())["cases"]:
        info, compile_ = case.get("info", {}), (case.get("code_path") or {}).get("compile", {})
        first = (case.get("metrics", {}).get("compile_s") or {}).get("value")
        decode = (case.get("metrics", {}).get("decode_tokens_per_s") or {}).get("value")
        print(path.name, case["id"], case["status"], f"first call {first:.1f} s" if first else "",
              f"decode {decode:.0f} tok/s" if decode else "", info.get("compile_cache_state"),
              info.get("compile_phases_s"), "coordinate-descent steps:", info.get("coordinate_descent_benchmarks", 0),
              "process settings:", compile_.get("process_settings"))
