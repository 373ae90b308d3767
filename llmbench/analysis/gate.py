"""A regression gate for `llmbench compare --fail-if-slower 5%`: a headline cell fails when its ratio is
worse than the threshold AND its one-sided 95% upper bound lies below 1, on an interval that carries the
noise between runs (pooled runs, or a single run widened by a measured noise floor); a cell of single
runs without a floor is listed, never failed. "5% slower" reads as time: the oriented ratio below
1 / 1.05. Error rates (tests/test_gate.py): docs/design.md, "Comparing, projecting, publishing".

What no interval can excuse fails outright, named: a case ok in the baseline that is failed, timed out,
skipped or absent in a candidate, and a headline value or slower ratio (or its interval) that is not finite."""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from llmbench.analysis.compare import Comparison, MetricRow, Ratio
from llmbench.errors import UserError

_THRESHOLD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def parse_threshold(text: str, option: str = "--fail-if-slower") -> float:
    """'5%' -> 0.05. Anything else is a UserError naming the option, the value and the valid form."""
    m = _THRESHOLD.match(text)
    value = float(m.group(1)) / 100.0 if m else None
    if value is None or not 0.0 < value < 10.0:
        raise UserError(
            f"{option}: {text!r} is not a threshold; give a percentage above 0% and below 1000%, e.g. {option} 5%"
        )
    return value


@dataclass
class GateCell:
    """One headline metric of one joined case in one compared set, worse than the threshold allows."""

    set_label: str
    case_id: str
    scenario: str
    case: str
    metric: str  # "" where the whole case is at fault (`problem`)
    ratio: float | None  # None: no ratio (the case or the metric is absent from the candidate)
    ci: tuple[float, float] | None
    beyond_noise: bool  # slower than the limit and the whole interval below 1; False: within noise, or undecidable
    decidable: bool = True  # False: one run a side and no noise floor (the interval is within-run only)
    problem: str = ""  # why the cell fails whatever the noise: a lost case, a value that is not finite

    def to_dict(self) -> dict[str, Any]:
        return {
            "set": self.set_label,
            "case_id": self.case_id,
            "scenario": self.scenario,
            "case": self.case,
            "metric": self.metric,
            "ratio": self.ratio if self.ratio is not None and math.isfinite(self.ratio) else None,
            "ci95": list(self.ci) if self.ci and all(map(math.isfinite, self.ci)) else None,
            "beyond_noise": self.beyond_noise,
            "decidable": self.decidable,
            "problem": self.problem or None,
        }


@dataclass
class GateResult:
    threshold: float
    limit: float  # oriented ratios below this are slower than the threshold allows
    baseline: str
    slower: list[GateCell]  # every cell past the limit; those with beyond_noise fail the gate
    checked: int  # ratioed headline cells looked at

    @property
    def failures(self) -> list[GateCell]:
        return [c for c in self.slower if c.beyond_noise]

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "limit_ratio": self.limit,
            "baseline": self.baseline,
            "checked": self.checked,
            "failed": self.failed,
            "slower": [c.to_dict() for c in self.slower],
        }


ONE_SIDED = 0.95  # "slower" is one-sided: the gate's false-alarm rate is at most 1 - this


def slower_beyond_noise(r: Ratio, limit: float) -> bool | None:
    """Whether a ratio fails the gate: below `limit` and its one-sided 95% upper bound below 1 (slower,
    and not by the noise between runs: a one-sided test at 5%). None where it cannot be judged: no
    interval, or one that does not carry the between-run noise (basis 'single run'). An interval that is
    not finite is never the noise: a slower ratio with one fails."""
    if r.value >= limit:
        return False
    if r.ci is not None and not all(map(math.isfinite, r.ci)):
        return True
    if r.ci is None or not r.is_95:
        return None
    upper = float(np.quantile(r.draws, ONE_SIDED)) if r.draws is not None else r.ci[1]
    return not math.isfinite(upper) or upper < 1.0


def not_finite(row: MetricRow, i: int, baseline: int) -> str:
    """Why set `i`'s cell of `row` cannot be ratioed: its value, the baseline's or their ratio is not a
    finite number, or the metric is absent from the candidate; "" where it can."""
    this, base = row.values[i], row.values[baseline]
    r = row.ratios[i]
    if this is None:
        return f"{row.metric} is absent from the candidate" if base is not None else ""
    if not math.isfinite(this):
        return f"{row.metric} is {this} in the candidate"
    if base is not None and not math.isfinite(base):
        return f"{row.metric} is {base} in the baseline"
    if r is not None and not math.isfinite(r.value):
        return f"{row.metric}: the ratio is {r.value}"
    return ""


def lost_cases(cmp: Comparison) -> list[GateCell]:
    """Cases ok in the baseline that a candidate did not measure: failed, timed out, skipped or absent."""
    out: list[GateCell] = []
    b = cmp.baseline
    for note in cmp.not_ok + cmp.one_sided:
        if note.statuses[b] != "ok":
            continue
        for i, status in enumerate(note.statuses):
            if i == b or status == "ok":
                continue
            what = "absent from the candidate" if status is None else f"{status} in the candidate" + (
                f" ({note.reasons[i]})" if note.reasons[i] else "")
            out.append(GateCell(cmp.sets[i].label, note.case_id, note.scenario, note.case, "", None, None, True,
                                problem=f"ok in the baseline, {what}"))
    return out


def gate(cmp: Comparison, threshold: float, metrics: Collection[str]) -> GateResult:
    """Every ratioed cell of `metrics` (the headline ones) checked against 1 / (1 + threshold); every case
    ok in the baseline and not in a candidate, and every headline cell that is not finite, fails it."""
    limit = 1.0 / (1.0 + threshold)
    slower: list[GateCell] = lost_cases(cmp)
    checked = 0
    for row in cmp.rows:
        if row.metric not in metrics or row.better == "neither":
            continue
        for i, r in enumerate(row.ratios):
            if i == cmp.baseline:
                continue
            problem = not_finite(row, i, cmp.baseline)
            if problem:
                checked += 1
                slower.append(GateCell(cmp.sets[i].label, row.case_id, row.scenario, row.case, row.metric,
                                       r.value if r else None, r.ci if r else None, True, problem=problem))
                continue
            if r is None:
                continue
            checked += 1
            verdict = slower_beyond_noise(r, limit)
            if verdict is False and r.value >= limit:
                continue
            odd = r.ci is not None and not all(map(math.isfinite, r.ci))
            slower.append(GateCell(cmp.sets[i].label, row.case_id, row.scenario, row.case, row.metric,
                                   r.value, r.ci, bool(verdict), verdict is not None,
                                   "slower, and its interval is not finite" if odd else ""))
    return GateResult(threshold, limit, cmp.sets[cmp.baseline].label, slower, checked)
