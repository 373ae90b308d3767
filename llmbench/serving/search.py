"""The highest load that meets an SLO: coarse steps, then repeated refinement at the boundary.

Coarse: the load doubles from `start` until a point misses the SLO (or is saturated, or `top` is
passed). That brackets the boundary between the last load that met it and the first that did not.
Refinement: `repeats` times, a bisection inside that bracket (rate: to a relative `resolution`;
concurrency: to whole requests, or `resolution` of the load where that is coarser), each with fresh
prompts and arrivals (its own seed) and its own randomly placed splits; each bisection's highest load
that met the SLO is one estimate of the boundary. A saturated point never meets the SLO, so it is
never the capacity.

The capacity is the median of the estimates, and its interval the median's order-statistic interval
over them (measure/stats.median_ci), labelled with the coverage it achieves: 3 repeats give
[min, max] at 75%, 5 give 93.75%, 6 or more reach 95%. What it covers: the median of the estimate one
refinement inside this search's coarse bracket gives (the highest load that met the SLO in it), with
the stated probability (exactly for a rate, at least for a concurrency, whose ties make it wider;
tests/test_serving_capacity.py simulates it). That median lies at or below the load where the
server meets the SLO half the times it is measured, by up to about the resolution. It does not cover
the variation of the coarse bracket itself, nor of servers, days or machines.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from llmbench.measure.stats import median_ci

Axis = Literal["concurrency", "rate"]


@dataclass(frozen=True)
class PointOutcome:
    load: float
    met: bool  # every limit kept, and not saturated
    saturated: bool = False
    facts: dict[str, Any] = field(default_factory=dict)  # attainment, goodput, limits, ... (the curve's point)


@dataclass
class Capacity:
    """A search's answer: `estimates` (one per refinement), `points` in the order measured (the goodput
    and attainment curve), and a sentence where the answer is a bound, not a boundary (`bound`)."""

    axis: Axis
    estimates: list[float] = field(default_factory=list)
    points: list[dict[str, Any]] = field(default_factory=list)
    bound: str | None = None

    @property
    def value(self) -> float:
        return float(statistics.median(self.estimates))

    def interval(self) -> dict[str, Any] | None:
        """The median's order-statistic interval over the estimates and the coverage it achieves."""
        if len(self.estimates) < 2:
            return None
        ci = median_ci(self.estimates)
        ci.pop("reaches")
        return ci


def _mid(axis: Axis, lo: float, hi: float, u: float = 0.5) -> float:
    """The next load between `lo` and `hi`, `u` of the way (rate: on the log scale; concurrency: a whole
    number strictly inside)."""
    if axis == "concurrency":
        return float(min(int(hi) - 1, max(int(lo) + 1, math.floor(lo + u * (hi - lo)))))
    return lo * (hi / lo) ** u


def _resolved(axis: Axis, lo: float, hi: float, resolution: float) -> bool:
    if axis == "concurrency":
        return hi - lo <= max(1.0, math.floor(resolution * lo))
    return hi <= lo * (1.0 + resolution)


def search_capacity(measure: Callable[[float, int, str], PointOutcome], axis: Axis, *, start: float = 1.0,
                    top: float = 4096.0, repeats: int = 3, resolution: float = 0.1, seed: int = 0) -> Capacity:
    """Search with `measure(load, repeat, phase)` (phase "coarse" or "refine"; repeat 0.. seeds the
    point's prompts and arrivals). See the module docstring for what the answer and its interval mean.
    Each bisection step splits its bracket at a random point of its middle half (`seed`): refinements
    then land on different loads, their estimates are continuous where the axis is (rate), and the
    order-statistic interval has the coverage it states rather than more (ties on a fixed grid)."""
    rng = random.Random(seed)
    cap = Capacity(axis)

    def point(load: float, repeat: int, phase: str) -> PointOutcome:
        o = measure(load, repeat, phase)
        cap.points.append({"load": load, "repeat": repeat, "phase": phase, "met": o.met, "saturated": o.saturated,
                           **o.facts})
        return o

    lo, hi, x = None, None, float(start)
    while x <= top:
        if point(x, 0, "coarse").met:
            lo = x
            x = x * 2
        else:
            hi = x
            break
    if lo is None:
        cap.bound = f"no load met the SLO: not even the first, {start:g}; the capacity is below it"
        cap.estimates = [0.0]
        return cap
    if hi is None:
        cap.bound = f"every load up to {lo:g} met the SLO (the search's top is {top:g}): the capacity is at least that"
        cap.estimates = [lo]
        return cap
    for r in range(repeats):
        a, b = lo, hi
        while not _resolved(axis, a, b, resolution):
            m = _mid(axis, a, b, rng.uniform(0.25, 0.75))
            if point(m, r, "refine").met:
                a = m
            else:
                b = m
        cap.estimates.append(a)
    return cap


def client_late(points: list[dict[str, Any]]) -> str | None:
    """A flag for the capacity where the client flagged itself at points near the boundary (the
    refinements, and the coarse step's first miss and the met load below it): a point it missed because it
    sent late, or was short of CPU, lowers the capacity found, so the answer may be the client's rather
    than the server's. None where no such point was flagged."""
    coarse = [p for p in points if p.get("phase") == "coarse"]
    first_miss = next((k for k, p in enumerate(coarse) if not p.get("met")), None)
    bracket = coarse[max(first_miss - 1, 0):first_miss + 1] if first_miss is not None else coarse[-1:]
    refine = bracket + [p for p in points if p.get("phase") == "refine"]
    late = [p for p in refine if p.get("client_flags")]
    if not late:
        return None
    missed = sum(1 for p in late if not p.get("met"))
    return (f"the client flagged itself at {len(late)} of {len(refine)} points near the boundary ({missed} of "
            f"them missed the SLO), e.g. at load {late[0]['load']:g}: {late[0]['client_flags'][0]} -- the capacity "
            "may be the client's; more client processes (--client-procs) or a quieter machine tell")
