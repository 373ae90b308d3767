"""Summary statistics computed from raw samples (never from other summaries)."""

from __future__ import annotations

import math
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
    if not (math.isfinite(first) and math.isfinite(last)):
        return None  # no drift of NaN or infinite samples (results.check_finite flags them)
    return last / first - 1.0 if first else None


CI_METHOD = "order statistic"  # distribution-free binomial interval of the median
CI_LEVEL = 0.95
MIN_N_FOR_CI95 = 6  # 1 - 2 * 0.5**n >= 0.95 first holds at n = 6


def _binomial_half_cdf(n: int) -> np.ndarray:
    """P(B <= j) for B ~ Binomial(n, 1/2), j = 0..n (log-space recursion: exact enough for any n)."""
    j = np.arange(n, dtype=np.float64)
    log_pmf = np.concatenate(([0.0], np.cumsum(np.log((n - j) / (j + 1))))) + n * np.log(0.5)
    return np.minimum(np.cumsum(np.exp(log_pmf)), 1.0)


def median_order_ranks(n: int, confidence: float = CI_LEVEL) -> tuple[int, float]:
    """The largest 1-based rank k such that [X_(k), X_(n-k+1)] holds the true median with probability
    >= `confidence` for ANY continuous distribution, and that exact probability 1 - 2 P(B <= k-1),
    B ~ Binomial(n, 1/2). k = 0 when no pair of order statistics reaches `confidence` (n < 6 at 95%);
    the coverage returned then is that of [min, max], the widest interval there is."""
    if n <= 0:
        raise ValueError("no samples")
    cdf = _binomial_half_cdf(n)
    alpha_half = (1.0 - confidence) / 2.0
    ok = np.flatnonzero(cdf[: (n + 1) // 2] <= alpha_half + 1e-12)
    if ok.size == 0:
        return 0, float(1.0 - 2.0 * cdf[0])
    k = int(ok[-1]) + 1
    return k, float(1.0 - 2.0 * cdf[k - 1])


def median_ci(samples: Sequence[float] | np.ndarray, confidence: float = CI_LEVEL) -> dict[str, object]:
    """The distribution-free order-statistic interval of the median: {"lo", "hi", "level", "method"},
    `level` being the coverage it achieves (>= `confidence`, not a nominal one). With too few samples
    for `confidence` it is [min, max] with the lower level stated, and `reaches` is False: such an
    interval must not be shown as a 95% one (3 samples: [min, max] holds the median 75% of the time)."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    if x.size == 0:
        raise ValueError("no samples")
    k, level = median_order_ranks(x.size, confidence)
    lo, hi = (x[k - 1], x[x.size - k]) if k else (x[0], x[-1])
    return {"lo": float(lo), "hi": float(hi), "level": level, "method": CI_METHOD, "reaches": bool(k)}


def interval_stats(samples: Sequence[float] | np.ndarray) -> dict[str, object]:
    """The interval keys of `summarize`: `ci` (with its exact coverage), `ci95` ([lo, hi] where that
    coverage reaches 95%, else None) and `ci_method`."""
    ci = median_ci(samples)
    reaches = ci.pop("reaches")
    return {"ci95": [ci["lo"], ci["hi"]] if reaches else None, "ci": ci, "ci_method": CI_METHOD}


def summarize(samples: Sequence[float] | np.ndarray) -> dict[str, object]:
    """median, mean, p90, p99, min, max, stdev, cv, n, the median's order-statistic interval `ci`
    (with its exact coverage) and `ci95` = [lo, hi] where that coverage reaches 95% (n >= 6), else
    None: no 95% interval exists from so few samples, and none is claimed."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        raise ValueError("no samples")
    with np.errstate(invalid="ignore", over="ignore"):  # a NaN or infinite sample gives NaN figures, not a warning
        mean = float(x.mean())
        stdev = float(x.std(ddof=1)) if x.size > 1 else 0.0
        return {
            "median": float(np.median(x)),
            "mean": mean,
            "p90": float(np.percentile(x, 90)),
            "p99": float(np.percentile(x, 99)),
            "min": float(x.min()),
            "max": float(x.max()),
            "stdev": stdev,
            "cv": stdev / mean if mean else 0.0,
            **interval_stats(x),
            "n": int(x.size),
        }


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom (any real df > 0)."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The `p` quantile of Student's t with `df` degrees of freedom, by bisection on `t_cdf` (numpy has
    no t distribution and llmbench does not depend on scipy)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(80):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2.0
