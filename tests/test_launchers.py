"""The launcher axis (harness/launchers/): a rank scenario's case runs its ranks through the torchrun
launcher, which the case process applies (the scenario starts no process), records how (info.launcher,
the code path's rank counts and rendezvous), keeps NVLink multicast off in every rank, and turns each
rank fault into the case's status: a rank that dies, one that runs out of memory, a collective that
hangs (stopped at the case's timeout with every rank gone), while the suite's other cases run and stay.
The faulty ranks are the test plugin's `fault_ranks` (tests/plugins/fault_scenarios.py), over gloo."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from llmbench.hardware.topology import MULTICAST_OFF_ENV, multicast_off
from llmbench.harness.isolation import child_env
from llmbench.harness.launchers.torchrun import Torchrun, _failure, node_env, rank_env
from llmbench.harness.runner import RunOptions, run_suite
from llmbench.harness.worker import run_case
from llmbench.placement import Placement
from llmbench.results import load
from llmbench.suite import load_suite
from tests.conftest import alive, wait_gone, write

MACHINE = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


# a case's timeout where it must not time out: torchrun and two ranks each import torch, which takes a loaded
# two-core host a minute and more; a case that ends is never slower for it
CASE_TIMEOUT_S = 300


def rank_case(kind: str, timeout_s: float = CASE_TIMEOUT_S, nodes: int = 1) -> dict[str, Any]:
    return {"scenario": "fault_ranks", "params": {"kind": kind}, "placement": {"gpus": 2, "nodes": nodes},
            "settings": {"timeout_s": timeout_s, "min_iters": 1}, "device": "cpu"}


def test_multicast_stays_off_unless_the_environment_asks_for_it() -> None:
    assert multicast_off({}) == MULTICAST_OFF_ENV
    machine = {"NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "yes", "OTHER": "x"}
    assert multicast_off(machine) == {**MULTICAST_OFF_ENV, "NVSHMEM_DISABLE_NVLS": "yes", "OTHER": "x"}  # kept
    wanted = {"NCCL_NVLS_ENABLE": "1"}
    assert multicast_off(wanted) == wanted  # the user's own choice: nothing added
    env = rank_env({"CUDA_VISIBLE_DEVICES": "2,3"}, "tok")
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3" and env["LLMBENCH_RANKS_TOKEN"] == "tok"
    assert {k: env[k] for k in MULTICAST_OFF_ENV} == MULTICAST_OFF_ENV


def test_the_machines_multicast_variables_reach_the_case_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in MACHINE.items():
        monkeypatch.setenv(k, v)
    env = child_env("0,1", {"X": "1"})
    assert {k: env[k] for k in MACHINE} == MACHINE


TORCHRUN_FAILURES = """Failures:
[1]:
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 9262)  (SIGTERM)
Root Cause (first observed failure):
[0]:
  rank      : 1 (local_rank: 1)
  exitcode  : {code} (pid: 9263)
