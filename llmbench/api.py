"""llmbench as a library: `run_suite`, `compare` and `oneshot` (with `plan_run` and `plan_oneshot`,
their `--dry-run` quotes), what the CLI commands and `llmbench fleet` call.

Each function takes typed arguments, raises `llmbench.errors.UserError` for bad input (the CLI turns
it into one line and exit 2) and returns what it made (the result-set paths, a comparison, the bundle
path and its summary). None prints: what a person watching should see goes to the `SessionUI` the
caller passes (the CLI passes its rich one; the default says nothing).

The computing modules of report/ are imported here and nowhere else in this module's callers, so
their home can change without touching the commands."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from llmbench import __version__
from llmbench.analysis.basediff import BaseDiff, base_diff, parse_base
from llmbench.analysis.compare import Comparison, headline_metric_names
from llmbench.analysis.compare import compare as compare_sets
from llmbench.analysis.cost import DEFAULT_RUN_TOKENS
from llmbench.analysis.cost_rows import CostRow, cost_rows
from llmbench.analysis.gate import GateResult, gate
from llmbench.analysis.inputs import SetRef, load_bundle_checked, resolve_baseline
from llmbench.analysis.migslice import SliceRow, slice_rows
from llmbench.analysis.noisefloor import floor_from_folders, folders_for
from llmbench.analysis.pages import Section, section, suite_cases
from llmbench.analysis.prices import Price, resolve_prices
from llmbench.analysis.runs import MEASURED_DATA, GpuRuns, load_sets
from llmbench.analysis.suitejoin import JoinPlan, plan_joins
from llmbench.bundle import Bundle, is_bundle, write_new_bundle
from llmbench.caseinfo import CaseInfo
from llmbench.errors import UserError
from llmbench.hardware import nvml
from llmbench.hardware.fingerprint import llmbench_info, local_device, local_slug
from llmbench.harness.doctor import Check, run_checks
from llmbench.harness.isolation import check_gpu_count
from llmbench.harness.plan import (
    CaseTime,
    done_before,
    measured_cases,
    ok_case_times,
    overlay,
    reference_times,
    resumed_set,
    unread_note,
)
from llmbench.harness.runner import RunOptions, RunUI, check_parallel, foreign_gpu_processes
from llmbench.harness.runner import run_suite as run_cases
from llmbench.harness.schedule import Schedule, run_schedule, run_slots
from llmbench.measure import compile_cache
from llmbench.redact import redact
from llmbench.report.terminal import NUMBER, merge_numbers, status_counts
from llmbench.results import CaseResult, ResultSet, latest_result, load, save, utc_now
from llmbench.suite import CaseSpec, Suite, filter_cases, load_suite

# the committed runs as the package ships them (`nox -s publish` exports them), the same from a checkout and a
# pip install: budget quotes and measured ceilings on a fresh machine
REFERENCE_RESULTS = MEASURED_DATA
DEFAULT_ONESHOT_SUITES = ["headline"]
FAILED_STATUSES = ("failed", "timeout")  # exit 1; "oom" too with strict
CLOCK_EVERY_S = 60.0  # a oneshot prints its time against the budget at most this often (and at each suite's end)


def exit_code(counts: dict[str, int], strict: bool) -> int:
    """0: every case ok or skipped (or oom: a result, the size does not fit); 1: a case failed or
    timed out (or, with strict, ran out of memory)."""
    bad = FAILED_STATUSES + (("oom",) if strict else ())
    return 1 if any(counts.get(s) for s in bad) else 0


class SessionUI(RunUI):
    """What a session tells the person watching it, beyond a suite's cases (RunUI). This base says
    nothing (library use); the CLI's subclass prints."""

    def line(self, text: str) -> None: ...  # a plain line of the session: what runs, where a suite comes from
    def check(self, check: Check) -> None: ...  # one doctor check of oneshot
    def cases_begin(self) -> None: ...  # a suite's cases are about to run (a live display may start)
    def cases_end(self) -> None: ...  # they stopped, finished or interrupted (before any summary)
    def pass_start(self, index: int, of: int, group: str) -> None: ...  # a pass of run(repeat=N), N > 1
    def pass_done(self, run: SuiteRun) -> None: ...  # a pass's result set is complete
    def clock(self, text: str, calm: bool) -> None: ...  # oneshot's time against its budget; calm: a line is due
    def interrupted(self) -> None: ...  # oneshot: an interrupt stopped the cases; the bundle is written next


# ---------------------------------------------------------------------------------------------- paths


