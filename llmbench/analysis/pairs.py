"""GPU X vs GPU Y per workload: every source that can give the ratio (measured runs, published pairs and
claims, the projection by parts), graded, and one answer by one rule (measured > a controlled published
pair > a validated projection, else "not known — measure it"). docs/design.md, "Comparing, projecting,
publishing" (`analysis/pairs.py`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import geometric_mean
from typing import Any

from llmbench.analysis import parts, runs
from llmbench.analysis.compare import Ratio, SuiteFigure, orient, runs_ratio, suite_comparison
from llmbench.analysis.noisefloor import NoiseFloor, machine_of
from llmbench.analysis.prices import Price, list_prices
from llmbench.caseinfo import PublishedInfo, PublishedMatch
from llmbench.errors import UserError, choices_hint
from llmbench.hardware.specs import lookup, slugs
from llmbench.metrics import METRICS
from llmbench.references import Workload, claims, informs, published_sets, workloads
from llmbench.results import CaseResult, ResultSet

DEFAULT_PAIR = ("h100-sxm-80gb", "a100-sxm-80gb")
NOISE = 0.05  # a figure with no interval is read as +-5% when sources are checked for disagreement
WORTH = 2.0  # with no prices: is X worth twice Y's rent (the question llmbench was started with)?
SIXTEEN_BIT = frozenset({"bf16", "fp16"})  # one precision for a comparison (the same dense peak)


def family(slug: str) -> str:
    return slug.split("-")[0]


def _prec(p: Any) -> str:
    return "16-bit" if p in SIXTEEN_BIT else str(p or "-")


@dataclass
class Evidence:
    kind: str  # measured, published pair, published vs llmbench, claim, claim (up to), projection
    grade: str  # measured; controlled or uncontrolled; validated or not validated
    ratio: float | None  # X over Y (None: a projection with bounds only)
    low: float
    high: float
    interval: str  # what low..high is ('' where none)
    gpus: str  # the GPUs as the source compares them
    source: str
    what: str
    same_pair: bool  # about exactly X and Y
    cases: int = 1
    picks: bool = False  # may give the answer: measured, a controlled pair of X and Y, a validated projection


@dataclass
class Verdict:
    threshold: float  # X's rent over Y's, or WORTH
    cheaper: str  # is X cheaper per unit of work at that rent ratio: yes, no, within the interval
    break_even: tuple[float, float] | None  # X's rent at which both cost the same, over the interval


@dataclass
class Row:
    workload: Workload
    sides: tuple[str, str]  # the precision each GPU ran
    evidence: list[Evidence] = field(default_factory=list)
    chosen: Evidence | None = None
    span: tuple[float, float] | None = None  # over every source about X and Y
    controlled: tuple[float, float] | None = None  # over the controlled published pairs and claims about X and Y
    disagree: bool = False
    verdict: Verdict | None = None
    projection: parts.Projection | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        base = str(self.workload.params.get("precision") or "-")
        return self.workload.title + ("" if self.sides == (base, base) else f" — {self.sides[0]}"
                                      if self.sides[0] == self.sides[1] else f" — {self.sides[0]} vs {self.sides[1]}")


@dataclass
class Measured:
    """What stands for one case on one GPU: the runs used and those left out, with why."""

    gpu: str
    row: str
    case_id: str
    used: list[str]
    left_out: list[tuple[str, str]]
    note: str


@dataclass
class PairAnswer:
    a: str
    b: str
    rows: list[Row]
    omitted: list[tuple[str, str]]  # (row, why it is not shown)
    measured: list[Measured]
    bands: dict[str, parts.Band]
    prices: tuple[Price, Price] | None
    price_basis: str
    sources: dict[str, tuple[str, str, str]]  # source -> (citation, url, grade and why)
    suite: SuiteFigure | None = None  # X over Y over the declared cases, as `compare` and the pages give it
    read: str = ""  # which runs were read

    def to_dict(self) -> dict[str, Any]:
        def ev(e: Evidence | None) -> Any:
            return asdict(e) if e else None
        overall = self.suite.overall if self.suite else None
        mine = overall.ratios[1] if overall else None
        return {"pair": [self.a, self.b], "price_basis": self.price_basis, "read": self.read,
                "suite": {"suite": self.suite.suite, "cases": overall.n if overall else 0,  # type: ignore[union-attr]
                          "ratio": mine.to_dict() if mine else None} if self.suite else None,
                "prices": [asdict(p) for p in self.prices] if self.prices else None,
                "rows": [{"workload": r.workload.key, "title": r.title, "metric": r.workload.metric, "sides": r.sides,
                          "chosen": ev(r.chosen), "span": r.span, "controlled": r.controlled, "disagree": r.disagree,
                          "verdict": asdict(r.verdict) if r.verdict else None, "notes": r.notes,
                          "evidence": [ev(e) for e in r.evidence]} for r in self.rows],
                "omitted": self.omitted, "measured": [asdict(m) for m in self.measured],
                "bands": {k: {"checks": len(b.checks), "errors": b.errors} for k, b in self.bands.items()}}


@dataclass(frozen=True)
class _Fig:
    slug: str
    rs: ResultSet
    case: CaseResult
    match: PublishedMatch


def _figures() -> list[_Fig]:
    return [_Fig(rs.gpu_slug, rs, c, m) for _, rs in published_sets() for c in rs.cases
            if c.status == "ok" and (m := PublishedInfo.of(c.info).match) is not None and m.workload]


def _published(w: Workload, row: Row, a: str, b: str, figs: list[_Fig]) -> list[Evidence]:
    """A source's own figures of both GPUs (or of GPUs of their families), per source and pair of GPUs, graded as
    the source is; a controlled pair answers a workload llmbench has a case of only where its figures are of
    that workload and match its case closely (another engine or model is evidence)."""
    groups: dict[tuple[str, str, str], list[tuple[float, bool, bool]]] = {}
    mine = [f for f in figs if informs(f.match.workload, w.key)]
    for fa in (f for f in mine if family(f.slug) == family(a)):
        for fb in (f for f in mine if family(f.slug) == family(b) and f.slug != fa.slug and f.rs.suite == fa.rs.suite):
            rest = [{k: v for k, v in f.case.params.items() if k != "precision"} for f in (fa, fb)]
            m = next((k for k in (w.metric, *w.also) if k in fa.case.metrics), None)
            precs = tuple(_prec(f.case.params.get("precision")) for f in (fa, fb))
            if rest[0] == rest[1] and m and m in fb.case.metrics and precs == tuple(map(_prec, row.sides)):
                r = float(orient(fa.case.metrics[m].value, fb.case.metrics[m].value, METRICS[m].better))
                close = fa.match.workload == w.key and fa.match.quality == fb.match.quality == "close"
                groups.setdefault((fa.rs.suite, fa.slug, fb.slug), []).append(
                    (r, fa.match.grade == fb.match.grade == "controlled", close or not w.scenario))
    out = []
    for (suite, sa, sb), got in groups.items():
        rs, same = [g[0] for g in got], (sa, sb) == (a, b)
        controlled, close = (all(g[i] for g in got) for i in (1, 2))
        out.append(Evidence("published pair", "controlled" if controlled else "uncontrolled", geometric_mean(rs),
                            min(rs), max(rs), f"range over its {len(rs)} cases" if len(rs) > 1 else "",
                            f"{sa} vs {sb}", suite, "the source's own figures of both GPUs" +
                            ("" if close else " (another engine, model or setting than this case: evidence only)"),
                            same, len(rs), picks=same and controlled and close))
    return out


def _against_llmbench(w: Workload, ids: tuple[str, str], a: str, b: str, figs: list[_Fig],
                      ra: runs.GpuRuns | None, rb: runs.GpuRuns | None) -> list[Evidence]:
    """A published figure of one GPU against llmbench's runs of the other, of the same case."""
    out = []
    for f in figs:
        mine = ra if f.slug == b else rb if f.slug == a else None
        side = ids[0] if f.slug == b else ids[1]
        cr = mine.case(side) if mine and f.case.id == (ids[1] if f.slug == b else ids[0]) else None
        v = cr.value(w.metric) if cr else None
        if v is None or w.metric not in f.case.metrics:
            continue
        pub = f.case.metrics[w.metric].value
        r = float(orient(v, pub, w.better) if f.slug == b else orient(pub, v, w.better))
        out.append(Evidence("published vs llmbench", "uncontrolled", r, r, r, "", f"{a} vs {b}", f.rs.suite,
                            f"{f.rs.suite}'s {f.slug} figure against llmbench's runs of the other GPU", True))
    return out


