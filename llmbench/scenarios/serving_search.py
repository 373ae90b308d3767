"""A serving case that searches its capacity under an SLO (`search` = "concurrency" or "rate"): one load
point after another against the case's server (serving/search.py decides which), and the answer as the
case's metrics: `capacity_concurrency` or `capacity_rate` with the interval over the refinements' estimates,
and beside it the metrics of the highest measured point that met the SLO. Every point's figures (the goodput
and SLO attainment curve) are in info `capacity.points`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llmbench.results import MetricResult, Stats
from llmbench.serving.search import PointOutcome, client_late, search_capacity

# per-point facts kept on the curve (the whole records only for the point the metrics are of)
CURVE_KEYS = ("requests_sent", "requests_ok", "requests_failed", "good_requests", "duration_s", "saturated",
              "stopped_requests", "not_started")


def run_search(params: Any, ep: Any, tok_dir: str, info: dict[str, Any], n_gpus: int,
               workload: Callable[[Any, str, dict[str, Any]], tuple[list[Any], Any, float | None]],
               progress: Any = None) -> dict[str, MetricResult]:
    """Search the case's capacity; the metrics of the case (see the module docstring). `workload`
    builds one point's sessions, schedule and asked rate from its params (`params.at_point`)."""
    from llmbench.serving.analysis import parse_slo
    from llmbench.serving.bench import run_point
    from llmbench.serving.slo import parse_limits

    limits = parse_limits(params.limits)
    best: dict[str, Any] = {}

    def measure(load: float, repeat: int, phase: str) -> PointOutcome:
        p = params.at_point(load, repeat)
        got: dict[str, Any] = {}
        sessions, sched, asked = workload(p, tok_dir, got)
        try:
            metrics = run_point(ep, sessions, sched, slo=parse_slo(p.slo), limits=limits, n_gpus=n_gpus,
                                asked_rate=asked, info=got, client_processes=p.client_processes,
                                window_s=p.saturation_window_s)
        except RuntimeError as e:  # every request failed: the point misses the SLO, the search goes on
            return PointOutcome(load, False, facts={"error": str(e)[:300]})
        check = got.get("slo_check", {})
        facts: dict[str, Any] = {k: got[k] for k in CURVE_KEYS if k in got}
        facts.update(attainment=check.get("attainment"), limits=check.get("limits"),
                     goodput_per_s=metrics["goodput_per_s"].value if "goodput_per_s" in metrics else None,
                     output_tokens_per_s=metrics["output_tokens_per_s"].value
                     if "output_tokens_per_s" in metrics else None,
                     client_flags=got.get("client_check", {}).get("flags") or None)
        met = bool(check.get("met"))
        if met and load >= best.get("load", -1.0):
            best.update(load=load, metrics=metrics, info=got)
        if progress is not None:
            progress(min(0.99, len(cap_points) / (8 + 4 * params.search_repeats)))
        return PointOutcome(load, met, saturated=bool(got.get("saturated")), facts=facts)

    cap_points: list[Any] = []
    cap = search_capacity(lambda x, r, ph: _noted(cap_points, measure(x, r, ph)), params.search,
                          start=params.search_start, top=params.search_top, repeats=params.search_repeats,
                          resolution=params.search_resolution)
    name = f"capacity_{params.search}"
    metric = capacity_metric(name, cap.estimates, cap.bound)
    if late := client_late(cap.points):
        metric.flags.append(late)
    metrics: dict[str, MetricResult] = dict(best.get("metrics", {}))
    metrics[name] = metric
    point_info = best.get("info", {})
    info.update({k: v for k, v in point_info.items() if k not in ("slo_check",)})
    info["capacity"] = {"axis": params.search, "slo": limits.text,
                        "limits": {lim.name: lim.limit_ms for lim in limits.limits},
                        "estimates": cap.estimates, "interval": cap.interval(), "bound": cap.bound,
                        "metrics_at": best.get("load"), "points": cap.points}
    return metrics


def _noted(points: list[Any], o: PointOutcome) -> PointOutcome:
    points.append(o)
    return o


def capacity_metric(name: str, estimates: list[float], bound: str | None) -> MetricResult:
    """The capacity as a metric: the median of the estimates, `samples` the estimates, `stats.ci` the
    median's order-statistic interval with the coverage it achieves (`ci95` only where that reaches 95%)."""
    flags = [bound] if bound else []
    if len(estimates) < 2:
        return MetricResult.single(name, estimates[0] if estimates else 0.0, flags)
    m = MetricResult.from_samples(name, estimates, flags)
    m.stats = Stats.model_validate({**m.stats.model_dump(exclude_unset=True), "ci_method":
                                    "order statistic over the refinements' boundary estimates"}) \
        if m.stats is not None else None
    return m
