"""The noise floor: how far separate runs of the same case on the same kind of GPU land from one another
(runs that recorded the same code path, from any machine or day; without a code path, one repeat
group's passes), per GPU, scenario and metric family, at two levels: between runs on one machine and
between machines, each a pooled variance of log run medians with its degrees of freedom. Why and how a
ratio's interval reads it: docs/design.md, "Comparing, projecting, publishing"."""

from __future__ import annotations

import json
import warnings
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from llmbench.analysis.codepath import compared_path
from llmbench.analysis.hostbound import HOST_FAMILY, floor_family
from llmbench.analysis.inputs import SPREAD_DIR, shown
from llmbench.analysis.labels import is_measured
from llmbench.metrics import METRICS, SPEED_UNITS
from llmbench.results import CaseResult, ReadWarning, ResultSet, load


@dataclass(frozen=True)
class Floor:
    """The spread of one GPU, scenario and metric family at two levels, each with its degrees of freedom:
    between runs on one machine (`log_var`), and between machines (`machine_var`: the variance of a
    machine's mean run, at the runs a machine it was measured with, `machine_inv_runs`). Machines are
    the independent units of a GPU's figure: runs on one machine share its state (its host core, its
    card), so runs alone cannot say how far another machine of the same GPU lands."""

    log_var: float  # pooled variance of log(run median) between runs on one machine; 0 where not measured
    df: int  # its degrees of freedom: runs minus one per machine, summed over the cells pooled (0: not measured)
    cases: int  # case-metric cells pooled
    machine_var: float | None = None  # variance of a machine's mean run (log); None: no cell on 2+ machines
    machine_inv_runs: float = 1.0  # the mean 1/R of the machines it was measured over (R runs a machine)
    machine_df: int = 0  # machines minus one, summed over the cells pooled
    machine_cases: int = 0
    machine_from: str = ""  # where the machine level was borrowed from, where not from this family
    corr: float = 1.0  # how the deviations of a run's (a machine's) cases move together; 1 where not measured

    @property
    def run_var(self) -> float | None:
        """The between-run variance on one machine; None where no machine ran a cell twice."""
        return self.log_var if self.df > 0 else None

    @property
    def cv(self) -> float:
        """How far one run on another machine lands (sd of log, for small spreads the CV): both levels."""
        return float(np.sqrt((self.machine_var or 0.0) + self.log_var * (1.0 - self.machine_inv_runs)
                             if self.machine_var is not None else self.log_var))


@dataclass
class NoiseFloor:
    floors: dict[tuple[str, str, str], Floor] = field(default_factory=dict)  # (gpu slug, scenario, family)

    def get(self, slug: str, scenario: str, metric: str, case: CaseResult | None = None) -> Floor | None:
        """The spread of `metric`'s family (of its host-bound cells where `case` measures the host there).
        A speed metric's family never measured on two machines borrows its GPU's between-machine spread
        pooled over the speed families that measure the GPU (`GPU_WIDE`), and says so."""
        mdef = METRICS.get(metric)
        family = floor_family(case, metric) if case is not None else mdef.family_name if mdef else metric
        own = self.floors.get((slug, scenario, family))
        wide = self.floors.get((slug, GPU_WIDE, GPU_WIDE))
        if (own is not None and own.machine_var is not None) or wide is None or mdef is None or \
                mdef.unit not in SPEED_UNITS or family.endswith(HOST_FAMILY):
            return own
        base = own or Floor(0.0, 0, 0)
        return replace(base, machine_var=wide.machine_var, machine_inv_runs=wide.machine_inv_runs,
                       machine_df=wide.machine_df, machine_cases=wide.machine_cases,
                       machine_from="the GPU's other speed families")

    def __bool__(self) -> bool:
        return bool(self.floors)

    def to_list(self) -> list[dict[str, object]]:
        """The floor as JSON rows (the packaged export ships it: its runs are the chosen ones, the floor
        is read from every run)."""
        return [{"gpu": k[0], "scenario": k[1], "family": k[2], **asdict(f)} for k, f in sorted(self.floors.items())]

    @classmethod
    def from_list(cls, rows: Iterable[dict[str, Any]]) -> NoiseFloor:
        keys = {f.name for f in fields(Floor)}
        return cls({(r["gpu"], r["scenario"], r["family"]): Floor(**{k: v for k, v in r.items() if k in keys})
                    for r in rows})

    def only(self, slugs: Collection[str]) -> NoiseFloor:
        return NoiseFloor({k: f for k, f in self.floors.items() if k[0] in slugs})

    def without(self, slugs: Collection[str]) -> NoiseFloor:
        return NoiseFloor({k: f for k, f in self.floors.items() if k[0] not in slugs})


def run_key(rs: ResultSet) -> tuple[str, ...]:
    """What tells one run (result set) from another wherever it was read from: GPU, suite, creation time,
    machine and its place in a repeat group."""
    repeat = rs.repeat_info or {}
    return rs.gpu_slug, rs.suite, rs.created_at, str(rs.machine), str(repeat.get("group")), str(repeat.get("index"))


