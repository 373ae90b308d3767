"""Parallel cases on one machine: one case process per --gpus slot at a time, pinned with
CUDA_VISIBLE_DEVICES, multi-GPU cases taking the slots they need; one result set, written by the
parent only. Two fake GPUs on the CPU: the probe scenario records what its process was given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llmbench.errors import UserError
from llmbench.harness.launch import check_parallel, slots_needed
from llmbench.harness.runner import RunOptions, run_suite
from llmbench.results import load
from llmbench.suite import load_suite
from tests.conftest import EVENT_S, Posted, wait_for, wait_gone, write

pytestmark = pytest.mark.slow

PROBES = """
name = "probes"
[defaults]
min_iters = 1
min_seconds = 0.0
timeout_s = 120
[[case]]
scenario = "probe"
matrix.tag = [1, 2]
wait_for = 2
[[case]]
scenario = "probe"
tag = 3
placement = {gpus = 2}
[[case]]
scenario = "probe"
matrix.tag = [4, 5, 6]
[[case]]
scenario = "probe"
tag = 7
placement = {gpus = 3}
[[case]]
scenario = "probe"
tag = 8
placement = {gpus = 1, exclusive = true}
"""


def test_cases_run_side_by_side_one_per_gpu_and_multi_gpu_cases_take_both(tmp_path: Path, fault_plugin: str) -> None:
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    suite = load_suite(str(write(tmp_path, PROBES)))
    opts = RunOptions(out_dir=tmp_path / "out", device="cpu", gpus="0,1", parallel=True,
                      extra_env={"LLMBENCH_TEST_PROBE_DIR": str(probe_dir)})
    rs = load(run_suite(suite, suite.cases, opts))
    by_tag = {c.params["tag"]: c for c in rs.cases}
    assert sorted(by_tag) == [1, 2, 3, 4, 5, 6, 7, 8]
    for tag in (1, 2):  # each waited until the other had started: they ran at the same time
        assert by_tag[tag].status == "ok", by_tag[tag].reason
        assert by_tag[tag].info["peers_seen"] >= 2
    assert {by_tag[1].info["gpus"], by_tag[2].info["gpus"]} == {"0", "1"}
    assert by_tag[3].info["visible"] == by_tag[3].info["gpus"] == "0,1"
    ran = [c for c in rs.cases if c.status == "ok"]
    assert len(ran) == 7
    for c in ran:
        assert c.info["visible"] == c.info["gpus"]  # pinned before the case process started
    for a in ran:  # a slot never holds two cases at once
        for b in ran:
            shared = set(a.info["gpus"].split(",")) & set(b.info["gpus"].split(","))
            if a is not b and shared:
                assert a.info["end"] <= b.info["start"] or b.info["end"] <= a.info["start"], (a.params, b.params)
    alone = by_tag[8]  # exclusive: it waited for every slot, and nothing started beside it
    assert all(c.info["end"] <= alone.info["start"] or alone.info["end"] <= c.info["start"]
               for c in ran if c is not alone)
    assert by_tag[7].status == "skipped" and "needs 3 GPUs; --gpus gives 2" in (by_tag[7].reason or "")
    assert rs.finished_at is not None


def test_slots_and_parallel_checks() -> None:
    suite = load_suite("vllm-llama3-8b")
    assert {slots_needed(c) for c in suite.cases} == {1}
    with pytest.raises(UserError, match="--parallel needs several GPUs"):
        check_parallel("0", True)
    with pytest.raises(UserError, match="--parallel needs several GPUs"):
        check_parallel(None, True)
    check_parallel("0,1", True)
    check_parallel("MIG-a,MIG-b", True)
    check_parallel(None, False)


@pytest.mark.parametrize("parallel", [False, True])
def test_a_case_the_parent_skips_is_recorded_not_left_for_the_budget(
    tmp_path: Path, fault_plugin: str, parallel: bool
) -> None:
    """A skip costs no time: a case that cannot run here (vLLM not installed) is `skipped` even when the
    budget has no room left, so --resume does not carry it forever."""
    suite = load_suite(str(write(tmp_path, """
