"""Served engines: vLLM's server command built from typed options (it rebuilds the packaged sweep's
command lines), the serving cases that name an engine in their [engine] table (errors name the valid
choices; the old spelling, params, gives the same case and id), and a served engine's lifecycle (start,
health, URL, stop) through a serving case."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from llmbench.engines.command import CommandServer
from llmbench.engines.served import ServerSite
from llmbench.engines.vllm import VLLMEngine, VLLMServeOptions, server_command
from llmbench.errors import SuiteError
from llmbench.harness.worker import run_case
from llmbench.precision import DeviceInfo
from llmbench.serving.server import free_port
from llmbench.suite import case_from, load_suite
from tests.plugins.fake_served import FakeServedEngine, FakeServeOptions  # registers "fake-served"

SITE = ServerSite(host="127.0.0.1", port=8123, model="llama-3-8b", tokenizer_dir="/tok", model_dir="/m",
                  python="/py")
BASE: dict[str, Any] = {"preset": "tiny-llama", "concurrency": 1}


def serve(**options: Any) -> VLLMServeOptions:
    return VLLMServeOptions(name="vllm", **options)


def test_vllm_typed_options_rebuild_the_packaged_sweeps_command_lines() -> None:
    """serving-sweep.toml's raw commands (bf16, fp8) are what engine = "vllm" with max_model_len 4096 builds."""
    suite = load_suite("serving-sweep")
    for precision in ("bf16", "fp8"):
        case = next(c for c in suite.cases if c.params.precision == precision)
        raw = CommandServer(case.engine).command(SITE)
        site = ServerSite(**{**SITE.__dict__, "precision": precision})
        assert server_command(serve(max_model_len=4096), site) == raw