def machine_of(rs: ResultSet, index: int | str) -> str:
    """The run's machine; a run that recorded none is a machine of its own (its spread is then counted
    between machines, the wider of the two levels)."""
    return rs.machine or f"unrecorded-{index}"


GPU_WIDE = "*"  # the key of a GPU's between-machine spread: its speed families' that measure the GPU, pooled
Cell = tuple[str, str, str, str, str, str, str]  # (slug, case id, scenario, metric, floor family, path or group, side)


def cells_of(runs: Iterable[ResultSet], side: str = "") -> dict[Cell, dict[str, list[tuple[str, float]]]]:
    """Each cell's (run, log run median) by machine: the runs of a case that ran the same recorded code path,
    or, where a case recorded none, the passes of one repeat group (the module docstring says why).
    `side` names the runs of one compared side: they pool whether or not they recorded a path (the side,
    a repeat group or --pool, says they are one measurement), in cells of their own, so
    that the runs under test never pool with another side's into one spread."""
    cells: dict[Cell, dict[str, list[tuple[str, float]]]] = {}
    for index, rs in enumerate(runs):
        if not is_measured(rs):
            continue
        group = (rs.repeat_info or {}).get("group")
        machine = machine_of(rs, f"{side}{index}")
        for c in rs.cases:
            if c.status != "ok":
                continue
            path = compared_path(c)
            if path is not None:
                same = "path " + json.dumps(path, sort_keys=True, default=str)
            elif group or side:  # a compared side's runs of a case are one measurement: the side says so
                same = f"group {group}"
            else:
                continue
            for name, m in c.metrics.items():
                mdef = METRICS.get(name)
                if mdef is None or mdef.better == "neither" or not np.isfinite(m.value) or m.value <= 0:
                    continue  # a NaN or Inf run is no spread: one would make the whole floor NaN
                key = (rs.gpu_slug, c.id, c.scenario, name, floor_family(c, name), f"{same} v{m.version}", side)
                cells.setdefault(key, {}).setdefault(machine, []).append((f"{side}{index}", float(np.log(m.value))))
    return cells


def floor_of(runs: Iterable[ResultSet], sides: Iterable[Iterable[ResultSet]] = ()) -> NoiseFloor:
    """The floor from result sets, per GPU, scenario and metric family, at two levels (`Floor`): one-way
    analysis of variance per cell (machines the groups), mean squares pooled over the cells with their
    degrees of freedom. `sides`: the runs of the sides being compared, each side's cells apart from the
    others' and from `runs` (pass `runs` without them)."""
    cells = cells_of(runs)
    for k, side in enumerate(sides):
        for key, by_machine in cells_of(side, side=f"side {k}").items():
            for machine, got in by_machine.items():
                cells.setdefault(key, {}).setdefault(machine, []).extend(got)
    acc: dict[tuple[str, str, str], _Sums] = {}
    speed: set[tuple[str, str, str]] = set()  # the families of speed metrics that measure the GPU
    for (slug, _cid, scenario, name, family, _same, _side), by_machine in cells.items():
        acc.setdefault((slug, scenario, family), _Sums()).add(by_machine)
        if METRICS[name].unit in SPEED_UNITS and not family.endswith(HOST_FAMILY):
            speed.add((slug, scenario, family))
    floors = {key: f for key, sums in acc.items() if (f := sums.floor()) is not None}
    for slug in {k[0] for k in speed}:  # each GPU's between-machine spread over its speed families
        fams = sorted((f for k, f in floors.items()
                       if k in speed and k[0] == slug and f.machine_var is not None and f.machine_df),
                      key=lambda f: f.machine_var or 0.0)
        df = sum(f.machine_df for f in fams)
        if df:  # the median family by degrees of freedom: one family of wild spread does not set a GPU's
            median = next(f for k, f in enumerate(fams) if sum(g.machine_df for g in fams[:k + 1]) >= df / 2)
            floors[(slug, GPU_WIDE, GPU_WIDE)] = replace(median, log_var=0.0, df=0, cases=0)
    return NoiseFloor(floors)


