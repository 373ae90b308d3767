"""A case process that dies in its start-up, before its first timed window and without a result, is
started once more and both starts are recorded; one that dies once timing began is the case's result."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmbench.caseinfo import CaseInfo
from llmbench.harness.isolation import ChildOutcome, died_in_startup
from llmbench.harness.runner import RESTART_WHY, RunOptions, run_restarting, run_suite
from llmbench.results import load
from llmbench.suite import load_suite
from tests.conftest import write

SUITE = """
name = "startup"
[defaults]
min_iters = 2
min_seconds = 0.0
timeout_s = 60
[[case]]
scenario = "fault"
kind = "{kind}"
flag = "{flag}"
"""


class Scripted:
    """A launcher whose starts end as scripted, one outcome per start."""

    name = "local"

    def __init__(self, *outcomes: ChildOutcome) -> None:
        self.outcomes = list(outcomes)
        self.starts = 0

    def run(self, spec: dict, env: dict, timeout_s: float, on_progress: object = None) -> ChildOutcome:
        self.starts += 1
        return self.outcomes.pop(0)


def test_only_a_resultless_end_before_timing_counts_as_a_start_up_death() -> None:
    assert died_in_startup(ChildOutcome("failed", "exited with code 3", timing_began=False))
    assert died_in_startup(ChildOutcome("killed", "SIGKILL", timing_began=False))
    assert not died_in_startup(ChildOutcome("failed", "exited with code 3", timing_began=True))  # timing began
    assert not died_in_startup(ChildOutcome("failed", "exited", timing_began=None))  # a launcher that cannot tell
    assert not died_in_startup(ChildOutcome("timeout", "killed at its timeout", timing_began=False))
    assert not died_in_startup(ChildOutcome("failed", "ValueError", timing_began=False, wrote_result=True))  # a result
    # where it ran (the launcher's node record) is no result of the case's own
    assert died_in_startup(ChildOutcome("failed", "exited", {"info": {"node": {"hostname": "h"}}}, timing_began=False))


def test_a_start_up_death_is_started_once_more_never_twice() -> None:
    dead = ChildOutcome("failed", "the case process exited with code 3 without a result", traceback="boom",
                        duration_s=1.5, timing_began=False)
    launcher = Scripted(dead, ChildOutcome("failed", "exited again", duration_s=0.5, timing_began=False))
    out = run_restarting(launcher, {}, {}, 10.0)  # type: ignore[arg-type]
    assert launcher.starts == 2 and out.reason == "exited again"  # the second death is the result
    first, last = CaseInfo.of(out.payload["info"]).attempts or []
    assert (first.status, first.restarted, first.stderr_tail) == ("failed", RESTART_WHY, "boom")
    assert last.reason == "exited again" and last.restarted is None


def test_a_death_after_timing_began_is_the_result_not_retried() -> None:
    launcher = Scripted(ChildOutcome("failed", "exited with code 4", timing_began=True))
    out = run_restarting(launcher, {}, {}, 10.0)  # type: ignore[arg-type]
    assert launcher.starts == 1 and "attempts" not in out.payload.get("info", {})


@pytest.mark.slow
def test_a_worker_that_dies_in_its_start_up_once_is_measured_on_its_second_start(tmp_path: Path,
                                                                                  fault_plugin: str) -> None:
    flag = tmp_path / "died-once"
    suite = load_suite(str(write(tmp_path, SUITE.format(kind="exit_once", flag=flag))))
    (case,) = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu"))).cases
    assert case.status == "ok", case.reason
    assert flag.exists() and "time_ms" in case.metrics
    first, second = CaseInfo.of(case.info).attempts or []
    assert first.status == "failed" and "exited with code 3" in (first.reason or "")
    assert first.restarted == RESTART_WHY
    assert second.status == "ok" and second.restarted is None


@pytest.mark.slow
def test_a_worker_that_dies_after_timing_began_is_failed_and_started_once(tmp_path: Path, fault_plugin: str) -> None:
    suite = load_suite(str(write(tmp_path, SUITE.format(kind="exit_timed", flag=""))))
    (case,) = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu"))).cases
    assert case.status == "failed" and "exited with code 4" in (case.reason or "")
    assert CaseInfo.of(case.info).attempts is None
