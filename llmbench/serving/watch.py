"""The client watching itself and the server during a load point.

Every `TICK_S` it samples the requests in flight (the gauge Little's law is checked against) and how
late its own event loop woke (a client short of CPU wakes late, and then sends late). Every window of
`window_s` it asks whether the server still keeps up: a point whose requests in flight (the queue,
under arrivals at a rate) or whose TTFT (from the intended send time) grows window after window is
saturated, and the watcher says so; the driver then ends the point early.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from llmbench.serving.records import RequestRecord

TICK_S = 0.05
GROWING_WINDOWS = 3  # this many windows in a row, each above the one before ...
GROWTH = 1.5  # ... and the last this many times the first window after warm-up: saturated
MIN_TTFT_GROWTH_MS = 20.0  # a TTFT rise smaller than this is noise, however steady


@dataclass
class WindowFigures:
    end_s: float
    in_flight_mean: float
    ttft_ms_median: float | None  # of requests whose first token came in this window, from the intended time


@dataclass
class Watch:
    """What the watcher saw: in-flight samples (one per tick from the start), loop lateness (ms per
    tick), the windows, and the saturation it found (None: none)."""

    window_s: float
    in_flight: list[int] = field(default_factory=list)
    lag_ms: list[float] = field(default_factory=list)
    windows: list[WindowFigures] = field(default_factory=list)
    saturated: str | None = None

    def as_info(self) -> dict[str, Any]:
        return {"window_s": self.window_s, "saturated": self.saturated,
                "windows": [{"end_s": round(w.end_s, 3), "in_flight_mean": round(w.in_flight_mean, 3),
                             "ttft_ms_median": None if w.ttft_ms_median is None else round(w.ttft_ms_median, 3)}
                            for w in self.windows]}


def growing(values: list[float], floor: float = 0.0) -> bool:
    """The last GROWING_WINDOWS values each above the one before, the last GROWTH times the first
    value and more than `floor` above it."""
    if len(values) < GROWING_WINDOWS + 1:
        return False
    tail = values[-GROWING_WINDOWS - 1:]
    rising = all(b > a for a, b in itertools.pairwise(tail))
    first = values[0]
    return rising and tail[-1] >= GROWTH * first and tail[-1] - first > floor


def saturation(windows: list[WindowFigures], by_queue: bool) -> str | None:
    """Why the point is saturated, or None. `by_queue`: arrivals at a rate, where an in-flight count
    that keeps growing means the server serves fewer than arrive (under a fixed concurrency it cannot grow)."""
    if by_queue and growing([w.in_flight_mean for w in windows]):
        a, b = windows[0].in_flight_mean, windows[-1].in_flight_mean
        return (f"requests in flight grew window after window ({a:.1f} -> {b:.1f} over {len(windows)} windows): "
                "the server serves fewer than arrive")
    ttfts = [w.ttft_ms_median for w in windows if w.ttft_ms_median is not None]
    if growing(ttfts, MIN_TTFT_GROWTH_MS):
        return (f"TTFT grew window after window ({ttfts[0]:.0f} -> {ttfts[-1]:.0f} ms median over {len(ttfts)} "
                "windows): the server no longer keeps up")
    return None


async def watch(
    w: Watch,
    t0: float,
    records: list[RequestRecord],
    in_flight: Callable[[], int],
    by_queue: bool,
    on_saturated: Callable[[str], None],
    stop_elsewhere: Callable[[], bool] = lambda: False,
) -> None:
    """Sample until cancelled; call `on_saturated` once when the point is found saturated (or another
    process of the client found it: `stop_elsewhere`). Windows count only after the first request
    ended: before it, in-flight and TTFT ramp up from nothing."""
    k = 0
    window_start: float | None = None
    samples: list[int] = []
    while True:
        k += 1
        due = t0 + k * TICK_S
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        now = time.perf_counter()
        w.lag_ms.append(max(0.0, (now - due) * 1e3))
        n = in_flight()
        w.in_flight.append(n)
        if stop_elsewhere() and w.saturated is None:
            w.saturated = "another process of the client found the point saturated"
            on_saturated(w.saturated)
        if w.window_s <= 0 or w.saturated is not None:
            continue
        t = now - t0
        if window_start is None:
            if any(not math.isnan(r.end_s) for r in records):
                window_start, samples = t, []
            continue
        samples.append(n)
        if t - window_start < w.window_s:
            continue
        ttfts = [(r.chunks_s[0] - r.scheduled_s) * 1e3 for r in records
                 if r.chunks_s and window_start <= r.chunks_s[0] < t]
        w.windows.append(WindowFigures(t, float(np.mean(samples)) if samples else 0.0,
                                       float(np.median(ttfts)) if ttfts else None))
        window_start, samples = t, []
        why = saturation(w.windows, by_queue)
        if why:
            w.saturated = why
            on_saturated(why)
