"""The between-run spread of each case (`llmbench spread`): how far the medians of separate runs of the
same case on the same GPU model land from one another. It is the noise floor a ratio between two
machines must clear before it says anything about the machines: a ratio of single runs closer to 1 than
about twice the between-run CV may be the runs, not the GPUs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from llmbench.analysis.caselabels import case_labels
from llmbench.analysis.compare import SPEED_UNITS, is_headline, runs_with, sample_count
from llmbench.analysis.inputs import SetRef, machine_count
from llmbench.analysis.pooled import pool_metric
from llmbench.metrics import METRICS


@dataclass
class SpreadRow:
    """One metric of one case on one side, over its ok runs."""

    side: str
    case_id: str
    scenario: str
    case: str
    metric: str
    unit: str
    run_values: list[float]  # each run's median, in run order
    n: int | None  # samples of all runs
    machines: int | None
    between_run_cv: float | None  # None with a single run
    within_run_cv: float | None  # the median over runs of each run's own sample CV

    @property
    def value(self) -> float:
        return float(np.median(self.run_values))

    @property
    def speed(self) -> bool:
        mdef = METRICS.get(self.metric)
        return self.unit in SPEED_UNITS and mdef is not None and mdef.better != "neither"

    def to_dict(self) -> dict[str, Any]:
        return {
            "set": self.side,
            "case_id": self.case_id,
            "scenario": self.scenario,
            "case": self.case,
            "metric": self.metric,
            "unit": self.unit,
            "value": self.value,
            "run_values": self.run_values,
            "runs": len(self.run_values),
            "n": self.n,
            "machines": self.machines,
            "between_run_cv": self.between_run_cv,
            "within_run_cv": self.within_run_cv,
        }


def spread_rows(sets: list[SetRef], all_metrics: bool = False) -> list[SpreadRow]:
    """Every ok case of every side, each headline metric (or every metric) with its runs' figures."""
    rows: list[SpreadRow] = []
    for s in sets:
        cases = s.cases()
        labels = case_labels(cases)
        for rep in cases:
            ok = [c for c in s.case_runs(rep.id) if c.status == "ok"]
            names = list(dict.fromkeys(m for c in ok for m in c.metrics))
            for name in names:
                if not all_metrics and not is_headline(rep.scenario, name):
                    continue
                got = [c.metrics[name] for c in ok if name in c.metrics]
                pooled = pool_metric(got, [sample_count(m) for m in got])
                cvs = [m.stats.cv for m in got if m.stats and m.stats.cv is not None]
                rows.append(SpreadRow(
                    s.name, rep.id, rep.scenario, labels[rep.id], name, got[0].unit, pooled.values, pooled.n,
                    machine_count(runs_with(s, rep.id, name)), pooled.between_run_cv,
                    float(np.median(cvs)) if cvs else None,
                ))
    return rows


def spread_data(sets: list[SetRef], rows: list[SpreadRow]) -> dict[str, Any]:
    """The JSON of `llmbench spread`: the sides, every row, the noise floor per side."""
    return {
        "sets": [{"name": s.name, "gpu": s.rs.gpu_slug, "suite": s.rs.suite, "runs": len(s.all_runs),
                  "machines": s.machines, "files": s.stems} for s in sets],
        "rows": [r.to_dict() for r in rows],
        "noise_floor": noise_floor(rows),
    }


def noise_floor(rows: list[SpreadRow]) -> dict[str, dict[str, Any]]:
    """Per side, over the speed metrics measured in two runs or more: the largest and the median
    between-run CV, and where the largest is."""
    out: dict[str, dict[str, Any]] = {}
    for side in dict.fromkeys(r.side for r in rows):
        got = [r for r in rows if r.side == side and r.speed and r.between_run_cv is not None]
        if not got:
            continue
        worst = max(got, key=lambda r: r.between_run_cv or 0.0)
        out[side] = {
            "cells": len(got),
            "max_between_run_cv": worst.between_run_cv,
            "max_at": f"{worst.scenario} {worst.case}: {worst.metric}",
            "median_between_run_cv": float(np.median([r.between_run_cv for r in got])),
            "runs": max(len(r.run_values) for r in got),
        }
    return out
