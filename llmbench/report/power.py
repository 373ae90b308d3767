"""The power-limit report: for each workload of a power sweep, the watts it needs for 80/90/95% of
its best speed (the seed's "performance per watt" question), from a result set's cases."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llmbench.hardware.power import watts_for_fraction
from llmbench.ids import params_text
from llmbench.results import ResultSet

FRACTIONS = (0.8, 0.9, 0.95)


def power_curves(rs: ResultSet, metric: str, fractions: Sequence[float] = FRACTIONS) -> list[dict[str, Any]]:
    """One row per workload (a case's scenario and params without power_limit_w) measured at two or
    more power limits: its (limit W, metric) points and the watts for each fraction of its best
    (interpolated between the measured limits: see watts_for_fraction). Cases not `ok` are left out."""
    groups: dict[str, dict[str, Any]] = {}
    for case in rs.cases:
        watts = case.params.get("power_limit_w")
        if case.status != "ok" or watts is None or metric not in case.metrics:
            continue
        rest = {k: v for k, v in case.params.items() if k != "power_limit_w"}
        key = f"{case.scenario} {params_text(rest)}"
        row = groups.setdefault(key, {"workload": key, "points": []})
        row["points"].append((float(watts), case.metrics[metric].value))
    rows = []
    for row in groups.values():
        if len(row["points"]) < 2:
            continue
        row["points"].sort()
        row["watts_for"] = watts_for_fraction(row["points"], fractions)
        rows.append(row)
    return rows
