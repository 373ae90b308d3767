"""The start line of a case's replicas (placement.replicas): each replica process marks itself ready in a
folder the case process gave them all and waits until every one has, so their timed windows run at the
same time; the case process marks the folder stopped when a replica ended before it got there, and the
others stop waiting (harness/launchers/replicas.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POLL_S = 0.05
STOPPED = "stopped"


class ReplicaStopped(RuntimeError):
    """Another replica of the case ended before its timed window: this one's would run alone."""


@dataclass(frozen=True)
class ReplicaSync:
    index: int
    of: int
    folder: Path

    @classmethod
    def from_spec(cls, spec: dict[str, Any] | None) -> ReplicaSync | None:
        if not spec:
            return None
        return cls(int(spec["index"]), int(spec["of"]), Path(spec["folder"]))

    def wait_for_all(self, progress: Callable[[float, str], None] | None = None) -> float:
        """Mark this replica ready and wait for the others (the case's timeout bounds the wait); the
        wall-clock time it was ready. Raises ReplicaStopped when the case process says another one ended."""
        ready = time.time()
        (self.folder / f"ready{self.index}").touch()
        if progress is not None:
            progress(0.0, f"replica {self.index + 1} of {self.of}: waiting for the others")
        while True:
            if (self.folder / STOPPED).exists():
                raise ReplicaStopped("another replica of this case ended before its timed window")
            if sum(1 for _ in self.folder.glob("ready*")) >= self.of:
                return ready
            time.sleep(POLL_S)
