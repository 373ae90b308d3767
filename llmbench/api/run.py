"""`run_suite` and its `--dry-run` quote `plan_run`: a suite's cases selected, quoted, and run in passes."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from llmbench.api.checks import check_machine
from llmbench.errors import UserError
from llmbench.hardware.fingerprint import local_device, local_slug
from llmbench.harness.launchers.base import LauncherOptions
from llmbench.harness.launchers.choose import case_launchers, check_launcher, chosen_launcher
from llmbench.harness.plan import CaseTime, done_before, left_for_resume, measured_cases, resumed_set, unread_note
from llmbench.harness.runner import RunOptions
from llmbench.harness.runner import run_suite as run_cases
from llmbench.harness.schedule import Schedule, run_schedule, run_slots
from llmbench.harness.ui import UI, Deferred, SuiteRun, Tee
from llmbench.report.terminal import NUMBER, status_counts
from llmbench.results import latest_result, load
from llmbench.suite import CaseSpec, Suite, filter_cases, load_suite


@dataclass(frozen=True)
class Selection:
    """A suite and the cases of it to run (after filters and a timeout override)."""

    suite: Suite
    cases: list[CaseSpec]


@dataclass(frozen=True)
class RunResult:
    """What `run_suite` wrote: one result set per pass (one unless repeat > 1) and their repeat group."""

    passes: list[SuiteRun]
    group: str = ""

    @property
    def path(self) -> Path:
        """The result set of the last pass (the only one without repeat)."""
        return self.passes[-1].path

    def exit_code(self, strict: bool = False) -> int:
        return max(p.exit_code(strict) for p in self.passes)


@dataclass(frozen=True)
class Plan:
    """The quoted plan of a `--dry-run`: each case with its quote, and where the quotes come from."""

    cases: list[CaseSpec]
    times: list[CaseTime]
    slug: str
    earlier: Path | None = None  # run: the earlier result set of the suite the quotes read
    done_before: int = 0  # --resume: cases the resumed set (run) or bundle (oneshot) has done already
    unread: str | None = None  # the warning for files named like result sets that the quotes passed over
    schedule: Schedule | None = None  # the cases as the run lays them over its GPU slots (harness/schedule.py)

    @property
    def total_s(self) -> float:
        """The run's quoted wall time: the makespan over its slots (the sum of the quotes on one)."""
        return self.schedule.timeline().makespan_s if self.schedule else sum(t.seconds for t in self.times)

    def quoted_ends(self) -> dict[str, float]:
        """When the run's quoted timeline has each case done (seconds from its start): over several slots
        not the sum of the quotes before it, the cases side by side."""
        if self.schedule:
            return dict(self.schedule.timeline().ends)
        return dict(zip((c.id for c in self.cases), itertools.accumulate(t.seconds for t in self.times), strict=True))

    def skipped(self) -> list[list[tuple[int, str]]]:
        """The cases this device will skip as (plan number, reason), those whose reasons differ only in
        their figures together."""
        groups: dict[str, list[tuple[int, str]]] = {}
        for i, t in enumerate(self.times, 1):
            if t.source == "skipped":
                groups.setdefault(NUMBER.sub("#", t.reason), []).append((i, t.reason))
        return list(groups.values())

    def left_for_resume(self, budget_s: float) -> list[CaseTime]:
        """The quotes of the cases a run within `budget_s` would leave for --resume (over its slots)."""
        if self.schedule is None:
            return left_for_resume(self.times, budget_s)
        left = self.schedule.timeline(budget_s).left
        return [t for c, t in zip(self.cases, self.times, strict=True) if c.id in left]


def select_cases(suite: str | Path | Suite, filters: Sequence[str] = (), timeout_s: float | None = None,
                 suite_dirs: Sequence[Path] = ()) -> Selection:
    """A suite (a name found as `llmbench list suites` says, a .toml path, or a loaded Suite) and its
    cases matching `filters` (`--filter` syntax), each with `timeout_s` where given."""
    s = suite if isinstance(suite, Suite) else load_suite(str(suite), list(suite_dirs))
    cases = filter_cases(s.cases, list(filters))
    if timeout_s is not None:
        cases = [c.with_settings(timeout_s=timeout_s) for c in cases]
    if not cases:
        raise UserError(f"no case of suite {s.name!r} matches --filter {list(filters) or None}; the suite has "
                        f"{len(s.cases)} case(s)")
    return Selection(s, cases)


