"""The bottleneck report: per batch sweep (cases that differ only in the swept param, e.g. one sweep
per DataLoader worker count), the batch from which the GPU, not the host, bounds training. Which
scenarios sweep, which param, which metric and the answer's rule, each scenario declares
(`Scenario.bottleneck_sweep`): this module names none of them."""

from __future__ import annotations

from dataclasses import dataclass

from llmbench.analysis.caselabels import varying_keys
from llmbench.ids import params_text
from llmbench.results import CaseResult
from llmbench.scenarios.base import SCENARIOS, BottleneckSweep, SweepPoint


@dataclass
class Sweep:
    label: str  # the params that tell the sweeps apart ('num_workers=4'; '' for one sweep)
    points: list[SweepPoint]  # (batch, speed, busy fraction or None)
    batch: int | None  # the declared answer (None: not reached in the sweep)
    rule: str
    scenario: str = ""


def declared_sweep(scenario: str) -> BottleneckSweep | None:
    """The batch sweep a scenario declares; None for one that declares none, or is not registered here."""
    return SCENARIOS.get(scenario).bottleneck_sweep if scenario in SCENARIOS else None


def busy_fraction(case: CaseResult) -> float | None:
    """The kernel-time busy fraction, or None where the case predates it: such a case has no
    `gpu_span_fraction` and its `gpu_busy_fraction` is the CUDA-event span, near 1 when launch-bound."""
    if "gpu_span_fraction" not in case.metrics or "gpu_busy_fraction" not in case.metrics:
        return None
    return case.metrics["gpu_busy_fraction"].value


def sweeps(cases: list[CaseResult]) -> list[Sweep]:
    """The batch sweeps of the ok cases whose scenario declares one, each with two batches or more, and
    their answers."""
    out = []
    for scenario in dict.fromkeys(c.scenario for c in cases):
        decl = declared_sweep(scenario)
        if decl is not None:
            out += _sweeps_of(scenario, decl, cases)
    return out


def _sweeps_of(scenario: str, decl: BottleneckSweep, cases: list[CaseResult]) -> list[Sweep]:
    ok = [c for c in cases if c.scenario == scenario and c.status == "ok" and decl.speed in c.metrics
          and isinstance(c.params.get(decl.axis), int)]
    varying = varying_keys([{k: v for k, v in c.params.items() if k != decl.axis} for c in ok])
    groups: dict[str, list[CaseResult]] = {}  # by the params that tell the sweeps apart (the others are shared)
    for c in ok:
        groups.setdefault(params_text(c.params, varying), []).append(c)
    out = []
    for label, members in groups.items():
        points = sorted((c.params[decl.axis], c.metrics[decl.speed].value, busy_fraction(c)) for c in members)
        if len({b for b, _, _ in points}) < 2:
            continue
        got = decl.answer(points)
        out.append(Sweep(label, points, got["batch"], got["rule"], scenario))
    return out
