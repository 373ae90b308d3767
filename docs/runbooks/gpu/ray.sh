#!/usr/bin/env bash
# Ray as a case launcher on the two-GPU machine (nvidia-h100-x2): six cases through `--launcher ray`
# with a local head owning both GPUs, the same six through the local launcher (three passes: their
# between-run spread is what the Ray figures are judged against), and a ddp case on two GPUs as one
# node and as two one-GPU "nodes" over a localhost c10d rendezvous (the multi-node path; NCCL still
# finds NVLink, so its figure should match the one-node one), locally and as one Ray task holding both
# GPUs. Run from the repository root, each step one device command (< 10 min):
#
#   Ray first (../shared/gpu/README.md "The two-GPU machine"), here:
#     ../shared/gpu/fetch-pieces.sh ray ray==2.60.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 \
#       referencing==0.37.0 rpds-py==2026.6.3
#   then on the machine, back to back, the pieces' commands it prints, the last one with the step:
#     bash .rayN/install.sh && export PYTHONPATH=/tmp/ray-site:$PYTHONPATH && bash docs/runbooks/gpu/ray.sh local
#     (same PYTHONPATH)  bash docs/runbooks/gpu/ray.sh ray      # ~3 min: the head starts, six cases
#     (same PYTHONPATH)  bash docs/runbooks/gpu/ray.sh ddp-local  # ~4 min: ddp on 2 GPUs, 1 node and 2 nodes
#     (same PYTHONPATH)  bash docs/runbooks/gpu/ray.sh ddp-ray    # ~5 min: the same two cases over Ray
#   (a step of a fresh machine needs Ray installed again: the machine is bare after ~30 s idle)
#   Then anywhere (no GPU), with the four steps' files gathered under one OUT (local/, ray/, ddp-*/):
#     OUT=<that folder> bash docs/runbooks/gpu/ray.sh compare   # the spread and the Ray/local ratios
#
# Result sets in $OUT/{local,ray,ddp-local,ddp-ray}/<gpu-slug>/, logs beside them ($OUT: the device
# command's own, whose files come back; else /tmp/llmbench-out). Multicast stays off: the machine's NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 reach every
# Ray task through its runtime_env (harness/launchers/ray.py); the ddp step checks the recorded code path.
set -u
. "$(dirname "$0")/_setup.sh"
step=${1:?usage: ray.sh local|ray|ddp-local|ddp-ray|compare}
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
cat >"$OUT/ddp-nodes.toml" <<'TOML'
name = "ddp-nodes"
description = "ddp on two GPUs as one node and as two one-GPU nodes over a localhost c10d rendezvous"

[defaults]
model = "llama-3-8b"
layers = 4
batch_size = 2
seq_len = 2048
warmup_iters = 3
min_iters = 10
timeout_s = 540

[[case]]
scenario = "ddp"
parallel = "ddp"
matrix.placement = [{gpus = 2}, {gpus = 2, nodes = 2}]
TOML
case $step in ray|ddp-ray)
  python3 -c "import ray; print('ray', ray.__version__)" || { echo "Ray is not importable: install the pieces first"; exit 2; } ;;
esac
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
  ddp-local|ddp-ray)  # torchrun inside one case process: its agents on this host (one, or one per "node")
    d=$step
    if [ "$step" = ddp-local ]; then how=(--gpus 0,1); else how=(--launcher ray); fi
    run "$OUT/ddp-nodes.toml" --out "$OUT/$d" "${how[@]}" 2>&1 | tee "$OUT/$d.log"
    python3 - "$OUT/$d" <<'PY'
import glob, json, sys
for f in glob.glob(f"{sys.argv[1]}/*/*.json"):
    for c in json.load(open(f))["cases"]:
        m = {k: v.get("value") for k, v in c["metrics"].items() if isinstance(v, dict)}
        lp = c["code_path"].get("launcher", {})
        print(c["id"], c["params"].get("placement"), c["status"], c["info"].get("launcher"), c["info"].get("gpus"),
              lp.get("rendezvous"), lp.get("nnodes"), lp.get("multicast"))
        print("   ", {k: m.get(k) for k in ("train_samples_per_s", "scaling_efficiency", "step_ms")})
PY
    ;;
  compare)  # per case: the local passes' spread, and the Ray run against the local passes
    python3 -m llmbench spread "$OUT"/local/*/ray-six-*.json --format markdown 2>&1 | tee "$OUT/spread.md"
    # the local repeat group (three passes) is one side, the Ray run the other
    python3 -m llmbench compare "$OUT"/local/*/ray-six-*.json "$OUT"/ray/*/ray-six-*.json --all 2>&1 \
      | tee "$OUT/compare.txt"
    python3 -m llmbench compare "$OUT"/ddp-local/*/ddp-nodes-*.json "$OUT"/ddp-ray/*/ddp-nodes-*.json 2>&1 \
      | tee "$OUT/compare-ddp.txt" ;;
  *) echo "unknown step $step: local|ray|ddp-local|ddp-ray|compare"; exit 2 ;;
esac
# the device tool brings back only a few files of $OUT: each step's folder also goes as one tarball
[ -d "$OUT/$step" ] && tar czf "$OUT/$step.tgz" -C "$OUT" --exclude='*.lock' "$step" "$step.log" 2>/dev/null || true
