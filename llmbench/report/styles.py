"""One look per series on every chart of a report: a series is a GPU (a result set) and, where the
cases have one, a precision. The colour's hue comes from the precision (by its place on the precision
axis, so bf16 is the same blue in every report), its shade and the line's dash and marker from the
GPU's place in the comparison (the baseline dark and solid). Nothing depends on drawing order, so a
chart that lacks a series does not shift the colours of the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from llmbench.precision import PRECISIONS

# Hue pairs (dark, light), one per precision of the axis in its order; more precisions reuse them
# with another marker. Chosen to be told apart in print and by most colour-blind readers.
_HUES = (
    ("#1f4e9c", "#4a90e2"),  # blue
    ("#b35806", "#f28e2b"),  # orange
    ("#1b7837", "#4caf50"),  # green
    ("#a50f15", "#e8575a"),  # red
    ("#5e3c99", "#9467bd"),  # purple
    ("#8c510a", "#c49a45"),  # brown
    ("#c51b7d", "#e377c2"),  # pink
    ("#3f3f3f", "#8c8c8c"),  # grey
    ("#6b7d00", "#a8bf12"),  # olive
    ("#01665e", "#2ca89a"),  # teal
)
LineStyle = Literal["-", "--", ":", "-."]
_DASHES: tuple[LineStyle, ...] = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P")
_ORDER = {name: i for i, name in enumerate(PRECISIONS)}


@dataclass(frozen=True)
class Style:
    color: str
    linestyle: LineStyle
    marker: str


def gpu_color(gpu_index: int) -> str:
    """The colour of a GPU's series where there is no precision (speed-up bars, timelines)."""
    return (_HUES[0][0], _HUES[1][0], _HUES[2][0], _HUES[4][0])[gpu_index % 4]


def series_style(gpu_index: int, precision: str | None, variant: int = 0) -> Style:
    """The style of the series (GPU at `gpu_index` of its comparison, precision) on every chart;
    `variant` > 0 tells apart series of one GPU and precision on one chart (workloads) by marker."""
    if precision is None:
        return Style(gpu_color(gpu_index), _DASHES[gpu_index % len(_DASHES)],
                     _MARKERS[(gpu_index + variant) % len(_MARKERS)])
    order = _ORDER.get(precision, len(_ORDER) + sum(map(ord, precision)))
    hue = _HUES[order % len(_HUES)]
    color = hue[0] if gpu_index % 2 == 0 else hue[1]
    marker = _MARKERS[(gpu_index + order // len(_HUES) + variant) % len(_MARKERS)]
    return Style(color, _DASHES[gpu_index % len(_DASHES)], marker)


def nth_style(gpu_index: int, n: int) -> Style:
    """The style of a GPU's n-th series where series are not precisions (a sweep per num_workers): the
    n-th hue and marker, shaded and dashed by the GPU as `series_style`."""
    hue = _HUES[n % len(_HUES)]
    return Style(hue[0] if gpu_index % 2 == 0 else hue[1], _DASHES[gpu_index % len(_DASHES)],
                 _MARKERS[(gpu_index + n) % len(_MARKERS)])
