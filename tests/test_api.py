"""llmbench.api as a library: typed answers, silence without a UI, UserError for bad input, and
oneshot's time against its budget and quote (on the CPU, with the test-only `fault` scenario)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_compare_support import h100_set, h200_set

from llmbench import api
from llmbench.api import session
from llmbench.bundle import read_bundle
from llmbench.errors import UserError
from llmbench.harness.doctor import Check
from llmbench.results import CaseResult, save
from llmbench.suite import CaseSpec
from tests.conftest import write
from tests.test_oneshot import SUITE as ONESHOT_SUITE

SUITE = ONESHOT_SUITE  # three fault cases: ok, env (fails), and one quoted far over any budget


@pytest.mark.slow
def test_run_suite_returns_the_result_set_and_prints_nothing(
    tmp_path: Path, fault_plugin: str, capsys: pytest.CaptureFixture[str]
) -> None:
    done = api.run_suite(write(tmp_path, SUITE), out=tmp_path / "r", cpu=True, filters=["seconds=0.0"])
    assert done.path.parent.parent == tmp_path / "r" and done.path.suffix == ".json"
    assert [c.params["kind"] for c in done.passes[0].result_set.cases] == ["ok", "env"]
    assert done.passes[0].counts == {"ok": 2} and done.exit_code() == 0
    assert capsys.readouterr() == ("", "")


def test_bad_input_is_a_user_error_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--force"):
        api.run_suite("quickstart", out=tmp_path / "r", cpu=True, force=True)
    with pytest.raises(UserError, match="names no case; valid scenario values"):
        api.run_suite("quickstart", out=tmp_path / "r", cpu=True, filters=["scenario=nosuch"])
    save(h100_set(), tmp_path / "h100" / "quickstart-1.json")
    with pytest.raises(UserError, match="compare needs two or more"):
        api.compare([tmp_path / "h100"])
    assert not (tmp_path / "r").exists()


def test_compare_is_the_json_the_cli_writes(tmp_path: Path) -> None:
    a, b = tmp_path / "h100" / "quickstart-1.json", tmp_path / "h200" / "quickstart-2.json"
    save(h100_set(), a)
    save(h200_set(), b)
    result = api.compare([a, b], baseline="h200-sxm-141gb", fail_if_slower=0.05)
    (group,) = result.groups
    assert group.comparison.sets[group.comparison.baseline].name == "h200-sxm-141gb"
    assert group.gate is not None and result.to_dict()["gate"] == group.gate.to_dict()
    assert json.loads(json.dumps(result.to_dict()))["comparison"]["baseline"] == "h200-sxm-141gb"


def test_clock_text() -> None:
    assert api.clock_text(250, 900, 235, 6, 860, 25) == (
        "4:10 spent, 10:50 left of 15:00; quote 3:55 for 6 done, 14:20 for all 25")
    assert api.clock_text(3725, None, 60, 1, 120, 2) == (
        "1:02:05 spent; quote 1:00 for 1 done, 2:00 for all 2")


class Recorder(api.UI):
    def __init__(self) -> None:
        self.clocks: list[tuple[str, bool]] = []
        self.done: list[str] = []

    def clock(self, text: str, calm: bool) -> None:
        self.clocks.append((text, calm))

    def case_done(self, case: CaseSpec, result: CaseResult) -> None:
        self.done.append(case.id)


@pytest.mark.slow
def test_oneshot_shows_time_spent_and_left_against_the_budget_calmly(
    tmp_path: Path, fault_plugin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session, "run_checks", lambda gpus: [Check("torch", "ok", "cpu")])
    ui = Recorder()
    done = api.oneshot([str(write(tmp_path, SUITE))], budget_s=600, out=tmp_path / "o", cpu=True, ui=ui)
    assert done.deferred == 1 and done.counts == {"ok": 2} and done.exit_code() == 0
    assert done.summary == "2 ok, 1 left for --resume (budget)"
    # one update as the suite starts, one per case, one at the suite's end: a line only at the end (calm)
    assert len(ui.clocks) == 1 + len(ui.done) + 1
    assert [calm for _, calm in ui.clocks] == [False] * (1 + len(ui.done)) + [True]
    text = ui.clocks[-1][0]
    assert "left of 10:00" in text and "for 2 done" in text and "for all 3" in text
    log = read_bundle(done.bundle).files["logs/part-1.log"].decode()
    case_lines = [line for line in log.splitlines() if f" {'ok':8} " in line]
    assert len(case_lines) == 2 and all("left of 10:00" in line for line in case_lines)


@pytest.mark.slow
def test_oneshot_clock_line_at_most_once_a_minute(tmp_path: Path, fault_plugin: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "run_checks", lambda gpus: [Check("torch", "ok", "cpu")])
    monkeypatch.setattr(session, "CLOCK_EVERY_S", 0.0)  # every case's end is a minute later
    ui = Recorder()
    api.oneshot([str(write(tmp_path, SUITE))], out=tmp_path / "o", cpu=True, ui=ui)
    assert [calm for _, calm in ui.clocks] == [False, True, True, True, True]
    assert "left of" not in ui.clocks[-1][0]  # no budget: time spent and the quote only


def test_a_broken_stack_raises_and_writes_no_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "run_checks", lambda gpus: [Check("gpu matmul", "fail", "ran on cpu")])
    with pytest.raises(api.BrokenStack, match="gpu matmul"):
        api.oneshot(out=tmp_path / "o", cpu=True)
    assert not list((tmp_path / "o").glob("*.tar.gz"))


class Warned(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.warnings: list[tuple[str, int]] = []  # (text, cases done when it was said)

    def warn(self, text: str) -> None:
        self.warnings.append((text, len(self.done)))


@pytest.mark.slow
def test_oneshot_says_which_cases_this_machine_will_skip_before_any_runs(
    tmp_path: Path, fault_plugin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine that is not installed skips its cases, not fails them: the user hears it once, before
    the minutes go, with the reason (and its install command), not only in the summary afterwards."""
    monkeypatch.setattr(session, "run_checks", lambda gpus: [Check("torch", "ok", "cpu")])
    monkeypatch.setenv("LLMBENCH_TEST_PROBE_DIR", str(tmp_path))
    suite = write(tmp_path, 'name = "holes"\n[defaults]\nmin_iters = 1\nmin_seconds = 0.0\n'
                  '[[case]]\nscenario = "probe"\nmatrix.tag = [1, 2, 3]\n'
                  '[[case]]\nscenario = "probe"\nmatrix.tag = [4, 5]\nskip_here = true\n')
    ui = Warned()
    done = api.oneshot([str(suite)], out=tmp_path / "o", cpu=True, ui=ui)
    assert done.counts == {"ok": 3, "skipped": 2}
    skips = [(text, at) for text, at in ui.warnings if "skipped here" in text]
    assert skips == [("2 of 5 case(s) will be skipped here: 2 x planted: cannot run here", 0)]
    log = read_bundle(done.bundle).files["logs/part-1.log"].decode()
    assert "2 of 5 case(s) will be skipped here" in log