"""


def test_a_failure_names_the_rank_that_failed_first_not_the_ones_it_took_down() -> None:
    peer = {"type": "RuntimeError", "message": "Connection closed by peer", "oom": False, "time": 2.0}
    died = _failure(2, 1, {0: peer}, TORCHRUN_FAILURES.format(code=3), 60.0, [None, None], 1.0)
    assert (died.status, died.reason) == ("failed", "rank 1 of 2 exited with code 3 (torchrun exited with code 1)")
    killed = _failure(2, 1, {}, TORCHRUN_FAILURES.format(code=-9), 60.0, [None, None], 1.0)
    assert (killed.status, killed.reason[:35]) == ("killed", "rank 1 of 2 was killed by SIGKILL f")
    segv = _failure(2, 1, {}, TORCHRUN_FAILURES.format(code=-11), 60.0, [None, None], 1.0)
    assert (segv.status, segv.reason[:31]) == ("failed", "rank 1 of 2 died with SIGSEGV (")
    first = {"type": "ValueError", "message": "planted", "oom": False, "time": 1.0}
    raised = _failure(2, 1, {0: peer, 1: first}, "", 60.0, [None, None], 1.0)
    assert (raised.status, raised.reason) == ("failed", "rank 1 of 2 raised ValueError: planted")
    oom = {"type": "OutOfMemoryError", "message": "planted", "oom": True, "time": 3.0}
    assert _failure(2, 1, {0: peer, 1: oom}, "", 60.0, [None, None], 1.0).status == "oom"  # whenever it came
    assert _failure(2, None, {}, "", 12.0, [None, None], 12.0).status == "timeout"


@pytest.mark.slow
def test_a_rank_that_dies_fails_the_case_naming_it(fault_plugin: str) -> None:
    out = run_case(rank_case("exit"))
    assert out["status"] == "failed", out
    assert out["reason"] == "ranks: rank 1 of 2 exited with code 3 (torchrun exited with code 1)"
    assert "exitcode" in out["traceback"] and out["info"]["launcher"] == "torchrun"


@pytest.mark.slow
def test_a_rank_out_of_memory_is_the_cases_oom(fault_plugin: str) -> None:
    out = run_case(rank_case("oom"))
    assert out["status"] == "oom", out
    assert out["reason"] == \
        "ranks: rank 1 of 2 ran out of memory: OutOfMemoryError: planted: this rank's allocation failed"


HANG = f"""
name = "rank-faults"
[defaults]
min_iters = 1
min_seconds = 0.0
timeout_s = {CASE_TIMEOUT_S}
[[case]]
scenario = "fault_ranks"
kind = "hang"
timeout_s = 25
[[case]]
scenario = "fault_ranks"
kind = "ok"
"""


@pytest.mark.slow
def test_a_hung_collective_stops_at_the_timeout_with_every_rank_and_the_suite_goes_on(
    tmp_path: Path, fault_plugin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("LLMBENCH_TEST_PID_DIR", str(pids))
    for k, v in MACHINE.items():  # as the multi-GPU machines' image sets them
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("NVSHMEM_DISABLE_NVLS", "yes")  # a value of the machine's own, kept as it is
    suite = load_suite(str(write(tmp_path, HANG)))
    rs = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu")))
    hang, ok = rs.cases
    assert hang.status == "timeout", hang
    # stopped at its own 25 s timeout (and the kill's time), not the suite's default or the rank's hour of sleep
    assert hang.duration_s < 60, hang.duration_s
    hung = [int(p.name.split(".")[0]) for p in pids.glob("*.hang.rank")]
    assert len(hung) == 2  # both ranks of the hung case had started
    assert wait_gone(hung), [p for p in hung if alive(p)]
    assert ok.status == "ok", ok.reason
    assert ok.info["sums"] == [2.0, 2.0] and len(ok.metrics["time_ms"].samples) == 2
    assert ok.info["rank_env"] == [{**MACHINE, "NVSHMEM_DISABLE_NVLS": "yes"}] * 2
    assert (hang.info["launcher"], ok.info["launcher"]) == ("torchrun", "torchrun")
    assert ok.code_path["launcher"] == {"name": "torchrun", "rendezvous": "standalone", "nproc": {"ranks": 2},
                                        "multicast": {**MACHINE, "NVSHMEM_DISABLE_NVLS": "yes"}}


@pytest.mark.slow
def test_a_case_of_no_ranks_records_the_local_launcher(tmp_path: Path, fault_plugin: str) -> None:
    suite = load_suite(str(write(tmp_path, '[[case]]\nscenario = "fault"\nmin_iters = 1\nmin_seconds = 0.0\n')))
    (case,) = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu"))).cases
    assert case.status == "ok" and case.info["launcher"] == "local"
    assert case.info["node"]["hostname"] == socket.gethostname()  # where it ran, as every launcher records it
    assert "launcher" not in case.code_path and os.environ.get("LLMBENCH_RANKS_TOKEN") is None


def test_nodes_of_one_host_each_get_their_slice_of_the_gpus_and_one_rendezvous() -> None:
    env = {"CUDA_VISIBLE_DEVICES": "4,5,6,7", "X": "1"}
    assert [node_env(env, i, 2)["CUDA_VISIBLE_DEVICES"] for i in range(2)] == ["4,5", "6,7"]
    assert node_env({"X": "1"}, 1, 2) == {"X": "1"}  # the CPU: gloo processes, nothing to split
    spec = {"entry": "m:f", "nproc": 4, "nnodes": 2, "spec": {}}
    agents = Torchrun().agents(spec, env, Path("s.json"), Path("out"), "tok")
    hosts = [[a for a in cmd if a.startswith(("--node_rank", "--nproc_per", "--rdzv_endpoint", "--rdzv_conf"))]
             for cmd, _ in agents]
    endpoint = hosts[0][2]
    assert endpoint.startswith("--rdzv_endpoint=127.0.0.1:")
    assert hosts == [["--node_rank=0", "--nproc_per_node=2", endpoint, "--rdzv_conf=is_host=true"],
                     ["--node_rank=1", "--nproc_per_node=2", endpoint, "--rdzv_conf=is_host=false"]]  # one rendezvous
    assert all("--standalone" not in cmd and "--rdzv_backend=c10d" in cmd for cmd, _ in agents)
    assert [e["CUDA_VISIBLE_DEVICES"] for _, e in agents] == ["4,5", "6,7"]
    with pytest.raises(ValueError, match="does not split evenly"):
        Placement.model_validate({"gpus": 3, "nodes": 2})


@pytest.mark.slow
def test_ranks_over_two_nodes_of_one_host_meet_over_a_localhost_rendezvous(fault_plugin: str) -> None:
    out = run_case(rank_case("ok", nodes=2))
    assert out["status"] == "ok", out
    assert out["info"]["sums"] == [2.0, 2.0]
    assert out["code_path"]["launcher"]["rendezvous"] == "c10d"
    assert out["code_path"]["launcher"]["nnodes"] == {"ranks": 2}
    died = run_case(rank_case("exit", nodes=2))  # the other node's agent is stopped, not left waiting
    assert died["status"] == "failed" and died["reason"].startswith("ranks: rank 1 of 2 exited with code 3"), died


def test_a_case_over_two_nodes_is_another_case_and_one_node_keeps_its_id(tmp_path: Path) -> None:
    from llmbench.errors import SuiteError

    text = 'name = "n"\n[[case]]\nscenario = "ddp"\nmodel = "tiny-llama"\nmatrix.placement = [{gpus = 2}, PLACED]\n'
    one, two = load_suite(str(write(tmp_path, text.replace("PLACED", "{gpus = 2, nodes = 2}")))).cases
    assert one.id != two.id and two.params_dict["placement"] == {"nodes": 2} and two.params_dict["gpus"] == 2
    assert "placement" not in one.params_dict
    with pytest.raises(SuiteError, match="repeats a case"):  # nodes = 1 is the case it always was
        load_suite(str(write(tmp_path, text.replace("PLACED", "{gpus = 2, nodes = 1}"))))