def check_out_dir(out: Path, option: str = "--out") -> None:
    """Refuse an --out FOLDER that is a file or cannot be created or written (exit 2, nothing written)."""
    if out.is_symlink() and not out.exists():
        raise UserError(f"{option} {str(out)!r} is a link to {os.readlink(out)!r}, which does not exist; create "
                        "that folder or give another")
    if out.exists() and not out.is_dir():
        raise UserError(f"{option} {str(out)!r} is a file; it must be a folder (result sets go to OUT/<gpu-slug>/)")
    if out.is_dir():
        _can_create_in(out, out, option)
        return
    writable_parent(out, option)


def writable_parent(path: Path, option: str) -> None:
    """The nearest existing folder above `path` must be a folder we may write into."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{option} {str(path)!r}: {str(parent)!r} is a file, not a folder")
    _can_create_in(parent, path, option)


def _can_create_in(folder: Path, path: Path, option: str) -> None:
    """Create and remove a file in `folder`: the one test that holds for root, read-only mounts and
    pseudo-filesystems such as /proc alike (where os.access says yes to root, and writing fails)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise UserError(f"{option} {str(path)!r}: cannot write in {str(folder)!r} ({e.strerror or e})") from None


def check_compile_cache() -> None:
    """LLMBENCH_COMPILE_CACHE, a folder kept across runs, must be one this run can write into (a file
    there would fail every case process's start)."""
    setting = os.environ.get(compile_cache.USER_SETTING, "")
    if not setting or setting.lower() == "off":
        return
    folder, what = Path(setting), compile_cache.USER_SETTING
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{what} {setting!r} is a file; give a folder for torch.compile's caches, or 'off'")
    if folder.is_dir():
        _can_create_in(folder, folder, what)
    else:
        writable_parent(folder, what)


def ceilings_env(ceilings: Path | None, out: Path, also: Path | None = None) -> dict[str, str]:
    """The case processes' LLMBENCH_CEILINGS: --ceilings, else the user's own LLMBENCH_CEILINGS, else
    the run's results folder (then `also`, where it exists: oneshot's committed reference sets), as
    absolute paths (a case reads the same set from any working directory)."""
    from llmbench.hardware.roofline import CEILINGS_ENV

    if ceilings is not None:
        if not ceilings.exists():
            raise UserError(f"--ceilings {str(ceilings)!r} does not exist; give a ceilings result set (.json) or "
                            "a results folder (OUT of an earlier run, holding <gpu-slug>/ceilings-*.json)")
        if ceilings.is_file():
            try:
                load(ceilings)
            except (OSError, ValueError) as e:  # not JSON, not a result set: one line, not a traceback
                raise UserError(f"--ceilings {str(ceilings)!r} is not a result set: {e}".splitlines()[0]) from None
        return {CEILINGS_ENV: str(ceilings.resolve())}
    if os.environ.get(CEILINGS_ENV):
        return {}
    places = [out, *([also] if also is not None and also.is_dir() else [])]
    return {CEILINGS_ENV: os.pathsep.join(str(p.resolve()) for p in places)}


def check_machine(out: Path, gpus: str | None, cpu: bool, parallel: bool, ceilings: Path | None,
             also: Path | None = None) -> dict[str, str]:
    """The checks every session makes before it reads a suite, in the order the CLI always made them;
    the case processes' extra environment."""
    check_out_dir(out)
    slug_dir = out / local_slug(gpus, cpu)  # where the result sets go: a file there fails before any case runs
    if slug_dir.exists() and not slug_dir.is_dir():
        raise UserError(f"--out {str(out)!r}: {str(slug_dir)!r} is a file; result sets go in a folder of that name")
    if slug_dir.is_dir():
        _can_create_in(slug_dir, slug_dir, "--out")
    check_compile_cache()
    check_gpu_count(gpus, cpu, len(nvml.handles()) if gpus is not None and not cpu else 0)
    check_parallel(gpus, parallel)
    return ceilings_env(ceilings, out, also)


# ------------------------------------------------------------------------------------------- run_suite


@dataclass(frozen=True)
class Selection:
    """A suite and the cases of it to run (after filters and a timeout override)."""

    suite: Suite
    cases: list[CaseSpec]


