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
How close these quotes come is measured by benchmarks/plan_accuracy.py (its figures: benchmarks/README.md);
the closest-sibling rule alone is far worse (it quotes a bf16 case at its fp8 sibling's compile time).
The estimate stays a floor: a sibling can differ in the one param that sets the time."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from llmbench.caseinfo import CaseInfo, ShareGroupInfo
from llmbench.errors import UserError
from llmbench.precision import DeviceInfo
from llmbench.results import CaseResult, ResultSet, load, set_files, started_unix
from llmbench.suite import CaseSpec

PROCESS_OVERHEAD_S = 4.0  # starting a case process and importing torch: added to a scenario's estimate


@dataclass(frozen=True)
class MeasuredCase:
    scenario: str
    params: dict[str, Any]
    seconds: float
    gpu: str = ""  # the slug of the GPU it was measured on ('' where not known)
    # what of `seconds` a case that runs on a session loaded by an earlier case of its share group does
    # not spend: the process start and the model's build, where this measurement paid them (0 where it
    # ran on a shared session itself)
    load_s: float = 0.0
    compile_state: str = ""  # its torch.compile cache when it compiled: "cold", "warm" ("": none, or not said)
    # it ran on a session an earlier case of its share group loaded: `seconds` is a shared case's time,
    # no guide to the case alone (nor to its siblings')
    ran_shared: bool = False
    shared_s: float | None = None  # where `seconds` ran alone: the case's time when it last ran shared
    timed_s: float | None = None  # of `seconds`, from its first timed window to its end (None: not recorded)

    def shared_seconds(self) -> float | None:
        """Its measured time on a session loaded before it, if it was ever measured so."""
        return self.seconds if self.ran_shared else self.shared_s


@dataclass(frozen=True)
class CaseTime:
    """A case's quoted time and where it comes from: measured (an earlier run of it), similar (measured
    cases like it), estimate (the scenario's own), or skipped (this device cannot run it: no time).
    `gpu`: the slug of the GPU whose runs the quote comes from."""

    seconds: float
    source: Literal["measured", "similar", "estimate", "skipped"]
    gpu: str = ""
    reason: str = ""  # why a skipped case is skipped
    shared: bool = False  # it will run on an engine session an earlier case of its share group loaded
    timed_s: float = 0.0  # of `seconds`, its timed part (measure/quiet.py); 0 where not known: all set-up


def left_for_resume(times: list[CaseTime], budget_s: float) -> list[CaseTime]:
    """The quotes of the cases a run within `budget_s` would leave for --resume, picked as the runner
    picks them: in order, each started only if its quote fits in what is left (a skip costs nothing)."""
    left, out = budget_s, []
    for t in times:
        if t.source == "skipped":
            continue
        if t.seconds <= left:
            left -= t.seconds
        else:
            out.append(t)
    return out


def measured_cases(out_dir: Path, slug: str, suite: str,
                   unread: list[str] | None = None) -> tuple[dict[str, MeasuredCase], Path | None]:
    """Each case that ran ok in the newest readable result set of `suite` on `slug`, by id, with its wall
    time (a failed or timed-out case's time is no guide). A newer file that is no result set is passed
    over, said in `unread`."""
    for path in reversed(set_files(out_dir / slug, [suite])):
        rs = quote_set(path, unread)
        if rs is not None:
            return ok_case_times(rs), path
    return {}, None


def quote_set(path: Path, unread: list[str] | None = None) -> ResultSet | None:
    """The result set at `path`, or None where it cannot be one (too large, not parsed): its reason goes
    to `unread` (a quote is a guide; a stray file must cost it neither memory nor the run)."""
    try:
        return load(path)
    except (OSError, ValueError) as e:  # a pydantic ValidationError and a JSON error are ValueErrors
        if unread is not None:
            unread.append(f"{path.name} ({str(e).splitlines()[0].removeprefix(f'{path}: ')})")
        return None


def resumed_set(path: Path) -> ResultSet:
    """The result set `--resume` continues. A file there that is not one (truncated, another JSON) is one
    line naming it (exit 2), not a traceback; resuming an older set instead would split a run over two."""
    try:
        return load(path)
    except (OSError, ValueError) as e:
        why = str(e).splitlines()[0].removeprefix(f"{path}: ")
        raise UserError(f"--resume: {path} is not a readable result set ({why}); move it out of {path.parent} "
                        "to resume the set before it, or run without --resume") from None


def unread_note(unread: list[str]) -> str | None:
    """The one warning line for the files the quotes passed over, or None."""
    if not unread:
        return None
    more = f" and {len(unread) - 1} more" if len(unread) > 1 else ""
    return f"the time quotes passed over {len(unread)} file(s) named like result sets that are not: {unread[0]}{more}"


def ok_case_times(rs: ResultSet, gpu: str | None = None) -> dict[str, MeasuredCase]:
    """The cases of a result set that ran ok, by id, with their wall times (and the GPU they ran on: the
    set's, or `gpu` where its folder names it)."""
    return {c.id: measured_case(c, gpu or rs.gpu_slug) for c in rs.cases if c.status == "ok" and c.duration_s}


def measured_case(case: CaseResult, gpu: str = "") -> MeasuredCase:
    """What a finished case's run says of the time it takes (its info: build, compile cache, share group),
    less the time it waited for cases beside it (measure/quiet.py): that is theirs, not its own."""
    own = max((case.duration_s or 0.0) - float(case.info.get("quiet_wait_s") or 0.0), 0.0)
    return MeasuredCase(case.scenario, case.params, own, gpu, load_time(case.info),
                        compile_state(case.info), ran_shared(case.info), timed_s=timed_part(case, own))


def timed_part(case: CaseResult, seconds: float) -> float | None:
    """Of a finished case's `seconds`, its timed part: from when its first timed window began (as its
    phases note it, measure/quiet.py, else its first recorded window) to its end; None where neither is
    recorded (a run before they were)."""
    begun_at = started_unix(case)
    if begun_at is None or not case.duration_s:
        return None
    timed = next((entered for phase, _, entered in case.info.get("quiet_phases_unix") or [] if phase == "timed"),
                 None)
    windows = case.info.get("windows_unix") or []
    begun = timed if timed is not None else windows[0][0] if windows else None
    if begun is None:
        return None
    end = begun_at + case.duration_s
    return round(min(max(end - begun, 0.0), seconds), 3)


def ran_shared(info: dict[str, Any]) -> bool:
    """Whether a case ran on a session an earlier case of its share group loaded (it built none)."""
    group = ShareGroupInfo.of(info["share_group"]) if info.get("share_group") else None
    return group is not None and group.ran == "in group" and group.index > 0 and "build_s" not in info


def overlay(base: dict[str, MeasuredCase], top: dict[str, MeasuredCase]) -> dict[str, MeasuredCase]:
    """`base` with `top`'s measurements over it, except that a case `top` measured only on a shared
    session keeps `base`'s time alone (with `top`'s shared time beside it): each kind of quote keeps the
    newest measurement of its kind."""
    out = dict(base)
    for cid, new in top.items():
        old = out.get(cid)
        if old is None or (new.ran_shared and old.ran_shared):
            out[cid] = new if old is None else with_timed_part(new, old)
        elif new.ran_shared:
            out[cid] = replace(old, shared_s=new.seconds)
        else:
            out[cid] = replace(with_timed_part(new, old),
                               shared_s=new.shared_s if new.shared_s is not None else old.shared_seconds())
    return out


def compile_state(info: dict[str, Any]) -> str:
    """"warm" where a case's compilation found its graphs in the cache (wholly or partly), "cold" where it
    compiled them, "" where it compiled nothing or did not say (measure/compile_cache.state)."""
    state = info.get("compile_cache_state")
    return "warm" if state in ("warm", "partly warm") else "cold" if state == "cold" else ""


def load_time(info: dict[str, Any]) -> float:
    """The process start and model build a case's wall time includes (what a later case of a share
    group skips): its build time and the process start, where it built its model; 0 where it ran on a
    session shared with it (or built none)."""
    build = info.get("build_s")
    return float(build) + PROCESS_OVERHEAD_S if isinstance(build, (int, float)) else 0.0


def share_groups(cases: list[CaseSpec], device: DeviceInfo) -> list[list[CaseSpec]]:
    """The cases in run order as units: a share group (cases whose scenario gives the same `share_key`:
    they load the same engine session) runs where its first case stands, its others moved up beside it;
    every other case is a unit of its own. A case that asks for a max-batch search runs alone (its
    probes are processes of their own)."""
    units: list[list[CaseSpec]] = []
    by_key: dict[str, list[CaseSpec]] = {}
    for case in cases:
        key = _share_key(case, device)
        if key is None:
            units.append([case])
        elif key in by_key:
            by_key[key].append(case)
        else:
            by_key[key] = [case]
            units.append(by_key[key])
    return units


# What a scenario's checks raise on params they cannot take (pydantic's ValidationError is a ValueError; an
# unknown engine a ValueError, an unknown preset a KeyError): the case process would raise the same.
BROKEN_PARAMS = (ValueError, LookupError, TypeError)


def _share_key(case: CaseSpec, device: DeviceInfo) -> str | None:
    scenario = case.scenario_obj()
    search = scenario.max_batch_search
    if search is not None and search.wanted(case.params_dict):
        return None
    if case.placement.replicas > 1:  # each copy loads its own session, in a process of its own
        return None
    try:
        return scenario.share_key(case.params, device)
    except BROKEN_PARAMS:  # no key from these params: the case runs alone, and its process fails with the reason
        return None


def shared_time(quote: CaseTime, case: CaseSpec, measured: dict[str, MeasuredCase]) -> CaseTime:
    """The quote of a case that will run on a session an earlier case of its share group loaded: its
    time when it last ran so, else its measured time less the load that measurement paid (nothing to
    take off where it was not measured by id). Measured alone, a shared case's time less its build
    still holds the process start and engine shutdown that a shared one does not pay, so the quote
    errs long (a shared case's seconds: docs/measurements.md, "The headline in one oneshot")."""
    m = measured.get(case.id)
    if quote.source != "skipped" and m is not None and (s := m.shared_seconds()) is not None:
        timed = m.timed_s if m.ran_shared else quote.timed_s  # a shared run's own split, else the one alone's
        return CaseTime(s, "measured", m.gpu, shared=True, timed_s=min(timed or 0.0, s))
    if quote.source != "measured" or m is None or not m.load_s:
        return replace(quote, shared=True)
    seconds = max(quote.seconds - m.load_s, 1.0)  # the load is set-up: the timed part stays
    return replace(quote, seconds=seconds, shared=True, timed_s=min(quote.timed_s, seconds))


def quote_units(units: list[list[CaseSpec]], measured: dict[str, MeasuredCase],
                device: DeviceInfo | None = None) -> dict[str, CaseTime]:
    """Each case's quote by id, run as `units` (share_groups) says: a group's first case at its own
    time, the others without the load they will not pay (skipped cases neither load nor count)."""
    out: dict[str, CaseTime] = {}
    for unit in units:
        loaded = False
        for case in unit:
            quote = case_time(case, measured, device)
            if quote.source != "skipped":
                quote = shared_time(quote, case, measured) if loaded else quote
                loaded = True
            out[case.id] = quote
    return out


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
    """Why the case cannot run on `device`, decided without starting its process (its engine's missing
    package, the scenario's own `skip_reason`), or that its params are broken (the check raised on them);
    None when it may run."""
    scenario = case.scenario_obj()
    too_many = cpu_ranks_reason(scenario, device)
    if too_many:
        return too_many
    try:
        missing = scenario.engine.missing_reason() if scenario.engine is not None else None
        return missing or scenario.skip_reason(scenario.Params.model_validate(case.params.model_dump()), device)
    except BROKEN_PARAMS as e:
        if isinstance(e, ValidationError):
            err = e.errors()[0]
            return f"its params are broken: {'.'.join(map(str, err['loc']))} = {err.get('input')!r:.80}: {err['msg']}"
        return f"its params are broken: {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"[:300]


def cpu_ranks_reason(scenario: Any, device: DeviceInfo) -> str | None:
    """Why a rank case cannot run on the CPU here: one rank a GPU of its placement, each a process on a
    core of its own, and more of them than the host has cores (os.cpu_count()) would measure the cores'
    time-sharing, not the ranks; None where it fits (or on a GPU)."""
    from llmbench.scenarios.base import RankScenario

    cores = os.cpu_count() or 1
    ranks = scenario.placement.gpus
    if device.kind != "cpu" or not isinstance(scenario, RankScenario) or ranks <= cores:
        return None
    return (f"placement gpus = {ranks} starts {ranks} ranks, one process each, and on the CPU this host has "
            f"{cores} cores (os.cpu_count()): give placement gpus 1..{cores} for a CPU run")


DONE_STATUSES = ("ok", "skipped")  # what a resumed run does not run again (but see `done_before`)
RUNNER_SKIP = "runner"  # info.skipped_by of a case the runner skipped without starting its process


def done_before(results: list[CaseResult], cases: list[CaseSpec], device: DeviceInfo | None) -> set[str]:
    """The ids a resumed run does not run again: the cases measured ok or skipped, except those the
    runner skipped (a package not installed, a GPU they cannot run on) that it would start now: what
    made them skip is gone (an engine installed after a oneshot skipped its cases), so `--resume` runs
    them. A case its own process skipped stays done (finding out again would cost that process)."""
    specs = {c.id: c for c in cases}

    def lifted(r: CaseResult) -> bool:
        spec = specs.get(r.id)
        return (r.status == "skipped" and CaseInfo.of(r.info).skipped_by == RUNNER_SKIP and spec is not None
                and device is not None and skip_reason(spec, device) is None)

    return {r.id for r in results if r.status in DONE_STATUSES and not lifted(r)}


def case_time(case: CaseSpec, measured: dict[str, MeasuredCase], device: DeviceInfo | None = None) -> CaseTime:
    """The case's quote: nothing where `device` (given) will skip it, else as the module doc says."""
    reason = skip_reason(case, device) if device is not None else None
    if reason:
        return CaseTime(0.0, "skipped", reason=reason)
    own = measured.get(case.id)
    if own is not None and not own.ran_shared:
        return CaseTime(own.seconds, "measured", own.gpu, timed_s=own.timed_s or 0.0)
    estimate = estimate_time(case)
    params = case.params_dict
    peers = [m for m in measured.values() if m.scenario == case.scenario and not m.ran_shared]
    like = similar_time(params, peers)
    if like is not None and like > estimate:
        return CaseTime(like, "similar", ", ".join(sorted({m.gpu for m in peers if m.gpu})))
    return CaseTime(estimate, "estimate")


def is_cpu(slug: str) -> bool:
    return slug.startswith("cpu-")


def reference_times(folder: Path, slug: str, other_gpus: bool = False, expect: str = "cold",
                    suites: Collection[str] | None = None, unread: list[str] | None = None) -> dict[str, MeasuredCase]:
    """Wall times of the cases that ran ok in any measured result set of `slug` under `folder` (the
    committed `results/`, a folder per GPU slug), by id: a suite whose cases share ids with other
    suites' (headline) is quoted from them on a fresh machine. A case measured more than once is quoted
    at its longest (a budget is better spent on one case fewer than on one cut off). With `other_gpus`,
    a case never measured on `slug` is quoted from another GPU's sets (each quote says which GPU): the
    long cases' time is mostly building and compiling (CPU work), so that beats a scenario's rough
    estimate. A CPU's times say nothing of a GPU's, nor a GPU's of a CPU's: never mixed. `expect`: the
    state the run's compile cache will be in ("cold": a fresh run; "warm": compile_cache.expected_state
    found a kept cache): a compiled case is quoted from its measurements in that state where there are
    any (a warm compile of an 8B model takes a third of a cold one), else from any. Only files named like
    result sets are read (of `suites` where given); one that is not a result set is said in `unread`."""
    out: dict[str, MeasuredCase] = {}
    folders = [folder / slug]
    if other_gpus:
        folders = sorted(d for d in folder.glob("*") if d.is_dir() and d.name != slug
                         and is_cpu(d.name) == is_cpu(slug)) + folders
    for d in folders:
        times: dict[str, MeasuredCase] = {}
        for path in set_files(d, suites):
            rs = quote_set(path, unread)
            found = ok_case_times(rs, d.name) if rs is not None and rs.source.kind == "measured" else {}
            for cid, m in found.items():
                times[cid] = _better_quote(m, times[cid], expect) if cid in times else m
        out = overlay(out, times)  # this GPU's own sets come last and win
    return out


def _better_quote(new: MeasuredCase, old: MeasuredCase, expect: str) -> MeasuredCase:
    """Of two measurements of a case, the one that quotes it better, with the longer shared time of the
    two beside it: a measurement alone beats one on a shared session, one in the expected compile state
    beats one in the other; between equals, the longer. Its timed part, where it recorded none, is the
    other's (`with_timed_part`)."""
    def rank(m: MeasuredCase) -> tuple[bool, bool, float]:
        fits = m.compile_state == expect if expect == "warm" else m.compile_state != "warm"
        return not m.ran_shared, fits, m.seconds

    best = max(old, new, key=rank)  # between equal ranks, the one held
    best = with_timed_part(best, new if best is old else old)
    shared = [s for m in (new, old) if (s := m.shared_seconds()) is not None]
    return best if best.ran_shared or not shared else replace(best, shared_s=max(shared))


def with_timed_part(m: MeasuredCase, other: MeasuredCase) -> MeasuredCase:
    """`m`, with `other`'s timed part where `m` recorded none (a run before the phases were noted) and
    both ran the same way (shared or not): a case's timed part is its stop rule's, steadier than its
    set-up (a cold or warm compile), so another run's is a fair guide."""
    if m.timed_s is not None or other.timed_s is None or m.ran_shared != other.ran_shared:
        return m
    return replace(m, timed_s=min(other.timed_s, m.seconds))
