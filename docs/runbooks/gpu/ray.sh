#!/usr/bin/env bash
# Ray as a case launcher on the two-GPU machine (nvidia-h100-x2): six cases through `--launcher ray`
# with a local head owning both GPUs, the same six through the local launcher (three passes: their
# between-run spread is what the Ray figures are judged against), and the ddp case (one task holding
# both GPUs) through both. Run from the repository root, each step one device command (< 10 min):
#
#   Ray first (../shared/gpu/README.md "The two-GPU machine"), here:
#     ../shared/gpu/fetch-pieces.sh ray ray==2.60.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 \
#       referencing==0.37.0 rpds-py==2026.6.3
#   then on the machine, back to back, the pieces' commands it prints, the last one with the step:
#     bash .rayN/install.sh && export PYTHONPATH=/tmp/ray-site:$PYTHONPATH && bash docs/runbooks/gpu/ray.sh local
#     (same PYTHONPATH)  bash docs/runbooks/gpu/ray.sh ray      # ~3 min: the head starts, six cases
#     (same PYTHONPATH)  bash docs/runbooks/gpu/ray.sh ddp      # ~4 min: ddp 2 GPUs, local and over Ray
#     (same PYTHONPATH)  bash docs/runbooks/gpu/ray.sh compare  # seconds: the spread and the Ray/local ratios
#   (a step of a fresh machine needs Ray installed again: the machine is bare after ~30 s idle)
#
# Result sets in $OUT/{local,ray,ddp-local,ddp-ray}/<gpu-slug>/; logs beside them. Multicast stays off:
# the machine's NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 reach every
# Ray task through its runtime_env (harness/launchers/ray.py); the ddp step checks the recorded code path.
set -u
. "$(dirname "$0")/../../../benchmarks/gpu/_setup.sh"
step=${1:?usage: ray.sh local|ray|ddp|compare}
suite=$OUT/ray-six.toml
cat >"$suite" <<'TOML'
name = "ray-six"
description = "Six short cases, run through the local launcher and through Ray (docs/runbooks/gpu/ray.sh)"

[defaults]
warmup_iters = 5
min_iters = 20
min_seconds = 2.0
timeout_s = 300

[[case]]
scenario = "gemm"
matrix.precision = ["bf16", "fp8"]
shape = [8192, 8192, 8192]

[[case]]
scenario = "gemm"
precision = "bf16"
matrix.shape = [[4096, 4096, 4096], [4096, 14336, 4096]]

[[case]]
scenario = "bandwidth"
kind = "d2d"
matrix.size_mib = [1024, 4096]
TOML
python3 -c "import ray; print('ray', ray.__version__)" || { echo "Ray is not importable: install the pieces first"; exit 2; }
env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS)=' | tee "$OUT/multicast.txt"
run() { echo "== $(date -u +%T) llmbench run $*"; python3 -m llmbench run "$@" -y; echo "   exit $?"; }
case $step in
  local)  # three passes, each case a fresh process: the between-run spread
    run "$suite" --out "$OUT/local" --repeat 3 2>&1 | tee "$OUT/local.log" ;;
  ray)    # a local head (ray.init() in the run) owning both GPUs; each case one task, num_gpus=1
    run "$suite" --out "$OUT/ray" --launcher ray 2>&1 | tee "$OUT/ray.log"
    python3 - "$OUT/ray" <<'PY'
import glob, json, sys
for f in glob.glob(f"{sys.argv[1]}/*/*.json"):
    for c in json.load(open(f))["cases"]:
        i = c["info"]
        print(c["id"], c["status"], i.get("launcher"), i.get("gpus"), (i.get("node") or {}).get("hostname"))
PY
    ;;
  ddp)    # the ddp-scaling suite's 2-GPU case: torchrun inside one case process, locally and as one Ray task
    run ddp-scaling -k gpus=2 -k parallel=ddp --out "$OUT/ddp-local" 2>&1 | tee "$OUT/ddp-local.log"
    run ddp-scaling -k gpus=2 -k parallel=ddp --out "$OUT/ddp-ray" --launcher ray 2>&1 | tee "$OUT/ddp-ray.log"
    for d in ddp-local ddp-ray; do
      python3 -m llmbench show "$OUT/$d"/*/ddp-scaling-*.json 2>&1 | tail -n 12
      python3 - "$OUT/$d" <<'PY'
import glob, json, sys
for f in glob.glob(f"{sys.argv[1]}/*/*.json"):
    for c in json.load(open(f))["cases"]:
        print(sys.argv[1], c["status"], c["info"].get("launcher"), c["code_path"].get("launcher", {}).get("multicast"))
PY
    done ;;
  compare)  # per case: the local passes' spread, and the Ray run against the local passes
    python3 -m llmbench spread "$OUT"/local/*/ray-six-*.json --format markdown 2>&1 | tee "$OUT/spread.md"
    first=$(ls "$OUT"/local/*/ray-six-*.json | head -n 1)
    python3 -m llmbench compare "$first" "$OUT"/ray/*/ray-six-*.json 2>&1 | tee "$OUT/compare.txt"
    python3 -m llmbench compare "$OUT"/ddp-local/*/ddp-scaling-*.json "$OUT"/ddp-ray/*/ddp-scaling-*.json 2>&1 \
      | tee "$OUT/compare-ddp.txt" ;;
  *) echo "unknown step $step: local|ray|ddp|compare"; exit 2 ;;
esac
