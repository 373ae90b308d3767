"""GPU kernel time per repeated step (a decode step), by difference of two profiled runs.

A generate() of N tokens is prefill + (N - 1) decode steps. Profiling it once and subtracting the
wall-clock TTFT from the kernel time would charge the prefill's *idle* time (an eager prefill at
batch 1 is host-bound: tens of ms of wall clock, a few of kernels) to the decode steps and so
understate their busy time. Two runs of different lengths share the same prefill; the difference
of their kernel time over the difference of their step counts is the decode step's alone.
"""

from __future__ import annotations

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


def kernel_tally(fn: Callable[[], Any], device: str = "cuda") -> KernelTally:
    """Run `fn` under torch.profiler, recording only `device` activity, and tally what ran there. On
    "cuda" that is every kernel, memcpy and memset (CUDA-graph replays included: CUPTI reports the
    kernels inside a graph one by one); "cpu" records host operators (which nest) and is here so the
    plumbing is testable without a GPU.

    Reads kineto's raw events: the profiler's own event list rebuilds a tree of every host operator,
    which for an eager generate() (about 10^5 operators) takes longer than the run it describes."""
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
    return KernelTally.from_spans(
        (e.name(), e.start_ns() / 1e3, e.end_ns() / 1e3) for e in events if e.device_type() == want
    )


def decode_step_profile(generate: Callable[[int], Any], short: int, long: int, device: str = "cuda") -> StepProfile:
    """Profile generate(short) and generate(long) tokens; the kernel time of one decode step."""
    a = kernel_tally(lambda: generate(short), device)
    b = kernel_tally(lambda: generate(long), device)
    return per_step(a, b, long - short)
