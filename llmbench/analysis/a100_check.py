"""How far the roofline projection can be trusted for an A100, per workload family: the error bands
the H100-vs-A100 answer puts on its projected ratios.

Three kinds of check, each an error of a projected figure (> 0: the projection was too high):
- H100 -> H200: each case measured on both, projected from the H100 and compared with the H200's
  measurement (compute peaks are equal there, so this tests the memory side only);
- H100 -> A100 against a published A100 figure: where a published case has an llmbench case's id
  (info.match says how close), llmbench's own measurement of it is projected to that A100 and compared
  with the published figure (the error then includes the source's other software and settings);
- ratios: where a source gives an H100 and an A100 figure of one case, or only their ratio (a
  claim), the projection's ratio for the same pair of GPUs (llmbench's case projected to both) is
  compared with it; the error is that of the A100 figure the projected ratio implies.

A family's band is the worst |error| of its checks made at the same precision on both sides against a
measurement or a close or loose published match; checks across precisions (H100 fp8 against A100
fp16) test llmbench's fp8 path against the source's, not the projection, and are shown outside it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from statistics import median
from typing import Any

from llmbench.analysis.a100_data import (
    H100,
    H100_SLUGS,
    H200,
    CaseIndex,
    PublishedFigure,
    is_a100,
    projected_value,
)
from llmbench.analysis.compare import orient
from llmbench.analysis.project import scenario_of
from llmbench.metrics import METRICS, Better
from llmbench.references.published_ratios import PublishedRatio
from llmbench.references.workloads import SIXTEEN_BIT, WORKLOADS, Workload, claim_covers
from llmbench.results import CaseResult

BAND_QUALITIES = ("measured", "close", "loose")


def family_of(case: CaseResult, metric: str) -> str | None:
    """The family a case's metric informs, as its scenario declares (None: none, or outside its regime)."""
    scenario = scenario_of(case)
    return scenario.family(case.params, metric) if scenario is not None else None


@dataclass
class Check:
    family: str
    kind: str  # what was compared (H100 -> H200 measured, published A100 figure, published pair, claim)
    what: str  # the case or claim, in words
    target: str  # the GPU (or pair) the projection was checked on
    quality: str  # measured, or the published match's quality
    same_precision: bool
    reference: float  # the measured or published figure, or the published ratio
    projected: float  # the projected figure, or the projection's ratio
    error_pct: float  # of the projected target figure
    source: str  # the set or claim it comes from

    @property
    def in_band(self) -> bool:
        return self.same_precision and self.quality in BAND_QUALITIES

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "in_band": self.in_band}


@dataclass
class Band:
    family: str
    checks: list[Check] = field(default_factory=list)  # those in the band

    @property
    def worst(self) -> float | None:
        """The worst |error| as a fraction (None: no check)."""
        return max(abs(c.error_pct) for c in self.checks) / 100 if self.checks else None

    @property
    def median(self) -> float | None:
        return median(abs(c.error_pct) for c in self.checks) / 100 if self.checks else None

    def interval(self, r: float, better: Better) -> tuple[float, float] | None:
        """The oriented H100-over-A100 ratio `r` widened by the band: the A100 figure off by up to the
        worst error either way (rates: r(1-w)..r(1+w); times: r/(1+w)..r/(1-w))."""
        w = self.worst
        if w is None:
            return None
        if better == "higher":
            return max(r * (1 - w), 0.0), r * (1 + w)
        return r / (1 + w), (r / (1 - w) if w < 1 else math.inf)

    def text(self) -> str:
        if self.worst is None:
            return "no check of this family: error unknown"
        return f"±{self.worst:.0%} projection band ({len(self.checks)} checks)"

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.family, "worst": self.worst, "median": self.median, "n": len(self.checks)}


def a100_error(r_ref: float, r_proj: float, better: Better) -> float:
    """The error (%) of the A100 figure a projected oriented ratio implies, against a reference ratio."""
    return ((r_ref / r_proj if better == "higher" else r_proj / r_ref) - 1.0) * 100.0


