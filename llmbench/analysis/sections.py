"""A section of a report: sides shown together, with their comparison, projection checks and other
engines computed, so that `report/` only renders it (`llmbench report`, `compare`, a bundle's page,
llmbench's own published pages alike)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from llmbench.analysis.answer import ProjectionCheck, projection_checks
from llmbench.analysis.basediff import BaseDiff
from llmbench.analysis.compare import Comparison, compare
from llmbench.analysis.inputs import SetRef, display_names
from llmbench.analysis.noisefloor import NoiseFloor


@dataclass
class Section:
    """Sides shown together, with what is computed of them: a comparison and its projection checks (two
    sides or more), a suite's other engines against the transformers engine (`engines`)."""

    title: str
    sets: list[SetRef]
    baseline: int = 0
    cmp: Comparison | None = None
    checks: list[ProjectionCheck] = field(default_factory=list)
    no_check: list[str] = field(default_factory=list)  # why a side has no projection check
    note: str = ""  # one line under the lead: how the sides were put together
    engines: list[BaseDiff] = field(default_factory=list)


def section(title: str, sets: list[SetRef], baseline: int = 0, metrics: Collection[str] | None = None,
            floor: NoiseFloor | None = None, note: str = "", engines: list[BaseDiff] | None = None) -> Section:
    """The section of `sets`, named by their GPUs, with its comparison and projection checks computed."""
    named = display_names(sets)
    if len(named) < 2:
        return Section(title, named, baseline, note=note, engines=engines or [])
    checks, why = projection_checks(named, baseline)
    return Section(title, named, baseline, compare(named, baseline, metrics, floor), checks, why, note, engines or [])
