"""The between-run spread and each side's noise floor as tables (the figures: analysis/spread.py)."""

from __future__ import annotations

from llmbench.analysis.inputs import SetRef
from llmbench.analysis.spread import SpreadRow, noise_floor
from llmbench.report.tables import MISSING, Table, fmt_num


def _pct(v: float | None) -> str:
    return MISSING if v is None else f"{v:.2%}"


def spread_tables(sets: list[SetRef], rows: list[SpreadRow]) -> list[Table]:
    """One table of every row, and one of each side's noise floor."""
    body = [
        [
            r.side, r.scenario, r.case, r.metric, r.unit, fmt_num(r.value),
            ", ".join(fmt_num(v) for v in r.run_values), str(len(r.run_values)),
            MISSING if r.n is None else str(r.n), MISSING if r.machines is None else str(r.machines),
            _pct(r.between_run_cv), _pct(r.within_run_cv),
        ]
        for r in rows
    ]
    floor = noise_floor(rows)
    summary = [
        [side, str(f["runs"]), str(f["cells"]), _pct(f["median_between_run_cv"]), _pct(f["max_between_run_cv"]),
         f["max_at"]]
        for side, f in floor.items()
    ]
    return [
        Table(
            "Between-run spread",
            ["set", "scenario", "case", "metric", "unit", "median of runs", "each run", "runs", "n", "machines",
             "between-run CV", "within-run CV"],
            body,
            key_columns=3,
            caption="each run = the run's median, in run order; between-run CV = standard deviation of the runs' "
            "medians over their mean (— with one run); within-run CV = the median over runs of each run's own "
            "sample CV. A between-run CV well above the within-run one: runs differ by more than their samples "
            "say (clocks, thermal state, autotuning, the host).",
        ),
        Table(
            "Noise floor (speed metrics measured in two runs or more)",
            ["set", "runs", "cells", "median between-run CV", "largest between-run CV", "largest at"],
            summary,
            caption="a ratio of single runs of these cases within about twice the largest between-run CV of 1 "
            "(e.g. 0.96x-1.04x at 2%) is within the noise of a fresh run; from 3 runs a CV is itself a rough "
            "estimate.",
        ),
    ]
