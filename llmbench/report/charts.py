"""The report's charts, the one home of every chart builder (views and html.py only call them), each
answering one question for every GPU of a section at once; a GPU with no point on a chart is still
named in its legend. What each plots: docs/design.md, "Comparing, projecting, publishing" (Charts)."""

from __future__ import annotations

import hashlib
import itertools
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from llmbench.analysis.bottleneck import Sweep, declared_sweep, sweeps
from llmbench.analysis.caselabels import case_labels
from llmbench.analysis.compare import Comparison, MetricRow
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.labels import is_measured
from llmbench.analysis.power import curves, workload_labels
from llmbench.analysis.project import RATE_UNITS, achieved_share
from llmbench.caseinfo import LossCurveInfo, TimelineInfo
from llmbench.ids import params_text
from llmbench.metrics import METRICS
from llmbench.report.plots import FIG_WIDTH_IN, SMALL_PT, Chart, to_svg
from llmbench.report.styles import Style, gpu_color, nth_style, series_style
from llmbench.results import CaseResult
from llmbench.scenarios.base import SCENARIOS
from llmbench.serving.analysis import pareto_points

# The x axes are what each scenario declares (Scenario.charts: sweep_axes, metric_axes); other varying params
# split panels, and the precision axis (llmbench.precision, every scenario's) splits series.
SERIES_PARAM = "precision"
MAX_PANELS = 6
MAX_BARS = 40
PANEL_H_IN = 2.9
BAR_H_IN = 0.24

Points = dict[tuple[int, str | None], list[tuple[float, float]]]  # (set index, precision) -> (x, y)
Look = Callable[[tuple[int, str | None]], tuple[Style, str]]  # a series' style and legend label


@dataclass
class Panel:
    label: str  # the settings the panel holds fixed ('' for one panel)
    ylabel: str
    points: Points