@dataclass(frozen=True)
class SuiteRun:
    """One result set a run wrote: where it is, how its cases ended, and the cases the budget left out
    (a later resume runs them)."""

    path: Path
    counts: dict[str, int]
    deferred: int = 0

    @property
    def result_set(self) -> ResultSet:
        return load(self.path)

    def exit_code(self, strict: bool = False) -> int:
        return exit_code(self.counts, strict)


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
             cpu: bool = False, resume: bool = False, force: bool = False, parallel: bool = False) -> Plan:
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
    plan = run_schedule(selection.suite, todo, measured, device, run_slots(gpus, parallel))
    return Plan(plan.cases, plan.times, slug, source, len(selection.cases) - len(todo), unread_note(unread), plan)


def run_suite(suite: str | Path | Suite | Selection, *, out: Path = Path("results"), filters: Sequence[str] = (),
              resume: bool = False, force: bool = False, gpus: str | None = None, cpu: bool = False,
              parallel: bool = False, timeout_s: float | None = None, budget_s: float | None = None,
              repeat: int = 1, suite_dirs: Sequence[Path] = (), ceilings: Path | None = None,
              ui: SessionUI | None = None) -> RunResult:
    """Run a suite's cases, each in its own process, into result sets under OUT/<gpu-slug>/ (one per
    pass of `repeat`). `filters` and `timeout_s` apply where `suite` is not already a Selection.
    KeyboardInterrupt (Ctrl-C, SIGTERM) propagates after the finished cases are saved."""
    ui = ui or SessionUI()
    case_env = check_machine(out, gpus, cpu, parallel, ceilings)
    selection = suite if isinstance(suite, Selection) else select_cases(suite, filters, timeout_s, suite_dirs)
    if force and not resume:
        raise UserError("--force re-measures cases inside a resumed result set: use it with --resume")
    if repeat > 1 and force:
        raise UserError("--repeat with --force: a repeat group measures each case once per pass; "
                        "run a new group (--repeat alone) or re-measure one set (--resume --force)")
    if repeat > 1 and budget_s is not None:
        raise UserError("--repeat with --budget: a pass left unfinished by the budget would make runs of "
                        "unequal cases; pick the cases with --filter instead")
    s = selection.suite
    passes = plan_passes(out, local_slug(gpus, cpu) if repeat > 1 else "", s.name, repeat, resume, ui)
    runs = []
    for index, group, resume_this in passes:
        header = {"repeat": {"group": group, "index": index, "of": repeat}} if repeat > 1 else {}
        if repeat > 1:
            ui.pass_start(index, repeat, group)
        opts = RunOptions(out_dir=out, resume=resume_this, force=force, gpus=gpus, device="cpu" if cpu else "auto",
                          budget_s=budget_s, header=header, parallel=parallel, extra_env=case_env)
        counting = _Counting(ui)
        ui.cases_begin()
        try:
            path = run_cases(s, selection.cases, opts, counting)
        finally:
            ui.cases_end()
        done = SuiteRun(path, status_counts(load(path)), counting.deferred)
        ui.pass_done(done)
        runs.append(done)
    return RunResult(runs, passes[0][1])


def plan_passes(out: Path, slug: str, suite: str, repeat: int, resume: bool,
                ui: SessionUI | None = None) -> list[tuple[int, str, bool]]:
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
        (ui or SessionUI()).warn(f"no unfinished --repeat {repeat} group of {suite!r} on {slug}: starting a new one")
    group = f"{suite}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    return [(i, group, False) for i in range(1, repeat + 1)]


class _Forward(SessionUI):
    """Passes every event on to the caller's UI; subclasses add what the session itself keeps."""

    def __init__(self, inner: SessionUI) -> None:
        self.inner = inner

    def suite_start(self, suite: Suite, cases: list[CaseSpec], path: Path, skipped: int) -> None:
        self.inner.suite_start(suite, cases, path, skipped)

    def case_start(self, case: CaseSpec, index: int) -> None:
        self.inner.case_start(case, index)

    def case_progress(self, fraction: float, text: str) -> None:
        self.inner.case_progress(fraction, text)

    def case_probe(self, case: CaseSpec, probe: dict[str, Any]) -> None:
        self.inner.case_probe(case, probe)

    def case_done(self, case: CaseSpec, result: CaseResult) -> None:
        self.inner.case_done(case, result)

    def case_deferred(self, case: CaseSpec, needs_s: float, left_s: float) -> None:
        self.inner.case_deferred(case, needs_s, left_s)

    def warn(self, text: str) -> None:
        self.inner.warn(text)

    def suite_done(self, result_set: ResultSet, path: Path) -> None:
        self.inner.suite_done(result_set, path)


class _Counting(_Forward):
    """Counts the cases the budget left out (they are in no result set)."""

    def __init__(self, inner: SessionUI) -> None:
        super().__init__(inner)
        self.deferred = 0

    def case_deferred(self, case: CaseSpec, needs_s: float, left_s: float) -> None:
        self.deferred += 1
        super().case_deferred(case, needs_s, left_s)


