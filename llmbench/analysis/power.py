"""The power-limit report: for each workload of a power sweep, the watts it needs for 80/90/95% of
its best speed (the seed's "performance per watt" question), from a result set's cases."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llmbench.analysis.caselabels import varying_keys
from llmbench.hardware.power import watts_for_fraction
from llmbench.ids import params_text
from llmbench.results import CaseResult
from llmbench.scenarios.base import SCENARIOS

FRACTIONS = (0.8, 0.9, 0.95)


def headline_metric(case: CaseResult) -> str | None:
    """The first of its scenario's headline metrics the case reports: the speed a sweep is read by
    (vision: train or infer samples/s, by the case's mode)."""
    names = SCENARIOS.get(case.scenario).headline if case.scenario in SCENARIOS else ()
    return next((m for m in names if m in case.metrics), None)


def curves(cases: Sequence[CaseResult], metric: str | None = None,
           fractions: Sequence[float] = FRACTIONS) -> list[dict[str, Any]]:
    """One row per workload (a case's scenario and params less its power-limit param, which the scenario
    declares: Scenario.charts.power_limit_param) measured at two or
    more power limits: its (limit W, metric) points and the watts for each fraction of its best
    (interpolated between the measured limits: see watts_for_fraction). `metric` None: each case's
    `headline_metric`. Cases not `ok` are left out."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for case in cases:
        param = SCENARIOS.get(case.scenario).charts.power_limit_param if case.scenario in SCENARIOS else None
        watts = case.params.get(param) if param else None
        name = metric or headline_metric(case)
        if case.status != "ok" or watts is None or name is None or name not in case.metrics:
            continue
        rest = {k: v for k, v in case.params.items() if k != param}
        key = f"{case.scenario} {params_text(rest)}"
        row = groups.setdefault((key, name), {"workload": key, "scenario": case.scenario, "params": rest,
                                              "metric": name, "unit": case.metrics[name].unit, "points": []})
        row["points"].append((float(watts), case.metrics[name].value))
    rows = []
    for row in groups.values():
        if len(row["points"]) < 2:
            continue
        row["points"].sort()
        row["watts_for"] = watts_for_fraction(row["points"], fractions)
        rows.append(row)
    return rows


def workload_labels(rows: list[dict[str, Any]]) -> list[str]:
    """Short names for the rows: the params that differ between workloads (all of them for one)."""
    if len(rows) < 2:
        return [f"{r['scenario']} {params_text(r['params'])}".strip() for r in rows]
    varying = varying_keys([r["params"] for r in rows])
    scenarios = len({r["scenario"] for r in rows}) > 1
    return [" ".join(filter(None, [r["scenario"] if scenarios else "", params_text(r["params"], varying)]))
            or r["scenario"] for r in rows]
