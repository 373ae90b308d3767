"""The Scenario base class, its typed parameters, and the context a case runs in."""

from __future__ import annotations

import math
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from pydantic import ConfigDict, model_validator

from llmbench.caseinfo import CaseInfo
from llmbench.engines.base import Engine
from llmbench.errors import UserError
from llmbench.ids import AddedLater
from llmbench.measure import host_speed, progress, quiet
from llmbench.measure.monitors import open_sampler
from llmbench.measure.replica_sync import ReplicaSync
from llmbench.measure.timing import Measurement, StopRule, measure, timer_for
from llmbench.placement import Placement
from llmbench.precision import DeviceInfo
from llmbench.registry import Registry
from llmbench.results import MetricResult
from llmbench.scenarios.reading import Reading


class ScenarioParams(AddedLater):
    """Parameters of one case. Every field is part of the case id (but those `added_later`, at their
    defaults); unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="after")
    def _no_nan(self) -> ScenarioParams:
        """NaN is no setting of anything (it would also become part of the case id); inf stays valid
        where a field takes it (an unbounded request rate)."""
        for name in type(self).model_fields:
            value = getattr(self, name)
            values = value if isinstance(value, (list, tuple)) else [value]
            if any(isinstance(v, float) and math.isnan(v) for v in values):
                raise ValueError(f"{name} is NaN; give a number")
        return self


class Skip(Exception):
    """Raised inside a case that cannot run here; the message is the reason shown to the user."""


E = TypeVar("E", bound=Engine)


class Closable(Protocol):
    def close(self) -> None: ...


class SharedSessions:
    """The sessions the cases of one share group keep for the next case in the same process (a suite's
    `share_engines`; harness/worker.py): a scenario that declares a `share_key` looks its key up
    before it loads, and keeps what it loaded. Each kept session notes the case that loaded it.
    `close_all` ends them when the group ends (or fails)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[Closable, str]] = {}

    def get(self, key: str) -> tuple[Any, str] | None:
        """The session kept under `key` and the id of the case that loaded it; None: none yet."""
        return self._kept.get(key)

    def keep(self, key: str, session: Closable, loaded_by: str) -> None:
        self._kept[key] = (session, loaded_by)

    def close_all(self) -> None:
        kept, self._kept = list(self._kept.values()), {}
        for session, _ in kept:
            session.close()


