"""The case process builds the engine a case names and hands it to the scenario, as the interface the
scenario declares (Scenario.engine_slot); a scenario without one gets none, and an engine of the wrong
kind is a params error that names the valid ones."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

import tests.plugins.fake_engine  # noqa: F401 - registers the request-level engine "fake-requests"
from llmbench.engines.base import ENGINES, InferenceEngine, TrainingEngine, engine_class
from llmbench.harness.worker import run_case
from llmbench.scenarios.base import SCENARIOS, CaseContext, EngineSlot, Scenario, ScenarioParams


class ProbeParams(ScenarioParams):
    runner: str | None = None


@SCENARIOS.register("engine_probe")
class EngineProbe(Scenario):
    """test-only: records the engine it was handed (its param is not called `engine`)."""

    Params = ProbeParams
    engine_slot = EngineSlot(InferenceEngine, param="runner")

    def run(self, params: Any, ctx: CaseContext) -> None:
        ctx.info["engine"] = type(ctx.engine(InferenceEngine)).name if params.runner else None
        if not params.runner:
            ctx.engine(InferenceEngine)  # nothing was handed: says so


def probe(**params: Any) -> dict[str, Any]:
    return run_case({"scenario": "engine_probe", "params": params, "device": "cpu",
                     "settings": {"warmup_iters": 0, "min_iters": 1}})


def test_the_case_process_hands_the_named_engine_to_the_scenario() -> None:
    out = probe(runner="fake-requests")
    assert out["status"] == "ok", out
    assert out["info"]["engine"] == "fake-requests"


def test_a_case_that_names_no_engine_is_handed_none() -> None:
    out = probe()
    assert out["status"] == "failed" and "handed no inference engine" in out["reason"]
    assert EngineProbe().build_engine(ProbeParams()) is None


def test_an_engine_lists_the_interfaces_it_implements() -> None:
    assert ENGINES.get("hf").kinds() == ["inference engine", "training engine"]
    assert ENGINES.get("vllm").kinds() == ["inference engine", "served engine"]
    assert ENGINES.get("fake-requests").kinds() == ["inference engine"]


def test_an_engine_of_the_wrong_kind_names_the_valid_ones() -> None:
    assert engine_class("hf", TrainingEngine) is ENGINES.get("hf")
    with pytest.raises(ValueError, match="'fake-requests' is no training engine; valid training engines: hf"):
        engine_class("fake-requests", TrainingEngine)
    with pytest.raises(ValueError, match=r"unknown engine 'tgi'; valid inference engines: .*hf.*vllm"):
        engine_class("tgi", InferenceEngine)
    from llmbench.scenarios.qlora import QLoRAParams

    with pytest.raises(ValidationError, match="no training engine"):
        QLoRAParams(engine="fake-requests")


def test_training_scenarios_are_handed_a_training_engine() -> None:
    from llmbench.scenarios.fp8_train import FP8Train, FP8TrainParams
    from llmbench.scenarios.qlora import QLoRA, QLoRAParams

    for scenario, params in ((QLoRA(), QLoRAParams()), (FP8Train(), FP8TrainParams())):
        assert isinstance(scenario.build_engine(params), TrainingEngine)
