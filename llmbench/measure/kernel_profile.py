"""GPU kernel time per repeated step (a decode step), by difference of two profiled runs.

A generate() of N tokens is prefill + (N - 1) decode steps. Profiling it once and subtracting the
wall-clock TTFT from the kernel time would charge the prefill's *idle* time (an eager prefill at
batch 1 is host-bound: tens of ms of wall clock, a few of kernels) to the decode steps and so
understate their busy time. Two runs of different lengths share the same prefill; the difference
of their kernel time over the difference of their step counts is the decode step's alone.

For a loop of like steps (a training step), `profiled_windows` profiles a few windows of back-to-back
steps and `busy_fraction` is the union of the kernels' intervals over each window's wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from llmbench.hardware.roofline import busy_time


@dataclass
class KernelTally:
    """The kernels of one profiled run: busy time (union of intervals, s), count, time per name."""

    busy_s: float
    count: int
    by_name_s: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_spans(cls, spans: Iterable[tuple[str, float, float]]) -> KernelTally:
        """From (name, start_us, end_us) of each kernel."""
        spans = list(spans)
        by_name: dict[str, float] = {}
        for name, s, e in spans:
            by_name[name] = by_name.get(name, 0.0) + (e - s) / 1e6
        return cls(busy_time([(s, e) for _, s, e in spans]) / 1e6, len(spans), by_name)


@dataclass
class StepProfile:
    """Per decode step: GPU busy seconds, kernels launched, and seconds by kernel name."""

    busy_s: float
    kernels: float
    by_name_s: dict[str, float]

    def top(self, n: int = 10) -> list[tuple[str, float]]:
        return sorted(self.by_name_s.items(), key=lambda kv: -kv[1])[:n]


def per_step(short: KernelTally, long: KernelTally, extra_steps: int) -> StepProfile:
    """What `extra_steps` more steps added, per step. Negative differences (noise on a tiny step)
    clamp to zero."""
    if extra_steps <= 0:
        raise ValueError(f"the long run must have more steps than the short one (got {extra_steps} more)")
    names = set(short.by_name_s) | set(long.by_name_s)
    by_name = {n: (long.by_name_s.get(n, 0.0) - short.by_name_s.get(n, 0.0)) / extra_steps for n in names}
    return StepProfile(
        busy_s=max(long.busy_s - short.busy_s, 0.0) / extra_steps,
        kernels=max(long.count - short.count, 0) / extra_steps,
        by_name_s={n: t for n, t in by_name.items() if t > 0},
    )


def device_spans(fn: Callable[[], Any], device: str = "cuda") -> list[tuple[str, int, int]]:
    """Run `fn` under torch.profiler, recording only `device` activity: (name, start_ns, end_ns) of
    what ran there. On "cuda" that is every kernel, memcpy and memset (CUDA-graph replays included:
    CUPTI reports the kernels inside a graph one by one); "cpu" records host operators (which nest)
    and is here so the plumbing is testable without a GPU.

    Reads kineto's raw events (start and end of each, so overlaps can be merged): the profiler's own
    event list rebuilds a tree of every host operator, which for an eager generate() (about 10^5
    operators) takes longer than the run it describes; its per-op totals (`self_device_time_total`,
    formerly `self_cuda_time_total`) are sums of durations that count overlapping kernels twice."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    if device not in ("cuda", "cpu"):
        raise ValueError(f"unknown device {device!r}; valid: cuda, cpu")
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sync()
    with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
        fn()
        sync()
    want = DeviceType.CUDA if cuda else DeviceType.CPU
    events = prof.profiler.kineto_results.events() if prof.profiler and prof.profiler.kineto_results else []
    return [(e.name(), e.start_ns(), e.end_ns()) for e in events if e.device_type() == want]


def kernel_tally(fn: Callable[[], Any], device: str = "cuda") -> KernelTally:
    """Run `fn` under torch.profiler (see `device_spans`) and tally what ran on `device`."""
    return KernelTally.from_spans((name, s / 1e3, e / 1e3) for name, s, e in device_spans(fn, device))


def busy_fraction(intervals: Iterable[tuple[float, float]], wall_s: float) -> float:
    """The share of a wall-clock window in which the device ran at least one kernel: the length of the
    union of the kernels' (start_s, end_s) intervals over `wall_s`. Kernels that overlap (several
    streams, or a copy beside a kernel) count once, so the union cannot exceed the window the kernels
    ran in; the result is still capped at 1, because the kernels' timestamps (the profiler's clock)
    and `wall_s` (the host's) are read from different clocks and may disagree by a few microseconds."""
    if wall_s <= 0:
        raise ValueError(f"wall_s must be positive (got {wall_s})")
    return min(busy_time(list(intervals)) / wall_s, 1.0)


@dataclass
class Window:
    """One profiled window of `steps` back-to-back calls: the device's (start_s, end_s) intervals
    (relative to the first) and the window's wall seconds, synchronised at both ends."""

    steps: int
    wall_s: float
    intervals: list[tuple[float, float]]

    @property
    def busy_s(self) -> float:
        return busy_time(self.intervals)

    @property
    def busy_fraction(self) -> float:
        return busy_fraction(self.intervals, self.wall_s)


def profiled_windows(fn: Callable[[], Any], steps: int, windows: int, device: str = "cuda") -> list[Window]:
    """Call `fn` `steps` times back to back in each of `windows` profiled windows. Each window's wall
    time runs from a synchronisation before the first call to one after the last, inside the
    profiler's session: its start, stop and event parsing are outside it, and so outside any timed
    steps taken before."""
    import torch

    if steps < 1 or windows < 1:
        raise ValueError(f"steps and windows must be >= 1 (got {steps}, {windows})")
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    walls: list[float] = []

    def window() -> None:
        sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        sync()
        walls.append(time.perf_counter() - t0)

    out: list[Window] = []
    for _ in range(windows):
        spans = device_spans(window, device)
        t0_ns = min((s for _, s, _ in spans), default=0)
        out.append(Window(steps, walls[-1], [((s - t0_ns) / 1e9, (e - t0_ns) / 1e9) for _, s, e in spans]))
    return out


def decode_step_profile(generate: Callable[[int], Any], short: int, long: int, device: str = "cuda") -> StepProfile:
    """Profile generate(short) and generate(long) tokens; the kernel time of one decode step."""
    a = kernel_tally(lambda: generate(short), device)
    b = kernel_tally(lambda: generate(long), device)
    return per_step(a, b, long - short)
