"""The median's interval holds the true median as often as it says, for any distribution: simulated
draws from known distributions, counted (vectorised, fixed seed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmbench.measure.stats import MIN_N_FOR_CI95, median_ci, median_order_ranks, summarize

TRIALS = 2000


def _draws(dist: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """(TRIALS x n samples, the distribution's true median)."""
    if dist == "lognormal":
        return rng.lognormal(mean=1.0, sigma=0.8, size=(TRIALS, n)), math.exp(1.0)
    return rng.normal(loc=10.0, scale=2.0, size=(TRIALS, n)), 10.0


@pytest.mark.parametrize("dist", ["lognormal", "normal"])
@pytest.mark.parametrize("n", [3, 5, 10, 30])
def test_coverage_of_the_median_interval(dist: str, n: int) -> None:
    rng = np.random.default_rng(20261123 + n)
    x, true_median = _draws(dist, n, rng)
    k, level = median_order_ranks(n)
    if n < MIN_N_FOR_CI95:
        assert k == 0  # no pair of order statistics reaches 95%: none is claimed
        assert summarize(list(x[0]))["ci95"] is None
        return
    xs = np.sort(x, axis=1)
    lo, hi = xs[:, k - 1], xs[:, n - k]
    covered = float(np.mean((lo <= true_median) & (true_median <= hi)))
    se = math.sqrt(0.95 * 0.05 / TRIALS)
    assert covered >= 0.95 - 3 * se
    assert level >= 0.95
    # the stored figures are these very order statistics
    s = summarize(list(x[0]))
    assert s["ci95"] == [lo[0], hi[0]]
    assert s["ci"]["level"] == level and s["ci_method"] == "order statistic"


@pytest.mark.parametrize("n", [3, 5])
def test_small_samples_state_the_coverage_min_max_achieves(n: int) -> None:
    rng = np.random.default_rng(7)
    x, true_median = _draws("lognormal", n, rng)
    covered = float(np.mean((x.min(axis=1) <= true_median) & (true_median <= x.max(axis=1))))
    ci = median_ci(x[0])
    assert ci["level"] == 1 - 2 * 0.5**n  # 0.75 for 3 samples, 0.9375 for 5
    assert ci["reaches"] is False
    assert abs(covered - ci["level"]) < 3 * math.sqrt(ci["level"] * (1 - ci["level"]) / TRIALS) + 1e-9


def test_exact_ranks_match_the_binomial_table() -> None:
    # classic table values for the 95% order-statistic interval of the median
    assert median_order_ranks(6) == (1, 1 - 2 / 64)
    assert median_order_ranks(10)[0] == 2
    assert median_order_ranks(20)[0] == 6
    assert median_order_ranks(30)[0] == 10
    k, level = median_order_ranks(100_000)  # large n: no overflow, close to nominal
    assert 0.95 <= level < 0.951 and 0 < k < 50_000


def test_interval_narrows_with_more_samples() -> None:
    rng = np.random.default_rng(3)
    small, large = rng.normal(10, 1, 20), rng.normal(10, 1, 2000)
    w = [median_ci(v)["hi"] - median_ci(v)["lo"] for v in (small, large)]  # type: ignore[operator]
    assert w[1] < w[0] / 3


def test_tables_show_n_beside_the_interval_and_no_95_interval_from_few_samples() -> None:
    from llmbench.report.terminal import fmt_metric
    from llmbench.results import MetricResult

    many = fmt_metric(MetricResult.from_samples("tpot_ms", [float(v) for v in range(1, 21)]))
    assert "10.50 ms [6.00, 15.00] n=20" in many
    few = fmt_metric(MetricResult.from_samples("tpot_ms", [1.0, 2.0, 3.0]))
    assert few == "2.00 ms n=3"
    # a set stored before this rule: its bootstrap 'ci95' of 3 samples is not shown as a 95% interval
    old = MetricResult(value=2.0, unit="ms", stats={"ci95": [1.0, 3.0], "n": 3}, samples=[1.0, 2.0, 3.0])
    assert fmt_metric(old) == "2.00 ms n=3"
