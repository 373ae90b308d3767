"""Which joined cases ran different code: the `code_path` each case recorded (engine, mode, fused
layers, compilation, attention, KV cache, quantization), side by side.

Params and case ids say what was asked; a code path says what ran. A refactor can change the second
without the first (bf16 compiled decode once stopped fusing its projections and nothing said so), and a
ratio of two different code paths measures the code as well as the GPUs. So every comparison lists the
joined cases whose recorded paths differ, and says where a side recorded none (sets written before
llmbench recorded it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmbench.analysis.inputs import SetRef
from llmbench.results import CaseResult

# Recorded for diagnosis, not compared: the same code picks other kernels on another GPU model.
DIAGNOSTIC_KEYS = frozenset({"top_kernels"})


@dataclass
class CodePathNote:
    """A joined case whose sides ran different code paths (or where some side recorded none)."""

    case_id: str
    scenario: str
    case: str
    paths: list[dict[str, Any] | None]  # per set: the path its runs share; None: not recorded
    keys: list[str]  # the keys whose values differ (empty where a side recorded none)

    @property
    def unrecorded(self) -> bool:
        return any(p is None for p in self.paths)

    def to_dict(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "scenario": self.scenario, "case": self.case,
                "paths": self.paths, "differing_keys": self.keys}


def compared_path(case: CaseResult) -> dict[str, Any] | None:
    """The part of a case's code path that comparisons check; None where it recorded none."""
    if not case.code_path:
        return None
    return {k: v for k, v in case.code_path.items() if k not in DIAGNOSTIC_KEYS}


def side_path(runs: list[CaseResult]) -> dict[str, Any] | None:
    """The path a side's ok runs of a case ran: that of its first run that recorded one (runs of one
    side that differ among themselves show up as a differing key against the other side's)."""
    for c in runs:
        got = compared_path(c)
        if got is not None:
            return got
    return None


def differing_keys(paths: list[dict[str, Any] | None]) -> list[str]:
    """The keys whose values are not the same on every side that recorded a path."""
    recorded = [p for p in paths if p is not None]
    keys = sorted({k for p in recorded for k in p})
    return [k for k in keys if len({repr(p.get(k)) for p in recorded}) > 1]


def code_path_notes(sets: list[SetRef], labels: dict[str, str]) -> list[CodePathNote]:
    """Every case ok on every side whose code paths differ, or that recorded a path on some sides and
    not on others (a scenario that records none on any side says nothing either way)."""
    notes = []
    seen: set[str] = set()
    for s in sets:
        for case in s.cases():
            if case.id in seen:
                continue
            seen.add(case.id)
            runs = [[c for c in side.case_runs(case.id) if c.status == "ok"] for side in sets]
            if not all(runs):
                continue
            paths = [side_path(r) for r in runs]
            keys = differing_keys(paths)
            if keys or (any(p is None for p in paths) and any(p is not None for p in paths)):
                notes.append(CodePathNote(case.id, case.scenario, labels.get(case.id, case.id), paths, keys))
    return notes


def code_path_warnings(notes: list[CodePathNote], joined: int, set_labels: list[str]) -> list[str]:
    """One line for the cases that ran different code, one for those whose path some side did not record."""
    out = []
    differ = [n for n in notes if n.keys]
    if differ:
        keys = sorted({k for n in differ for k in n.keys})
        out.append(f"{len(differ)} of {joined} joined cases ran different code paths ({', '.join(keys)}): "
                   "their ratios measure the code as well as the GPUs")
    unrecorded = [n for n in notes if n.unrecorded]
    if unrecorded:
        sides = sorted({set_labels[i] for n in unrecorded for i, p in enumerate(n.paths) if p is None})
        out.append(f"{len(unrecorded)} of {joined} joined cases recorded their code path in some sets but not in "
                   f"{', '.join(sides)} (written before llmbench recorded it): a changed path would go unseen there")
    return out
