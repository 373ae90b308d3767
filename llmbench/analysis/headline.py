"""The README's headline figures, computed: per case, the newest measured figure of a GPU's folder
(the median over a repeat group's passes and the GPU's spread runs of that suite), and the speed-up
of one GPU's figure over another's. `report/readme.py` picks the cases and renders the table."""

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
    set_paths: tuple[Path, ...]  # the runs the value is the median of


def figures_of(folder: Path, ids: dict[str, str], spread: Path | None = None) -> dict[str, Figure]:
    """Per case id, the figure (metric `ids[id]`) from the newest measured set of the GPU that measured
    the case ok, as publish shows it: the median over the runs of that set's repeat group (`run
    --repeat`) and over the runs of its suite kept under `spread` (results/spread/<gpu-slug>/)."""
    sets = _measured(folder)
    sets.sort(key=lambda s: (s[1].created_at, s[0].name), reverse=True)
    extra = _measured(spread) if spread is not None else []
    out: dict[str, Figure] = {}
    for case_id, name in ids.items():
        for path, rs in sets:
            if _value(rs, case_id, name) is None:
                continue
            group = (rs.repeat_info or {}).get("group")
            runs = [(p, r) for p, r in sets if group and (r.repeat_info or {}).get("group") == group] or [(path, rs)]
            runs += [(p, r) for p, r in extra if r.suite == rs.suite]
            got = [(p, v) for p, r in runs if (v := _value(r, case_id, name)) is not None]
            out[case_id] = Figure(float(statistics.median(v for _, v in got)), tuple(p for p, _ in got))
            break
    return out


def _measured(folder: Path) -> list[tuple[Path, ResultSet]]:
    sets = [(p, load_checked(p)) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    return [s for s in sets if is_measured(s[1])]


def _value(rs: ResultSet, case_id: str, name: str) -> float | None:
    case: CaseResult | None = next((c for c in rs.cases if c.id == case_id and c.status == "ok"), None)
    return case.metrics[name].value if case is not None and name in case.metrics else None


def speedup(base: float, other: float, name: str) -> float:
    """How many times faster `other` is than `base` (> 1: faster), by the metric's better direction."""
    return other / base if metric(name).better == "higher" else base / other