def _x(value: object) -> float | None:
    """A param as a number on an axis; a shape [m, n, k] as its geometric-mean side."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list | tuple) and value and all(isinstance(v, int | float) for v in value):
        return float(math.prod(value) ** (1.0 / len(value)))
    return None


def _proportions(value: object) -> str | None:
    """A shape's proportions (its sides over their greatest common divisor: '1x896x256'), which a line
    along the shape's size must keep; None for a number."""
    if isinstance(value, list | tuple) and value and all(isinstance(v, int) and v > 0 for v in value):
        g = math.gcd(*value)
        return "x".join(str(v // g) for v in value)
    if isinstance(value, list | tuple) and value and all(isinstance(v, int | float) and v for v in value):
        return "x".join(f"{v / value[0]:.3g}" for v in value)
    return None


def _ok(sets: list[SetRef], scenario: str) -> list[tuple[int, CaseResult]]:
    return [(i, c) for i, s in enumerate(sets) for c in s.rs.cases if c.scenario == scenario and c.status == "ok"]


def _sort_key(value: object) -> tuple[int, float, str]:
    """Numbers in numeric order (batch 1, 8, 32), then text."""
    x = _x(value)
    return (0, x, "") if x is not None else (1, 0.0, repr(value))


def _varying(cases: list[CaseResult]) -> list[str]:
    keys = list(dict.fromkeys(k for c in cases for k in c.params))
    return [k for k in keys if len({repr(c.params.get(k)) for c in cases}) > 1]


def x_param(cases: list[CaseResult], scenario: str) -> str | None:
    """The first of the scenario's sweep axes that varies and is numeric in every case that has it."""
    varying = _varying(cases)
    for key in (SCENARIOS.get(scenario).charts.sweep_axes if scenario in SCENARIOS else ()):
        if key in varying and all(_x(c.params[key]) is not None for c in cases if key in c.params):
            return key
    return None


def _xlabel(key: str, cases: list[CaseResult]) -> str:
    """The axis label: a list-valued param (a GEMM's shape) is placed at the geometric mean of its sides."""
    listed = any(isinstance(c.params.get(key), (list, tuple)) for c in cases)
    return f"{key} (geometric mean of its sides)" if listed else key


def _headline(scenario: str) -> tuple[str, ...]:
    return SCENARIOS.get(scenario).headline if scenario in SCENARIOS else ()


def _rate_metrics(scenario: str, cases: list[CaseResult]) -> list[str]:
    """The scenario's headline metrics measured as rates in these cases (else all its headline ones
    present), most important first."""
    present = [m for m in _headline(scenario) if any(m in c.metrics for c in cases)]
    rates = [m for m in present if any(c.metrics[m].unit in RATE_UNITS for c in cases if m in c.metrics)]
    return rates or present


def _unit(cases: list[CaseResult], metric: str) -> str:
    return next((c.metrics[metric].unit for c in cases if metric in c.metrics), "")


def _panels(
    sets: list[SetRef], scenario: str, xkey: str, value: Callable[[int, CaseResult], tuple[str, float] | None]
) -> list[Panel] | None:
    """Points grouped into panels by the params that vary besides `xkey` and the series param, and by
    the proportions of a shape along `xkey` (a line joins only points that share every other param);
    None where that makes more than MAX_PANELS panels (the chart would not be read)."""
    found = _ok(sets, scenario)
    cases = [c for _, c in found]
    rest = [k for k in _varying(cases) if k not in (xkey, SERIES_PARAM)]
    split = len({_proportions(c.params.get(xkey)) for c in cases}) > 1
    panels: dict[str, Panel] = {}
    order: dict[str, tuple[tuple[int, float, str], ...]] = {}
    for i, c in found:
        x = _x(c.params.get(xkey))
        got = value(i, c)
        if x is None or got is None:
            continue
        shape = _proportions(c.params.get(xkey)) if split else None
        label = " ".join(filter(None, [params_text({k: c.params[k] for k in rest if k in c.params}),
                                       f"{xkey} proportions {shape}" if shape else ""]))
        ylabel, y = got
        panel = panels.setdefault(label, Panel(label, ylabel, {}))
        order[label] = (*(_sort_key(c.params.get(k)) for k in rest), (0, 0.0, shape or ""))
        prec = c.params.get(SERIES_PARAM)
        panel.points.setdefault((i, None if prec is None else str(prec)), []).append((x, y))
    # A panel where no series has two points along x shows no trend: its cases are in the tables.
    panels = {k: p for k, p in panels.items() if any(len({x for x, _ in pts}) > 1 for pts in p.points.values())}
    if not panels or len(panels) > MAX_PANELS:
        return None
    return [panels[k] for k in sorted(panels, key=lambda k: order[k])]


def _series_label(sets: list[SetRef], key: tuple[int, str | None]) -> str:
    i, prec = key
    return sets[i].label + (f" · {prec}" if prec else "")


def _log_axis(values: list[float], span: float = 20.0) -> bool:
    pos = [v for v in values if v > 0]
    return len(pos) > 1 and max(pos) / min(pos) >= span


def _spaced(ticks: list[float], log: bool) -> bool:
    """Whether every x value can carry its own tick label without overlapping the next."""
    if not ticks or len(ticks) > 8:
        return False
    if log:
        return all(b / a >= 1.6 for a, b in itertools.pairwise(ticks) if a > 0)
    width = (ticks[-1] - ticks[0]) or 1.0
    return all((b - a) / width >= 0.08 for a, b in itertools.pairwise(ticks))


def _plain(v: float, _pos: object = None) -> str:
    return f"{v:,.0f}" if abs(v) >= 10 else f"{v:g}"


def _look(sets: list[SetRef]) -> Look:
    """The usual series: a GPU x precision, styled by `series_style`."""
    return lambda key: (series_style(*key), _series_label(sets, key))


def _legend(fig: plt.Figure, sets: list[SetRef], keys: list[tuple[int, str | None]], look: Look) -> None:
    """One legend under the panels: every series drawn, then every GPU of the section that has none."""
    handles: list[Line2D] = []
    for key in keys:
        st, label = look(key)
        handles.append(Line2D([], [], color=st.color, linestyle=st.linestyle, marker=st.marker, label=label))
    drawn = {i for i, _ in keys}
    for i, s in enumerate(sets):
        if i not in drawn:
            handles.append(Line2D([], [], color="none", label=f"{s.label}: no case here"))
    ncol = 3 if len(handles) > 8 else 2
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False)


def line_chart(title: str, xlabel: str, sets: list[SetRef], panels: list[Panel], hline: float | None = None,
               share: bool = False, look: Look | None = None) -> Chart:
    """Panels of lines (one per GPU x precision, or as `look` names and styles the series keys), a
    legend naming every GPU under them; `share`: the y axis is a fraction of a bound, drawn linear from 0."""
    look = look or _look(sets)
    ncols = 1 if len(panels) == 1 else 2
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIG_WIDTH_IN, PANEL_H_IN * nrows + 1.0),
                             layout="constrained", squeeze=False)
    keys: list[tuple[int, str | None]] = []
    for ax, panel in zip(axes.flat, panels, strict=False):
        xs = [x for pts in panel.points.values() for x, _ in pts]
        ys = [y for pts in panel.points.values() for _, y in pts]
        for key in sorted(panel.points, key=lambda k: (k[0], k[1] or "")):
            pts = sorted(panel.points[key])
            st = look(key)[0]
            measured = is_measured(sets[key[0]].rs)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=st.color, linestyle=st.linestyle,
                    marker=st.marker, alpha=1.0 if measured else 0.6)
            if key not in keys:
                keys.append(key)
        log_x = _log_axis(xs, 8)
        if log_x:
            ax.set_xscale("log", base=2)
        ticks = sorted(set(xs))
        if _spaced(ticks, log_x):
            ax.set_xticks(ticks)
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_formatter(FuncFormatter(_plain))
        if share:
            ax.set_ylim(0, max(1.1, max(ys, default=1.0) * 1.05))
        elif _log_axis(ys):
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.yaxis.set_major_formatter(FuncFormatter(_plain))
        if hline is not None:
            ax.axhline(hline, color="#555555", linewidth=1.0, linestyle="--")
        ax.set_title(panel.label or title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    if any(p.label for p in panels):
        fig.suptitle(title)
    _legend(fig, sets, sorted(keys, key=lambda k: (k[0], k[1] or "")), look)
    return Chart(title, to_svg(fig))


def _metric_value(*metrics: str) -> Callable[[int, CaseResult], tuple[str, float] | None]:
    """A case's value of the first of `metrics` it has, with its axis label."""
    def value(_i: int, c: CaseResult) -> tuple[str, float] | None:
        name = next((n for n in metrics if n in c.metrics), None)
        if name is None:
            return None
        m = c.metrics[name]
        return f"{name} ({m.unit})", m.value

    return value


def throughput_chart(sets: list[SetRef], scenario: str) -> Chart | None:
    """The scenario's headline rate against its x param (batch size first), per GPU and precision; a
    case that lacks the first rate (a host copy reports GB/s, a device copy TB/s) shows its next one."""
    cases = [c for _, c in _ok(sets, scenario)]
    xkey, metrics = x_param(cases, scenario), _rate_metrics(scenario, cases)
    if xkey is None or not metrics:
        return None
    panels = _panels(sets, scenario, xkey, _metric_value(*metrics))
    if panels is None:
        return None
    shown = list(dict.fromkeys(p.ylabel.split(" (")[0] for p in panels))
    better = {METRICS[m].better if m in METRICS else "neither" for m in shown}
    hints = {"higher": " (higher is better)", "lower": " (lower is better)"}
    hint = hints.get(better.pop(), "") if len(better) == 1 else ""
    return line_chart(f"{scenario}: {', '.join(shown)} against {xkey}{hint}", _xlabel(xkey, cases), sets, panels)


def metric_axis_charts(sets: list[SetRef], scenario: str) -> list[Chart]:
    """Each metric the scenario charts against a param of its own (`Scenario.charts.metric_axes`, e.g. time to
    first token against the input length), where that param varies."""
    axes = SCENARIOS.get(scenario).charts.metric_axes if scenario in SCENARIOS else {}
    charts = []
    for name, axis in axes.items():
        cases = [c for _, c in _ok(sets, scenario) if name in c.metrics]
        panels = _panels(sets, scenario, axis, _metric_value(name)) if axis in _varying(cases) else None
        if panels is not None:
            mdef = METRICS.get(name)
            what = mdef.description.split(":")[0] if mdef else name
            hint = {"higher": " (higher is better)", "lower": " (lower is better)"}.get(mdef.better if mdef else "", "")
            charts.append(line_chart(f"{scenario}: {what} against {axis}{hint}", axis, sets, panels))
    return charts


def roofline_chart(sets: list[SetRef], scenario: str) -> Chart | None:
    """Achieved share of the roofline (1.0 = at the bound) against the scenario's x param."""
    cases = [c for _, c in _ok(sets, scenario)]
    xkey = x_param(cases, scenario)
    if xkey is None:
        return None

    def value(i: int, c: CaseResult) -> tuple[str, float] | None:
        share = achieved_share(sets[i].rs.gpu_slug, c)
        return None if share is None else ("achieved / roofline", share)

    panels = _panels(sets, scenario, xkey, value)
    if panels is None:
        return None
    return line_chart(f"{scenario}: achieved share of the roofline against {xkey} (1.0 = at the bound)",
                      _xlabel(xkey, cases), sets, panels, hline=1.0, share=True)


BAR_LABEL_CHARS = 34  # a bar's case label is wrapped at this width ...
BAR_LABEL_LINES = 2  # ... and cut after this many lines (its full text is its tooltip)
BarSeries = tuple[str, int, bool, list[float | None], list[tuple[float, float] | None]]


def short_label(text: str, width: int = BAR_LABEL_CHARS, lines: int = BAR_LABEL_LINES) -> str:
    """A case label that fits beside a bar: its params wrapped at `width`, a param longer than a line
    cut, the whole cut after `lines` lines with '…'."""
    words = [w if len(w) <= width else w[: width - 1] + "…" for w in text.split()]
    return "\n".join(textwrap.wrap(" ".join(words), width, max_lines=lines, placeholder=" …")) or text


def _hbars(title: str, xlabel: str, labels: list[str], series: list[BarSeries], vline: float | None) -> Chart:
    """Horizontal grouped bars: a row per label, a bar per series (name, GPU index, measured, values,
    intervals); whiskers where an interval is known. Each row's label is shortened (`short_label`), its
    full text the label's tooltip."""
    n = max(len(series), 1)
    full = labels
    labels = [short_label(label) for label in labels]
    lines = max((label.count("\n") + 1 for label in labels), default=1)
    height = BAR_H_IN * len(labels) * max(n, lines) + 1.4
    fig, ax = plt.subplots(figsize=(FIG_WIDTH_IN, height), layout="constrained")
    step = 0.8 / n
    for k, (name, gpu, measured, values, cis) in enumerate(series):
        ys = [r + (k - (n - 1) / 2) * step for r in range(len(labels))]
        vals = [math.nan if v is None else v for v in values]
        ax.barh(ys, vals, step, color=gpu_color(gpu), label=name, hatch=None if measured else "//",
                alpha=1.0 if measured else 0.6)
        lo = [0.0 if c is None or math.isnan(v) else max(v - c[0], 0.0) for v, c in zip(vals, cis, strict=True)]
        hi = [0.0 if c is None or math.isnan(v) else max(c[1] - v, 0.0) for v, c in zip(vals, cis, strict=True)]
        if any(lo) or any(hi):
            ax.errorbar(vals, ys, xerr=[lo, hi], fmt="none", ecolor="black", capsize=3, linewidth=1)
        for y, v, h in zip(ys, vals, hi, strict=True):
            if not math.isnan(v):
                ax.annotate(_plain(v) if v >= 10 else f"{v:.2f}", (v + h, y), xytext=(4, 0),
                            textcoords="offset points", va="center", fontsize=SMALL_PT)
    if vline is not None:
        ax.axvline(vline, color="#555555", linewidth=1.0, linestyle="--")
    ax.set_yticks(range(len(labels)), labels)
    prefix = "case-" + hashlib.sha256("\0".join([title, *full]).encode()).hexdigest()[:10]
    tooltips = {}
    for k, tick in enumerate(ax.get_yticklabels()):
        tick.set_gid(f"{prefix}-{k}")
        tooltips[f"{prefix}-{k}"] = full[k]
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    fig.legend(loc="outside lower center", ncol=2, frameon=False)
    return Chart(title, to_svg(fig, tooltips))


def _primary_rows(cmp: Comparison, scenario: str) -> list[MetricRow]:
    """Per joined case of the scenario, the row of its first headline metric that has a ratio."""
    out: dict[str, MetricRow] = {}
    order = {m: k for k, m in enumerate(_headline(scenario))}
    for r in cmp.rows:
        if r.scenario != scenario or r.better == "neither" or r.metric not in order:
            continue
        best = out.get(r.case_id)
        if best is None or order[r.metric] < order[best.metric]:
            out[r.case_id] = r
    return list(out.values())


def speedup_charts(cmp: Comparison) -> list[Chart]:
    """Per scenario: each joined case's ratio against the baseline on its first headline metric, one
    bar per other GPU, the bootstrap 95% interval as whiskers (> 1: better than the baseline)."""
    b = cmp.baseline
    others = [i for i in range(len(cmp.sets)) if i != b]
    charts = []
    for scenario in dict.fromkeys(r.scenario for r in cmp.rows):
        rows = _primary_rows(cmp, scenario)[:MAX_BARS]
        if not rows:
            continue
        metrics = ", ".join(dict.fromkeys(r.metric for r in rows))
        labels = [r.case for r in rows]
        series = [
            (f"{cmp.sets[i].label} vs {cmp.sets[b].label}", i, is_measured(cmp.sets[i].rs),
             [ratio.value if (ratio := r.ratios[i]) else None for r in rows],
             [ratio.ci if (ratio := r.ratios[i]) else None for r in rows])
            for i in others
        ]
        title = f"{scenario}: speed-up against {cmp.sets[b].label} ({metrics}; > 1 is better)"
        chart = _hbars(title, "ratio (95% interval as whiskers)", labels, series, 1.0)
        charts.append(chart)
    return charts


def value_bars(sets: list[SetRef], scenario: str) -> list[Chart]:
    """Where nothing varies along an axis: each case's headline value, one bar per GPU; a chart per
    headline metric the cases report (a d2d copy in TB/s, a host copy in GB/s)."""
    found = _ok(sets, scenario)
    cases = [c for _, c in found]
    order = _headline(scenario)
    first = {c.id: next((m for m in order if m in c.metrics), None) for c in cases}
    labels = case_labels(list({c.id: c for c in cases}.values()))  # a case of every set once
    charts = []
    for metric in dict.fromkeys(m for m in first.values() if m is not None):
        ids = [cid for cid, m in first.items() if m == metric][:MAX_BARS]
        unit = _unit(cases, metric)
        series: list[BarSeries] = []
        for i, s in enumerate(sets):
            got = {c.id: c.metrics[metric].value for j, c in found if j == i and metric in c.metrics}
            series.append((s.label, i, is_measured(s.rs), [got.get(cid) for cid in ids], [None] * len(ids)))
        charts.append(_hbars(f"{scenario}: {metric} ({unit}) per case", f"{metric} ({unit})",
                             [labels[cid] for cid in ids], series, None))
    return charts


def power_chart(sets: list[SetRef], scenario: str) -> Chart | None:
    """A power-limit sweep: each workload's speed (its first headline metric) against the power limit,
    a line per GPU x workload (hue by its precision), a panel per metric (train and infer samples/s)."""
    found = [(i, r) for i, s in enumerate(sets) for r in curves([c for c in s.cases() if c.scenario == scenario])]
    if not found:
        return None
    labels = workload_labels([r for _, r in found])
    panels: dict[str, Panel] = {}
    precision: dict[str, str | None] = {}
    for (i, r), label in zip(found, labels, strict=True):
        panel = panels.setdefault(r["metric"], Panel(r["metric"], f"{r['metric']} ({r['unit']})", {}))
        panel.points[(i, label)] = r["points"]
        prec = r["params"].get(SERIES_PARAM)
        precision[label] = None if prec is None else str(prec)
    variant = {label: sum(p == precision[label] for p in list(precision.values())[:k])
               for k, label in enumerate(precision)}  # workloads of one precision: told apart by marker

    def look(key: tuple[int, str | None]) -> tuple[Style, str]:
        i, label = key
        assert label is not None
        return series_style(i, precision[label], variant[label]), f"{sets[i].label} · {label}"

    if len(panels) == 1:
        next(iter(panels.values())).label = ""
    return line_chart(f"{scenario}: speed against the GPU power limit (higher is better)", "power limit (W)",
                      sets, list(panels.values()), look=look)


def _sweep_look(sets: list[SetRef], found: list[tuple[int, Sweep]]) -> Look:
    """A batch sweep's series: its n-th style by its label, named with its bottleneck batch."""
    order = list(dict.fromkeys(sw.label for _, sw in found))
    names: dict[tuple[int, str | None], str] = {(i, sw.label): " · ".join(filter(None, [sets[i].label, sw.label])) + (
        f" (GPU-bound from batch {sw.batch})" if sw.batch is not None else " (host-bound throughout)")
        for i, sw in found}
    return lambda key: (nth_style(key[0], order.index(key[1] or "")), names[key])


def bottleneck_charts(sets: list[SetRef], scenario: str) -> list[Chart]:
    """The batch sweeps a scenario declares (`bottleneck_sweep`): its speed metric against the batch,
    and the GPU's busy fraction against the batch with the threshold line the bottleneck rule reads, a
    line per GPU x sweep (e.g. per DataLoader worker count)."""
    decl = declared_sweep(scenario)
    if decl is None:
        return []
    found = [(i, sw) for i, s in enumerate(sets) for sw in sweeps(s.cases()) if sw.scenario == scenario]
    if not found:
        return []
    look = _sweep_look(sets, found)
    speed: Points = {(i, sw.label): [(float(b), v) for b, v, _ in sw.points] for i, sw in found}
    unit = METRICS[decl.speed].unit if decl.speed in METRICS else ""
    charts = [line_chart(f"{scenario}: {decl.speed} against {decl.axis}, per sweep (higher is better)", decl.axis,
                         sets, [Panel("", f"{decl.speed} ({unit})" if unit else decl.speed, speed)], look=look)]
    busy: Points = {(i, sw.label): [(float(b), f) for b, _, f in sw.points if f is not None] for i, sw in found}
    busy = {k: v for k, v in busy.items() if len(v) > 1}
    if busy:
        charts.append(line_chart(f"{scenario}: GPU busy fraction against {decl.axis} (the GPU bounds from "
                                 f"{decl.busy_threshold:g})", decl.axis, sets,
                                 [Panel("", "gpu_busy_fraction (kernel time / wall time)", busy)],
                                 hline=decl.busy_threshold, share=True, look=look))
    return charts


def scenario_charts(sets: list[SetRef], scenario: str) -> list[Chart]:
    """The charts that answer the scenario's questions; bars per case only where no line can be drawn."""
    lines = [c for c in (throughput_chart(sets, scenario), *metric_axis_charts(sets, scenario),
                         roofline_chart(sets, scenario), power_chart(sets, scenario)) if c]
    lines += bottleneck_charts(sets, scenario)
    return lines or value_bars(sets, scenario)


TIMELINE_PANELS = (("tflops", "TFLOP/s"), ("sm_clock_mhz", "SM clock (MHz)"), ("power_w", "power (W)"),
                   ("temp_c", "temperature (°C)"))


def timeline_charts(sets: list[SetRef]) -> list[Chart]:
    """Sustained-load timelines (the `burn` scenario's info.timeline): throughput, SM clock, power and
    temperature against time, one line per GPU, so throttling shows as a falling curve."""
    infos = [(i, s, c, TimelineInfo.of(c.info)) for i, s in enumerate(sets) for c in s.rs.cases if c.status == "ok"]
    runs = [(i, s, c, info.timeline, bool(info.throttled)) for i, s, c, info in infos
            if info.timeline is not None and info.timeline.t_s]
    if not runs:
        return []
    labels = case_labels(list({c.id: c for _, _, c, _, _ in runs}.values()))  # a case of every set once
    fig, axes = plt.subplots(2, 2, figsize=(FIG_WIDTH_IN, 6.4), layout="constrained")
    for ax, (key, title) in zip(axes.flat, TIMELINE_PANELS, strict=True):
        for k, (i, s, c, tl, _) in enumerate(runs):
            ys = getattr(tl, key)
            if ys and len(ys) == len(tl.t_s):
                ax.plot(tl.t_s, ys, color=gpu_color(i), linestyle=("-", "--", ":")[k % 3],
                        label=s.label if len(runs) == 1 else f"{s.label} {labels[c.id]}")
        ax.set_title(title)
        ax.set_xlabel("time (s)")
        ax.grid(True, alpha=0.3)
    handles, names = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=1, frameon=False)
    throttled = any(flagged for *_, flagged in runs)
    title = "sustained load over time" + (" (throttling flagged)" if throttled else "")
    fig.suptitle(title)
    return [Chart(title, to_svg(fig))]


