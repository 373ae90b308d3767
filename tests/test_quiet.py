"""Timed windows kept apart from set-ups and from each other (measure/quiet.py): cases side by side on
one host never time while a neighbour sets up or times, never start a set-up while a neighbour times,
and wait on nobody alone.
Real processes, as the case processes of a parallel run are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llmbench.harness.launch import GpuSlots
from llmbench.measure import quiet
from llmbench.measure.quiet import QUIET_ENV
from tests.conftest import EVENT_S, wait_for

# A case process of a parallel run, as the worker calls measure/quiet.py. Its set-up and timed part last
# `setup` and `timed`: seconds, or until a file of that path exists (the test's go: what a phase waits on is
# then an event, not a race against the host's speed). Whenever quiet.py holds it up, it touches
# <out>.waiting (quiet's progress callback, called once it waits on a neighbour).
CASE = """
import json, os, sys, time
from llmbench.measure import quiet
setup, timed, out = sys.argv[1], sys.argv[2], sys.argv[3]
cases = int(sys.argv[4]) if len(sys.argv) > 4 else 1  # more than one: a share group's cases in one process
ready = len(sys.argv) > 5  # it starts ready to time (its set-up was over before it was asked for)
def hold(what):
    try:
        time.sleep(float(what))
    except ValueError:
        while not os.path.exists(what):
            time.sleep(0.01)
def waiting(_fraction, _text):
    open(out + ".waiting", "a").close()
info, t, later = {}, {}, []
if not ready:
    quiet.setup(progress=waiting)  # as the worker does at its start, before there is a case's info
for n in range(cases):
    if not ready:
        quiet.setup(info, waiting)  # and before each case: the wait above is noted in the first
    t["setup_start"] = time.time()
    hold(setup)
    t["setup_end"] = time.time()
    quiet.timed(info, waiting)
    t["timed_start"] = time.time()
    hold(timed)
    t["timed_end"] = time.time()
    later.append(dict(t))
json.dump({**later[0], **info, "cases": later}, open(out, "w"))
"""


def _case(folder: Path, setup: float | Path, timed: float | Path, out: Path, cases: int = 1,
          ready: bool = False) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != quiet.CASE_ENV}
    args = [str(setup), str(timed), str(out), str(cases)] + (["ready"] if ready else [])
    return subprocess.Popen([sys.executable, "-c", CASE, *args], env={**env, QUIET_ENV: str(folder)})


def _phase_of(folder: Path, pid: int, phase: str) -> None:
    wait_for(f"case {pid} reaching {phase}", lambda: quiet.phases(folder).get(pid) == phase)


def _waiting(out: Path) -> None:
    """Until the case writing `out` is held up by a neighbour (quiet.py said so through its progress)."""
    wait_for(f"{out.name}'s case waiting on a neighbour", Path(f"{out}.waiting").exists)


def _ended(*procs: subprocess.Popen[bytes]) -> None:
    assert all(p.wait(EVENT_S) == 0 for p in procs)


def _results(folder: Path, *names: str) -> list[dict[str, Any]]:
    return [json.loads((folder / f"{n}.json").read_text()) for n in names]


def _apart(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Two windows, one over before the other began (whichever first)."""
    return a[1] <= b[0] or b[1] <= a[0]


def _timed(r: dict[str, Any]) -> tuple[float, float]:
    return r["timed_start"], r["timed_end"]


def test_a_case_times_only_after_its_neighbours_set_up_ends(tmp_path: Path) -> None:
    go = tmp_path / "go"
    a = _case(tmp_path, go, 0.2, tmp_path / "a.json")  # a long set-up (a compilation), over at the test's go
    _phase_of(tmp_path, a.pid, quiet.SETUP)
    b = _case(tmp_path, 0.0, 0.2, tmp_path / "b.json")  # ready to time at once
    _waiting(tmp_path / "b.json")  # b is held up by a's set-up
    go.touch()
    _ended(a, b)
    ra, rb = _results(tmp_path, "a", "b")
    assert rb["timed_start"] >= ra["setup_end"]
    assert rb["quiet_wait_s"] > 0  # the one that waited says so
    moves = {phase: (asked, entered) for phase, asked, entered in rb["quiet_phases_unix"]}  # as the case notes them
    asked, entered = moves["timed"]  # (rounded to the millisecond)
    assert list(moves) == ["setup", "timed"] and asked - 0.001 < ra["setup_end"] <= entered + 0.001
    # a's set-up ends with b ready to time: either times first (a asks as its set-up ends, b looks again
    # within quiet.POLL_S), never both at once
    assert _apart(_timed(ra), _timed(rb)), (ra, rb)


