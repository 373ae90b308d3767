"""A recorded case read back as its parts (analysis/recorded.py): the engine and GPUs it ran on, typed
where its set records them (schema 3) and however its params spell them otherwise, and what its
scenario reads of it, also for records no case of this llmbench would make (a published figure, a
plugin's scenario)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from llmbench.analysis.recorded import recorded
from llmbench.hardware.specs import lookup
from llmbench.results import CaseResult, EngineRecord, PlacementRecord, ResultSet, load, save
from llmbench.suite import case_from


def rec(scenario: str, params: dict[str, Any]) -> CaseResult:
    return CaseResult(id=f"{scenario}/0", scenario=scenario, params=params, status="ok")


def test_the_engine_and_gpus_are_read_however_the_params_spell_them() -> None:
    tp = recorded(rec("generate", {"model": "llama-3-8b", "engine": "vllm", "tensor_parallel": 2}))
    assert (tp.engine, tp.gpus) == ("vllm", 2)
    ddp = recorded(rec("ddp", {"model": "tiny-llama", "gpus": 4}))
    assert (ddp.engine, ddp.gpus) == ("hf", 4)
    served = recorded(rec("serving", {"preset": "llama-3-8b", "concurrency": 4, "url": "http://127.0.0.1:8000",
                                      "n_gpus": 2}))
    assert served.engine == "url" and served.scenario is not None and served.scenario.serves_elsewhere()
    plain = recorded(rec("gemm", {"precision": "bf16", "shape": [64, 64, 64]}))
    assert (plain.engine, plain.gpus) == (None, 1)


def test_a_published_figure_is_read_as_recorded_without_a_placement() -> None:
    # an engine and a model llmbench has not, a key its scenario does not take
    fig = recorded(rec("generate", {"model": "gpt-j-6b", "engine": "trtllm-0.5", "engine_version": "0.5.0",
                                    "precision": "fp16", "input_len": 128}))
    assert fig.placement is None and fig.gpus is None and fig.engine == "trtllm-0.5"
    assert fig.params is not None and fig.params.model == "gpt-j-6b"  # type: ignore[attr-defined]
    assert fig.measures_host("ttft_ms") and not fig.measures_host("decode_tokens_per_s")
    assert fig.compute_precision() == "fp16"
    unsaid = recorded(rec("generate", {"model": "gpt-j-6b", "engine": "trtllm-0.5", "precision": "fp16"}))
    assert not unsaid.measures_host("ttft_ms")  # a figure that does not say its prompt is not called host-bound
    # a precision its scenario's params do not hold (a published fp8 training run): its precision's peak
    fp8 = recorded(rec("ddp", {"engine": "llm-foundry", "model": "mpt-1b", "gpus": 8, "precision": "fp8"}))
    assert fp8.compute_precision() == "fp8" and fp8.bound("train_tokens_per_s", lookup("h100-sxm-80gb")) == "compute"


def test_a_scenario_this_llmbench_does_not_know_answers_as_nothing_is_known() -> None:
    other = recorded(rec("not-a-scenario", {"precision": "int4", "engine": "x"}))
    assert (other.scenario, other.params, other.engine, other.gpus) == (None, None, "x", None)
    assert other.compute_precision() == "int4"
    assert other.bound("tflops", lookup("h100-sxm-80gb")) is None and not other.measures_host("ttft_ms")
    assert other.projection_skip() is None and other.capacity_load() is None


def test_a_case_result_records_its_engine_and_placement_typed_and_they_are_read_back(tmp_path: Path) -> None:
    spec = case_from("serving", {"preset": "tiny-llama", "concurrency": 2, "engine": {
        "name": "command", "command": ["serve", "--api-key", "s3cret"]}, "placement": {"gpus": 2}})
    result = CaseResult(**spec.result_fields, status="ok")
    assert result.id == spec.id and result.params == spec.params_dict  # the id and its record: as before
    assert result.engine is not None and result.engine.name == "command"
    assert "s3cret" not in json.dumps(result.engine.options) and result.engine.options["command"][0] == "serve"
    assert result.placement is not None and (result.placement.gpus, result.placement.nodes) == (2, 1)
    path = tmp_path / "s-20300101T000000Z.json"
    save(ResultSet(suite="s", cases=[result]), path)
    back = load(path).cases[0]
    assert json.loads(path.read_text())["schema_version"] == 3 and back.engine == result.engine
    assert (recorded(back).engine, recorded(back).gpus) == ("command", 2)


def test_a_case_of_a_scenario_not_installed_here_still_says_its_engine_and_gpus() -> None:
    other = CaseResult(id="plugin/0", scenario="not-installed", params={"x": 1}, status="ok",
                       engine=EngineRecord(name="my-engine"), placement=PlacementRecord(gpus=8, nodes=2))
    read = recorded(other)
    assert read.scenario is None and (read.engine, read.gpus) == ("my-engine", 8)
    assert read.placement is not None and read.placement.gpus_per_node == 4


def test_a_plugin_scenario_declaring_bounds_reads_them() -> None:
    from llmbench.scenarios.base import Scenario, ScenarioParams
    from llmbench.scenarios.reading import Reading

    with pytest.warns(DeprecationWarning, match="reading = Reading"):
        class Old(Scenario[ScenarioParams]):
            bounds: ClassVar[dict[str, str]] = {"tflops": "compute"}

            def run(self, params: ScenarioParams, ctx: Any) -> None:
                pass

    assert isinstance(Old.reading, Reading) and Old.reading.bounds == {"tflops": "compute"}
    assert Scenario.reading.bounds == {}  # the base's reading is not the plugin's


def test_a_plugin_scenario_defining_a_moved_hook_is_told_where_it_went() -> None:
    from llmbench.scenarios.base import Scenario, ScenarioParams

    with pytest.raises(TypeError, match="projection_skip: these are a Reading's now"):
        class Old(Scenario[ScenarioParams]):
            def projection_skip(self, params: ScenarioParams) -> str | None:
                return "never"

            def run(self, params: ScenarioParams, ctx: Any) -> None:
                pass