class CaseContext:
    """What a running case can use: its device, the stop rule, a timer, monitors, a place to put
    metrics, and the engine the case names (built by the case process, see Scenario.engine_slot).
    Timing code lives here once, not in each scenario."""

    def __init__(self, device: DeviceInfo, rule: StopRule, emit_progress: bool = True,
                 engine: Engine | None = None, shared: SharedSessions | None = None, case_id: str = "",
                 replica: ReplicaSync | None = None) -> None:
        self.device = device
        self.replica = replica  # a replica of a case: its timed window starts with the others' (ReplicaSync)
        self.shared = shared  # a share group's sessions (None: the case runs alone, loads and closes its own)
        self.case_id = case_id
        self._engine = engine
        self.rule = rule
        self.timer = timer_for(device.kind)
        self.metrics: dict[str, MetricResult] = {}
        self.info: dict[str, Any] = {}
        # what actually ran (CaseResult.code_path): facts that, if they differ, make two figures
        # measurements of different code rather than of different machines
        self.code_path: dict[str, Any] = {}
        self._host_probe = host_speed.HostProbe()  # the measuring core's speed around each timed window
        self._emit = emit_progress

    def engine(self, interface: type[E]) -> E:
        """The engine handed to this case, as the interface the scenario declared it needs."""
        if not isinstance(self._engine, interface):
            raise RuntimeError(f"this case was handed no {interface.kind} (it has {self._engine!r}): "
                               "the scenario declares one with engine_slot")
        return self._engine

    # -- progress -----------------------------------------------------------------------------
    def progress(self, fraction: float, text: str = "") -> None:
        """Tell the parent how far this case is (0..1); it drives the per-case progress bar."""
        if self._emit:
            progress.emit(fraction, text)

    # -- timing -------------------------------------------------------------------------------
    def sync(self) -> None:
        self.timer.sync()

    def measure(self, fn: Callable[[], Any], rule: StopRule | None = None, monitor: bool = True,
                host_probe: bool = True) -> Measurement:
        """Warm up and time `fn` under the stop rule; NVML monitors watch the timed window. A replica's
        timed window opens when every replica is ready for its own (after warm-up), and it notes when it
        was ready and its window's wall-clock start and end. `host_probe=False` where the work's host side
        runs in another process (vLLM's engine core): this thread's core says nothing of that one's speed."""
        sampler = open_sampler(self.device.kind) if monitor else None
        window: list[float] = []

        def start() -> None:
            quiet.timed(self.info, self.progress)  # beside other cases: none of them sets up while it times
            if self.replica is not None:
                self.info["replica_ready_unix"] = self.replica.wait_for_all(self.progress)
            window.append(time.time())
            if sampler:
                sampler.start()

        def end() -> dict[str, Any]:
            window.append(time.time())
            return sampler.stop() if sampler else {}

        m = measure(fn, rule or self.rule, self.timer, progress=self.progress, on_window_start=start,
                    on_window_end=end, between_rounds=self.probe_host if host_probe else None)
        self.info["calls_per_sample"] = m.inner
        self.note_window(*window)
        return m

    def probe_host(self, force: bool = False) -> None:
        """Time the host-speed probe now, at most every PROBE_EVERY_S unless `force` (measure/host_speed.py);
        call it only outside any timed sample. Every probe of the case, in order: `info.host_probe_us`."""
        self._host_probe.take(force)
        self.info[host_speed.INFO_KEY] = self._host_probe.us

    def note_window(self, start: float, end: float) -> None:
        """A timed window's wall-clock start and end (`info.windows_unix`): what ran beside it, and when."""
        self.info.setdefault("windows_unix", []).append([round(start, 3), round(end, 3)])

    def reset_peak_memory(self) -> None:
        if self.device.is_cuda:
            import torch

            torch.cuda.reset_peak_memory_stats()

    # -- metrics ------------------------------------------------------------------------------
    def record(self, name: str, samples: list[float], flags: list[str] | None = None) -> None:
        self.metrics[name] = MetricResult.from_samples(name, samples, flags)

    def record_value(self, name: str, value: float, flags: list[str] | None = None) -> None:
        self.metrics[name] = MetricResult.single(name, value, flags)

    def record_monitors(
        self, m: Measurement, *, units_per_iter: float | None = None, energy_metric: str | None = None,
        torch_memory: bool = True,
    ) -> None:
        """Peak memory (torch), and the NVML readings of the timed window. With `units_per_iter`
        (tokens, samples) and `energy_metric`, energy per unit is recorded too. `torch_memory=False`
        where the work ran in another process (vLLM's engine core): this process's torch peak would be
        a figure of nothing; the device's memory in use (NVML) is still recorded."""
        if self.device.is_cuda and torch_memory:
            import torch

            self.record_value("peak_memory_gib", torch.cuda.max_memory_allocated() / 2**30)
            self.record_value("peak_reserved_gib", torch.cuda.max_memory_reserved() / 2**30)
        r = m.readings
        if "energy_j" in r:
            flags = [] if r.get("energy_trusted") else [
                f"energy window {r['window_s']:.2f}s is under 1s: the NVML counter updates about every"
                " 100 ms, so this reading is not trusted"
            ]
            self.record_value("energy_j", r["energy_j"], flags)
            if r.get("avg_power_w") is not None:
                self.record_value("avg_power_w", r["avg_power_w"], flags)
            if units_per_iter and energy_metric and m.iters:
                self.record_value(energy_metric, r["energy_j"] / (units_per_iter * m.iters), flags)
        for key, name in (("sm_clock_mhz", "sm_clock_mhz"), ("gpu_util_pct", "gpu_util_pct")):
            if r.get(key):
                self.record(name, r[key])
        if r.get("mem_used_gib"):
            self.record_value("device_memory_used_gib", max(r["mem_used_gib"]))


@dataclass(frozen=True)
class BatchSearch:
    """A scenario whose cases may ask the runner for the largest batch that fits: `flag` is the bool
    param that asks, `axis` the int param searched (from the case's value up)."""

    axis: str
    flag: str

    def wanted(self, params: dict[str, Any]) -> bool:
        return bool(params.get(self.flag))

    def at(self, params: dict[str, Any], batch: int) -> dict[str, Any]:
        """The params of one probe or measurement: `batch` on the axis, the search off."""
        return {**params, self.axis: batch, self.flag: False}


@dataclass(frozen=True)
class RankEntry:
    """The function each rank of a `RankScenario`'s case calls: `module.function(spec)`, returning a
    JSON-able dict (its output to the case). The module is imported in every rank: nothing heavy at import."""

    module: str
    function: str

    @property
    def target(self) -> str:
        return f"{self.module}:{self.function}"


@dataclass(frozen=True)
class RankRun:
    """One launch of a case's ranks: `nproc` processes (one per GPU of the case's placement, CPU
    processes over gloo on a CPU), each calling the rank entry with `spec`, over `nnodes` nodes; `name`
    is the key its outputs have in what `collect` is handed."""

    name: str
    nproc: int
    spec: dict[str, Any]
    nnodes: int = 1  # the nodes its ranks span (nproc / nnodes on each; torchrun's c10d rendezvous)