def _claims(w: Workload, row: Row, a: str, b: str) -> list[Evidence]:
    out = []
    for c in claims():
        fam = (family(c.pair[0]), family(c.pair[1]))
        flip = fam == (family(b), family(a)) and fam != (family(a), family(b))
        if not informs(c.workload, w.key) or c.same_precision != (row.sides[0] == row.sides[1]) or \
                fam not in ((family(a), family(b)), (family(b), family(a))):
            continue
        lo, hi = (1 / c.high, 1 / c.low) if flip else (c.low, c.high)
        same = c.pair in ((a, b), (b, a))
        upto, close = c.kind == "up to", not w.scenario or c.quality == "close"
        out.append(Evidence("claim (up to)" if upto else "claim", c.grade, c.point ** (-1 if flip else 1), lo, hi,
                            "the source's range" if c.kind == "range" else "", f"{c.faster} vs {c.slower}", c.key,
                            f"a ratio only: {c.text()}", same,
                            picks=same and c.grade == "controlled" and not upto and close))
    return out


def _projection(w: Workload, ids: tuple[str, str], a: str, b: str, ra: runs.GpuRuns | None,
                rb: runs.GpuRuns | None, bands: dict[str, parts.Band], row: Row) -> list[Evidence]:
    """One side projected from the other GPU's runs (Y from X where X ran Y's case, else X from Y)."""
    for mine, src, dst, fwd in ((ra, a, b, True), (rb, b, a, False)):
        basis = mine.case(ids[1] if fwd else ids[0]) if mine else None
        own = mine.case(ids[0] if fwd else ids[1]) if mine else None
        v, vo = (basis.value(w.metric), own.value(w.metric)) if basis and own else (None, None)
        if basis is None or v is None or vo is None:
            continue
        p = parts.project(basis.case, w.metric, v, src, dst)
        if isinstance(p, str):
            row.notes.append(f"not projected from {src}: {p}")
            return []
        row.projection = p
        slow, point, fast = p.values()
        ratio = [float(orient(vo, x, w.better) if fwd else orient(x, vo, w.better)) for x in (slow, fast)]
        r = None if point is None else float(orient(vo, point, w.better) if fwd else orient(point, vo, w.better))
        lo, hi = min(ratio), max(ratio)
        band = bands.setdefault(p.split.klass, parts.Band(p.split.klass, ()))
        errors = band.errors
        ok = r is not None and errors is not None
        if r is not None and errors is not None:
            e = (1 + errors[0], 1 + errors[1]) if fwd else (1 / (1 + errors[1]), 1 / (1 + errors[0]))
            lo, hi = max(lo, r * e[0]), min(hi, r * e[1])
        how = (f"band of {len(band.checks)} checks of {p.split.klass} cases, within the parts' bounds" if ok else
               f"the parts' bounds; {p.split.klass} cases are not validated")
        return [Evidence("projection", "validated" if ok else "not validated", r, lo, hi, how, f"{a} vs {b}",
                         f"llmbench's runs on {src}", f"{p.split.text()} (host time as measured)", True, picks=ok)]
    return []