# --------------------------------------------------------------------------------------------- compare


@dataclass(frozen=True)
class GroupComparison:
    """One comparison of sides that share cases (a suite, or suites joined on shared cases): the
    comparison, how it was joined, and what was asked beside it (MIG slices, costs, the gate)."""

    comparison: Comparison
    notes: list[str]
    mig_slices: list[SliceRow] = field(default_factory=list)
    costs: list[CostRow] | None = None  # None: no prices were given
    gate: GateResult | None = None  # None: no threshold was given

    def to_dict(self, prices: dict[str, Price] | None = None, run_tokens: float = DEFAULT_RUN_TOKENS) -> dict[str, Any]:
        """The JSON of `compare --format json` for this group."""
        from llmbench.analysis.cost_rows import cost_data

        part: dict[str, Any] = {"comparison": self.comparison.to_dict()}
        if self.mig_slices:
            part["mig_slices"] = [r.to_dict() for r in self.mig_slices]
        if prices is not None:
            part["cost"] = cost_data(self.comparison, prices, run_tokens)
        if self.gate is not None:
            part["gate"] = self.gate.to_dict()
        return part


@dataclass(frozen=True)
class CompareResult:
    """What `compare` found: the result sets as sides, a comparison per group that joins, the sides
    left out and why, and the within-set diffs of `base`."""

    sets: list[SetRef]
    groups: list[GroupComparison]
    left_out: list[str]
    base_diffs: list[BaseDiff] | None = None  # None: no base was asked for
    prices: dict[str, Price] | None = None
    run_tokens: float = DEFAULT_RUN_TOKENS

    @property
    def failed_gates(self) -> list[GateResult]:
        return [g.gate for g in self.groups if g.gate is not None and g.gate.failed]

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `compare --format json`."""
        parts = [g.to_dict(self.prices, self.run_tokens) for g in self.groups]
        data: dict[str, Any] = parts[0] if len(parts) == 1 else ({"comparisons": parts} if parts else {})
        if self.base_diffs is not None:
            data["base_diffs"] = [d.to_dict() for d in self.base_diffs]
        return data


def compare(files: Sequence[Path], *, baseline: str | None = None, base: str | None = None,
            headline: bool = False, pool: bool = False, fail_if_slower: float | None = None,
            prices: Sequence[str] = (), prices_file: Path | None = None, run_tokens: float = DEFAULT_RUN_TOKENS,
            noise_floor: Sequence[Path] = (), mix_suites: bool = False) -> CompareResult:
    """Compare result sets (files, folders, oneshot bundles) case by case against `baseline` (a GPU slug
    or file stem; default the first), per suite unless `mix_suites`; `base` ('precision=bf16') compares
    within each set; `fail_if_slower` (0.05) gates the headline metrics; `prices` ('slug=USD') add costs."""
    sets = load_sets(list(files), pool=pool)
    floor = floor_from_folders(list(noise_floor) or folders_for(files))
    if len(sets) < 2 and base is None:
        raise UserError("compare needs two or more result sets (sides, after pooling repeat groups"
                        + (" and --pool" if pool else "") + "), or --base KEY=VALUE to compare within one")
    if len(sets) < 2 and fail_if_slower is not None:
        raise UserError("--fail-if-slower needs two or more result sets (a baseline and a candidate)")
    plan = plan_joins(sets, mix_suites) if len(sets) >= 2 else JoinPlan([], [], [])
    joined = [(g, n) for g, n in zip(plan.groups, plan.notes, strict=True) if _joins(g)]
    if len(sets) >= 2 and not joined and base is None and not _joins(sets):  # nothing to compare: say why
        raise UserError(f"no case joins: the result sets share no case id (suites: "
                        f"{', '.join(sorted({s.rs.suite for s in sets}))}); compare result sets of the same suite, "
                        "or cases with the same scenario and params")
    priced = price_sets(sets, prices, prices_file)
    if priced is not None and len(sets) < 2:
        raise UserError("--price/--prices need two or more result sets (costs are shown beside a comparison)")
    left_out = plan.left_out + [f"Not compared: the {len(g)} result sets of {g[0].rs.suite} share no case."
                                for g in plan.groups if not _joins(g) and len({s.rs.suite for s in g}) == 1]
    names = headline_metric_names()
    groups = []
    for group, notes in joined:
        cmp = compare_sets(group, resolve_baseline(group, baseline), names if headline else None, floor)
        groups.append(GroupComparison(
            cmp, notes, slice_rows(cmp), cost_rows(cmp, priced, run_tokens) if priced is not None else None,
            gate(cmp, fail_if_slower, names) if fail_if_slower is not None else None))
    if not joined and baseline is not None:
        resolve_baseline(sets, baseline)
    diffs = None
    if base is not None:
        key, value = parse_base(base)
        diffs = [base_diff(s, key, value) for s in load_sets(list(files), by_gpu=True)]  # each GPU's sets together
    return CompareResult(sets, groups, left_out, diffs, priced, run_tokens)


def price_sets(sets: list[SetRef], given: Sequence[str], file: Path | None) -> dict[str, Price] | None:
    """The prices of the sets' GPUs, or None where no price was given (no cost table)."""
    if not given and file is None:
        return None
    return resolve_prices(list(given), file, [s.rs.gpu_slug for s in sets])


