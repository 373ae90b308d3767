"""The figure every chart of charts.py (the one home of chart builders) is drawn on: matplotlib (Agg
backend) saved as inline SVG (no files, no URLs), text kept as SVG text readable at 100% zoom.

SVG user units are points (1 pt = 4/3 CSS px at 100% zoom); a figure FIG_WIDTH_IN wide fits the page
unscaled, so a 9 pt tick label shows at 12 px.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, FuncFormatter

from llmbench.report.escapes import escape_controls

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


def _escape_texts(fig: plt.Figure) -> None:
    """Every text of the figure with its control and format characters as escapes (report/escapes.py), so
    they are drawn and laid out as the page shows them: titles, legends, annotations, and tick labels,
    which a fixed formatter writes again at each draw."""
    for artist in fig.findobj(Text):
        artist.set_text(escape_controls(artist.get_text()))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatter = axis.get_major_formatter()
            if isinstance(formatter, FixedFormatter):
                formatter.seq = [escape_controls(str(label)) for label in formatter.seq]
            elif isinstance(formatter, FuncFormatter):  # set_ticks(..., labels): the labels behind a function
                formatter.func = _escaping(formatter.func)


def _escaping(func: Callable[..., object]) -> Callable[..., str]:
    return lambda x, pos=None: escape_controls(str(func(x, pos)))


def to_svg(fig: plt.Figure, tooltips: dict[str, str] | None = None) -> str:
    """The figure as inline SVG; `tooltips` maps the gid of an artist (a tick label) to the text a
    browser shows on hovering it (an SVG <title>: the full text of a shortened label)."""
    _escape_texts(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    for gid, tip in (tooltips or {}).items():
        text = text.replace(f'<g id="{gid}">', f'<g id="{gid}"><title>{html.escape(escape_controls(tip))}</title>', 1)
    return text[text.index("<svg") :]
