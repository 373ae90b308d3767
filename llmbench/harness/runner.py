"""Runs a suite: fingerprint, then each case in its own process, writing the result set after every
case (atomically), so an interrupted run loses nothing that finished and `--resume` picks it up."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmbench import __version__
from llmbench.hardware import nvml
from llmbench.hardware.fingerprint import cpu_slug, environment_warnings, llmbench_info
from llmbench.hardware.power import startup_restore
from llmbench.harness.isolation import ChildOutcome, child_env, fingerprint, run_case_process, sweep_stale_tmp
from llmbench.harness.max_batch import search_max_batch
from llmbench.harness.plan import MeasuredCase, case_time, measured_cases, ok_case_times
from llmbench.precision import DeviceInfo
from llmbench.results import CaseResult, ResultSet, fresh_result_path, latest_result, load, save, utc_now
from llmbench.scenarios.base import SCENARIOS
from llmbench.suite import CaseSpec, Suite

DONE_STATUSES = ("ok", "skipped")  # what --resume does not run again


class RunUI:
    """What a run tells the person watching it. This base says nothing (tests, library use);
    the CLI's subclass draws progress bars and a summary."""

    def suite_start(self, suite: Suite, cases: list[CaseSpec], path: Path, skipped: int) -> None: ...
    def case_start(self, case: CaseSpec, index: int) -> None: ...
    def case_progress(self, fraction: float, text: str) -> None: ...
    def case_done(self, case: CaseSpec, result: CaseResult) -> None: ...
    def case_deferred(self, case: CaseSpec, needs_s: float, left_s: float) -> None: ...
    def warn(self, text: str) -> None: ...
    def suite_done(self, result_set: ResultSet, path: Path) -> None: ...


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


def foreign_gpu_processes(gpus: str | None) -> list[dict[str, Any]]:
    """Compute processes already on the GPUs this run uses (checked while no case of ours runs):
    they share the GPU and falsify timings."""
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
            out.extend({"gpu": i, **p} for p in nvml.compute_processes(hs[i]))
    return out


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


def parent_skip_reason(case: CaseSpec, device: DeviceInfo) -> str | None:
    """Why the case cannot run here, decided without starting its process (the scenario's own
    `skip_reason`); None when it may run or the parent cannot tell (the case process checks again)."""
    try:
        scenario = SCENARIOS.get(case.scenario)()
        return scenario.skip_reason(scenario.Params.model_validate(case.params_dict), device)
    except Exception:  # the parent cannot decide: the case process will, with the real device
        return None


