"""Sustained-load analysis (the `burn` scenario): did throughput or clock fall from the first interval?

Pure arithmetic over a timeline of per-interval readings, so the throttling flag is tested on
synthetic samples. Sustained level = median of the last third of the intervals: one slow interval
(a neighbour's process, a clock step) does not flag, a settled drop does.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

THROTTLE_DROP = 0.05  # more than 5% below the first interval's level: throttled


def sustained_level(values: Sequence[float]) -> float:
    """Median of the last third of the intervals (at least one)."""
    if not values:
        raise ValueError("no intervals")
    n = max(1, len(values) // 3)
    return float(statistics.median(values[-n:]))


def drop(values: Sequence[float]) -> float | None:
    """1 - sustained / first; None with fewer than two intervals or a zero first interval."""
    if len(values) < 2 or not values[0]:
        return None
    return 1.0 - sustained_level(values) / values[0]


def throttle_flags(
    tflops: Sequence[float],
    clocks_mhz: Sequence[float] | None = None,
    threshold: float = THROTTLE_DROP,
    reasons: Sequence[Sequence[str]] | None = None,
) -> list[str]:
    """Sentences, one per quantity that fell by more than `threshold` from its first interval (empty
    when neither did), naming the NVML clock-event reasons seen in the intervals if there are any."""
    out = []
    for label, values, unit in (("throughput", tflops, "TFLOP/s"), ("SM clock", clocks_mhz or [], "MHz")):
        d = drop(values)
        if d is not None and d > threshold:
            out.append(
                f"{label} fell {d:.0%} from the first interval ({values[0]:.4g} {unit}) to the sustained level "
                f"({sustained_level(values):.4g} {unit}, median of the last third); threshold {threshold:.0%}"
            )
    seen = sorted({r for rs in reasons or [] for r in rs if r not in ("GpuIdle", "ApplicationsClocksSetting")})
    if out and seen:
        out.append(f"NVML clock-event reasons during the run: {', '.join(seen)}")
    return out
