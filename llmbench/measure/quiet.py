"""Timed windows kept apart from set-ups. Cases side by side on one host (`run --parallel` over several
GPUs) have cores of their own, but share the socket's caches, memory bandwidth and clocks. So a
neighbour's set-up slows a timed window: a compilation, an engine start, a model built on the CPU. On
2x H200 a neighbour's compilation cost vLLM fp8 decode 1.5-2.7%, well outside that case's 0.14% spread
between runs (docs/evidence/h200-sxm-141gb/issue41-node-control/).

Each case of such a run is in one phase, kept in a file per case in a folder the runner hands every
case process of the run (`QUIET_ENV`):
- `setup`: from the case's start;
- `ready`: while it waits to time;
- `timed`: from its first timed window to its end.

A case starts its set-up only while no other case is `ready` or `timed`, and times only while no
other case is in `setup`. Set-ups overlap set-ups, and timed windows overlap timed windows. A case
never waits on itself, and a set-up ends without waiting on anyone, so there is no cycle.

A case is its case process: its ranks, replica copies and engine processes inherit `CASE_ENV` and
speak for it. A file whose case process is gone counts for nothing. Without `QUIET_ENV` (a serial run,
a case alone) every call returns at once."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from llmbench.hardware import nvml

QUIET_ENV = "LLMBENCH_QUIET"  # the run's phase folder (harness/launch.GpuSlots.take)
CASE_ENV = "LLMBENCH_QUIET_CASE"  # the pid of the case process this process works for
POLL_S = 0.1
SETUP, READY, TIMED = "setup", "ready", "timed"
BLOCKED_BY = {SETUP: (READY, TIMED), TIMED: (SETUP,)}  # what a phase waits out in the other cases

_phase: str | None = None  # this process's last phase (a rank or copy calls timed() once per window)
_unnoted: list[list[Any]] = []  # phases entered before there was an info to note them in (the worker's start)


def _case_pid() -> int:
    """The case this process works for: its case process's pid, set here in the case process itself."""
    if CASE_ENV not in os.environ:
        os.environ[CASE_ENV] = str(os.getpid())
    return int(os.environ[CASE_ENV])


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """The folder's lock: one case at a time reads the others' phases and writes its own."""
    with (folder / ".lock").open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def phases(folder: Path, but: int | None = None) -> dict[int, str]:
    """Every live case's phase in `folder` (but case `but`); a file of a case process that is gone is removed."""
    out: dict[int, str] = {}
    for f in folder.glob("*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            pid = int(f.stem)
            if not nvml.pid_alive(pid):
                f.unlink(missing_ok=True)
            elif pid != but:
                out[pid] = str(json.loads(f.read_text())["phase"])
    return out


def _write(folder: Path, pid: int, phase: str) -> None:
    tmp = folder / f".{pid}.tmp"
    tmp.write_text(json.dumps({"phase": phase, "since_unix": round(time.time(), 3)}))
    tmp.replace(folder / f"{pid}.json")


def enter(phase: str, info: dict[str, Any] | None = None,
          progress: Callable[[float, str], None] | None = None) -> float:
    """Move this case to `phase` (SETUP or TIMED) once no other case is in a phase it waits out; the
    seconds waited. The case's info notes each move, [phase, asked at, entered at] in wall-clock seconds
    (`quiet_phases_unix`), and the waits' sum (`quiet_wait_s`). At once without QUIET_ENV or where this
    process is in that phase already."""
    global _phase
    folder = os.environ.get(QUIET_ENV)
    if not folder or _phase == phase:
        _note(info)
        return 0.0
    where, pid = Path(folder), _case_pid()
    asked, t0, told = time.time(), time.monotonic(), False
    with _locked(where):
        if phase == TIMED:  # waiting to time: no longer setting up, and new set-ups wait for it
            _write(where, pid, READY)
    while True:
        with _locked(where):
            blocking = sorted(p for p, ph in phases(where, but=pid).items() if ph in BLOCKED_BY[phase])
            if not blocking:
                _write(where, pid, phase)
                break
        if progress is not None and not told:
            progress(0.0, f"waiting for {len(blocking)} case(s) beside it to "
                          f"{'finish setting up' if phase == TIMED else 'finish timing'}")
            told = True
        time.sleep(POLL_S)
    _phase = phase
    waited = time.monotonic() - t0
    _unnoted.append([phase, round(asked, 3), round(asked + waited, 3)])
    _note(info)
    return waited


def _note(info: dict[str, Any] | None) -> None:
    """Note the moves not yet noted in `info` (those of the worker's start go in its first case's); a wait
    under 50 ms (the lock's own time) adds nothing to `quiet_wait_s`."""
    if info is None or not _unnoted:
        return
    waited = sum(entered - asked for _, asked, entered in _unnoted)
    if waited >= 0.05:
        info["quiet_wait_s"] = round(float(info.get("quiet_wait_s") or 0.0) + waited, 3)
    info.setdefault("quiet_phases_unix", []).extend(_unnoted)
    _unnoted.clear()


def setup(info: dict[str, Any] | None = None, progress: Callable[[float, str], None] | None = None) -> float:
    """A case's set-up begins: the worker's start, before torch is imported (a wait there is noted in the
    first case's info), and before each case of a share group."""
    return enter(SETUP, info, progress)


def timed(info: dict[str, Any] | None = None, progress: Callable[[float, str], None] | None = None) -> float:
    """A case's timed part begins (its first timed window: CaseContext.measure, or a scenario that times
    on its own clock)."""
    return enter(TIMED, info, progress)
