"""Share groups (a suite's `share_engines`): cases that load the same engine session run in one process,
each recorded as its own case; a failure stops the group and the rest run alone; quotes leave out the
load a shared case does not pay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llmbench.errors import SuiteError
from llmbench.harness.plan import MeasuredCase, quote_units, share_groups
from llmbench.harness.runner import RunOptions, run_suite
from llmbench.precision import DeviceInfo
from llmbench.results import load
from llmbench.suite import load_suite
from tests.conftest import write

CPU = DeviceInfo("cpu", "CPU test")


def _suite(tmp_path: Path, cases: list[dict[str, Any]], share: bool = True) -> Path:
    body = [f"name = \"shared\"\nshare_engines = {'true' if share else 'false'}\n"
            "[defaults]\nmin_iters = 2\nmin_seconds = 0\nwarmup_iters = 0\ntimeout_s = 60\n"]
    for c in cases:
        body.append("[[case]]\nscenario = \"shared\"\n" + "".join(
            f"{k} = {v!r}\n".replace("'", '"') for k, v in c.items()))
    return write(tmp_path, "\n".join(body))


def _run(tmp_path: Path, path: Path) -> dict[int, Any]:
    suite = load_suite(str(path))
    rs = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu")))
    return {c.params["tag"]: c for c in rs.cases}


def test_share_engines_is_a_checked_suite_key(fault_plugin: str, tmp_path: Path) -> None:
    assert load_suite(str(_suite(tmp_path, [{"tag": 1}]))).share_engines
    assert not load_suite(str(_suite(tmp_path, [{"tag": 1}], share=False))).share_engines
    bad = write(tmp_path, 'share_engines = "yes"\n[[case]]\nscenario = "gemm"\n', "bad.toml")
    with pytest.raises(SuiteError, match="share_engines"):
        load_suite(str(bad))


def test_groups_run_where_their_first_case_stands(fault_plugin: str, tmp_path: Path) -> None:
    suite = load_suite(str(_suite(tmp_path, [{"share": "a", "tag": 0}, {"share": "b", "tag": 1},
                                             {"share": "a", "tag": 2}, {"share": "", "tag": 3}])))
    units = share_groups(suite.cases, CPU)
    assert [[c.params_dict["tag"] for c in u] for u in units] == [[0, 2], [1], [3]]


@pytest.mark.slow
def test_a_group_runs_in_one_process_and_each_case_is_its_own(fault_plugin: str, tmp_path: Path) -> None:
    cases = _run(tmp_path, _suite(tmp_path, [{"share": "a", "tag": 0}, {"share": "b", "tag": 1},
                                              {"share": "a", "tag": 2}, {"share": "a", "tag": 3}]))
    assert all(c.status == "ok" for c in cases.values())
    assert cases[0].info["pid"] == cases[2].info["pid"] == cases[3].info["pid"] != cases[1].info["pid"]
    assert cases[2].info["session_of"] == cases[3].info["session_of"] == cases[0].id  # the first loaded it
    assert "session_of" not in cases[0].info and "session_of" not in cases[1].info
    group = cases[3].info["share_group"]
    assert group["cases"] == [cases[0].id, cases[2].id, cases[3].id] and group["index"] == 2
    assert group["ran"] == "in group"
    assert "share_group" not in cases[1].info  # a group of one is a case alone
    assert all(len(c.metrics["time_ms"].samples or []) >= 2 and c.duration_s > 0 for c in cases.values())


@pytest.mark.slow
def test_without_share_engines_every_case_has_its_own_process(fault_plugin: str, tmp_path: Path) -> None:
    cases = _run(tmp_path, _suite(tmp_path, [{"share": "a", "tag": 0}, {"share": "a", "tag": 1}], share=False))
    assert cases[0].info["pid"] != cases[1].info["pid"]
    assert not any("share_group" in c.info for c in cases.values())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["exit", "raise", "oom"])
def test_a_failure_stops_the_group_and_the_rest_run_alone(fault_plugin: str, tmp_path: Path, kind: str) -> None:
    cases = _run(tmp_path, _suite(tmp_path, [{"share": "a", "tag": 0}, {"share": "a", "tag": 1, "kind": kind},
                                              {"share": "a", "tag": 2}]))
    first, bad, rest = cases[0], cases[1], cases[2]
    assert first.status == "ok" and first.info["share_group"]["ran"] == "in group"
    # the case that failed in the group ran again alone, and failed there on its own account
    assert bad.status == ("oom" if kind == "oom" else "failed")
    assert bad.info["share_group"]["ran"] == "alone" and bad.id in bad.info["share_group"]["stopped"]
    assert rest.status == "ok" and rest.info["share_group"]["ran"] == "alone"
    assert rest.info["pid"] != first.info["pid"] and "session_of" not in rest.info


def test_quotes_leave_out_the_load_a_shared_case_does_not_pay(fault_plugin: str, tmp_path: Path) -> None:
    suite = load_suite(str(_suite(tmp_path, [{"share": "a", "tag": 0}, {"share": "a", "tag": 1}])))
    measured = {c.id: MeasuredCase("shared", c.params_dict, 80.0, load_s=65.0) for c in suite.cases}
    units = share_groups(suite.cases, CPU)
    quotes = quote_units(units, measured, CPU)
    assert [quotes[c.id].seconds for c in suite.cases] == [80.0, 15.0]
    alone = quote_units([[c] for c in suite.cases], measured, CPU)
    assert [alone[c.id].seconds for c in suite.cases] == [80.0, 80.0]


@pytest.mark.slow
def test_tiny_model_shared_and_alone_run_the_same_code(tmp_path: Path) -> None:
    """transformers' eager sessions are shared (any batch on one loaded model): grouped and alone, each
    case records the same code path and the same metrics, the second grouped one on the first's model."""
    path = write(tmp_path, """name = "hf-shared"
share_engines = true
[defaults]
model = "tiny-llama"
engine = "hf"
mode = "eager"
input_len = 16
output_len = 8
warmup_iters = 0
min_iters = 2
min_seconds = 0
[[case]]
scenario = "generate"
matrix.batch_size = [1, 3]
""")
    suite = load_suite(str(path))
    runs = {}
    for share in (True, False):
        rs = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / str(share), device="cpu",
                                                           share_engines=share)))
        assert [c.status for c in rs.cases] == ["ok", "ok"], [c.reason for c in rs.cases]
        runs[share] = {c.id: c for c in rs.cases}
    first, second = (runs[True][c.id] for c in suite.cases)
    assert second.info["session"].startswith(f"shared: loaded by case {first.id}") and "build_s" not in second.info
    for c in suite.cases:
        assert runs[True][c.id].code_path == runs[False][c.id].code_path
        assert runs[True][c.id].metrics.keys() == runs[False][c.id].metrics.keys()


