#!/usr/bin/env bash
# Issue 38 on the GPU: the new harness (result contract v2, locks, watchdog, detached-child cleanup)
# with real CUDA case processes; the headline ceilings against the committed H100 figures; the H100
# fp8 batch-32 compiled case measured with its code path; kill -9 of a runner
# whose case holds the GPU.
set -u
rm -rf /tmp/site; source docs/runbooks/gpu/_setup.sh
R=$OUT/r; mkdir -p $R
t0=$(date +%s)
step() { echo "=== $(( $(date +%s) - t0 ))s: $*"; }
step doctor; python3 -m llmbench doctor 2>&1 | tail -15
step quickstart; python3 -m llmbench run quickstart --out $R 2>&1 | tail -6
step "headline ceilings"; python3 -m llmbench run headline --filter scenario=gemm,bandwidth --out $R 2>&1 | tail -6
step "kill -9 of a runner during a GPU case"
cat > /tmp/k.toml <<'T'
name = "kill9"
[[case]]
scenario = "gemm"
shape = [8192, 8192, 8192]
precision = "bf16"
min_seconds = 120
min_iters = 20
timeout_s = 300
T
python3 -m llmbench run /tmp/k.toml --out /tmp/k9 > /tmp/k9.log 2>&1 &
rp=$!; sleep 25
echo "runner $rp; its children:"; ps -o pid,ppid,pgid,etime,cmd --ppid $rp | cut -c1-150
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
kill -9 $rp; sleep 6
echo "after kill -9 (6 s):"; ps -eo pid,ppid,etime,cmd | grep -E "llmbench.harness.worker|harness/worker" | grep -v grep | cut -c1-150 || true
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
step "hf fp8 batch 32 compiled"; timeout 420 python3 -m llmbench run headline --filter engine=hf --filter precision=fp8 --filter batch_size=32 --out $R 2>&1 | tail -8
step "show"; for f in $R/*/*.json; do python3 -m llmbench show $f 2>&1 | head -40; done
step done
tar czf $OUT/gpu38.tgz -C $OUT r
