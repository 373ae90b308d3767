#!/usr/bin/env bash
# fp8 on a Hopper-class GPU: linear_fp8 (every fp8 implementation against bf16 at the Llama-3-8B gate/up
# and down projections, 16 and 16384 tokens, forward and forward+backward), mamf for bf16 and fp8, and a
# 2-minute burn. Transformer Engine's cases are skipped with the install command where it is missing.
#   bash docs/runbooks/gpu/fp8.sh          (result sets in $OUT/results, a log per suite)
# Time: about 6 minutes. fp8-linear's subset is capped by --budget 210 (the rest: run again, it resumes);
# mamf searches 196 shapes per precision (10-20 s each); burn is 120 s of 8192^3 bf16 products.
set -u
. "$(dirname "$0")/_setup.sh"
mkdir -p "$OUT/results"
python3 -c "import transformer_engine.pytorch, torchao, pydantic; print('te, torchao, pydantic: ok')" 2>&1 | tee "$OUT/fp8-imports.log"
python3 -m llmbench run fp8-linear --out "$OUT/results" --resume --budget 210 \
  -k model=llama-3-8b -k proj=gate_up,down -k tokens=16,16384 2>&1 | tee "$OUT/fp8-linear.log"
python3 -m llmbench run mamf --out "$OUT/results" -k precision=bf16,fp8 2>&1 | tee "$OUT/mamf.log"
python3 -m llmbench run burn --out "$OUT/results" 2>&1 | tee "$OUT/burn.log"
