"""generate end to end on the CPU, through the case worker and the same code path as on a GPU:
a tiny random Llama, every precision that runs on a CPU, eager and compiled."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
import torch

from llmbench.engines.base import LoadOptions, ModelRef
from llmbench.engines.hf import HFEngine, HFOptions, HFSession, gpu_compile_options
from llmbench.hardware.specs import lookup
from llmbench.harness.worker import run_case
from llmbench.measure.timing import StopRule
from llmbench.models.build import synthetic_ids
from llmbench.models.presets import get_preset
from llmbench.precision import PRECISIONS, DeviceInfo, unsupported_reason
from llmbench.scenarios import generate as gen

CPU_DEV = gen.DeviceInfo("cpu", "CPU test")
CPU_PRECISIONS = [p for p in PRECISIONS if unsupported_reason(p, CPU_DEV) is None or p == "int8"]
SETTINGS = {"warmup_iters": 1, "min_iters": 2, "min_seconds": 0.0}
TIMING = (
    "ttft_ms",
    "tpot_ms",
    "e2e_ms",
    "prefill_tokens_per_s",
    "decode_tokens_per_s",
    "output_tokens_per_s",
)
ACCURACY = ("logits_rel_error", "kl_divergence", "top1_agreement")


CPU = DeviceInfo("cpu", "CPU")


def tiny_session(mode: str = "eager") -> HFSession:
    return HFEngine(HFOptions(name="hf", mode=mode)).load(ModelRef(model="tiny-llama"), LoadOptions(), CPU)

def run(**params: Any) -> dict[str, Any]:
    from llmbench.suite import case_from

    return run_case(case_from("generate", {"model": "tiny-llama", **params}, SETTINGS).worker_spec("cpu"))


@pytest.mark.slow
@pytest.mark.parametrize("precision", CPU_PRECISIONS)
def test_every_cpu_precision_runs_eager(precision: str) -> None:
    r = run(precision=precision, batch_size=2, input_len=6, output_len=4)
    if precision == "int8" and importlib.util.find_spec("torchao") is None:
        assert r["status"] == "skipped" and "pip install torchao" in r["reason"]
        return
    assert r["status"] == "ok", r.get("traceback")
    m = r["metrics"]
    n = len(m["e2e_ms"]["samples"])
    assert n >= SETTINGS["min_iters"]
    for name in TIMING:
        assert len(m[name]["samples"]) == n and m[name]["value"] > 0
    assert len(m["itl_ms"]["samples"]) == n * (4 - 1)
    # honest intervals: a 95% one only from 6 samples on, the coverage reached always stated
    for name in (*TIMING, "itl_ms"):
        st = m[name]["stats"]
        assert st["n"] == len(m[name]["samples"]) and st["ci_method"] == "order statistic"
        assert (st["ci95"] is None) == (st["n"] < 6)
        assert (st["ci"]["level"] >= 0.95) == (st["n"] >= 6)
    # TPOT is (E2E - TTFT) / (N - 1) sample by sample
    for e2e, ttft, tpot in zip(m["e2e_ms"]["samples"], m["ttft_ms"]["samples"], m["tpot_ms"]["samples"], strict=True):
        assert tpot == pytest.approx((e2e - ttft) / 3, rel=1e-4)  # samples are stored rounded
    assert m["compile_s"]["value"] > 0
    if precision == gen.REFERENCE:
        assert not set(ACCURACY) & set(m)
    else:
        assert 0.0 <= m["top1_agreement"]["value"] <= 1.0
        assert 0.0 <= m["logits_rel_error"]["value"] < 0.5  # a real comparison, not a mismatch of weights
        assert m["kl_divergence"]["value"] >= 0.0
    assert r["info"]["params"] == 4456448


@pytest.mark.parametrize("precision", [p for p in PRECISIONS if p not in CPU_PRECISIONS])
def test_gpu_precisions_are_skipped_on_the_cpu_worker(precision: str) -> None:
    r = run(precision=precision)
    assert r["status"] == "skipped" and r["reason"]


@pytest.mark.slow
@pytest.mark.xdist_group("tiny_llama_bf16_compile")  # beside test_code_path.py's compilation of this graph
def test_compiled_mode_compiles_and_measures() -> None:
    r = run(precision="bf16", mode="compiled", batch_size=1, input_len=4, output_len=3)
    assert r["status"] == "ok", r.get("traceback")
    assert r["metrics"]["compile_s"]["value"] > 0
    assert len(r["metrics"]["itl_ms"]["samples"]) == 2 * len(r["metrics"]["e2e_ms"]["samples"])
    assert r["info"]["compile_options"] == {}  # plain inductor on a CPU: no CUDA graphs, no tuning


@pytest.mark.slow
def test_roofline_path_records_efficiency_and_flags_far_below(monkeypatch: pytest.MonkeyPatch) -> None:
    # The CPU has no spec; give it an H100's so the GPU-side roofline code runs here. A tiny model
    # on a CPU is far below an H100 bound, so the flag must appear (GPU busy time: unknown).
    monkeypatch.setattr(gen, "_spec_for", lambda device: lookup("h100-sxm-80gb"))
    r = run(precision="bf16", batch_size=1, input_len=4, output_len=3)
    assert r["status"] == "ok", r.get("traceback")
    eff = r["metrics"]["roofline_efficiency"]
    assert len(eff["samples"]) == len(r["metrics"]["e2e_ms"]["samples"])
    assert 0 < eff["value"] < 0.5 and "roofline bound" in eff["flags"][0]
    assert r["info"]["decode_bound_by"] == "memory" and r["info"]["gpu_spec"] == "h100-sxm-80gb"
    assert r["info"]["cpu_ms_per_step"] > 0


def test_generation_is_forced_to_the_requested_length_even_past_eos() -> None:
    session = tiny_session()
    ids = synthetic_ids(session.vocab_size, 1, 5, "cpu")
    first = int(session.logits(ids)[0, -1].argmax())
    session.model.config.eos_token_id = first  # greedy decoding would stop at once on this EOS
    session.model.generation_config.eos_token_id = first
    session.prepare(6)
    stamps: list[int] = []
    assert session.generate(ids, on_token=lambda: stamps.append(1)).tokens == 6
    assert len(stamps) == 6  # one timestamp per generated token
    stamps.clear()
    assert session.generate(ids, on_token=lambda: stamps.append(1), tokens=3).tokens == 3  # a short diagnostic run
    assert len(stamps) == 3
    assert session.generate(ids).tokens == 6  # the prepared length is untouched


@pytest.mark.slow
def test_compiled_static_loop_generates_what_generate_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled mode's own greedy loop (static cache, compiled step) must emit exactly the tokens
    transformers' generate() emits for the same weights and prompt, with the compiled mode's fused
    projections. In fp32: a tiny random model in bf16 has exact ties between top logits, which
    compiled and eager kernels break differently on different CPUs."""
    reference = tiny_session()
    reference.convert("fp32")
    assert reference.fused_groups == 0
    ids = synthetic_ids(reference.vocab_size, 2, 7, "cpu")
    reference.prepare(6)
    ref = reference.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                   generation_config=reference._gen_config)[:, 7:]
    session = tiny_session("compiled")
    session.convert("fp32")
    assert session.fused_groups == 2 * session.model.config.num_hidden_layers
    session.prepare(6)
    # a setting given by the environment is torch's default in the process: the path records it as given
    monkeypatch.setenv("TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER", "0")
    assert session.generate(ids).tokens == 6
    assert session.compiled()
    assert torch.equal(session._static.last_tokens, ref)
    environment = session.code_path()["compile"]["environment"]
    assert environment["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] == "0"
    from torch._dynamo.utils import counters

    graphs = counters["stats"]["unique_graphs"]
    assert session.generate(ids, tokens=4).tokens == 4  # a shorter run reuses the cache and the compiled graph
    assert torch.equal(session._static.last_tokens, ref[:, :4])
    assert counters["stats"]["unique_graphs"] == graphs  # no recompilation


@pytest.fixture
def process_settings_restored() -> Any:
    """torchao's quantize_ sets inductor settings for the whole process: put them back after the test."""
    from torch._inductor import config

    from llmbench.engines.hf import KERNEL_SETTINGS

    values = config.get_config_copy()
    with config.patch({k: values[k] for k in KERNEL_SETTINGS if k in values}):
        yield


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("torchao") is None, reason="int8 weight-only needs torchao")
def test_compiled_int8_session_carries_its_precision_to_the_compile_options(process_settings_restored: None) -> None:
    """The session tells the compiled loop how its weights are stored (the GPU's batched int8 options
    differ), and inductor accepts the batched int8 options (CUDA graphs aside, which need a GPU)."""
    session = tiny_session("compiled")
    session.convert("int8")
    session.prepare(4)
    assert session._static.precision == "int8"
    session._static.compile_options = {
        k: v for k, v in gpu_compile_options(2, "int8").items() if k != "triton.cudagraphs"
    }
    ids = synthetic_ids(session.vocab_size, 2, 5, "cpu")
    assert session.generate(ids).tokens == 4
    assert session.compiled()
    assert session.info()["compile_options"] == {"pattern_matcher": False}
    # torchao's quantize_ tuned every kernel of the process (set_inductor_config=True): the path says so
    settings = session.code_path()["compile"]["process_settings"]
    assert settings["coordinate_descent_tuning"] is True
    assert settings["coordinate_descent_check_all_directions"] is True


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("torchao") is None, reason="int8 weight-only needs torchao")
def test_library_kernel_settings_off_undoes_what_the_quantizer_set(process_settings_restored: None) -> None:
    """With the engine option off, a case compiles with none of torchao's process-wide settings and its
    path says they were undone; with it on (the default) they stand. Only the off case has a new id."""
    from torch._inductor import config

    from llmbench.engines.hf import KERNEL_SETTINGS, inductor_settings_not_default
    from llmbench.suite import case_from

    compiled = {"name": "hf", "mode": "compiled"}
    # as in a case's own process: torch's defaults (an earlier in-process torchao test moved them)
    config.load_config({k: config._config[k].default for k in KERNEL_SETTINGS if k in config._config})
    r = run(precision="int8", engine={**compiled, "library_kernel_settings": False}, input_len=4, output_len=3)
    assert r["status"] == "ok", r.get("error")
    assert "process_settings" not in r["code_path"]["compile"]
    assert r["code_path"]["compile"]["library_settings"].startswith("undone")
    assert inductor_settings_not_default() == {}
    engine = HFEngine(HFOptions(name="hf", mode="compiled"))
    kept = engine.load(ModelRef(model="tiny-llama"), LoadOptions("int8"), CPU)
    assert inductor_settings_not_default()["coordinate_descent_check_all_directions"] is True
    assert not kept.library_settings_undone
    def case_id(**option: bool) -> str:
        return case_from("generate", {"model": "tiny-llama", "engine": {**compiled, **option}}).id

    assert case_id(library_kernel_settings=True) == case_id() != case_id(library_kernel_settings=False)


