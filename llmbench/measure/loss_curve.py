"""What a training loss curve says: its final loss, its spikes, and how far one curve ends from another
trained on the same batches in the same order (fp8 against bf16), with an interval.

The rules are fixed here, so every case and report reads a curve the same way:
- final loss: the mean loss of the last FINAL_SHARE of the steps (at least FINAL_MIN steps);
- a spike: a step whose loss exceeds the median of the SPIKE_WINDOW steps before it by more than
  SPIKE_NATS (a loss that is NaN or infinite counts too: the run diverged there); the first
  SPIKE_MIN_HISTORY steps have too little history to be judged;
- the final-loss difference: the mean over the final steps of the per-step difference (this curve's
  loss minus the baseline's at the same step, on the same batch), with a 95% moving-block bootstrap
  interval (blocks of about sqrt(K) consecutive steps keep the steps' correlation). It says how much the
  difference moves from step to step within one pair of runs, not between runs of other seeds.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

FINAL_SHARE = 0.25
FINAL_MIN = 5
SPIKE_WINDOW = 20
SPIKE_MIN_HISTORY = 5
SPIKE_NATS = 0.5
RESAMPLES = 2000
SEED = 20261202  # fixed: the same curves always give the same interval
LEVEL = 0.95
SPIKE_RULE = (f"a step whose loss exceeds the median of the {SPIKE_WINDOW} steps before it by more than "
              f"{SPIKE_NATS} nats, or is not finite (from step {SPIKE_MIN_HISTORY} on)")


def final_steps(n: int) -> int:
    """How many of `n` steps the final loss averages: the last quarter, at least FINAL_MIN (at most n)."""
    return min(n, max(FINAL_MIN, math.ceil(n * FINAL_SHARE)))


def final_loss(losses: Sequence[float]) -> float:
    """The mean loss of the final steps."""
    if not losses:
        raise ValueError("no losses")
    return statistics.fmean(losses[-final_steps(len(losses)):])


def spikes(losses: Sequence[float]) -> list[int]:
    """The 0-based steps that are spikes (SPIKE_RULE)."""
    found = []
    for t, loss in enumerate(losses):
        if t < SPIKE_MIN_HISTORY:
            continue
        if not math.isfinite(loss):
            found.append(t)
            continue
        history = [x for x in losses[max(0, t - SPIKE_WINDOW):t] if math.isfinite(x)]
        if history and loss - statistics.median(history) > SPIKE_NATS:
            found.append(t)
    return found


def block_length(k: int) -> int:
    return max(1, round(math.sqrt(k)))


def final_diff(losses: Sequence[float], base: Sequence[float]) -> tuple[float, float, float, int]:
    """(mean difference, interval low, interval high, K): this curve minus `base` step by step over the
    final K steps of the shorter curve, with the moving-block bootstrap interval of the module docstring
    (NaN bounds where a difference is not finite)."""
    n = min(len(losses), len(base))
    if n == 0:
        raise ValueError("no losses to compare")
    k = final_steps(n)
    d = np.asarray(losses[:n], dtype=np.float64)[-k:] - np.asarray(base[:n], dtype=np.float64)[-k:]
    mean = float(d.mean())
    if not np.isfinite(d).all():
        return mean, math.nan, math.nan, k
    block = block_length(k)
    starts = k - block + 1
    per = math.ceil(k / block)
    rng = np.random.default_rng(SEED)
    picks = rng.integers(0, starts, size=(RESAMPLES, per))
    idx = (picks[:, :, None] + np.arange(block)).reshape(RESAMPLES, -1)[:, :k]
    means = d[idx].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return mean, float(lo), float(hi), k


def interval_method(k: int) -> str:
    """The name of final_diff's interval, as a result set records it."""
    return (f"moving-block bootstrap (blocks of {block_length(k)} steps, {RESAMPLES} resamples) of the mean "
            f"per-step difference over the final {k} steps, same batches")
