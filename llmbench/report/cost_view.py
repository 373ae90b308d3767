"""The cost table of a comparison: each set's cost per unit of work at the prices given, and the
break-even price of each set against the baseline (with the interval of its speed ratio). The figures:
analysis/cost_rows.py."""

from __future__ import annotations

from llmbench.analysis.compare import Comparison
from llmbench.analysis.cost import DEFAULT_RUN_TOKENS
from llmbench.analysis.cost_rows import cost_rows
from llmbench.analysis.prices import Price
from llmbench.report.tables import MISSING, Table

CAPTION = (
    "cost = price per hour x amount / (rate x 3600), the rate being the case's median (a side of several "
    "runs: the median of the runs' medians, as in the comparison). Break-even: "
    "the hourly price of that set's GPU at which its cost per unit equals {base}'s at {base}'s price "
    "(baseline price x speed ratio); rent below it and that GPU is the cheaper one per unit, above it "
    "the dearer. [95% CI]: the baseline price x the speed ratio's interval (the comparison's: a bootstrap, "
    "or where a side pools runs the runs' t-interval). Each price is named above with where it came from: "
    "the ones given (--price / --prices), or on the published pages the list prices shipped with llmbench."
)


def _usd(v: float | None) -> str:
    if v is None:
        return MISSING
    return f"${v:,.2f}" if v >= 1 else f"${v:.3g}"


def cost_table(cmp: Comparison, prices: dict[str, Price], run_tokens: float = DEFAULT_RUN_TOKENS) -> Table:
    """The table `compare` and `report` add when prices are given."""
    sets, b = cmp.sets, cmp.baseline
    others = [i for i in range(len(sets)) if i != b]
    rows = cost_rows(cmp, prices, run_tokens)
    notes = [f"{s.label}: ${prices[s.rs.gpu_slug].usd_per_hour:.2f}/h ({prices[s.rs.gpu_slug].origin()})"
             for s in sets if s.rs.gpu_slug in prices]
    unpriced = [s.label for s in sets if s.rs.gpu_slug not in prices]
    if unpriced:
        notes.append(f"no price for {', '.join(unpriced)}: give --price SLUG=USD (slugs: "
                     f"{', '.join(sorted({s.rs.gpu_slug for s in sets}))})")
    if not rows:
        notes.append("no case of these sets has output_tokens_per_s, train_samples_per_s or train_tokens_per_s "
                     "in every set: nothing to price")
    body = [
        [
            r.scenario,
            r.case,
            r.unit,
            *[_usd(c) for c in r.costs],
            *[MISSING if r.break_even[i] is None else _even_text(r.break_even[i]) for i in others],  # type: ignore[arg-type]
        ]
        for r in rows
    ]
    cols = ["scenario", "case", "unit", *[s.label for s in sets],
            *[f"break-even $/h of {sets[i].label} vs {sets[b].name}" for i in others]]
    return Table("Cost at the given hourly prices", cols, body, caption=CAPTION.format(base=sets[b].name),
                 notes=notes)


def _even_text(even: tuple[float, tuple[float, float] | None]) -> str:
    value, ci = even
    return f"${value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