def test_quotes_come_from_runs_whose_compile_cache_was_as_this_runs_will_be(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh run (its compile cache empty) is quoted from cold compilations, a run with a kept cache
    (LLMBENCH_COMPILE_CACHE holding graphs) from warm ones, wherever the sets hold both."""
    from test_compare_support import h100_set

    from llmbench.harness.plan import reference_times
    from llmbench.measure import compile_cache
    from llmbench.results import save

    for name, seconds, state in (("cold-1", 150.0, "cold"), ("warm-1", 60.0, "warm"), ("warm-2", 70.0, "warm")):
        rs = h100_set()
        for c in rs.cases:
            c.duration_s, c.info["compile_cache_state"] = seconds, state
        save(rs, tmp_path / "h100-sxm-80gb" / f"quickstart-20260101T000001Z-{name}.json")
    assert {m.seconds for m in reference_times(tmp_path, "h100-sxm-80gb").values()} == {150.0}
    assert {m.seconds for m in reference_times(tmp_path, "h100-sxm-80gb", expect="warm").values()} == {70.0}

    monkeypatch.delenv(compile_cache.USER_SETTING, raising=False)
    assert compile_cache.expected_state() == "cold"
    kept = tmp_path / "kept"
    monkeypatch.setenv(compile_cache.USER_SETTING, str(kept))
    assert compile_cache.expected_state() == "cold"  # nothing in it yet
    (kept / "fxgraph" / "ab").mkdir(parents=True)
    assert compile_cache.expected_state() == "warm"


def test_a_shared_case_is_quoted_from_its_shared_runs_and_an_alone_one_from_its_runs_alone(
        tmp_path: Path) -> None:
    """A case that ran on a group's session is quoted at that time where it will run shared again (not
    at its time alone less the build: that still holds the process start and shutdown), and never at
    it where it will run alone; its siblings' quotes do not learn from it either."""
    from test_compare_support import h100_set

    from llmbench.harness.plan import case_time, ok_case_times, overlay, reference_times
    from llmbench.results import save

    suite = load_suite(str(_suite(tmp_path, [{"share": "a", "tag": 0}, {"share": "a", "tag": 1}])))
    first, second = suite.cases
    alone = {c.id: MeasuredCase("shared", c.params_dict, 80.0, load_s=65.0) for c in suite.cases}
    grouped = {first.id: MeasuredCase("shared", first.params_dict, 78.0, load_s=65.0),
               second.id: MeasuredCase("shared", second.params_dict, 3.0, ran_shared=True)}
    units = share_groups(suite.cases, CPU)

    both = overlay(alone, grouped)
    assert both[second.id].seconds == 80.0 and both[second.id].shared_s == 3.0
    assert [quote_units(units, both, CPU)[c.id].seconds for c in suite.cases] == [78.0, 3.0]
    assert quote_units([[c] for c in suite.cases], both, CPU)[second.id].seconds == 80.0
    assert overlay(grouped, alone)[second.id].shared_s == 3.0  # a newer run alone keeps the shared time

    only_shared = {second.id: grouped[second.id]}
    assert case_time(second, only_shared).source == "estimate"  # 3 s says nothing of the case alone
    assert quote_units(units, only_shared, CPU)[second.id].seconds == 3.0

    # from result sets: a case's group info says it ran shared; the quotes keep both kinds
    for name, info in (("alone", {"build_s": 60.0}),
                       ("grouped", {"share_group": {"cases": ["x", "y"], "index": 1, "ran": "in group"}})):
        rs = h100_set()
        for c in rs.cases:
            c.duration_s, c.info = (80.0, {**c.info, **info}) if name == "alone" else (3.0, {**c.info, **info})
        assert all(m.ran_shared == (name == "grouped") for m in ok_case_times(rs).values())
        save(rs, tmp_path / "h100-sxm-80gb" / f"quickstart-20260101T000001Z-{name}.json")
    quotes = reference_times(tmp_path, "h100-sxm-80gb")
    assert {(m.seconds, m.ran_shared, m.shared_s) for m in quotes.values()} == {(80.0, False, 3.0)}
