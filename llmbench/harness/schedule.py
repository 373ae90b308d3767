"""What runs when over a run's GPU slots, for the runner and the quotes alike, so that they cannot
disagree: the units a run starts (`run_units`: a case alone, or a share group's cases in one process),
the slots each holds (the most its cases' placements ask) and why it must run with nothing beside it
(`alone_reason`: host-exclusive), the order units start in over several slots (`start_order`: the suite's,
or longest first where that ends sooner), and the timeline of a run as the runner lays it out
(`Schedule`): units in order, each started when `GpuSlots.claim` gives it its slots (an exclusive one once
every slot is free), a unit waiting for the one before it. A quote reads the makespan and the cases a
budget leaves for --resume from that timeline; a serial run is the timeline over one slot."""

from __future__ import annotations

from dataclasses import dataclass, field

from llmbench.harness.launch import GpuSlots, gpu_slots, slots_needed
from llmbench.harness.plan import BROKEN_PARAMS, CaseTime, MeasuredCase, quote_units, share_groups
from llmbench.measure.quiet import READY, SETUP, TIMED
from llmbench.precision import DeviceInfo
from llmbench.suite import CaseSpec, Suite

SUITE_SAYS = "its suite says placement exclusive = true"


@dataclass(frozen=True)
class Unit:
    """What the runner starts at once: one case, or a share group's cases one after another in one
    process; the slots it holds while it runs, and why nothing may run beside it (None: others may)."""

    cases: tuple[CaseSpec, ...]
    gpus: int = 1
    alone: str | None = None


def alone_reason(case: CaseSpec) -> str | None:
    """Why a case must run with nothing beside it on the host: its suite's placement (exclusive = true),
    else its scenario's declaration (`Scenario.host_exclusive`); None where it may share the host, or
    its suite says exclusive = false."""
    said = case.placement.exclusive
    if said is not None:
        return SUITE_SAYS if said else None
    try:
        return case.scenario_obj().host_exclusive(case.params)
    except BROKEN_PARAMS:  # its process fails with the reason; alone or not changes nothing
        return None


def run_units(cases: list[CaseSpec], device: DeviceInfo, share: bool) -> list[Unit]:
    """The cases as the runner starts them: share groups (where `share`) where their first case stands,
    every other case a unit of its own. A group holds the most slots any of its cases asks for, and runs
    alone where any of its cases must."""
    groups = share_groups(cases, device) if share else [[c] for c in cases]
    return [Unit(tuple(g), max(slots_needed(c) for c in g), next(filter(None, map(alone_reason, g)), None))
            for g in groups]


def run_slots(gpus: str | None, parallel: bool) -> int:
    """The slots a run lays its units over: one per --gpus entry under --parallel, else one (each case
    on every GPU)."""
    return max(len(gpu_slots(gpus)), 1) if parallel else 1


@dataclass(frozen=True)
class Timeline:
    """A run as the schedule lays it out: when each case starts and ends (seconds from the run's start),
    when the last one ends, and the cases a budget leaves for --resume."""

    starts: dict[str, float]
    makespan_s: float
    left: tuple[str, ...] = ()
    ends: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Schedule:
    """A session's suites (run one after another) as units with their cases' quotes, over `slots` GPU
    slots (1: a serial run)."""

    suites: tuple[tuple[Unit, ...], ...]
    quotes: dict[str, CaseTime] = field(default_factory=dict)
    slots: int = 1

    @property
    def cases(self) -> list[CaseSpec]:
        """The cases in the order their units start."""
        return [c for units in self.suites for u in units for c in u.cases]

    @property
    def times(self) -> list[CaseTime]:
        return [self.quotes[c.id] for c in self.cases]

    def then(self, other: Schedule) -> Schedule:
        """This session's suites, then `other`'s (over the same slots)."""
        return Schedule(self.suites + other.suites, {**self.quotes, **other.quotes}, self.slots)

    def timeline(self, budget_s: float | None = None) -> Timeline:
        """Each unit started in order as soon as `GpuSlots.claim` gives it its slots (the runner's rule),
        its cases one after another, each its quote long; within `budget_s`, a case starts only where its
        quote fits in what is left when its unit starts (a skipped case costs nothing and never waits).
        Units with others beside them keep measure/quiet.py's rule, as their case processes do: a case's
        set-up (its quote less its timed part) starts only while no neighbour is ready or timing, and its
        timed part only while no neighbour sets up or times (a ready case before a set-up, the first
        ready first). A quote with no timed part recorded is all set-up."""
        slots = GpuSlots(",".join(str(i) for i in range(self.slots)))
        starts: dict[str, float] = {}
        ends: dict[str, float] = {}
        left: list[str] = []
        t = 0.0
        for units in self.suites:  # a suite starts when the one before it has ended
            t = self._suite(list(units), t, budget_s, slots, starts, ends, left)
        return Timeline(starts, t, tuple(left), ends)

    def _suite(self, pending: list[Unit], t: float, budget_s: float | None, slots: GpuSlots,
               starts: dict[str, float], ends: dict[str, float], left: list[str]) -> float:
        """One suite's units from `t` (see `timeline`); the time its last case ends."""
        running: list[_Running] = []
        while pending or running:
            while pending:  # in order: a unit waits for the one before it to get its slots
                unit = pending[0]
                cases = [c for c in unit.cases if self.quotes[c.id].source != "skipped"]
                need = unit.gpus if self.slots > 1 else 1
                if not cases or need > self.slots:  # skipped: by the case, or for want of slots
                    pending.pop(0)
                    continue
                held = slots.claim(need, unit.alone is not None and self.slots > 1)
                if held is None:
                    break
                pending.pop(0)
                ahead, parts = 0.0, []
                for case in cases:  # the budget, read when the unit can start (as the runner does)
                    quote = self.quotes[case.id]
                    if budget_s is not None and quote.seconds > budget_s - t - ahead:
                        left.append(case.id)
                        continue
                    ahead += quote.seconds
                    timed = min(quote.timed_s, quote.seconds)
                    parts.append((case.id, quote.seconds - timed, timed))
                if not parts:  # the budget left every case of it for --resume: it holds nothing
                    slots.release(held)
                    continue
                quiet = self.slots > 1 and unit.alone is None and need < self.slots  # as GpuSlots.take
                running.append(_Running(held, parts, quiet))
                starts[parts[0][0]] = t  # its process starts (and may wait to set up)
            _advance(running, t)
            busy = [r.until for r in running if r.state in (SETUP, TIMED)]
            if not busy:  # cannot be while anything runs: whatever blocks a case is setting up or timing
                break
            t = min(busy)  # never earlier: every end was set from a time no later than this one
            for r in [r for r in running if r.state in (SETUP, TIMED) and r.until <= t]:
                if r.state == SETUP and r.quiet and r.parts[0][2] > 0:
                    r.state, r.since = READY, t
                elif r.state == SETUP and not r.quiet:
                    r.state, r.until = TIMED, t + r.parts[0][2]
                else:  # its case is over: the next case of its group, or its slots for the next unit
                    ends[r.parts.pop(0)[0]] = t
                    r.state = WAITING
                    if r.parts:
                        starts[r.parts[0][0]] = t
                    else:
                        running.remove(r)
                        slots.release(r.held)
        return t


