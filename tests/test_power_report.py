"""The power-limit report over a result set's cases."""

from __future__ import annotations

from typing import Any

import pytest

from llmbench.analysis.power import curves
from llmbench.results import CaseResult, MetricResult, ResultSet


def _case(i: int, w: float | None, speed: float, status: str = "ok", **params: Any) -> CaseResult:
    p = {"precision": "fp16", **params, **({"power_limit_w": w} if w is not None else {})}
    return CaseResult(id=str(i), scenario="vision", params=p, status=status,  # type: ignore[arg-type]
                      metrics={"train_samples_per_s": MetricResult.single("train_samples_per_s", speed)})


def test_groups_by_workload_and_answers_each_fraction() -> None:
    cases = [_case(1, 200, 50.0), _case(2, 300, 80.0), _case(3, 400, 100.0), _case(4, 480, 100.0),
             _case(5, 250, 999.0, status="failed"), _case(6, None, 100.0),
             _case(7, 300, 10.0, precision="fp32"), _case(8, 400, 20.0, precision="fp32")]
    rows = curves(cases, "train_samples_per_s")
    by = {r["workload"]: r for r in rows}
    fp16 = next(r for k, r in by.items() if "fp16" in k)
    assert fp16["points"] == [(200, 50.0), (300, 80.0), (400, 100.0), (480, 100.0)]  # failed case left out
    assert fp16["watts_for"][0.9] == pytest.approx(350)
    fp32 = next(r for k, r in by.items() if "fp32" in k)
    assert fp32["watts_for"][0.8] == pytest.approx(360)  # 16 = 10 + 0.6 x (20 - 10)
    assert curves(cases, "no_such_metric") == []


def _vision(i: int, w: float, speed: float, mode: str = "train", precision: str = "fp16") -> CaseResult:
    metric = f"{mode}_samples_per_s"
    return CaseResult(id=str(i), scenario="vision", status="ok",
                      params={"model": "vit", "mode": mode, "precision": precision, "power_limit_w": w},
                      metrics={metric: MetricResult.single(metric, speed),
                               "samples_per_j": MetricResult.single("samples_per_j", 1.0)})


def _sweep() -> ResultSet:
    """Train fp16 and fp32 and infer fp16, each at 200/300/400 W (figures chosen to interpolate exactly)."""
    pts = [(200, 50.0), (300, 80.0), (400, 100.0)]
    cases = [_vision(k, w, s) for k, (w, s) in enumerate(pts)]
    cases += [_vision(10 + k, w, s / 2, precision="fp32") for k, (w, s) in enumerate(pts)]
    cases += [_vision(20 + k, w, s * 10, mode="infer") for k, (w, s) in enumerate(pts)]
    return ResultSet(suite="power-sweep", cases=cases)


def test_each_case_is_read_by_its_first_headline_metric() -> None:
    rows = curves(_sweep().cases)
    assert {(r["params"]["mode"], r["metric"]) for r in rows} == {
        ("train", "train_samples_per_s"), ("infer", "infer_samples_per_s")}
    assert len(rows) == 3  # samples_per_j, a later headline metric, is never the speed


def test_power_table_answers_each_workload() -> None:
    from llmbench.analysis.inputs import SetRef
    from llmbench.report.views import set_tables

    tables = set_tables(SetRef("h100", _sweep()))
    t = next(t for t in tables if "80/90/95%" in t.title)
    by = {r[0]: r for r in t.rows}
    assert set(by) == {"mode=train precision=fp16", "mode=train precision=fp32", "mode=infer precision=fp16"}
    # 80% of 100 = 80 at 300 W; 90% = 90 halfway 300..400; 95% = 95 at 375 W
    assert by["mode=train precision=fp16"][1:] == ["train_samples_per_s (samples/s)", "100.0", "300", "350",
                                                   "375", "200, 300, 400"]
    assert by["mode=infer precision=fp16"][2:6] == ["1,000", "300", "350", "375"]
    assert "common params: model=vit" in t.caption


def test_no_power_table_without_a_sweep_or_for_a_projection() -> None:
    from llmbench.analysis.inputs import SetRef
    from llmbench.report.power_view import power_table

    one_limit = ResultSet(suite="x", cases=[_vision(1, 300, 10.0)])
    assert power_table(SetRef("h100", one_limit)) is None
    projected = _sweep()
    projected.source.kind = "projected"
    assert power_table(SetRef("h100", projected)) is None


def test_speed_against_power_chart_draws_a_line_per_workload() -> None:
    pytest.importorskip("matplotlib")
    from llmbench.analysis.inputs import SetRef
    from llmbench.report.charts import power_chart, scenario_charts

    sets = [SetRef("h100", _sweep())]
    chart = power_chart(sets, "vision")
    assert chart is not None and "power limit" in chart.title
    for label in ("mode=train precision=fp16", "mode=train precision=fp32", "mode=infer precision=fp16"):
        assert f"h100 · {label}" in chart.svg  # a legend entry per workload
    assert chart.svg.count("h100 · ") == 3
    assert "train_samples_per_s (samples/s)" in chart.svg and "infer_samples_per_s (samples/s)" in chart.svg
    assert any(c.title == chart.title for c in scenario_charts(sets, "vision"))


def test_compare_json_carries_the_sweeps_answer_its_tables_print() -> None:
    """`compare --format json` holds what its power table prints: per workload the watts for 80/90/95%."""
    import json

    from llmbench.analysis.compare import sweep_answers
    from llmbench.analysis.inputs import SetRef

    got = sweep_answers(SetRef("h100", _sweep()))
    assert got is not None and got["bottleneck"] == []
    train = next(r for r in got["power"] if "mode=train" in r["workload"] and "fp16" in r["workload"])
    assert train["points_w"] == [[200.0, 50.0], [300.0, 80.0], [400.0, 100.0]]
    assert train["watts_for"] == {"0.8": pytest.approx(300), "0.9": pytest.approx(350), "0.95": pytest.approx(375)}
    json.dumps(got)  # plain JSON
    assert sweep_answers(SetRef("h100", ResultSet(suite="x", cases=[_vision(1, 300, 10.0)]))) is None
