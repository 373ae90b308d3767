"""The regression gate's verdict as a table (the gate itself: analysis/gate.py)."""

from __future__ import annotations

from llmbench.analysis.gate import GateCell, GateResult
from llmbench.report.tables import MISSING, Table, fmt_ratio


def cell_ratio(c: GateCell) -> str:
    """The cell's ratio and interval, or MISSING where the candidate has none."""
    return MISSING if c.ratio is None else fmt_ratio(c.ratio, c.ci)


def gate_table(g: GateResult) -> Table:
    """What the gate found: each slower cell, and whether it fails the gate or sits within the noise."""
    rows = [
        [
            c.set_label,
            c.scenario,
            c.case,
            c.metric or MISSING,
            cell_ratio(c),
            f"FAIL: {c.problem}" if c.problem else "FAIL" if c.beyond_noise else ("within noise" if c.decidable else (
                "not judged: one run a side, no noise floor (run --repeat 3)" if c.ci else
                "no interval (no raw samples): not gated")),
        ]
        for c in g.slower
    ]
    verdict = "FAILED" if g.failed else "passed"
    return Table(
        f"Regression gate: {verdict} (slower than {g.threshold:.1%} vs {g.baseline})",
        ["set", "scenario", "case", "metric", "ratio [95% CI]", "verdict"],
        rows,
        caption=(
            f"{g.checked} headline cells checked; a cell fails when its oriented ratio is below "
            f"{g.limit:.4f} (= 1/(1+{g.threshold:g})) and its one-sided 95% upper bound is below 1 (slower beyond "
            "the noise between runs: pooled runs, or one run a side widened by the measured noise floor), and "
            "whatever the noise when the baseline's case is ok and the candidate's is not (failed, timed out, "
            "skipped or absent) or a value is not finite."
        ),
        empty=f"no headline cell is more than {g.threshold:.1%} slower than {g.baseline}",
    )
