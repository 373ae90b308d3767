"""A SIGKILL is not taken for the out-of-memory killer's unless the kernel says so (its OOM-kill counts,
its log): an operator's kill -9 of a case process or a rank is `killed`, exit code 1."""

from __future__ import annotations

import itertools
import os
import signal
import threading
from pathlib import Path

import pytest

from llmbench.harness import isolation
from llmbench.harness.isolation import OomCounts, sigkill_outcome
from llmbench.harness.launchers.torchrun import _failure
from llmbench.harness.runner import RunOptions, run_suite
from llmbench.harness.ui import exit_code
from llmbench.results import load
from llmbench.suite import load_suite
from tests.conftest import EVENT_S, write

SLEEP = """
name = "sleepy"
[[case]]
scenario = "fault"
kind = "sleep"
seconds = {seconds}
min_iters = 1
min_seconds = 0.0
timeout_s = 120
"""


def test_the_kernels_oom_counts_are_read_from_vmstat_and_the_cgroup(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("nr_free_pages 12\noom_kill 7\n")
    monkeypatch.setattr(isolation, "VMSTAT", vmstat)
    root = tmp_path / "cgroup"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n")
    (root / "memory" / "x").mkdir(parents=True)
    (root / "memory" / "x" / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n")
    monkeypatch.setattr(isolation, "CGROUP_ROOT", root)
    v2, v1, none = tmp_path / "v2", tmp_path / "v1", tmp_path / "none"
    v2.write_text("0::/a/b\n")
    v1.write_text("4:memory:/x\n0::/\n")
    none.write_text("0::/missing\n")
    assert isolation._cgroup_oom_kills(v2) == 2
    assert isolation._cgroup_oom_kills(v1) == 5
    assert isolation._cgroup_oom_kills(none) is None
    assert isolation.oom_counts().host == 7


def test_the_kernel_log_names_the_pid_only_after_the_process_started(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "kmsg"
    log.write_text("3,812,5000000,-;Out of memory: Killed process 4242 (python) total-vm:1kB\n")
    monkeypatch.setattr(isolation, "KERNEL_LOG", log)
    assert isolation._kernel_log_names(4242, since_us=1_000_000) is True
    assert isolation._kernel_log_names(4242, since_us=9_000_000) is False  # an older process of that pid
    assert isolation._kernel_log_names(4243, since_us=0) is False
    monkeypatch.setattr(isolation, "KERNEL_LOG", tmp_path / "unreadable")
    assert isolation._kernel_log_names(4242, since_us=0) is None


def counts(*values: OomCounts) -> object:
    it = itertools.chain(values, itertools.repeat(values[-1]))
    return lambda: next(it)


def test_a_sigkill_is_oom_only_where_a_count_rose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "_kernel_log_names", lambda pid, since_us: False)
    before = OomCounts(host=3, cgroup=1)
    monkeypatch.setattr(isolation, "oom_counts", counts(OomCounts(host=3, cgroup=1)))
    status, reason = sigkill_outcome("the case process", before, 99)
    assert status == "killed" and "kill -9" in reason and "no OOM kill was counted" in reason
    monkeypatch.setattr(isolation, "oom_counts", counts(OomCounts(host=4, cgroup=2)))
    status, reason = sigkill_outcome("the case process", before, 99)
    assert status == "oom" and "cgroup's memory.events counted 1 OOM kill" in reason
    monkeypatch.setattr(isolation, "oom_counts", counts(OomCounts(host=4, cgroup=None)))
    assert sigkill_outcome("x", OomCounts(host=3), 99)[0] == "oom"
    status, reason = sigkill_outcome("x", OomCounts(), 99)  # nothing readable: not called an oom
    assert status == "killed" and "could not be read" in reason
    monkeypatch.setattr(isolation, "_kernel_log_names", lambda pid, since_us: pid == 99)
    assert sigkill_outcome("x", OomCounts(), 99) == ("oom", "x was killed by the host's out-of-memory killer "
                                                            "(the kernel log says it killed pid 99)")


RANK_KILLED = """Failures:
Root Cause (first observed failure):
[0]:
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 9263)
"""


def test_a_rank_killed_from_outside_is_killed_not_oom(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    monkeypatch.setattr(isolation, "_kernel_log_names", lambda pid, since_us: bool(seen.append(pid)))
    monkeypatch.setattr(isolation, "oom_counts", counts(OomCounts(host=0, cgroup=0)))
    out = _failure(2, 1, {}, RANK_KILLED, 60.0, [None, None], 1.0, OomCounts(host=0, cgroup=0))
    assert out.status == "killed", out.reason
    assert out.reason is not None and out.reason.startswith("rank 1 of 2 was killed by SIGKILL")
    assert seen == [9263]  # the kernel log is asked about that rank's pid
    monkeypatch.setattr(isolation, "oom_counts", counts(OomCounts(host=1, cgroup=1)))
    assert _failure(2, 1, {}, RANK_KILLED, 60.0, [None, None], 1.0, OomCounts(host=0, cgroup=0)).status == "oom"


def test_killed_is_a_failed_exit_code() -> None:
    assert exit_code({"killed": 1}, strict=False) == 1
    assert exit_code({"oom": 1}, strict=False) == 0


def _kill_when_it_sleeps(pid_dir: Path) -> threading.Thread:
    def kill() -> None:
        import time

        deadline = time.monotonic() + EVENT_S
        while time.monotonic() < deadline:
            found = list(pid_dir.glob("*.pid"))
            if found:
                os.kill(int(found[0].name.split(".")[0]), signal.SIGKILL)  # an operator's kill -9
                return
            time.sleep(0.05)

    t = threading.Thread(target=kill, daemon=True)
    t.start()
    return t


@pytest.mark.slow
@pytest.mark.parametrize("after,status", [(OomCounts(host=10, cgroup=4), "killed"),
                                          (OomCounts(host=11, cgroup=5), "oom")])
def test_kill_9_of_a_case_process_is_killed_unless_the_oom_killer_counted_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault_plugin: str, after: OomCounts, status: str) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    monkeypatch.setenv("LLMBENCH_TEST_PID_DIR", str(pid_dir))
    monkeypatch.setattr(isolation, "_kernel_log_names", lambda pid, since_us: False)
    monkeypatch.setattr(isolation, "oom_counts", counts(OomCounts(host=10, cgroup=4), after))
    suite = load_suite(str(write(tmp_path, SLEEP.format(seconds=300))))
    killer = _kill_when_it_sleeps(pid_dir)
    (case,) = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu"))).cases
    killer.join()
    assert case.status == status, case.reason
    assert case.reason is not None and case.reason.startswith("the case process was killed by")