def _value(case: CaseResult, src: str, dst: str, metric: str) -> float | None:
    if src == dst:
        m = case.metrics.get(metric)
        return m.value if m is not None else None
    return projected_value(case, src, dst, metric)[0]


def _ratio(h100_case: CaseResult, h100_src: str, a100_case: CaseResult, a100_src: str,
           pair: tuple[str, str], metric: str) -> float | None:
    """The projection's oriented ratio for a pair of GPUs: each side's case projected to its GPU."""
    h, a = _value(h100_case, h100_src, pair[0], metric), _value(a100_case, a100_src, pair[1], metric)
    if h is None or a is None or h <= 0 or a <= 0:
        return None
    return float(orient(h, a, METRICS[metric].better))


def h200_checks(h100: CaseIndex, h200: CaseIndex) -> list[Check]:
    """Each case measured on both: the H100's projected to the H200 against the H200's measurement."""
    out: list[Check] = []
    for cid, c in h100.cases.items():
        other = h200.cases.get(cid)
        if other is None:
            continue
        for metric in c.metrics:
            family = family_of(c, metric)
            ref = other.metrics.get(metric)
            proj = projected_value(c, H100, H200, metric)[0] if family else None
            if family and ref is not None and proj is not None and ref.value > 0:
                out.append(Check(family, "H100 -> H200 (measured)", cid, H200, "measured", True,
                                 ref.value, proj, (proj / ref.value - 1) * 100,
                                 f"{h100.origin[cid]} / {h200.origin[cid]}"))
    return out


def _basis(cid: str, h100: CaseIndex, h200: CaseIndex) -> tuple[CaseResult, str] | None:
    """llmbench's own measurement of a case: the H100's, else the H200's."""
    for idx in (h100, h200):
        if cid in idx.cases:
            return idx.cases[cid], idx.slug
    return None


def _quality(*figs: PublishedFigure) -> str:
    order = ("close", "loose", "own workload")
    return max(((f.match.quality or "own workload") for f in figs), key=order.index)


def _workload_case(w: Workload, h100: CaseIndex, fp8: bool = False) -> CaseResult | None:
    return h100.find(w.picks_fp8 if fp8 else w.picks) if w.scenario else None


def direct_checks(figs: list[PublishedFigure], h100: CaseIndex, h200: CaseIndex) -> list[Check]:
    """Published A100 figures against llmbench's projection of the same case (or, for the source's
    own workload at the workload's precision, of the workload's case: a loose check)."""
    out: list[Check] = []
    workloads = {w.key: w for w in WORKLOADS}
    for f in figs:
        if not is_a100(f.slug):
            continue
        basis = _basis(f.case.id, h100, h200)
        quality = _quality(f)
        w = workloads.get(f.match.workload or "")
        if basis is None and w is not None and w.metric in f.case.metrics and f.precision in SIXTEEN_BIT:
            c = _workload_case(w, h100)
            basis, quality = ((c, H100), "loose") if c is not None else (None, quality)
        if basis is None:
            continue
        case, src = basis
        for metric, m in f.case.metrics.items():
            family = family_of(case, metric)
            proj = _value(case, src, f.slug, metric) if family else None
            if family and proj is not None:
                out.append(Check(family, f"{src.split('-')[0].upper()} -> A100 (published figure)", case.id,
                                 f.slug, quality, True, m.value, proj, (proj / m.value - 1) * 100, f.source))
    return out


def _pairs(figs: list[PublishedFigure]) -> list[tuple[PublishedFigure, PublishedFigure]]:
    """(H100 figure, A100 figure) of one source and one case but for the precision: the same precision,
    or 16-bit on both, or the H100's fp8 against the A100's 16-bit."""
    def key(f: PublishedFigure) -> tuple[str, str]:
        rest = {k: v for k, v in f.case.params.items() if k != "precision"}
        return f.source, repr(sorted(rest.items()))

    out = []
    for h in (f for f in figs if f.slug in H100_SLUGS):
        for a in (f for f in figs if is_a100(f.slug) and key(f) == key(h)):
            same = h.precision == a.precision or {h.precision, a.precision} <= SIXTEEN_BIT
            if same or (h.precision == "fp8" and a.precision in SIXTEEN_BIT):
                out.append((h, a))
    return out


