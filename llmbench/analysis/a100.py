"""H100 vs A100: one answer per headline workload, from every source that can give it.

No A100 is on the test machines, so each workload's H100-over-A100 ratio comes from whatever can be
known, each labelled for what it is:
- measured: a user's own A100 result sets (`llmbench versus BUNDLE`) against the committed H100 case of
  the same id, with the 95% interval of the ratio from both sides' samples;
- published: a source's own A100 and H100 figures of one case (results/published/, with how well they
  match the llmbench case), a published A100 figure against llmbench's H100 measurement, or a claim
  that gives only a ratio (published_ratios.py);
- projected: the committed H100 (and H200) case projected to the A100 by roofline scaling
  (analysis/project.py), with its family's error band from validation (a100_check.py).

The verdict of each row uses the measured ratio where there is one, else a close published pair of
the same GPUs (H100 SXM and the A100 compared), else the projection, and says which. It is the seed
write-up's question at the user's prices: is the H100 worth twice the A100's rent here (yes, no, or
within the noise: the interval straddles 2), is it cheaper per unit of work at the prices given, and
the break-even A100 rent (the H100's price over the ratio: below it the A100 costs less per unit).
The A100 (compute capability 8.0) has no fp8: every fp8 workload is also answered as the H100's fp8
against the A100's bf16, labelled so.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import geometric_mean
from typing import Any

from llmbench.analysis.a100_check import Band, Check, all_checks, bands, same_precision
from llmbench.analysis.a100_data import (
    A100_NO_FP8,
    A100_TARGETS,
    H100,
    H100_SLUGS,
    H200,
    PRIMARY_A100,
    CaseIndex,
    PublishedFigure,
    committed_index,
    is_a100,
    projected_value,
    published_claims,
    published_figures,
    sets_index,
    spec,
)
from llmbench.analysis.compare import orient, ratio
from llmbench.analysis.prices import Price
from llmbench.errors import UserError, choices_text
from llmbench.metrics import METRICS
from llmbench.references.published_ratios import PublishedRatio
from llmbench.references.workloads import SIXTEEN_BIT, WORKLOADS, Workload, claim_covers
from llmbench.results import CaseResult, ResultSet

WORTH = 2.0  # the seed's question: is an H100 worth twice the A100's rent?
KINDS = ("measured", "published", "projected")


def short(slug: str) -> str:
    """'a100-sxm-80gb' -> 'A100 SXM 80GB'."""
    return slug.replace("-", " ").upper()


@dataclass
class Evidence:
    kind: str  # measured, published or projected
    what: str  # where the ratio comes from, in words
    ratio: float  # H100 over A100, oriented: > 1 the H100 is better
    interval: tuple[float, float] | None
    interval_kind: str  # what the interval is (a 95% CI, a source's range, a projection band), '' if none
    pair: str  # the GPUs compared, as the source has them
    precisions: str
    quality: str  # measured, a published match's quality, or "roofline projection"
    h100: float | None = None
    a100: float | None = None
    unit: str = ""
    source: str = ""  # the set, suite or claim
    same_pair: bool = False  # the H100 SXM against the A100 the answer is about
    cases: int = 1  # the cases behind the ratio (a source's several lengths: their geometric mean)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Verdict:
    ratio: float
    interval: tuple[float, float] | None
    worth_2x: str  # yes / no / within the noise (+ "(no interval)" where the figure has none)
    price_ratio: float | None = None  # the H100's rent over the A100's, where both are given
    at_prices: str | None = None  # whether the H100 is cheaper per unit of work at those prices
    break_even_usd: float | None = None  # the A100 rent at which both cost the same per unit
    break_even_interval: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def decide(r: float, interval: tuple[float, float] | None, threshold: float) -> str:
    """yes (the ratio is above the threshold, its interval too), no (below), within the noise."""
    if interval is None:
        return ("yes" if r > threshold else "no") + " (no interval)"
    lo, hi = interval
    return "yes" if lo > threshold else "no" if hi < threshold else "within the noise"


def verdict(ev: Evidence, h100_price: Price | None, a100_price: Price | None) -> Verdict:
    v = Verdict(ev.ratio, ev.interval, decide(ev.ratio, ev.interval, WORTH))
    if h100_price is not None:
        v.break_even_usd = h100_price.usd_per_hour / ev.ratio
        if ev.interval is not None:
            lo, hi = ev.interval
            v.break_even_interval = (h100_price.usd_per_hour / hi if hi > 0 else 0.0,
                                     h100_price.usd_per_hour / lo if lo > 0 else math.inf)
    if h100_price is not None and a100_price is not None:
        v.price_ratio = h100_price.usd_per_hour / a100_price.usd_per_hour
        v.at_prices = decide(ev.ratio, ev.interval, v.price_ratio)
    return v


@dataclass
class AnswerRow:
    workload: Workload
    fp8: bool  # the H100's fp8 against the A100's best precision (bf16)
    evidence: list[Evidence] = field(default_factory=list)
    chosen: Evidence | None = None
    verdict: Verdict | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def compared(self) -> str:
        return "H100 fp8 vs A100 bf16" if self.fp8 else "same precision"

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload.key, "title": self.workload.title, "metric": self.workload.metric,
                "compared": self.compared, "evidence": [e.to_dict() for e in self.evidence],
                "chosen": self.chosen.to_dict() if self.chosen else None,
                "verdict": self.verdict.to_dict() if self.verdict else None, "notes": self.notes}


@dataclass
class ProjectionRow:
    workload: Workload
    h100: float
    h100_runs: list[float]  # every committed H100 run's figure of the case (the newest is `h100`)
    h200: float | None
    from_h100: dict[str, float | str]  # A100 slug -> projected figure, or why none
    from_h200: dict[str, float | str]
    band: Band

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload.key, "metric": self.workload.metric, "h100": self.h100,
                "h100_runs": self.h100_runs, "h200": self.h200, "from_h100": self.from_h100,
                "from_h200": self.from_h200, "band": self.band.to_dict()}


@dataclass
class Answer:
    a100: str  # the A100 slug compared
    rows: list[AnswerRow]
    projections: list[ProjectionRow]
    bands: dict[str, Band]
    checks: list[Check]
    figures: list[PublishedFigure]
    claims: list[PublishedRatio]
    prices: dict[str, Price]
    prices_origin: str
    measured: list[str]  # the user's A100 sets used

    def to_dict(self) -> dict[str, Any]:
        return {
            "a100": self.a100, "measured_sets": self.measured, "prices_origin": self.prices_origin,
            "prices": {k: asdict(v) for k, v in self.prices.items()},
            "rows": [r.to_dict() for r in self.rows], "projections": [p.to_dict() for p in self.projections],
            "bands": {k: b.to_dict() for k, b in self.bands.items()}, "checks": [c.to_dict() for c in self.checks],
        }


def check_a100_sets(sets: list[tuple[str, ResultSet]]) -> str | None:
    """The A100 slug of a user's sets (None where none are given); an error for any set that is not a
    measured A100 set, or for A100s of two kinds."""
    slugs = set()
    for name, rs in sets:
        if not is_a100(rs.gpu_slug):
            raise UserError(f"{name}: GPU {rs.gpu_slug!r} is not an A100; give result sets or bundles measured on "
                            f"an A100 ({choices_text([*A100_TARGETS, 'a100-pcie-40gb'])})")
        if rs.source.kind != "measured":
            raise UserError(f"{name}: a {rs.source.kind} result set; give your own measured A100 sets")
        slugs.add(rs.gpu_slug)
    if len(slugs) > 1:
        raise UserError(f"the A100 sets are of {len(slugs)} kinds of A100 ({', '.join(sorted(slugs))}); give one kind")
    return next(iter(slugs), None)


# -- evidence -----------------------------------------------------------------------------------------

def _metric(case: CaseResult, w: Workload) -> float | None:
    m = case.metrics.get(w.metric)
    return m.value if m is not None else None


def _measured(w: Workload, h: CaseResult, a: CaseResult, a_name: str, a100: str, precisions: str) -> Evidence | None:
    hm, am = h.metrics.get(w.metric), a.metrics.get(w.metric)
    r = ratio(am, hm, w.better, f"{h.id}:{a.id}:{w.metric}") if hm and am else None
    if r is None or hm is None or am is None:
        return None
    return Evidence("measured", f"your A100 ({a_name}) against the committed H100", r.value, r.ci,
                    "95% CI (within-run samples)" if r.ci else "", f"H100 SXM vs {short(a100)}", precisions,
                    "measured", hm.value, am.value, hm.unit, a_name, True)


def _projected(w: Workload, h: CaseResult, basis: CaseResult, src: str, a100: str, band: Band,
               precisions: str) -> Evidence | str:
    """The H100 figure against the A100 figure projected from `basis` (measured on `src`)."""
    value, why = projected_value(basis, src, a100, w.metric)
    hv = _metric(h, w)
    if value is None or hv is None:
        return f"projected from the {short(src)}: {why}"
    r = float(orient(hv, value, w.better))
    return Evidence("projected", f"projected from llmbench's {short(src)} measurement (roofline)", r,
                    band.interval(r, w.better), band.text(), f"H100 SXM vs {short(a100)}", precisions,
                    "roofline projection", hv, value, METRICS[w.metric].unit, src, True)


def _metric_of(w: Workload, case: CaseResult) -> str | None:
    return next((m for m in (w.metric, *w.also) if m in case.metrics), None)


def _published_pairs(w: Workload, figs: list[PublishedFigure], fp8: bool, a100: str) -> list[Evidence]:
    """A source's own H100 and A100 figures, per source and pair of GPUs (several cases: their
    geometric mean, the interval their range)."""
    groups: dict[tuple[str, str, str], list[tuple[PublishedFigure, PublishedFigure, str]]] = {}
    mine = [f for f in figs if f.match.workload == w.key]
    for h in (f for f in mine if f.slug in H100_SLUGS):
        for a in (f for f in mine if is_a100(f.slug) and f.source == h.source):
            rest = [{k: v for k, v in f.case.params.items() if k != "precision"} for f in (h, a)]
            metric = _metric_of(w, h.case)
            if rest[0] != rest[1] or metric is None or metric not in a.case.metrics:
                continue
            if fp8:
                wanted = h.precision == "fp8" and a.precision in SIXTEEN_BIT
            else:
                wanted = same_precision(h, a) and (w.precisions is None or a.precision in w.precisions)
            if wanted:
                groups.setdefault((h.source, h.slug, a.slug), []).append((h, a, metric))
    out = []
    for (source, hs, as_), members in groups.items():
        rs = [float(orient(h.case.metrics[m].value, a.case.metrics[m].value, METRICS[m].better))
              for h, a, m in members]
        h0, a0, m0 = members[0]
        quality = max(((f.match.quality or "own workload") for h, a, _ in members for f in (h, a)),
                      key=("close", "loose", "own workload").index)
        n = len(members)
        out.append(Evidence(
            "published", f"{source}: the source's own {short(hs)} and {short(as_)} figures", geometric_mean(rs),
            (min(rs), max(rs)) if n > 1 else None, f"range over the source's {n} cases" if n > 1 else "",
            f"{short(hs)} vs {short(as_)}", f"{h0.precision} vs {a0.precision}", quality,
            h0.case.metrics[m0].value if n == 1 else None, a0.case.metrics[m0].value if n == 1 else None,
            METRICS[m0].unit, source, hs == H100 and as_ == a100, n))
    return out


def _published_a100(w: Workload, h: CaseResult, figs: list[PublishedFigure], a100: str) -> list[Evidence]:
    """Published A100 figures of the llmbench case itself, against llmbench's H100 measurement."""
    hv = _metric(h, w)
    out = []
    for f in figs:
        m = f.case.metrics.get(w.metric)
        if not is_a100(f.slug) or f.case.id != h.id or m is None or hv is None:
            continue
        out.append(Evidence(
            "published", f"{f.source}: published {short(f.slug)} figure against llmbench's H100 measurement",
            float(orient(hv, m.value, w.better)), None, "", f"H100 SXM (llmbench) vs {short(f.slug)} ({f.source})",
            f"{h.params.get('precision', '-')} vs {f.precision or '-'}", (f.match.quality or "?"), hv, m.value,
            m.unit, f.source, False))
    return out


