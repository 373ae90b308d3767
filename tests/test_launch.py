"""The launcher layer (harness/launch.py, harness/launch_ranks.py): the GPU-slot owner hands slots out
in --gpus order and takes them back; the torchrun launcher returns its ranks' outputs rank 0 first and
turns a failed, out-of-memory or hung rank into the exception the case's status is made from. The rank
entries below run in torchrun's processes (imported as tests.test_launch from the repository root)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import pytest

from llmbench.harness.launch import GpuSlots
from llmbench.harness.launch_ranks import Torchrun, rank_launcher
from llmbench.measure.timing import StopRule
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import SCENARIOS, CaseContext, RankEntry
from tests.conftest import wait_gone


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


def entry(name: str) -> RankEntry:
    return RankEntry("tests.test_launch", name)  # how a rank, started from the repository root, imports this file


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


def test_only_a_scenario_that_declares_a_rank_entry_gets_a_rank_launcher() -> None:
    ddp = SCENARIOS.get("ddp")()
    launcher = rank_launcher(ddp, 30.0)
    assert launcher is not None and launcher.entry == RankEntry("llmbench.scenarios.ddp_rank", "train_rank")
    assert rank_launcher(SCENARIOS.get("gemm")(), 30.0) is None
    ctx = CaseContext(DeviceInfo("cpu", "CPU"), StopRule(), emit_progress=False)
    with pytest.raises(RuntimeError, match="declares no rank_entry"):
        ctx.run_ranks({}, 2)


@pytest.mark.slow
def test_ranks_outputs_come_back_rank_0_first() -> None:
    ranks = Torchrun(entry("echo_rank"), 120.0).run({"x": 1}, 3)
    assert [(r["rank"], r["world"], r["spec"]) for r in ranks] == [(0, 3, {"x": 1}), (1, 3, {"x": 1}), (2, 3, {"x": 1})]


@pytest.mark.slow
def test_a_failed_rank_raises_and_an_out_of_memory_one_raises_oom() -> None:
    import torch

    with pytest.raises(RuntimeError, match=r"torchrun with 2 processes exited with code \d+:\n(.|\n)*planted"):
        Torchrun(entry("failing_rank"), 120.0).run({"bad": 1, "message": "planted failure"}, 2)
    with pytest.raises(torch.OutOfMemoryError, match=r"a rank ran out of memory \(2 processes\)"):
        Torchrun(entry("failing_rank"), 120.0).run({"bad": 0, "message": "CUDA out of memory. Tried"}, 2)


@pytest.mark.slow
def test_a_hung_launch_is_stopped_at_its_timeout_with_its_ranks(tmp_path: Any) -> None:
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 10s"):
        Torchrun(entry("sleeping_rank"), 10.0).run({"pids": str(tmp_path)}, 2)
    assert time.monotonic() - t0 < 60
    pids = [int(p.stem) for p in tmp_path.glob("*.pid")]
    assert len(pids) == 2

    assert wait_gone(pids)
