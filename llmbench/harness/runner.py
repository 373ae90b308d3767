"""Runs a suite: fingerprint, then each case in its own process, writing the result set after every case
(atomically), so an interrupted run loses nothing that finished and `--resume` picks it up. The runner
decides what runs when and is the only writer of the set; how a case runs and which GPUs it holds is the
launcher layer's. `--parallel` slots and share groups: docs/design.md, "The harness and the rules of
measurement" and "The launcher layer". It names no scenario: it reads the scenario's declarations."""

from __future__ import annotations

import json
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from llmbench import __version__
from llmbench.caseinfo import INFO_VERSION, AttemptInfo, CaseInfo, ShareGroupInfo
from llmbench.errors import NotSaved, UserError
from llmbench.hardware import nvml
from llmbench.hardware.cpus import CPUS_ENV
from llmbench.hardware.fingerprint import cpu_slug, environment_warnings, llmbench_info
from llmbench.hardware.power import startup_restore
from llmbench.harness import journal
from llmbench.harness.isolation import ChildOutcome, died_in_startup, sweep_stale_tmp
from llmbench.harness.journal import KEY as JOURNAL_KEY
from llmbench.harness.launch import GpuSlots, SlotGrant
from llmbench.harness.launch import check_parallel as check_parallel  # the commands' check, kept importable here
from llmbench.harness.launchers import replicas
from llmbench.harness.launchers.base import Launcher, ProgressFn
from llmbench.harness.launchers.local import IsolatedProcess
from llmbench.harness.launchers.torchrun import Torchrun
from llmbench.harness.max_batch import (
    INFO_KEY,
    MEASUREMENT_RETRIES,
    ProbeLog,
    probes_path,
    search_max_batch,
)
from llmbench.harness.plan import (
    RUNNER_SKIP,
    MeasuredCase,
    case_time,
    done_before,
    measured_case,
    measured_cases,
    ok_case_times,
    overlay,
    quote_units,
    resumed_set,
    share_groups,
    shared_time,
    skip_reason,
    unread_note,
)
from llmbench.harness.schedule import Unit, run_units, start_order
from llmbench.harness.ui import UI
from llmbench.measure import host_speed
from llmbench.precision import DeviceInfo
from llmbench.redact import machine_paths, redact, redact_value
from llmbench.results import (
    CaseResult,
    ResultSet,
    check_finite,
    latest_result,
    save_aside,
    save_merged,
    save_new,
    utc_now,
)
from llmbench.scenarios.base import BatchSearch, RankScenario
from llmbench.serving.server import SHARED_ENV, shared_server_groups, stop_shared_servers
from llmbench.suite import CaseSpec, Suite

RESTART_WHY = "its case process ended without a result before its first timed window: started once more"
ATTEMPT_TAIL = 2000  # the stderr kept of a start that died
FINGERPRINT_NAMED = 6  # the differing fingerprint entries a resume's warning names
PARALLEL_SERVER_NOTE = (
    'under --parallel, server_scope = "suite" is not used: each serving case starts and stops its own '
    "server (an idle server kept for later cases would hold its GPUs' memory while other cases, a "
    "multi-GPU one among them, run there)"
)


@dataclass
class RunOptions:
    out_dir: Path = Path("results")
    resume: bool = False
    force: bool = False  # with resume: run the selected cases again even if they are done
    gpus: str | None = None  # "0,1" or "MIG-<uuid>": becomes CUDA_VISIBLE_DEVICES of each case
    device: str = "auto"  # "auto" (a GPU when there is one) or "cpu"
    extra_env: dict[str, str] = field(default_factory=dict)
    budget_s: float | None = None  # start only cases whose expected time fits in what is left of this
    header: dict[str, Any] = field(default_factory=dict)  # extra header fields of a new set (run --repeat's `repeat`)
    parallel: bool = False  # one case process per --gpus entry at a time, concurrently
    quiet_windows: bool = True  # under parallel, no timed window beside a set-up (measure/quiet.py); off only
    # where the timings do not matter (a test of something else)
    resume_from: Path | None = None  # with resume: this result set, not the newest one under out_dir
    reference_times: dict[str, MeasuredCase] = field(default_factory=dict)  # budget quotes measured elsewhere
    launcher: Launcher = field(default_factory=IsolatedProcess)  # how each case runs (harness/launchers/)
    share_engines: bool | None = None  # share groups (one process per loaded engine session); None: as the suite says
    named_gpu: dict[str, Any] | None = None  # the GPU the set is of where the user named it (a server elsewhere)


def foreign_gpu_processes(gpus: str | None, ours: Collection[int] = ()) -> list[dict[str, Any]]:
    """Compute processes already on the GPUs this run uses (checked while no case of ours runs), but for
    those in the process groups `ours` (the suite's shared servers): they share the GPU and falsify timings."""
    hs = nvml.handles()
    if not hs:
        return []
    indices: list[int] = list(range(len(hs)))
    if gpus and not gpus.startswith("MIG"):
        try:
            indices = [int(i) for i in gpus.split(",") if i.strip()]
        except ValueError:
            return []
    out: list[dict[str, Any]] = []
    for i in indices:
        if 0 <= i < len(hs):
            out.extend({"gpu": i, **p} for p in nvml.compute_processes(hs[i]) if _group(p["pid"]) not in ours)
    return out


