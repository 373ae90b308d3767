"""The noise floor: how far separate runs of the same case on the same kind of GPU land from one another
(runs that recorded the same code path, from any machine or day; without a code path, one repeat
group's passes), per GPU, scenario and metric family: the pooled between-run variance of log run
medians, with its degrees of freedom. Why and how it widens a single run's interval: docs/design.md,
"Comparing, projecting, publishing"."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from llmbench.analysis.codepath import compared_path
from llmbench.analysis.inputs import SPREAD_DIR
from llmbench.analysis.labels import is_measured
from llmbench.metrics import METRICS
from llmbench.results import ReadWarning, ResultSet, load


@dataclass(frozen=True)
class Floor:
    """The between-run spread of one GPU, scenario and metric family."""

    log_var: float  # pooled variance of log(run median)
    df: int  # degrees of freedom: runs minus one, summed over the cases pooled
    cases: int  # case-metric cells pooled

    @property
    def cv(self) -> float:
        """The spread as a coefficient of variation (for small spreads, sd of log = CV)."""
        return float(np.sqrt(self.log_var))


@dataclass
class NoiseFloor:
    floors: dict[tuple[str, str, str], Floor] = field(default_factory=dict)  # (gpu slug, scenario, family)

    def get(self, slug: str, scenario: str, metric: str) -> Floor | None:
        mdef = METRICS.get(metric)
        return self.floors.get((slug, scenario, mdef.family_name if mdef else metric))

    def __bool__(self) -> bool:
        return bool(self.floors)


def floor_of(runs: Iterable[ResultSet]) -> NoiseFloor:
    """The floor from result sets, per GPU: the runs of each case that ran the same recorded code path,
    or, where a case recorded none, the passes of one repeat group (the module docstring says why)."""
    cells: dict[tuple[str, str, str, str, str], list[float]] = {}  # (slug, case, scenario, metric, path) -> logs
    for rs in runs:
        if not is_measured(rs):
            continue
        group = (rs.repeat_info or {}).get("group")
        for c in rs.cases:
            if c.status != "ok":
                continue
            path = compared_path(c)
            if path is not None:
                same = "path " + json.dumps(path, sort_keys=True, default=str)
            elif group:
                same = f"group {group}"
            else:
                continue
            for name, m in c.metrics.items():
                mdef = METRICS.get(name)
                if mdef is None or mdef.better == "neither" or not np.isfinite(m.value) or m.value <= 0:
                    continue  # a NaN or Inf run is no spread: one would make the whole floor NaN
                cells.setdefault((rs.gpu_slug, c.id, c.scenario, name, same), []).append(float(np.log(m.value)))
    sums: dict[tuple[str, str, str], list[float]] = {}  # key -> [sum of squares, df, cases]
    for (slug, _cid, scenario, name, _same), logs in cells.items():
        if len(logs) < 2:
            continue
        acc = sums.setdefault((slug, scenario, METRICS[name].family_name), [0.0, 0.0, 0.0])
        x = np.asarray(logs)
        acc[0] += float(((x - x.mean()) ** 2).sum())
        acc[1] += len(logs) - 1
        acc[2] += 1
    return NoiseFloor({k: Floor(ss / df, int(df), int(n)) for k, (ss, df, n) in sums.items() if df > 0})


def folders_for(set_paths: Iterable[Path]) -> list[Path]:
    """Where the floor of the sets being compared is read: each set's own folder (or the folder given:
    results/<gpu-slug>/) and the spread folder beside it (results/spread/<gpu-slug>/). Never the working
    directory."""
    out: list[Path] = []
    for p in set_paths:
        folder = p.resolve() if p.is_dir() else p.resolve().parent
        for f in (folder, folder.parent / SPREAD_DIR / folder.name):
            if f.is_dir() and f not in out:
                out.append(f)
    return out


def floor_from_folders(folders: Iterable[Path]) -> NoiseFloor:
    """The floor from the result sets in `folders` (other *.json files there, a comparison's JSON say,
    are passed over)."""
    return floor_of(rs for f in folders for p in sorted(f.glob("*.json")) if (rs := _result_set(p)) is not None)


def _result_set(path: Path) -> ResultSet | None:
    """The set at `path` through the one reader (size cap, older schemas upgraded), or None for a file
    that is none; what it would warn about is the comparison's business, not the floor's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadWarning)
        try:
            return load(path)
        except (OSError, ValueError):
            return None
