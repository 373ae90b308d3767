"""How fast the measuring thread's CPU core ran around a timed window: a fixed piece of pure-Python work,
timed in that thread's CPU time before the window, between rounds (never inside a sample) and after it.

Why: on the cloud machines llmbench is run on, a virtual CPU can slow to half its speed or less within
seconds, each core on its own, with no steal time and nothing else busy in the guest: the physical
core is shared with work outside it (docs/evidence/h200-sxm-141gb/host-state/). Host-bound
figures follow that speed (a compiled decode's eager prefill and so its TTFT, launch-bound steps), so
a figure that reads off its case's other runs is told from the host's state by this probe
(`info.host_probe_us`, microseconds per probe, in the order taken: lower is faster). The work holds no
allocation, no I/O and no torch, so only the core's speed moves it."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence

PROBE_ITERS = 10_000  # 0.54-0.61 ms on a fast H200-host core (Sapphire Rapids), about 1.0 ms on a slowed one
PROBE_EVERY_S = 0.25  # between rounds, at most this often: rounds of short calls come every ~0.1 s
INFO_KEY = "host_probe_us"


def _work(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def probe_us(iters: int = PROBE_ITERS) -> float:
    """CPU time of the calling thread for `iters` iterations of the fixed loop, in microseconds."""
    c = time.thread_time_ns()
    _work(iters)
    return (time.thread_time_ns() - c) / 1e3


class HostProbe:
    """Probes taken at most every `every_s` (and always where `force`), kept in order."""

    def __init__(self, every_s: float = PROBE_EVERY_S, clock: Callable[[], float] = time.perf_counter,
                 probe: Callable[[], float] = probe_us) -> None:
        self.every_s = every_s
        self._clock = clock
        self._probe = probe
        self._last: float | None = None
        self.us: list[float] = []

    def take(self, force: bool = False) -> None:
        now = self._clock()
        if not force and self._last is not None and now - self._last < self.every_s:
            return
        if self._last is None:
            self._probe()  # once untimed: the first in a process can read slow (cold code; 2 of 8 H200 runs)
        self.us.append(round(self._probe(), 1))
        self._last = self._clock()


def slowdown(case_us: Sequence[float], reference_us: float) -> float | None:
    """How much slower the core ran during a case than a reference probe time (the fastest probe of its
    set, or the median of its alone runs' probes): the median of the case's probes / the reference."""
    if not case_us or reference_us <= 0:
        return None
    return statistics.median(case_us) / reference_us


SLOWED = 1.3  # a case whose median probe is this much over its set's fastest ran on a slowed core: the
# fast state's medians spread by ~1.13x on one machine, the slow state reads ~1.7x (host-state)
NOTE_PREFIX = "the host core ran slower"


def slowdowns(probes: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each case's slowdown (id -> the median of its probes / the fastest probe of them all); cases without
    probes are left out."""
    fastest = min((v for vs in probes.values() for v in vs), default=0.0)
    return {cid: s for cid, vs in probes.items() if (s := slowdown(vs, fastest)) is not None}


def slowed(probes: Mapping[str, Sequence[float]], threshold: float = SLOWED) -> dict[str, float]:
    """The cases (id -> slowdown) whose probes' median is at least `threshold` times the fastest probe of
    them all."""
    return {cid: round(s, 2) for cid, s in slowdowns(probes).items() if s >= threshold}


def note(probes: Mapping[str, Sequence[float]]) -> str | None:
    """One warning for a result set naming its cases timed on a slowed core, or None."""
    cases = slowed(probes)
    if not cases:
        return None
    named = ", ".join(f"{cid} ({s:.2f}x)" for cid, s in sorted(cases.items(), key=lambda kv: -kv[1]))
    return (f"{NOTE_PREFIX} during the timed windows of {len(cases)} case(s) than at its fastest in this set: "
            f"{named}; their host-bound figures (a compiled decode's TTFT, launch-bound steps) read slow on "
            "that account, not the GPU's (info.host_probe_us; docs/measurements.md, \"The host core's speed\")")
