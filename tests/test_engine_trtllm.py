"""TensorRT-LLM without TensorRT-LLM: what its engine does before and around the library (build
settings, the engine cache and its refusal of foreign engines, trtllm-bench files) and how its
cases are skipped where it is not installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmbench.engines.base import CaseSize, InferenceOptions, LoadOptions
from llmbench.engines.trtllm import (
    RECORD,
    EngineKey,
    TRTLLMEngine,
    build_settings,
    cached_engine,
    parse_bench_report,
    write_bench_dataset,
    write_record,
)
from llmbench.errors import UserError
from llmbench.precision import DeviceInfo
from llmbench.suite import case_from
from tests.fixtures.trtllm_bench_report import REPORT

H200 = DeviceInfo("cuda", "NVIDIA H200", (9, 0), 139.8)
CPU = DeviceInfo("cpu", "CPU test")


def key(gpu: str = "NVIDIA H200", precision: str = "fp8") -> EngineKey:
    return EngineKey("llama-3-8b", precision, gpu, "0.21.0", 8, 256)


def test_build_settings_follow_the_case_and_precision() -> None:
    size = CaseSize(max_batch=8, max_model_len=256, output_len=128)
    fp8 = build_settings(LoadOptions("fp8", size=size))
    assert fp8["build_config"] == {"max_batch_size": 8, "max_input_len": 128, "max_seq_len": 256,
                                   "max_num_tokens": 8192}
    assert fp8["quant"] == {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"} and fp8["dtype"] == "bfloat16"
    bf16 = build_settings(LoadOptions("bf16", size=size), tensor_parallel=2)
    assert bf16["quant"] == {} and bf16["dtype"] == "bfloat16" and bf16["tensor_parallel_size"] == 2


def test_engines_are_cached_per_gpu_model_and_version(tmp_path: Path) -> None:
    assert key().dirname() != key(gpu="NVIDIA H100 80GB HBM3").dirname()
    assert key().dirname() != key(precision="bf16").dirname()
    assert cached_engine(tmp_path, key()) is None
    path = tmp_path / key().dirname()
    path.mkdir()
    (path / "rank0.engine").write_bytes(b"x" * 1000)
    record = write_record(path, key(), 12.5)
    assert record["engine_bytes"] == 1000 and record["build_s"] == 12.5
    assert cached_engine(tmp_path, key()) == path


def test_an_engine_built_on_another_gpu_model_is_refused(tmp_path: Path) -> None:
    """An engine directory copied from an H100 machine under the H200's key is not run."""
    path = tmp_path / key().dirname()
    path.mkdir()
    write_record(path, key(gpu="NVIDIA H100 80GB HBM3"), 1.0)
    with pytest.raises(UserError, match=r"built for gpu 'NVIDIA H100 80GB HBM3', not 'NVIDIA H200'"):
        cached_engine(tmp_path, key())
    assert json.loads((path / RECORD).read_text())["gpu"] == "NVIDIA H100 80GB HBM3"


def test_bench_dataset_has_exact_lengths(tmp_path: Path) -> None:
    out = write_bench_dataset(tmp_path / "d.jsonl", requests=3, input_len=5, output_len=7, vocab=100)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == [0, 1, 2]
    assert all(len(r["input_ids"]) == 5 and r["output_tokens"] == 7 for r in rows)
    assert all(0 <= t < 100 for r in rows for t in r["input_ids"])


def test_bench_report_maps_to_llmbench_metrics() -> None:
    metrics, info = parse_bench_report(REPORT)
    assert metrics == {"e2e_ms": 1900.0, "output_tokens_per_s": 512.0, "ttft_ms": 30.0, "tpot_ms": 14.7}
    assert info["trtllm_quantization"] == "FP8" and info["gpu"] == "NVIDIA H200"
    no_stream = {k: v for k, v in REPORT.items() if k != "streaming_metrics"}
    assert "ttft_ms" not in parse_bench_report(no_stream)[0]
    with pytest.raises(ValueError, match="performance"):
        parse_bench_report({"engine": {}})


def test_missing_trtllm_skips_with_the_install_command() -> None:
    case = case_from("generate", {"model": "tiny-llama", "engine": {"name": "trtllm", "mode": "compiled"},
                                  "precision": "fp8"})
    why = case.scenario_obj().skip_reason(case.params, H200)
    assert why is not None and "pip install tensorrt-llm --extra-index-url https://pypi.nvidia.com" in why


def test_trtllm_needs_a_gpu_and_declares_request_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TRTLLMEngine, "missing_reason", classmethod(lambda cls: None))
    engine = TRTLLMEngine(InferenceOptions(name="trtllm", mode="compiled"))
    why = engine.unsupported_reason(LoadOptions("bf16"), CPU)
    assert why is not None and "NVIDIA GPU" in why
    assert engine.unsupported_reason(LoadOptions("fp8"), H200) is None
    assert "not yet run" in TRTLLMEngine.description
