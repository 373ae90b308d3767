"""A MIG slice against its share of the full GPU: each joined case's rate metrics beside what the
full GPU's figure becomes on the slice if it scales with compute or with memory, and the slices that fit
side by side against the full GPU. docs/design.md, "Comparing, projecting, publishing"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmbench.analysis.compare import Comparison
from llmbench.hardware import mig
from llmbench.hardware.roofline import Bound
from llmbench.hardware.specs import match_name

BOUNDS: tuple[Bound, ...] = ("compute", "memory")


@dataclass
class SliceRow:
    full: int  # set index of the full GPU
    part: int  # set index of the slice
    profile: str
    case: str
    metric: str
    unit: str
    full_value: float
    share: dict[str, float]  # compute, memory
    expected: dict[str, float]  # compute, memory: mig.slice_figure of the full value
    measured: float
    side_by_side: int  # slices of this profile that fit the GPU at once
    compute_slices: int  # the full GPU's (7; 4 on an A30)
    memory_gb: float  # the full GPU's, as profile names count it

    @property
    def vs_expected(self) -> dict[str, float]:
        return {k: self.measured / v for k, v in self.expected.items() if v > 0}

    @property
    def together(self) -> float:
        return self.side_by_side * self.measured

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "case": self.case,
            "metric": self.metric,
            "unit": self.unit,
            "full": self.full_value,
            "share": self.share,
            "expected": self.expected,
            "measured": self.measured,
            "measured_vs_expected": self.vs_expected,
            "side_by_side": {"slices": self.side_by_side, "value": self.together,
                             "vs_full": self.together / self.full_value},
        }


def _gpu(cmp: Comparison, i: int) -> dict[str, Any]:
    g = cmp.sets[i].rs.env.get("gpu", {})
    return g if isinstance(g, dict) else {}


def gpu_layout(gpu: dict[str, Any]) -> tuple[int, float] | None:
    """A full GPU's compute slices and memory in GB (the datasheet's, as MIG profile names count it;
    the recorded memory where the spec table lacks the GPU); None where neither is known."""
    name = mig.parent_name(str(gpu.get("name", "")))
    spec = match_name(name, gpu.get("memory_gib")) if name else None
    memory = spec.memory_gib if spec is not None else gpu.get("memory_gib")
    return (mig.compute_slices(name), float(memory)) if name and memory else None


def pairs(cmp: Comparison) -> list[tuple[int, int, str]]:
    """(full set, slice set, profile) for every slice set whose GPU model a full-GPU set shares."""
    out = []
    for j in range(len(cmp.sets)):
        profile = mig.slice_profile(_gpu(cmp, j))
        if profile is None:
            continue
        name = mig.parent_name(str(_gpu(cmp, j).get("name", ""))).lower()
        for i in range(len(cmp.sets)):
            g = _gpu(cmp, i)
            if i != j and not mig.is_slice(g) and name and mig.parent_name(str(g.get("name", ""))).lower() == name:
                out.append((i, j, profile))
    return out


def slice_rows(cmp: Comparison) -> list[SliceRow]:
    rows = []
    for i, j, profile in pairs(cmp):
        layout = gpu_layout(_gpu(cmp, i))
        if layout is None:
            continue
        slices, memory = layout
        share = mig.profile_share(profile, slices, memory)
        if share["compute"] > 1 or share["memory"] > 1:
            continue  # a profile of another GPU model
        n = mig.slices_side_by_side(profile, slices, memory)
        for r in cmp.rows:
            full, part = r.values[i], r.values[j]
            if r.better != "higher" or full is None or part is None or full <= 0:
                continue
            expected: dict[str, float] = {b: mig.slice_figure(full, share, b) for b in BOUNDS}
            rows.append(SliceRow(i, j, profile, r.case, r.metric, r.unit, full, share, expected, part, n,
                                 slices, memory))
    return rows
