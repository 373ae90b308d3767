"""The Ray launcher (`ray`): each case a Ray task on the node Ray picks, the case still in its own process
there (the task's body is the local launcher's), so isolation, timeouts and the worker entry point are
as in a local run. Resources, streaming, faults and the forwarded environment: docs/design.md, "A
cluster: the Ray launcher"."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import Field

from llmbench.hardware.topology import MULTICAST_OFF_ENV, multicast_off
from llmbench.harness.isolation import (
    RUNNER_PID_ENV,
    ChildOutcome,
    child_env,
    fingerprint,
    run_case_process,
    run_group_process,
)
from llmbench.harness.launchers.base import LAUNCHERS, Launcher, LauncherOptions, ProgressFn, node_record, with_node
from llmbench.harness.launchers.ray_cluster import NodeKind, cluster_kinds, ray_session
from llmbench.serving.server import CASE_TOKEN_ENV, SHARED_ENV

WAIT_STEP_S = 0.5  # how often the driver looks whether a task said something (an interrupt lands between)
START_MARGIN_S = 60.0  # past a started case's timeout: its outcome's way back, then the task is cancelled
FORWARD_PREFIX = "LLMBENCH_"
NOT_FORWARDED = (SHARED_ENV, CASE_TOKEN_ENV, RUNNER_PID_ENV)  # the driver's own: a task's case sets its own


def forwarded_env(env: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """What reaches every task's environment: the multicast variables as a local case process gets them
    (the machine's values, else the off values), the driver's LLMBENCH_* settings and the run's `extra`
    (--env, ceilings)."""
    out = {k: v for k, v in env.items() if k.startswith(FORWARD_PREFIX) and k not in NOT_FORWARDED}
    off = multicast_off(env)
    out.update({k: off[k] for k in MULTICAST_OFF_ENV if k in off})
    out.update(extra)
    return out


class RayOptions(LauncherOptions):
    address: str | None = None  # HOST:PORT, ray://HOST:PORT, auto (docs/usage.md); None: RAY_ADDRESS or a local one
    nodes: int | None = Field(None, ge=1)  # wait until this many nodes joined (None: LLMBENCH_RAY_NODES, else none)


@LAUNCHERS.register("ray")
class RayLauncher(Launcher):
    """Runs each case (or share group) as one Ray task of the cluster `ray.init` connected to, pinned
    to the GPU type `kind`; the case's process runs inside the task, on the node Ray picked."""

    Options = RayOptions
    description = "each case a Ray task on the node Ray picks, a result set per GPU type (pip install 'llmbench[ray]')"

    @classmethod
    def refusal(cls, options: RayOptions, gpus: str | None, repeat: int, parallel: bool) -> str | None:
        if gpus is not None:
            return ("Ray gives each case its GPUs; leave --gpus out (a head owns the GPUs it was started with: "
                    "`ray start --head --num-gpus N`, CUDA_VISIBLE_DEVICES)")
        if parallel:
            return "--parallel is not built yet: Ray runs the cases one after another, each on the node it picks"
        return "--repeat is not supported; run the command N times, or --repeat locally" if repeat > 1 else None

    @classmethod
    @contextlib.contextmanager
    def opened(cls, options: RayOptions, cpu: bool, extra_env: dict[str, str]) -> Iterator[list[Launcher]]:
        """A launcher per GPU type of the cluster, connected for the run (a local cluster it started stops with it)."""
        with ray_session(options.address) as ray:
            yield [cls(kind, extra_env) for kind in cluster_kinds(ray, cpu, options.nodes)]

    def __init__(self, kind: NodeKind, extra_env: dict[str, str] | None = None) -> None:
        self.kind = kind
        self.extra_env = dict(extra_env or {})
        self._live: dict[int, Any] = {}  # running tasks (their ObjectRefGenerators), by id
        self._lock = threading.Lock()

    def options(self, placement: dict[str, Any] | None, env: dict[str, str]) -> dict[str, Any]:
        """The task's resources and environment, from the case's placement."""
        gpus = int((placement or {}).get("gpus", 1)) if self.kind.gpus_per_node else 0
        exclusive = bool((placement or {}).get("exclusive"))
        return {"num_gpus": gpus, "num_cpus": self.kind.cpus_per_node if exclusive else 1,
                "resources": self.kind.resources(), "max_retries": 0, "retry_exceptions": False,
                "runtime_env": {"env_vars": forwarded_env(env, self.extra_env)}}

    def unplaceable(self, placement: dict[str, Any] | None) -> str | None:
        """Why no node of the kind can take the case (a skip reason); None when one can."""
        need = int((placement or {}).get("gpus", 1))
        if self.kind.gpus_per_node and need > self.kind.gpus_per_node:
            return (f"the case needs {need} GPUs on one node; the Ray cluster's {self.kind.accelerator or 'GPU'} "
                    f"nodes have at most {self.kind.gpus_per_node}")
        return None

    def run(self, spec: dict[str, Any], env: dict[str, str], timeout_s: float,
            on_progress: ProgressFn | None = None) -> ChildOutcome:
        outcomes: list[ChildOutcome] = []
        self._task("case", [spec], env, timeout_s, lambda i, o: outcomes.append(o), on_progress)
        return outcomes[0]

    def run_group(self, specs: list[dict[str, Any]], env: dict[str, str],
                  on_outcome: Callable[[int, ChildOutcome], None],
                  on_progress: ProgressFn | None = None,
                  on_warn: Callable[[str], None] | None = None) -> list[ChildOutcome]:
        """A share group in one task (its one process on one node), each outcome handed on as it comes."""
        outcomes: list[ChildOutcome] = []

        def done(i: int, out: ChildOutcome) -> None:
            outcomes.append(out)
            on_outcome(i, out)

        timeout = sum(float(s.get("settings", {}).get("timeout_s") or 600.0) for s in specs)
        self._task("group", specs, env, timeout, done, on_progress, on_warn)
        return outcomes

    def fingerprint(self, env: dict[str, str]) -> dict[str, Any]:
        """The fingerprint taken on a node of the kind, in a case process there (as a case sees it)."""
        import ray

        ref = _remote().options(**{**self.options({"gpus": self.kind.gpus_per_node or 1}, env),
                                   "num_returns": 1}).remote("fingerprint", [], 180.0)
        try:
            return dict(ray.get(ref))
        except BaseException:
            ray.cancel(ref, force=True)
            raise

    def stop_all(self) -> None:
        """Cancel every running task (force: its Ray worker is killed, the case process then stops itself)."""
        import ray

        with self._lock:
            live = list(self._live.values())
        for gen in live:
            _cancel(ray, gen)

    def _task(self, what: str, specs: list[dict[str, Any]], env: dict[str, str], timeout_s: float,
              on_outcome: Callable[[int, ChildOutcome], None], on_progress: ProgressFn | None,
              on_warn: Callable[[str], None] | None = None) -> None:
        """Submit one task and hand on what it yields until it ends; whatever ends it, each case that got
        no outcome from it gets one saying why (a lost worker or node, a task past its margin)."""
        import ray

        placement = specs[0].get("placement")
        reason = self.unplaceable(placement)
        if reason is not None:
            on_outcome(0, ChildOutcome("skipped", reason))
            return
        gen = _remote().options(**self.options(placement, env)).remote(what, specs, timeout_s)
        with self._lock:
            self._live[id(gen)] = gen
        got, deadline, t0 = 0, None, time.perf_counter()
        where: dict[str, Any] = {}
        try:
            while True:
                ready, _ = ray.wait([gen], timeout=WAIT_STEP_S)
                if not ready:
                    if deadline is not None and time.monotonic() > deadline:
                        _cancel(ray, gen)
                        lost = ChildOutcome("timeout", f"the Ray task did not return within {START_MARGIN_S:g}s "
                                            f"past the case's timeout of {timeout_s:g}s and was cancelled",
                                            duration_s=time.perf_counter() - t0)
                        _noted(lost, where)
                        on_outcome(got, lost)
                        return
                    continue
                try:
                    kind, item = ray.get(next(gen))
                except StopIteration:
                    return
                except ray.exceptions.RayError as e:
                    out = ChildOutcome("failed", lost_reason(e), traceback=str(e)[-3000:] or None,
                                       duration_s=time.perf_counter() - t0)
                    _noted(out, where)
                    on_outcome(got, out)
                    return
                if kind == "node":
                    where, deadline = item, time.monotonic() + timeout_s + START_MARGIN_S
                elif kind == "progress" and on_progress is not None:
                    on_progress(*item)
                elif kind == "warn" and on_warn is not None:
                    on_warn(item)
                elif kind == "outcome":
                    index, out = item
                    _noted(out, where)
                    on_outcome(index, out)
                    got = index + 1
        except BaseException:  # an interrupt: the task (its worker, and so its case process) goes first
            _cancel(ray, gen)
            raise
        finally:
            with self._lock:
                self._live.pop(id(gen), None)


def lost_reason(e: BaseException) -> str:
    """A case's reason when Ray lost its task: what Ray said, on one line."""
    first = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
    return f"the Ray task running the case was lost ({type(e).__name__}): {first}"[:500]


def _noted(out: ChildOutcome, where: dict[str, Any]) -> None:
    """Where the case ran, in its info: the node, and as `gpus` the GPUs Ray gave the task."""
    if where.get("gpus"):
        out.payload.setdefault("info", {})["gpus"] = where["gpus"]
    with_node(out, where)


def _cancel(ray: Any, gen: Any) -> None:
    with contextlib.suppress(ValueError, TypeError, ray.exceptions.RayError):  # ended meanwhile
        ray.cancel(gen, force=True)


_REMOTE: Any = None


def _remote() -> Any:
    """The task, made a Ray remote function on first use (Ray imported only then)."""
    global _REMOTE
    if _REMOTE is None:
        import ray

        _REMOTE = ray.remote(num_returns="streaming")(case_task)
    return _REMOTE


def case_task(what: str, specs: list[dict[str, Any]], timeout_s: float) -> Iterator[Any]:
    """The task's body, on the node: where it runs (`node`), then the case process's progress lines and
    outcomes as they come (`what`: a `case`, a share `group`), or the node's fingerprint. The case
    process's environment is the task's (what `runtime_env` forwarded, the GPUs Ray gave it)."""
    env = child_env(None)
    if what == "fingerprint":
        yield fingerprint(env, timeout_s)
        return
    import ray

    yield ("node", node_record(env, ray.get_runtime_context().get_node_id()))
    events: queue.Queue[tuple[str, Any]] = queue.Queue()

    def progress(fraction: float, text: str) -> None:
        events.put(("progress", (fraction, text)))

    def work() -> None:
        try:
            if what == "group":
                run_group_process(specs, env, lambda i, o: events.put(("outcome", (i, o))), progress,
                                  lambda text: events.put(("warn", text)))
            else:
                events.put(("outcome", (0, run_case_process(specs[0], env, timeout_s, progress))))
        finally:
            events.put(("end", None))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    while True:
        kind, item = events.get()
        if kind == "end":
            break
        yield (kind, item)
    worker.join()
