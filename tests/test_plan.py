"""Expected case times for --dry-run and --budget: measured, like the most similar measured cases, or
the scenario's estimate."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from llmbench.harness.plan import (
    PROCESS_OVERHEAD_S,
    MeasuredCase,
    additive_guesses,
    case_time,
    measured_cases,
    similar_time,
)
from llmbench.precision import DeviceInfo
from llmbench.results import CaseResult, ResultSet, save
from llmbench.suite import CaseSpec, load_suite
from tests.conftest import write

SUITE = """
name = "gen"
[defaults]
model = "tiny-llama"
[[case]]
scenario = "generate"
matrix.precision = ["bf16", "int8"]
matrix.batch_size = [1, 8]
matrix.mode = ["eager", "compiled"]
[[case]]
scenario = "gemm"
shape = [64, 64, 64]
"""
H200 = DeviceInfo("cuda", "NVIDIA H200", (9, 0), 139.8)


def _cases(tmp_path: Path) -> dict[tuple[str, ...], CaseSpec]:
    cases = load_suite(str(write(tmp_path, SUITE))).cases
    return {(c.scenario, *(str(c.params_dict[k]) for k in ("precision", "batch_size", "mode")))
            if c.scenario == "generate" else (c.scenario,): c for c in cases}


def _measured(c: CaseSpec, seconds: float) -> tuple[str, MeasuredCase]:
    return c.id, MeasuredCase(c.scenario, c.params_dict, seconds)


def test_a_measured_case_is_quoted_as_it_ran(tmp_path: Path) -> None:
    c = _cases(tmp_path)[("generate", "int8", "1", "compiled")]
    t = case_time(c, dict([_measured(c, 212.0)]))
    assert (t.seconds, t.source) == (212.0, "measured")


def test_an_unmeasured_case_takes_the_longest_of_its_closest_measured_siblings(tmp_path: Path) -> None:
    cs = _cases(tmp_path)
    measured = dict([
        _measured(cs[("generate", "int8", "1", "compiled")], 212.0),  # differs in batch size only
        _measured(cs[("generate", "int8", "8", "eager")], 76.0),  # differs in mode only
        _measured(cs[("generate", "bf16", "1", "eager")], 900.0),  # differs in three params: too far
        _measured(cs[("gemm",)], 5000.0),  # another scenario: no guide
    ])
    t = case_time(cs[("generate", "int8", "8", "compiled")], measured)
    assert (t.seconds, t.source) == (212.0, "similar")


def test_an_unmeasured_case_adds_what_one_param_costs_elsewhere(tmp_path: Path) -> None:
    """int8 compiled at batch 8 = int8 compiled at batch 1 + what batch 8 costs int8 in eager mode
    (eager batch 8 - eager batch 1); and = int8 eager at batch 8 + what compiling costs at batch 1:
    the same guess, found both ways."""
    cs = _cases(tmp_path)
    measured = dict([
        _measured(cs[("generate", "int8", "1", "compiled")], 212.0),
        _measured(cs[("generate", "int8", "8", "eager")], 76.0),
        _measured(cs[("generate", "int8", "1", "eager")], 39.0),
        _measured(cs[("generate", "bf16", "8", "compiled")], 50.0),  # one-off too, but no b measured for it
    ])
    t = case_time(cs[("generate", "int8", "8", "compiled")], measured)
    assert (t.seconds, t.source) == (212.0 + 76.0 - 39.0, "similar")


def test_the_quote_is_the_75th_percentile_of_the_additive_guesses() -> None:
    params = {"p": 0, "q": 0, "r": 0}
    m = [MeasuredCase("s", {**params, **d}, t) for d, t in [
        ({"p": 1}, 100.0), ({"q": 1}, 10.0), ({"r": 1}, 40.0),  # one param off each
        ({"p": 1, "q": 1}, 20.0), ({"p": 1, "r": 1}, 30.0), ({"q": 1, "r": 1}, 45.0),  # two off
        ({"q": 2}, 15.0), ({"p": 1, "q": 2}, 25.0),  # q has two other values measured
    ]]
    assert sorted(additive_guesses(params, m)) == [5.0, 90.0, 90.0, 110.0]  # qr, pq, pq (q=2), pr; r with q=2 has no b
    assert similar_time(params, m) == 90.0  # rank round(0.75 * 3) = 2 of 0..3


def test_a_sibling_shorter_than_the_scenario_estimate_does_not_lower_it(tmp_path: Path) -> None:
    cs = _cases(tmp_path)
    case = cs[("generate", "int8", "8", "compiled")]
    estimate = case.scenario_obj().estimate_s(case.params, case.settings) + PROCESS_OVERHEAD_S
    t = case_time(case, dict([_measured(cs[("generate", "int8", "1", "compiled")], estimate / 10)]))
    assert (t.seconds, t.source) == (estimate, "estimate")


def test_without_a_similar_measured_case_the_scenario_estimates(tmp_path: Path) -> None:
    cs = _cases(tmp_path)
    gemm = cs[("gemm",)]
    measured = dict([_measured(cs[("generate", "int8", "1", "compiled")], 212.0)])
    t = case_time(gemm, measured)
    assert t.source == "estimate"
    assert t.seconds == gemm.scenario_obj().estimate_s(gemm.params, gemm.settings) + PROCESS_OVERHEAD_S


def test_measured_cases_reads_the_newest_set_and_ignores_cases_that_did_not_finish(tmp_path: Path) -> None:
    cs = list(_cases(tmp_path).values())
    old = ResultSet(suite="gen", env={"gpu": {"slug": "x"}},
                    cases=[CaseResult(id=cs[0].id, scenario=cs[0].scenario, params=cs[0].params_dict, status="ok",
                                      duration_s=1.0)])
    save(old, tmp_path / "x" / "gen-20261101T000000Z.json")
    new = ResultSet(suite="gen", env={"gpu": {"slug": "x"}}, cases=[
        CaseResult(id=cs[0].id, scenario=cs[0].scenario, params=cs[0].params_dict, status="ok", duration_s=50.0),
        CaseResult(id=cs[1].id, scenario=cs[1].scenario, params=cs[1].params_dict, status="timeout", duration_s=900.0),
    ])
    save(new, tmp_path / "x" / "gen-20261102T000000Z.json")
    got, path = measured_cases(tmp_path, "x", "gen")
    assert path == tmp_path / "x" / "gen-20261102T000000Z.json"
    assert {k: v.seconds for k, v in got.items()} == {cs[0].id: 50.0}
    assert measured_cases(tmp_path, "y", "gen") == ({}, None)


def test_a_case_whose_params_break_the_check_is_quoted_broken_not_may_run(tmp_path: Path) -> None:
    """A param the scenario's check cannot take (here a model no preset has, set past validation) is
    the case's reason in the quote: before, the check's error was swallowed and the case quoted in full."""
    c = _cases(tmp_path)[("generate", "bf16", "1", "eager")]
    broken = replace(c, params=c.params.model_copy(update={"model": "no-such-model"}))
    t = case_time(broken, {}, H200)
    assert (t.seconds, t.source) == (0.0, "skipped")
    assert t.reason is not None and t.reason.startswith("its params are broken") and "no-such-model" in t.reason
    assert case_time(c, {}, H200).source == "estimate"  # the same case, its params whole