def _joins(sets: list[SetRef]) -> bool:
    ids = [{c.id for c in s.cases()} for s in sets]
    return bool(set.intersection(*ids)) or any(ids[0] & other for other in ids[1:])


@dataclass(frozen=True)
class SuitesCompared:
    """`compare_by_suite`'s answer: a section per suite compared ("Suite NAME", pages.Section), the suites
    measured on one GPU only, the prices given."""

    suites: list[Section]
    single: list[tuple[str, str]]  # (suite, the one side's name)
    prices: dict[str, Price] | None = None


def compare_by_suite(files: Sequence[Path], *, baseline: str | None = None, prices: Sequence[str] = (),
                     prices_file: Path | None = None) -> SuitesCompared:
    """Per suite, each GPU's runs of its cases (chosen by the one rule over every set given), each suite
    measured on two or more GPUs compared on its headline metrics against `baseline` where the suite has
    it (else its first GPU): what a fleet collected. A price for a GPU none measured is a UserError
    (leave it out first)."""
    sets = load_sets(list(files), by_gpu=True)
    priced = price_sets(sets, prices, prices_file)
    by_suite = {suite: [s.only(set(held[s.rs.gpu_slug])) for s in sets if s.rs.gpu_slug in held]  # a side per GPU
                for suite, held in suite_cases(s.chosen for s in sets if isinstance(s.chosen, GpuRuns)).items()}
    done, single = [], []
    for suite, group in by_suite.items():
        if len(group) < 2:
            single.append((suite, group[0].name))
            continue
        done.append(section(f"Suite {suite}", group, _lenient_baseline(group, baseline), headline_metric_names()))
    return SuitesCompared(done, single, priced)


def _lenient_baseline(group: list[SetRef], name: str | None) -> int:
    """The named baseline where this suite has it, else the first set."""
    if name is not None and any(name in (s.name, s.stem, s.rs.gpu_slug) for s in group):
        return resolve_baseline(group, name)
    return 0


def measured_slugs(files: Sequence[Path]) -> set[str]:
    """The GPU slugs the result sets in `files` were measured on."""
    return {s.rs.gpu_slug for s in load_sets(list(files))}


# --------------------------------------------------------------------------------------------- oneshot


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
                 suite_dirs: Sequence[Path] = (), ceilings: Path | None = None) -> Plan:
    """`oneshot --dry-run`: the cases still to run and their quotes (as the budget reads them)."""
    session = _oneshot_session(suites, out, resume, gpus, parallel, cpu, suite_dirs, ceilings)
    return _quote(session, out, local_device(gpus, cpu))


def _quote(session: _Session, out: Path, device: Any) -> Plan:
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
        plan = plan.then(run_schedule(s, [c for c in s.cases if c.id not in done], measured, device, plan.slots))
    return Plan(plan.cases, plan.times, session.slug, done_before=len(done), unread=unread_note(unread), schedule=plan)


def skipped_here(plan: Plan) -> str | None:
    """One line, said before the cases start, for the cases this machine will skip (an engine or package
    not installed, a precision the GPU lacks): where the answer will have holes, and how to fill them
    (each reason carries its install command); None where every case can run."""
    groups: dict[str, list[str]] = {}  # reasons that differ only in their figures, together (as --dry-run)
    for t in plan.times:
        if t.source == "skipped":
            groups.setdefault(NUMBER.sub("#", t.reason), []).append(t.reason)
    if not groups:
        return None
    why = "; ".join(f"{len(rs)} x {merge_numbers(rs)}" if len(rs) > 1 else rs[0] for rs in groups.values())
    return f"{sum(map(len, groups.values()))} of {len(plan.times)} case(s) will be skipped here: {why}"


