"""The noise floor: how far separate runs of the same case on the same kind of GPU land from one another,
measured from repeated runs (`run --repeat`: each pass a fresh process), per GPU, scenario and metric
family.

A single run's samples say how well that run's median is known, not where the next run lands (clocks,
thermal state, the host, the autotuner's picks): a ratio of two single runs with a within-run interval
holds the true ratio far less often than 95% once runs differ by a few percent. Where the floor of a GPU
and case family was measured, a single-run ratio's interval is widened by it (compare.py); where it was
not, the interval is labelled as within-run only.

The floor of a (GPU, scenario, metric family) pools, over every case of that family measured in a repeat
group of two runs or more, the variance of the log of the runs' medians: s^2 = sum over cases of
sum (x - mean)^2 / sum over cases of (runs - 1), with that many degrees of freedom, so a floor from few
runs carries its own uncertainty into the t quantile of the interval.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from llmbench.analysis.labels import is_measured
from llmbench.metrics import METRICS
from llmbench.results import ResultSet

SPREAD_DIR = "spread"  # results/spread/<gpu-slug>/: repeat runs kept apart from the published sets


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
    """The floor from result sets: every repeat group (by its id) with two runs or more, per GPU."""
    groups: dict[str, list[ResultSet]] = {}
    for rs in runs:
        group = (rs.repeat_info or {}).get("group")
        if group and is_measured(rs):
            groups.setdefault(str(group), []).append(rs)
    sums: dict[tuple[str, str, str], list[float]] = {}  # key -> [sum of squares, df, cases]
    for members in groups.values():
        if len(members) < 2:
            continue
        slug = members[0].gpu_slug
        values: dict[tuple[str, str, str], list[float]] = {}
        for rs in members:
            for c in rs.cases:
                if c.status != "ok":
                    continue
                for name, m in c.metrics.items():
                    mdef = METRICS.get(name)
                    if mdef is None or mdef.better == "neither" or m.value <= 0:
                        continue
                    values.setdefault((c.id, c.scenario, name), []).append(float(np.log(m.value)))
        for (_cid, scenario, name), logs in values.items():
            if len(logs) < 2:
                continue
            key = (slug, scenario, METRICS[name].family_name)
            acc = sums.setdefault(key, [0.0, 0.0, 0.0])
            x = np.asarray(logs)
            acc[0] += float(((x - x.mean()) ** 2).sum())
            acc[1] += len(logs) - 1
            acc[2] += 1
    return NoiseFloor({k: Floor(ss / df, int(df), int(n)) for k, (ss, df, n) in sums.items() if df > 0})


def folders_for(set_paths: Iterable[Path]) -> list[Path]:
    """Where the floor of the sets being compared is read: each set's own folder (results/<gpu-slug>/,
    whose repeat groups are published pooled) and the spread folder beside it (results/spread/<gpu-slug>/).
    Never the working directory."""
    out: list[Path] = []
    for p in set_paths:
        folder = p.resolve().parent
        for f in (folder, folder.parent / SPREAD_DIR / folder.name):
            if f.is_dir() and f not in out:
                out.append(f)
    return out


def floor_from_folders(folders: Iterable[Path]) -> NoiseFloor:
    """The floor of every repeat group in `folders`: their *.json result sets that are passes of
    `run --repeat` (other files there, a comparison's JSON say, are passed over)."""
    return floor_of(rs for f in folders for p in sorted(f.glob("*.json")) if (rs := _repeat_pass(p)) is not None)


def _repeat_pass(path: Path) -> ResultSet | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not data.get("repeat") or "cases" not in data:
        return None
    try:
        return ResultSet.model_validate(data)
    except ValueError:
        return None
