"""Summary statistics computed from raw samples (never from other summaries)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
_SEED = 20261122  # fixed: the same samples always give the same interval


def bootstrap_ci(
    samples: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.median,
    *,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of `statistic` over `samples`."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        raise ValueError("no samples")
    if x.size == 1:
        return float(x[0]), float(x[0])
    stats = bootstrap_distribution(x, statistic, resamples=resamples)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def bootstrap_distribution(
    samples: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.median,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = _SEED,
) -> np.ndarray:
    """The `resamples` bootstrap replicates of `statistic` (fixed seed): the raw material of a CI, kept
    so that derived quantities (a ratio of two medians, a geometric mean of ratios) get intervals too."""
    x = np.asarray(samples, dtype=np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(resamples, x.size))
    if statistic is np.median:
        return np.median(x[idx], axis=1)
    return np.apply_along_axis(statistic, 1, x[idx])


DRIFT_THRESHOLD = 0.05


def drift(samples: Sequence[float] | np.ndarray) -> float | None:
    """Relative change from the first tenth of the (time-ordered) samples to the last tenth, by median;
    None with fewer than 20 samples."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size < 20:
        return None
    k = max(2, x.size // 10)
    first, last = float(np.median(x[:k])), float(np.median(x[-k:]))
    return last / first - 1.0 if first else None


def summarize(samples: Sequence[float]) -> dict[str, object]:
    """median, mean, p90, p99, min, max, stdev, cv, ci95 (bootstrap of the median) and n."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        raise ValueError("no samples")
    mean = float(x.mean())
    stdev = float(x.std(ddof=1)) if x.size > 1 else 0.0
    lo, hi = bootstrap_ci(x)
    return {
        "median": float(np.median(x)),
        "mean": mean,
        "p90": float(np.percentile(x, 90)),
        "p99": float(np.percentile(x, 99)),
        "min": float(x.min()),
        "max": float(x.max()),
        "stdev": stdev,
        "cv": stdev / mean if mean else 0.0,
        "ci95": [lo, hi],
        "n": int(x.size),
    }
