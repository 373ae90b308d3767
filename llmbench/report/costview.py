"""The cost table of a comparison: each set's cost per unit of work at the prices given, and the
break-even price of each set against the baseline (with the interval of its speed ratio)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llmbench.analysis.compare import Comparison, metric_rows
from llmbench.analysis.cost import DEFAULT_RUN_TOKENS, break_even_price, cost_per, cost_units
from llmbench.analysis.prices import Price
from llmbench.report.tables import MISSING, Table

CAPTION = (
    "cost = price per hour x amount / (rate x 3600), the rate being the case's median (a side of several "
    "runs: the median of the runs' medians, as in the comparison). Break-even: "
    "the hourly price of that set's GPU at which its cost per unit equals {base}'s at {base}'s price "
    "(baseline price x speed ratio); rent below it and that GPU is the cheaper one per unit, above it "
    "the dearer. [95% CI]: the baseline price x the speed ratio's interval (the comparison's: a bootstrap, "
    "or where a side pools runs the runs' t-interval). Prices are the "
    "ones given (--price / --prices); none is built in."
)


@dataclass
class CostRow:
    scenario: str
    case: str
    unit: str
    costs: list[float | None]  # per set; None: no price for that set's GPU
    break_even: list[tuple[float, tuple[float, float] | None] | None] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "case": self.case,
            "unit": self.unit,
            "costs_usd": self.costs,
            "break_even_usd_per_hour": [
                None if b is None else {"value": b[0], "ci95": list(b[1]) if b[1] else None} for b in self.break_even
            ],
        }


def cost_rows(cmp: Comparison, prices: dict[str, Price], run_tokens: float = DEFAULT_RUN_TOKENS) -> list[CostRow]:
    """Rows for every case that ran ok in every set and has a rate metric that can be priced, from the
    comparison's rows: where a side pools several runs, its rate is the pooled figure and the break-even
    interval that of the pooled ratio (which holds the between-run spread). A rate metric the
    comparison left out (--headline keeps a scenario's headline metrics only) gets its row here, built
    the same way (`metric_rows`)."""
    sets, b = cmp.sets, cmp.baseline
    base_price = prices.get(sets[b].rs.gpu_slug)
    units = cost_units(run_tokens)
    names = {u.metric for u in units}
    found = {(r.case_id, r.metric): r for r in cmp.rows if r.metric in names}
    left_out = metric_rows(sets, b, lambda cid, _scenario, name: name in names and (cid, name) not in found)
    found.update(((r.case_id, r.metric), r) for r in left_out)
    order = {c.id: i for i, c in enumerate(sets[b].cases())}
    rows: list[CostRow] = []
    for unit in units:
        for mrow in sorted((r for r in found.values() if r.metric == unit.metric), key=lambda r: order[r.case_id]):
            rates = [v for v in mrow.values if v is not None and v > 0]
            if len(rates) < len(sets):
                continue
            costs: list[float | None] = []
            for s, rate in zip(sets, rates, strict=True):
                p = prices.get(s.rs.gpu_slug)
                costs.append(cost_per(p.usd_per_hour, rate, unit.amount) if p else None)
            even: list[tuple[float, tuple[float, float] | None] | None] = []
            for i, rate in enumerate(rates):
                if i == b or base_price is None:
                    even.append(None)
                    continue
                r = mrow.ratios[i]
                ci = (base_price.usd_per_hour * r.ci[0], base_price.usd_per_hour * r.ci[1]) if r and r.ci else None
                even.append((break_even_price(base_price.usd_per_hour, rates[b], rate), ci))
            rows.append(CostRow(mrow.scenario, mrow.case, unit.label, costs, even))
    return rows


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


def cost_data(cmp: Comparison, prices: dict[str, Price], run_tokens: float = DEFAULT_RUN_TOKENS) -> dict[str, Any]:
    """The cost table's figures for --format json."""
    return {
        "prices_usd_per_hour": {k: {"usd_per_hour": v.usd_per_hour, "origin": v.origin()} for k, v in prices.items()},
        "run_tokens": run_tokens,
        "rows": [r.to_dict() for r in cost_rows(cmp, prices, run_tokens)],
    }
