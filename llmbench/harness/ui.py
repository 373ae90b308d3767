"""The one event protocol of llmbench: what the runner, `api.run_suite` and `api.oneshot` tell whoever
watches, and what the commands' terminal UIs draw. It lives in harness, the lowest unit that emits
events (the runner); api and commands use it from here. A listener overrides the events it cares for;
the others say nothing. `Tee` hands each event to several listeners (a session's log beside the
caller's UI), so no listener forwards to another."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.harness.doctor import Check
from llmbench.results import CaseResult, ResultSet, load
from llmbench.suite import CaseSpec, Suite

FAILED_STATUSES = ("failed", "timeout", "killed")  # exit 1; "oom" too with strict


def exit_code(counts: dict[str, int], strict: bool) -> int:
    """0: every case ok or skipped (or oom: a result, the size does not fit); 1: a case failed, timed
    out or was killed from outside (or, with strict, ran out of memory)."""
    bad = FAILED_STATUSES + (("oom",) if strict else ())
    return 1 if any(counts.get(s) for s in bad) else 0


@dataclass(frozen=True)
class SuiteRun:
    """One result set a run wrote (what `pass_done` carries): where it is, how its cases ended, and the
    cases the budget left out (a later resume runs them)."""

    path: Path
    counts: dict[str, int]
    deferred: int = 0

    @property
    def result_set(self) -> ResultSet:
        return load(self.path)

    def exit_code(self, strict: bool = False) -> int:
        return exit_code(self.counts, strict)


class UI:
    """The events, each a no-op here (library use, tests): a base class rather than a typing.Protocol so
    that a listener inherits the events it ignores."""

    # a suite's cases (the runner)
    def suite_start(self, suite: Suite, cases: list[CaseSpec], path: Path, skipped: int) -> None: ...
    def case_start(self, case: CaseSpec, index: int) -> None: ...
    def case_progress(self, fraction: float, text: str) -> None: ...
    def case_probe(self, case: CaseSpec, probe: dict[str, Any]) -> None: ...  # a max_batch probe ended
    def case_done(self, case: CaseSpec, result: CaseResult) -> None: ...
    def case_deferred(self, case: CaseSpec, needs_s: float, left_s: float) -> None: ...
    def warn(self, text: str) -> None: ...
    def suite_done(self, result_set: ResultSet, path: Path) -> None: ...

    # a session around them (api)
    def line(self, text: str) -> None: ...  # a plain line of the session: what runs, where a suite comes from
    def check(self, check: Check) -> None: ...  # one doctor check of oneshot
    def cases_begin(self) -> None: ...  # a suite's cases are about to run (a live display may start)
    def cases_end(self) -> None: ...  # they stopped, finished or interrupted (before any summary)
    def pass_start(self, index: int, of: int, group: str) -> None: ...  # a pass of run(repeat=N), N > 1
    def pass_done(self, run: SuiteRun) -> None: ...  # a pass's result set is complete
    def clock(self, text: str, calm: bool) -> None: ...  # oneshot's time against its budget; calm: a line is due
    def interrupted(self) -> None: ...  # oneshot: an interrupt stopped the cases; the bundle is written next


class Tee(UI):
    """Each event to every listener, in the order given."""

    def __init__(self, *listeners: UI) -> None:
        self.listeners = listeners


def _fan_out(name: str) -> Callable[..., None]:
    def event(self: Tee, *args: Any, **kwargs: Any) -> None:
        for listener in self.listeners:
            getattr(listener, name)(*args, **kwargs)
    return event


for _event in [n for n in vars(UI) if not n.startswith("_")]:
    setattr(Tee, _event, _fan_out(_event))


class Deferred(UI):
    """Counts the cases the budget left out (they are in no result set)."""

    def __init__(self) -> None:
        self.count = 0

    def case_deferred(self, case: CaseSpec, needs_s: float, left_s: float) -> None:
        self.count += 1