def _choose(ev: list[Evidence]) -> Evidence | None:
    for kinds in (("measured",), ("published pair", "claim"), ("projection",)):
        if found := [e for e in ev if e.picks and e.kind in kinds]:
            return max(found, key=lambda e: e.cases)
    return None


def _span(ev: list[Evidence]) -> tuple[tuple[float, float] | None, bool, tuple[float, float] | None]:
    """The range of every source about X and Y, whether two of them disagree beyond the noise (an 'up to' is a
    maximum: nothing below it disagrees with it), and the range of the controlled published pairs and claims."""
    same = [e for e in ev if e.same_pair]
    ctl = [e for e in same if e.grade == "controlled" and e.kind in ("published pair", "claim")]
    widen = [(0.0 if e.kind == "claim (up to)" else e.low / (1 + NOISE) if e.low == e.high else e.low,
              e.high * (1 + NOISE) if e.low == e.high else e.high) for e in same]
    return ((min(e.low for e in same), max(e.high for e in same)) if same else None,
            bool(same) and max(w[0] for w in widen) > min(w[1] for w in widen),
            (min(e.low for e in ctl), max(e.high for e in ctl)) if ctl else None)


def _verdict(row: Row, prices: tuple[Price, Price] | None) -> Verdict | None:
    lo_hi = (row.chosen.low, row.chosen.high) if row.chosen else row.span
    if lo_hi is None:
        return None
    t = prices[0].usd_per_hour / prices[1].usd_per_hour if prices else WORTH
    cheaper = None
    if row.chosen is not None:
        cheaper = "yes" if lo_hi[0] > t else "no" if lo_hi[1] < t else "within the interval"
        cheaper += " (no interval)" if lo_hi[0] == lo_hi[1] else ""
    # X's rent at which both cost the same per unit (Y's rent times the ratio): the GPU whose rent is in
    # question, as `compare --price` states it for the candidate
    be = (prices[1].usd_per_hour * lo_hi[0], prices[1].usd_per_hour * lo_hi[1]) if prices else None
    return Verdict(t, cheaper or "not known", be)


