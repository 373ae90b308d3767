"""Timed windows kept apart from set-ups and from each other (measure/quiet.py): cases side by side on
one host never time while a neighbour sets up or times, never start a set-up while a neighbour times,
and wait on nobody alone.
Real processes, as the case processes of a parallel run are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from llmbench.harness.launch import GpuSlots
from llmbench.measure import quiet
from llmbench.measure.quiet import QUIET_ENV

CASE = """
import json, sys, time
from llmbench.measure import quiet
setup_s, timed_s, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
cases = int(sys.argv[4]) if len(sys.argv) > 4 else 1  # more than one: a share group's cases in one process
ready = len(sys.argv) > 5  # it starts ready to time (its set-up was over before it was asked for)
info, t, later = {}, {}, []
if not ready:
    quiet.setup()  # as the worker does at its start, before there is a case's info
for n in range(cases):
    if not ready:
        quiet.setup(info)  # and before each case: the wait above is noted in the first
    t["setup_start"] = time.time()
    time.sleep(setup_s)
    t["setup_end"] = time.time()
    quiet.timed(info)
    t["timed_start"] = time.time()
    time.sleep(timed_s)
    t["timed_end"] = time.time()
    later.append(dict(t))
json.dump({**later[0], **info, "cases": later}, open(out, "w"))
"""


def _case(folder: Path, setup_s: float, timed_s: float, out: Path, cases: int = 1,
          ready: bool = False) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != quiet.CASE_ENV}
    args = [str(setup_s), str(timed_s), str(out), str(cases)] + (["ready"] if ready else [])
    return subprocess.Popen([sys.executable, "-c", CASE, *args], env={**env, QUIET_ENV: str(folder)})


def _phase_of(folder: Path, pid: int, phase: str, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if quiet.phases(folder).get(pid) == phase:
            return
        time.sleep(0.02)
    raise AssertionError(f"case {pid} never reached {phase}")


def test_a_case_times_only_after_its_neighbours_set_up_ends(tmp_path: Path) -> None:
    a = _case(tmp_path, 1.5, 0.2, tmp_path / "a.json")  # a long set-up (a compilation)
    _phase_of(tmp_path, a.pid, quiet.SETUP)
    b = _case(tmp_path, 0.0, 0.2, tmp_path / "b.json")  # ready to time at once
    assert a.wait(30) == 0 and b.wait(30) == 0
    ra, rb = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    assert rb["timed_start"] >= ra["setup_end"]
    assert rb["quiet_wait_s"] > 0.5  # the one that waited says so
    # a's set-up ends with b waiting to time: the first to ask times first; a, where it came second (a loaded
    # host), waited for b's timed part only, never for a set-up
    assert "quiet_wait_s" not in ra or ra["timed_start"] >= rb["timed_end"]
    moves = {phase: (asked, entered) for phase, asked, entered in rb["quiet_phases_unix"]}  # as the case notes them
    assert list(moves) == ["setup", "timed"] and moves["timed"][1] - moves["timed"][0] > 0.5


def test_a_set_up_starts_only_after_a_neighbours_timed_part_ends(tmp_path: Path) -> None:
    a = _case(tmp_path, 0.0, 1.5, tmp_path / "a.json")  # a long timed part
    _phase_of(tmp_path, a.pid, quiet.TIMED)
    b = _case(tmp_path, 0.1, 0.0, tmp_path / "b.json")
    assert a.wait(30) == 0 and b.wait(30) == 0
    ra, rb = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    assert rb["setup_start"] >= ra["timed_end"] and rb["quiet_wait_s"] > 0.5


def _windows(*results: dict[str, Any]) -> list[tuple[float, float]]:
    return sorted((c["timed_start"], c["timed_end"]) for r in results for c in r["cases"])


def test_timed_parts_never_overlap(tmp_path: Path) -> None:
    a = _case(tmp_path, 0.5, 1.0, tmp_path / "a.json")  # ready to time at about the same moment
    b = _case(tmp_path, 0.5, 1.0, tmp_path / "b.json")
    assert a.wait(30) == 0 and b.wait(30) == 0
    ra, rb = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    (_, first_end), (second_start, _) = _windows(ra, rb)
    assert second_start >= first_end
    assert max(ra.get("quiet_wait_s", 0), rb.get("quiet_wait_s", 0)) > 0.5  # one waited for the other's part


def test_a_share_groups_next_case_lets_a_ready_neighbour_time(tmp_path: Path) -> None:
    a = _case(tmp_path, 0.0, 1.0, tmp_path / "a.json", cases=2)  # two cases in one process, as a share group
    _phase_of(tmp_path, a.pid, quiet.TIMED)
    b = _case(tmp_path, 0.0, 0.5, tmp_path / "b.json", ready=True)  # ready while a's first case times
    _phase_of(tmp_path, b.pid, quiet.READY)
    assert a.wait(30) == 0 and b.wait(30) == 0  # a's next set-up waits for b, which no longer waits for a
    ra, rb = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    first, second = ra["cases"]
    assert first["timed_end"] <= rb["timed_start"] and rb["timed_end"] <= second["setup_start"]


def test_set_ups_overlap_set_ups_and_a_gone_case_counts_for_nothing(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (tmp_path / f"{dead}.json").write_text(json.dumps({"phase": quiet.TIMED}))  # a case process killed mid-window
    a = _case(tmp_path, 0.8, 0.0, tmp_path / "a.json")
    b = _case(tmp_path, 0.8, 0.0, tmp_path / "b.json")
    assert a.wait(30) == 0 and b.wait(30) == 0
    ra, rb = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    assert ra["setup_start"] < rb["setup_end"] and rb["setup_start"] < ra["setup_end"]  # at the same time
    assert not (tmp_path / f"{dead}.json").exists()


def test_outside_a_parallel_run_nothing_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUIET_ENV, raising=False)
    info: dict[str, float] = {}
    assert quiet.setup(info) == 0.0 and quiet.timed(info) == 0.0 and info == {}


def test_only_units_with_neighbours_get_the_phase_folder() -> None:
    slots = GpuSlots("0,1")
    first, second = slots.take(1), slots.take(1)
    assert first is not None and second is not None
    folder = Path(first.env[QUIET_ENV])
    assert folder.is_dir() and second.env[QUIET_ENV] == str(folder)  # one folder for the run
    slots.release(first)
    slots.release(second)
    alone = slots.take(1, exclusive=True)
    assert alone is not None and QUIET_ENV not in alone.env
    slots.release(alone)
    both = slots.take(2)
    assert both is not None and QUIET_ENV not in both.env
    slots.close()
    assert not folder.exists()
