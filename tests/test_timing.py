"""The stop rule, calibration and statistics, on fake clocks and known samples."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from llmbench.measure.stats import bootstrap_distribution, summarize
from llmbench.measure.timing import StopRule, measure


class FakeClock:
    """A clock that advances only when the fake work runs: `cost` seconds per call."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeTimer:
    name = "fake"

    def __init__(self, clock: FakeClock, cost: float) -> None:
        self.clock, self.cost, self.calls = clock, cost, 0

    def sync(self) -> None:
        pass

    def time(self, fn, n: int, inner: int = 1) -> list[float]:
        out = []
        for _ in range(n):
            for _ in range(inner):
                fn()
                self.calls += 1
                self.clock.now += self.cost
            out.append(self.cost)
        return out


def run(rule: StopRule, cost: float) -> tuple[int, float, int]:
    clock = FakeClock()
    timer = FakeTimer(clock, cost)
    m = measure(lambda: None, rule, timer, clock=clock)
    return len(m.samples_s), m.elapsed_s, m.inner


@pytest.mark.parametrize(
    ("min_iters", "min_seconds", "cost"),
    [(10, 1.0, 0.01), (10, 1.0, 0.5), (100, 0.1, 0.01), (5, 0.0, 0.2), (3, 2.0, 3.0)],
)
def test_stop_rule_needs_both_iterations_and_seconds(min_iters: int, min_seconds: float, cost: float) -> None:
    n, elapsed, _ = run(StopRule(warmup_iters=2, min_iters=min_iters, min_seconds=min_seconds, min_sample_s=0), cost)
    assert n >= min_iters
    assert elapsed >= min_seconds
    # bounded overshoot: rounds are about a tenth of min_seconds, and no more iterations than needed
    assert n <= max(min_iters, int(min_seconds / cost * 1.1) + 2)


def test_max_iters_caps_the_run() -> None:
    n, _, _ = run(StopRule(min_iters=10, min_seconds=100.0, max_iters=50, min_sample_s=0), 0.01)
    assert n == 50


def test_short_calls_are_batched_into_samples_of_min_sample_s() -> None:
    n, elapsed, inner = run(StopRule(min_iters=10, min_seconds=0.5, min_sample_s=1e-3), 1e-5)
    assert inner * 1e-5 >= 1e-3
    assert inner <= 2 * 100 + 1  # calibration does not overshoot grossly
    assert n >= 10 and elapsed >= 0.5


def test_long_calls_are_one_per_sample() -> None:
    _, _, inner = run(StopRule(min_iters=3, min_seconds=0.0, min_sample_s=1e-3), 0.5)
    assert inner == 1


def test_warmup_is_not_timed() -> None:
    clock = FakeClock()
    timer = FakeTimer(clock, 0.1)
    calls = []
    m = measure(lambda: calls.append(1), StopRule(warmup_iters=4, min_iters=3, min_seconds=0, min_sample_s=0),
                timer, clock=clock)
    assert len(calls) == 4 + timer.calls  # warm-up calls ran but are not samples
    assert len(m.samples_s) == 3
    assert m.warmup_s == 0.0  # the fake clock only moves in timed calls


def test_summary_statistics_match_known_values() -> None:
    samples = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    s = summarize(samples)
    assert s["median"] == 5.5
    assert s["mean"] == 5.5
    assert s["min"] == 1.0 and s["max"] == 10.0
    assert s["p90"] == pytest.approx(9.1)
    assert s["p99"] == pytest.approx(9.91)
    assert s["stdev"] == pytest.approx(statistics.stdev(samples))
    assert s["cv"] == pytest.approx(statistics.stdev(samples) / 5.5)
    assert s["n"] == 10
    lo, hi = s["ci95"]
    assert lo < 5.5 < hi
    assert lo >= 2.0 and hi <= 9.0


def test_the_bootstrap_is_deterministic_and_narrows_with_more_samples() -> None:
    rng = np.random.default_rng(1)
    small = rng.normal(10, 1, 20)
    large = rng.normal(10, 1, 2000)
    assert (bootstrap_distribution(small) == bootstrap_distribution(small)).all()
    w_small, w_large = (np.subtract(*np.quantile(bootstrap_distribution(x), [0.975, 0.025])) for x in (small, large))
    assert w_large < w_small / 3
    lo, hi = np.quantile(bootstrap_distribution(large), [0.025, 0.975])
    assert lo < 10.0 < hi
    assert (bootstrap_distribution([3.0]) == 3.0).all()  # one sample: every resample is it


def test_single_sample_and_empty() -> None:
    s = summarize([2.0])
    assert s["ci95"] is None and s["ci"]["level"] == 0.0
    with pytest.raises(ValueError):
        summarize([])