name = "skips"
[[case]]
scenario = "probe"
matrix.tag = [1, 2]
skip_here = true
[[case]]
scenario = "probe"
tag = 3
""")))
    opts = RunOptions(out_dir=tmp_path / "out", device="cpu", budget_s=0.01, gpus="0,1" if parallel else None,
                      parallel=parallel)
    rs = load(run_suite(suite, suite.cases, opts))
    assert [(c.params["tag"], c.status) for c in rs.cases] == [(1, "skipped"), (2, "skipped")]
    assert rs.cases[0].reason == "planted: cannot run here"
    assert rs.finished_at is None  # case 3 is left for --resume


def test_sigterm_stops_every_case_process_of_a_parallel_run(tmp_path: Path, fault_plugin: str) -> None:
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    suite, pids = write(tmp_path, """
name = "two-slow"
[defaults]
min_iters = 1
min_seconds = 0.0
[[case]]
scenario = "fault"
kind = "sleep"
matrix.seconds = [60.0, 61.0]
"""), tmp_path / "pids"
    pids.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llmbench", "run", str(suite), "--cpu", "--gpus", "0,1", "--parallel",
         "--out", str(tmp_path / "out")], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "LLMBENCH_TEST_PID_DIR": str(pids)}, start_new_session=True)
    wait_for("both cases running at once", lambda: len(list(pids.glob("*.pid"))) == 2)
    running = [int(f.stem) for f in pids.glob("*.pid")]
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=EVENT_S)
    assert proc.returncode == 130

    assert wait_gone(running)
    rs = load(next((tmp_path / "out").glob("*/two-slow-*.json")))
    assert rs.cases == [] and rs.finished_at is None


def test_an_interrupt_records_the_cases_that_had_finished_before_it_stops_the_running_ones(
    tmp_path: Path, fault_plugin: str, posted: Posted
) -> None:
    """Three slots: cases of 0 s and 1 s and one of 60 s start together. The interrupt comes while the
    main thread is busy with the first finished case (in `case_done`) and the other short one has
    finished too, its result waiting in the queue: that result is recorded, the 60 s case is stopped
    and not recorded."""
    import time

    from llmbench.harness.ui import UI

    pids = tmp_path / "pids"
    pids.mkdir()

    def pid_of(seconds: str) -> int | None:
        return next((int(f.stem) for f in pids.glob("*.pid") if f.read_text() == seconds), None)

    class InterruptAfterBothShortOnes(UI):
        interrupted = False

        def case_done(self, case: object, result: object) -> None:
            if self.interrupted:
                return
            self.interrupted = True
            # the other short case's thread has handed its result to the queue
            assert posted.wait([c.id for c in suite.cases if c.params_dict["seconds"] < 60])
            raise KeyboardInterrupt

    suite = load_suite(str(write(tmp_path, """
name = "three"
[defaults]
min_iters = 1
min_seconds = 0.0
[[case]]
scenario = "fault"
kind = "sleep"
matrix.seconds = [0.0, 1.0, 60.0]
""")))
    # quiet_windows off: the 60 s sleep is a set-up, which the short cases would wait out before timing
    opts = RunOptions(out_dir=tmp_path / "out", device="cpu", gpus="0,1,2", parallel=True, quiet_windows=False,
                      extra_env={"LLMBENCH_TEST_PID_DIR": str(pids)})
    with pytest.raises(KeyboardInterrupt):
        run_suite(suite, suite.cases, opts, InterruptAfterBothShortOnes())
    ended = time.time()
    rs = load(next((tmp_path / "out").glob("*/three-*.json")))
    assert sorted((c.params["seconds"], c.status) for c in rs.cases) == [(0.0, "ok"), (1.0, "ok")]
    assert rs.finished_at is None
    slow = pid_of("60.0")
    assert slow is not None
    began = (pids / f"{slow}.pid").stat().st_mtime  # its 60 s sleep began
    assert ended - began < 50, f"the run ended {ended - began:.1f} s into the 60 s case: it was waited for"
    assert wait_gone([slow])


def test_max_batch_probes_are_heard_under_parallel_before_their_case_ends(tmp_path: Path, fault_plugin: str) -> None:
    """The probes of cases searched side by side reach the UI (from the thread that owns the console),
    each case's before its result; the search's answers are the sequential run's."""
    from llmbench.harness.ui import UI

    events: list[tuple[str, int, Any]] = []

    class Heard(UI):
        def case_probe(self, case: Any, probe: dict[str, Any]) -> None:
            events.append(("probe", case.params_dict["fits_up_to"], probe["batch_size"]))

        def case_done(self, case: Any, result: Any) -> None:
            events.append(("done", case.params_dict["fits_up_to"], result.status))

    suite = load_suite(str(write(tmp_path, """name = "maxb"
[defaults]
min_iters = 1
min_seconds = 0
warmup_iters = 0
[[case]]
scenario = "batch_oom"
matrix.fits_up_to = [2, 3]
max_batch = true
""")))
    rs = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu", gpus="0,1",
                                                       parallel=True), Heard()))
    assert {c.params["fits_up_to"]: c.info["max_batch"]["batch_size"] for c in rs.cases} == {2: 2, 3: 3}
    for fits, want in ((2, [1, 2, 4, 3]), (3, [1, 2, 4, 3])):
        mine = [e for e in events if e[1] == fits]
        assert [e[2] for e in mine[:-1]] == want and mine[-1] == ("done", fits, "ok")


