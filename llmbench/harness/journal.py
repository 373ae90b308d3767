"""A case's outcome made durable the moment its case process has it, before the runner records it.

The runner is the only writer of a result set, and it records a case once it has read the outcome
the case process wrote. A runner killed in between (kill -9, a lost node) would lose a case that
was measured. So the runner names, in each case's spec, an entry of the set's journal (a folder
beside the set: `.<set>.json.outcomes/`), and the case process writes its outcome there first,
then to the file the runner reads. The runner removes the entry once the set on disk holds the
case; `--resume` of the set records the entries still there (`pending`) before it runs anything.

Only where the case process runs on this machine (the local launcher): a remote one cannot reach
the set's folder. What the runner adds after a case ends (a max-batch search's probes) is not in
an entry: a recovered case has its metrics, reason and info, not its search's record."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from llmbench.results import write_atomic

KEY = "journal"  # the spec key: {"path", "id", "started_at", "info"}


def folder(set_path: Path) -> Path:
    return set_path.with_name(f".{set_path.name}.outcomes")


def entry_path(set_path: Path, case_id: str) -> Path:
    return folder(set_path) / (case_id.replace("/", "_") + ".json")


def entry(set_path: Path, case_id: str, started_at: str, info: dict[str, Any]) -> dict[str, Any]:
    """The spec's journal entry of one case: where its outcome goes, and what the runner knew when it
    started it (the case's start, its info as the runner notes it: GPUs, commit, launcher)."""
    return {"path": str(entry_path(set_path, case_id)), "id": case_id, "started_at": started_at, "info": info}


def write(journal: dict[str, Any] | None, outcome: dict[str, Any], began_unix: float) -> None:
    """In the case process: the outcome into its journal entry (atomically), before the outcome file the
    runner reads. A journal that cannot be written (a read-only or remote folder) costs only durability."""
    if not journal:
        return
    record = {**journal, "began_unix": began_unix, "ended_unix": time.time(), "outcome": outcome}
    with contextlib.suppress(OSError, TypeError, ValueError):
        path = Path(journal["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(record, default=str))


@dataclass(frozen=True)
class Pending:
    """An outcome a case process wrote that its runner did not record."""

    path: Path
    case_id: str
    started_at: str  # when the runner started it (an entry the set holds a result this late of is recorded)
    began_at: str  # when its case process began it, UTC
    seconds: float  # how long it ran in its case process
    info: dict[str, Any]
    outcome: dict[str, Any]


def _utc(unix: float) -> str:
    return datetime.fromtimestamp(unix, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def pending(set_path: Path) -> list[Pending]:
    """The entries of the set's journal, oldest first; an entry that does not read (cut short) is skipped."""
    out = []
    for path in sorted(folder(set_path).glob("*.json")):
        try:
            rec = json.loads(path.read_text())
            began, ended = float(rec["began_unix"]), float(rec["ended_unix"])
            out.append(Pending(path, str(rec["id"]), str(rec["started_at"]), _utc(began), max(ended - began, 0.0),
                               dict(rec.get("info") or {}), dict(rec["outcome"])))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(out, key=lambda p: p.began_at)


def remove(set_path: Path, case_ids: list[str]) -> None:
    """The entries of cases the set on disk now holds; the folder too once it is empty."""
    for case_id in case_ids:
        with contextlib.suppress(OSError):
            entry_path(set_path, case_id).unlink()
    with contextlib.suppress(OSError):
        folder(set_path).rmdir()