def run_suite(suite: Suite, cases: list[CaseSpec], opts: RunOptions, ui: RunUI | None = None) -> Path:
    ui = ui or RunUI()
    sweep_stale_tmp()
    for line in startup_restore():  # a power limit a killed run left changed goes back first
        ui.warn(line)
    env = child_env(opts.gpus, opts.extra_env)
    fp = fingerprint(env)
    code = llmbench_info()
    commit, modified = code.get("git_commit"), code.get("git_dirty")  # modified: None = unknown (pinned)
    if opts.device == "cpu":
        fp["gpu"] = {"name": "none (CPU forced)", "slug": cpu_slug(), "count": 0}
    slug = fp["gpu"]["slug"]
    device = parent_device(fp, opts.device)

    existing = latest_result(opts.out_dir, slug, suite.name) if opts.resume else None
    if existing is not None:
        rs = load(existing)
        path = existing
        if rs.env.get("gpu", {}).get("slug") != slug:
            raise RuntimeError(f"{existing} was measured on {rs.gpu_slug}, not {slug}; cannot resume it here")
    else:
        if opts.resume:
            ui.warn(f"nothing to resume for suite {suite.name!r} on {slug}: starting a new run")
        path = fresh_result_path(opts.out_dir, slug, suite.name)
        rs = ResultSet(suite=suite.name, description=suite.description,
                       llmbench={**llmbench_info(), "version": __version__}, env=fp,
                       warnings=environment_warnings(fp), **opts.header)
    rs.finished_at = None
    done = set() if opts.force else {c.id for c in rs.cases if c.status in DONE_STATUSES}
    todo = [c for c in cases if c.id not in done]
    measured: dict[str, MeasuredCase] = {}
    if opts.budget_s is not None:  # the set being resumed, else the newest earlier one (read before saving a new one)
        measured = ok_case_times(rs) if existing is not None else measured_cases(opts.out_dir, slug, suite.name)[0]
    save(rs, path)
    ui.suite_start(suite, todo, path, skipped=len(cases) - len(todo))
    t_start = time.monotonic()
    deferred = 0

    for i, case in enumerate(todo):
        if opts.budget_s is not None:
            needs = case_time(case, measured).seconds
            left = opts.budget_s - (time.monotonic() - t_start)
            if needs > left:  # left out of the result set, so a later --resume runs it
                ui.case_deferred(case, needs, left)
                deferred += 1
                continue
        others = foreign_gpu_processes(opts.gpus) if opts.device != "cpu" else []
        if others:
            msg = (f"{len(others)} other process(es) on the GPU before case {case.id} "
                   f"({', '.join(str(p['pid']) for p in others)}): they share the GPU and falsify timings")
            rs.warnings.append(msg)
            ui.warn(msg)
        ui.case_start(case, i)
        reason = parent_skip_reason(case, device)
        result = skipped_result(case, reason) if reason else run_one(case, env, opts.device, ui)
        result.info["llmbench_commit"] = commit  # a resumed result set can span commits
        result.info["llmbench_tree_modified"] = modified  # tracked files differ from that commit
        if others:
            result.info["other_gpu_processes"] = others
        rs.upsert(result)
        save(rs, path)
        ui.case_done(case, result)
        if result.status == "ok" and result.duration_s:  # guides the quotes of the cases still to come
            measured[case.id] = MeasuredCase(case.scenario, case.params_dict, result.duration_s)

    rs.finished_at = None if deferred else utc_now()  # cases left for --resume: the run is not finished
    save(rs, path)
    ui.suite_done(rs, path)
    return path


def skipped_result(case: CaseSpec, reason: str) -> CaseResult:
    """A case the parent knows cannot run here: recorded `skipped` without starting a process."""
    return CaseResult(id=case.id, scenario=case.scenario, params=case.params_dict, status="skipped", reason=reason,
                      started_at=utc_now(), duration_s=0.0, settings=case.settings.model_dump(),
                      info={"skipped_by": "runner"})


def run_one(case: CaseSpec, env: dict[str, str], device: str, ui: RunUI) -> CaseResult:
    spec: dict[str, Any] = {"scenario": case.scenario, "params": case.params_dict,
            "settings": case.settings.model_dump(), "device": device}
    started = utc_now()
    t0 = time.perf_counter()
    search = None
    if case.params_dict.get("max_batch"):  # the largest batch that fits, then the case measured there
        search = search_max_batch(spec, env, case.settings.timeout_s)
        if search.best is not None:
            spec = {**spec, "params": {**spec["params"], "batch_size": search.best, "max_batch": False}}
    if search is not None and search.best is None:
        first: dict[str, Any] = search.probes[0] if search.probes else {"status": "failed", "reason": search.stopped}
        out = ChildOutcome(str(first["status"]), first["reason"])
    else:
        out = run_case_process(spec, env, case.settings.timeout_s, ui.case_progress)
    payload = out.payload
    if search is not None:
        payload.setdefault("info", {})["max_batch"] = search.info()
    return CaseResult(
        id=case.id, scenario=case.scenario, params=case.params_dict, status=out.status,  # type: ignore[arg-type]
        reason=out.reason, metrics=payload.get("metrics", {}), timer=payload.get("timer"),
        started_at=started, duration_s=round(time.perf_counter() - t0, 3),
        settings=case.settings.model_dump(), info=payload.get("info", {}), traceback=out.traceback,
    )