def pair_prices(a: str, b: str, given: dict[str, Price] | None) -> tuple[tuple[Price, Price] | None, str]:
    """The user's prices of both GPUs, else the first list prices of both of one offer class and date."""
    if given:
        missing = [g for g in (a, b) if g not in given]
        if missing:
            raise UserError(f"--price: give both GPUs' prices (missing {', '.join(missing)}): prices compare like "
                            "for like")
        return (given[a], given[b]), "your prices (--price / --prices)"
    offers = list_prices()
    for ga, pa in offers:
        for gb, pb in offers:
            if (ga, gb) == (a, b) and (pa.offer, pa.checked) == (pb.offer, pb.checked):
                return (pa, pb), f"list prices like for like: {pa.offer}, both checked {pa.checked}"
    return None, ("no list prices of both GPUs of one offer class and date in the data; the verdict is at twice "
                  "the rent: give --price for both")


def check_gpu(slug: str) -> str:
    if lookup(slug) is None:
        raise UserError(f"--gpus: unknown GPU {slug!r}; {choices_hint(slug, slugs())}")
    return slug


def build_pair(a: str, b: str, results_dir: Path | None, given: list[tuple[str, ResultSet]] | None = None,
               prices: dict[str, Price] | None = None) -> PairAnswer:
    """X (`a`) vs Y (`b`) per workload, from the reference runs (a results tree's, and the packaged ones of
    every GPU it lacks: `runs.reference_sets`) and the user's own sets."""
    a, b = check_gpu(a), check_gpu(b)
    read = runs.reference_runs(results_dir, given or [])
    sets, floor = read.sets, read.floor
    by_gpu = runs.case_runs(sets)
    ids = {g: set(gr.cases) for g, gr in by_gpu.items()}
    figs, (ra, rb) = _figures(), (by_gpu.get(a), by_gpu.get(b))
    checks = parts.checks(by_gpu, ids, {w.metric for w in workloads()}) + _published_checks(figs, by_gpu)
    bands = {k: parts.band(checks, k) for k in sorted({c.projection.split.klass for c in checks})}
    got, why = pair_prices(a, b, prices)
    answer = PairAnswer(a, b, [], [], [], bands, got, why, {}, None, read.where)
    if ra is not None and rb is not None:
        answer.suite = suite_comparison([rb, ra], floor)
    fp8 = [lookup(g).peak("fp8") is not None for g in (a, b)]  # type: ignore[union-attr]
    for w in workloads():
        p0 = str(w.params.get("precision") or "-")
        f8 = w.ids[1] or w.ids[0]
        variants = [((p0, p0), (w.ids[0], w.ids[0]))]
        if w.fp8 and any(fp8):
            variants.append((("fp8" if fp8[0] else p0, "fp8" if fp8[1] else p0),
                             (f8 if fp8[0] else w.ids[0], f8 if fp8[1] else w.ids[0])))
        for sides, cases in variants:
            row = Row(w, sides)
            drop = _drop(row, cases, (ra, rb), (a, b))
            if drop:
                answer.omitted.append((row.title, drop))
                continue
            _fill(row, w, cases, a, b, ra, rb, figs, bands, floor)
            answer.rows.append(row)
            row.verdict = _verdict(row, got)
            answer.measured += [Measured(g, row.title, cid, [r.file for r in cr.used],
                                         [(x.run.file, x.why) for x in cr.left_out], cr.note)
                                for g, gr, cid in ((a, ra, cases[0]), (b, rb, cases[1]))
                                if gr and (cr := gr.case(cid)) and not any(m.case_id == cid and m.gpu == g
                                                                           for m in answer.measured)]
    answer.sources = _sources(answer, figs)
    return answer


def _drop(row: Row, cases: tuple[str, str], gpu_runs: tuple[Any, Any], gpus: tuple[str, str]) -> str | None:
    """Why an fp8 row is not shown: its fp8 case took none of the code paths users run (the workload's
    `fp8_paths`: llmbench's eager fp8 is its own)."""
    w, paths = row.workload, row.workload.fp8_paths
    for side, cid, gr, gpu in zip(row.sides, cases, gpu_runs, gpus, strict=True):
        cr = gr.case(cid) if gr and side == "fp8" else None
        took = {**w.params, **(w.fp8 or {}), **(cr.case.code_path if cr else {})}
        if side == "fp8" and paths and not any(all(took.get(k) == v for k, v in p.items()) for p in paths):
            users = " or ".join(", ".join(f"{k} {v}" for k, v in p.items()) for p in paths)
            return f"the fp8 case on {gpu} is on none of the paths users run ({users}): it measures llmbench's own"
    return None