def _group(pid: int) -> int | None:
    """The process group of `pid` (None where it is gone or not ours to see)."""
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def parent_device(fp: dict[str, Any], device: str) -> DeviceInfo:
    """The device a case process will see, from the fingerprint (no torch in this process): the
    first visible GPU, or the CPU when there is none or --cpu."""
    gpu = fp.get("gpu", {})
    if device == "cpu" or not gpu.get("count"):
        return DeviceInfo("cpu", f"CPU {fp.get('cpu', {}).get('model', '?')}")
    cc = str(gpu.get("compute_capability", ""))
    major, _, minor = cc.partition(".")
    return DeviceInfo("cuda", str(gpu.get("name", "?")),
                      (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None,
                      gpu.get("memory_gib"))


def run_suite(suite: Suite, cases: list[CaseSpec], opts: RunOptions, ui: UI | None = None) -> Path:
    ui = ui or UI()
    sweep_stale_tmp()
    for line in startup_restore():  # a power limit a killed run left changed goes back first
        ui.warn(line)
    slots = GpuSlots(opts.gpus, opts.extra_env, quiet=opts.quiet_windows)
    whole = slots.whole()
    fp = opts.launcher.fingerprint(whole.env)  # where its cases run (a Ray launcher's: on a node of its GPU type)
    code = llmbench_info()
    commit, modified = code.get("git_commit"), code.get("git_dirty")  # modified: None = unknown (pinned)
    if opts.device == "cpu":
        fp["gpu"] = {"name": "none (CPU forced)", "slug": cpu_slug(), "count": 0}
    if opts.named_gpu:
        fp["gpu"] = dict(opts.named_gpu)
    slug = fp["gpu"]["slug"]
    device = parent_device(fp, opts.device)

    existing = (opts.resume_from or latest_result(opts.out_dir, slug, suite.name)) if opts.resume else None
    if existing is not None:
        rs = resumed_set(existing)
        path = existing
        if rs.suite != suite.name:  # a set renamed, or given by --resume-from: another suite's cases
            raise UserError(f"--resume: {existing} holds a result set of suite {rs.suite!r}, not {suite.name!r}; "
                            f"resume it with suite {rs.suite!r}, or run {suite.name!r} without --resume")
        if rs.env.get("gpu", {}).get("slug") != slug:
            raise UserError(f"--resume: {existing} was measured on {rs.gpu_slug}, not {slug}; resume it on a "
                            f"{rs.gpu_slug} machine, or run without --resume")
        other_machine: dict[str, Any] = other_fingerprint(rs.env, fp)
        if other_machine:
            ui.warn(f"--resume: this machine's fingerprint differs from the one {existing.name} was measured on "
                    f"({', '.join(fingerprint_differences(rs.env, fp)[:FINGERPRINT_NAMED])}); each case run now "
                    "records its own")
        recovered = recovered_cases(existing, rs, suite.cases)
        for result in recovered:  # saved below, with the set's first write of this run
            rs.upsert(result)
    else:
        if opts.resume:
            ui.warn(f"nothing to resume for suite {suite.name!r} on {slug}: starting a new run")
        other_machine = {}
        path = Path()  # named when first written (below): a name no other writer has
        rs = ResultSet(suite=suite.name, description=suite.description,
                       llmbench={**llmbench_info(), "version": __version__}, env=fp,
                       warnings=environment_warnings(fp), **opts.header)
    rs.finished_at = None
    done = set() if opts.force else done_before(rs.cases, cases, device)
    todo = [c for c in cases if c.id not in done]
    measured: dict[str, MeasuredCase] = {}
    if opts.budget_s is not None or opts.parallel:  # the budget's and the start order's quotes: the set being
        # resumed, else the newest earlier one (read before saving a new one)
        unread: list[str] = []
        own = ok_case_times(rs) if existing is not None else measured_cases(opts.out_dir, slug, suite.name, unread)[0]
        measured = overlay(opts.reference_times, own)
        if unread:
            ui.warn(unread_note(unread) or "")
    if existing is None:
        try:
            path = save_new(rs, opts.out_dir, slug, suite.name)
        except OSError as e:
            raise NotSaved(f"cannot write a new result set under {opts.out_dir / slug}: {e.strerror or e}; "
                           "nothing was run") from None
    state = _Run(rs, path, opts, ui, device, slots, measured, commit, modified, machine_env=other_machine)
    if existing is not None:
        if recovered:
            state.unsaved.extend(recovered)
        if state.save() and recovered:
            ui.warn(f"{len(recovered)} case(s) recorded from the outcomes their case processes wrote before the "
                    f"last run of {path.name} stopped: {', '.join(r.id for r in recovered)}")
    ui.suite_start(suite, todo, path, skipped=len(cases) - len(todo))
    share = suite.share_engines if opts.share_engines is None else opts.share_engines
    try:
        if opts.parallel:  # no shared servers: each serving case starts and stops its own (see _run_parallel)
            if any(suite_scoped_server(c) for c in todo):
                ui.warn(PARALLEL_SERVER_NOTE)
            side = run_units(todo, device, share)
            quotes = quote_units([list(u.cases) for u in side], measured, device)
            try:
                _run_parallel(start_order(side, quotes, len(slots.slots), opts.budget_s), state)
            finally:
                slots.close()
        else:
            shared = Path(tempfile.mkdtemp(prefix=f"llmbench-case-{os.getpid()}-shared-"))  # swept like case folders
            state.shared = shared
            units = share_groups(todo, device) if share else [[c] for c in todo]
            try:
                _run_serial(units, state, replace(whole, env={**whole.env, SHARED_ENV: str(shared)}))
            finally:  # servers the cases shared (serving's server_scope = "suite") end with the suite
                stop_shared_servers(shared)
                shutil.rmtree(shared, ignore_errors=True)
    except BaseException:  # an interrupt: cases measured but not yet written get one more try
        if state.unsaved and not state.save():
            ui.warn(str(state.not_saved()))
        raise

    state.rs.finished_at = None if state.deferred else utc_now()  # cases left for --resume: the run is not finished
    state.note_host_speed()
    saved = state.save()
    ui.suite_done(state.shown(), path)
    if not saved:
        raise state.not_saved()
    return path


@dataclass
class _Run:
    """What the case loops share: the result set being written and how the run was asked for."""

    rs: ResultSet
    path: Path
    opts: RunOptions
    ui: UI
    device: DeviceInfo
    slots: GpuSlots  # the launcher layer's slot owner: which GPUs each running case holds
    measured: dict[str, MeasuredCase]
    commit: str | None
    modified: bool | None
    deferred: int = 0
    t_start: float = field(default_factory=time.monotonic)
    unsaved: list[CaseResult] = field(default_factory=list)  # measured, not yet on disk (a write failed)
    save_error: OSError | None = None
    alone: dict[str, str] = field(default_factory=dict)  # under --parallel: case id -> why nothing ran beside it
    shared: Path | None = None  # where the suite's shared servers are recorded (serial runs)
    machine_env: dict[str, Any] = field(default_factory=dict)  # this machine's fingerprint, where not the set's

    def save(self) -> bool:
        """Merge this run's new cases and header into the set on disk, under the set's lock (another run
        of the same set may have added cases since). A write that fails (a full disk) keeps the cases for
        the next save and says so once. True when the set on disk holds everything this run measured."""
        try:
            self.rs = save_merged(self.path, self.rs, self.unsaved)
        except OSError as e:
            if self.save_error is None:
                self.ui.warn(f"cannot write {self.path}: {e.strerror or e}; the file keeps its last good version "
                             "and the cases not written are kept here and written with the next case")
            self.save_error = e
            return False
        if self.save_error is not None:
            self.ui.warn(f"{self.path} written again: the {len(self.unsaved)} case(s) that waited are in it")
        journal.remove(self.path, [c.id for c in self.unsaved])  # the set holds them now
        self.unsaved.clear()
        self.save_error = None
        return True

    def shown(self) -> ResultSet:
        """The set as this run knows it: the one on disk and the cases it could not write."""
        if not self.unsaved:
            return self.rs
        shown = self.rs.model_copy(deep=True)
        for case in self.unsaved:
            shown.upsert(case.model_copy())
        return shown

    def not_saved(self) -> NotSaved:
        """The error a run ends with when its last write failed: the cases not written go to a file in
        the system's temporary folder (a set of their own, `llmbench show`-able), named in the message,
        else their metrics are only in the table printed above."""
        lost = len(self.unsaved)
        try:
            saved = f"the {lost} case(s) it lacks are in {save_aside(self.rs, self.unsaved)}"
        except OSError as e:
            saved = f"the {lost} case(s) it lacks could not be written anywhere ({e.strerror or e}): their metrics " \
                    "are in the table above"
        why = self.save_error.strerror if self.save_error is not None and self.save_error.strerror else self.save_error
        return NotSaved(f"cannot write {self.path}: {why}; it holds its last good version, {saved}")

    def defer_if_over_budget(self, case: CaseSpec, ahead_s: float = 0.0, shared: bool = False) -> bool:
        """Leave the case out of the result set (a later --resume runs it) when its quoted time does
        not fit in what is left of the budget once `ahead_s` (the quotes of the cases of its share
        group before it) is spent; `shared`: it will run on a session loaded before it."""
        if self.opts.budget_s is None:
            return False
        needs = self.quote(case, shared)
        left = self.opts.budget_s - (time.monotonic() - self.t_start) - ahead_s
        if needs <= left:
            return False
        self.ui.case_deferred(case, needs, left)
        self.deferred += 1
        return True

    def quote(self, case: CaseSpec, shared: bool = False) -> float:
        """The case's quoted time; `shared`: on a session an earlier case of its group loaded."""
        quote = case_time(case, self.measured)
        return (shared_time(quote, case, self.measured) if shared else quote).seconds

    def note_host_speed(self) -> None:
        """One warning, in the set and on the console, naming the cases timed on a slowed host core (a resumed
        set's note is replaced: the fastest probe of the whole set decides). GPU runs only: on the CPU the host
        is the device, and its speed is the figure itself."""
        if not self.device.is_cuda:
            return
        self.rs.warnings = [w for w in self.rs.warnings if not w.startswith(host_speed.NOTE_PREFIX)]
        probes = {c.id: CaseInfo.of(c.info).host_probe_us or [] for c in self.rs.cases if c.status == "ok"}
        if text := host_speed.note(probes):
            self.rs.warnings.append(text)
            self.ui.warn(text)

    def probe_log(self, case: CaseSpec) -> ProbeLog | None:
        """Where a max-batch search's probes are kept, beside this result set (None for a case not searched)."""
        if batch_search(case) is None:
            return None
        return ProbeLog(probes_path(self.path, case.id), case.id, self.rs.gpu_slug, self.commit)

    @property
    def beside(self) -> bool:
        """Cases may run at the same time as this one (--parallel over several slots): another measurement
        than a case alone, which analysis/runs.py never pools with it."""
        return self.opts.parallel and len(self.slots.slots) > 1

    def others_on(self, case: CaseSpec, gpus: str | None) -> list[dict[str, Any]]:
        """Foreign processes on these GPUs (none of ours runs there now), recorded, and warned about unless
        the case measures a server running there that it did not start."""
        others = foreign_gpu_processes(gpus, shared_server_groups(self.shared)) if self.opts.device != "cpu" else []
        if others and not case.scenario_obj().serves_elsewhere():  # that server is expected
            msg = (f"{len(others)} other process(es) on the GPU before case {case.id} "
                   f"({', '.join(str(p['pid']) for p in others)}): they share the GPU and falsify timings")
            self.rs.warnings.append(msg)
            self.ui.warn(msg)
        return others

    def launcher_of(self, case: CaseSpec, result: CaseResult) -> str | None:
        """The launcher a case ran its work through: a rank scenario's ranks went through torchrun (also
        where its process was killed before it said so), a case of several replicas through `replicas`, any
        other case through the run's (`local`); a case a cluster launcher placed is that launcher's (`ray`)
        whatever it ran inside; None for a case the runner skipped without starting it."""
        if CaseInfo.of(result.info).skipped_by:
            return None
        return self.launcher_for(case)

    def launcher_for(self, case: CaseSpec) -> str:
        """The launcher a case that is started runs its work through (`launcher_of`)."""
        outer = self.opts.launcher.name
        if outer != IsolatedProcess.name:
            return outer
        if isinstance(case.scenario_obj(), RankScenario):
            return Torchrun.name
        return replicas.NAME if case.placement.replicas > 1 else outer

    def noted(self, case: CaseSpec, launcher: str | None, gpus: str | None, others: list[dict[str, Any]],
              group: ShareGroupInfo | None = None, cpus: str | None = None) -> dict[str, Any]:
        """What the runner adds to a case's info: the code, the GPUs, what ran beside it, its launcher."""
        noted = CaseInfo(info_version=INFO_VERSION, llmbench_commit=self.commit,  # a set can span commits
                         llmbench_tree_modified=self.modified, gpus=gpus, other_gpu_processes=others or None,
                         share_group=group, ran_beside_cases=(self.beside and case.id not in self.alone) or None,
                         ran_alone=self.alone.get(case.id), cpus=cpus, launcher=launcher)
        return noted.model_dump(exclude_none=True)

    def journal_for(self, case: CaseSpec, gpus: str | None, others: list[dict[str, Any]],
                    group: ShareGroupInfo | None = None) -> dict[str, Any] | None:
        """The journal entry a case's spec names (harness/journal.py), where its case process runs on this
        machine and so reaches the set's folder (the local launcher); None elsewhere."""
        if self.opts.launcher.name != IsolatedProcess.name or not self.path.name:
            return None
        return journal.entry(self.path, case.id, utc_now(),
                             self.noted(case, self.launcher_for(case), gpus, others, group))

    def record(self, case: CaseSpec, result: CaseResult, gpus: str | None, others: list[dict[str, Any]],
               group: ShareGroupInfo | None = None, cpus: str | None = None) -> None:
        """Add a finished case to the result set and write it (atomically)."""
        result.info.update(self.noted(case, self.launcher_of(case, result), gpus, others, group, cpus))
        if self.machine_env:  # resumed on another machine: the case says which
            result.env = self.machine_env
        search = CaseInfo.of(result.info).max_batch
        not_reused = search.not_reused if search else None
        if not_reused:  # a recorded search of another llmbench or GPU: searched afresh, said out loud
            self.ui.warn(f"case {case.id}: max_batch probes {not_reused}")
        self.unsaved.append(result)
        self.save()  # on disk before the runner says it is done or starts another case
        self.ui.case_done(case, result)
        if result.status == "ok" and result.duration_s:  # guides the quotes of the cases still to come
            self.measured = overlay(self.measured, {case.id: measured_case(result)})


def _as_written(fp: dict[str, Any]) -> dict[str, Any]:
    """A fingerprint as a result set holds it (JSON, no path of the machine): what a resume compares."""
    return dict(json.loads(machine_paths(json.dumps(fp, default=str))))


def fingerprint_differences(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """The fingerprint entries (dotted: `gpu.driver`) that differ between `old` and `new`."""
    old, new = (_as_written(old), _as_written(new)) if not prefix else (old, new)
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += fingerprint_differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(prefix + key)
    return out


def other_fingerprint(set_env: dict[str, Any], fp: dict[str, Any]) -> dict[str, Any]:
    """This machine's fingerprint `fp` as written, where it differs from the one of the set resumed
    (`set_env`); empty where they are the same: its cases need no fingerprint of their own."""
    return _as_written(fp) if fingerprint_differences(set_env, fp) else {}


def suite_scoped_server(case: CaseSpec) -> bool:
    """A case that asks to keep the server it starts for the suite's next cases (its scenario's
    `server_scope`)."""
    return case.scenario_obj().server_scope(case.params) == "suite"


def batch_search(case: CaseSpec) -> BatchSearch | None:
    """The max-batch search a case asks for (its scenario's declaration, its flag on); None: none."""
    search = case.scenario_obj().max_batch_search
    return search if search is not None and search.wanted(case.params_dict) else None


def _run_serial(units: list[list[CaseSpec]], run: _Run, where: SlotGrant) -> None:
    """One unit after another, each on the first GPUs its placement asks for (`GpuSlots.first`; the
    run's environment `where` otherwise): a case alone in its own process, or a share group's cases one
    after another in one process (`_run_group`)."""
    index = {c.id: i for i, c in enumerate(c for unit in units for c in unit)}
    for unit in units:
        ready: list[CaseSpec] = []
        ahead = 0.0
        for case in unit:
            reason = skip_reason(case, run.device)  # a skip costs no time: never left for the budget
            if reason:
                run.ui.case_start(case, index[case.id])
                run.record(case, skipped_result(case, reason), where.visible, [])
                continue
            if run.defer_if_over_budget(case, ahead, shared=bool(ready)):
                continue
            ahead += run.quote(case, shared=bool(ready))
            ready.append(case)
        if ready:
            grant = run.slots.first(max(c.placement.gpus for c in ready), where)
            hand = _Direct(run, grant)
            _run_unit(ready, run, hand, grant, index, hand.others(ready[0]))


class _Hand(Protocol):
    """Where a running unit's cases report: straight to the run (serial), or through the queue to the
    main thread (parallel: the only thread that writes the result set or draws the console)."""

    progress: ProgressFn | None

    def start(self, case: CaseSpec, index: int) -> None: ...
    def done(self, case: CaseSpec, result: CaseResult, others: list[dict[str, Any]],
             group: ShareGroupInfo | None = None) -> None: ...
    def probe(self, case: CaseSpec, probe: dict[str, Any]) -> None: ...
    def warn(self, text: str) -> None: ...
    def others(self, case: CaseSpec) -> list[dict[str, Any]]: ...


class _Direct:
    """A serial run's unit: it reports to the run itself."""

    def __init__(self, run: _Run, where: SlotGrant) -> None:
        self.run, self.where = run, where
        self.progress: ProgressFn | None = run.ui.case_progress

    def start(self, case: CaseSpec, index: int) -> None:
        self.run.ui.case_start(case, index)

    def done(self, case: CaseSpec, result: CaseResult, others: list[dict[str, Any]],
             group: ShareGroupInfo | None = None) -> None:
        self.run.record(case, result, self.where.visible, others, group)

    def probe(self, case: CaseSpec, probe: dict[str, Any]) -> None:
        self.run.ui.case_probe(case, probe)

    def warn(self, text: str) -> None:
        self.run.ui.warn(text)

    def others(self, case: CaseSpec) -> list[dict[str, Any]]:
        return self.run.others_on(case, self.where.visible)


@dataclass(frozen=True)
class _Event:
    """What a parallel unit's thread hands the main thread: a case started ("start"), ended ("done",
    its result), a max-batch probe ("probe"), a warning ("warn"), the error that ended the thread
    ("error"), and last the unit's end ("end": its slots come free)."""

    kind: str
    where: SlotGrant
    case: CaseSpec | None = None
    result: CaseResult | None = None
    others: list[dict[str, Any]] = field(default_factory=list)
    group: ShareGroupInfo | None = None
    detail: Any = None  # start: the case's index; probe: the probe; warn: the text; error: the exception


class _Posted:
    """A parallel run's unit: it reports through the queue (no case progress: cases run side by side)."""

    progress: ProgressFn | None = None

    def __init__(self, events: queue.Queue[_Event], where: SlotGrant) -> None:
        self.events, self.where = events, where

    def start(self, case: CaseSpec, index: int) -> None:
        self.events.put(_Event("start", self.where, case, detail=index))

    def done(self, case: CaseSpec, result: CaseResult, others: list[dict[str, Any]],
             group: ShareGroupInfo | None = None) -> None:
        self.events.put(_Event("done", self.where, case, result, others, group))

    def probe(self, case: CaseSpec, probe: dict[str, Any]) -> None:
        self.events.put(_Event("probe", self.where, case, detail=probe))

    def warn(self, text: str) -> None:
        self.events.put(_Event("warn", self.where, detail=text))

    def others(self, case: CaseSpec) -> list[dict[str, Any]]:
        return []  # checked once, by the main thread, before the unit started


def _run_unit(cases: list[CaseSpec], run: _Run, hand: _Hand, where: SlotGrant, index: dict[str, int],
              others: list[dict[str, Any]]) -> None:
    """A unit's cases on `where`: one case in a process of its own, or a share group (`_run_group`)."""
    if len(cases) > 1:
        _run_group(cases, run, hand, where, index, others)
    else:
        _run_alone(cases[0], run, hand, where, index[cases[0].id], others)


def _run_alone(case: CaseSpec, run: _Run, hand: _Hand, where: SlotGrant, i: int, others: list[dict[str, Any]],
               group: ShareGroupInfo | None = None) -> None:
    """One case in a process of its own (its max-batch search first, where it asks for one)."""
    hand.start(case, i)
    result = run_one(case, where.env, run.opts.device, hand.progress, log=run.probe_log(case),
                     fresh=run.opts.force, on_probe=partial(hand.probe, case), launcher=run.opts.launcher,
                     journal=run.journal_for(case, where.visible, others, group))
    hand.done(case, result, others, group)


def _run_group(cases: list[CaseSpec], run: _Run, hand: _Hand, where: SlotGrant, index: dict[str, int],
               others: list[dict[str, Any]]) -> None:
    """A share group: its cases one after another in one process, on the session the first loads; each
    is recorded as it ends. The first case that does not end ok or skipped stops the group (its shared
    session may be what failed): that case (unless it ran past its timeout) and the rest then run alone,
    each in a process of its own on the same GPUs, and say so in their info."""
    ids = [c.id for c in cases]
    started = [utc_now()]

    def done(i: int, out: ChildOutcome) -> None:
        case = cases[i]
        result = _result_of(case, out, started[-1], out.duration_s)
        if out.status in ("ok", "skipped") or out.status == "timeout":  # the others run alone (below)
            hand.done(case, result, others if i == 0 else [], ShareGroupInfo(cases=ids, index=i))
        started.append(utc_now())
        if out.status in ("ok", "skipped") and i + 1 < len(cases):
            hand.start(cases[i + 1], index[cases[i + 1].id])

    hand.start(cases[0], index[cases[0].id])
    specs = []
    for i, c in enumerate(cases):
        entry = run.journal_for(c, where.visible, others if i == 0 else [], ShareGroupInfo(cases=ids, index=i))
        specs.append({**c.worker_spec(run.opts.device), "id": c.id, **({journal.KEY: entry} if entry else {})})
    outcomes = run.opts.launcher.run_group(specs, where.env, done, hand.progress, hand.warn)
    if len(outcomes) == len(cases) and outcomes[-1].status in ("ok", "skipped"):
        return
    last = outcomes[-1]
    stopped = f"case {cases[len(outcomes) - 1].id} ended {last.status} in the group: {last.reason}"[:300]
    alone = len(outcomes) if last.status == "timeout" else len(outcomes) - 1
    for i, case in enumerate(cases[alone:], start=alone):
        _run_alone(case, run, hand, where, index[case.id], hand.others(case),
                   ShareGroupInfo(cases=ids, index=i, ran="alone", stopped=stopped))


def _run_parallel(units: list[Unit], run: _Run) -> None:
    """Units in order (harness/schedule.py), each started as soon as `GpuSlots` gives it the slots it
    needs (a host-exclusive one once nothing runs; nothing beside it), in a thread of its own; what
    its cases do comes back through a queue to this thread, the only one that writes the result set or
    draws the console. An interrupt records the cases that had already finished (`_drain`), then stops
    every running case process before it ends the run. Case processes get no shared-server folder
    (SHARED_ENV): a suite-scoped server kept between cases would sit on its slot's GPUs, idle but
    holding their memory, while other cases run there (a multi-GPU case over that slot and the next
    would start its own server beside it); so each serving case starts and stops its own server, as
    with server_scope = "case". The slots each unit holds are the launcher layer's (`GpuSlots`): taken
    when it starts, released when its last case is in."""
    events: queue.Queue[_Event] = queue.Queue()
    index = {c.id: i for i, c in enumerate(c for u in units for c in u.cases)}
    pending = [(u, list(u.cases)) for u in units]
    checked = False  # the head unit's skips are recorded
    running = 0
    ended: list[_Event] = []  # taken from the queue, not yet handled

    def work(cases: list[CaseSpec], where: SlotGrant, others: list[dict[str, Any]]) -> None:
        try:
            _run_unit(cases, run, _Posted(events, where), where, index, others)
        except BaseException as e:  # handed to the main thread, which raises it
            events.put(_Event("error", where, detail=e))
        finally:
            events.put(_Event("end", where))

    try:
        while pending or running:
            while pending:
                unit, cases = pending[0]
                if not checked:  # a skip costs no time and holds no slot
                    too_many = run.slots.too_many(unit.gpus)
                    for case in list(cases):
                        reason = too_many or skip_reason(case, run.device)
                        if reason:
                            cases.remove(case)
                            run.ui.case_start(case, index[case.id])
                            run.record(case, skipped_result(case, reason), None, [])
                    checked = True
                where = run.slots.take(unit.gpus, unit.alone is not None) if cases else None
                if cases and where is None:
                    break  # in order: the next unit waits for its slots
                ready: list[CaseSpec] = []
                ahead = 0.0
                for case in cases:  # the budget, read when the unit can start
                    if not run.defer_if_over_budget(case, ahead, shared=bool(ready)):
                        ahead += run.quote(case, shared=bool(ready))
                        ready.append(case)
                pending.pop(0)
                checked = False
                if where is None or not ready:
                    if where is not None:
                        run.slots.release(where)
                    continue
                visible = where.visible or ""
                # a MIG slot shares its GPU with the other slots (our own cases): no foreign-process check there
                others = run.others_on(ready[0], visible) if not visible.startswith(("MIG", "GPU")) else []
                if unit.alone is not None:
                    run.alone.update(dict.fromkeys((c.id for c in ready), unit.alone))
                threading.Thread(target=work, args=(ready, where, others), daemon=True).start()
                running += 1
            if not running:
                break
            errors: list[BaseException] = []
            ended = [_next(events)]
            while ended:  # every case that has ended is on disk before another unit starts
                event = ended.pop(0)
                if event.kind == "end":
                    running -= 1
                    run.slots.release(event.where)
                elif event.kind == "error":
                    errors.append(event.detail)
                else:
                    _hear(event, run)
                ended = ended or _waiting(events)
            if errors:
                raise errors[0]
    except BaseException:  # recorded and stopped below, then raised on
        try:  # cases that finished before the interrupt, still in the queue, are recorded first
            _drain(events, run, ended)
        finally:  # then the ones still running are stopped (their outcomes are the kill's: not recorded)
            run.opts.launcher.stop_all()
        raise


def _hear(event: _Event, run: _Run) -> None:
    """A unit's report, on the main thread: a case started or ended, a probe, a warning."""
    case = event.case
    if event.kind == "done" and case is not None and event.result is not None:
        run.record(case, event.result, event.where.visible, event.others, event.group, event.where.env.get(CPUS_ENV))
    elif event.kind == "start" and case is not None:
        run.ui.case_start(case, event.detail)
    elif event.kind == "probe" and case is not None:
        run.ui.case_probe(case, event.detail)
    elif event.kind == "warn":
        run.ui.warn(event.detail)


def _drain(events: queue.Queue[_Event], run: _Run, ended: list[_Event]) -> None:
    """Record the finished cases taken from the queue (`ended`) and those waiting in it (an interrupt,
    or one unit's error, ends the run while the main thread is not reading it), without waiting for
    the ones still running."""
    for event in [*ended, *_waiting(events)]:
        if event.kind == "done" and event.case is not None and event.result is not None:
            run.record(event.case, event.result, event.where.visible, event.others, event.group)


def _waiting(events: queue.Queue[_Event]) -> list[_Event]:
    """The events already in the queue, without waiting for more."""
    out = []
    while True:
        try:
            out.append(events.get_nowait())
        except queue.Empty:
            return out


def _next(events: queue.Queue[_Event]) -> _Event:
    """The next event; waits in short steps so Ctrl-C and SIGTERM reach this thread."""
    while True:
        try:
            return events.get(timeout=0.5)
        except queue.Empty:
            pass


def skipped_result(case: CaseSpec, reason: str) -> CaseResult:
    """A case the parent knows cannot run here: recorded `skipped` without starting a process."""
    return CaseResult(**case.result_fields, status="skipped",
                      reason=redact(reason), started_at=utc_now(), duration_s=0.0, settings=case.settings.model_dump(),
                      info=CaseInfo(skipped_by=RUNNER_SKIP).model_dump(exclude_none=True, exclude_defaults=True))


def run_one(case: CaseSpec, env: dict[str, str], device: str, on_progress: ProgressFn | None = None, *,
            log: ProbeLog | None = None, fresh: bool = False, on_probe: Callable[[dict[str, Any]], None] | None = None,
            launcher: Launcher | None = None, journal: dict[str, Any] | None = None) -> CaseResult:
    """Run one case through `launcher` (its own process by default) with its placement's `env`. A case
    that asks for a max-batch search searches its batch first, each probe run by the same launcher, its
    probes kept in `log` (resumed from it unless `fresh`); the log is deleted once the case is measured ok.
    `journal`: the entry its measurement's case process writes its outcome to first (not its probes')."""
    launcher = launcher or IsolatedProcess()
    spec = case.worker_spec(device)
    started = str(journal["started_at"]) if journal else utc_now()
    final = {JOURNAL_KEY: journal} if journal else {}
    t0 = time.perf_counter()
    search = None
    axis = batch_search(case)
    if axis is not None:  # the largest batch that fits, then the case measured there
        search = search_max_batch(spec, env, case.settings.timeout_s, run=launcher.run, log=log, fresh=fresh,
                                  on_probe=on_probe, axis=axis)
        if search.best is not None:
            spec = {**spec, "params": axis.at(spec["params"], search.best)}
    if search is not None and search.best is None:
        first: dict[str, Any] = search.probes[0] if search.probes else {"status": "failed", "reason": search.stopped}
        out = ChildOutcome(str(first["status"]), first["reason"])
    else:
        out = run_restarting(launcher, {**spec, **final}, env, case.settings.timeout_s, on_progress)
        retries = 0
        while search is not None and out.status == "oom" and retries < MEASUREMENT_RETRIES:
            lower = search.measurement_oom(out.reason)  # its probe fit, the longer measurement did not
            if lower is None:
                break
            retries += 1
            spec = {**spec, "params": search.axis.at(spec["params"], lower)}
            out = launcher.run({**spec, **final}, env, case.settings.timeout_s, on_progress)
    if search is not None:
        out.payload.setdefault("info", {})[INFO_KEY] = search.info()
        if log is not None and out.status == "ok":  # done: the result set holds the probes now
            log.clear()
    return _result_of(case, out, started, time.perf_counter() - t0)


def run_restarting(launcher: Launcher, spec: dict[str, Any], env: dict[str, str], timeout_s: float,
                   on_progress: ProgressFn | None = None) -> ChildOutcome:
    """One case through `launcher`, started once more where its process died in its start-up, before its
    first timed window (`died_in_startup`: a lost node, a driver hiccup, a killed process, not the
    measurement). Both starts are in the case's info (`attempts`, the first with why it was started again); a
    failure once timing began is the case's result as it is, never retried."""
    out = launcher.run(spec, env, timeout_s, on_progress)
    if not died_in_startup(out):
        return out
    first = AttemptInfo(status=out.status, reason=out.reason, seconds=round(out.duration_s, 3),
                        restarted=RESTART_WHY, stderr_tail=(out.traceback or "")[-ATTEMPT_TAIL:] or None)
    again = launcher.run(spec, env, timeout_s, on_progress)
    last = AttemptInfo(status=again.status, reason=again.reason, seconds=round(again.duration_s, 3))
    again.payload.setdefault("info", {})["attempts"] = [a.model_dump(exclude_none=True) for a in (first, last)]
    return again


def recovered_cases(path: Path, rs: ResultSet, cases: list[CaseSpec]) -> list[CaseResult]:
    """The cases of the set at `path` whose case process wrote its outcome to the set's journal and whose
    runner stopped (a kill -9) before it recorded them: each as it would have been recorded, with the
    info its runner noted when it started it. An entry the set already holds (a result started as late
    or later) or of a case not in the suite is passed over; the entries go once the set holds them."""
    from llmbench.harness.isolation import _payload_outcome

    specs = {c.id: c for c in cases}
    have = {c.id: c.started_at for c in rs.cases}
    out: dict[str, CaseResult] = {}
    for p in journal.pending(path):
        case = specs.get(p.case_id)
        if case is None or (have.get(p.case_id) or "") >= p.started_at:
            continue
        result = _result_of(case, _payload_outcome(dict(p.outcome), p.seconds), p.began_at, p.seconds)
        result.info.update(p.info)
        out[p.case_id] = result  # a later entry of the same case wins
    return list(out.values())


def _result_of(case: CaseSpec, out: ChildOutcome, started: str, seconds: float) -> CaseResult:
    """The result of a case's outcome (alone, in a share group, after a max-batch search), its metrics
    checked for NaN and infinities against its scenario's headline (results.check_finite). What the case
    process said in words (its reason, info, traceback: a server's command line and log, a URL) has its
    credentials hidden (llmbench.redact), as its params have."""
    payload = out.payload
    return check_finite(CaseResult(
        **case.result_fields, status=out.status,  # type: ignore[arg-type]
        reason=out.reason and redact(out.reason), metrics=payload.get("metrics", {}), timer=payload.get("timer"),
        started_at=started, duration_s=round(seconds, 3), settings=case.settings.model_dump(),
        info=redact_value(payload.get("info", {})), code_path=payload.get("code_path", {}),
        traceback=out.traceback and redact(out.traceback),
    ), case.scenario_obj().headline)
