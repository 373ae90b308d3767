"""The first thing a report shows: per GPU pair and suite, the handful of headline ratios with their
intervals, the noise floor they should be read against, and how well `llmbench project` predicted
the other GPU from the baseline (the projection check).

The noise floor is the spread between separate runs on one GPU, which the within-run intervals do not
contain. It is read from the comparison rows' `between_run_cv` (one value per set, where several
result sets of a GPU were pooled), else their `floor_cv` (the GPU's floor for the case family, measured
in other runs); rows with neither say "not measured for this pair" instead of a number.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmbench.analysis.compare import Comparison, Geomean, MetricRow
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.labels import is_measured
from llmbench.analysis.project import Validation, project, validate
from llmbench.errors import UserError

NOISE_FIELD = "between_run_cv"  # per-set between-run CV a comparison row may carry (pooled runs)
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


def noise_cv(rows: list[MetricRow], i: int, baseline: int) -> float | None:
    """The largest between-run CV of either side among `rows`: a side's own runs where it pooled several,
    else its GPU's measured floor (None where no row carries either)."""
    cvs: list[float] = []
    for r in rows:
        own, floor = getattr(r, NOISE_FIELD, None) or [], r.floor_cv
        for k in (i, baseline):
            got = own[k] if k < len(own) and own[k] is not None else (floor[k] if k < len(floor) else None)
            if got is not None:
                cvs.append(got)
    return max(cvs) if cvs else None


def geomean_noise_cv(cmp: Comparison, g: Geomean, i: int) -> float | None:
    """The noise floor of one geometric mean: `noise_cv` over the rows it rests on."""
    rows = [r for r in cmp.rows if (g.scenario in ("overall", r.scenario))
            and (g.metric == "speed" or r.metric == g.metric)]
    return noise_cv(rows, i, cmp.baseline)