def test_a_set_up_starts_only_after_a_neighbours_timed_part_ends(tmp_path: Path) -> None:
    go = tmp_path / "go"
    a = _case(tmp_path, 0.0, go, tmp_path / "a.json")  # a long timed part, over at the test's go
    _phase_of(tmp_path, a.pid, quiet.TIMED)
    b = _case(tmp_path, 0.1, 0.0, tmp_path / "b.json")
    _waiting(tmp_path / "b.json")  # b's set-up is held up by a's timed part
    go.touch()
    _ended(a, b)
    ra, rb = _results(tmp_path, "a", "b")
    assert rb["setup_start"] >= ra["timed_end"] and rb["quiet_wait_s"] > 0


def _windows(*results: dict[str, Any]) -> list[tuple[float, float]]:
    return sorted((c["timed_start"], c["timed_end"]) for r in results for c in r["cases"])


def test_timed_parts_never_overlap(tmp_path: Path) -> None:
    go = tmp_path / "go"
    a = _case(tmp_path, 0.0, go, tmp_path / "a.json")  # ready to time at about the same moment; each timed
    b = _case(tmp_path, 0.0, go, tmp_path / "b.json")  # part lasts until the test's go
    # one times (or sets up) first; the other is held up by it, before its set-up or before it times
    wait_for("one case timing and the other held up",
             lambda: (quiet.TIMED in quiet.phases(tmp_path).values()
                      and any(Path(f"{tmp_path / n}.json.waiting").exists() for n in "ab")))
    go.touch()
    _ended(a, b)
    ra, rb = _results(tmp_path, "a", "b")
    (_, first_end), (second_start, _) = _windows(ra, rb)
    assert second_start >= first_end
    assert max(ra.get("quiet_wait_s", 0), rb.get("quiet_wait_s", 0)) > 0  # one waited for the other's part


def test_a_share_groups_next_case_lets_a_ready_neighbour_time(tmp_path: Path) -> None:
    go = tmp_path / "go"
    a = _case(tmp_path, 0.0, go, tmp_path / "a.json", cases=2)  # two cases in one process, as a share group
    _phase_of(tmp_path, a.pid, quiet.TIMED)
    b = _case(tmp_path, 0.0, 0.5, tmp_path / "b.json", ready=True)  # ready while a's first case times
    _phase_of(tmp_path, b.pid, quiet.READY)
    go.touch()  # a's first case ends its timed part
    _ended(a, b)  # a's next set-up waits for b, which no longer waits for a
    ra, rb = _results(tmp_path, "a", "b")
    first, second = ra["cases"]
    assert first["timed_end"] <= rb["timed_start"] and rb["timed_end"] <= second["setup_start"]


def test_set_ups_overlap_set_ups_and_a_gone_case_counts_for_nothing(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (tmp_path / f"{dead}.json").write_text(json.dumps({"phase": quiet.TIMED}))  # a case process killed mid-window
    go = tmp_path / "go"
    a = _case(tmp_path, go, 0.0, tmp_path / "a.json")  # set-ups over at the test's go
    b = _case(tmp_path, go, 0.0, tmp_path / "b.json")
    _phase_of(tmp_path, a.pid, quiet.SETUP)  # both set up at once, neither waiting on the dead case's window
    _phase_of(tmp_path, b.pid, quiet.SETUP)
    go.touch()
    _ended(a, b)
    ra, rb = _results(tmp_path, "a", "b")
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
