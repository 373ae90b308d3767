"""How the published figures of a comparison match the llmbench cases they join: their `info.match`
(llmbench/references/data/published/) as one table beside `llmbench compare`'s ratios, so a
ratio against a published figure is never read without what differs."""

from __future__ import annotations

from llmbench.analysis.caselabels import case_labels
from llmbench.analysis.inputs import SetRef
from llmbench.caseinfo import PublishedInfo
from llmbench.report.tables import Table


def match_table(sets: list[SetRef]) -> Table | None:
    """One row per published case that joins a case of another set (None where none does)."""
    ids = [{c.id for c in s.cases()} for s in sets]
    rows, cases = [], []
    for i, s in enumerate(sets):
        others = set().union(*(ids[:i] + ids[i + 1:]))
        for c in s.cases():
            match = PublishedInfo.of(c.info).match
            if s.kind != "published" or not match or c.id not in others:
                continue
            cases.append(c)
            rows.append([s.label, c.id, match.quality or "?",
                         "; ".join(f"{k}: {v}" for k, v in match.conditions.items()),
                         "; ".join(str(d) for d in match.differences) or "-", match.quote or ""])
    if not rows:
        return None
    labels = case_labels(cases)
    for row, c in zip(rows, cases, strict=True):
        row[1] = f"{c.scenario} {labels[c.id]}".strip()
    return Table(
        "How the published figures match the cases they join",
        ["set", "case", "match", "the source's conditions", "differs from the llmbench case", "as printed"], rows,
        caption="close: the same model, precision and batch on other software (lengths may differ, as listed); "
        "loose: another model, batch or kind of figure; own workload: the source's own case. A ratio against a "
        "published figure holds every difference listed here.",
    )
