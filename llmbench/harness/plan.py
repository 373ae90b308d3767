"""How long each case of a plan should take, for `run --dry-run` and `run --budget`: what an earlier
run of the same case on this GPU measured; else the scenario's own estimate, or the longest of the
measured cases most like it (same scenario, fewest differing params) where that is longer: a compiled
int8 case takes far longer than its scenario's rough guess, and a sibling that differs only in batch
size says so. (The estimate stays a floor: a sibling can differ in the one param that sets the time.)"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from llmbench.results import ResultSet, latest_result, load
from llmbench.suite import CaseSpec

PROCESS_OVERHEAD_S = 4.0  # starting a case process and importing torch: added to a scenario's estimate


@dataclass(frozen=True)
class MeasuredCase:
    scenario: str
    params: dict[str, Any]
    seconds: float


@dataclass(frozen=True)
class CaseTime:
    seconds: float
    source: Literal["measured", "similar", "estimate"]


def measured_cases(out_dir: Path, slug: str, suite: str) -> tuple[dict[str, MeasuredCase], Path | None]:
    """Each case that ran ok in the newest result set of `suite` on `slug`, by id, with its wall time
    (a failed or timed-out case's time is no guide)."""
    path = latest_result(out_dir, slug, suite)
    if path is None:
        return {}, None
    try:
        rs = load(path)
    except (OSError, ValueError):
        return {}, None
    return ok_case_times(rs), path


def ok_case_times(rs: ResultSet) -> dict[str, MeasuredCase]:
    """The cases of a result set that ran ok, by id, with their wall times."""
    return {c.id: MeasuredCase(c.scenario, c.params, c.duration_s)
            for c in rs.cases if c.status == "ok" and c.duration_s}


def _differences(a: dict[str, Any], b: dict[str, Any]) -> int:
    return sum(a.get(k) != b.get(k) for k in a.keys() | b.keys())


def case_time(case: CaseSpec, measured: dict[str, MeasuredCase]) -> CaseTime:
    if case.id in measured:
        return CaseTime(measured[case.id].seconds, "measured")
    estimate = case.scenario_obj().estimate_s(case.params, case.settings) + PROCESS_OVERHEAD_S
    params = case.params_dict
    peers = [(_differences(params, m.params), m.seconds) for m in measured.values() if m.scenario == case.scenario]
    if peers:
        fewest = min(d for d, _ in peers)
        like = max(s for d, s in peers if d == fewest)
        if fewest < len(params) and like > estimate:  # something in common beyond the scenario
            return CaseTime(like, "similar")
    return CaseTime(estimate, "estimate")
