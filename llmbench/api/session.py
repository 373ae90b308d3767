"""`oneshot` and its `--dry-run` quote `plan_oneshot`: a freshly rented machine's session (doctor, the
suites within a budget, one bundle), its log and its clock against the budget."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.analysis.inputs import load_bundle_checked
from llmbench.analysis.runs import MEASURED_DATA
from llmbench.api.bundling import (
    append_log,
    bundled_suites,
    environment_files,
    part_summary,
    place_resumed,
    write_oneshot_bundle,
)
from llmbench.api.checks import check_machine, stack_problem
from llmbench.api.run import Plan
from llmbench.bundle import Bundle, is_bundle
from llmbench.caseinfo import CaseInfo
from llmbench.errors import NotSaved, UserError
from llmbench.hardware.fingerprint import local_device, local_slug
from llmbench.harness.doctor import Check, run_checks
from llmbench.harness.plan import done_before, ok_case_times, overlay, reference_times, unread_note
from llmbench.harness.runner import RunOptions, foreign_gpu_processes
from llmbench.harness.runner import run_suite as run_cases
from llmbench.harness.schedule import Schedule, run_schedule, run_slots
from llmbench.harness.ui import UI, Tee, exit_code
from llmbench.measure import compile_cache
from llmbench.report.terminal import merge_numbers, status_counts
from llmbench.results import CaseResult, ResultSet, load, utc_now
from llmbench.suite import CaseSpec, Suite, load_suite

# the committed runs as the package ships them (`nox -s publish` exports them), the same from a checkout and a
# pip install: budget quotes and measured ceilings on a fresh machine
REFERENCE_RESULTS = MEASURED_DATA
DEFAULT_ONESHOT_SUITES = ["headline"]
CLOCK_EVERY_S = 60.0  # a oneshot prints its time against the budget at most this often (and at each suite's end)


class BrokenStack(Exception):
    """oneshot's doctor found the stack broken: nothing was measured, no bundle was written."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


@dataclass(frozen=True)
class OneshotResult:
    """A oneshot session's bundle and how it ended: the status counts over its result sets, the cases
    the budget left for `--resume`, and whether an interrupt ended it early."""

    bundle: Path
    counts: dict[str, int]
    deferred: int
    interrupted: bool
    spent_s: float

    @property
    def summary(self) -> str:
        """'3 ok, 1 skipped, 2 left for --resume (budget)'."""
        return _summary(self.counts, self.deferred)

    def exit_code(self) -> int:
        """130 interrupted, 1 a case failed or timed out, else 0."""
        return 130 if self.interrupted else exit_code(self.counts, strict=False)


@dataclass(frozen=True)
class _Session:
    """What oneshot and its plan read before anything runs."""

    slug: str
    suites: list[Suite]
    previous: Bundle | None
    case_env: dict[str, str]
    parallel: bool = False
    gpus: str | None = None


def _oneshot_session(suites: Sequence[str | Path], out: Path, resume: Path | None, gpus: str | None,
                     parallel: bool, cpu: bool, suite_dirs: Sequence[Path], ceilings: Path | None) -> _Session:
    case_env = check_machine(out, gpus, cpu, parallel, ceilings, also=REFERENCE_RESULTS)
    slug = local_slug(gpus, cpu)
    previous: Bundle | None = None
    if resume is not None:
        if not is_bundle(resume):
            raise UserError(f"--resume {str(resume)!r}: give a bundle (.tar.gz) written by llmbench oneshot")
        previous = load_bundle_checked(resume)
        theirs = sorted({rs.gpu_slug for _, rs in previous.result_sets})
        if theirs != [slug]:
            raise UserError(f"--resume {resume.name}: its result sets were measured on {', '.join(theirs)}; this "
                            f"machine is {slug} (a result set holds one GPU model): run oneshot without --resume")
    if suites or previous is None:
        loaded = [load_suite(str(n), list(suite_dirs)) for n in suites or DEFAULT_ONESHOT_SUITES]
    else:
        loaded = bundled_suites(previous, out)
    return _Session(slug, loaded, previous, case_env, parallel, gpus)