def test_a_compiled_bf16_session_records_no_process_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing set for the whole process, nothing recorded (bf16's path stays as committed sets hold it);
    a setting code moved from its default is recorded (one the environment gave is the default there:
    `compile.environment` holds those)."""
    from torch._inductor import config

    from llmbench.engines.hf import inductor_settings_not_default

    with config.patch({k: config._config[k].default for k in ("coordinate_descent_tuning", "max_autotune",
                                                                "coordinate_descent_check_all_directions")}):
        assert "coordinate_descent_tuning" not in inductor_settings_not_default()
        with config.patch(coordinate_descent_tuning=True):
            assert inductor_settings_not_default()["coordinate_descent_tuning"] is True


def test_a_short_generation_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    session = tiny_session()
    session.prepare(5)
    ids = synthetic_ids(session.vocab_size, 1, 3, "cpu")
    monkeypatch.setattr(session.model, "generate", lambda input_ids, **kw: torch.cat([input_ids, input_ids], 1))
    with pytest.raises(RuntimeError, match="generated 3 tokens per sequence; 5 were requested"):
        session.generate(ids)


def test_quantization_leaves_lm_head_at_activation_precision(process_settings_restored: None) -> None:
    from llmbench.engines.hf_quant import APPLY, apply_precision

    assert set(APPLY) == set(PRECISIONS)
    with pytest.raises(KeyError, match="valid"):
        apply_precision(torch.nn.Linear(2, 2), "int3")
    session = tiny_session()
    session.convert("fp16")
    assert session.model.lm_head.weight.dtype == torch.float16
    if importlib.util.find_spec("torchao") is not None:
        session = tiny_session()
        session.convert("int8")
        q = session.model.model.layers[0].self_attn.q_proj.weight
        assert "Int8" in type(q).__name__
        assert type(session.model.lm_head.weight) is torch.nn.Parameter


FAKE_ENGINE = "tests.plugins.fake_engine"


@pytest.mark.slow
def test_an_engine_defined_outside_the_package_runs_generate_through_the_harness(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request-level engine from a plugin (tests/plugins/fake_engine.py) runs the unchanged generate
    scenario in a case process: request-level TTFT/TPOT, no ITL, the timing kind said in the case,
    and no accuracy metrics, since it declares no logits."""
    import os

    from llmbench.engines.base import ENGINES
    from llmbench.harness.runner import RunOptions, run_suite
    from llmbench.registry import PLUGINS_ENV
    from llmbench.results import load
    from llmbench.suite import load_suite

    root = str(__import__("pathlib").Path(__file__).resolve().parent.parent)
    monkeypatch.setenv(PLUGINS_ENV, FAKE_ENGINE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    ENGINES._loaded = False
    suite = tmp_path / "fake.toml"
    suite.write_text(
        'name = "fake-engine"\n[defaults]\nmodel = "tiny-llama"\nengine = "fake-requests"\n'
        "warmup_iters = 1\nmin_iters = 3\nmin_seconds = 0\n"
        '[[case]]\nscenario = "generate"\nmatrix.precision = ["bf16", "fp8"]\nbatch_size = 2\n'
        "input_len = 4\noutput_len = 5\n"
    )
    s = load_suite(str(suite))
    rs = load(run_suite(s, s.cases, RunOptions(out_dir=tmp_path / "out", device="cpu")))
    assert [c.status for c in rs.cases] == ["ok", "ok"], [c.reason or c.traceback for c in rs.cases]
    for case in rs.cases:
        assert {"ttft_ms", "tpot_ms", "e2e_ms", "decode_tokens_per_s"} <= set(case.metrics)
        assert "itl_ms" not in case.metrics and "logits_rel_error" not in case.metrics
        assert case.info["timing"].startswith("request-level")
        assert len(case.metrics["tpot_ms"].samples or []) == 2 * len(case.metrics["ttft_ms"].samples or [])
        assert case.metrics["ttft_ms"].value < case.metrics["e2e_ms"].value
    assert rs.cases[1].info["accuracy_reference"].startswith("not measured")


def test_the_inductor_environment_leaves_out_the_caches_the_runner_sets() -> None:
    from llmbench.measure import compile_cache

    runner = compile_cache.cache_env("/tmp/run-cache", {})
    given = {**runner, "TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER": "0", "PATH": "/bin"}
    assert compile_cache.inductor_environment(given) == {"TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER": "0"}
    assert compile_cache.inductor_environment(runner) == {}


def test_a_tensor_parallel_case_is_read_against_the_roof_of_every_gpu_it_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same TPOT on two GPUs is half the efficiency of one GPU's: the roofline of a sharded model is the
    GPUs' together (a 70B TP2 case read 1.12 against one GPU's roof)."""
    from types import SimpleNamespace

    from llmbench.scenarios.base import CaseContext
    from llmbench.suite import case_from

    monkeypatch.setattr(gen, "_spec_for", lambda device: lookup("h200-sxm-141gb"))
    step = [SimpleNamespace(tpot_ms=10.0, ttft_ms=50.0)]
    eff, info = {}, {}
    for gpus in (1, 2):
        case = case_from("generate", {"model": "llama-3-8b", "engine": {"name": "vllm"}, "placement": {"gpus": gpus}})
        scenario, params = case.scenario_obj(), case.params
        ctx = CaseContext(DeviceInfo("cuda", "NVIDIA H200", (9, 0), 139.8), StopRule(), emit_progress=False)
        scenario._roofline(params, ctx, get_preset("llama-3-8b").shape(), step, 0.1, None)
        eff[gpus], info[gpus] = ctx.metrics["roofline_efficiency"].value, ctx.info
    assert eff[2] == pytest.approx(eff[1] / 2)
    assert info[2]["bandwidth_tb_s"] == pytest.approx(2 * info[1]["bandwidth_tb_s"])
    assert "x2 GPUs (tensor parallel)" in info[2]["bandwidth_source"]
