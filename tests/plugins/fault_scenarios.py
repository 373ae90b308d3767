"""Scenarios that misbehave on purpose, loaded into case processes with LLMBENCH_PLUGINS to prove that
the harness turns each misbehaviour into a status and the suite goes on."""

from __future__ import annotations

import ctypes
import os
import subprocess
import time
from typing import Any, Literal

from llmbench.hardware.topology import MULTICAST_OFF_ENV
from llmbench.measure import quiet
from llmbench.placement import Placement
from llmbench.scenarios.base import (
    SCENARIOS,
    BatchSearch,
    CaseContext,
    RankEntry,
    RankRun,
    RankScenario,
    Scenario,
    ScenarioParams,
    Skip,
)


class FaultParams(ScenarioParams):
    kind: Literal["ok", "raise", "segfault", "exit", "hang", "oom", "skip", "sleep", "env", "cpu_alloc", "exit_once",
                  "exit_timed"] = "ok"
    seconds: float = 0.0
    flag: str = ""  # exit_once: the file whose absence makes this start exit in its start-up (it is made then)
    detach_child: bool = False  # first start a child in a session of its own, left running


def _note_pid(suffix: str, pid: int, text: str = "") -> None:
    """<pid><suffix> in $LLMBENCH_TEST_PID_DIR: lets a test find a process and check it is gone."""
    pid_dir = os.environ.get("LLMBENCH_TEST_PID_DIR")
    if pid_dir:
        with open(os.path.join(pid_dir, f"{pid}{suffix}"), "w") as f:
            f.write(text)


def _detached_child() -> None:
    """A child that leaves the case's process group (as a daemon or torchrun's ranks do) and is never waited for."""
    child = subprocess.Popen(["sleep", "120"], start_new_session=True)
    _note_pid(".child", child.pid)


