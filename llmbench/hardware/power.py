"""The GPU power limit as a benchmark axis: read it, set it for one case, and always put it back (the
original goes to a state file before anything changes, so a killed run's limit is restored on the next
start). NVML is an injectable backend, so tests never touch a real GPU. docs/scenarios.md (`power-sweep`)."""

from __future__ import annotations

import itertools
import json
import os
import signal
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.hardware import nvml

NVML_ERROR_NO_PERMISSION = 4  # pynvml.NVML_ERROR_NO_PERMISSION
STATE_ENV = "LLMBENCH_POWER_STATE"  # where the state file lives (tests, several users)


class PowerLimitError(RuntimeError):
    """The limit could not be read or set; nothing was changed. The message says why."""


def default_state_path() -> Path:
    env = os.environ.get(STATE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "llmbench" / "power-state.json"


@dataclass(frozen=True)
class Limits:
    """Power limits of one GPU in watts."""

    current_w: float
    default_w: float
    min_w: float
    max_w: float


def _pynvml() -> Any:
    nv = nvml.library()
    if nv is None:  # no driver, no nvidia-ml-py
        raise PowerLimitError("NVML is not available; install nvidia-ml-py and an NVIDIA driver")
    return nv


def _text(v: Any) -> str:
    return str(nvml.text(v))


class PowerController:
    """Reads and sets the power limit of one GPU (by NVML handle) with a state file for recovery."""

    def __init__(self, handle: Any, backend: Any | None = None, state_path: Path | None = None) -> None:
        self.nv = backend if backend is not None else _pynvml()
        self.handle = handle
        self.state_path = state_path or default_state_path()
        self.uuid = _text(self.nv.nvmlDeviceGetUUID(handle))

    def limits(self) -> Limits:
        nv, h = self.nv, self.handle
        lo, hi = nv.nvmlDeviceGetPowerManagementLimitConstraints(h)
        return Limits(nv.nvmlDeviceGetPowerManagementLimit(h) / 1000, nv.nvmlDeviceGetPowerManagementDefaultLimit(h)
                      / 1000, lo / 1000, hi / 1000)

    def _set_mw(self, mw: int) -> None:
        try:
            self.nv.nvmlDeviceSetPowerManagementLimit(self.handle, int(mw))
        except self.nv.NVMLError as e:
            if getattr(e, "value", None) == NVML_ERROR_NO_PERMISSION:
                raise PowerLimitError(
                    f"setting the power limit of GPU {self.uuid} needs root (NVML: no permission); nothing was "
                    "changed. Run as root, or leave power_limit_w out of the suite") from e
            raise PowerLimitError(
                f"GPU {self.uuid} refused power limit {mw / 1000:g} W ({e}); nothing was changed") from e

    # -- state file -------------------------------------------------------------------------------
    def _read_state(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.state_path.read_text()))
        except (OSError, ValueError):
            return {}

    def _write_state(self, state: dict[str, Any]) -> None:
        if not state:
            self.state_path.unlink(missing_ok=True)
            return
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.state_path)

    # -- set / restore ----------------------------------------------------------------------------
    def set_limit(self, watts: float) -> float:
        """Set the limit to `watts`, after saving the original in the state file; returns the original.
        Out of the GPU's [min, max] range is an error and nothing is changed."""
        lim = self.limits()
        if not lim.min_w <= watts <= lim.max_w:
            raise PowerLimitError(f"power_limit_w={watts:g} is outside this GPU's range "
                                  f"[{lim.min_w:g}, {lim.max_w:g}] W; nothing was changed")
        state = self._read_state()
        original = state.get(self.uuid, {}).get("original_mw")
        if original is None:  # a limit left by an earlier step keeps its first original
            original = int(lim.current_w * 1000)
            state[self.uuid] = {"original_mw": original, "pid": os.getpid()}
            self._write_state(state)
        try:
            self._set_mw(int(watts * 1000))
        except PowerLimitError:
            self.restore()
            raise
        return original / 1000

    def restore(self) -> float | None:
        """Put back the limit saved in the state file (if any) and forget it; returns the watts restored."""
        state = self._read_state()
        entry = state.get(self.uuid)
        if entry is None:
            return None
        if self.nv.nvmlDeviceGetPowerManagementLimit(self.handle) != entry["original_mw"]:
            self._set_mw(int(entry["original_mw"]))
        del state[self.uuid]
        self._write_state(state)
        return float(entry["original_mw"]) / 1000


