"""Charts for the HTML report: matplotlib (Agg backend) figures saved as inline SVG (no files, no URLs).

Bars of non-measured sets are hatched and their legend entries say '[published]' / '[projected]'.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from llmbench.metrics import METRICS
from llmbench.report.caselabels import case_labels
from llmbench.report.compare import Comparison
from llmbench.report.inputs import SetRef
from llmbench.report.labels import is_measured
from llmbench.report.project import RATE_UNITS, TIME_UNITS

plt.rcParams.update({"svg.hashsalt": "llmbench", "svg.fonttype": "path", "font.size": 8})
MAX_CASES = 32  # more bars than this are unreadable: the tables hold the rest


@dataclass
class Chart:
    title: str
    svg: str


def to_svg(fig: plt.Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def grouped_bars(
    title: str,
    ylabel: str,
    categories: list[str],
    series: list[tuple[str, list[float | None], bool]],
    errors: list[list[tuple[float, float] | None]] | None = None,
    hline: float | None = None,
) -> Chart:
    """Bars per category, one colour per series (label, values, measured?); CI error bars optional."""
    n = max(len(series), 1)
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(5.0, 0.55 * len(categories) * n + 2), 3.2))
    x = np.arange(len(categories))
    for k, (label, values, measured) in enumerate(series):
        ys = [np.nan if v is None else v for v in values]
        kw: dict[str, Any] = {} if measured else {"hatch": "//", "alpha": 0.6}
        xs = x + (k - (n - 1) / 2) * width
        ax.bar(xs, ys, width, label=label, **kw)
        if errors and errors[k]:
            lo = [0 if e is None or np.isnan(y) else y - e[0] for y, e in zip(ys, errors[k], strict=True)]
            hi = [0 if e is None or np.isnan(y) else e[1] - y for y, e in zip(ys, errors[k], strict=True)]
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor="black", capsize=2)
    if hline is not None:
        ax.axhline(hline, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(x, categories, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)
    return Chart(title, to_svg(fig))


def _series(sets: list[SetRef], ids: list[str], metric: str) -> list[tuple[str, list[float | None], bool]]:
    """Per set: its label, the metric's value for each case id (None where absent or not ok), measured?"""
    out = []
    for s in sets:
        vals = []
        for cid in ids:
            c = s.rs.case(cid)
            vals.append(c.metrics[metric].value if c and c.status == "ok" and metric in c.metrics else None)
        out.append((s.label, vals, is_measured(s.rs)))
    return out


def metric_bars(sets: list[SetRef], want: str) -> list[Chart]:
    """Throughput (want='rate') or latency (want='time') bars per scenario and metric, sets side by side."""
    units = RATE_UNITS if want == "rate" else TIME_UNITS
    cases = [c for s in sets for c in s.rs.cases]
    labels = case_labels(cases)
    charts = []
    keys = dict.fromkeys(
        (c.scenario, m, c.metrics[m].unit) for c in cases if c.status == "ok" for m in c.metrics
    )
    for scenario, metric, unit in keys:
        if unit not in units or metric == "compile_s":
            continue
        ids = list(dict.fromkeys(c.id for c in cases if c.scenario == scenario and metric in c.metrics))[
            :MAX_CASES
        ]
        series = _series(sets, ids, metric)
        better = METRICS[metric].better if metric in METRICS else "neither"
        arrow = (
            " (higher is better)" if better == "higher" else " (lower is better)" if better == "lower" else ""
        )
        charts.append(grouped_bars(f"{scenario}: {metric}{arrow}", unit, [labels[i] for i in ids], series))
    return charts


def speedup_chart(cmp: Comparison) -> Chart | None:
    """Geometric-mean ratios against the baseline with 95% CIs, per scenario and metric."""
    others = [i for i in range(len(cmp.sets)) if i != cmp.baseline]
    gms = cmp.geomeans[:MAX_CASES]
    if not gms:
        return None
    cats = [f"{g.scenario}: {g.metric}" for g in gms]
    series, errors = [], []
    for i in others:
        series.append(
            (
                f"{cmp.sets[i].label} vs {cmp.sets[cmp.baseline].name}",
                [r.value if (r := g.ratios[i]) else None for g in gms],
                is_measured(cmp.sets[i].rs),
            )
        )
        errors.append([r.ci if (r := g.ratios[i]) else None for g in gms])
    return grouped_bars(
        f"Speed-up vs {cmp.sets[cmp.baseline].label} (geometric mean, > 1 is better)",
        "ratio",
        cats,
        series,
        errors,
        hline=1.0,
    )


