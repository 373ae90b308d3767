"""Summary statistics computed from raw samples (never from other summaries); the distributions and the
bootstrap are scipy.stats', imported where used: every command loads this module (through results.py),
and importing scipy.stats takes longer than the rest of the CLI's start."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
SEED = 20261122  # fixed: the same samples always give the same interval
# Bounds on what a bootstrap holds in memory, whatever a set carries (a metric of 10 M samples once asked
# for 149 GiB): at most MAX_BOOTSTRAP_SAMPLES order statistics of a sample array resampled (every k-th of
# the sorted samples, the median's neighbourhood kept as the distribution's), and at most
# BOOTSTRAP_CELLS floats drawn at once (scipy's `batch`): a comparison stays within a few hundred MB.
MAX_BOOTSTRAP_SAMPLES = 20_000
BOOTSTRAP_CELLS = 4_000_000


def bootstrap_distribution(
    samples: Sequence[float] | np.ndarray, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED
) -> np.ndarray:
    """The `resamples` bootstrap replicates of the median (scipy.stats.bootstrap, fixed seed): the raw
    material of a CI, kept so that derived quantities (a ratio of two medians, a geometric mean of ratios)
    get intervals too."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 1:  # scipy needs two; one sample's every resample is that sample
        return np.full(resamples, x[0])
    if x.size > MAX_BOOTSTRAP_SAMPLES:  # evenly spaced order statistics: the same distribution, thinned
        x = np.sort(x)[np.linspace(0, x.size - 1, MAX_BOOTSTRAP_SAMPLES).round().astype(np.int64)]
    # a copy: the cached replicates stay as computed whatever a caller does with its array
    return _bootstrap_cached(hashlib.sha256(x.tobytes()).digest(), x.tobytes(), resamples, seed).copy()


_CACHE: dict[tuple[bytes, int, int], np.ndarray] = {}
_CACHE_SIZE = 1024  # at most 1,024 x 2,000 float64s: 16 MB (keyed by the samples' digest, not the samples)


def _bootstrap_cached(digest: bytes, raw: bytes, resamples: int, seed: int) -> np.ndarray:
    """The replicates of one sample array (as bytes), computed once: a fixed seed makes them a function of
    the samples, and a page or comparison over a results tree resamples each case's samples many times
    (every section, table and command that compares it; a committed tree's pages did so 5 times over)."""
    import scipy.stats

    key = (digest, resamples, seed)
    if key not in _CACHE:
        x = np.frombuffer(raw, dtype=np.float64)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = scipy.stats.bootstrap((x,), np.median, n_resamples=resamples, method="percentile",
                                            batch=max(1, BOOTSTRAP_CELLS // x.size), rng=seed).bootstrap_distribution
    return _CACHE[key]


def median_ratio_ci(base: Sequence[float], other: Sequence[float]) -> tuple[float, float, float]:
    """median(base) / median(other) and its 95% percentile bootstrap interval, each side resampled
    independently from its own samples (scipy.stats.bootstrap, fixed seed)."""
    import scipy.stats

    def ratio(b: np.ndarray, o: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(np.median(b, axis=axis) / np.median(o, axis=axis))

    ci = scipy.stats.bootstrap((base, other), ratio, n_resamples=BOOTSTRAP_RESAMPLES, method="percentile",
                               rng=SEED).confidence_interval
    return float(ratio(np.asarray(base), np.asarray(other))), float(ci.low), float(ci.high)


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


def median_order_ranks(n: int, confidence: float = CI_LEVEL) -> tuple[int, float]:
    """The largest 1-based rank k such that [X_(k), X_(n-k+1)] holds the true median with probability
    >= `confidence` for ANY continuous distribution, and that exact probability 1 - 2 P(B <= k-1),
    B ~ Binomial(n, 1/2). k = 0 when no pair of order statistics reaches `confidence` (n < 6 at 95%);
    the coverage returned then is that of [min, max], the widest interval there is."""
    if n <= 0:
        raise ValueError("no samples")
    cdf = _half_binom_cdf(np.arange((n + 1) // 2), n)
    alpha_half = (1.0 - confidence) / 2.0
    ok = np.flatnonzero(cdf <= alpha_half + 1e-12)
    if ok.size == 0:
        return 0, float(1.0 - 2.0 * cdf[0])
    k = int(ok[-1]) + 1
    return k, float(1.0 - 2.0 * cdf[k - 1])


def _half_binom_cdf(k: np.ndarray, n: int) -> np.ndarray:
    """scipy.stats.binom.cdf(k, n, 0.5) for integers 0 <= k < n, bit for bit: the ufunc that scipy.stats
    calls there (binom._cdf: scipy.special's _binom_cdf of floor(k), clipped to [0, 1]), without importing
    scipy.stats, over a second of every case process that summarizes its samples (scipy.special: 0.4 s)."""
    try:
        from scipy.special._ufuncs import _binom_cdf
    except ImportError:  # a scipy that keeps it elsewhere: the public route
        import scipy.stats

        return np.asarray(scipy.stats.binom.cdf(k, n, 0.5), dtype=np.float64)
    return np.asarray(np.clip(_binom_cdf(np.floor(k), n, 0.5), 0.0, 1.0), dtype=np.float64)


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


def prediction_interval(values: Sequence[float], confidence: float = CI_LEVEL) -> tuple[float, float] | None:
    """The `confidence` prediction interval for one more run, given the runs `values` (positive; each a
    run's figure), on the log scale: exp(m +- t(n-1) * s * sqrt(1 + 1/n)), m and s the mean and sample
    standard deviation of their logs. One more run of the same population lands inside with probability
    `confidence` where the logs are normal. The median +- two standard deviations is not that at small n
    (3 runs: about 76%). None below two runs: no spread to predict from."""
    import scipy.stats

    x = np.log(np.asarray(values, dtype=np.float64))
    if x.size < 2:
        return None
    t = float(scipy.stats.t.ppf(0.5 + confidence / 2.0, x.size - 1))
    half = t * float(np.std(x, ddof=1)) * math.sqrt(1.0 + 1.0 / x.size)
    m = float(np.mean(x))
    return math.exp(m - half), math.exp(m + half)


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
