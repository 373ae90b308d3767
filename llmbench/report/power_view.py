"""The power-limit sweep as a table (the curves: analysis/power.py)."""

from __future__ import annotations

from llmbench.analysis.caselabels import shared_params
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.labels import is_measured
from llmbench.analysis.power import FRACTIONS, curves, workload_labels
from llmbench.ids import params_text
from llmbench.report.tables import MISSING, Table, fmt_num


def _watts(w: float | None) -> str:
    return MISSING if w is None else f"{w:,.0f}"


def power_table(ref: SetRef) -> Table | None:
    """The seed's answer for a power sweep: per workload, its best speed and the watts for 80/90/95% of
    it; None where no workload was measured at two power limits (and for projected sets, whose speed
    does not depend on a power limit)."""
    if ref.kind == "projected":
        return None
    rows = curves(ref.cases())
    if not rows:
        return None
    labels = workload_labels(rows)
    body = [
        [label, f"{r['metric']} ({r['unit']})", fmt_num(max(s for _, s in r["points"])),
         *[_watts(r["watts_for"][f]) for f in FRACTIONS], ", ".join(_watts(w) for w, _ in r["points"])]
        for label, r in zip(labels, rows, strict=True)
    ]
    common = params_text(shared_params([r["params"] for r in rows])) if len(rows) > 1 else ""
    return Table(
        f"{ref.label}: power limit needed for 80/90/95% of the best speed",
        ["workload", "speed", "best", *[f"W for {f:.0%}" for f in FRACTIONS], "limits measured (W)"],
        body,
        caption=(f"common params: {common}. " if common else "")
        + "W for x%: the least power limit at which the speed reaches x% of the best speed measured, "
        "linear between the measured limits (an interpolation); a fraction already reached at the lowest "
        "limit answers that limit (an upper bound); — : not reached.",
        notes=[] if is_measured(ref.rs) else [f"Not measured here: {ref.label}."],
    )