def _pareto_series(sets: list[SetRef]) -> list[tuple[int, str, list[tuple[float, float, str]]]]:
    """(GPU index, label naming the GPU and the server configuration, its points) of every serving sweep."""
    return [(i, f"{s.label} {series}".strip(), pts)
            for i, s in enumerate(sets) for series, pts in pareto_points(s.rs.cases).items()]


def pareto_charts(sets: list[SetRef]) -> list[Chart]:
    """The serving Pareto view: output tokens/s per GPU against tokens/s per user, one line per GPU
    and server configuration, one point per load point of a sweep (serving.analysis.pareto_points)."""
    lines = _pareto_series(sets)
    if not lines:
        return []
    fig, ax = plt.subplots(figsize=(FIG_WIDTH_IN, 5.0), layout="constrained")
    for k, (i, label, pts) in enumerate(lines):
        xs, ys, names = zip(*pts, strict=True)
        ax.plot(xs, ys, marker="os^D"[k % 4], color=gpu_color(i), linestyle=("-", "--", ":")[k % 3],
                label=label[:90])
        for x, y, name in zip(xs, ys, names, strict=True):
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=SMALL_PT)
    named = {i for i, _, _ in lines}
    for i, s in enumerate(sets):
        if i not in named:
            ax.plot([], [], color="none", label=f"{s.label}: no serving sweep here")
    ax.set_xlabel("tokens/s per user (1000 / TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title("serving: throughput per GPU against speed per user")
    ax.grid(True, alpha=0.3)
    fig.legend(loc="outside lower center", ncol=1, frameon=False)
    return [Chart("serving: throughput per GPU against speed per user", to_svg(fig))]


MIN_CURVE_STEPS = 10  # shorter curves (a few timing steps) say nothing of stability: not drawn
Curves = dict[str, tuple[list[float], list[int], list[float] | None]]  # series -> (losses, spikes, its bf16 run)


def _loss_groups(sets: list[SetRef], scenario: str, series: str) -> dict[tuple[int, str], Curves]:
    """A scenario's loss curves per GPU and setting (every param but `series`), each series once."""
    groups: dict[tuple[int, str], Curves] = {}
    for i, s in enumerate(sets):
        for c in s.rs.cases:
            info = LossCurveInfo.of(c.info)
            if c.scenario != scenario or c.status != "ok" or len(info.loss_curve or []) < MIN_CURVE_STEPS:
                continue
            rest = params_text({k: v for k, v in c.params.items() if k != series})
            g = groups.setdefault((i, rest), {})
            g[str(c.params.get(series))] = (info.loss_curve or [], info.loss_spike_steps or [], info.bf16_loss_curve)
            if info.bf16_loss_curve and "bf16" not in g:  # an fp8 case's own baseline, where no bf16 case ran
                g["bf16"] = (info.bf16_loss_curve, info.bf16_loss_spike_steps or [], None)
    return groups


def loss_curve_charts(sets: list[SetRef]) -> list[Chart]:
    """Training loss per step of runs on the same batches, side by side (fp8 recipes and bf16, or QLoRA and
    its baselines), spikes marked; for fp8, a second panel of each recipe's loss minus its own bf16 run's."""
    charts = []
    for scenario in dict.fromkeys(c.scenario for s in sets for c in s.rs.cases):
        series = SCENARIOS.get(scenario).charts.loss_curve_series if scenario in SCENARIOS else None
        if series is None:
            continue
        for (i, rest), runs in list(_loss_groups(sets, scenario, series).items())[:MAX_PANELS]:
            title = f"{sets[i].label} · {scenario}: training loss per {series}"
            charts.append(_loss_chart(title, rest, i, runs))
    return charts


def _loss_chart(title: str, setting: str, gpu: int, runs: Curves) -> Chart:
    diffs = {k: [a - b for a, b in zip(v[0], v[2], strict=False)] for k, v in runs.items() if v[2]}
    fig, axes = plt.subplots(1, 2 if diffs else 1, figsize=(FIG_WIDTH_IN, PANEL_H_IN + 1.0), layout="constrained",
                             squeeze=False)
    for n, name in enumerate(sorted(runs, key=lambda k: (k != "bf16", k))):
        losses, spikes, _ = runs[name]
        st = nth_style(gpu, n)
        axes[0][0].plot(range(len(losses)), losses, color=st.color, linewidth=1.0, label=name)
        if spikes:
            axes[0][0].plot(spikes, [losses[t] for t in spikes], linestyle="none", marker="x", color=st.color,
                            label=f"{name}: {len(spikes)} spike(s)")
        if name in diffs:
            axes[0][1].plot(range(len(diffs[name])), diffs[name], color=st.color, linewidth=1.0, label=name)
    axes[0][0].set_ylabel("training loss (nats)")
    axes[0][0].set_title("loss per step, same batches in the same order")
    if diffs:
        axes[0][1].axhline(0.0, color="#555555", linewidth=1.0, linestyle="--")
        axes[0][1].set_ylabel("loss - its bf16 run's (nats)")
        axes[0][1].set_title("difference from bf16 at each step")
    for ax in axes[0]:
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=3, frameon=False)
    fig.suptitle("\n".join(textwrap.wrap(f"{title} ({setting})", 120)))
    return Chart(title, to_svg(fig))