@SCENARIOS.register("fault")
class Fault(Scenario):
    Params = FaultParams
    description = "test-only: a case that succeeds, raises, segfaults, exits, hangs or runs out of memory"
    headline = ("time_ms",)

    def estimate_s(self, params: Any, rule: Any) -> float:
        return params.seconds + 1.0

    def run(self, params: Any, ctx: CaseContext) -> None:
        kind = params.kind
        if params.detach_child:
            _detached_child()
        if kind == "cpu_alloc":  # far past any machine's memory: torch's CPU allocator refuses at once
            import torch

            torch.empty(1 << 60, dtype=torch.uint8)
        if kind == "raise":
            raise ValueError("planted failure")
        if kind == "segfault":
            ctypes.string_at(0)
        if kind == "exit":
            os._exit(3)
        if kind == "exit_once" and not os.path.exists(params.flag):  # a start-up that dies once, then goes well
            open(params.flag, "w").close()
            os._exit(3)
        if kind == "exit_timed":  # dies once its timed part has begun: the measurement's failure
            quiet.timed(ctx.info)
            os._exit(4)
        if kind == "hang":
            time.sleep(3600)
        if kind == "oom":
            raise MemoryError("planted out of memory")
        if kind == "skip":
            raise Skip("planted: this case cannot run here")
        if kind == "sleep":  # the pid lets a test check that an interrupted run leaves no case process behind
            quiet.mark_timing()  # its sleep is its timed part: a case killed in it is not started again
            _note_pid(".pid", os.getpid(), str(params.seconds))
            time.sleep(params.seconds)
        if kind == "env":  # what the case process was started with
            ctx.info["env"] = {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")}
            ctx.info["multicast"] = {k: os.environ.get(k) for k in MULTICAST_OFF_ENV}
        m = ctx.measure(lambda: sum(range(100)))
        ctx.record("time_ms", [t * 1e3 for t in m.samples_s])


class BatchParams(ScenarioParams):
    batch_size: int = 1
    fits_up_to: int = 4  # a batch above this raises torch.OutOfMemoryError
    measured_fits_up_to: int | None = None  # with more timed steps than a probe's one, only up to this fits
    max_batch: bool = False


@SCENARIOS.register("batch_oom")
class BatchOOM(Scenario):
    """test-only: out of memory above a batch threshold (for the max-batch search)."""

    Params = BatchParams
    headline = ("time_ms",)
    max_batch_search = BatchSearch(axis="batch_size", flag="max_batch")

    def run(self, params: Any, ctx: CaseContext) -> None:
        ctx.info["batch_size_run"] = params.batch_size
        if params.batch_size > params.fits_up_to:
            import torch  # only where it raises: a probe that fits spares its process torch's seconds of import

            raise torch.OutOfMemoryError(f"planted: batch {params.batch_size} > {params.fits_up_to}")
        longer = ctx.rule.min_iters > 1  # a measurement, not a max_batch probe (one timed step)
        if longer and params.measured_fits_up_to is not None and params.batch_size > params.measured_fits_up_to:
            import torch

            raise torch.OutOfMemoryError(f"planted: {ctx.rule.min_iters} steps at batch {params.batch_size}")
        m = ctx.measure(lambda: sum(range(100)))
        ctx.record("time_ms", [t * 1e3 for t in m.samples_s])


class ProbeParams(ScenarioParams):
    tag: int = 0
    wait_for: int = 0  # wait until this many probe cases have started (proves they run side by side)
    skip_here: bool = False  # the parent skips it without starting a process (as a missing package does)
    loads_host: bool = False  # its scenario declares it host-exclusive (Scenario.host_exclusive)
    setup_s: float = 0.0  # a set-up this long (a compilation) before its timed window


@SCENARIOS.register("probe")
class Probe(Scenario):
    """test-only: records the CUDA_VISIBLE_DEVICES it was started with and when it ran; with
    `wait_for`, waits (up to a minute) until that many probe cases have started, through marker files
    in $LLMBENCH_TEST_PROBE_DIR: a serial run could never get there."""

    Params = ProbeParams
    description = "test-only: records the GPUs a case process was pinned to and when it ran"
    headline = ("time_ms",)

    def estimate_s(self, params: Any, rule: Any) -> float:
        return 1.0

    def host_exclusive(self, params: Any) -> str | None:
        return "planted: it loads the host" if params.loads_host else None

    def skip_reason(self, params: Any, device: Any) -> str | None:
        lifted = os.environ.get("LLMBENCH_TEST_SKIP_LIFTED") == "1"  # as if the missing package came
        return "planted: cannot run here" if params.skip_here and not lifted else None

    def run(self, params: Any, ctx: CaseContext) -> None:
        folder = os.environ["LLMBENCH_TEST_PROBE_DIR"]
        ctx.info["start"] = time.time()
        with open(os.path.join(folder, f"started-{params.tag}"), "w") as f:
            f.write(os.environ.get("CUDA_VISIBLE_DEVICES", ""))
        deadline = time.time() + 60
        seen = 0
        while params.wait_for and time.time() < deadline:
            seen = sum(1 for n in os.listdir(folder) if n.startswith("started-"))
            if seen >= params.wait_for:
                break
            time.sleep(0.05)
        ctx.info["peers_seen"] = seen
        ctx.info["visible"] = os.environ.get("CUDA_VISIBLE_DEVICES")
        ctx.info["affinity"] = sorted(os.sched_getaffinity(0))  # the CPUs this process may run on
        time.sleep(params.setup_s)
        ctx.info["setup_end"] = time.time()
        m = ctx.measure(lambda: sum(range(100)))
        ctx.record("time_ms", [t * 1e3 for t in m.samples_s])
        ctx.info["end"] = time.time()


class RoofParams(ScenarioParams):
    gpu: str = "h100-sxm-80gb"  # the GPU whose ceiling is read (a CPU case process reads it as a GPU's would)


@SCENARIOS.register("roof")
class Roof(Scenario):
    Params = RoofParams
    description = "test-only: the roof a generate case of GPU `gpu` would use, read as generate reads it"
    headline = ("time_ms",)

    def run(self, params: Any, ctx: CaseContext) -> None:
        from llmbench.hardware import roofline
        from llmbench.hardware.specs import lookup
        from llmbench.scenarios.bandwidth import measured_copy_tb_s

        spec = lookup(params.gpu)
        assert spec is not None
        ceiling = roofline.ceiling_for(spec, "bf16", measured_copy_tb_s(spec.slug))
        ctx.info.update(bandwidth_tb_s=ceiling.bandwidth_tb_s, bandwidth_source=ceiling.bandwidth_source)
        m = ctx.measure(lambda: sum(range(100)))
        ctx.record("time_ms", [t * 1e3 for t in m.samples_s])


class SharedParams(ScenarioParams):
    share: str = "a"  # cases of one `share` value form a share group ("": none)
    tag: int = 0
    kind: Literal["ok", "raise", "exit", "oom"] = "ok"
    seconds: float = 0.0  # sleep this long (its pid noted, as fault's `sleep`)
    close: Literal["ok", "hang"] = "ok"  # how the session it loads closes at the group's end


class _Session:
    def __init__(self, loaded_by: str, close: str = "ok") -> None:
        self.loaded_by = loaded_by
        self.hangs = close == "hang"

    def close(self) -> None:
        if self.hangs:
            time.sleep(3600)


@SCENARIOS.register("shared")
class Shared(Scenario):
    """test-only: a case whose `share` param is its share key; it records its process and whether it
    found a session kept by an earlier case of its group."""

    Params = SharedParams
    headline = ("time_ms",)

    def estimate_s(self, params: Any, rule: Any) -> float:
        return 1.0

    def share_key(self, params: Any, device: Any) -> str | None:
        return params.share or None

    def run(self, params: Any, ctx: CaseContext) -> None:
        ctx.info["pid"] = os.getpid()
        ctx.info["start"] = time.time()
        kept = ctx.shared.get(params.share) if ctx.shared is not None else None
        if kept is None:
            ctx.info["build_s"] = 0.5
            if ctx.shared is not None and params.share:
                ctx.shared.keep(params.share, _Session(ctx.case_id, params.close), ctx.case_id)
        else:
            ctx.info["session_of"] = kept[1]
        if params.seconds:
            _note_pid(f"-{params.tag}.shared", os.getpid())
            time.sleep(params.seconds)
        if params.kind == "raise":
            raise ValueError("planted failure")
        if params.kind == "exit":
            os._exit(3)
        if params.kind == "oom":
            raise MemoryError("planted out of memory")
        m = ctx.measure(lambda: sum(range(100)))
        ctx.record("time_ms", [t * 1e3 for t in m.samples_s])
        ctx.info["end"] = time.time()


class FaultRanksParams(ScenarioParams):
    kind: Literal["ok", "exit", "hang", "oom", "raise"] = "ok"
    bad_rank: int = 1  # the rank that misbehaves; the others all-reduce with it


def fault_rank(spec: dict[str, Any]) -> dict[str, Any]:
    """One rank over gloo: notes its pid (<pid>.<kind>.rank) first, then misbehaves as `kind` asks where it is the bad
    rank, while the others block in an all-reduce that waits for it: `exit` (os._exit(3)), `oom`
    (torch.OutOfMemoryError with no "out of memory" in its text), `raise`, `hang` (it never joins, so the
    others wait in the collective for good). Returns the all-reduced sum, its time and the multicast
    variables it was started with."""
    _note_pid(f".{spec['kind']}.rank", os.getpid())  # before torch's import: a loaded host takes seconds there
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", timeout=timedelta(hours=1))  # a hang is stopped by the case, not by gloo
    bad, kind = rank == spec["bad_rank"], spec["kind"]
    if bad and kind == "exit":
        os._exit(3)
    if bad and kind == "oom":
        raise torch.OutOfMemoryError("planted: this rank's allocation failed")
    if bad and kind == "raise":
        raise ValueError("planted rank failure")
    if bad and kind == "hang":
        time.sleep(3600)
    t = torch.ones(1)
    t0 = time.perf_counter()
    dist.all_reduce(t)
    took = time.perf_counter() - t0
    dist.destroy_process_group()
    return {"rank": rank, "sum": float(t.item()), "step_s": [took],
            "env": {k: os.environ.get(k) for k in MULTICAST_OFF_ENV}}


@SCENARIOS.register("fault_ranks")
class FaultRanks(RankScenario):
    """test-only: a rank scenario whose ranks all-reduce over gloo, one of them misbehaving on demand."""

    Params = FaultRanksParams
    description = "test-only: ranks over gloo, one of which dies, hangs, raises or runs out of memory"
    headline = ("time_ms",)
    rank_entry = RankEntry("tests.plugins.fault_scenarios", "fault_rank")
    default_placement = Placement.model_validate({"gpus": 2})

    def estimate_s(self, params: Any, rule: Any) -> float:
        return 10.0

    def rank_runs(self, params: Any, ctx: CaseContext) -> list[RankRun]:
        return [RankRun("ranks", self.placement.gpus, params.model_dump(mode="json"), nnodes=self.placement.nodes)]

    def collect(self, params: Any, ctx: CaseContext, outputs: dict[str, list[dict[str, Any]]]) -> None:
        ranks = outputs["ranks"]
        ctx.record("time_ms", [r["step_s"][0] * 1e3 for r in ranks])
        ctx.info["sums"] = [r["sum"] for r in ranks]
        ctx.info["rank_env"] = [r["env"] for r in ranks]


class ReplicaFaultParams(ScenarioParams):
    fail_replica: int = -1  # the replica (0-based) that raises before its timed window; -1: none
    seconds: float = 0.001  # one timed call


@SCENARIOS.register("fault_replicas")
class FaultReplicas(Scenario):
    """test-only: a replicable case whose copies time a sleep, one of them failing on demand."""

    Params = ReplicaFaultParams
    description = "test-only: copies side by side (placement.replicas), one of which raises before it times"
    headline = ("time_ms",)
    replicable = True

    def estimate_s(self, params: Any, rule: Any) -> float:
        return 5.0

    def run(self, params: Any, ctx: CaseContext) -> None:
        _note_pid(".replica", os.getpid())
        if ctx.replica is not None and ctx.replica.index == params.fail_replica:
            raise RuntimeError("planted failure of this replica")
        m = ctx.measure(lambda: time.sleep(params.seconds))
        ctx.record("time_ms", [s * 1e3 for s in m.samples_s])
        ctx.record("request_throughput_per_s", [1.0 / s for s in m.samples_s])
        ctx.record_value("compile_s", 0.5 + (ctx.replica.index if ctx.replica else 0))