def plan_oneshot(suites: Sequence[str | Path] = (), *, out: Path = Path("oneshot"), resume: Path | None = None,
                 gpus: str | None = None, parallel: bool = False, cpu: bool = False,
                 suite_dirs: Sequence[Path] = (), ceilings: Path | None = None, budget_s: float | None = None) -> Plan:
    """`oneshot --dry-run`: the cases still to run and their quotes (as the budget reads them)."""
    session = _oneshot_session(suites, out, resume, gpus, parallel, cpu, suite_dirs, ceilings)
    return _quote(session, out, local_device(gpus, cpu), budget_s)


def _quote(session: _Session, out: Path, device: Any, budget_s: float | None = None) -> Plan:
    """The cases still to run and their quotes: the resumed bundle's times, this folder's earlier runs,
    the committed results/ of this GPU (or, for a case never measured on it, of another GPU, named),
    else the scenarios' estimates; nothing for a case this device will skip."""
    expect = compile_cache.expected_state()
    measured = reference_times(REFERENCE_RESULTS, session.slug, other_gpus=True, expect=expect)
    unread: list[str] = []
    measured = overlay(measured, reference_times(out, session.slug, expect=expect,
                                                 suites={s.name for s in session.suites}, unread=unread))
    done: set[str] = set()
    every = [c for s in session.suites for c in s.cases]
    for _, rs in session.previous.result_sets if session.previous else []:
        measured = overlay(measured, ok_case_times(rs))
        done |= done_before(rs.cases, every, device)
    plan = Schedule((), slots=run_slots(session.gpus, session.parallel))
    for s in session.suites:
        left = None if budget_s is None else max(budget_s - plan.timeline().makespan_s, 1.0)  # as each suite's run
        plan = plan.then(run_schedule(s, [c for c in s.cases if c.id not in done], measured, device, plan.slots, left))
    return Plan(plan.cases, plan.times, session.slug, done_before=len(done), unread=unread_note(unread), schedule=plan)


def skipped_here(plan: Plan) -> str | None:
    """One line, said before the cases start, for the cases this machine will skip (an engine or package
    not installed, a precision the GPU lacks): where the answer will have holes, and how to fill them
    (each reason carries its install command); None where every case can run."""
    groups = plan.skipped()
    if not groups:
        return None
    why = "; ".join(f"{len(g)} x {merge_numbers([r for _, r in g])}" if len(g) > 1 else g[0][1] for g in groups)
    return f"{sum(map(len, groups))} of {len(plan.times)} case(s) will be skipped here: {why}"