def _claims(w: Workload, claims: list[PublishedRatio], fp8: bool) -> list[Evidence]:
    return [
        Evidence("published", f"{c.key}: a claim of the ratio only ({c.text()})", c.point,
                 (c.low, c.high) if c.kind == "range" else None, "the source's range" if c.kind == "range" else "",
                 f"{c.faster} vs {c.slower}", "same precision" if c.same_precision else "H100 fp8 vs A100 16-bit",
                 "loose",
                 source=c.key)
        for c in claims if claim_covers(c, w) and c.same_precision != fp8
    ]


def _fp8_linear_projection(w: Workload, h: CaseResult, a100: str, band: Band) -> Evidence | str:
    """The fp8 linear against the A100's bf16 linear: the H100's own bf16 time (fwd_ms x speedup_vs_bf16)
    scaled by the bf16 dense peaks (the 16384-token product is compute-bound)."""
    fp8_ms, speedup = h.metrics.get("fwd_ms"), h.metrics.get("speedup_vs_bf16")
    p_h, p_a = spec(H100).peak("bf16"), spec(a100).peak("bf16")
    if fp8_ms is None or speedup is None or not p_h or not p_a:
        return "no bf16 baseline (speedup_vs_bf16) in the H100 case"
    a100_ms = fp8_ms.value * speedup.value * p_h / p_a
    r = a100_ms / fp8_ms.value
    return Evidence("projected", "projected: the H100's bf16 baseline scaled by the bf16 peaks "
                    f"({p_h:g} / {p_a:g} TFLOP/s)", r, band.interval(r, "lower"), band.text(),
                    f"H100 SXM vs {short(a100)}", "H100 fp8 vs A100 bf16", "roofline projection",
                    fp8_ms.value, a100_ms, "ms", H100, True)


