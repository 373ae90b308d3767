"""The README's headline figures, computed: per case, the newest measured figure of a GPU's folder
(the median over a repeat group's passes), and the speed-up of one GPU's figure over another's.
`report/readme.py` picks the cases and renders the table."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from llmbench.analysis.inputs import load_checked
from llmbench.analysis.labels import is_measured
from llmbench.metrics import metric
from llmbench.results import CaseResult, ResultSet


@dataclass(frozen=True)
class Figure:
    value: float
    set_path: Path


def figures_of(folder: Path, ids: dict[str, str]) -> dict[str, Figure]:
    """Per case id, the figure (metric `ids[id]`) from the newest measured set of the GPU that measured
    the case ok; where that set is a pass of `run --repeat`, the median over the passes that did (the
    figure publish shows for a repeat group)."""
    sets: list[tuple[Path, ResultSet]] = [(p, load_checked(p)) for p in sorted(folder.glob("*.json"))]
    sets = [s for s in sets if is_measured(s[1])]
    sets.sort(key=lambda s: (s[1].created_at, s[0].name), reverse=True)
    out: dict[str, Figure] = {}
    for case_id, name in ids.items():
        for path, rs in sets:
            if _value(rs, case_id, name) is None:
                continue
            group = (rs.repeat_info or {}).get("group")
            runs = [r for _, r in sets if group and (r.repeat_info or {}).get("group") == group] or [rs]
            values = [v for r in runs if (v := _value(r, case_id, name)) is not None]
            out[case_id] = Figure(float(statistics.median(values)), path)
            break
    return out


def _value(rs: ResultSet, case_id: str, name: str) -> float | None:
    case: CaseResult | None = next((c for c in rs.cases if c.id == case_id and c.status == "ok"), None)
    return case.metrics[name].value if case is not None and name in case.metrics else None


def speedup(base: float, other: float, name: str) -> float:
    """How many times faster `other` is than `base` (> 1: faster), by the metric's better direction."""
    return other / base if metric(name).better == "higher" else base / other
