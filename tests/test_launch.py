"""The launcher layer (harness/launch.py, harness/launchers/): the GPU-slot owner hands slots out in
--gpus order and takes them back; the torchrun launcher returns its ranks' outputs rank 0 first and
turns a failed, out-of-memory or hung rank into an outcome (never an exception) naming the rank. The
rank entries below run in torchrun's processes (imported as tests.test_launch from the repository root);
tests/test_launchers.py runs whole rank cases and their faults."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from llmbench.harness.launch import GpuSlots
from llmbench.harness.launchers.torchrun import Torchrun
from llmbench.scenarios.base import SCENARIOS, RankEntry, RankScenario
from tests.conftest import EVENT_S, wait_gone


def echo_rank(spec: dict[str, Any]) -> dict[str, Any]:
    return {"rank": int(os.environ["RANK"]), "world": int(os.environ["WORLD_SIZE"]), "spec": spec}


def failing_rank(spec: dict[str, Any]) -> dict[str, Any]:
    if int(os.environ["RANK"]) == spec["bad"]:
        print(spec["message"], file=sys.stderr)
        raise SystemExit(3)
    return {}


def sleeping_rank(spec: dict[str, Any]) -> dict[str, Any]:
    with open(os.path.join(spec["pids"], f"{os.getpid()}.pid"), "w") as f:
        f.write("")
    time.sleep(120)
    return {}


def launch(name: str, nproc: int, spec: dict[str, Any], timeout_s: float = 300.0) -> Any:
    """`name` of this file as `nproc` ranks through the torchrun launcher, from the repository root (the
    timeout only stops a launch that hangs: on a loaded host torchrun and each rank take long to import torch)."""
    target = RankEntry("tests.test_launch", name).target
    return Torchrun().run({"entry": target, "nproc": nproc, "spec": spec}, dict(os.environ), timeout_s)


def test_slots_are_taken_in_gpus_order_and_given_back() -> None:
    slots = GpuSlots("0,1,2", {"X": "1"})
    assert slots.too_many(4) == "the case needs 4 GPUs; --gpus gives 3" and slots.too_many(3) is None
    whole = slots.whole()
    assert whole.visible == "0,1,2" and whole.env["CUDA_VISIBLE_DEVICES"] == "0,1,2" and whole.env["X"] == "1"
    a = slots.take(1)
    b = slots.take(2)
    assert a is not None and b is not None
    assert (a.visible, b.visible) == ("0", "1,2") and b.env["CUDA_VISIBLE_DEVICES"] == "1,2"
    assert slots.take(1) is None  # all held: the next case waits
    slots.release(b)
    slots.release(a)
    assert slots.take(3) is not None  # every slot free again
    none = GpuSlots(None)
    assert none.whole().visible is None and none.whole().slots == () and none.too_many(1) is not None


def test_a_serial_run_gives_each_case_the_first_gpus_its_placement_asks_for() -> None:
    slots = GpuSlots("2,3", {"X": "1"})
    run = slots.whole()
    one = slots.first(1, run)
    assert one.visible == "2" and one.env["CUDA_VISIBLE_DEVICES"] == "2" and one.env["X"] == "1"
    assert slots.first(2, run) is run and slots.first(4, run) is run  # all of them: the run's own grant
    cpu = GpuSlots(None)
    assert cpu.first(1, cpu.whole()).visible is None  # no GPU known: nothing to narrow


def test_only_a_rank_scenario_declares_a_rank_entry() -> None:
    ddp = SCENARIOS.get("ddp")()
    assert isinstance(ddp, RankScenario) and ddp.rank_entry == RankEntry("llmbench.scenarios.ddp_rank", "train_rank")
    assert not isinstance(SCENARIOS.get("gemm")(), RankScenario)


@pytest.mark.slow
def test_ranks_outputs_come_back_rank_0_first() -> None:
    out = launch("echo_rank", 3, {"x": 1})
    assert out.status == "ok", out
    assert [(r["rank"], r["world"], r["spec"]) for r in out.payload["ranks"]] == \
        [(0, 3, {"x": 1}), (1, 3, {"x": 1}), (2, 3, {"x": 1})]


@pytest.mark.slow
def test_a_failed_rank_is_an_outcome_naming_it_and_an_out_of_memory_text_is_oom() -> None:
    failed = launch("failing_rank", 2, {"bad": 1, "message": "planted failure"})
    assert failed.status == "failed" and failed.reason.startswith("rank 1 of 2 exited with code 3")
    assert "planted failure" in failed.traceback
    oom = launch("failing_rank", 2, {"bad": 0, "message": "CUDA out of memory. Tried"})
    assert oom.status == "oom" and oom.reason.startswith("rank 0 of 2 exited with code 3"), oom


class RanksClock:
    """The launcher's clock (its `time`), standing still until every rank of the launch has noted its pid:
    its timeout then counts from the ranks' start, however long a loaded host takes to start torchrun and
    import torch, so the hang it stops is the ranks' own (up to EVENT_S for them to start)."""

    def __init__(self, pids: Path, nproc: int) -> None:
        self.pids, self.nproc = pids, nproc
        self.started: float | None = None  # when the ranks were seen, on time.monotonic
        self.first = time.monotonic()

    def monotonic(self) -> float:
        now = time.monotonic()
        if self.started is None:
            if len(list(self.pids.glob("*.pid"))) < self.nproc and now - self.first < EVENT_S:
                return self.first
            self.started = now
        return self.first + (now - self.started)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)  # sleep, perf_counter: the real ones


@pytest.mark.slow
def test_a_hung_launch_is_stopped_at_its_timeout_with_its_ranks(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from llmbench.harness.launchers import torchrun

    clock = RanksClock(tmp_path, 2)
    monkeypatch.setattr(torchrun, "time", clock)
    out = launch("sleeping_rank", 2, {"pids": str(tmp_path)}, timeout_s=3.0)
    pids = [int(p.stem) for p in tmp_path.glob("*.pid")]
    assert len(pids) == 2 and clock.started is not None, f"{len(pids)} of 2 ranks started within {EVENT_S:g} s"
    took = time.monotonic() - clock.started
    assert out.status == "timeout" and "did not finish within 3.0s" in out.reason, out
    # stopped at its timeout (and torchrun's grace to stop its ranks), not when the ranks' 120 s sleep ended
    assert took < 60, f"the launch ended {took:.1f} s after its ranks started"
    assert wait_gone(pids)
