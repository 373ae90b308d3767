"""The prediction interval for one more run (measure/stats.prediction_interval) holds what its label
says at the run counts a beside-vs-alone check has, and the check (benchmarks/beside_vs_alone.py)
judges a side-by-side figure by it."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from test_compare_support import H200_ENV, gemm_case, result_set

from llmbench.measure.stats import prediction_interval
from llmbench.results import CaseResult

ROOT = Path(__file__).resolve().parents[1]
TRIALS = 4000  # binomial sd of a 95% coverage: 0.0034


def _in_prediction_interval(runs: np.ndarray, new: float) -> bool:
    lo, hi = prediction_interval(runs.tolist()) or (math.nan, math.nan)
    return lo <= new <= hi


def _in_two_sds_of_the_median(runs: np.ndarray, new: float) -> bool:
    """The band the check used before: the median +- two standard deviations of the logs."""
    return abs(math.log(new / float(np.median(runs)))) <= 2 * float(np.std(np.log(runs), ddof=1))


def _coverage(n: int, inside: Callable[[np.ndarray, float], bool], seed: int) -> float:
    """The share of new runs that `inside` counts in, each new run drawn beside `n` runs of the same
    log-normal population."""
    rng = np.random.default_rng(seed)
    return sum(inside(np.exp(rng.normal(0.0, 0.03, n)), math.exp(rng.normal(0.0, 0.03)))
               for _ in range(TRIALS)) / TRIALS


@pytest.mark.parametrize("n", [3, 5, 8])
def test_the_prediction_interval_holds_95_percent_of_new_runs(n: int) -> None:
    assert 0.935 <= _coverage(n, _in_prediction_interval, seed=n) <= 0.965


@pytest.mark.parametrize(("n", "below"), [(3, 0.85), (5, 0.9)])
def test_two_sds_around_the_median_is_no_95_percent_band_at_few_runs(n: int, below: float) -> None:
    assert _coverage(n, _in_two_sds_of_the_median, seed=100 + n) < below


def test_one_run_predicts_nothing_and_the_interval_is_on_the_log_scale() -> None:
    assert prediction_interval([5.0]) is None
    lo, hi = prediction_interval([100.0, 102.0, 98.0, 101.0])
    assert lo < 100.0 < hi
    assert math.isclose(math.log(hi) - math.log(100.25), math.log(100.25) - math.log(lo), rel_tol=0.02)


def _pathed(precision: str, tflops: float) -> CaseResult:
    """A gemm case that recorded its code path: its runs pool with the same path's (analysis/runs.py)."""
    c = gemm_case(precision, tflops, samples=False)
    c.code_path = {"engine": "torch", "mode": "eager"}
    return c


def test_the_beside_check_judges_by_the_prediction_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three alone runs at 700, 707 and 714 TFLOP/s: 2 CVs around the median reach about 686-728, the 95%
    prediction interval about 673-743. A figure of 680 beside others is inside the prediction
    interval and outside the 2-CV band; 660 is outside both."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    check = importlib.import_module("beside_vs_alone")
    alone = [result_set(H200_ENV, [_pathed("bf16", v)]) for v in (700.0, 707.0, 714.0)]
    for beside, within in ((680.0, True), (660.0, False)):
        new = result_set(H200_ENV, [_pathed("bf16", beside)])
        (row,) = [r for r in check.rows(new, alone) if r["metric"] == "tflops"]
        assert row["alone_runs"] == 3
        assert row["alone_pi95"][0] < 700.0 < row["alone_pi95"][1]
        assert row["within"] is within
        assert abs(math.log(row["ratio"])) > 2 * row["case_cv"]  # outside the old band either way
    # alone runs that recorded no code path are no measurement of what ran beside (nor of each other)
    pathless = [result_set(H200_ENV, [gemm_case("bf16", v, samples=False)]) for v in (700.0, 707.0, 714.0)]
    new = result_set(H200_ENV, [_pathed("bf16", 680.0)])
    assert [r for r in check.rows(new, pathless) if r["metric"] == "tflops"] == []


def test_the_beside_check_gives_the_host_slowdown_of_each_side(monkeypatch: pytest.MonkeyPatch) -> None:
    """A case whose probes ran at about twice the set's fastest reads a host slowdown near 2; its alone runs,
    whose probes sat at their sets' fastest, near 1. Sets without probes give none."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    check = importlib.import_module("beside_vs_alone")

    def probed(precision: str, tflops: float, probes: list[float]) -> object:
        c = _pathed(precision, tflops)
        c.info["host_probe_us"] = probes
        return c

    alone = [result_set(H200_ENV, [probed("bf16", v, [600.0, 610.0])]) for v in (700.0, 707.0, 714.0)]
    new = result_set(H200_ENV, [probed("bf16", 690.0, [1200.0, 1250.0, 1300.0]), probed("fp8", 1300.0, [600.0])])
    (row,) = [r for r in check.rows(new, alone) if r["metric"] == "tflops" and r["case"] == new.cases[0].id]
    assert row["host_slowdown"] == pytest.approx(1250.0 / 600.0, abs=1e-3)
    assert row["alone_host_slowdown"] == pytest.approx(605.0 / 600.0, abs=1e-3)
    assert "2.08 (1.01)" in check.markdown([row])
    assert row["within"] is True and row["host_slowed"] is None  # inside its interval: nothing to explain
    low = result_set(H200_ENV, [probed("bf16", 600.0, [1200.0, 1250.0]), probed("fp8", 1300.0, [600.0])])
    (row,) = [r for r in check.rows(low, alone) if r["metric"] == "tflops" and r["case"] == low.cases[0].id]
    assert row["within"] is False and row["host_slowed"] is True
    assert "**no** (slowed core)" in check.markdown([row])
    calm = result_set(H200_ENV, [probed("bf16", 600.0, [610.0, 620.0]), probed("fp8", 1300.0, [600.0])])
    (row,) = [r for r in check.rows(calm, alone) if r["metric"] == "tflops" and r["case"] == calm.cases[0].id]
    assert row["within"] is False and row["host_slowed"] is False
    bare = result_set(H200_ENV, [_pathed("bf16", 690.0)])
    (row,) = [r for r in check.rows(bare, alone) if r["metric"] == "tflops"]
    assert row["host_slowdown"] is None and row["alone_host_slowdown"] == pytest.approx(1.008, abs=1e-3)