def test_a_tensor_parallel_server_keeps_nvlink_multicast_off(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """vLLM picks FlashInfer's multicast all-reduce at TP > 1 unless told not to; multicast must stay off on
    shared machines (only NCCL_NVLS_ENABLE=1 lets vLLM's defaults stand)."""
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    engine = VLLMEngine(serve(tensor_parallel=2))
    cmd = engine.command(SITE)
    assert json.loads(cmd[cmd.index("--compilation-config") + 1]) == {"pass_config": {"fuse_allreduce_rms": False}}
    proc = engine.server(SITE, tmp_path / "log")
    assert proc.env is not None and proc.env["PATH"] == os.environ["PATH"]  # the environment, not only these
    assert proc.env["VLLM_FLASHINFER_ALLREDUCE_BACKEND"] == "trtllm" and proc.env["VLLM_ALLREDUCE_USE_SYMM_MEM"] == "0"
    assert "--compilation-config" not in server_command(serve(), SITE)
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    assert "--compilation-config" not in VLLMEngine(serve(tensor_parallel=2)).command(SITE)


def test_vllm_options_reach_the_command() -> None:
    cmd = server_command(serve(tensor_parallel=2, prefix_caching=True, max_num_seqs=64,
                               gpu_memory_utilization=0.9, kv_cache_dtype="fp8", enforce_eager=True), SITE)
    text = " ".join(cmd)
    assert "--no-enable-prefix-caching" not in cmd and "--max-model-len" not in cmd
    assert "--enable-prompt-tokens-details" in cmd  # usage says the cached prompt tokens
    for part in ("--tensor-parallel-size 2", "--max-num-seqs 64", "--gpu-memory-utilization 0.9",
                 "--kv-cache-dtype fp8", "--enforce-eager", "--load-format dummy"):
        assert part in text
    hub = server_command(serve(), ServerSite("h", 1, "org/model", "/tok"))
    assert hub[hub.index("--model") + 1] == "org/model" and hub[hub.index("--load-format") + 1] == "auto"


def test_data_parallel_puts_engine_copies_behind_one_endpoint_on_the_cases_gpus() -> None:
    """DP2 against TP2 at the same two GPUs: the placement's GPUs are tensor_parallel x data_parallel."""
    dp = case_from("serving", {**BASE, "engine": {"name": "vllm", "data_parallel": 2}, "placement": {"gpus": 2}})
    tp = case_from("serving", {**BASE, "engine": {"name": "vllm"}, "placement": {"gpus": 2}})
    assert dp.engine.tensor_parallel == 1 and dp.engine.data_parallel == 2  # type: ignore[union-attr]
    assert tp.engine.tensor_parallel == 2 and dp.placement.gpus == tp.placement.gpus == 2  # type: ignore[union-attr]
    assert dp.id != tp.id
    cmd = " ".join(server_command(dp.engine, SITE))  # type: ignore[arg-type]
    assert "--data-parallel-size 2" in cmd and "--tensor-parallel-size" not in cmd
    assert "--compilation-config" not in cmd  # no all-reduce between the copies: nothing multicast could fuse
    assert case_from("serving", {**BASE, "engine": {"name": "vllm", "data_parallel": 2, "tensor_parallel": 2}}
                     ).placement.gpus == 4
    assert "2 copies" in error(engine={"name": "vllm", "data_parallel": 2, "tensor_parallel": 2},
                               placement={"gpus": 2})


def error(**values: Any) -> str:
    with pytest.raises(SuiteError) as e:
        case_from("serving", {**BASE, **values})
    return str(e.value)


def test_a_serving_case_names_a_served_engine_with_typed_options() -> None:
    new = case_from("serving", {**BASE, "precision": "fp8", "engine": {"name": "vllm", "max_model_len": 512},
                                "placement": {"gpus": 2}})
    old = case_from("serving", {**BASE, "precision": "fp8", "engine": "vllm", "n_gpus": 2,
                                "engine_options": {"max_model_len": 512}})
    assert new.id == old.id and new.engine == old.engine
    engine = new.scenario_obj().engine
    assert isinstance(engine, VLLMEngine)
    assert engine.options == serve(tensor_parallel=2, max_model_len=512)
    assert new.placement.gpus == 2 and new.params_dict["n_gpus"] == 2
    assert new.params_dict["engine_options"] == {"max_model_len": 512}
    assert case_from("serving", {**BASE, "engine": "vllm"}).params.precision == "bf16"  # what the server runs
    assert "valid served engines: " in error(engine="hf") and "vllm" in error(engine="hf")
    assert "valid keys: " in error(engine={"name": "vllm", "max_len": 5}) and "max_model_len" in error(
        engine={"name": "vllm", "max_len": 5})
    assert "needs an engine" in error() and "url" in error()
    assert "tensor_parallel = 2 but placement gpus = 4" in error(
        engine={"name": "vllm", "tensor_parallel": 2}, placement={"gpus": 4})


def test_cases_without_an_engine_name_keep_their_ids() -> None:
    """A running server (`url`) and a raw command (`server`) were params: written as engines now, their
    records hold the same keys, None where unset, and so the same ids."""
    url = case_from("serving", {**BASE, "engine": {"name": "url", "url": "http://127.0.0.1:8000", "n_gpus": 4}})
    old = case_from("serving", {**BASE, "url": "http://127.0.0.1:8000", "n_gpus": 4})
    assert url.id == old.id and url.placement.gpus == 1  # the server's GPUs are elsewhere: the case holds one
    record = url.params_dict
    assert record["server"] is None and record["n_gpus"] == 4 and "engine" not in record
    cmd = case_from("serving", {**BASE, "engine": {"name": "command", "command": ["x"]}, "placement": {"gpus": 2}})
    assert cmd.id == case_from("serving", {**BASE, "server": ["x"], "n_gpus": 2}).id and cmd.placement.gpus == 2
    named = case_from("serving", {**BASE, "engine": "vllm"})
    assert named.params_dict["engine"] == "vllm" and named.id != url.id


def test_a_missing_served_engine_is_skipped_with_its_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "vllm" else object())
    case = case_from("serving", {**BASE, "engine": "vllm"})
    why = case.scenario_obj().skip_reason(case.params, DeviceInfo("cpu", "CPU test"))
    assert why is not None and "llmbench[vllm]" in why


@pytest.mark.slow
def test_a_served_engine_is_started_loaded_and_stopped_by_its_case(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A serving case naming a served engine: the case process builds it, the scenario starts it at a
    free port, waits for its health, loads it, and stops it; the engine's typed option reached the server."""
    monkeypatch.setenv("LLMBENCH_SERVING_LOGS", str(tmp_path / "logs"))
    values = {**BASE, "engine": {"name": "fake-served", "itl_ms": 5.0}, "input_len": 8, "output_len": 4,
              "num_requests": 3}
    out = run_case(case_from("serving", values).worker_spec("cpu"))
    assert out["status"] == "ok", out.get("traceback")
    assert out["metrics"]["failed_requests"]["value"] == 0
    assert out["metrics"]["tpot_ms"]["value"] >= 4.0  # the fake's 5 ms between tokens
    assert out["info"]["server_exit_code"] is not None and out["info"]["url"].startswith("http://127.0.0.1:")
    assert out["info"]["server_command"][-2:] == ["--itl-ms", "5.0"]  # the typed option, in the recorded command
    log = next((tmp_path / "logs").glob("*.log")).read_text()
    assert "Traceback" not in log


@pytest.mark.slow
def test_served_engine_lifecycle(tmp_path: Path) -> None:
    engine = FakeServedEngine(FakeServeOptions(name="fake-served"))
    site = ServerSite("127.0.0.1", free_port(), "fake", "/unused", python=sys.executable)
    engine.start(site, tmp_path / "server.log")
    try:
        assert engine.wait_ready(60) >= 0
        assert engine.url == site.url and engine.health()
    finally:
        engine.stop()
    assert not engine.health()