QUALITY_ORDER = ("measured", "close", "roofline projection", "loose", "own workload")


def _choose(evidence: list[Evidence]) -> Evidence | None:
    """Measured, else a close published pair of the same GPUs, else the projection from the H100, else
    any published pair of the same GPUs; among several, the better match, then the more cases."""
    rules = (
        lambda e: e.kind == "measured",
        lambda e: e.kind == "published" and e.same_pair and e.quality == "close",
        lambda e: e.kind == "projected" and e.source == H100,
        lambda e: e.kind == "published" and e.same_pair,
    )
    for rule in rules:
        found = [e for e in evidence if rule(e)]
        if found:
            return min(found, key=lambda e: (QUALITY_ORDER.index(e.quality), -e.cases))
    return None


@dataclass
class _Inputs:
    h100: CaseIndex
    h200: CaseIndex
    user: CaseIndex | None
    figs: list[PublishedFigure]
    claims: list[PublishedRatio]
    bands: dict[str, Band]
    a100: str


def _row(w: Workload, fp8: bool, x: _Inputs) -> AnswerRow:
    row = AnswerRow(w, fp8)
    band = x.bands.get(w.family) or Band(w.family)
    prec = "H100 fp8 vs A100 bf16" if fp8 else "same precision"
    h_bf16 = x.h100.find(w.picks) if w.scenario else None
    h = (h_bf16 if w.fp8_only else x.h100.find(w.picks_fp8)) if fp8 else h_bf16
    if w.scenario and h is None:
        row.notes.append(f"no committed H100 case of this workload ({'fp8' if fp8 else 'its precision'})")
    if fp8:
        row.notes.append(A100_NO_FP8)
    if h is not None and x.user is not None:
        a_case = x.user.cases.get(h_bf16.id) if h_bf16 is not None and not w.fp8_only else None
        if a_case is not None:
            got = _measured(w, h, a_case, x.user.origin[a_case.id], x.a100, prec)
            row.evidence += [got] if got else []
        skipped = x.user.skipped(h.id)
        if skipped is not None:
            why = f" ({skipped.reason})" if skipped.reason else ""
            row.notes.append(f"your A100's {h.id}: {skipped.status}{why}")
        if a_case is None and not w.fp8_only:
            row.notes.append("your A100 sets have no ok result of this case; published and projected figures stand")
    row.evidence += _published_pairs(w, x.figs, fp8, x.a100)
    if h is not None and not fp8:
        row.evidence += _published_a100(w, h, x.figs, x.a100)
    row.evidence += _claims(w, x.claims, fp8)
    if h is not None:
        projections: list[Evidence | str]
        if w.fp8_only:
            projections = [_fp8_linear_projection(w, h, x.a100, band)]
        else:
            basis = h_bf16 if fp8 else h
            projections = [_projected(w, h, basis, H100, x.a100, band, prec)] if basis is not None else []
            other = x.h200.cases.get(basis.id) if basis is not None else None
            if other is not None:
                projections.append(_projected(w, h, other, H200, x.a100, band, prec))
        row.evidence += [p for p in projections if isinstance(p, Evidence)]
        row.notes += [p for p in projections if isinstance(p, str)]
    row.chosen = _choose(row.evidence)
    return row


