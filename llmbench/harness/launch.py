"""The GPU-slot owner of the launcher layer: which GPUs each running case holds. The runner decides
what runs and writes the result set; it asks this module where a case goes and a launcher
(harness/launchers/) to run it there.

`GpuSlots` owns the --gpus entries (slots): which running case holds which, handed out in --gpus order
(as many as the case's placement asks), given back when the case ends; a case gets its slots as
CUDA_VISIBLE_DEVICES (`SlotGrant.env`), set before torch is imported in its process, and, side by side
with others, its slots' share of the host's cores (hardware/cpus.py), which it binds itself to."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from llmbench.errors import UserError
from llmbench.hardware import nvml
from llmbench.hardware.cpus import CPUS_ENV, cpu_list, cpu_shares
from llmbench.harness.isolation import check_gpus, child_env
from llmbench.measure.quiet import QUIET_ENV
from llmbench.suite import CaseSpec


def gpu_slots(gpus: str | None) -> list[str]:
    """The --gpus entries, each a slot a case process can be pinned to."""
    return [g for g in (gpus or "").replace(" ", "").split(",") if g]


def visible_gpus() -> list[str]:
    """The GPUs a session here may place cases on: CUDA_VISIBLE_DEVICES's entries where it is set, else
    every GPU NVML finds, by index; none where a GPU is in MIG mode (its instances are named by UUID:
    give them with --gpus)."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return [g for g in gpu_slots(given) if g != "-1"]
    hs = nvml.handles()
    if any((nvml.call("nvmlDeviceGetMigMode", h) or (0,))[0] for h in hs):
        return []
    return [str(i) for i in range(len(hs))]


def node_placement(gpus: str | None, parallel: bool | None, cpu: bool) -> tuple[str | None, bool]:
    """--gpus and --parallel as a session runs them: as said where --parallel or --no-parallel is given;
    unsaid, cases go side by side over every slot where there are several (the --gpus given, else every
    visible GPU), as on one GPU otherwise (and with --cpu)."""
    if parallel is not None or cpu:
        return gpus, bool(parallel)
    slots = gpu_slots(gpus) if gpus is not None else visible_gpus()
    return (",".join(slots), True) if len(slots) > 1 else (gpus, False)


def slots_needed(case: CaseSpec) -> int:
    """How many GPUs a case takes: its placement's."""
    return case.placement.gpus


def check_parallel(gpus: str | None, parallel: bool) -> None:
    """--parallel needs several slots to run cases side by side."""
    if parallel and len(gpu_slots(gpus)) < 2:
        raise UserError(f"--parallel needs several GPUs in --gpus (e.g. --gpus 0,1 or MIG UUIDs), got {gpus!r}")


@dataclass(frozen=True)
class SlotGrant:
    """Where one case runs: the slots it holds, its CUDA_VISIBLE_DEVICES (None: the machine's own, no
    --gpus) and the environment of its process."""

    slots: tuple[str, ...]
    visible: str | None
    env: dict[str, str]


class GpuSlots:
    """The --gpus entries of a run and which of them the running cases hold. A serial run places each
    case on the first of them its placement asks for (`first`); a parallel one hands each case the first
    free slots it needs (`take`, in --gpus order) and gets them back when it ends (`release`)."""

    def __init__(self, gpus: str | None, extra_env: dict[str, str] | None = None, quiet: bool = True) -> None:
        self.gpus = gpus
        self.slots = gpu_slots(gpus)
        self.extra_env = dict(extra_env or {})
        self._free = list(self.slots)
        self._alone = False  # an exclusive case holds the run's GPUs to itself
        self._cpus: dict[str, tuple[int, ...]] | None = None  # each slot's share of the host's cores (`take`)
        self._phases: Path | None = None  # the cases' phase folder, side by side (`phases`)
        self.quiet = quiet  # units side by side keep their timed windows apart from set-ups (measure/quiet.py)

    def whole(self) -> SlotGrant:
        """Every --gpus entry (or the machine's GPUs when none is given): a serial run's cases, the fingerprint."""
        return SlotGrant(tuple(self.slots), self.gpus, child_env(self.gpus, self.extra_env))

    def first(self, need: int, run: SlotGrant) -> SlotGrant:
        """A serial run's unit: the first `need` --gpus entries (the machine's GPUs in order without
        --gpus), so a case holds, and records, the GPUs its placement asks for; the run's own grant `run`
        where it asks for all of them or none are known (a CPU run)."""
        if not self.slots or need >= len(self.slots):
            return run
        visible = ",".join(self.slots[:need])
        return SlotGrant(tuple(self.slots[:need]), visible, {**run.env, "CUDA_VISIBLE_DEVICES": check_gpus(visible)})

    def too_many(self, need: int) -> str | None:
        """Why a case needing `need` slots can never run in this run (a skip reason); None when it can."""
        return f"the case needs {need} GPUs; --gpus gives {len(self.slots)}" if need > len(self.slots) else None

    def take(self, need: int, exclusive: bool = False) -> SlotGrant | None:
        """The first `need` free slots, now held, with their case process's environment (`claim`): a unit
        that may have others beside it is bound to its slots' share of the host's cores (`CPUS_ENV`); an
        exclusive one keeps every core."""
        taken = self.claim(need, exclusive)
        if taken is None:
            return None
        visible = ",".join(taken)
        env = child_env(visible, self.extra_env)
        if not exclusive and len(taken) < len(self.slots):
            env[CPUS_ENV] = self.cpus_of(taken)
            if self.quiet:
                env[QUIET_ENV] = str(self.phases())
        return SlotGrant(taken, visible, env)

    def phases(self) -> Path:
        """The folder where the cases side by side keep their phases (measure/quiet.py): made at the first
        unit that has others beside it, removed by `close`."""
        if self._phases is None:
            self._phases = Path(tempfile.mkdtemp(prefix=f"llmbench-case-{os.getpid()}-quiet-"))
        return self._phases

    def close(self) -> None:
        """The run is over: its phase folder goes."""
        if self._phases is not None:
            shutil.rmtree(self._phases, ignore_errors=True)
            self._phases = None

    def cpus_of(self, slots: tuple[str, ...]) -> str:
        """The host CPUs of `slots`: each slot of the run has an equal share of the cores, in --gpus order."""
        if self._cpus is None:
            self._cpus = dict(zip(self.slots, cpu_shares(len(self.slots)), strict=True))
        return cpu_list(c for s in slots for c in self._cpus[s])

    def claim(self, need: int, exclusive: bool = False) -> tuple[str, ...] | None:
        """The first `need` free slots, now held; None while fewer are free (units wait in order), and
        for an `exclusive` unit until every slot is free; nothing else starts beside it. The one rule of
        who starts when: the runner's `take` and the quotes' timeline (harness/schedule.py) both call it."""
        if need > len(self._free) or self._alone or (exclusive and len(self._free) < len(self.slots)):
            return None
        self._alone = exclusive
        taken, self._free = self._free[:need], self._free[need:]
        return tuple(taken)

    def release(self, placement: SlotGrant | tuple[str, ...]) -> None:
        """A unit ended: its slots are free again, back in --gpus order."""
        held = placement.slots if isinstance(placement, SlotGrant) else placement
        self._free = [s for s in self.slots if s in self._free or s in held]
        self._alone = False
