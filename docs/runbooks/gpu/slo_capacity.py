"""Capacity under an SLO on one GPU: vLLM's OpenAI server (Llama-3-8B shape, random weights through
`--load-format dummy`, the preset's tokenizer built offline by llmbench), bf16 then fp8; for each,
`llmbench serve-bench --search concurrency` under two MLPerf presets (server and interactive limits of
Llama-3.1-8B), then `vllm bench serve` and `llmbench serve-bench` at one concurrency on the same
server, side by side (vLLM's JSON beside llmbench's result set). Then SGLang's server on the same load
where `sglang` imports (its server's command line as llmbench's sglang engine builds it; the
interactive preset only); where it does not, the reason is logged. After each precision's searches, one
point at OVERLOAD_RATE requests/s, far above either capacity: the saturation stop must end it early.

    python3 docs/runbooks/gpu/slo_capacity.py OUT_DIR [bf16] [fp8] [sglang]

Run by slo_capacity.sh as a background job. Time on one H200 (2026-12-02): fp8 9.3 min (the server ready
in 187 s, the two searches 105 and 89 s, then the side-by-side and the overload point), SGLang 4.5 min
(ready in 120 s); a bf16 search took 143-149 s. About 24 minutes for all three targets.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from llmbench.models.hf_dir import write_config_dir
from llmbench.models.presets import get_preset
from llmbench.models.tokenizer import build_offline_tokenizer
from llmbench.serving.server import ServerProcess

PRESET, PORT = "llama-3-8b", 8000  # a fixed port keeps the url param, and so the case ids, stable
SLOS = ("mlperf-llama3.1-8b-server", "mlperf-llama3.1-8b-interactive")
SIDE_BY_SIDE_CONCURRENCY = 32
OVERLOAD_RATE, OVERLOAD_N, OVERLOAD_S = 96, 4096, 30  # Poisson arrivals well past the server's capacity
INPUT, OUTPUT, N, DURATION = 1024, 128, 256, 6
QUANT = {"bf16": [], "fp8": ["--quantization", "fp8"]}

VLLM_CLI = "from vllm.entrypoints.cli.main import main; main()"  # the `vllm` command, on this Python


def llmbench(*args: str, log: Path) -> int:
    with log.open("a") as f:
        return subprocess.call([sys.executable, "-m", "llmbench", "serve-bench", *args], stdout=f, stderr=f)


def vllm_bench(url: str, tok: Path, out: Path, name: str, log: Path) -> int:
    """vLLM's own client on the same server and load (random prompts of the same lengths, ignore_eos)."""
    with log.open("a") as f:
        return subprocess.call([
            sys.executable, "-c", VLLM_CLI, "bench", "serve", "--backend", "openai",
            "--base-url", url, "--endpoint", "/v1/completions", "--model", PRESET, "--tokenizer", str(tok),
            "--dataset-name", "random", "--random-input-len", str(INPUT), "--random-output-len", str(OUTPUT),
            "--num-prompts", str(N), "--max-concurrency", str(SIDE_BY_SIDE_CONCURRENCY), "--request-rate", "inf",
            "--ignore-eos", "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99",
            "--save-result", "--result-dir", str(out), "--result-filename", f"{name}.json", "--disable-tqdm"],
            stdout=f, stderr=f)


def measure(url: str, tok: Path, out: Path, precision: str, log: Path, slos: tuple[str, ...] = SLOS,
            extras: bool = True, name: str = "") -> list[int]:
    """The searches under `slos`; with `extras`, the side-by-side with `vllm bench serve` and the overload."""
    shape = ["--url", url, "--model", PRESET, "--tokenizer", str(tok), "--precision", precision,
             "--input-len", str(INPUT), "--output-len", str(OUTPUT), "--out", str(out / "results")]
    common = [*shape, "-n", str(N), "--duration", str(DURATION)]
    codes = []
    for slo in slos:
        codes.append(llmbench(*common, "--slo", slo, "--search", "concurrency", "--search-start", "4",
                              "--search-top", "512", "--search-resolution", "0.15",
                              "--name", f"slo-capacity-{name or precision}", "--resume", log=log))
    if not extras:
        return codes
    codes.append(llmbench(*common, "--concurrency", str(SIDE_BY_SIDE_CONCURRENCY), "--slo", SLOS[1],
                          "--name", f"slo-side-by-side-{precision}", log=log))
    codes.append(vllm_bench(url, tok, out, f"vllm-bench-{precision}", log))
    # the saturation stop on a real server: an open-loop point far above capacity (exit 0 or 1 both fine)
    llmbench(*shape, "-n", str(OVERLOAD_N), "--duration", str(OVERLOAD_S), "--rate", str(OVERLOAD_RATE),
             "--slo", SLOS[1], "--name", f"slo-overload-{precision}", log=log)
    return codes