def oneshot(suites: Sequence[str | Path] = (), *, budget_s: float | None = None, out: Path = Path("oneshot"),
            resume: Path | None = None, gpus: str | None = None, parallel: bool = False, cpu: bool = False,
            suite_dirs: Sequence[Path] = (), ceilings: Path | None = None,
            ui: SessionUI | None = None) -> OneshotResult:
    """A freshly rented machine's session: doctor, the suites (default: headline; with `resume`, the
    bundle's) within `budget_s`, and one bundle <gpu-slug>-<UTC>.tar.gz in `out`. An interrupt
    (KeyboardInterrupt: Ctrl-C, SIGTERM) writes the bundle of what finished and returns with
    `interrupted`. Raises BrokenStack (nothing measured) where doctor finds the stack broken."""
    t0 = time.monotonic()
    started = utc_now()
    ui = ui or SessionUI()
    session = _oneshot_session(suites, out, resume, gpus, parallel, cpu, suite_dirs, ceilings)
    slug, previous, loaded = session.slug, session.previous, session.suites
    placed = _place_resumed(previous, out) if previous else {}
    part = len((previous.manifest.get("parts") if previous else None) or []) + 1
    log = out / "logs" / f"oneshot-{started.replace(':', '').replace('-', '')}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    said = _Logged(ui, log)

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
        _log(log, f"stopped: the stack is broken: {problem}")
        raise BrokenStack(problem)
    others = foreign_gpu_processes(gpus) if not cpu else []
    if others:
        said.warn(f"{len(others)} other process(es) on the GPU ({', '.join(str(p['pid']) for p in others)}): "
                  "they share it and falsify timings")
    files = environment_files(checks, part)

    plan = _quote(session, out, local_device(gpus, cpu))
    said.clock_start(t0, budget_s, plan)
    for note in filter(None, (plan.unread, skipped_here(plan))):
        said.warn(note)
    reference = reference_times(REFERENCE_RESULTS, slug, other_gpus=True, expect=compile_cache.expected_state())
    interrupted = False
    said.cases_begin()
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
        said.cases_end()
    if interrupted:
        ui.interrupted()
    # every set this session wrote (one interrupted mid-run included), and resumed sets it did not reach
    written = list(dict.fromkeys([*said.paths, *(p for p in placed.values() if p.exists())]))
    files.update({f"suites/{s.name}.toml": s.path.read_bytes() for s in loaded})
    counts: dict[str, int] = {}
    for w in written:
        for k, v in status_counts(load(w)).items():
            counts[k] = counts.get(k, 0) + v
    _log(log, f"{'interrupted' if interrupted else 'done'}: {_summary(counts, said.deferred)}")
    path = _write(out, slug, written, previous, files, log, part,
                  _part_summary(checks, started, budget_s, interrupted, said.deferred))
    return OneshotResult(path, counts, said.deferred, interrupted, time.monotonic() - t0)


def _summary(counts: dict[str, int], deferred: int) -> str:
    left_over = f", {deferred} left for --resume (budget)" if deferred else ""
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + left_over