def oneshot(suites: Sequence[str | Path] = (), *, budget_s: float | None = None, out: Path = Path("oneshot"),
            resume: Path | None = None, gpus: str | None = None, parallel: bool = False, cpu: bool = False,
            suite_dirs: Sequence[Path] = (), ceilings: Path | None = None, ui: UI | None = None) -> OneshotResult:
    """A freshly rented machine's session: doctor, the suites (default: headline; with `resume`, the
    bundle's) within `budget_s`, and one bundle <gpu-slug>-<UTC>.tar.gz in `out`. An interrupt
    (KeyboardInterrupt: Ctrl-C, SIGTERM) writes the bundle of what finished and returns with
    `interrupted`. Raises BrokenStack (nothing measured) where doctor finds the stack broken."""
    t0 = time.monotonic()
    started = utc_now()
    ui = ui or UI()
    session = _oneshot_session(suites, out, resume, gpus, parallel, cpu, suite_dirs, ceilings)
    slug, previous, loaded = session.slug, session.previous, session.suites
    placed = place_resumed(previous, out) if previous else {}
    part = len((previous.manifest.get("parts") if previous else None) or []) + 1
    log = out / "logs" / f"oneshot-{started.replace(':', '').replace('-', '')}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    journal = Journal(log, ui, t0, budget_s)
    said = Tee(ui, journal)

    said.line(f"llmbench oneshot on {slug}: {', '.join(s.name for s in loaded)}"
              + (f", budget {duration_text(budget_s)}" if budget_s else "")
              + (f", resuming {resume.name} (part {part})" if resume else ""))
    for where in (line for s in loaded for line in s.notes()):
        said.line(where)
    ui.line("doctor: checking driver, CUDA, torch and that work runs on the GPU ...")
    checks = run_checks(gpus)
    for c in checks:
        said.check(c)
    problem = stack_problem(checks, cpu)
    if problem:
        append_log(log, f"stopped: the stack is broken: {problem}")
        raise BrokenStack(problem)
    others = foreign_gpu_processes(gpus) if not cpu else []
    if others:
        said.warn(f"{len(others)} other process(es) on the GPU ({', '.join(str(p['pid']) for p in others)}): "
                  "they share it and falsify timings")
    files = environment_files(checks, part)

    plan = _quote(session, out, local_device(gpus, cpu), budget_s)
    journal.quoted(plan)
    for note in filter(None, (plan.unread, skipped_here(plan))):
        said.warn(note)
    reference = reference_times(REFERENCE_RESULTS, slug, other_gpus=True, expect=compile_cache.expected_state())
    interrupted, on_term = False, signal.getsignal(signal.SIGTERM)
    ui.cases_begin()
    try:
        for s in loaded:
            left = None if budget_s is None else max(budget_s - (time.monotonic() - t0), 1.0)
            opts = RunOptions(out_dir=out, resume=s.name in placed, resume_from=placed.get(s.name), gpus=gpus,
                              device="cpu" if cpu else "auto", budget_s=left, parallel=parallel,
                              reference_times=reference, extra_env=session.case_env)
            run_cases(s, s.cases, opts, said)
    except KeyboardInterrupt:
        interrupted = True
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cost the bundle
    finally:
        ui.cases_end()
    if interrupted:
        ui.interrupted()
    # every set this session wrote (one interrupted mid-run included), and resumed sets it did not reach
    written = list(dict.fromkeys([*journal.paths, *(p for p in placed.values() if p.exists())]))
    files.update({f"suites/{s.name}.toml": s.path.read_bytes() for s in loaded})
    counts: dict[str, int] = {}
    for w in written:
        for k, v in status_counts(load(w)).items():
            counts[k] = counts.get(k, 0) + v
    try:
        append_log(log, f"{'interrupted' if interrupted else 'done'}: {_summary(counts, journal.deferred)}")
        path = write_oneshot_bundle(out, slug, written, previous, files, log, part,
                                    part_summary(checks, started, budget_s, interrupted, journal.deferred))
    except OSError as e:  # a full disk: what was measured is in the result sets, which say where
        raise bundle_not_saved(out, written, log, e) from None
    finally:
        signal.signal(signal.SIGTERM, on_term)  # the caller's handler again once the bundle is written
    return OneshotResult(path, counts, journal.deferred, interrupted, time.monotonic() - t0)


def bundle_not_saved(out: Path, written: list[Path], log: Path, e: OSError) -> NotSaved:
    """The one line a oneshot ends with (exit code 3) when its bundle cannot be written: why, and where
    what it measured is kept (the result sets under --out, the log), for show, report and run --resume."""
    why = e.strerror or str(e)
    sets = ", ".join(str(w) for w in written if w.exists())
    kept = f"the result set(s) are kept: {sets}" if sets else "no result set was written"
    logged = f"; the log: {log}" if log.exists() else ""
    return NotSaved(f"cannot write the bundle in {out}: {why}; {kept}{logged} (llmbench show and report read them; "
                    f"free space and llmbench run SUITE --resume --out {out} continues them)")


def _summary(counts: dict[str, int], deferred: int) -> str:
    left_over = f", {deferred} left for --resume (budget)" if deferred else ""
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + left_over


