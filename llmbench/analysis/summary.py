"""The answer of one comparison as data: what `compare` prints first and what its JSON's `summary` holds,
computed once here so the terminal, Markdown, HTML and JSON say the same thing (docs/design.md, "What
`compare` prints"). The renderer (`report/answer_view.py`) only lays it out."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from llmbench.analysis.compare import HOST_BOUND, SPEED_UNITS, Comparison, Geomean, Ratio, case_speed_ratios
from llmbench.analysis.inputs import side_names
from llmbench.analysis.pooled import RUNS_CI_METHOD
from llmbench.metrics import METRICS
from llmbench.scenarios.base import SCENARIOS

EXPECTED_ENV_KEYS = frozenset({"gpu.name", "gpu.memory_gib"})  # the GPUs differ: that is the comparison
ENERGY_PER_UNIT = ("energy_j_per_token", "energy_j_per_sample")


def interval_basis(r: Ratio, runs: list[int]) -> str:
    """What a ratio's interval rests on: the `basis` the comparison gives it where it does, else 'runs'
    (a side pools several runs: a between-run interval) or 'single run' (within-run samples only)."""
    basis = getattr(r, "basis", None)
    if basis:
        return str(basis)
    return "runs" if r.method == RUNS_CI_METHOD or max(runs, default=1) > 1 else "single run"


def side_noise(cmp: Comparison, i: int) -> float | None:
    """The largest between-run CV of side `i` over its speed metrics (None: no speed metric of it was
    measured in two runs or more)."""
    cvs = [cv for r in cmp.rows if r.unit in SPEED_UNITS and i < len(r.between_run_cv)
           and (cv := r.between_run_cv[i]) is not None]
    return max(cvs) if cvs else None


def _same(a: Geomean, b: Geomean) -> bool:
    """Two geomeans that say the same thing (a scenario whose one speed metric is its headline)."""
    values = [(x.value if x else None, y.value if y else None) for x, y in zip(a.ratios, b.ratios, strict=True)]
    return a.n == b.n and all(x == y or (x is not None and y is not None and math.isclose(x, y)) for x, y in values)


def answer_geomeans(cmp: Comparison) -> list[Geomean]:
    """Per scenario: its speed geomean, then its headline metrics and energy per unit, each measurement
    once: a metric whose geomean is the speed geomean, or of a family already shown (TPOT after decode
    tok/s: one timing), is not repeated."""
    out: list[Geomean] = []
    for sc in dict.fromkeys(g.scenario for g in cmp.geomeans if g.scenario != "overall"):
        mine = {g.metric: g for g in cmp.geomeans if g.scenario == sc}
        speed = mine.get("speed")
        headline = SCENARIOS.get(sc).headline if sc in SCENARIOS else ()
        families: set[str] = set()
        picked = []
        for m in (*headline, *ENERGY_PER_UNIT):
            family = METRICS[m].family_name if m in METRICS else m
            if m in mine and family not in families and (speed is None or not _same(mine[m], speed)):
                picked.append(mine[m])
                families.add(family)
        out += ([speed] if speed else []) + picked
    return out


def environment_warnings(cmp: Comparison, names: list[str]) -> list[str]:
    """A line per environment difference that can move the figures (llmbench commits, package versions,
    driver, CUDA, CPU, power limit)."""
    return [f"{_env_label(key)} differs: " + "; ".join(f"{n}: {v}" for n, v in zip(names, values, strict=True))
            for key, values in cmp.env_diffs if key not in EXPECTED_ENV_KEYS]


def _env_label(key: str) -> str:
    return f"{key.removeprefix('packages.')} version" if key.startswith("packages.") else key


def coverage_warnings(cmp: Comparison, names: list[str]) -> list[str]:
    """What the ratios leave out: cases on some sides only, and cases that did not run ok everywhere."""
    lines = []
    if cmp.one_sided:
        only: dict[int, int] = {}
        for n in cmp.one_sided:
            for i, st in enumerate(n.statuses):
                if st is not None:
                    only[i] = only.get(i, 0) + 1
        held = "; ".join(f"{names[i]} holds {k}" for i, k in only.items())
        lines.append(f"{len(cmp.one_sided)} case(s) are not in every result set ({held}): not compared; "
                     "--all lists them")
    if cmp.not_ok:
        lines.append(f"{len(cmp.not_ok)} case(s) did not run ok on every side: not compared; --all lists "
                     "them with the reasons")
    return lines


@dataclass(frozen=True)
class CaseRatio:
    """One joined case's speed ratio per side (None for the baseline and where a side lacks it)."""

    case_id: str
    scenario: str
    case: str
    ratios: list[Ratio | None]


