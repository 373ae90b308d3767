"""The cost table of a comparison: each set's cost per unit of work at the prices given, and the
break-even price of each set against the baseline (with the interval of its speed ratio). A case on
several GPUs (tensor parallel, replicas, ranks) costs its GPUs' hours: price x the GPUs its placement
asks for; a break-even price is per GPU-hour."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llmbench.analysis.compare import Comparison, metric_rows
from llmbench.analysis.cost import DEFAULT_RUN_TOKENS, break_even_price, cost_per, cost_units
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.prices import Price
from llmbench.analysis.recorded import recorded


@dataclass
class CostRow:
    scenario: str
    case: str
    unit: str
    costs: list[float | None]  # per set; None: no price for that set's GPU
    break_even: list[tuple[float, tuple[float, float] | None] | None] = field(default_factory=list)
    gpus: list[int] = field(default_factory=list)  # per set: the GPUs the case held (what its cost pays for)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "case": self.case,
            "unit": self.unit,
            "costs_usd": self.costs,
            "gpus": self.gpus,
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
            gpus = [_gpus(s, mrow.case_id) for s in sets]
            costs: list[float | None] = []
            for s, rate, n in zip(sets, rates, gpus, strict=True):
                p = prices.get(s.rs.gpu_slug)
                costs.append(cost_per(p.usd_per_hour * n, rate, unit.amount) if p else None)
            even: list[tuple[float, tuple[float, float] | None] | None] = []
            for i, rate in enumerate(rates):
                if i == b or base_price is None:
                    even.append(None)
                    continue
                r = mrow.ratios[i]
                per_gpu = gpus[b] / gpus[i]  # the baseline's hours are its GPUs', this side's are its own
                ci = (base_price.usd_per_hour * r.ci[0] * per_gpu, base_price.usd_per_hour * r.ci[1] * per_gpu) \
                    if r and r.ci else None
                even.append((break_even_price(base_price.usd_per_hour, rates[b], rate) * per_gpu, ci))
            rows.append(CostRow(mrow.scenario, mrow.case, unit.label, costs, even, gpus))
    return rows


def _gpus(s: SetRef, case_id: str) -> int:
    """The GPUs a case of a set held: its placement's (one where this llmbench cannot read it)."""
    case = s.case(case_id)
    return (recorded(case).gpus or 1) if case else 1


def cost_data(cmp: Comparison, prices: dict[str, Price], run_tokens: float = DEFAULT_RUN_TOKENS) -> dict[str, Any]:
    """The cost table's figures for --format json."""
    return {
        "prices_usd_per_hour": {k: {"usd_per_hour": v.usd_per_hour, "origin": v.origin()} for k, v in prices.items()},
        "run_tokens": run_tokens,
        "rows": [r.to_dict() for r in cost_rows(cmp, prices, run_tokens)],
    }
