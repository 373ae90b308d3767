"""Reference data shipped with the package (references/data/, the one home of each fact): published figures
as result sets (data/published/<gpu-slug>/<source>.json, each case's `info.match` saying how it matches an
llmbench case and how its source is graded), ratio-only claims (claims.json), the workloads a GPU-pair
answer is given for (workloads.json) and public list prices with their offer class and date (prices.json).
Data may name scenarios and their params; the analysis and report that read it do not."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from llmbench.ids import case_id
from llmbench.metrics import METRICS, Better
from llmbench.results import ResultSet, load

DATA = Path(__file__).parent / "data"
PUBLISHED = DATA / "published"
GRADES = ("controlled", "uncontrolled")  # controlled: one source measured both GPUs with one model, software, settings


def _read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def published_sets() -> list[tuple[str, ResultSet]]:
    """Every published reference set, named by its path under data/published/."""
    return [(f"{p.parent.name}/{p.name}", load(p)) for p in sorted(PUBLISHED.glob("*/*.json"))]


@dataclass(frozen=True)
class Claim:
    """A source's ratio of two GPUs with no figure of either: `pair[0]` over `pair[1]` (> 1: the first is
    faster); a pair names slugs, or GPU families ('h100') where the source names no form factor."""

    key: str
    workload: str | None  # the workload key it informs, or a prefix of several ('trainer'); None: none
    kind: str  # "about", "range" or "up to" (a maximum over the source's cases)
    low: float
    high: float
    faster: str
    slower: str
    same_precision: bool
    pair: tuple[str, str]
    grade: str
    grade_note: str
    quote: str
    english: str
    conditions: str
    citation: str
    url: str | None = None
    quality: str | None = None  # how it matches the workload's llmbench case: close, loose, own workload
    median: float | None = None  # the source's median where its range is over several pairs

    @property
    def point(self) -> float:
        return self.median or (self.low * self.high) ** 0.5

    def text(self) -> str:
        return f"{self.low:.2f}-{self.high:.2f}x" + (f", median {self.median:.2f}x" if self.median else "") \
            if self.kind == "range" else f"{'up to ' if self.kind == 'up to' else '~'}{self.low:.2f}x"


def informs(key: str | None, workload: str) -> bool:
    """A figure or claim of workload `key` informs it and those it prefixes ('decode-b32': 'decode-b32-vllm')."""
    return key is not None and (workload + "-").startswith(key + "-")


@cache
def claims() -> tuple[Claim, ...]:
    return tuple(Claim(**{**c, "pair": tuple(c["pair"])}) for c in _read("claims.json")["claims"])


@dataclass(frozen=True)
class Workload:
    """A question a GPU-pair answer is given for: the llmbench case that stands for it (none: published
    figures only), the metric compared, and the params its fp8 counterpart changes."""

    key: str
    title: str
    scenario: str | None
    params: dict[str, Any]
    metric: str
    fp8: dict[str, Any] | None = None
    fp8_paths: tuple[dict[str, Any], ...] = ()  # code paths users run; an fp8 case that took none is not shown
    also: tuple[str, ...] = ()  # other metrics a published figure of it may give
    ids: tuple[str, str | None] = field(init=False)  # the case id, and its fp8 counterpart's

    def __post_init__(self) -> None:
        ids = (case_id(self.scenario, self.params), case_id(self.scenario, {**self.params, **self.fp8})
               if self.fp8 else None) if self.scenario else ("", None)
        object.__setattr__(self, "ids", ids)

    @property
    def better(self) -> Better:
        return METRICS[self.metric].better


@cache
def workloads() -> tuple[Workload, ...]:
    return tuple(Workload(**{**w, "also": tuple(w.get("also", ())), "fp8_paths": tuple(w.get("fp8_paths", ()))})
                 for w in _read("workloads.json")["workloads"])


@cache
def price_rows() -> tuple[dict[str, Any], ...]:
    """The list prices: gpu, usd_per_hour, provider, offer, checked, source, note."""
    return tuple(_read("prices.json")["prices"])