def plan_run(selection: Selection, out: Path = Path("results"), gpus: str | None = None,
             cpu: bool = False, resume: bool = False, force: bool = False, parallel: bool = False,
             budget_s: float | None = None) -> Plan:
    """`run --dry-run`: each case's quote from the newest earlier run of the suite on this GPU under
    `out`, the most similar measured cases, or the scenario's estimate; nothing where it will skip. With
    `resume` (and not `force`), only the cases `run --resume` would run: not those its set has done."""
    slug = local_slug(gpus, cpu)
    unread: list[str] = []
    measured, source = measured_cases(out, slug, selection.suite.name, unread)
    device = local_device(gpus, cpu)
    todo = selection.cases
    newest = latest_result(out, slug, selection.suite.name) if resume else None
    if newest is not None and not force:
        done = done_before(resumed_set(newest).cases, todo, device)
        todo = [c for c in todo if c.id not in done]
    plan = run_schedule(selection.suite, todo, measured, device, run_slots(gpus, parallel), budget_s)
    return Plan(plan.cases, plan.times, slug, source, len(selection.cases) - len(todo), unread_note(unread), plan)


def run_suite(suite: str | Path | Suite | Selection, *, out: Path = Path("results"), filters: Sequence[str] = (),
              resume: bool = False, force: bool = False, gpus: str | None = None, cpu: bool = False,
              parallel: bool = False, timeout_s: float | None = None, budget_s: float | None = None,
              repeat: int = 1, suite_dirs: Sequence[Path] = (), ceilings: Path | None = None,
              ui: UI | None = None, launcher: str | LauncherOptions | None = None,
              address: str | None = None, named_gpu: dict[str, Any] | None = None) -> RunResult:
    """Run a suite's cases, each in its own process, into result sets under OUT/<gpu-slug>/ (one per
    pass of `repeat`, and per GPU type of a Ray cluster with `launcher="ray"`: `address`, Ray's). A
    launcher named (or none) goes over the suite's [launcher] table (`chosen_launcher`); LauncherOptions
    are used as they are. `filters` and `timeout_s` apply where `suite` is not already a Selection;
    `named_gpu`: the GPU the sets are of where it is not this machine's (serve-bench --gpu: a server elsewhere).
    KeyboardInterrupt (Ctrl-C, SIGTERM) propagates after the finished cases are saved."""
    ui = ui or UI()
    selection = suite if isinstance(suite, Selection) else select_cases(suite, filters, timeout_s, suite_dirs)
    s = selection.suite
    if not isinstance(launcher, LauncherOptions):
        launcher = chosen_launcher(s.launcher, str(s.path), launcher, {"address": address} if address else {})
    check_launcher(launcher, gpus, repeat, parallel)
    case_env = check_machine(out, gpus, cpu, parallel, ceilings)
    if force and not resume:
        raise UserError("--force re-measures cases inside a resumed result set: use it with --resume")
    if repeat > 1 and force:
        raise UserError("--repeat with --force: a repeat group measures each case once per pass; "
                        "run a new group (--repeat alone) or re-measure one set (--resume --force)")
    if repeat > 1 and budget_s is not None:
        raise UserError("--repeat with --budget: a pass left unfinished by the budget would make runs of "
                        "unequal cases; pick the cases with --filter instead")
    passes = plan_passes(out, local_slug(gpus, cpu) if repeat > 1 else "", s.name, repeat, resume, ui)
    runs = []
    with case_launchers(launcher, cpu, case_env) as chosen:  # one per result set (a Ray GPU type)
        for case_launcher, (index, group, resume_this) in ((c, p) for c in chosen for p in passes):
            header = {"repeat": {"group": group, "index": index, "of": repeat}} if repeat > 1 else {}
            if repeat > 1:
                ui.pass_start(index, repeat, group)
            opts = RunOptions(out_dir=out, resume=resume_this, force=force, gpus=gpus, device="cpu" if cpu else "auto",
                              budget_s=budget_s, header=header, parallel=parallel, extra_env=case_env,
                              launcher=case_launcher, named_gpu=named_gpu)
            deferred = Deferred()
            ui.cases_begin()
            try:
                path = run_cases(s, selection.cases, opts, Tee(ui, deferred))
            finally:
                ui.cases_end()
            done = SuiteRun(path, status_counts(load(path)), deferred.count)
            ui.pass_done(done)
            runs.append(done)
    return RunResult(runs, passes[0][1])


def plan_passes(out: Path, slug: str, suite: str, repeat: int, resume: bool,
                ui: UI | None = None) -> list[tuple[int, str, bool]]:
    """The passes to run as (index, repeat group, resume that pass's set). With resume, a repeat group
    of the same N whose newest pass is this suite's newest set on this GPU continues where it stopped
    (that pass resumed, the later ones run); otherwise a new group starts at pass 1."""
    if repeat == 1:
        return [(1, "", resume)]
    newest = latest_result(out, slug, suite) if resume else None
    group_of = resumed_set(newest).repeat_info if newest is not None else None  # the set header's, not a case's
    if group_of is not None and group_of.get("of") == repeat and isinstance(group_of.get("index"), int):
        start = int(group_of["index"])
        return [(i, str(group_of["group"]), i == start) for i in range(start, repeat + 1)]
    if resume:
        (ui or UI()).warn(f"no unfinished --repeat {repeat} group of {suite!r} on {slug}: starting a new one")
    group = f"{suite}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    return [(i, group, False) for i in range(1, repeat + 1)]
