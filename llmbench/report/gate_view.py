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
                f"not judged ({'fails' if g.unjudged == 'fail' else 'passes'}, --unjudged {g.unjudged}): no spread "
                "between runs measured (run --repeat 3)")),
        ]
        for c in g.slower
    ]
    verdict = "FAILED" if g.failed else "passed"
    power = g.power
    reach = ("" if power is None or power.smallest_caught is None else
             f" With these runs and their noise it catches a {power.smallest_caught:.1%} slowdown of a cell 80% of "
             "the time; catching 10% takes " + (f"at least {power.runs_for_10pct} runs a side." if power.runs_for_10pct
                                                else "more than 64 runs a side, or less noise."))
    return Table(
        f"Regression gate: {verdict} (slower than {g.threshold:.1%} vs {g.baseline})",
        ["set", "scenario", "case", "metric", "ratio [95% CI]", "verdict"],
        rows,
        caption=(
            f"{g.checked} headline cells checked; a cell fails when its oriented ratio is below "
            f"{g.limit:.4f} (= 1/(1+{g.threshold:g})) and it is slower than 1 beyond the noise between runs and "
            "machines, judged over all cells at once (one-sided t-tests, Holm: a suite with nothing changed "
            "fails at most 5% of the time), and whatever the noise when the baseline's case is ok and the "
            "candidate's is not (failed, timed out, skipped or absent), a value is not finite or not positive, "
            "a case id repeats in a set, or a set lies in another GPU's folder." + reach
        ),
        empty=f"no headline cell is more than {g.threshold:.1%} slower than {g.baseline}",
    )