def restore_leftover(backend: Any | None = None, state_path: Path | None = None) -> list[str]:
    """Restore limits an llmbench process changed and could not put back (it was killed). Entries of a
    process still running are left alone. Returns one line per GPU restored."""
    path = state_path or default_state_path()
    if not path.exists():
        return []
    nv = backend if backend is not None else _pynvml()
    done = []
    for uuid, entry in json.loads(path.read_text()).items():
        if entry.get("pid") != os.getpid() and nvml.pid_alive(int(entry.get("pid", -1))):
            continue
        ctl = PowerController(nv.nvmlDeviceGetHandleByUUID(uuid), nv, path)
        watts = ctl.restore()
        done.append(f"restored the power limit of GPU {uuid} to {watts:g} W (left changed by a killed run)")
    return done


@contextmanager
def power_limit(watts: float, handle: Any, backend: Any | None = None,
                state_path: Path | None = None) -> Iterator[PowerController]:
    """Hold the GPU at `watts` inside the block; the original limit comes back on a normal end, on an
    exception and on SIGTERM (turned into SystemExit so the block unwinds)."""
    nv = backend if backend is not None else _pynvml()
    restore_leftover(nv, state_path)
    ctl = PowerController(handle, nv, state_path)
    previous = signal.getsignal(signal.SIGTERM)

    def _on_term(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _on_term)
    try:
        ctl.set_limit(watts)
        yield ctl
    finally:
        try:
            ctl.restore()
        finally:
            signal.signal(signal.SIGTERM, previous)


def case_power_limit(watts: float | None) -> AbstractContextManager[Any]:
    """The power limit of a case (a `power_limit_w` param) on the GPU torch calls cuda:0; no-op for None."""
    if watts is None:
        return nullcontext()
    import torch

    if not torch.cuda.is_available():
        raise PowerLimitError(f"power_limit_w={watts:g} needs an NVIDIA GPU; none is visible")
    from llmbench.hardware import nvml

    handle = nvml.handle_by_uuid(str(torch.cuda.get_device_properties(0).uuid))
    if handle is None:
        raise PowerLimitError("power_limit_w: NVML cannot find the GPU this case runs on")
    return power_limit(watts, handle)


def watts_for_fraction(points: Sequence[tuple[float, float]],
                       fractions: Sequence[float] = (0.8, 0.9, 0.95)) -> dict[float, float | None]:
    """The least power (W) at which speed reaches each fraction of the best speed measured.

    `points` are (watts, speed) of one workload swept over power limits. Speed is taken as a
    piecewise-linear function of watts between the measured points (an interpolation, not a
    measurement): the answer for a fraction is where that line first crosses fraction x best. Below
    the lowest measured limit nothing is known: a fraction already reached there answers that lowest
    limit (an upper bound of the true figure)."""
    pts = sorted((float(w), float(s)) for w, s in points)
    if not pts:
        return {f: None for f in fractions}
    best = max(s for _, s in pts)
    out: dict[float, float | None] = {}
    for f in fractions:
        target = f * best
        out[f] = None
        if pts[0][1] >= target:
            out[f] = pts[0][0]
            continue
        for (w0, s0), (w1, s1) in itertools.pairwise(pts):
            if s0 < target <= s1:
                out[f] = w0 + (target - s0) * (w1 - w0) / (s1 - s0)
                break
    return out


def startup_restore(backend: Any | None = None, state_path: Path | None = None) -> list[str]:
    """For the start of a run: restore limits a killed run left changed; lines to show the user. Never
    raises: without NVML or root the line says what is left changed and how to fix it."""
    path = state_path or default_state_path()
    if not path.exists():
        return []
    try:
        return restore_leftover(backend, path)
    except (PowerLimitError, OSError, ValueError) as e:
        return [f"a power limit left changed by a killed llmbench run could not be restored ({e}); run "
                f"llmbench as root once, or restore it with nvidia-smi -pl and delete {path}"]
