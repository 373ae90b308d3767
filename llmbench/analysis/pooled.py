"""Figures from several runs of a case: the median of the runs' medians, the between-run spread, and a
ratio interval that includes it (docs/design.md, "Several runs of a case"; coverage: tests/test_runs.py)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from llmbench.measure.stats import BOOTSTRAP_RESAMPLES
from llmbench.metrics import Better
from llmbench.results import MetricResult

RUNS_CI_METHOD = (
    "t-interval on the log ratio of the runs' medians (Welch; one side a single run: the other side's "
    "between-run variance for both), widened to hold the point"
)
CONFIDENCE = 0.95


@dataclass
class PooledMetric:
    """One metric of one case on one side, over the runs that measured it `ok`."""

    values: list[float]  # each run's figure (the median of its samples)
    ns: list[int | None]  # each run's sample count; None: a single reading

    @property
    def runs(self) -> int:
        return len(self.values)

    @property
    def value(self) -> float:
        """The median of the runs' medians."""
        return float(np.median(self.values))

    @property
    def n(self) -> int | None:
        """Samples behind the figure, all runs together; None where a run holds a single reading."""
        return None if any(n is None for n in self.ns) else int(sum(n for n in self.ns if n is not None))

    @property
    def between_run_cv(self) -> float | None:
        """Standard deviation of the runs' medians over their mean; None with fewer than 2 runs, or where
        a run's figure is NaN or infinite (no spread is measured from it)."""
        x = np.asarray(self.values, dtype=np.float64)
        if self.runs < 2 or not np.isfinite(x).all():
            return None
        return float(x.std(ddof=1) / x.mean()) if x.mean() else None


def pool_metric(got: list[MetricResult], counts: list[int | None]) -> PooledMetric:
    """The runs' figures of one metric (`counts`: each one's sample count)."""
    return PooledMetric([m.value for m in got], counts)


@dataclass
class LogRatioInterval:
    """A ratio's interval on the log scale: centre, standard error and degrees of freedom."""

    centre: float
    se: float
    df: float

    def bounds(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        import scipy.stats  # where used: it is slow to import (measure/stats.py)

        if self.se == 0.0:
            return float(np.exp(self.centre)), float(np.exp(self.centre))
        half = scipy.stats.t.ppf(0.5 + confidence / 2.0, self.df) * self.se
        return float(np.exp(self.centre - half)), float(np.exp(self.centre + half))

    def draws(self, seed: int, size: int = BOOTSTRAP_RESAMPLES) -> np.ndarray:
        """Replicates of the ratio from the same t distribution: what a geometric mean of ratios
        combines (as it combines the bootstrap replicates of single-run ratios)."""
        rng = np.random.default_rng(seed)
        t = rng.standard_t(self.df, size) if self.se else np.zeros(size)
        with np.errstate(over="ignore"):  # a t draw of 1-2 degrees of freedom may overflow: an unbounded
            return np.asarray(np.exp(self.centre + self.se * t))  # ratio (inf), which percentiles keep


def log_ratio_interval(base: list[float], this: list[float], better: Better) -> LogRatioInterval | None:
    """The t-interval of the oriented log ratio of two sides' run figures (see the module docstring);
    None when neither side has two runs (nothing says how far runs spread) or a figure is not positive."""
    if better == "neither" or min(len(base), len(this)) < 1 or max(len(base), len(this)) < 2:
        return None
    if min(base) <= 0 or min(this) <= 0:
        return None
    lb, lt = np.log(np.asarray(base, dtype=np.float64)), np.log(np.asarray(this, dtype=np.float64))
    sign = 1.0 if better == "higher" else -1.0
    centre = sign * float(lt.mean() - lb.mean())
    kb, kt = lb.size, lt.size
    if kb >= 2 and kt >= 2:
        vb, vt = float(lb.var(ddof=1)) / kb, float(lt.var(ddof=1)) / kt
        se2 = vb + vt
        if se2 == 0.0:
            return LogRatioInterval(centre, 0.0, float(kb + kt - 2))
        df = se2**2 / (vb**2 / (kb - 1) + vt**2 / (kt - 1))
        return LogRatioInterval(centre, float(np.sqrt(se2)), float(df))
    spread = lb if kb >= 2 else lt  # the single run's spread is taken to be the other side's
    var = float(spread.var(ddof=1))
    return LogRatioInterval(centre, float(np.sqrt(var * (1.0 / kb + 1.0 / kt))), float(spread.size - 1))


def runs_seed(stream: str) -> int:
    """A fixed seed per case and metric, so the same runs always give the same replicates."""
    return zlib.crc32(f"runs:{stream}".encode()) * 2 + 1