@dataclass(frozen=True)
class Summary:
    """What a comparison answers: the sides' names, the overall speed ratio and the host-bound one, each
    side's noise between runs, the headline geometric means, every case's speed ratio ranked by the
    first other side's (highest first), and the warnings a reader must see (code paths, environment,
    coverage, in that order)."""

    names: list[str]
    baseline: int
    overall: Geomean | None
    host_bound: Geomean | None
    covers: str
    runs: list[int]
    noise: list[float | None]
    headline: list[Geomean]
    ranked: list[CaseRatio]
    code_path_warnings: list[str]
    environment_warnings: list[str]
    coverage_warnings: list[str]

    @property
    def others(self) -> list[int]:
        """The sides measured against the baseline, in order."""
        return [i for i in range(len(self.names)) if i != self.baseline]

    def basis(self, i: int) -> str | None:
        """What side `i`'s overall interval rests on (None: no overall ratio for it)."""
        r = self.overall.ratios[i] if self.overall else None
        return None if r is None else interval_basis(r, [self.runs[i], self.runs[self.baseline]])

    def to_dict(self) -> dict[str, Any]:
        def ratios(g: Geomean | None) -> list[dict[str, Any] | None] | None:
            return None if g is None else [r.to_dict() if r else None for r in g.ratios]

        return {
            "sides": self.names,
            "baseline": self.names[self.baseline],
            "speed": ratios(self.overall),
            "speed_cells": self.overall.n if self.overall else 0,
            "interval_basis": [self.basis(i) for i in range(len(self.names))],
            "host_bound_speed": ratios(self.host_bound),
            "covers": self.covers,
            "noise_between_runs_cv": self.noise,
            "headline": [g.to_dict() for g in self.headline],
            "cases": [{"case_id": c.case_id, "scenario": c.scenario, "case": c.case,
                       "speed": [r.to_dict() if r else None for r in c.ratios]} for c in self.ranked],
            "warnings": [*self.code_path_warnings, *self.environment_warnings, *self.coverage_warnings],
        }


def summary(cmp: Comparison) -> Summary:
    """The answer of `cmp`, as `compare` prints it first (`report/answer_view.py`) and its JSON holds it."""
    names = side_names(cmp.sets)
    others = [i for i in range(len(cmp.sets)) if i != cmp.baseline]
    per_side = {i: case_speed_ratios(cmp, i) for i in others}
    first = per_side[others[0]] if others else {}
    labels = {r.case_id: (r.scenario, r.case) for r in cmp.rows}
    ranked = [CaseRatio(cid, *labels[cid], [per_side[i].get(cid) if i in per_side else None
                                            for i in range(len(cmp.sets))])
              for cid in sorted(first, key=lambda c: first[c].value, reverse=True)]
    speed = {g.scenario: g for g in cmp.geomeans if g.metric == "speed"}
    return Summary(
        names, cmp.baseline, speed.get("overall"), speed.get(HOST_BOUND), cmp.coverage,
        [len(s.all_runs) for s in cmp.sets], [side_noise(cmp, i) for i in range(len(cmp.sets))],
        answer_geomeans(cmp), ranked, cmp.code_path_warnings(names), environment_warnings(cmp, names),
        coverage_warnings(cmp, names))