@dataclass(frozen=True)
class WorkerSettings:
    """What the case process sets around a case and restores after it, whatever its end."""

    power_limit_w: float | None = None  # the GPU's power limit (needs root); None: left as it is


@dataclass(frozen=True)
class EngineSlot:
    """A scenario whose cases run on an engine: the interface it needs (InferenceEngine,
    TrainingEngine, ServedEngine) and the engine a case that names none runs on (None: a case must name
    one). The case's `[engine]` table names it; the case process builds it and hands it over in the
    CaseContext. `named_by`: params of old suite files that named an engine by holding its main option
    (serving's `server` the `command` engine, `url` the `url` engine; the option has the engine's name)."""

    interface: type[Engine]
    default: str | None = None
    named_by: dict[str, str] = field(default_factory=dict)


SweepPoint = tuple[int, float, float | None]  # (batch, speed, GPU busy fraction or None)


@dataclass(frozen=True)
class Charts:
    """What the report charts a scenario's cases against: params that make a numeric x axis, most telling
    first; metrics charted against a param of their own (generate: ttft_ms against input_len); the param a
    power-limit sweep varies (analysis/power.py); the param whose training runs the loss-curve chart sets
    side by side (fp8 recipes, QLoRA methods)."""

    sweep_axes: tuple[str, ...] = ()
    metric_axes: dict[str, str] = field(default_factory=dict)
    power_limit_param: str | None = None
    loss_curve_series: str | None = None


@dataclass(frozen=True)
class BottleneckSweep:
    """A scenario whose cases form batch sweeps with a bottleneck answer (the batch from which the GPU,
    not the host, bounds the work): the report finds, tables and charts them from this alone."""

    axis: str  # the param swept
    speed: str  # the metric plotted against it (higher is better)
    busy_threshold: float  # the GPU-busy fraction from which the GPU bounds (a chart's line)
    answer: Callable[[Sequence[SweepPoint]], dict[str, Any]]  # points -> {"batch": int | None, "rule": str}


P = TypeVar("P", bound=ScenarioParams)  # a scenario's params: its hooks take them typed


# the hooks that moved from Scenario to its Reading (scenarios/reading.py)
READING_HOOKS = frozenset({"bound", "compute_precision", "projection_skip", "measures_host", "capacity_load",
                           "projected_composites"})