def test_slots_come_from_the_cases_placement() -> None:
    """One field, placement, whatever the scenario (not tensor_parallel, n_gpus, gpus): the old spellings
    land in it; a served engine the case starts on two GPUs takes two slots, one at a URL runs elsewhere
    and takes one; ddp's processes default to two."""
    from llmbench.suite import case_from

    def case(scenario: str, **values: Any) -> Any:
        return case_from(scenario, values)

    served = {"preset": "tiny-llama", "concurrency": 1}
    assert slots_needed(case("generate", model="tiny-llama", tensor_parallel=2)) == 2
    assert slots_needed(case("generate", model="tiny-llama", engine="vllm", placement={"gpus": 2})) == 2
    assert slots_needed(case("ddp", model="tiny-llama", gpus=3)) == 3
    assert slots_needed(case("ddp", model="tiny-llama")) == 2
    assert slots_needed(case("serving", server=["x"], n_gpus=2, **served)) == 2
    assert slots_needed(case("serving", url="http://h:1", n_gpus=2, **served)) == 1
    assert slots_needed(case("qlora", model="tiny-llama")) == 1
    assert slots_needed(case("gemm", placement={"gpus": 2})) == 2


def test_a_case_beside_another_times_only_once_the_others_set_up_is_over(tmp_path: Path, fault_plugin: str) -> None:
    """measure/quiet.py through the runner: the case ready first waits for its neighbour's set-up (a
    compilation, here a sleep) before its timed window, and records the wait, which its quote leaves out."""
    from llmbench.harness.plan import measured_case

    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    suite = load_suite(str(write(tmp_path, PROBES.split("[[case]]")[0] + """
[[case]]
scenario = "probe"
wait_for = 2
tag = 1
setup_s = 2.0
[[case]]
scenario = "probe"
wait_for = 2
tag = 2
""")))
    opts = RunOptions(out_dir=tmp_path / "out", device="cpu", gpus="0,1", parallel=True,
                      extra_env={"LLMBENCH_TEST_PROBE_DIR": str(probe_dir)})
    rs = load(run_suite(suite, suite.cases, opts))
    by_tag = {c.params["tag"]: c for c in rs.cases}
    assert [by_tag[t].status for t in (1, 2)] == ["ok", "ok"]
    fast, compiling = by_tag[2], by_tag[1]
    assert fast.info["windows_unix"][0][0] >= compiling.info["setup_end"]
    asked_to_time = next(asked for phase, asked, _ in compiling.info["quiet_phases_unix"] if phase == "timed")
    assert fast.info["windows_unix"][0][0] >= asked_to_time  # its phases, as recorded, say the same
    # it asked to time during the other's 2 s set-up and was let in once that ended (however late it asked)
    fast_asked, fast_in = next((a, e) for phase, a, e in fast.info["quiet_phases_unix"] if phase == "timed")
    assert fast_asked - 0.001 < compiling.info["setup_end"] <= fast_in + 0.001, fast.info["quiet_phases_unix"]
    assert fast.info["quiet_wait_s"] > 0 and fast.info["ran_beside_cases"]
    assert measured_case(fast).seconds == pytest.approx(fast.duration_s - fast.info["quiet_wait_s"])