def vllm_server(out: Path, precision: str, work: Path) -> int:
    tok = build_offline_tokenizer(work / "tokenizer", get_preset(PRESET).vocab)
    model = write_config_dir(PRESET, work / f"model-{precision}", tok)
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
               "--tokenizer", str(tok), "--load-format", "dummy", "--served-model-name", PRESET,
               "--host", "127.0.0.1", "--port", str(PORT), "--dtype", "bfloat16", "--max-model-len", "4096",
               "--no-enable-prefix-caching", *QUANT[precision]]
    url, log = f"http://127.0.0.1:{PORT}", out / f"slo-capacity-{precision}.log"
    with ServerProcess(command, out / f"vllm-server-{precision}.log") as server:
        print(f"{precision}: vLLM server ready in {server.wait_ready(url, 900):.0f} s", flush=True)
        codes = measure(url, tok, out, precision, log)
    print(f"{precision}: exit codes {codes}", flush=True)
    return max(codes)


def sglang_server(out: Path, work: Path) -> int:
    """SGLang's server (bf16) on the same load, where sglang imports; otherwise why not, in the log."""
    if importlib.util.find_spec("sglang") is None:
        print("sglang: not importable here (not installed: see /work/shared/gpu/README.md, 'Bringing SGLang'); "
              "its server was not run", flush=True)
        return 0
    from llmbench.engines.served import ServerSite
    from llmbench.engines.sglang import SGLangEngine, SGLangOptions

    tok = build_offline_tokenizer(work / "tokenizer", get_preset(PRESET).vocab)
    model = write_config_dir(PRESET, work / "model-sglang", tok)
    # its own port: the url is a param, so SGLang's points are cases of their own, never pooled with vLLM's
    site = ServerSite(host="127.0.0.1", port=PORT + 1, model=PRESET, tokenizer_dir=str(tok), model_dir=str(model),
                      python=sys.executable, precision="bf16")
    server = SGLangEngine(SGLangOptions(name="sglang", context_length=4096)).server(site, out / "sglang-server.log")
    print("sglang: command:", " ".join(server.command), flush=True)
    with server:
        print(f"sglang: server ready in {server.wait_ready(site.url, 900):.0f} s", flush=True)
        codes = measure(site.url, tok, out, "bf16", out / "slo-capacity-sglang.log", slos=SLOS[1:], extras=False,
                        name="sglang")
    return max(codes)


def summary(out: Path) -> None:
    """Each capacity with its interval, and the side-by-side TTFT/TPOT, one line each."""
    from llmbench.results import load

    for path in sorted((out / "results").glob("*/slo-*.json")):
        for c in load(path).cases:
            for name in ("capacity_concurrency", "capacity_rate"):
                if name in c.metrics:
                    m = c.metrics[name]
                    ci = m.stats.ci if m.stats else None
                    print(path.name, c.params.get("limits"), name, m.value, ci and [ci.lo, ci.hi, ci.level], m.flags)
            if path.name.startswith("slo-overload"):
                print(path.name, "rate", c.params.get("rate"), "saturated:", c.info.get("saturated"),
                      "sent", c.info.get("requests_sent"), "status", c.status)
            if c.params.get("concurrency") and "ttft_ms" in c.metrics:
                print(path.name, "llmbench", {k: round(c.metrics[k].value, 2) for k in ("ttft_ms", "tpot_ms")
                                              if k in c.metrics})
    for path in sorted(out.glob("vllm-bench-*.json")):
        got = json.loads(path.read_text())
        print(path.name, "vllm bench serve", {k: round(got[k], 2) for k in ("median_ttft_ms", "median_tpot_ms",
                                                                              "request_throughput") if k in got})


def main() -> int:
    out, targets = Path(sys.argv[1]), sys.argv[2:] or ["bf16", "fp8", "sglang"]
    out.mkdir(parents=True, exist_ok=True)
    bad = [t for t in targets if t not in (*QUANT, "sglang")]
    if bad:
        sys.exit(f"unknown target {bad[0]!r}; valid: {', '.join((*QUANT, 'sglang'))}")
    codes = []
    for t in targets:
        with tempfile.TemporaryDirectory(prefix="llmbench-slo-") as work:
            codes.append(sglang_server(out, Path(work)) if t == "sglang" else vllm_server(out, t, Path(work)))
    summary(out)
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
