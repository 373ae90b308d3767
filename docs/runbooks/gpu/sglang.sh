#!/usr/bin/env bash
# SGLang 0.5.17 on one GPU: its imports (the CUDA 13 sgl_kernel first), the versions it runs with, then one
# server start the way the serving scenario builds it for sglang-llama3-8b (Llama-3-8B-shaped config,
# random weights, --load-format dummy, the offline tokenizer, context_length 4096), readiness on /health,
# one streamed completion, stop. Logs in $OUT (sglang-imports.log, sglang-start-PRECISION.log and the
# server's own log); the exact error of whatever fails is in them.
#   bash docs/runbooks/gpu/sglang.sh            bf16 (PRECISION=fp8 for online fp8; READY_TIMEOUT_S=170)
# Needs SGLang's wheels in /tmp/sg-site (docs/runbooks/gpu/sglang-0.5.17-lean.txt, carried in pieces by
# ../shared/gpu/fetch-pieces.sh, installed by the last piece's install.sh) and vLLM's set in /tmp/vsite
# (fetch-vllm.sh), whose fastapi, uvicorn, pyzmq, pydantic, xgrammar, ... SGLang uses.
# PYTHONPATH: /tmp/sg-site first (its pins win: transformers 5.12.1, tokenizers 0.22.2, flashinfer
# 0.6.15.post1, apache-tvm-ffi 0.1.11, openai 2.6.1), then /tmp/vsite without vllm itself (a view of
# links: SGLang imports vllm where it finds it), then this checkout; the image's site-packages last.
# Time: under 4 minutes (imports ~20 s; a first start of an 8B server 1-3 min, its JIT kernels included).
set -u
. "$(dirname "$0")/_setup.sh"
PRECISION=${PRECISION:-bf16}
[ -d /tmp/sg-site/sglang ] || { echo "no /tmp/sg-site/sglang: install the sg pieces first (.sgN/install.sh)" | tee "$OUT/sglang-imports.log"; exit 1; }
[ -d /tmp/vsite ] || { echo "no /tmp/vsite: install vLLM's set first (fetch-vllm.sh)" | tee "$OUT/sglang-imports.log"; exit 1; }
view=/tmp/sg-vsite
rm -rf "$view" && mkdir -p "$view"
for e in /tmp/vsite/*; do
  case ${e##*/} in vllm|vllm-*.dist-info) ;; *) ln -s "$e" "$view/" ;; esac
done
export PYTHONPATH=/tmp/sg-site:$view:$PYTHONPATH HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
start=$SECONDS
{
  echo "PYTHONPATH=$PYTHONPATH"
  env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS|CUDA_HOME)=' | sort
  ldd --version 2>&1 | head -1
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
  command -v nvcc >/dev/null && nvcc --version | tail -2 || echo "nvcc: not on PATH (CUDA_HOME=${CUDA_HOME:-unset}; /usr/local/cuda/bin/nvcc $( [ -x /usr/local/cuda/bin/nvcc ] && echo present || echo absent))"
  python3 - <<'PY'
import importlib, importlib.metadata as md, time, traceback
for dist in ("torch", "transformers", "tokenizers", "sglang", "sglang-kernel", "flashinfer-python", "xgrammar",
             "apache-tvm-ffi", "openai", "fastapi", "uvicorn", "pydantic", "triton", "nvidia-cutlass-dsl"):
    try:
        print(f"{dist}=={md.version(dist)}")
    except md.PackageNotFoundError:
        print(f"{dist}: not installed")
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0),
      "capability", torch.cuda.get_device_capability(0))
for mod in ("sgl_kernel", "flashinfer", "sglang.srt.server_args", "sglang.srt.entrypoints.http_server",
            "sglang.srt.model_executor.model_runner", "sglang.srt.layers.quantization.fp8"):
    t = time.monotonic()
    try:
        m = importlib.import_module(mod)
        print(f"import {mod}: ok ({time.monotonic() - t:.1f} s) from {getattr(m, '__file__', '?')}")
    except BaseException as e:
        print(f"import {mod}: FAILED {type(e).__name__}: {e}")
        traceback.print_exc()
        break
try:
    import vllm  # noqa: F401
    print("vllm importable: yes (unexpected: the view should hide it)")
except ImportError:
    print("vllm importable: no (as intended)")
PY
} 2>&1 | tee "$OUT/sglang-imports.log"
if grep -q "FAILED" "$OUT/sglang-imports.log"; then
  echo "an import failed: see $OUT/sglang-imports.log; the server is not started"; exit 1
fi
timeout 230 python3 docs/runbooks/gpu/sglang_start.py "$OUT" "$PRECISION" "${READY_TIMEOUT_S:-170}" 2>&1 \
  | tee "$OUT/sglang-start-$PRECISION.log"
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && echo "timed out after 230 s (rc 124): see $OUT/sglang-server-$PRECISION.log" | tee -a "$OUT/sglang-start-$PRECISION.log"
echo "elapsed: $((SECONDS - start)) s, rc $rc" | tee -a "$OUT/sglang-start-$PRECISION.log"
exit "$rc"