def _projection_rows(x: _Inputs) -> list[ProjectionRow]:
    out = []
    for w in WORKLOADS:
        h = x.h100.find(w.picks) if w.scenario and not w.fp8_only else None
        hv = _metric(h, w) if h is not None else None
        if h is None or hv is None:
            continue
        other = x.h200.cases.get(h.id)
        out.append(ProjectionRow(w, hv, x.h100.values(h.id, w.metric), _metric(other, w) if other else None,
                                 _to_a100s(h, H100, w.metric), _to_a100s(other, H200, w.metric) if other else {},
                                 x.bands.get(w.family) or Band(w.family)))
    return out


def _to_a100s(case: CaseResult, src: str, metric: str) -> dict[str, float | str]:
    """The metric of `case` projected to each A100 target, or why not."""
    got: dict[str, float | str] = {}
    for slug in A100_TARGETS:
        value, why = projected_value(case, src, slug, metric)
        got[slug] = value if value is not None else (why or "not projected")
    return got


def build_answer(results_dir: Path, a100_sets: list[tuple[str, ResultSet]] | None = None,
                 prices: dict[str, Price] | None = None, prices_origin: str = "") -> Answer:
    """The answer from the committed sets under `results_dir` (results/), its published references,
    and a user's own A100 sets where given (they replace published and projected figures)."""
    given = list(a100_sets or [])
    a100 = check_a100_sets(given) or PRIMARY_A100
    h100, h200 = committed_index(results_dir, H100), committed_index(results_dir, H200)
    figs, claims = published_figures(results_dir), published_claims(results_dir)
    checks = all_checks(h100, h200, figs, claims)
    x = _Inputs(h100, h200, sets_index(given, a100) if given else None, figs, claims, bands(checks), a100)
    rows = []
    for w in WORKLOADS:
        if not w.fp8_only:
            rows.append(_row(w, False, x))
        if w.fp8 is not None or w.fp8_only:
            rows.append(_row(w, True, x))
    prices = dict(prices or {})
    for r in rows:
        if r.chosen is not None:
            r.verdict = verdict(r.chosen, prices.get(H100), prices.get(a100))
    return Answer(a100, rows, _projection_rows(x), x.bands, checks, figs, claims, prices, prices_origin,
                  sorted({x.user.origin[c] for c in x.user.cases}) if x.user else [])


