"""The first thing a report shows, rendered: per GPU pair and suite, the headline ratios with their
intervals and the noise floor they should be read against (the figures: analysis/answer.py)."""

from __future__ import annotations

from llmbench.analysis.answer import geomean_noise_cv
from llmbench.analysis.compare import HOST_BOUND, Comparison, Geomean
from llmbench.analysis.summary import Summary
from llmbench.report.answer_view import ratio_sentence
from llmbench.report.tables import Table, ratio_text

NOT_MEASURED_NOISE = "not measured for this pair"
def _noise_text(cmp: Comparison, g: Geomean, i: int) -> str | None:
    cv = geomean_noise_cv(cmp, g, i)
    return None if cv is None else f"±{cv:.1%} between runs"


def headline_table(cmp: Comparison, s: Summary, title: str) -> Table:
    """Per scenario, the geometric-mean ratio of its speed metrics and of each headline metric, with
    its interval, the cells it rests on and the noise floor (a column where any row has one, else one
    line under the table saying it was not measured)."""
    b = cmp.baseline
    others = [i for i in range(len(cmp.sets)) if i != b]
    # the rows `compare` prints (`s`, the comparison's summary), and the overall speed where several scenarios join
    several = len({g.scenario for g in s.headline} - {HOST_BOUND}) > 1
    geomeans = ([s.overall] if s.overall and several else []) + s.headline
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
        "> 1: better than the baseline; [interval]: what the lead line says it rests on (a 95% interval where "
        "the runs or a measured noise floor give one; one run per side: the within-run samples only). A ratio "
        "means more than the noise only where it is further from 1 than the noise floor.",
    )


def lead_sentence(s: Summary) -> str:
    """A comparison (its summary) in one line per other side, as `compare`'s answer says it: its overall
    speed ratio against the baseline and what the interval rests on."""
    cells = s.overall.n if s.overall else 0
    return " ".join(ratio_sentence(s.overall.ratios[i] if s.overall else None, s.names[i], s.names[s.baseline],
                                   cells, s.covers, s.basis(i)) for i in s.others)
