"""The first thing a report shows, rendered: per GPU pair and suite, the headline ratios with their
intervals and the noise floor they should be read against (the figures: analysis/answer.py)."""

from __future__ import annotations

from llmbench.analysis.answer import geomean_noise_cv, headline_geomeans
from llmbench.analysis.compare import Comparison, Geomean
from llmbench.report.tables import Table, fmt_ratio, ratio_text

NOT_MEASURED_NOISE = "not measured for this pair"
def _noise_text(cmp: Comparison, g: Geomean, i: int) -> str | None:
    cv = geomean_noise_cv(cmp, g, i)
    return None if cv is None else f"±{cv:.1%} between runs"


def headline_table(cmp: Comparison, title: str) -> Table:
    """Per scenario, the geometric-mean ratio of its speed metrics and of each headline metric, with
    its interval, the cells it rests on and the noise floor (a column where any row has one, else one
    line under the table saying it was not measured)."""
    b = cmp.baseline
    others = [i for i in range(len(cmp.sets)) if i != b]
    geomeans = headline_geomeans(cmp)
    noise = {(id(g), i): _noise_text(cmp, g, i) for g in geomeans for i in others}
    with_noise = any(v is not None for v in noise.values())
    cols = ["scenario", "metric", "cells"]
    for i in others:
        cols += [f"{cmp.sets[i].label} vs {cmp.sets[b].label}"] + (["noise floor"] if with_noise else [])
    rows = []
    for g in geomeans:
        row = [g.scenario, "speed (all speed metrics)" if g.metric == "speed" else g.metric, str(g.n)]
        for i in others:
            r = g.ratios[i]
            row += [ratio_text(r)]
            if with_noise:
                row += [noise[(id(g), i)] or NOT_MEASURED_NOISE]
        rows.append(row)
    noise_line = "" if with_noise else (f"Noise floor: {NOT_MEASURED_NOISE} (one result set per GPU; pooling "
                                        "several runs of each GPU measures the spread between runs). ")
    return Table(
        title, cols, rows,
        caption=noise_line + "Geometric mean over the cases both sides ran ('cells': cases x metric families); "
        "> 1: better than the baseline; [95% interval] from the within-run samples. A ratio means more than "
        "the noise only where it is further from 1 than the noise floor (the spread between separate runs).",
    )


def lead_sentence(cmp: Comparison) -> str:
    """The comparison in one line: each other set's overall speed ratio against the baseline."""
    overall = next((g for g in cmp.geomeans if g.scenario == "overall" and g.metric == "speed"), None)
    b = cmp.sets[cmp.baseline]
    parts = []
    for i, s in enumerate(cmp.sets):
        r = overall.ratios[i] if overall else None
        if i != cmp.baseline and r is not None:
            parts.append(f"{s.label} runs at {fmt_ratio(r.value, r.ci)} the speed of {b.label}")
    if not parts or overall is None:
        return f"No speed metric was measured by both {b.label} and the other sets."
    return "; ".join(parts) + f" (geometric mean of {overall.n} speed cells, 95% interval)."
