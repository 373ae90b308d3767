"""A regression gate for `llmbench compare --fail-if-slower 5%`: a headline cell fails when its ratio is
worse than the threshold AND it is slower than 1 beyond the noise, judged over the whole suite at once:
one-sided t-tests of "not slower" on each cell's interval (machines and runs, analysis/pooled.py), Holm's
step-down over the cells, so that a suite with nothing changed fails at most `ALPHA` of the time however
many cells it has. "5% slower" reads as time: the oriented ratio below 1 / 1.05. A slower cell with no
spread to judge by (one run a side, nothing measured) is "not judged": it fails or passes as asked
(`--unjudged`). Error rates: benchmarks/gate_calibration.py, docs/design.md.

What no interval can excuse fails outright, named: a case ok in the baseline that is failed, timed out,
skipped or absent in a candidate, a headline value or slower ratio (or its interval) that is not finite,
a speed value that is zero or negative, a case id twice in one set, and a set filed under another GPU's
folder."""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.analysis.compare import Comparison, MetricRow, Ratio
from llmbench.errors import UserError
from llmbench.metrics import SPEED_UNITS
from llmbench.results import ResultSet

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
    decidable: bool = True  # False: not judged (no spread says how far runs and machines land)
    problem: str = ""  # why the cell fails whatever the noise: a lost case, a value that is not finite
    p_value: float | None = None  # one-sided, of "not slower than 1"; Holm's step-down compares it

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
            "p_value": self.p_value,
        }


@dataclass
class GateResult:
    threshold: float
    limit: float  # oriented ratios below this are slower than the threshold allows
    baseline: str
    slower: list[GateCell]  # every cell past the limit; those with beyond_noise fail the gate
    checked: int  # ratioed headline cells looked at
    unjudged: str = "fail"  # what a slower cell that cannot be judged does: "fail" or "pass"
    power: Power | None = None  # what the gate can catch with the runs and noise at hand

    @property
    def not_judged(self) -> list[GateCell]:
        return [c for c in self.slower if not c.decidable and not c.problem]

    @property
    def failures(self) -> list[GateCell]:
        return [c for c in self.slower if c.beyond_noise or (self.unjudged == "fail" and c in self.not_judged)]

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
            "family_wise_alpha": ALPHA,
            "unjudged": self.unjudged,
            "not_judged": len(self.not_judged),
            "power": self.power.to_dict() if self.power else None,
            "slower": [c.to_dict() for c in self.slower],
        }


UNJUDGED = ("fail", "pass")  # what a slower cell that cannot be judged does to the gate
ALPHA = 0.05  # the suite's false-alarm rate: at most this often does a suite with nothing changed fail
POWER = 0.80  # the probability at which the gate states the smallest slowdown it catches


def p_slower(r: Ratio) -> float | None:
    """One-sided p-value of "this cell is not slower than 1" from the ratio's log t-distribution; None
    where the ratio carries no spread between runs and machines (no 95% interval)."""
    import scipy.stats

    if r.spread is None or not r.is_95:
        return None
    if r.spread.se == 0.0:
        return 0.0 if r.spread.centre < 0 else 1.0
    return float(scipy.stats.t.cdf(r.spread.centre / r.spread.se, r.spread.df))


