"""generate: parameters and their errors, per-token arithmetic on known timestamps, skip reasons."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from pydantic import ValidationError

from llmbench.engines.base import ENGINES
from llmbench.errors import SuiteError
from llmbench.measure.timing import StopRule
from llmbench.models.presets import PRESETS
from llmbench.precision import DeviceInfo
from llmbench.scenarios.generate import GenerateParams, TokenClock, token_metrics
from llmbench.suite import case_from

CPU = DeviceInfo("cpu", "CPU test")
H100 = DeviceInfo("cuda", "NVIDIA H100 80GB HBM3", (9, 0), 79.2)
A100 = DeviceInfo("cuda", "NVIDIA A100-SXM4-80GB", (8, 0), 79.2)


def P(**kw: object) -> GenerateParams:
    return GenerateParams.model_validate({"model": "tiny-llama", **kw})


def skip(device: DeviceInfo, **kw: object) -> str | None:
    """The skip reason of a generate case written as a suite's keys (its engine's included)."""
    c = case_from("generate", {"model": "tiny-llama", **kw})
    return c.scenario_obj().skip_reason(c.params, device)


def estimate(**kw: object) -> float:
    c = case_from("generate", {"model": "tiny-llama", **kw})
    return c.scenario_obj().estimate_s(c.params, StopRule())


# -- per-token arithmetic ---------------------------------------------------------------------


def test_token_metrics_on_known_timestamps() -> None:
    t = token_metrics(0.0, [0.100, 0.120, 0.140, 0.160], 0.165, batch=2, input_len=10)
    assert t.ttft_ms == pytest.approx(100.0)
    assert t.e2e_ms == pytest.approx(165.0)
    assert t.tpot_ms == pytest.approx((165.0 - 100.0) / 3)
    assert t.itl_ms == pytest.approx([20.0, 20.0, 20.0])
    assert t.prefill_tokens_per_s == pytest.approx(2 * 10 / 0.1)
    assert t.decode_tokens_per_s == pytest.approx(2 * 3 / 0.065)
    assert t.output_tokens_per_s == pytest.approx(2 * 4 / 0.165)


def test_token_metrics_offset_start_and_uneven_gaps() -> None:
    t = token_metrics(5.0, [5.5, 5.6, 5.9], 6.0, batch=1, input_len=4)
    assert t.ttft_ms == pytest.approx(500.0)
    assert t.itl_ms == pytest.approx([100.0, 300.0])
    assert t.tpot_ms == pytest.approx(250.0)


def test_token_metrics_refuses_what_it_cannot_define() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        token_metrics(0.0, [0.1], 0.2, batch=1, input_len=1)
    with pytest.raises(ValueError, match="out of order"):
        token_metrics(1.0, [0.5, 0.6], 0.7, batch=1, input_len=1)


def test_cpu_token_clock_gives_seconds_since_each_begin() -> None:
    clock = TokenClock(cuda=False)
    for _ in range(3):
        clock.begin()
        clock.stamp()
        clock.stamp()
        clock.end()
    runs = clock.seconds(2)
    assert len(runs) == 2
    for r in runs:
        assert len(r) == 4 and r[0] == 0.0 and r == sorted(r)
    assert clock.seconds(0) == []


# -- parameters ---------------------------------------------------------------------------------


def test_defaults_and_pretrained_implies_pretrained_weights() -> None:
    c = case_from("generate", {"model": "tiny-llama"})
    assert c.engine is not None and (c.engine.name, c.engine.mode) == ("hf", "eager")  # type: ignore[attr-defined]
    assert (c.params.precision, c.params.weights) == ("bf16", "random")
    q = GenerateParams.model_validate({"pretrained": "org/model"})
    assert q.weights == "pretrained"
    r = GenerateParams.model_validate({"pretrained": "org/model", "weights": "random"})
    assert r.weights == "random"


def _error(**kw: object) -> str:
    with pytest.raises(ValidationError) as e:
        GenerateParams.model_validate(kw)
    return str(e.value)


def test_unknown_model_names_the_valid_presets() -> None:
    msg = _error(model="llama-4-1t")
    assert "llama-4-1t" in msg
    assert all(name in msg for name in PRESETS)


def suite_error(**kw: object) -> str:
    with pytest.raises(SuiteError) as e:
        case_from("generate", {"model": "tiny-llama", **kw})
    return str(e.value)


def test_unknown_precision_engine_mode_and_keys_are_errors() -> None:
    assert "nf4" in _error(model="tiny-llama", precision="int3")
    msg = suite_error(engine="tgi")
    assert all(name in msg for name in ("hf", "vllm", "trtllm"))
    assert "compiled" in suite_error(engine={"name": "hf", "mode": "graph"})
    assert "compiled" in suite_error(mode="graph")  # the old spelling, validated the same
    assert "valid keys: mode, tensor_parallel, fuse" in suite_error(engine={"name": "hf", "fusion": False})
    assert "fuse = false applies to mode = 'compiled'" in suite_error(engine={"name": "hf", "fuse": False})
    assert "extra" in _error(model="tiny-llama", temperature=0.7).lower()


def test_impossible_combinations_are_errors() -> None:
    assert "exactly one" in _error()
    assert "exactly one" in _error(model="tiny-llama", pretrained="org/model")
    assert "needs pretrained" in _error(model="tiny-llama", weights="pretrained")
    assert "greater than or equal to 2" in _error(model="tiny-llama", output_len=1)
    assert "1024 positions" in _error(model="gpt2-medium", input_len=1000, output_len=128)
    assert "batch_size" in _error(model="tiny-llama", batch_size=0)


# -- skip reasons and estimates ---------------------------------------------------------------


@pytest.mark.parametrize("precision", ["tf32", "fp8", "fp8-wo", "int4", "nf4", "fp4", "llm-int8"])
def test_gpu_only_precisions_are_skipped_on_the_cpu(precision: str) -> None:
    reason = skip(CPU, precision=precision)
    assert reason is not None and "no CUDA GPU" in reason


def test_fp8_needs_hopper_or_ada() -> None:
    reason = skip(A100, precision="fp8")
    assert reason is not None and "8.9" in reason and "8.0" in reason


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_absent_engines_are_skipped_with_the_install_command(engine: str) -> None:
    cls = ENGINES.get(engine)
    reason = skip(H100, engine=engine)
    assert reason is not None
    if cls.missing_reason() is not None:
        assert "pip install" in reason and engine in reason
    else:  # installed: still no numbers from an engine llmbench does not drive
        assert "does not drive" in reason


def test_a_model_too_big_for_the_gpu_is_skipped_with_sizes() -> None:
    reason = skip(H100, model="llama-3-70b")
    assert reason is not None and "131 GiB" in reason and "79 GiB" in reason
    assert skip(H100, model="llama-3-8b") is None
    fp32 = skip(H100, model="llama-3-8b", precision="fp32")
    assert fp32 is None  # 30 GiB


def test_torchao_precisions_need_torchao() -> None:
    reason = skip(CPU, precision="int8")
    if importlib.util.find_spec("torchao") is None:
        assert reason is not None and "pip install torchao" in reason
    else:
        assert reason is None


def test_estimate_grows_with_model_and_compilation() -> None:
    tiny = estimate()
    big = estimate(model="llama-3-70b", batch_size=32, input_len=2048)
    compiled = estimate(engine={"name": "hf", "mode": "compiled"})
    assert 0 < tiny < big and compiled > tiny


def test_importing_the_scenario_and_engines_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import llmbench.scenarios.generate, llmbench.engines.hf, llmbench.engines.hf_quant\n"
        "import llmbench.engines.vllm, llmbench.engines.trtllm, llmbench.hardware.roofline\n"
        "from llmbench.engines.base import ENGINES; ENGINES.names()\n"
        "bad = [m for m in ('torch', 'transformers', 'torchao', 'bitsandbytes') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_compile_options_tune_matvecs_at_batch_one_only() -> None:
    """Coordinate-descent tuning is what makes inductor turn a one-row matmul into its own tuned
    reduction; from batch 2 the matmuls stay with cuBLAS, and tuning would cost compile time only."""
    from llmbench.engines.hf import GPU_COMPILE_OPTIONS, gpu_compile_options

    assert gpu_compile_options(1) == GPU_COMPILE_OPTIONS
    assert gpu_compile_options(1)["coordinate_descent_tuning"] is True
    for batch in (2, 8, 32):
        assert "coordinate_descent_tuning" not in gpu_compile_options(batch)
        assert gpu_compile_options(batch)["triton.cudagraphs"] is True


def test_batched_int8_compiles_without_the_rewrite_to_the_plain_int8_kernel() -> None:
    """From batch 2, inductor's pattern matcher rewrites torchao's int8 weight-only linear into
    aten._weight_int8pack_mm, a plain fp32 CUDA kernel (20x slower than the bf16 step on an H100):
    batched int8 compiles with the matcher off; other precisions, and batch 1, keep it."""
    from llmbench.engines.hf import GPU_COMPILE_OPTIONS, gpu_compile_options

    assert gpu_compile_options(1, "int8") == GPU_COMPILE_OPTIONS
    for batch in (2, 8, 32):
        assert gpu_compile_options(batch, "int8") == {"triton.cudagraphs": True, "pattern_matcher": False}
        for precision in ("bf16", "fp8", "fp8-wo", "int4", "nf4"):
            assert "pattern_matcher" not in gpu_compile_options(batch, precision)