def test_skipped_here_is_silent_where_every_case_can_run(tmp_path: Path, fault_plugin: str) -> None:
    plan = api.plan_oneshot([str(write(tmp_path, SUITE))], out=tmp_path / "o", cpu=True)
    assert api.skipped_here(plan) is None


@pytest.mark.slow
def test_resume_runs_a_case_the_runner_skipped_once_what_it_lacked_is_there(
    tmp_path: Path, fault_plugin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A oneshot on a machine without vLLM skips its cases; installed afterwards, `--resume` runs them,
    while what ran ok, and a case whose own process found it cannot run, are not run again."""
    monkeypatch.setenv("LLMBENCH_TEST_PROBE_DIR", str(tmp_path))
    suite = write(tmp_path, 'name = "lifted"\n[defaults]\nmin_iters = 1\nmin_seconds = 0.0\n'
                  '[[case]]\nscenario = "probe"\nmatrix.skip_here = [false, true]\n'
                  '[[case]]\nscenario = "fault"\nkind = "skip"\n')
    first = api.run_suite(suite, out=tmp_path / "r", cpu=True).passes[0].result_set
    assert first.cases[0].status == "ok"
    assert [c.status for c in first.cases[1:]] == ["skipped", "skipped"]
    assert first.cases[1].info["skipped_by"] == "runner" and "skipped_by" not in first.cases[2].info
    before = {c.id: c.started_at for c in first.cases}

    assert api.run_suite(suite, out=tmp_path / "r", cpu=True, resume=True).passes[0].counts == {"ok": 1,
                                                                                              "skipped": 2}
    monkeypatch.setenv("LLMBENCH_TEST_SKIP_LIFTED", "1")  # the package is there now
    again = api.run_suite(suite, out=tmp_path / "r", cpu=True, resume=True).passes[0].result_set
    by_id = {c.id: c for c in again.cases}
    assert by_id[first.cases[1].id].status == "ok"
    assert by_id[first.cases[0].id].started_at == before[first.cases[0].id]  # not run again
    assert by_id[first.cases[2].id].status == "skipped"
    assert by_id[first.cases[2].id].started_at == before[first.cases[2].id]
