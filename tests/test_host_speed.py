"""The host-speed probe: taken outside every sample, at most every PROBE_EVERY_S, and noted in the case's info."""

from __future__ import annotations

from typing import Any

import pytest
from test_timing import FakeClock as Clock

from llmbench.caseinfo import CaseInfo
from llmbench.measure import host_speed
from llmbench.measure.timing import StopRule, measure
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import CaseContext


class LoggingTimer:
    """Each call costs `cost` seconds of the fake clock; a round is logged as its start and end."""

    name = "fake"

    def __init__(self, clock: Clock, cost: float, log: list[Any]) -> None:
        self.clock, self.cost, self.log = clock, cost, log

    def sync(self) -> None:
        pass

    def time(self, fn, n: int, inner: int = 1) -> list[float]:
        self.log.append("round")
        for _ in range(n * inner):
            fn()
            self.clock.now += self.cost
        self.log.append("end")
        return [self.cost] * n


def test_the_probe_runs_before_between_and_after_rounds_never_inside_one() -> None:
    clock, log = Clock(), []
    timer = LoggingTimer(clock, 0.05, log)
    rule = StopRule(warmup_iters=1, min_iters=5, min_seconds=1.0, min_sample_s=0)
    measure(lambda: log.append("call"), rule, timer, clock=clock,
            between_rounds=lambda edge: log.append(("probe", edge)))
    timed = log[log.index(("probe", True)):]  # the warm-up's call and the calibration come before
    assert timed[0] == ("probe", True) and timed[-1] == ("probe", True)
    inside = False
    for e in timed:
        if e in ("round", "end"):
            inside = e == "round"
        elif isinstance(e, tuple):
            assert not inside, "a probe ran inside a timed round"
    rounds = timed.count("round")
    assert rounds > 1
    assert sum(isinstance(e, tuple) for e in timed) == rounds + 1  # one before the first, one after each
    assert [e for e in timed if isinstance(e, tuple)][1:-1] == [("probe", False)] * (rounds - 1)


def test_probes_are_rate_limited_unless_forced() -> None:
    clock, runs = Clock(), []
    p = host_speed.HostProbe(every_s=0.25, clock=clock, probe=lambda: runs.append(1) or 700.04)
    p.take(True)
    assert len(runs) == 2  # the first probe of a process runs once untimed
    clock.now = 0.1
    p.take()
    assert p.us == [700.0]
    p.take(True)
    clock.now = 0.3
    p.take()
    clock.now = 0.6
    p.take()
    assert p.us == [700.0, 700.0, 700.0]


def test_the_probe_is_cpu_time_of_fixed_work() -> None:
    a = host_speed.probe_us(2_000)
    b = host_speed.probe_us(200_000)
    assert 0 < a < b  # 100x the work takes longer on any core, however noisy


def test_slowdown_is_the_median_probe_over_a_reference() -> None:
    assert host_speed.slowdown([600.0, 1200.0, 1300.0], 600.0) == pytest.approx(2.0)
    assert host_speed.slowdown([], 600.0) is None
    assert host_speed.slowdown([600.0], 0.0) is None


def test_a_case_notes_its_probes_over_every_window() -> None:
    ctx = CaseContext(DeviceInfo("cpu", "cpu"), StopRule(warmup_iters=0, min_iters=3, min_seconds=0.0,
                                                          min_sample_s=0), emit_progress=False)
    ctx.measure(lambda: None, monitor=False)
    first = list(ctx.info["host_probe_us"])
    assert len(first) >= 2 and all(v > 0 for v in first)
    ctx.measure(lambda: None, monitor=False)
    assert ctx.info["host_probe_us"][: len(first)] == first
    assert len(ctx.info["host_probe_us"]) >= len(first) + 2
    assert CaseInfo.of(ctx.info).host_probe_us == ctx.info["host_probe_us"]


def test_no_probe_where_the_host_work_runs_in_another_process() -> None:
    """vLLM's engine core runs in its own process, on a core this thread's probe does not time."""
    ctx = CaseContext(DeviceInfo("cpu", "cpu"), StopRule(warmup_iters=0, min_iters=3, min_seconds=0.0,
                                                          min_sample_s=0), emit_progress=False)
    ctx.measure(lambda: None, monitor=False, host_probe=False)
    assert "host_probe_us" not in ctx.info


def test_slowed_cases_are_those_well_over_the_fastest_probe() -> None:
    probes = {"a": [600.0, 610.0], "b": [650.0, 700.0], "c": [990.0, 1000.0, 985.0], "d": []}
    assert host_speed.slowed(probes) == {"c": 1.65}
    text = host_speed.note(probes)
    assert text is not None and text.startswith(host_speed.NOTE_PREFIX) and "c (1.65x)" in text and "b (" not in text
    assert host_speed.note({"a": [600.0], "b": [700.0]}) is None


class Warned:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def warn(self, text: str) -> None:
        self.lines.append(text)


@pytest.mark.parametrize("kind", ["cuda", "cpu"])
def test_a_gpu_run_notes_its_slowed_cases_once_even_when_resumed(kind: str) -> None:
    from test_compare_support import H200_ENV, gemm_case, result_set

    from llmbench.harness.runner import _Run

    fast, slow = gemm_case("bf16", 700.0), gemm_case("fp8", 1300.0)
    fast.info["host_probe_us"], slow.info["host_probe_us"] = [600.0, 620.0], [1000.0, 1020.0]
    rs = result_set(H200_ENV, [fast, slow])
    rs.warnings = ["an environment warning"]
    ui = Warned()
    run = _Run(rs, None, None, ui, DeviceInfo(kind, "x"), None, {}, None, None)  # type: ignore[arg-type]
    run.note_host_speed()
    run.note_host_speed()  # a resumed run's second look replaces the first note
    notes = [w for w in rs.warnings if w.startswith(host_speed.NOTE_PREFIX)]
    if kind == "cpu":
        assert notes == [] and ui.lines == []
        return
    assert len(notes) == 1 and slow.id in notes[0] and fast.id not in notes[0]
    assert rs.warnings[0] == "an environment warning"
