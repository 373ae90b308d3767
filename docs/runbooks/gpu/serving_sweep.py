"""vLLM's OpenAI-compatible server on the GPU, loaded by `llmbench serve-bench`.

One server per precision, started once for the whole concurrency sweep (the packaged suite
`serving-sweep` shares one per precision too, through `llmbench run`), on the
Llama-3-8B shape with random weights (`--load-format dummy`) and the offline tokenizer of the
preset's vocabulary, written by llmbench itself (models/hf_dir.py, models/tokenizer.py). Prefix
caching is off: every point's prompts come from the same seed, and a cache kept from an earlier
point would shorten its TTFT.

    python3 docs/runbooks/gpu/serving_sweep.py OUT_DIR bf16 [fp8 ...]

Needs vLLM installed. Expected time per precision (an estimate, not a measurement): the server's
first start of an 8B model about 2-2.5 min (torch.compile and CUDA graphs; less with a warm
VLLM_CACHE_ROOT), then 7 points of at most 20 s of sending plus the drain, about 3 min: about 5 min each.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from llmbench.models.hf_dir import write_config_dir
from llmbench.models.presets import get_preset
from llmbench.models.tokenizer import build_offline_tokenizer
from llmbench.serving.server import ServerProcess

PRESET, PORT = "llama-3-8b", 8000  # a fixed port keeps the url param, and so the case ids, stable
CONCURRENCY = "1,2,4,8,16,32,64"
QUANT = {"bf16": [], "fp8": ["--quantization", "fp8"]}


def sweep(out: Path, precision: str, work: Path) -> int:
    tok = build_offline_tokenizer(work / "tokenizer", get_preset(PRESET).vocab)
    model = write_config_dir(PRESET, work / f"model-{precision}", tok)
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
               "--tokenizer", str(tok), "--load-format", "dummy", "--served-model-name", PRESET,
               "--host", "127.0.0.1", "--port", str(PORT), "--dtype", "bfloat16", "--max-model-len", "4096",
               "--no-enable-prefix-caching", *QUANT[precision]]
    url = f"http://127.0.0.1:{PORT}"
    with ServerProcess(command, out / f"vllm-server-{precision}.log") as server:
        print(f"{precision}: server ready in {server.wait_ready(url, 900):.0f} s", flush=True)
        return subprocess.call([
            sys.executable, "-m", "llmbench", "serve-bench", "--url", url, "--model", PRESET,
            "--tokenizer", str(tok), "--precision", precision, "--concurrency", CONCURRENCY,
            "--input-len", "1024", "--output-len", "128", "-n", "512", "--duration", "15",
            "--goodput", "ttft:2000 tpot:50", "--name", f"serving-vllm-{precision}", "--out", str(out / "results")])


def main() -> int:
    out, precisions = Path(sys.argv[1]), sys.argv[2:] or ["bf16"]
    out.mkdir(parents=True, exist_ok=True)
    bad = [p for p in precisions if p not in QUANT]
    if bad:
        sys.exit(f"unknown precision {bad[0]!r}; valid: {', '.join(QUANT)}")
    codes = []
    for p in precisions:
        with tempfile.TemporaryDirectory(prefix="llmbench-serving-") as work:
            codes.append(sweep(out, p, Path(work)))
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