def _measured_ratio(w: Workload, cases: tuple[str, str], a: str, b: str, ca: runs.CaseRuns, cb: runs.CaseRuns,
                    floor: NoiseFloor) -> Ratio | None:
    """X over Y from the runs that stand for the workload's case on each GPU, with the interval `compare`
    gives them (machines the independent units, each GPU's spread for the case family)."""
    sides = [[(m, machine_of(run.rs, f"{g}{k}")) for k, run in enumerate(c.used)
              if (m := run.case.metrics.get(w.metric)) is not None] for g, c in ((b, cb), (a, ca))]
    if not all(sides):
        return None
    (base, this) = sides
    floors = (floor.get(b, cb.used[0].case.scenario, w.metric, cb.used[0].case),
              floor.get(a, ca.used[0].case.scenario, w.metric, ca.used[0].case))
    return runs_ratio([m for m, _ in base], [m for m, _ in this], w.better, cases[0],
                      ([x for _, x in base], [x for _, x in this]), floors, (b, a))


def _fill(row: Row, w: Workload, cases: tuple[str, str], a: str, b: str, ra: runs.GpuRuns | None,
          rb: runs.GpuRuns | None, figs: list[_Fig], bands: dict[str, parts.Band], floor: NoiseFloor) -> None:
    ca, cb = (ra.case(cases[0]) if ra else None), (rb.case(cases[1]) if rb else None)
    pa, pb = (ca.metric(w.metric) if ca else None), (cb.metric(w.metric) if cb else None)
    if pa and pb and ca and cb:
        r = float(orient(pa.value, pb.value, w.better))
        got = _measured_ratio(w, cases, a, b, ca, cb, floor)
        lo, hi = got.ci if got is not None and got.ci and got.is_95 else (r, r)
        how = ("95% CI over machines and runs" if got is not None and got.ci and got.is_95 else
               f"no 95% interval: {got.note}" if got is not None and got.note else "one run a side: no interval")
        row.evidence.append(Evidence(
            "measured", "measured", r, min(lo, r), max(hi, r), how, f"{a} vs {b}", "llmbench",
            f"runs: {pa.runs} of {a}, {pb.runs} of {b}", True, picks=True))
    row.evidence += _published(w, row, a, b, figs) + _claims(w, row, a, b)
    if w.scenario:
        row.evidence += _against_llmbench(w, cases, a, b, figs, ra, rb)
        row.evidence += _projection(w, cases, a, b, ra, rb, bands, row)
    row.chosen = _choose(row.evidence)
    row.span, row.disagree, row.controlled = _span(row.evidence)
    for g, cr in ((a, ca), (b, cb)):
        if cr is None and w.scenario:
            row.notes.append(f"{g}: no ok run of this case")
        elif cr is not None and cr.note:
            row.notes.append(f"{g}: {cr.note}")


def _published_checks(figs: list[_Fig], by_gpu: dict[str, runs.GpuRuns]) -> list[parts.Check]:
    """A controlled published pair (X, Y) of a case llmbench ran on X: llmbench's X runs projected to Y
    against the same runs times the source's own Y-over-X ratio (so the check tests the projected ratio)."""
    out = []
    for fx in figs:
        cr = by_gpu[fx.slug].case(fx.case.id) if fx.slug in by_gpu else None
        for fy in (f for f in figs if cr and f.rs.suite == fx.rs.suite and f.case.id == fx.case.id and f.slug !=
                   fx.slug and f.match.grade == fx.match.grade == "controlled"):
            for m in set(fx.case.metrics) & set(fy.case.metrics):
                v = cr.value(m) if cr else None
                p = parts.project(cr.case, m, v, fx.slug, fy.slug) if cr and v else None
                if isinstance(p, parts.Projection) and p.point is not None and v:
                    out.append(parts.Check(p, v * fy.case.metrics[m].value / fx.case.metrics[m].value))
    return out


def _sources(answer: PairAnswer, figs: list[_Fig]) -> dict[str, tuple[str, str, str]]:
    shown = {e.source for r in answer.rows for e in r.evidence}
    out = {}
    for f in figs:
        if f.rs.suite in shown:
            out[f.rs.suite] = (f.rs.source.citation or "", f.rs.source.url or "",
                               f"{f.match.grade or 'ungraded'}: {f.match.grade_note or ''}")
    for c in claims():
        if c.key in shown:
            out[c.key] = (f"{c.citation}: '{c.quote}'" + (f" ({c.english})" if c.english else ""), c.url or "",
                          f"{c.grade}: {c.grade_note}")
    return out
