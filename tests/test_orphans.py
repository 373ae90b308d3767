"""Nothing a case starts outlives it or its runner: a runner killed with kill -9 takes its case process
(a share group's too) and what that started with it; a child that left the case's process group is
stopped when the case ends; a share group whose session does not close is stopped in time; an
interrupt keeps every case a group finished; an allocation failure on the CPU is `oom`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmbench.harness import isolation
from llmbench.harness.runner import RunOptions, run_suite
from llmbench.harness.ui import UI
from llmbench.harness.worker import run_case
from llmbench.results import load
from llmbench.suite import load_suite
from tests.conftest import EVENT_S, ROOT, write

SETTINGS = "[defaults]\nmin_iters = 1\nmin_seconds = 0.0\nwarmup_iters = 0\n"


def running(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for init to reap it runs no more)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(running(p) for p in pids)


def _pids(folder: Path, suffix: str, seconds: float = EVENT_S, step: float = 0.05) -> list[int]:
    """The pids noted in `folder` as <pid><suffix> (tests/plugins/fault_scenarios.py), once there are any."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [int(f.name[: -len(suffix)]) for f in folder.glob(f"*{suffix}")]
        if found:
            return found
        time.sleep(step)
    raise AssertionError(f"no *{suffix} in {folder} within {seconds:g}s")


def _runner(suite: Path, out: Path, pids: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "llmbench", "run", str(suite), "--out", str(out), "--cpu"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        env={**os.environ, "LLMBENCH_TEST_PID_DIR": str(pids)},
    )


SLEEPER = f"""name = "sleeper"
{SETTINGS}timeout_s = 120
[[case]]
scenario = "fault"
kind = "sleep"
seconds = 60.0
detach_child = true
"""

GROUP = f"""name = "group"
share_engines = true
{SETTINGS}timeout_s = 120
[[case]]
scenario = "shared"
tag = 0
[[case]]
scenario = "shared"
tag = 1
seconds = 60.0
"""


@pytest.mark.slow
@pytest.mark.parametrize(("text", "suffix"), [(SLEEPER, ".pid"), (GROUP, "-1.shared")], ids=["case", "share-group"])
def test_kill_9_of_the_runner_stops_its_case_process_and_what_that_started(
        tmp_path: Path, fault_plugin: str, text: str, suffix: str) -> None:
    """kill -9 of `llmbench run` mid-case: the case process (a lone case's, or a share group's, which
    would go on to run the group's other cases) and the child it started in a session of its own
    (as torchrun starts ranks) end within seconds, not at their timeout, nor never."""
    pids = tmp_path / "pids"
    pids.mkdir()
    proc = _runner(write(tmp_path, text), tmp_path / "out", pids)
    case = _pids(pids, suffix)
    children = [int(f.stem) for f in pids.glob("*.child")]
    assert all(running(p) for p in case + children)
    proc.kill()
    proc.wait()
    # within seconds (a loaded host's seconds): well before the case's 60 s sleep or its timeout ended it
    assert gone_within(case + children, 30.0), [p for p in case + children if running(p)]


DETACHED = f"""name = "detached"
{SETTINGS}[[case]]
scenario = "fault"
kind = "ok"
detach_child = true
[[case]]
scenario = "fault"
kind = "hang"
detach_child = true
timeout_s = 15
"""


@pytest.mark.slow
def test_a_child_in_a_session_of_its_own_is_stopped_when_its_case_ends(
        tmp_path: Path, fault_plugin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A case's child that called setsid escapes the process-group kill; it carries the case's marker,
    so it is stopped when the case ends, ok or timed out."""
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("LLMBENCH_TEST_PID_DIR", str(pids))
    suite = load_suite(str(write(tmp_path, DETACHED)))
    rs = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu")))
    assert [c.status for c in rs.cases] == ["ok", "timeout"]
    children = [int(f.stem) for f in pids.glob("*.child")]
    assert len(children) == 2
    assert gone_within(children, EVENT_S), [p for p in children if running(p)]


class _Heard(UI):
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, text: str) -> None:
        self.warnings.append(text)


HANGING_CLOSE = f"""name = "hanging-close"
share_engines = true
{SETTINGS}timeout_s = 60
[[case]]
scenario = "shared"
tag = 0
close = "hang"
[[case]]
scenario = "shared"
tag = 1
"""


@pytest.mark.slow
def test_a_share_group_whose_session_does_not_close_is_stopped_in_time_and_said(
        tmp_path: Path, fault_plugin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session whose close() hangs no longer holds the run for the sum of the cases' timeouts: the
    group's process is stopped SESSION_CLOSE_S after its last case, the run says so, its cases stay."""
    monkeypatch.setattr(isolation, "SESSION_CLOSE_S", 2.0, raising=False)
    suite = load_suite(str(write(tmp_path, HANGING_CLOSE)))
    ui = _Heard()
    t0 = time.monotonic()
    rs = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu"), ui))
    took = time.monotonic() - t0  # without the bound: the cases' timeouts and SESSION_CLOSE_S, 122 s
    assert took < 60, f"the run took {took:.1f} s"
    assert [(c.status, c.info["share_group"]["ran"]) for c in rs.cases] == [("ok", "in group")] * 2
    assert rs.finished_at is not None
    said = [w for w in ui.warnings if "did not close" in w]
    assert len(said) == 1 and "stopped" in said[0] and "2 case(s)" in said[0], ui.warnings


@pytest.mark.slow
def test_sigterm_right_after_a_share_group_case_ended_keeps_that_case(tmp_path: Path, fault_plugin: str) -> None:
    """SIGTERM a moment after a group's case ended (its file written, the runner not yet looking):
    only the case in flight is lost; the one that ended is in the result set."""
    pids = tmp_path / "pids"
    pids.mkdir()
    out = tmp_path / "out"
    proc = _runner(write(tmp_path, GROUP), out, pids)
    (worker,) = _pids(pids, "-1.shared", step=0.005)  # the second case started: the first one's file is there
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=EVENT_S)
    assert proc.returncode == 130, err.decode()[-2000:]
    rs = load(next(out.glob("*/group-*.json")))
    assert [(c.params["tag"], c.status) for c in rs.cases] == [(0, "ok")]
    assert rs.finished_at is None
    assert gone_within([worker], EVENT_S)


def test_an_allocation_failure_on_the_cpu_is_oom(fault_plugin: str) -> None:
    """torch's CPU allocator raises a RuntimeError ("can't allocate memory"), not an OutOfMemoryError;
    a process that died of a MemoryError leaves only its traceback. Both ran out of memory."""
    spec = {"scenario": "fault", "params": {"kind": "cpu_alloc"}, "device": "cpu"}
    out = run_case(spec)
    assert out["status"] == "oom", out["reason"]
    assert "can't allocate memory" in out["reason"]
    assert run_case({**spec, "params": {"kind": "oom"}})["status"] == "oom"  # MemoryError, as before
    tail = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nMemoryError\n'
    assert isolation._exit_outcome(1, tail, 0.1).status == "oom"
    assert isolation._exit_outcome(1, "ValueError: bad value\n", 0.1).status == "failed"
