"""The typed part of a case's `info`: the entries that code other than their writer reads, declared once as
pydantic models, versioned by `info_version`. docs/design.md, "A case's info"."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from typing_extensions import Self

INFO_VERSION = 1


class InfoModel(BaseModel):
    """An info model: unknown entries are kept (the info is also for people), declared ones are typed."""

    model_config = ConfigDict(extra="allow", frozen=True)

    @classmethod
    def of(cls, info: Any) -> Self:
        """The typed view of a case's info (of any version); an entry of the wrong type reads as absent
        (its set warned about it when read), so no reader stops at a hand-edited set."""
        data = info if isinstance(info, dict) else {}
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            bad = {err["loc"][0] for err in e.errors() if err["loc"]}
            return cls.model_validate({k: v for k, v in data.items() if k not in bad})


class MaxBatchInfo(InfoModel):
    """The harness's search for the largest batch that fits (harness/max_batch.py)."""

    batch_size: int | None = None  # the largest batch that ran ok
    probes: list[dict[str, Any]] = Field(default_factory=list)  # each probe: its batch and status
    stopped: str | None = None  # why the search stopped early, where it did
    resumed: int | None = None  # probes replayed from an earlier run's log
    not_reused: list[Any] | None = None


class ShareGroupInfo(InfoModel):
    """A case of a share group: cases that run on one loaded engine session in one process (a suite's
    `share_engines`, harness/runner.py). `index` 0 started the process and loaded the session; the
    others' times leave that out. A case that ran alone because the group stopped before it says why."""

    cases: list[str] = Field(default_factory=list)  # the group's case ids, in the order they were to run
    index: int = 0  # this case's place among them
    ran: str = "in group"  # "in group", or "alone" (after the group stopped)
    stopped: str | None = None  # alone: which case of the group ended how


class NodeInfo(InfoModel):
    """Where a case's process ran, as every launcher records it (harness/launchers/base.node_record); what
    ran there is the set's fingerprint (`env`). Sets before it: Ray's cases only, `ray_node_id` for `id`."""

    hostname: str | None = None
    gpus: str | None = None  # the CUDA_VISIBLE_DEVICES its process got there (None: every GPU of the host)
    id: str | None = None  # the cluster's id of the node (Ray's node id); None: a machine of no cluster


class ReplicasInfo(InfoModel):
    """A case run as copies side by side (placement.replicas, harness/launchers/replicas.py)."""

    count: int = 1  # the copies
    gpus: list[str | None] | None = None  # each copy's CUDA_VISIBLE_DEVICES
    overlap: float | None = None  # the time all timed windows were open together / their whole span
    windows_unix: list[list[float]] = Field(default_factory=list)  # each copy's: ready, window start, end
    metrics: dict[str, list[float]] = Field(default_factory=dict)  # each copy's value of each metric


class AttemptInfo(InfoModel):
    """One start of a case's process, where it took two (harness/runner.run_restarting): the first died in
    its start-up, before its first timed window, without a result."""

    status: str  # how the start ended
    reason: str | None = None
    seconds: float | None = None  # from its start to its end
    restarted: str | None = None  # why the case was started again after it; None on the last
    stderr_tail: str | None = None  # what the start that died wrote last


class CaseInfo(InfoModel):
    """What the harness notes in every case (harness/runner.py)."""

    info_version: int = 0  # 0: written before info was typed
    llmbench_commit: str | None = None  # the commit the case ran (a resumed set can span commits)
    llmbench_tree_modified: bool | None = None  # tracked files differed from that commit
    gpus: str | None = None  # the CUDA_VISIBLE_DEVICES the case process was given
    launcher: str | None = None  # what ran its work: "local" (its process), "torchrun" (ranks), "ray" (a Ray task's
    # process), "replicas" (copies side by side); None: local (old sets)
    node: NodeInfo | None = None  # where its process ran (every launcher's); None: sets before it, a runner skip
    ran_beside_cases: bool | None = None  # other cases ran at the same time (run --parallel on several slots)
    ran_alone: str | None = None  # under --parallel, why nothing ran beside it (host-exclusive: harness/schedule.py)
    cpus: str | None = None  # beside other cases, the host CPUs its processes were bound to (hardware/cpus.py)
    windows_unix: list[list[float]] | None = None  # each timed window's wall-clock [start, end] (CaseContext.measure)
    host_probe_us: list[float] | None = None  # the measuring thread's core speed around its timed windows: CPU us
    # of a fixed pure-Python loop before each window, between rounds (at most every 0.25 s), after (measure/host_speed)
    quiet_wait_s: float | None = None  # beside other cases, seconds it waited for their set-up or timed part to end
    # before its own (measure/quiet.py)
    quiet_phases_unix: list[list[Any]] | None = None  # beside other cases, each phase it entered: [phase, asked at,
    # entered at] (wall-clock; measure/quiet.py)
    other_gpu_processes: list[Any] | None = None  # other processes on its GPUs when it started
    max_batch: MaxBatchInfo | None = None
    share_group: ShareGroupInfo | None = None
    replicas: ReplicasInfo | None = None
    skipped_by: str | None = None  # "runner": skipped without starting its process (harness/plan.RUNNER_SKIP)
    attempts: list[AttemptInfo] | None = None  # both starts of a case whose first died in its start-up


