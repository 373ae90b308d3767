"""A suite's placement table read strictly: TOML integers in range, keys it has (a misspelt one gets
its fix), nodes only where ranks span them, and on the CPU no more ranks than the host has cores.
Each error is one line naming the key, what was given and what is valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmbench.errors import SuiteError, UserError
from llmbench.harness.plan import cpu_ranks_reason, skip_reason
from llmbench.placement import MAX_GPUS, Placement
from llmbench.precision import DeviceInfo
from llmbench.suite import case_from, load_suite
from tests.conftest import write

CPU = DeviceInfo("cpu", "CPU test")


def suite(tmp_path: Path, placement: str, scenario: str = "gemm") -> Path:
    return write(tmp_path, f'name = "p"\n[[case]]\nscenario = "{scenario}"\nplacement = {{{placement}}}\n')


@pytest.mark.parametrize("written,needle", [
    ("gpus = 1e9", "not a decimal number (got 1000000000.0)"),
    ("gpus = 2.0", "not a decimal number (got 2.0)"),
    ("gpus = 99999999999999999999", f"out of range: valid 1..{MAX_GPUS} (got 99999999999999999999)"),
    ("gpus = 0", f"out of range: valid 1..{MAX_GPUS} (got 0)"),
    ("gpus = -2", f"out of range: valid 1..{MAX_GPUS} (got -2)"),
    ('gpus = "2"', "not a string: write it without quotes (got '2')"),
    ("gpus = true", "not true or false (got True)"),
    ("replicas = true", "not true or false (got True)"),
    ('nodes = "2"', "not a string"),
    ('exclusive = "yes"', "placement exclusive is true or false (got 'yes')"),
])
def test_a_placement_count_is_a_toml_integer_in_range(tmp_path: Path, written: str, needle: str) -> None:
    with pytest.raises(SuiteError) as e:
        load_suite(str(suite(tmp_path, written)))
    text = str(e.value)
    key = written.split()[0]
    assert f"key 'placement.{key}'" in text and needle in text, text
    assert "\n" not in text
    if key != "exclusive":
        assert f"1..{MAX_GPUS}" in text


def test_a_misspelt_placement_key_names_the_valid_keys(tmp_path: Path) -> None:
    with pytest.raises(SuiteError) as e:
        load_suite(str(suite(tmp_path, "gpu = 2")))
    text = str(e.value)
    assert "placement has no key 'gpu'; did you mean 'gpus'? its keys: gpus, exclusive, nodes, replicas" in text
    assert "\n" not in text


def test_nodes_is_refused_on_a_scenario_without_ranks(tmp_path: Path) -> None:
    with pytest.raises(UserError) as e:
        load_suite(str(suite(tmp_path, "gpus = 2, nodes = 2")))
    text = str(e.value)
    assert text.startswith("placement nodes = 2: scenario 'gemm' runs in one process") and "leave nodes out" in text
    assert "collectives" in text and "ddp" in text and "\n" not in text


def test_nodes_spans_the_ranks_of_a_rank_scenario() -> None:
    from llmbench.measure.timing import StopRule
    from llmbench.scenarios.base import CaseContext

    ddp = case_from("ddp", {"model": "tiny-llama", "placement": {"gpus": 2, "nodes": 2}})
    assert ddp.placement.nodes == 2
    coll = case_from("collectives", {"placement": {"gpus": 4, "nodes": 2}})
    scenario = coll.scenario_obj()
    ctx = CaseContext(CPU, StopRule.model_validate({}))
    (run,) = scenario.rank_runs(coll.params, ctx)  # type: ignore[attr-defined]
    assert run.nproc == 4 and run.nnodes == 2  # nodes enters the id and is used, not ignored


def test_good_placements_still_parse() -> None:
    assert Placement.model_validate({"gpus": 8, "nodes": 2, "exclusive": True}).gpus_per_node == 4
    assert Placement(gpus=4, replicas=2).gpus_per_replica == 2
    assert case_from("gemm", {"placement": {"gpus": 1}}).placement == Placement()


def test_on_the_cpu_a_rank_case_gets_no_more_ranks_than_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    six = case_from("ddp", {"model": "tiny-llama", "placement": {"gpus": 6}})
    reason = skip_reason(six, CPU)
    assert reason is not None
    assert reason.startswith("placement gpus = 6 starts 6 ranks") and "2 cores (os.cpu_count())" in reason
    assert "give placement gpus 1..2" in reason
    two = case_from("ddp", {"model": "tiny-llama", "placement": {"gpus": 2}})
    assert cpu_ranks_reason(two.scenario_obj(), CPU) is None
    assert cpu_ranks_reason(six.scenario_obj(), DeviceInfo("cuda", "H200", (9, 0), 139.8)) is None  # GPUs: slots
