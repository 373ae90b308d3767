"""Timed windows kept apart from set-ups and from each other. Cases side by side on one host (`run
--parallel` over several GPUs) have cores of their own, but share the socket's caches, memory bandwidth
and clocks. So a neighbour slows a timed window:
- its set-up (a compilation, an engine start, a model built on the CPU): on 2x H200 a neighbour's
  compilation cost vLLM fp8 decode 1.5-2.7%, well outside that case's 0.14% spread between runs
  (docs/evidence/h200-sxm-141gb/node-control/);
- its timed part: two launch-bound decodes timed together (transformers at batch 1) lost 5-10%, and
  time to first token grew up to 1.9x (docs/evidence/h200-sxm-141gb/node-rule/).

Each case of such a run is in one phase, kept in a file per case in a folder the runner hands every
case process of the run (`QUIET_ENV`):
- `setup`: from the case's start;
- `ready`: while it waits to time;
- `timed`: from its first timed window to its end;
- `between`: its timed part over, while it waits to set up the next case of its share group (one
  process, several cases): it holds up nobody.

A case starts its set-up only while no other case is `ready` or `timed`, and times only while no
other case is in `setup` or `timed`. Set-ups overlap set-ups; a timed part has the host to itself,
as it would alone. What that costs (a case ready before a neighbour's set-up ends waits for it) is in
docs/design.md. A case never waits on itself, a set-up ends without waiting on anyone, and a timed
part ends, so there is no cycle. A load meant to run on every GPU at once (a node-wide burn) is one
case with `placement.replicas`: its copies are one case.

A case is its case process: its ranks, replica copies and engine processes inherit `CASE_ENV` and
speak for it. A file whose case process is gone (ended, even if not yet reaped) counts for nothing.
Without `QUIET_ENV` (a serial run, a case alone) every call returns at once."""

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
# a file the case's first timed window creates (every process of the case inherits the name): a case process
# that dies without a result and without it died in its start-up (harness/isolation.py starts it once more)
TIMING_MARK_ENV = "LLMBENCH_TIMING_MARK"
POLL_S = 0.1
SETUP, READY, TIMED, BETWEEN = "setup", "ready", "timed", "between"
BLOCKED_BY = {SETUP: (READY, TIMED), TIMED: (SETUP, TIMED)}  # what a phase waits out in the other cases

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
            if not nvml.pid_alive(pid):  # a zombie too: its timed part is over
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
    (`quiet_phases_unix`), and the waits' sum (`quiet_wait_s`). At once without QUIET_ENV, where this
    process is in that phase already, or where another process of its case (a rank, a copy) times."""
    global _phase
    folder = os.environ.get(QUIET_ENV)
    if not folder or _phase == phase:
        _note(info)
        return 0.0
    where, pid = Path(folder), _case_pid()
    asked, t0, told = time.time(), time.monotonic(), False
    with _locked(where):
        if phase == TIMED and phases(where).get(pid) == TIMED:  # another process of this case (a rank, a
            _phase = phase  # copy) times already: this one joins its timed part
            _unnoted.append([phase, round(asked, 3), round(asked, 3)])
            _note(info)
            return 0.0
        if phase == TIMED:  # waiting to time: no longer setting up, and new set-ups wait for it
            _write(where, pid, READY)
        elif _phase is not None:  # the next case of a share group: its timed part is over, and a neighbour
            _write(where, pid, BETWEEN)  # ready to time must not wait for it while it waits for that one
    while True:
        with _locked(where):
            blocking = sorted(p for p, ph in phases(where, but=pid).items() if ph in BLOCKED_BY[phase])
            if not blocking:
                _write(where, pid, phase)
                break
        if progress is not None and not told:
            progress(0.0, f"waiting for {len(blocking)} case(s) beside it to "
                          f"{'finish setting up or timing' if phase == TIMED else 'finish timing'}")
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
    on its own clock). Marks, at once, that the case's timed part has begun (`TIMING_MARK_ENV`)."""
    mark_timing()
    return enter(TIMED, info, progress)


def mark_timing() -> None:
    """Create the case's timing mark (`TIMING_MARK_ENV`), where its case process names one."""
    mark = os.environ.get(TIMING_MARK_ENV)
    if mark:
        with contextlib.suppress(OSError):
            Path(mark).touch()