def same_precision(h: PublishedFigure, a: PublishedFigure) -> bool:
    return h.precision == a.precision or {h.precision, a.precision} <= SIXTEEN_BIT


def pair_checks(figs: list[PublishedFigure], h100: CaseIndex, h200: CaseIndex) -> list[Check]:
    """A source's H100 and A100 figures of one case: their ratio against the projection's for the pair."""
    out: list[Check] = []
    workloads = {w.key: w for w in WORKLOADS}
    for h, a in _pairs(figs):
        same = same_precision(h, a)
        w = workloads.get(h.match.workload or "")
        if same:
            basis = _basis(h.case.id, h100, h200)
            if basis is None and w is not None and h.precision in SIXTEEN_BIT:
                c = _workload_case(w, h100)
                basis = (c, H100) if c is not None else None
            h_basis = a_basis = basis
        else:
            hc = _workload_case(w, h100, fp8=True) if w is not None else None
            ac = _workload_case(w, h100) if w is not None else None
            h_basis = (hc, H100) if hc is not None else None
            a_basis = (ac, H100) if ac is not None else None
        if h_basis is None or a_basis is None:
            continue
        quality = _quality(h, a) if same and _basis(h.case.id, h100, h200) else "loose"
        for metric, hm in h.case.metrics.items():
            am = a.case.metrics.get(metric)
            family = family_of(h_basis[0], metric)
            if am is None or family is None:
                continue
            better = METRICS[metric].better
            r_proj = _ratio(h_basis[0], h_basis[1], a_basis[0], a_basis[1], (h.slug, a.slug), metric)
            if r_proj is None:
                continue
            r_ref = float(orient(hm.value, am.value, better))
            kind = "published pair" + ("" if same else f" ({h.precision} vs {a.precision})")
            out.append(Check(family, kind, h.case.id, f"{h.slug} / {a.slug}", quality, same,
                             r_ref, r_proj, a100_error(r_ref, r_proj, better), h.source))
    return out


def claim_checks(claims: list[PublishedRatio], h100: CaseIndex) -> list[Check]:
    """Ratio-only claims against the projection's ratio for the same pair of GPUs (llmbench's case of
    each workload the claim covers; "up to" against the largest)."""
    out: list[Check] = []
    for claim in claims:
        covered = [w for w in WORKLOADS if claim_covers(claim, w) and w.scenario]
        if claim.pair is None or not covered:
            continue
        ratios = []
        for w in covered:
            a_case = _workload_case(w, h100)
            h_case = a_case if claim.same_precision else _workload_case(w, h100, fp8=True)
            if a_case is None or h_case is None:
                continue
            r = _ratio(h_case, H100, a_case, H100, claim.pair, w.metric)
            if r is not None:
                ratios.append((r, w))
        if not ratios:
            continue
        r_proj, w = max(ratios, key=lambda rw: rw[0]) if claim.kind == "up to" else ratios[0]
        ref = min(max(r_proj, claim.low), claim.high)  # a range: its nearest end (the projection, inside it)
        family = w.family
        out.append(Check(family, "published claim" + ("" if claim.same_precision else " (across precisions)"),
                         f"{claim.key}: {claim.text()}", f"{claim.pair[0]} / {claim.pair[1]}", "loose",
                         claim.same_precision, ref, r_proj, a100_error(ref, r_proj, w.better), claim.key))
    return out


def all_checks(h100: CaseIndex, h200: CaseIndex, figs: list[PublishedFigure],
               claims: list[PublishedRatio]) -> list[Check]:
    return [*h200_checks(h100, h200), *direct_checks(figs, h100, h200), *pair_checks(figs, h100, h200),
            *claim_checks(claims, h100)]


def bands(checks: list[Check]) -> dict[str, Band]:
    """Per family, the checks its band is taken from."""
    out = {w.family: Band(w.family) for w in WORKLOADS}
    for c in checks:
        if c.in_band:
            out.setdefault(c.family, Band(c.family)).checks.append(c)
    return out
