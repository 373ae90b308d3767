"""What the H100-vs-A100 answer is built from: its headline workloads, the committed sets of each GPU
indexed by case id, the published reference sets and claims, and projections of single cases.

The workloads themselves are data (llmbench.references.workloads: the llmbench case that stands for
each, and the metric the answer compares). The committed sets of a GPU are indexed case
by case (the newest `ok` result of each id across its measured sets), so a case of the headline
suite and the same case of its source suite (inference-llama3-8b, ...) are one entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmbench.analysis.inputs import load_checked
from llmbench.analysis.labels import is_measured
from llmbench.analysis.project import project_case
from llmbench.caseinfo import PublishedInfo, PublishedMatch
from llmbench.hardware.specs import GpuSpec, lookup
from llmbench.references.published_ratios import PublishedRatio, load_ratios
from llmbench.results import CaseResult, ResultSet

H100 = "h100-sxm-80gb"
H200 = "h200-sxm-141gb"
H100_SLUGS = (H100, "h100-pcie-80gb")
# The A100s the committed sets are projected to: SXM 80GB, PCIe 80GB and the 40GB part (the 40GB PCIe has
# the same datasheet bandwidth and peaks as the 40GB SXM, so the same projection).
A100_TARGETS = ("a100-sxm-80gb", "a100-pcie-80gb", "a100-sxm-40gb")
PRIMARY_A100 = "a100-sxm-80gb"  # the A100 the answer compares with when no A100 set is given
PUBLISHED_DIR = "published"
A100_NO_FP8 = ("the A100 (compute capability 8.0) has no fp8, which needs 8.9 (Ada, Hopper): its fp8 cases are "
               "skipped, and the A100's best precision (bf16) stands against the H100's fp8")


def is_a100(slug: str) -> bool:
    return slug.startswith("a100")


@dataclass
class CaseIndex:
    """The newest `ok` result of each case id across a GPU's sets, and where each came from."""

    slug: str
    cases: dict[str, CaseResult] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # case id -> suite (file stem where known)
    created: dict[str, str] = field(default_factory=dict)
    sets: list[ResultSet] = field(default_factory=list)

    def add(self, rs: ResultSet, name: str) -> None:
        self.sets.append(rs)
        for c in rs.cases:
            if c.status != "ok":
                continue
            if c.id not in self.cases or rs.created_at > self.created[c.id]:
                self.cases[c.id], self.origin[c.id], self.created[c.id] = c, name, rs.created_at

    def find(self, pick: Any) -> CaseResult | None:
        """The newest case `pick(case)` accepts."""
        found = [c for cid, c in self.cases.items() if pick(c)]
        return max(found, key=lambda c: self.created[c.id]) if found else None

    def skipped(self, case_id: str) -> CaseResult | None:
        """The case as a set has it where no set has it `ok` (a skip, with its reason)."""
        return next((c for rs in self.sets for c in rs.cases if c.id == case_id and c.status != "ok"), None)

    def values(self, case_id: str, metric: str) -> list[float]:
        """The metric of the case in every set that has it ok: the runs behind the newest one."""
        return [m.value for rs in self.sets for c in rs.cases
                if c.id == case_id and c.status == "ok" and (m := c.metrics.get(metric)) is not None]


def committed_index(results_dir: Path, slug: str) -> CaseIndex:
    """Every measured result set committed under results/<slug>/ (not benchmarks/ or checks/)."""
    idx = CaseIndex(slug)
    folder = results_dir / slug
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        rs = load_checked(path)
        if is_measured(rs):
            idx.add(rs, f"{slug}/{path.name}")
    return idx


def sets_index(sets: list[tuple[str, ResultSet]], slug: str) -> CaseIndex:
    idx = CaseIndex(slug)
    for name, rs in sets:
        idx.add(rs, name)
    return idx


@dataclass(frozen=True)
class PublishedFigure:
    case: CaseResult
    slug: str
    rs: ResultSet
    match: PublishedMatch  # the case's info.match, read once

    @property
    def source(self) -> str:
        return self.rs.suite

    @property
    def precision(self) -> str:
        return str(self.case.params.get("precision", ""))


def published_figures(results_dir: Path) -> list[PublishedFigure]:
    """Every published case that names the answer's workload it informs (info.match.workload)."""
    out: list[PublishedFigure] = []
    folder = results_dir / PUBLISHED_DIR
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        for path in sorted(sub.glob("*.json")):
            rs = load_checked(path)
            for c in rs.cases:
                match = PublishedInfo.of(c.info).match
                if c.status == "ok" and match is not None and match.workload:
                    out.append(PublishedFigure(c, rs.gpu_slug, rs, match))
    return out


def published_claims(results_dir: Path) -> list[PublishedRatio]:
    return load_ratios(results_dir / PUBLISHED_DIR)


def spec(slug: str) -> GpuSpec:
    got = lookup(slug)
    if got is None:
        raise KeyError(slug)
    return got


def projected_value(case: CaseResult, src: str, dst: str, metric: str) -> tuple[float | None, str | None]:
    """The metric of `case` (measured on `src`) as the roofline projection puts it on `dst`, or None and
    why (a skip reason, or the metric cannot be projected)."""
    p = project_case(case, spec(src), spec(dst))
    if p.status != "ok":
        return None, p.reason
    m = p.metrics.get(metric)
    return (m.value, None) if m is not None else (None, f"{metric} is not projected")