def duration_text(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def clock_text(spent_s: float, budget_s: float | None, quoted_done_s: float, n_done: int, quoted_all_s: float,
               n_all: int) -> str:
    """Time spent (and left of the budget) beside the dry-run quote, in one short line: '4:10 spent,
    10:50 left of 15:00; quote 3:55 for 6 done, 14:20 for all 25': `quoted_done_s`, when the quote's
    timeline has the cases done so far done, reads against the time spent."""
    text = f"{_mmss(spent_s)} spent"
    if budget_s is not None:
        text += f", {_mmss(max(budget_s - spent_s, 0))} left of {_mmss(budget_s)}"
    return text + f"; quote {_mmss(quoted_done_s)} for {n_done} done, {_mmss(quoted_all_s)} for all {n_all}"


def _mmss(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Journal(UI):
    """The session's own listener, beside the caller's UI: each event written, plain, to the log the
    bundle carries (appended as it happens, so a crash keeps it); the result sets the suites wrote, the
    cases the budget left out, and the time spent against the budget and the quote, told to `ui` as
    `clock` after each case."""

    def __init__(self, log: Path, ui: UI, t0: float, budget_s: float | None) -> None:
        self.log, self.ui, self.t0, self.budget_s = log, ui, t0, budget_s
        self.paths: list[Path] = []  # the result set of each suite started, also one interrupted mid-run
        self.deferred = 0
        self.quoted_ends: dict[str, float] = {}  # when the quote's timeline has each case done
        self.quoted_all = 0.0
        self.n_all = 0
        self.done: set[str] = set()
        self.last_clock = time.monotonic()


    def _append(self, text: str) -> None:
        """A line of the log; a log that cannot be written (a full disk) costs the log, not the run, whose
        result sets say what it measured."""
        with contextlib.suppress(OSError):
            append_log(self.log, text)
    def quoted(self, plan: Plan) -> None:
        """The quotes the clock reads, once the plan is made: when its timeline has each case done, which
        over several GPUs is not the sum of the quotes before it (the cases side by side)."""
        self.quoted_ends = plan.quoted_ends()
        self.quoted_all, self.n_all = plan.total_s, len(plan.cases)
        self.last_clock = time.monotonic()

    def clock_now(self) -> str:
        quoted = max((self.quoted_ends.get(i, 0.0) for i in self.done), default=0.0)
        return clock_text(time.monotonic() - self.t0, self.budget_s, quoted, len(self.done), self.quoted_all,
                          self.n_all)

    def _tick(self, force: bool) -> None:
        """The clock to the UI after each case: a line is due every CLOCK_EVERY_S and at a suite's end."""
        calm = force or time.monotonic() - self.last_clock >= CLOCK_EVERY_S
        if calm:
            self.last_clock = time.monotonic()
        self.ui.clock(self.clock_now(), calm)

    def line(self, text: str) -> None:
        self._append(text)

    def check(self, check: Check) -> None:
        self._append(f"doctor {check.level} {check.name}: {check.detail}")

    def suite_start(self, suite: Suite, cases: list[CaseSpec], path: Path, skipped: int) -> None:
        self.paths.append(path)
        self._append(f"suite {suite.name}: {len(cases)} case(s) to run, {skipped} already done -> {path.name}")
        self.ui.clock(self.clock_now(), False)

    def case_start(self, case: CaseSpec, index: int) -> None:
        self._append(f"start    {case.id} {case.label}")

    def case_done(self, case: CaseSpec, result: CaseResult) -> None:
        self.done.add(case.id)
        given = CaseInfo.of(result.info).gpus
        gpus = f" [gpus {given}]" if given else ""
        self._append(f"{result.status:8} {case.id} {case.label} ({result.duration_s or 0:.0f} s){gpus}"
                   + (f": {result.reason}" if result.reason else "") + f" [{self.clock_now()}]")
        self._tick(False)

    def case_deferred(self, case: CaseSpec, needs_s: float, left_s: float) -> None:
        self.deferred += 1
        self._append(f"deferred {case.id} {case.label}: needs about {needs_s:.0f} s, "
                   f"{max(left_s, 0):.0f} s left")

    def warn(self, text: str) -> None:
        self._append(f"warning: {text}")

    def suite_done(self, result_set: ResultSet, path: Path) -> None:
        self._tick(True)