def duration_text(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def clock_text(spent_s: float, budget_s: float | None, quoted_done_s: float, n_done: int, quoted_all_s: float,
               n_all: int) -> str:
    """Time spent (and left of the budget) beside the dry-run quote, in one short line: '4:10 spent,
    10:50 left of 15:00; quote 3:55 for 6 done, 14:20 for all 25'."""
    text = f"{_mmss(spent_s)} spent"
    if budget_s is not None:
        text += f", {_mmss(max(budget_s - spent_s, 0))} left of {_mmss(budget_s)}"
    return text + f"; quote {_mmss(quoted_done_s)} for {n_done} done, {_mmss(quoted_all_s)} for all {n_all}"


def _mmss(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class _Logged(_Forward):
    """The session's events, passed on to the caller's UI and written, plain, to the log the bundle
    carries (appended as they happen, so a crash keeps them); the result sets the suites wrote; the
    time spent against the budget and the quote."""

    def __init__(self, inner: SessionUI, log: Path) -> None:
        super().__init__(inner)
        self.log = log
        self.paths: list[Path] = []  # the result set of each suite started, also one interrupted mid-run
        self.deferred = 0
        self.t0 = time.monotonic()
        self.budget_s: float | None = None
        self.quotes: dict[str, float] = {}
        self.quoted_all = 0.0
        self.done: set[str] = set()
        self.last_clock = 0.0

    def line(self, text: str) -> None:
        _log(self.log, text)
        self.inner.line(text)

    def check(self, check: Check) -> None:
        _log(self.log, f"doctor {check.level} {check.name}: {check.detail}")
        self.inner.check(check)

    def cases_begin(self) -> None:
        self.inner.cases_begin()

    def cases_end(self) -> None:
        self.inner.cases_end()

    def clock_start(self, t0: float, budget_s: float | None, plan: Plan) -> None:
        self.t0, self.budget_s = t0, budget_s
        self.quotes = {c.id: t.seconds for c, t in zip(plan.cases, plan.times, strict=True)}
        self.quoted_all = plan.total_s
        self.last_clock = time.monotonic()

    def clock_now(self) -> str:
        quoted = sum(self.quotes.get(i, 0.0) for i in self.done)
        return clock_text(time.monotonic() - self.t0, self.budget_s, quoted, len(self.done), self.quoted_all,
                          len(self.quotes))

    def _tick(self, force: bool) -> None:
        """The clock to the UI after each case: a line is due every CLOCK_EVERY_S and at a suite's end."""
        calm = force or time.monotonic() - self.last_clock >= CLOCK_EVERY_S
        if calm:
            self.last_clock = time.monotonic()
        self.inner.clock(self.clock_now(), calm)

    def suite_start(self, suite: Suite, cases: list[CaseSpec], path: Path, skipped: int) -> None:
        super().suite_start(suite, cases, path, skipped)
        self.paths.append(path)
        _log(self.log, f"suite {suite.name}: {len(cases)} case(s) to run, {skipped} already done -> {path.name}")
        self.inner.clock(self.clock_now(), False)

    def case_start(self, case: CaseSpec, index: int) -> None:
        super().case_start(case, index)
        _log(self.log, f"start    {case.id} {case.label}")

    def case_done(self, case: CaseSpec, result: CaseResult) -> None:
        super().case_done(case, result)
        self.done.add(case.id)
        given = CaseInfo.of(result.info).gpus
        gpus = f" [gpus {given}]" if given else ""
        _log(self.log, f"{result.status:8} {case.id} {case.label} ({result.duration_s or 0:.0f} s){gpus}"
             + (f": {result.reason}" if result.reason else "") + f" [{self.clock_now()}]")
        self._tick(False)

    def case_deferred(self, case: CaseSpec, needs_s: float, left_s: float) -> None:
        self.deferred += 1
        super().case_deferred(case, needs_s, left_s)
        _log(self.log, f"deferred {case.id} {case.label}: needs about {needs_s:.0f} s, {max(left_s, 0):.0f} s left")

    def warn(self, text: str) -> None:
        super().warn(text)
        _log(self.log, f"warning: {text}")

    def suite_done(self, result_set: ResultSet, path: Path) -> None:
        super().suite_done(result_set, path)
        self._tick(True)


def stack_problem(checks: list[Check], cpu: bool) -> str | None:
    """Why benchmarking here would measure nothing true: a failed doctor check, or (without cpu) a
    GPU that torch cannot use."""
    failed = [c for c in checks if c.level == "fail"]
    if failed:
        return "; ".join(f"{c.name}: {c.detail}" for c in failed)
    cuda = next((c for c in checks if c.name == "cuda"), None)
    if not cpu and cuda is not None and cuda.level != "ok":
        seen = len(nvml.handles())
        if seen:
            return (f"torch sees no CUDA GPU while the driver (NVML) sees {seen}: the driver, CUDA and torch "
                    "do not match (a CPU build of torch, or a driver too old for torch's CUDA)")
        return "no NVIDIA GPU here (neither NVML nor torch finds one); oneshot --cpu runs on the CPU"
    return None


def _command_text(args: list[str], timeout_s: float = 60) -> str:
    """A command's output for the bundle's env/ folder; what went wrong, if it failed."""
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, check=False)
        return out.stdout + (f"\n[stderr]\n{out.stderr}" if out.returncode else "")
    except (OSError, subprocess.SubprocessError) as e:
        return f"{' '.join(args)}: {e}\n"


def environment_files(checks: list[Check], part: int) -> dict[str, bytes | str]:
    """doctor's checks, pip freeze and nvidia-smi of this machine, for env/part-N/ in the bundle."""
    files: dict[str, bytes | str] = {
        f"env/part-{part}/doctor.json": json.dumps([asdict(c) for c in checks], indent=1),
        f"env/part-{part}/pip-freeze.txt": _command_text([sys.executable, "-m", "pip", "freeze"]),
    }
    if shutil.which("nvidia-smi"):
        files[f"env/part-{part}/nvidia-smi.txt"] = _command_text(["nvidia-smi"])
    return files


def _place_resumed(bundle: Bundle, out: Path) -> dict[str, Path]:
    """Write the bundle's result sets under OUT/<slug>/, where the runner continues them; by suite."""
    placed: dict[str, Path] = {}
    for member, rs in bundle.result_sets:
        path = out / rs.gpu_slug / Path(member).name
        if path.exists() and load(path).model_dump() != rs.model_dump():
            raise UserError(f"--out {str(out)!r} already holds {path.name}, which differs from the copy in "
                            f"{bundle.path.name}; give another --out")
        if not path.exists():
            save(rs, path)
        placed[rs.suite] = path
    return placed


def bundled_suites(bundle: Bundle, out: Path) -> list[Suite]:
    """The suites a bundle was run with, from the copies it carries (suites/<name>.toml): a resumed run
    has the same cases as the first part, whatever this machine's checkout holds."""
    names = bundle.manifest.get("suites") or []
    odd = [n for n in names if not isinstance(n, str) or not n or n.startswith(".") or "/" in n or "\\" in n]
    if odd:  # each name becomes OUT/suites/<name>.toml: an absolute or nested name would write outside it
        raise UserError(f"--resume {bundle.path.name}: the bundle's suite name {odd[0]!r} is not a plain name")
    missing = [n for n in names if f"suites/{n}.toml" not in bundle.files]
    if not names or missing:
        raise UserError(f"--resume {bundle.path.name}: the bundle does not carry its suite file(s) "
                        f"{', '.join(missing or ['(none listed)'])}; name the suites to run after the command")
    loaded = []
    for n in names:
        path = out / "suites" / f"{n}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bundle.files[f"suites/{n}.toml"])
        loaded.append(load_suite(str(path)))
    return loaded


def _report_html(paths: list[Path], title: str) -> tuple[str | None, str | None]:
    """The HTML report of the result sets, one section each; None and why, where it cannot be drawn."""
    try:
        from llmbench.report.html import render_html

        headline = frozenset(headline_metric_names())  # as `llmbench report` shows by default
        sections = []
        for p in paths:
            rs = load(p)
            sections.append(section(f"{rs.suite} on {rs.env.get('gpu', {}).get('name', rs.gpu_slug)}",
                                    [SetRef(name=rs.gpu_slug, rs=rs, stem=p.stem)], 0, headline))
        return render_html(sections, title), None
    except Exception as e:  # a report problem must not cost the bundle its result sets
        return None, f"{type(e).__name__}: {e}"


def _part_summary(checks: list[Check], started: str, budget_s: float | None, interrupted: bool,
                  deferred: int) -> dict[str, Any]:
    """This session, for the manifest's `parts`: when, with what budget, how it ended, and the machine's
    stack as doctor saw it (a resumed result set keeps the first part's `env`)."""
    return {"started_at": started, "ended_at": utc_now(), "budget_s": budget_s, "interrupted": interrupted,
            "deferred": deferred, "llmbench": {**llmbench_info(), "version": __version__},
            "stack": {c.name: c.detail for c in checks if c.name in ("torch", "nvml", "gpu", "cuda", "mig")}}


def _log(log: Path, text: str) -> None:
    with log.open("a", encoding="utf-8") as f:
        f.write(f"{utc_now()} {redact(text)}\n")


def _write(out: Path, slug: str, written: list[Path], previous: Bundle | None, files: dict[str, bytes | str],
           log: Path, part: int, summary: dict[str, Any]) -> Path:
    """The bundle: this session's result sets (a resumed set holds the earlier parts' cases too), the
    earlier parts' logs and environment, this part's, the HTML report and the manifest."""
    members: dict[str, bytes | str] = {}
    if previous is not None:
        members.update({k: previous.files[k] for k in previous.files if k.startswith(("logs/", "env/"))})
    members.update(files)
    members[f"logs/part-{part}.log"] = log.read_bytes() if log.exists() else b""
    html, why = _report_html(written, f"llmbench oneshot: {slug}")
    if html is not None:
        members["report.html"] = html
    parts = [*((previous.manifest.get("parts") or []) if previous else []), summary]
    suites = [n[len("suites/"):-len(".toml")] for n in files if n.startswith("suites/")]
    extra = {"command": "oneshot", "suites": suites, "parts": parts, **({"report_missing": why} if why else {})}
    return write_new_bundle(out, slug, {w.name: load(w) for w in written}, members, extra)
