"""What one param buys on one GPU (`compare --base precision=bf16`: fp8 over bf16 on an H100): each case
against the case that differs only in that param, from the one rule's runs of both (every run of each case
on that GPU), through the estimator every GPU comparison uses (compare.runs_ratio: machines the units, the
GPU's noise floor), with each case's speed ratio and a geometric mean over the cases per value."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llmbench.analysis.basediff import _MISSING, _base_case, _check, _matches, _param
from llmbench.analysis.caselabels import case_labels, fmt_param
from llmbench.analysis.compare import Comparison, Ratio, case_speed_ratios, compare
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.noisefloor import NoiseFloor
from llmbench.results import CaseResult, ResultSet

# accuracy shown beside speed where a case measured it (a metric of these names, or naming these words)
QUALITY = frozenset({"kl_divergence", "top1_agreement", "logits_rel_error", "rel_error_vs_fp32", "loss_diff_vs_bf16"})
QUALITY_WORDS = ("perplexity", "accuracy")


def is_quality(metric: str) -> bool:
    return metric in QUALITY or any(w in metric for w in QUALITY_WORDS)


@dataclass
class _Renamed:
    """A GPU's side whose cases are the variants of the base cases, each under its base case's id: the
    join `compare` makes is then variant against base, case by case."""

    side: SetRef
    ids: dict[str, str]  # base case id -> the variant's id

    def case_sets(self, case_id: str) -> list[tuple[ResultSet, CaseResult]]:
        mine = self.ids.get(case_id)
        return [(rs, c.model_copy(update={"id": case_id})) for rs, c in self.side.case_sets(mine)] if mine else []

    def only_side(self, ids: set[str], name: str) -> SetRef:
        return _side(self.side, {k: v for k, v in self.ids.items() if k in ids}, name)

    @property
    def left_out(self) -> list[object]:
        return []


def _side(side: SetRef, ids: dict[str, str], name: str) -> SetRef:
    cases = [c.model_copy(update={"id": base}) for base, v in ids.items() if (c := side.case(v)) is not None]
    return SetRef(name, side.rs.model_copy(update={"cases": cases}), side.stem, side.all_runs, side.stems,
                  _Renamed(side, ids))


@dataclass
class BaseAnswer:
    """Per value of the param, its cases against their twins at the base value on one GPU: a comparison
    each (the base the baseline)."""

    side: SetRef
    key: str
    base: Any
    comparisons: dict[str, Comparison]  # other value -> its cases against the base's
    labels: dict[str, str]  # base case id -> its label less the param
    unmatched: list[tuple[str, str, str]] = field(default_factory=list)  # (case id, label, why)

    def speed(self, value: str) -> dict[str, Ratio]:
        """Each case's speed ratio at `value` over the base (> 1: faster)."""
        return case_speed_ratios(self.comparisons[value], 1)

    def overall(self, value: str) -> Ratio | None:
        """The geometric mean of the cases' speed ratios at `value`, with its interval."""
        got = next((g for g in self.comparisons[value].geomeans if g.scenario == "overall" and g.metric == "speed"),
                   None)
        return got.ratios[1] if got else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.side.rs.gpu_slug, "base": {self.key: self.base},
            "values": {v: {"speed": (r.to_dict() if (r := self.overall(v)) else None),
                           "cases": [{"case_id": cid, "case": self.labels.get(cid, cid), "speed": got.to_dict()}
                                     for cid, got in self.speed(v).items()],
                           "comparison": cmp.to_dict()} for v, cmp in self.comparisons.items()},
            "unmatched": [{"case_id": c, "case": lbl, "why": why} for c, lbl, why in self.unmatched],
        }


def base_answer(side: SetRef, key: str, value: Any, floor: NoiseFloor | None) -> BaseAnswer:
    """Every case of `side` whose `key` is not `value`, against its twin at `value` (the same params
    otherwise), a comparison per value of `key`; cases without a twin are listed."""
    _check(side, key, value)
    cases = side.cases()
    base_label = case_labels(cases)
    by_value: dict[str, dict[str, str]] = {}
    unmatched = []
    for c in cases:
        got = _param(c, key)
        if got is _MISSING or _matches(c, key, value):
            continue
        twin = _base_case(c, cases, key, value)
        if twin is None or twin.status != "ok" or c.status != "ok":
            why = ("no case differing only in " + key if twin is None else
                   f"status {c.status}" if c.status != "ok" else f"base case status {twin.status}")
            unmatched.append((c.id, base_label[c.id], why))
            continue
        by_value.setdefault(fmt_param(got), {})[twin.id] = c.id
    ids = {b for got in by_value.values() for b in got}
    mine = [c for c in cases if c.id in ids]  # each at the base value: their labels leave the param out
    named = case_labels(mine)
    comparisons = {}
    for v, twins in by_value.items():
        base = side.only(set(twins))
        base.name = fmt_param(value)
        comparisons[v] = compare([base, _side(side, twins, v)], 0, None, floor)
    at = f"{key}={fmt_param(value)}"
    labels = {c.id: " ".join([c.scenario, *(w for w in named[c.id].split() if w != at)]) for c in mine}
    return BaseAnswer(side, key, value, comparisons, labels, unmatched)