def holm(p_values: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down: which of the hypotheses are rejected with the family-wise error at most `alpha`."""
    order = sorted(range(len(p_values)), key=lambda k: p_values[k])
    rejected = [False] * len(p_values)
    for rank, k in enumerate(order):
        if p_values[k] > alpha / (len(p_values) - rank):
            break
        rejected[k] = True
    return rejected


def slower_beyond_noise(r: Ratio, limit: float) -> bool | None:
    """Whether one ratio alone fails the gate: below `limit` and slower than 1 at the one-sided 5% level
    (a suite of one cell). None where it cannot be judged. An interval that is not finite is never the
    noise: a slower ratio with one fails."""
    if r.value >= limit:
        return False
    if r.ci is not None and not all(map(math.isfinite, r.ci)):
        return True
    p = p_slower(r)
    return None if p is None else p <= ALPHA


@dataclass(frozen=True)
class Power:
    """What the gate catches with the runs and noise at hand: the smallest slowdown a cell shows that fails
    it with POWER probability, and the runs a side that would catch a 10% slowdown so."""

    cells: int
    smallest_caught: float | None  # e.g. 0.08: an 8% slowdown is caught 80% of the time; None: no judged cell
    runs_for_10pct: int | None  # None: more runs on these machines cannot (the machines' own spread rules)

    def to_dict(self) -> dict[str, Any]:
        return {"cells": self.cells, "smallest_caught_80pct": self.smallest_caught,
                "runs_a_side_for_10pct": self.runs_for_10pct}


def power_of(ratios: list[Ratio], threshold: float, runs: int) -> Power | None:
    """The median judged cell's power (its t-test at Holm's first step, alpha over the cells): the smallest
    slowdown caught 80% of the time, and how many runs a side would bring a 10% slowdown there at best
    (as if its whole spread shrank as 1/runs; the part between machines does not)."""
    import scipy.stats

    judged = sorted((r.spread for r in ratios if r.spread is not None and r.is_95 and r.spread.se > 0),
                    key=lambda s: s.se)
    if not judged:
        return None
    mid = judged[len(judged) // 2]
    df = mid.df
    z = float(scipy.stats.t.ppf(1 - ALPHA / len(judged), df) + scipy.stats.t.ppf(POWER, df))
    need = max(z * mid.se, math.log(1 + threshold) + float(scipy.stats.t.ppf(POWER, df)) * mid.se)
    smallest = 1 - math.exp(-need)
    target = math.log(1.1)
    for more in range(1, 65):  # as if the whole spread were the runs' (the best case for more runs)
        if z * mid.se * math.sqrt(runs / more) <= target:
            return Power(len(judged), smallest, more)
    return Power(len(judged), smallest, None)


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
    if row.unit in SPEED_UNITS and this <= 0:
        return f"{row.metric} is {this:g} in the candidate (a speed is positive)"
    if r is not None and not math.isfinite(r.value):
        return f"{row.metric}: the ratio is {r.value}"
    if r is not None and r.ci is not None and not all(map(math.isfinite, r.ci)):
        return f"{row.metric}: the ratio's interval is not finite ({row.values[baseline]:g} against {this:g})"
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


def gate(cmp: Comparison, threshold: float, metrics: Collection[str], unjudged: str = "fail",
         problems: list[GateCell] | None = None) -> GateResult:
    """Every ratioed cell of `metrics` (the headline ones) checked against 1 / (1 + threshold), Holm's
    step-down over the judged cells; every case ok in the baseline and not in a candidate, every headline
    cell that is not finite or not positive, and each of `problems` (input_problems), fails it."""
    limit = 1.0 / (1.0 + threshold)
    slower: list[GateCell] = lost_cases(cmp) + list(problems or [])
    checked, judged = 0, []
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
            p = p_slower(r)
            cell = GateCell(cmp.sets[i].label, row.case_id, row.scenario, row.case, row.metric, r.value, r.ci,
                            False, p is not None, p_value=p)
            if p is not None:
                judged.append((cell, r))
            if r.value < limit:
                slower.append(cell)
    for (cell, r), rejected in zip(judged, holm([c.p_value or 0.0 for c, _ in judged]), strict=True):
        cell.beyond_noise = rejected and r.value < limit
    runs = max((n for row in cmp.rows for n in row.runs), default=1)
    return GateResult(threshold, limit, cmp.sets[cmp.baseline].label, slower, checked, unjudged,
                      power_of([r for _, r in judged], threshold, runs))


def input_problems(loaded: list[tuple[str, str, ResultSet]], known_slugs: Collection[str]) -> list[GateCell]:
    """What fails a gate in the inputs themselves: a case id twice in one set (which of the two is the
    case?), and a set filed in a folder named for another GPU (results/<gpu-slug>/)."""
    out = []
    for _stem, where, rs in loaded:
        ids = [c.id for c in rs.cases]
        for cid in sorted({i for i in ids if ids.count(i) > 1}):
            out.append(GateCell(where, cid, "", "", "", None, None, True,
                                problem=f"case id {cid} appears {ids.count(cid)} times in {where}"))
        folder = Path(where.split(":", 1)[0]).parent.name
        if folder in known_slugs and folder != rs.gpu_slug:
            out.append(GateCell(where, "", "", "", "", None, None, True,
                                problem=f"{where} is in the {folder} folder but measured {rs.gpu_slug}"))
    return out
