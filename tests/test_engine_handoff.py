"""The case process builds the engine a case names (its [engine] table) and hands it to the scenario, as
the interface the scenario declares (Scenario.engine_slot); a scenario without one gets none, and an
engine of the wrong kind is one error that names the valid ones. Registries import only the module of
the entry looked up."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import tests.plugins.fake_engine  # noqa: F401 - registers the request-level engine "fake-requests"
from llmbench.engines.base import ENGINES, InferenceEngine, TrainingEngine, engine_class
from llmbench.errors import SuiteError
from llmbench.harness.worker import run_case
from llmbench.scenarios.base import SCENARIOS, CaseContext, EngineSlot, Scenario, ScenarioParams
from llmbench.suite import case_from


class ProbeParams(ScenarioParams):
    pass


@SCENARIOS.register("engine_probe")
class EngineProbe(Scenario):
    """test-only: records the engine it was handed."""

    Params = ProbeParams
    engine_slot = EngineSlot(InferenceEngine)

    def run(self, params: Any, ctx: CaseContext) -> None:
        ctx.info["engine"] = type(ctx.engine(InferenceEngine)).name


def probe(engine: dict[str, Any] | None) -> dict[str, Any]:
    return run_case({"scenario": "engine_probe", "params": {}, "engine": engine, "device": "cpu",
                     "settings": {"warmup_iters": 0, "min_iters": 1}})


def test_the_case_process_hands_the_named_engine_to_the_scenario() -> None:
    out = probe({"name": "fake-requests"})
    assert out["status"] == "ok", out
    assert out["info"]["engine"] == "fake-requests"
    spec = case_from("engine_probe", {"engine": "fake-requests"}).worker_spec("cpu")
    assert spec["engine"] == {"name": "fake-requests", "mode": "eager"}  # tensor_parallel at 1: left out


def test_a_case_that_names_no_engine_is_handed_none() -> None:
    out = probe(None)
    assert out["status"] == "failed" and "handed no inference engine" in out["reason"]
    with pytest.raises(SuiteError, match="needs an engine"):
        case_from("engine_probe", {})


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
    with pytest.raises(SuiteError, match="no training engine"):
        case_from("qlora", {"engine": "fake-requests"})


def test_training_scenarios_are_handed_a_training_engine() -> None:
    for scenario in ("qlora", "fp8_train", "trainer", "ddp"):
        case = case_from(scenario, {"model": "tiny-llama"})
        assert isinstance(case.scenario_obj().engine, TrainingEngine) and case.params_dict["engine"] == "hf"


def test_a_lookup_imports_only_its_entry() -> None:
    """The registries map a name to its module (as lm-evaluation-harness does): looking up generate and
    hf imports neither another scenario nor another engine; a listing imports them all."""
    code = (
        "import sys\n"
        "from llmbench.scenarios.base import SCENARIOS\n"
        "from llmbench.engines.base import ENGINES\n"
        "SCENARIOS.get('generate'); ENGINES.get('hf')\n"
        "assert 'llmbench.scenarios.gemm' not in sys.modules and 'llmbench.scenarios.serving' not in sys.modules\n"
        "assert 'llmbench.engines.vllm' not in sys.modules and 'llmbench.engines.trtllm' not in sys.modules\n"
        "assert 'nope' not in SCENARIOS and 'gemm' in SCENARIOS\n"
        "assert 'llmbench.scenarios.serving' not in sys.modules\n"
        "ENGINES.names(); assert 'llmbench.engines.vllm' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