def percentile_charts(sets: list[SetRef]) -> list[Chart]:
    """Latency percentiles (p50..p99) from the raw samples, one line per set and case."""
    cases = [c for s in sets for c in s.rs.cases]
    labels = case_labels(cases)
    qs = np.array([50, 75, 90, 95, 99])
    charts = []
    keys = dict.fromkeys(
        (c.scenario, m)
        for c in cases
        for m, r in c.metrics.items()
        if r.unit in TIME_UNITS and r.samples and len(r.samples) > 1
    )
    for scenario, metric in keys:
        fig, ax = plt.subplots(figsize=(6, 3.2))
        lines = 0
        for s in sets:
            for c in s.rs.cases:
                r = c.metrics.get(metric)
                if c.scenario != scenario or r is None or not r.samples or lines >= 12:
                    continue
                ax.plot(
                    qs,
                    np.percentile(r.samples, qs),
                    marker="o",
                    label=f"{s.label}: {labels[c.id]}",
                    linestyle="-" if is_measured(s.rs) else "--",
                )
                lines += 1
        ax.set_xlabel("percentile")
        ax.set_ylabel(metric)
        ax.set_title(f"{scenario}: {metric} percentiles")
        ax.legend(fontsize=6)
        charts.append(Chart(f"{scenario}: {metric} percentiles", to_svg(fig)))
    return charts


def efficiency_charts(sets: list[SetRef], metric: str = "roofline_efficiency") -> list[Chart]:
    """Roofline efficiency (bound time / measured time) where the cases report it."""
    cases = [c for s in sets for c in s.rs.cases]
    ids = list(dict.fromkeys(c.id for c in cases if metric in c.metrics))[:MAX_CASES]
    if not ids:
        return []
    labels = case_labels(cases)
    return [
        grouped_bars(
            f"{metric} (1.0 = at the roofline bound)",
            "ratio",
            [labels[i] for i in ids],
            _series(sets, ids, metric),
            hline=1.0,
        )
    ]


TIMELINE_PANELS = (("tflops", "TFLOP/s"), ("sm_clock_mhz", "SM clock (MHz)"), ("power_w", "power (W)"),
                   ("temp_c", "temperature (°C)"))


def timeline_charts(sets: list[SetRef]) -> list[Chart]:
    """Sustained-load timelines (the `burn` scenario's info.timeline): throughput, SM clock, power and
    temperature against time, one line per GPU, so throttling shows as a falling curve."""
    runs = [(s, c) for s in sets for c in s.rs.cases
            if c.status == "ok" and isinstance(c.info.get("timeline"), dict) and c.info["timeline"].get("t_s")]
    if not runs:
        return []
    labels = case_labels([c for _, c in runs])
    fig, axes = plt.subplots(1, len(TIMELINE_PANELS), figsize=(12.0, 2.8))
    for ax, (key, title) in zip(axes, TIMELINE_PANELS, strict=True):
        for s, c in runs:
            tl = c.info["timeline"]
            ys = tl.get(key) or []
            if ys and len(ys) == len(tl["t_s"]):
                ax.plot(tl["t_s"], ys, label=f"{s.name or s.rs.gpu_slug} {labels[c.id]}"[:60])
        ax.set_title(title)
        ax.set_xlabel("s")
    axes[0].legend(fontsize=6)
    throttled = any(c.info.get("throttled") for _, c in runs)
    title = "sustained load over time" + (" (throttling flagged)" if throttled else "")
    return [Chart(title, to_svg(fig))]


def pareto_lines(sets: list[SetRef]) -> list[tuple[str, list[tuple[float, float, str]]]]:
    """(label naming the GPU and the server configuration, its points) of every serving sweep."""
    from llmbench.serving.plots import pareto_points

    return [(f"{s.name or s.rs.gpu_slug} {series}".strip(), pts)
            for s in sets for series, pts in pareto_points(s.rs.cases).items()]


def pareto_charts(sets: list[SetRef]) -> list[Chart]:
    """The serving Pareto view: output tokens/s per GPU against tokens/s per user, one line per GPU
    and server configuration, one point per load point of a sweep (llmbench.serving.plots)."""
    lines = pareto_lines(sets)
    if not lines:
        return []
    fig, ax = plt.subplots(figsize=(7.0, 4.5))
    for label, pts in lines:
        xs, ys, names = zip(*pts, strict=True)
        ax.plot(xs, ys, marker="o", label=label[:70])
        for x, y, name in zip(xs, ys, names, strict=True):
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("tokens/s per user (1000 / TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return [Chart("serving: throughput per GPU against speed per user", to_svg(fig))]
