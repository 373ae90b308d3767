"""The first thing a report shows: per GPU pair and suite, the handful of headline ratios with their
intervals, the noise floor they should be read against, and how well `llmbench project` predicted
the other GPU from the baseline (the projection check).

The noise floor is the spread between separate runs on one GPU, which the within-run intervals do not
contain. It is read from the comparison rows' `between_run_cv` (one value per set, where several
result sets of a GPU were pooled); rows without it say "not measured for this pair" instead of a
number.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmbench.analysis.compare import HEADLINE_EXTRAS, Comparison, Geomean, MetricRow, is_headline
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.labels import is_measured
from llmbench.analysis.project import Validation, project, validate
from llmbench.errors import UserError
from llmbench.report.tables import MISSING, Table, fmt_ratio

NOISE_FIELD = "between_run_cv"  # per-set between-run CV a comparison row may carry (pooled runs)
NOT_MEASURED_NOISE = "not measured for this pair"
ANSWER_METRICS_SKIP = frozenset({"peak_memory_gib"})  # equal on both GPUs by construction: not an answer


@dataclass
class ProjectionCheck:
    """The baseline projected to another set's GPU by roofline scaling, against that set's measurement."""

    projected: SetRef
    measured: SetRef
    validation: Validation


def projection_checks(sets: list[SetRef], baseline: int) -> tuple[list[ProjectionCheck], list[str]]:
    """A check per other measured set whose GPU the spec table knows; and why others have none."""
    base = sets[baseline]
    checks: list[ProjectionCheck] = []
    why: list[str] = []
    for i, other in enumerate(sets):
        if i == baseline:
            continue
        if not (is_measured(base.rs) and is_measured(other.rs)):
            why.append(f"{other.label}: no projection check (only measured sets are projected and checked)")
            continue
        if base.rs.gpu_slug == other.rs.gpu_slug:
            why.append(f"{other.label}: no projection check (same GPU as {base.label})")
            continue
        try:
            projected = project(base.rs, other.rs.gpu_slug)
        except UserError as e:
            why.append(f"{other.label}: no projection check ({e})")
            continue
        checks.append(ProjectionCheck(SetRef(name=other.name, rs=projected), other,
                                      validate(projected, other.rs)))
    return checks, why


def _answer_geomeans(cmp: Comparison) -> list[Geomean]:
    scenarios = {g.scenario for g in cmp.geomeans if g.scenario != "overall"}
    return [
        g for g in cmp.geomeans
        if g.metric not in ANSWER_METRICS_SKIP
        and ((g.metric == "speed" and (g.scenario != "overall" or len(scenarios) > 1))
             or (g.scenario != "overall" and g.metric != "speed"
             and (g.metric in HEADLINE_EXTRAS or is_headline(g.scenario, g.metric))))
    ]


def noise_cv(rows: list[MetricRow], i: int, baseline: int) -> float | None:
    """The largest between-run CV of either side among `rows` (None where no row carries one)."""
    cvs: list[float] = []
    for r in rows:
        per_set = getattr(r, NOISE_FIELD, None) or []
        cvs += [per_set[k] for k in (i, baseline) if k < len(per_set) and per_set[k] is not None]
    return max(cvs) if cvs else None


def _noise_text(cmp: Comparison, g: Geomean, i: int) -> str | None:
    rows = [r for r in cmp.rows if (g.scenario in ("overall", r.scenario))
            and (g.metric == "speed" or r.metric == g.metric)]
    cv = noise_cv(rows, i, cmp.baseline)
    return None if cv is None else f"±{cv:.1%} between runs"


def headline_table(cmp: Comparison, title: str) -> Table:
    """Per scenario, the geometric-mean ratio of its speed metrics and of each headline metric, with
    its interval, the cells it rests on and the noise floor (a column where any row has one, else one
    line under the table saying it was not measured)."""
    b = cmp.baseline
    others = [i for i in range(len(cmp.sets)) if i != b]
    geomeans = _answer_geomeans(cmp)
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
            row += [fmt_ratio(r.value, r.ci) if r else MISSING]
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
