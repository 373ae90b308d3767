"""Timers and the measurement loop: warm-up, then "at least N iterations AND at least S seconds". A sample
is one timed stretch of `inner` back-to-back calls (more than one only for calls shorter than
`min_sample_s`); CUDA events on a GPU, the host synchronising only between rounds of about a tenth of
`min_seconds`. docs/design.md, "The harness and the rules of measurement"."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field


class StopRule(BaseModel):
    """Harness settings of one case (suite keys of the same names; not part of the case id)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    warmup_iters: int = Field(3, ge=0, description="untimed iterations first")
    min_iters: int = Field(10, ge=1, description="at least this many timed samples")
    min_seconds: float = Field(1.0, ge=0.0, description="and at least this many seconds of them")
    max_iters: int = Field(100_000, ge=1, description="hard cap on timed samples")
    min_sample_s: float = Field(1e-3, ge=0.0, description="calls shorter than this are repeated within a sample")
    timeout_s: float = Field(600.0, gt=0, description="the case process is killed after this")

    def done(self, iters: int, elapsed_s: float) -> bool:
        return iters >= self.max_iters or (iters >= self.min_iters and elapsed_s >= self.min_seconds)


class Timer(Protocol):
    name: str

    def sync(self) -> None: ...

    def time(self, fn: Callable[[], Any], n: int, inner: int = 1) -> list[float]:
        """Take n samples back to back, each of `inner` calls; return seconds per call of each."""
        ...


class PerfCounterTimer:
    """Host clock; `sync` (a device synchronisation, or nothing on the CPU) ends every iteration."""

    name = "perf_counter"

    def __init__(self, sync: Callable[[], None] | None = None) -> None:
        self._sync = sync or (lambda: None)

    def sync(self) -> None:
        self._sync()

    def time(self, fn: Callable[[], Any], n: int, inner: int = 1) -> list[float]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            self._sync()
            out.append((time.perf_counter() - t0) / inner)
        return out


class CudaEventTimer:
    """CUDA events on the current stream: n + 1 events bracket n iterations, one sync per round."""

    name = "cuda_event"

    def __init__(self) -> None:
        import torch

        self._torch = torch

    def sync(self) -> None:
        self._torch.cuda.synchronize()

    def time(self, fn: Callable[[], Any], n: int, inner: int = 1) -> list[float]:
        ev = [self._torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        ev[0].record()
        for i in range(n):
            for _ in range(inner):
                fn()
            ev[i + 1].record()
        ev[n].synchronize()
        return [ev[i].elapsed_time(ev[i + 1]) / 1e3 / inner for i in range(n)]


def timer_for(device_kind: str) -> Timer:
    if device_kind == "cuda":
        return CudaEventTimer()
    return PerfCounterTimer()


@dataclass
class Measurement:
    samples_s: list[float]
    warmup_s: float
    elapsed_s: float  # wall time of the timed window (first round start to last sync)
    timer: str
    inner: int = 1  # calls per sample
    readings: dict[str, Any] = field(default_factory=dict)  # monitors' readings over the window

    @property
    def iters(self) -> int:
        """Calls timed (samples x inner): what per-call quantities such as energy divide by."""
        return len(self.samples_s) * self.inner


ProgressFn = Callable[[float, str], None]


def measure(
    fn: Callable[[], Any],
    rule: StopRule,
    timer: Timer,
    *,
    progress: ProgressFn | None = None,
    clock: Callable[[], float] = time.perf_counter,
    on_window_start: Callable[[], None] | None = None,
    on_window_end: Callable[[], dict[str, Any]] | None = None,
    between_rounds: Callable[[bool], None] | None = None,
) -> Measurement:
    """Warm up, then time `fn` until the stop rule holds. Returns the raw per-iteration samples.

    `on_window_start`/`on_window_end` bracket the timed window only (not the warm-up): monitors
    such as the NVML energy counter hook in there and return their readings. `between_rounds(first_or_last)`
    runs in this thread just before the first round, after each round's sync and after the last: host work
    that must stay out of every sample (measure/host_speed's probe)."""
    report = progress or (lambda frac, text: None)
    t_w = clock()
    for i in range(rule.warmup_iters):
        fn()
        report(0.0, f"warm-up {i + 1}/{rule.warmup_iters}")
    timer.sync()
    warmup_s = clock() - t_w
    inner = calibrate_inner(fn, timer, rule.min_sample_s)

    samples: list[float] = []
    round_n = 1
    if on_window_start is not None:
        on_window_start()
    if between_rounds is not None:
        between_rounds(True)
    t0 = clock()
    elapsed = 0.0
    while not rule.done(len(samples), elapsed):
        samples.extend(timer.time(fn, round_n, inner))
        elapsed = clock() - t0
        if between_rounds is not None:
            between_rounds(rule.done(len(samples), elapsed))
        n = len(samples)
        frac_iters = n / rule.min_iters
        frac_time = elapsed / rule.min_seconds if rule.min_seconds else 1.0
        report(min(1.0, frac_iters, frac_time), f"{n} samples, {elapsed:.1f}s")
        round_n = _next_round(rule, n, elapsed)
    readings = on_window_end() if on_window_end is not None else {}
    return Measurement(samples_s=samples, warmup_s=warmup_s, elapsed_s=elapsed, timer=timer.name, inner=inner,
                       readings=readings)


MAX_INNER = 10_000


def calibrate_inner(fn: Callable[[], Any], timer: Timer, min_sample_s: float) -> int:
    """Calls per sample so that a sample lasts at least `min_sample_s` (1 for anything slower)."""
    if min_sample_s <= 0:
        return 1
    inner = 1
    while inner < MAX_INNER:
        n = 1 if inner == 1 else 3  # one call settles it for anything slow (a whole generate())
        t = sum(timer.time(fn, n, inner)) / n
        if t * inner >= min_sample_s:
            break
        inner = min(MAX_INNER, max(inner * 2, math.ceil(min_sample_s / max(t, 1e-9))))
    return inner


def _next_round(rule: StopRule, n: int, elapsed: float) -> int:
    """How many iterations to run before the next look at the clock."""
    per_iter = max(elapsed / max(n, 1), 1e-9)
    time_left = rule.min_seconds - elapsed
    iters_left = rule.min_iters - n
    if time_left <= 0:
        need = max(iters_left, 1)
    else:
        chunk = max(1, int(0.1 * rule.min_seconds / per_iter))
        need = max(1, min(max(iters_left, math.ceil(time_left / per_iter)), chunk))
    return max(1, min(need, rule.max_iters - n))
