"""How long each case of a plan should take, for `run --dry-run` and `run --budget`: what an earlier
run of the same case on this GPU measured; else the scenario's own estimate, or what the measured cases
most like it say where that is longer ("similar"):
- additive guesses t(a) + t(d) - t(b), where a and d each differ from the case in one param and b in
  both: compiled int4 at 32x2048 is eager int4 at 32x2048 plus what compiling cost int4 at 32x128.
  Each sees what neither sibling sees alone (here the compile cost and the long prompts' cost); the
  quote is their 75th percentile, since a budget is better spent on one case fewer than on one cut
  off;
- without any, the longest of the measured cases with the fewest differing params (a compiled int8
  case takes far longer than its scenario's rough guess, and a sibling that differs only in batch
  size says so).
On the H100 8B inference set, each case quoted from the 60 others (benchmarks/plan_accuracy.py): a
median error of 24%, 2 of 61 under by more than 15%; the closest-sibling rule alone was off by 111%
(it quotes a bf16 case at its fp8 sibling's compile time). The estimate stays a floor: a sibling can
differ in the one param that sets the time."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from llmbench.precision import DeviceInfo
from llmbench.results import ResultSet, latest_result, load
from llmbench.scenarios.base import SCENARIOS
from llmbench.suite import CaseSpec

PROCESS_OVERHEAD_S = 4.0  # starting a case process and importing torch: added to a scenario's estimate


@dataclass(frozen=True)
class MeasuredCase:
    scenario: str
    params: dict[str, Any]
    seconds: float
    gpu: str = ""  # the slug of the GPU it was measured on ('' where not known)


@dataclass(frozen=True)
class CaseTime:
    """A case's quoted time and where it comes from: measured (an earlier run of it), similar (measured
    cases like it), estimate (the scenario's own), or skipped (this device cannot run it: no time).
    `gpu`: the slug of the GPU whose runs the quote comes from."""

    seconds: float
    source: Literal["measured", "similar", "estimate", "skipped"]
    gpu: str = ""
    reason: str = ""  # why a skipped case is skipped


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


def ok_case_times(rs: ResultSet, gpu: str | None = None) -> dict[str, MeasuredCase]:
    """The cases of a result set that ran ok, by id, with their wall times (and the GPU they ran on: the
    set's, or `gpu` where its folder names it)."""
    return {c.id: MeasuredCase(c.scenario, c.params, c.duration_s, gpu or rs.gpu_slug)
            for c in rs.cases if c.status == "ok" and c.duration_s}


def _differing(a: dict[str, Any], b: dict[str, Any]) -> set[str]:
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


def _key(params: dict[str, Any]) -> frozenset[tuple[str, str]]:
    """Params as a hashable key (values can be lists); an absent param and None are the same."""
    return frozenset((k, json.dumps(v, sort_keys=True)) for k, v in params.items() if v is not None)


def closest_time(params: dict[str, Any], peers: list[MeasuredCase]) -> float | None:
    """The longest of the peers with the fewest differing params, if they share any param."""
    diffs = [(len(_differing(params, m.params)), m.seconds) for m in peers]
    if not diffs:
        return None
    fewest = min(d for d, _ in diffs)
    return max(s for d, s in diffs if d == fewest) if fewest < len(params) else None


def additive_guesses(params: dict[str, Any], peers: list[MeasuredCase]) -> list[float]:
    """t(a) + t(d) - t(b) for each pair of measured a and d differing from `params` in one param each
    (p and q, p != q) with b, measured, differing in both, with a's value of p and d's value of q."""
    seconds = {_key(m.params): m.seconds for m in peers}
    one_off = [(next(iter(diff)), m) for m in peers if len(diff := _differing(params, m.params)) == 1]
    return [
        a.seconds + d.seconds - seconds[b]
        for (p, a), (q, d) in itertools.combinations(one_off, 2)
        if p != q and (b := _key({**params, p: a.params.get(p), q: d.params.get(q)})) in seconds
    ]


def similar_time(params: dict[str, Any], peers: list[MeasuredCase]) -> float | None:
    """What measured cases of the same scenario say about one not measured: the 75th percentile of
    the additive guesses, else the closest siblings' longest time (see the module doc)."""
    guesses = sorted(additive_guesses(params, peers))
    return guesses[round(0.75 * (len(guesses) - 1))] if guesses else closest_time(params, peers)


def estimate_time(case: CaseSpec) -> float:
    """The scenario's own estimate of a case, with the case process's start."""
    return case.scenario_obj().estimate_s(case.params, case.settings) + PROCESS_OVERHEAD_S


def skip_reason(case: CaseSpec, device: DeviceInfo) -> str | None:
    """Why the case cannot run on `device`, decided without starting its process (the scenario's own
    `skip_reason`); None when it may run or this process cannot tell (the case process checks again)."""
    try:
        scenario = SCENARIOS.get(case.scenario)()
        return scenario.skip_reason(scenario.Params.model_validate(case.params_dict), device)
    except Exception:  # the parent cannot decide: the case process will, with the real device
        return None


def case_time(case: CaseSpec, measured: dict[str, MeasuredCase], device: DeviceInfo | None = None) -> CaseTime:
    """The case's quote: nothing where `device` (given) will skip it, else as the module doc says."""
    reason = skip_reason(case, device) if device is not None else None
    if reason:
        return CaseTime(0.0, "skipped", reason=reason)
    if case.id in measured:
        return CaseTime(measured[case.id].seconds, "measured", measured[case.id].gpu)
    estimate = estimate_time(case)
    params = case.params_dict
    peers = [m for m in measured.values() if m.scenario == case.scenario]
    like = similar_time(params, peers)
    if like is not None and like > estimate:
        return CaseTime(like, "similar", ", ".join(sorted({m.gpu for m in peers if m.gpu})))
    return CaseTime(estimate, "estimate")


def is_cpu(slug: str) -> bool:
    return slug.startswith("cpu-")


def reference_times(folder: Path, slug: str, other_gpus: bool = False) -> dict[str, MeasuredCase]:
    """Wall times of the cases that ran ok in any measured result set of `slug` under `folder` (the
    committed `results/`, a folder per GPU slug), by id: a suite whose cases share ids with other
    suites' (headline) is quoted from them on a fresh machine. A case measured more than once is quoted
    at its longest (a budget is better spent on one case fewer than on one cut off). With `other_gpus`,
    a case never measured on `slug` is quoted from another GPU's sets (each quote says which GPU): the
    long cases' time is mostly building and compiling (CPU work), so that beats a scenario's rough
    estimate. A CPU's times say nothing of a GPU's, nor a GPU's of a CPU's: never mixed."""
    out: dict[str, MeasuredCase] = {}
    folders = [folder / slug]
    if other_gpus:
        folders = sorted(d for d in folder.glob("*") if d.is_dir() and d.name != slug
                         and is_cpu(d.name) == is_cpu(slug)) + folders
    for d in folders:
        times: dict[str, MeasuredCase] = {}
        for path in sorted(d.glob("*.json")):
            try:
                rs = load(path)
            except (OSError, ValueError):
                continue
            found = ok_case_times(rs, d.name) if rs.source.kind == "measured" else {}
            for cid, m in found.items():
                if cid not in times or m.seconds > times[cid].seconds:
                    times[cid] = m
        out.update(times)  # this GPU's own sets come last and win
    return out
