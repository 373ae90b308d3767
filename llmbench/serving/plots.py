"""The throughput-latency Pareto view of a sweep: throughput per GPU against tokens per second per
user, one point per load point, one line per server configuration. matplotlib is imported inside."""

from __future__ import annotations

from typing import Any

from llmbench.results import CaseResult

X, Y = "tokens_per_s_per_user", "output_tokens_per_s_per_gpu"
SERIES_KEYS = ("preset", "model", "precision", "endpoint", "input_len", "output_len")
POINT_KEYS = ("concurrency", "rate")


def pareto_points(cases: list[CaseResult]) -> dict[str, list[tuple[float, float, str]]]:
    """(tok/s per user, tok/s per GPU, point label) of each ok serving case, by series label."""
    out: dict[str, list[tuple[float, float, str]]] = {}
    for c in cases:
        if c.status != "ok" or X not in c.metrics or Y not in c.metrics:
            continue
        series = " ".join(f"{k}={c.params[k]}" for k in SERIES_KEYS if c.params.get(k) is not None)
        point = next((f"{k} {c.params[k]}" for k in POINT_KEYS if c.params.get(k) is not None), "")
        out.setdefault(series, []).append((c.metrics[X].value, c.metrics[Y].value, point))
    return {k: sorted(v) for k, v in out.items()}


def pareto_plot(cases: list[CaseResult]) -> Any:
    """A matplotlib Figure: x tokens/s per user (1000 / TPOT), y output tokens/s per GPU."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for series, pts in pareto_points(cases).items():
        xs, ys, _ = zip(*pts, strict=True)
        ax.plot(xs, ys, marker="o", label=series)
        for x, y, name in pts:
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("tokens/s per user (1000 / TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