class Scenario(ABC, Generic[P]):
    """How to run one kind of benchmark. Subclasses set `Params`, and implement `run`.

    `skip_reason` says, before anything heavy happens, why a case cannot run on this device
    (capability, missing package); `estimate_s` feeds `--dry-run`'s time estimate.

    What the harness and the report do for some scenarios only, a scenario declares here and they read
    generically (never a scenario's name or its params' names): `gpus_needed`, `rank_entry`,
    `max_batch_search`, `worker_settings`, `server_scope`, `share_key`, `host_exclusive`, `bottleneck_sweep`,
    `capacity_load` (what a capacity search ran under: "At the SLO"),
    and the engine a case runs on (`engine_slot`: the instance of a case holds its engine and placement, and the case
    process hands the engine over in the CaseContext)."""

    name: ClassVar[str]
    Params: ClassVar[type[ScenarioParams]]
    description: ClassVar[str] = ""
    headline: ClassVar[tuple[str, ...]] = ()  # metrics shown in summaries, most important first
    # how analysis reads its recorded cases (scenarios/reading.py): which ceiling binds each metric, so
    # `llmbench project` scales it to another GPU without knowing the scenario, what measures the host, ...
    reading: ClassVar[Reading[Any]] = Reading()
    max_batch_search: ClassVar[BatchSearch | None] = None  # the runner's largest-batch search, where offered
    bottleneck_sweep: ClassVar[BottleneckSweep | None] = None  # batch sweeps the report answers, where any
    engine_slot: ClassVar[EngineSlot | None] = None  # the engine a case runs on, where it runs on one
    Info: ClassVar[type[CaseInfo]] = CaseInfo  # the typed part of its cases' info (caseinfo.py), checked on write
    charts: ClassVar[Charts] = Charts()  # what the report charts its cases against (report/charts.py)
    default_placement: ClassVar[Placement] = Placement.model_validate({})  # the GPUs of a case that gives no placement
    # the param that held a case's GPU count before placement was a field of its own (ddp `gpus`, serving
    # `n_gpus`): the record (and so the id) keeps it under that name
    gpus_param: ClassVar[str | None] = None
    # its cases may run as `placement.replicas` copies at once, one per GPU slice, their metrics combined
    # (harness/launchers/replicas.py): a scenario whose case is one self-contained process
    replicable: ClassVar[bool] = False
    # its ranks may span `placement.nodes` nodes (a RankScenario); another scenario's case refuses nodes > 1,
    # which would enter its id and mean nothing
    spans_nodes: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        moved = sorted(READING_HOOKS & set(cls.__dict__))
        if moved:  # a plugin's hook the harness would no longer call: a wrong projection, never a silent one
            raise TypeError(f"{cls.__name__} defines {', '.join(moved)}: these are a Reading's now; subclass "
                            "llmbench.scenarios.reading.Reading with them and declare reading = YourReading()")
        if "bounds" in cls.__dict__:  # a plugin's bounds, declared before they were the reading's
            warnings.warn(f"{cls.__name__}.bounds: declare reading = Reading({{...}}) (llmbench.scenarios.reading)",
                          DeprecationWarning, stacklevel=2)
            cls.reading = Reading(cls.__dict__["bounds"])

    def __init__(self, engine: Engine | None = None, placement: Placement | None = None) -> None:
        self.engine = engine  # the case's engine (built from its [engine] table), None for a scenario of none
        self.placement = placement or self.default_placement
        if self.placement.nodes > 1 and not self.spans_nodes:
            spanning = ", ".join(name for name, cls in SCENARIOS if cls.spans_nodes)
            named = getattr(self, "name", type(self).__name__)
            raise UserError(f"placement nodes = {self.placement.nodes}: scenario {named!r} runs in one process, on "
                            f"one node; only a scenario that runs as ranks spans nodes ({spanning}): leave nodes out")

    def complete(self, params: P) -> Any:
        """The params of a case as its engine completes them (serving: the precision a served engine
        runs); the params as they are by default."""
        return params

    def share_key(self, params: P, device: DeviceInfo) -> str | None:
        """What a case loads that the next cases of the same key could run on in the same process,
        as text (a suite's `share_engines`: the runner runs cases of one key as a group, and the
        scenario reuses ctx.shared); None, the default: nothing to share, the case runs alone."""
        return None

    def worker_settings(self, params: P) -> WorkerSettings:
        """What the case process sets around the case (and restores): nothing by default."""
        return WorkerSettings()

    def server_scope(self, params: P) -> Literal["case", "suite"]:
        """"suite": the case keeps the server it starts for the suite's next cases (the runner gives
        serial runs a shared-server folder and warns that --parallel does not); "case": nothing kept."""
        return "case"

    def skip_reason(self, params: P, device: DeviceInfo) -> str | None:
        return None

    def host_exclusive(self, params: P) -> str | None:
        """Why a case must run with nothing beside it on the host under --parallel: it loads what the
        slots share (PCIe, the host's memory bandwidth) or its figure is the host's own speed; None: it may
        share the host. CPU time is not shared: each slot's processes are bound to cores of their own
        (hardware/cpus.py), so a case that compiles runs beside others."""
        return None

    def estimate_s(self, params: P, rule: StopRule) -> float:
        return rule.min_seconds + 2.0

    def serves_elsewhere(self) -> bool:
        """Whether the case measures a server it did not start (one already running at a URL): the
        processes the runner finds on the GPU are then that server's, recorded but not warned about."""
        return False

    @abstractmethod
    def run(self, params: P, ctx: CaseContext) -> None:
        """Run the case, recording metrics on ctx. Raise Skip for a case that cannot run here."""


SCENARIOS: Registry[Scenario[Any]] = Registry("scenario", "llmbench.scenarios")


class RankScenario(Scenario[P]):
    """A scenario whose case runs its work as ranks (one process per GPU): it declares the function each
    rank calls (`rank_entry`), the launches a case makes (`rank_runs`) and how their outputs become
    metrics (`collect`); the case process starts each launch through the harness's torchrun launcher
    (harness/launchers/torchrun.py) and hands the outputs over. It starts no process itself. A launch
    that fails (a rank that dies, runs out of memory, or hangs past the case's timeout) ends the case
    with that status and reason; `collect` is then not called."""

    rank_entry: ClassVar[RankEntry]
    spans_nodes = True

    @abstractmethod
    def rank_runs(self, params: P, ctx: CaseContext) -> list[RankRun]:
        """The case's launches, in order (e.g. N ranks, then one for a one-GPU baseline)."""

    @abstractmethod
    def collect(self, params: P, ctx: CaseContext, outputs: dict[str, list[dict[str, Any]]]) -> None:
        """Record the case's metrics from its launches' outputs: RankRun.name -> the ranks' dicts, rank 0 first."""

    def run(self, params: P, ctx: CaseContext) -> None:
        raise RuntimeError(f"{type(self).__name__} runs as ranks: the case process launches its rank_runs "
                           "(harness/launchers/torchrun.run_rank_case), not run()")
