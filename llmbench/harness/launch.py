"""The GPU-slot owner of the launcher layer: which GPUs each running case holds. The runner decides
what runs and writes the result set; it asks this module where a case goes and a launcher
(harness/launchers/) to run it there.

`GpuSlots` owns the --gpus entries (slots): which running case holds which, handed out in --gpus order
(as many as the case's placement asks), given back when the case ends; a case gets its slots as
CUDA_VISIBLE_DEVICES (`SlotGrant.env`), set before torch is imported in its process."""

from __future__ import annotations

from dataclasses import dataclass

from llmbench.errors import UserError
from llmbench.harness.isolation import child_env
from llmbench.suite import CaseSpec


def gpu_slots(gpus: str | None) -> list[str]:
    """The --gpus entries, each a slot a case process can be pinned to."""
    return [g for g in (gpus or "").replace(" ", "").split(",") if g]


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
    case on all of them (`whole`); a parallel one hands each case the first free slots it needs
    (`take`, in --gpus order) and gets them back when it ends (`release`)."""

    def __init__(self, gpus: str | None, extra_env: dict[str, str] | None = None) -> None:
        self.gpus = gpus
        self.slots = gpu_slots(gpus)
        self.extra_env = dict(extra_env or {})
        self._free = list(self.slots)
        self._alone = False  # an exclusive case holds the run's GPUs to itself

    def whole(self) -> SlotGrant:
        """Every --gpus entry (or the machine's GPUs when none is given): a serial run's cases, the fingerprint."""
        return SlotGrant(tuple(self.slots), self.gpus, child_env(self.gpus, self.extra_env))

    def too_many(self, need: int) -> str | None:
        """Why a case needing `need` slots can never run in this run (a skip reason); None when it can."""
        return f"the case needs {need} GPUs; --gpus gives {len(self.slots)}" if need > len(self.slots) else None

    def take(self, need: int, exclusive: bool = False) -> SlotGrant | None:
        """The first `need` free slots, now held; None while fewer are free (cases wait in order), and
        for an `exclusive` case (its placement's) until every slot is free; nothing else starts beside it."""
        if need > len(self._free) or self._alone or (exclusive and len(self._free) < len(self.slots)):
            return None
        self._alone = exclusive
        taken, self._free = self._free[:need], self._free[need:]
        visible = ",".join(taken)
        return SlotGrant(tuple(taken), visible, child_env(visible, self.extra_env))

    def release(self, placement: SlotGrant) -> None:
        """A case ended: its slots are free again, back in --gpus order."""
        self._free = [s for s in self.slots if s in self._free or s in placement.slots]
        self._alone = False