WAITING = "waiting"  # a case's process has started (or its group's case before has ended): to start its set-up


@dataclass
class _Running:
    """A unit `Schedule.timeline` runs: the slots it holds, its cases still to run as (id, set-up s,
    timed s), and where its current case stands (WAITING, SETUP, READY or TIMED, since / until when)."""

    held: tuple[str, ...]
    parts: list[tuple[str, float, float]]
    quiet: bool  # it keeps measure/quiet.py's rule (it has others beside it)
    state: str = WAITING
    since: float = 0.0
    until: float = 0.0


def _advance(running: list[_Running], t: float) -> None:
    """Move every unit that may at `t`: ready cases to their timed part first (the first ready first,
    one at a time among the quiet ones), then waiting ones to their set-up."""
    def others(r: _Running, states: tuple[str, ...]) -> bool:
        return r.quiet and any(o is not r and o.quiet and o.state in states for o in running)

    for r in sorted((r for r in running if r.state == READY), key=lambda r: r.since):
        if not others(r, (SETUP, TIMED)):
            r.state, r.until = TIMED, t + r.parts[0][2]
    for r in running:
        if r.state == WAITING and not others(r, (READY, TIMED)):
            r.state, r.until = SETUP, t + r.parts[0][1]


def start_order(units: list[Unit], quotes: dict[str, CaseTime], slots: int, budget_s: float | None) -> list[Unit]:
    """The order units start in over `slots`: the suite's (on one slot always: it puts the answers that
    cost least first, for a budget to cut the rest), unless the longest-first order (the classic rule for
    a short makespan over several machines) leaves less quoted time for --resume within `budget_s` (the
    cases a budget cuts last in that order are the shortest, the likeliest to fit once the run is under
    way: a count of cases would trade them for one long case), or as much and ends sooner. The runner
    and the quotes both call it, with the same quotes."""
    if slots < 2:
        return units
    longest = sorted(units, key=lambda u: -sum(quotes[c.id].seconds for c in u.cases
                                                if quotes[c.id].source != "skipped"))
    as_said = Schedule((tuple(units),), quotes, slots).timeline(budget_s)
    sooner = Schedule((tuple(longest),), quotes, slots).timeline(budget_s)
    def cost(timeline: Timeline) -> tuple[float, int, float]:
        return sum(quotes[c].seconds for c in timeline.left), len(timeline.left), timeline.makespan_s

    return longest if cost(sooner) < cost(as_said) else units


def run_schedule(suite: Suite, cases: list[CaseSpec], measured: dict[str, MeasuredCase], device: DeviceInfo,
                 slots: int, budget_s: float | None = None) -> Schedule:
    """A suite's cases as a run over `slots` lays them out (share groups where the suite shares engines,
    under --parallel too; `start_order` within `budget_s`), each with its quote (a shared case's without
    the load its group's first case pays)."""
    units = run_units(cases, device, suite.share_engines)
    quotes = quote_units([list(u.cases) for u in units], measured, device)
    return Schedule((tuple(start_order(units, quotes, slots, budget_s)),), quotes, slots)