class Timeline(InfoModel):
    """Per-interval readings of a sustained load, equal lengths (t_s: each interval's end)."""

    t_s: list[float] = Field(default_factory=list)
    tflops: list[float] = Field(default_factory=list)
    sm_clock_mhz: list[float] = Field(default_factory=list)
    power_w: list[float] = Field(default_factory=list)
    temp_c: list[float] = Field(default_factory=list)
    reasons: list[Any] = Field(default_factory=list)  # NVML's clock-event reasons per interval


class TimelineInfo(CaseInfo):
    """A case that runs a load for a while and records it over time."""

    timeline: Timeline | None = None
    throttled: bool | None = None  # a throttle reason or a falling clock was seen


class CapacitySearch(InfoModel):
    """A capacity search's answer and curve (scenarios/serving_search.py): the axis, the SLO, one estimate
    per refinement, and every point measured (load, repeat, phase, met, output_tokens_per_s, ...)."""

    axis: str | None = None  # "concurrency" or "rate"
    slo: str | None = None  # the limits as text
    limits: dict[str, float] = Field(default_factory=dict)  # each limit's name and ms
    estimates: list[float] = Field(default_factory=list)
    interval: dict[str, Any] | None = None
    bound: str | None = None  # where the answer is a bound, not a boundary
    metrics_at: float | None = None  # the load of the highest point that met the SLO (the case's metrics)
    points: list[dict[str, Any]] = Field(default_factory=list)


class RequestRateInfo(CaseInfo):
    """A load point of a serving benchmark: the rate asked for (a number, or 'inf' for all at once); a
    search's answer and curve (`capacity`)."""

    asked_request_rate_per_s: float | str | None = None
    served_by: str | None = None  # who serves the model, as the server's model card says ("vllm", "sglang")
    capacity: CapacitySearch | None = None


class StepInfo(CaseInfo):
    """A generation's step, split (scenarios/generate.py): its roofline bounds and the GPU-busy time per
    decode step (the rest of a step is host time); analysis/parts.py projects each part by its own ratio."""

    decode_step_bound_ms: float | None = None
    decode_bound_by: str | None = None  # "memory" or "compute"
    bandwidth_tb_s: float | None = None  # the bandwidth the bounds were computed at (a measured ceiling, or the spec)
    prefill_bound_ms: float | None = None
    gpu_busy_ms_per_step: float | None = None


class LossCurveInfo(CaseInfo):
    """A training case's loss at every step, in order (scenarios/training.py), and for fp8_train its bf16
    baseline's on the same batches; the spikes found by llmbench.measure.loss_curve's rule."""

    loss_curve: list[float] | None = None
    bf16_loss_curve: list[float] | None = None
    loss_spike_steps: list[int] | None = None  # 0-based steps
    bf16_loss_spike_steps: list[int] | None = None


class PublishedMatch(InfoModel):
    """How a published figure matches an llmbench case (references/)."""

    workload: str | None = None  # the headline workload it informs
    quality: str | None = None
    quote: str | None = None  # the source's own words or cell
    conditions: dict[str, Any] = Field(default_factory=dict)
    differences: list[Any] = Field(default_factory=list)
    grade: str | None = None  # controlled: the source measured every GPU with one model, software and settings
    grade_note: str | None = None  # why the grade


class PublishedInfo(CaseInfo):
    """A case of a published reference set."""

    match: PublishedMatch | None = None


def _models(model: type[CaseInfo] = CaseInfo) -> list[type[CaseInfo]]:
    """CaseInfo and every model derived from it (a scenario's own, a plugin's): what an entry may be read as."""
    return [model, *(m for sub in model.__subclasses__() for m in _models(sub))]


def info_problems(info: Any) -> list[str]:
    """What of a case's info a reader cannot read as its model types it, one line each (the entry, what is
    wrong, what it holds): an entry of the wrong type, an info_version newer than INFO_VERSION."""
    if not isinstance(info, dict):
        return [f"info is a JSON {type(info).__name__}, not an object: read as empty"]
    found: dict[str, str] = {}
    for model in _models():
        try:
            model.model_validate(info)
        except ValidationError as e:
            for err in e.errors():
                entry = ".".join(str(p) for p in err["loc"])
                found.setdefault(str(err["loc"][0]) if err["loc"] else "", f"info.{entry}: {err['msg']} "
                                 f"(got {err.get('input')!r:.60}): read as absent")
    version = info.get("info_version")
    if isinstance(version, int) and version > INFO_VERSION:
        found["info_version"] = (f"info_version {version} is newer than this llmbench reads ({INFO_VERSION}): its "
                                 "entries are read as far as they fit; update llmbench to read them all")
    return list(found.values())
