"""The power-limit report over a result set's cases."""

from __future__ import annotations

from typing import Any

import pytest

from llmbench.report.power import power_curves
from llmbench.results import CaseResult, MetricResult, ResultSet


def _case(i: int, w: float | None, speed: float, status: str = "ok", **params: Any) -> CaseResult:
    p = {"precision": "fp16", **params, **({"power_limit_w": w} if w is not None else {})}
    return CaseResult(id=str(i), scenario="vision", params=p, status=status,  # type: ignore[arg-type]
                      metrics={"train_samples_per_s": MetricResult.single("train_samples_per_s", speed)})


def test_groups_by_workload_and_answers_each_fraction() -> None:
    cases = [_case(1, 200, 50.0), _case(2, 300, 80.0), _case(3, 400, 100.0), _case(4, 480, 100.0),
             _case(5, 250, 999.0, status="failed"), _case(6, None, 100.0),
             _case(7, 300, 10.0, precision="fp32"), _case(8, 400, 20.0, precision="fp32")]
    rows = power_curves(ResultSet(suite="power-sweep", cases=cases), "train_samples_per_s")
    by = {r["workload"]: r for r in rows}
    fp16 = next(r for k, r in by.items() if "fp16" in k)
    assert fp16["points"] == [(200, 50.0), (300, 80.0), (400, 100.0), (480, 100.0)]  # failed case left out
    assert fp16["watts_for"][0.9] == pytest.approx(350)
    fp32 = next(r for k, r in by.items() if "fp32" in k)
    assert fp32["watts_for"][0.8] == pytest.approx(360)  # 16 = 10 + 0.6 x (20 - 10)
    assert power_curves(ResultSet(suite="x", cases=cases), "no_such_metric") == []
