"""Shared pieces of the report's charts: matplotlib (Agg backend) figures saved as inline SVG (no files,
no URLs), with text kept as SVG text at sizes readable at 100% zoom; and the timeline and serving
Pareto charts. The question charts (throughput, TTFT, roofline, speed-ups) are in charts.py.

SVG user units are points (1 pt = 4/3 CSS px at 100% zoom); a figure FIG_WIDTH_IN wide fits the page
unscaled, so a 9 pt tick label shows at 12 px.
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass

import matplotlib

from llmbench.caseinfo import TimelineInfo

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from llmbench.analysis.caselabels import case_labels
from llmbench.analysis.inputs import SetRef
from llmbench.report.styles import gpu_color

FONT_PT = 10.0
SMALL_PT = 9.0  # ticks and legends: the smallest text on any chart (12 px at 100% zoom)
FIG_WIDTH_IN = 10.4  # 998 px: inside the page's 1,068 px column, so not scaled down on a 1,100 px window
plt.rcParams.update(
    {
        "svg.hashsalt": "llmbench",
        "svg.fonttype": "none",  # text stays text: selectable, and its size can be checked
        "font.size": FONT_PT,
        "axes.titlesize": FONT_PT + 1,
        "axes.labelsize": FONT_PT,
        "xtick.labelsize": SMALL_PT,
        "ytick.labelsize": SMALL_PT,
        "legend.fontsize": SMALL_PT,
        "figure.titlesize": FONT_PT + 2,
    }
)


@dataclass
class Chart:
    title: str
    svg: str

    @property
    def height_px(self) -> float:
        """The chart's height on screen at 100% zoom (CSS px; the SVG's size is in points)."""
        m = re.search(r'<svg[^>]*height="([\d.]+)pt"', self.svg)
        return float(m.group(1)) * 4 / 3 if m else 0.0


def to_svg(fig: plt.Figure, tooltips: dict[str, str] | None = None) -> str:
    """The figure as inline SVG; `tooltips` maps the gid of an artist (a tick label) to the text a
    browser shows on hovering it (an SVG <title>: the full text of a shortened label)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    for gid, tip in (tooltips or {}).items():
        text = text.replace(f'<g id="{gid}">', f'<g id="{gid}"><title>{html.escape(tip)}</title>', 1)
    return text[text.index("<svg") :]


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
    from llmbench.serving.plots import pareto_points

    return [(i, f"{s.label} {series}".strip(), pts)
            for i, s in enumerate(sets) for series, pts in pareto_points(s.rs.cases).items()]


def pareto_lines(sets: list[SetRef]) -> list[tuple[str, list[tuple[float, float, str]]]]:
    """(label naming the GPU and the server configuration, its points) of every serving sweep."""
    return [(label, pts) for _, label, pts in _pareto_series(sets)]


def pareto_charts(sets: list[SetRef]) -> list[Chart]:
    """The serving Pareto view: output tokens/s per GPU against tokens/s per user, one line per GPU
    and server configuration, one point per load point of a sweep (llmbench.serving.plots)."""
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