@dataclass
class _Level:
    """One level of a family's one-way analysis of variance (runs within machines, or machines), cell by
    cell. The cases of one run, and of one machine, share its state, so their deviations are correlated
    and the cells' degrees of freedom do not simply add: `df` discounts them by the correlation measured
    between cells that share units, df_sum / (1 + (k - 1) r^2) for k cells a unit on average (the variance
    of a sum of correlated variance estimates)."""

    ss: float = 0.0
    df_sum: int = 0
    cells: int = 0
    deviations: list[dict[str, float]] = field(default_factory=list)  # per cell: unit -> its deviation

    def add(self, deviations: dict[str, float], df: int) -> None:
        self.ss += sum(d * d for d in deviations.values())
        self.df_sum += df
        self.cells += 1
        self.deviations.append(deviations)

    @property
    def var(self) -> float | None:
        return self.ss / self.df_sum if self.df_sum else None

    @property
    def df(self) -> int:
        units = {u for d in self.deviations for u in d}
        if not self.df_sum or len(units) < 2:
            return 0
        k = sum(len(d) for d in self.deviations) / len(units)  # cells per unit
        r = self.shared_correlation() or 0.0
        return int(max(min(self.df_sum, self.df_sum / (1.0 + (k - 1.0) * r * r)), 1))

    def shared_correlation(self) -> float | None:
        """The correlation of the deviations of cells that share units (None where no two cells share two)."""
        by_unit: dict[str, list[int]] = {}
        for k, d in enumerate(self.deviations):
            for u in d:
                by_unit.setdefault(u, []).append(k)
        num = den_a = den_b = 0.0
        pairs = {(a, b) for ks in by_unit.values() for a in ks for b in ks if a < b}
        for a, b in sorted(pairs):
            common = sorted(self.deviations[a].keys() & self.deviations[b].keys())  # one order: one sum
            if len(common) < 2:
                continue
            x = np.asarray([self.deviations[a][u] for u in common])
            y = np.asarray([self.deviations[b][u] for u in common])
            num, den_a, den_b = num + float(x @ y), den_a + float(x @ x), den_b + float(y @ y)
        return float(np.clip(num / np.sqrt(den_a * den_b), 0.0, 1.0)) if den_a and den_b else None


@dataclass
class _Sums:
    """A family's spread at both levels (`floor_of`)."""

    run: _Level = field(default_factory=_Level)
    machine: _Level = field(default_factory=_Level)
    inv_runs: float = 0.0  # sum of 1/R over the machines of the cells on 2+ machines
    machine_count: int = 0

    def add(self, by_machine: dict[str, list[tuple[str, float]]]) -> None:
        groups = {m: np.asarray([v for _, v in got]) for m, got in by_machine.items()}
        within = {m: g for m, g in groups.items() if g.size >= 2}
        if within:
            self.run.add({run: v - float(groups[m].mean()) for m in within for run, v in by_machine[m]},
                         sum(g.size - 1 for g in within.values()))
        if len(groups) >= 2:
            means = {m: float(g.mean()) for m, g in groups.items()}
            centre = float(np.mean(list(means.values())))
            self.machine.add({m: v - centre for m, v in means.items()}, len(groups) - 1)
            self.inv_runs += sum(1.0 / g.size for g in groups.values())
            self.machine_count += len(groups)

    def floor(self) -> Floor | None:
        run_var, machine_var = self.run.var or 0.0, self.machine.var
        df_run, df_machine = self.run.df, self.machine.df
        if not (df_run or df_machine):
            return None
        corrs = [c for c in (self.run.shared_correlation(), self.machine.shared_correlation()) if c is not None]
        return Floor(run_var if df_run else 0.0, df_run, self.run.cells, machine_var if df_machine else None,
                     self.inv_runs / self.machine_count if self.machine_count else 1.0,
                     df_machine, self.machine.cells, corr=max(corrs) if corrs else 1.0)


def floor_beside(runs: Iterable[ResultSet], sides: list[list[ResultSet]]) -> NoiseFloor:
    """The floor a comparison of `sides` reads: `runs` (its folders' sets) less the runs under test, and
    each side's runs in cells of their own, so that the difference under test never becomes the noise.
    Sides of different GPUs never share a cell: every run, theirs among them, is read as any other (a
    case's runs pool by recorded code path, else within one repeat group), as the pages read them."""
    slugs = [{r.gpu_slug for r in side} for side in sides]
    if not any(a & b for k, a in enumerate(slugs) for b in slugs[k + 1:]):  # each side its own GPU
        every = {run_key(r): r for r in [*runs, *(r for side in sides for r in side)]}
        return floor_of(every.values())
    under_test = {run_key(r) for side in sides for r in side}
    return floor_of([r for r in runs if run_key(r) not in under_test], sides)


def floor_of_values(values: list[float]) -> Floor | None:
    """The spread of one cell's runs taken as independent machines (no machine recorded); None below two
    runs or where a figure is not positive and finite."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2 or not np.isfinite(x).all() or (x <= 0).any():
        return None
    return Floor(0.0, 0, 0, machine_var=float(np.log(x).var(ddof=1)), machine_df=int(x.size - 1), machine_cases=1)


def folder_runs(folders: Iterable[Path]) -> list[ResultSet]:
    """The result sets in `folders` (other *.json files there, a comparison's JSON say, are passed over)."""
    return [rs for _, rs in folder_sets(folders)]


def folder_sets(folders: Iterable[Path]) -> list[tuple[str, ResultSet]]:
    """(where, set) of each result set in `folders`, `where` its path as a listing shows it."""
    return [(shown(p), rs) for f in folders for p in sorted(f.glob("*.json")) if (rs := _result_set(p)) is not None]


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
    """The floor from the result sets in `folders` (`folder_runs`)."""
    return floor_of(folder_runs(folders))


def _result_set(path: Path) -> ResultSet | None:
    """The set at `path` through the one reader (size cap, older schemas upgraded), or None for a file
    that is none; what it would warn about is the comparison's business, not the floor's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadWarning)
        try:
            return load(path)
        except (OSError, ValueError):
            return None
