"""Joining result sets by case id into oriented ratios (> 1: better than the baseline) with intervals;
nothing dropped silently (docs/design.md, "Comparing, projecting, publishing")."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from llmbench.analysis.caselabels import case_labels, searched_batch
from llmbench.analysis.codepath import CodePathNote, code_path_notes, code_path_warnings
from llmbench.analysis.envdiff import env_differences
from llmbench.analysis.hostbound import measures_host
from llmbench.analysis.inputs import SetRef, machine_count
from llmbench.analysis.labels import mixing_warning
from llmbench.analysis.noisefloor import Floor, NoiseFloor, machine_of
from llmbench.analysis.pooled import (
    RUNS_CI_METHOD,
    LogRatioInterval,
    SideRuns,
    level_interval,
    own_floor,
    pool_metric,
    runs_seed,
)
from llmbench.analysis.recorded import recorded
from llmbench.analysis.runs import GpuRuns, RunLine, run_lines
from llmbench.errors import UserError
from llmbench.measure.stats import BOOTSTRAP_RESAMPLES, bootstrap_distribution
from llmbench.metrics import METRICS, SPEED_UNITS, Better
from llmbench.results import CaseResult, MetricResult, ResultSet

CONFIDENCE = 0.95
RATIO_CI_METHOD = "percentile bootstrap of the ratio of medians (each side resampled from its raw samples)"
HOST_BOUND = "host-bound"  # the geometric means' scenario name of the cells that measure the host


SINGLE_RUN_METHOD = (RATIO_CI_METHOD + "; one run per side and no noise floor measured: the spread between runs is "
                     "not in it, so it is not a 95% interval of the GPUs' ratio")
# What an interval rests on (Ratio.basis): the renderers tag each interval with it. "none": no interval can
# be given (no spread says how far another machine lands; Ratio.note says why).
BASIS_SAMPLES, BASIS_RUNS, BASIS_FLOOR, BASIS_SINGLE, BASIS_NONE = (
    "samples", "runs", "noise floor", "single run", "none")


@dataclass
class Ratio:
    """An oriented ratio (> 1: better than the baseline) and its CI; `draws` are its bootstrap replicates."""

    value: float
    ci: tuple[float, float] | None = None
    draws: np.ndarray | None = field(default=None, repr=False)
    method: str = RATIO_CI_METHOD  # how `ci` was made (RUNS_CI_METHOD where a side pools runs)
    # "runs" (a side pools runs: between-run), "noise floor" (one run a side, widened by the measured floor),
    # "single run" (one run a side, no floor: within-run only, not a 95% interval of the GPUs' ratio),
    # "samples" (within one set: a base diff, a geometric mean of such)
    basis: str = BASIS_SAMPLES
    note: str = ""  # what the interval borrowed, or why there is none
    spread: LogRatioInterval | None = field(default=None, repr=False)  # the log t-interval behind `ci`, if any
    stream: str = ""  # the case its replicates are seeded by: a case's metrics move together (one timing)

    def replicates(self) -> np.ndarray | None:
        """The ratio's replicates: the bootstrap's, else drawn from its t-interval (on demand: only a
        geometric mean needs them), seeded alike for every ratio (`LogRatioInterval.draws`)."""
        if self.draws is None and self.spread is not None:
            self.draws = self.spread.draws(runs_seed(self.stream))
        return self.draws

    @property
    def is_95(self) -> bool:
        """Whether `ci` is a 95% interval of the ratio a new pair of runs would show."""
        return self.ci is not None and self.basis not in (BASIS_SINGLE, BASIS_NONE)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci95": list(self.ci) if self.ci and self.is_95 else None,
            "interval": list(self.ci) if self.ci else None,
            "ci_method": self.method if self.ci else None,
            "basis": self.basis,
            "note": self.note or None,
        }


@dataclass
class MetricRow:
    case_id: str
    scenario: str
    case: str  # the case's label (the params that vary within its scenario)
    metric: str
    unit: str
    better: Better
    values: list[float | None]  # one per set, None where the set lacks it
    ratios: list[Ratio | None]  # one per set; None for the baseline, `neither` metrics and gaps
    ns: list[int | None] = field(default_factory=list)  # samples behind each value; None: a single reading
    runs: list[int] = field(default_factory=list)  # runs behind each value (0 where the set lacks it)
    machines: list[int | None] = field(default_factory=list)  # machines behind each value; None: not recorded
    between_run_cv: list[float | None] = field(default_factory=list)  # spread of the runs' medians; None: 1 run
    # the measured noise floor of each set's GPU for this case family (noisefloor.py); None: not measured
    floor_cv: list[float | None] = field(default_factory=list)
    measures_host: bool = False  # the cell measures the host, not the GPU (analysis/hostbound.py)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "scenario": self.scenario,
            "case": self.case,
            "metric": self.metric,
            "unit": self.unit,
            "better": self.better,
            "values": self.values,
            "n": self.ns,
            "runs": self.runs,
            "machines": self.machines,
            "between_run_cv": self.between_run_cv,
            "floor_cv": self.floor_cv,
            "measures_host": self.measures_host,
            "ratios": [r.to_dict() if r else None for r in self.ratios],
        }


@dataclass
class CaseNote:
    """A case that cannot be compared in full: absent from some sets, or not `ok` in some."""

    case_id: str
    scenario: str
    case: str
    statuses: list[str | None]  # per set; None: the set does not have this case
    reasons: list[str | None]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Geomean:
    scenario: str  # or "overall"
    metric: str  # a metric name, or "speed" for all speed metrics of the scenario
    ratios: list[Ratio | None]  # per set
    n: int  # ratioed cells that went in

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "metric": self.metric,
            "n": self.n,
            "ratios": [r.to_dict() if r else None for r in self.ratios],
        }


@dataclass
class Comparison:
    sets: list[SetRef]
    baseline: int
    rows: list[MetricRow]
    one_sided: list[CaseNote]
    not_ok: list[CaseNote]
    geomeans: list[Geomean]
    env_diffs: list[tuple[str, list[str]]]
    warning: str | None
    code_paths: list[CodePathNote] = field(default_factory=list)  # joined cases whose code paths differ

    @property
    def joined_cases(self) -> int:
        return len({r.case_id for r in self.rows})

    @property
    def coverage(self) -> str:
        """What the overall speed ratio covers: '16 cases: gemm 4, bandwidth 3, generate 9 (hf 3, vllm 6)'."""
        ids = {r.case_id: r.scenario for r in self.rows if is_speed(r) and r.better != "neither"}
        base = self.sets[self.baseline]
        parts = []
        for sc in dict.fromkeys(ids.values()):
            mine = [cid for cid, s in ids.items() if s == sc]
            engines = [e for cid in mine if (c := base.case(cid)) and (e := recorded(c).engine) is not None]
            split = ", ".join(f"{e} {engines.count(e)}" for e in dict.fromkeys(engines))
            parts.append(f"{sc} {len(mine)}" + (f" ({split})" if split else ""))
        return f"{len(ids)} case{'s' if len(ids) != 1 else ''}" + (f": {', '.join(parts)}" if parts else "")

    def runs_listed(self) -> list[RunLine]:
        """Every run of the sides chosen by the one rule: used, or left out with why."""
        return run_lines(s.chosen for s in self.sets if isinstance(s.chosen, GpuRuns))

    def code_path_warnings(self, names: list[str] | None = None) -> list[str]:
        """What a reader must know before taking a ratio as the GPUs' difference: cases that ran
        different code, and cases whose code path a side did not record (`names`: the sides' names)."""
        return code_path_warnings(self.code_paths, self.joined_cases, names or [s.label for s in self.sets])

    def to_dict(self) -> dict[str, Any]:
        return {
            "sets": [
                {
                    "name": s.name,
                    "label": s.label,
                    "suite": s.rs.suite,
                    "gpu": s.rs.gpu_slug,
                    "source": s.rs.source.model_dump(),
                    "created_at": s.rs.created_at,
                    "runs": len(s.all_runs),
                    "machines": s.machines,
                    "files": s.stems,
                }
                for s in self.sets
            ],
            "baseline": self.sets[self.baseline].name,
            "warning": self.warning,
            "env_differences": [{"key": k, "values": v} for k, v in self.env_diffs],
            "rows": [r.to_dict() for r in self.rows],
            "geomeans": [g.to_dict() for g in self.geomeans],
            "one_sided": [c.to_dict() for c in self.one_sided],
            "not_ok": [c.to_dict() for c in self.not_ok],
            "code_paths": [n.to_dict() for n in self.code_paths],
            "covers": self.coverage,
            "runs": [r.to_dict() for r in self.runs_listed()],
            "sweep_answers": [a for a in (sweep_answers(s) for s in self.sets) if a is not None],
        }


def sweep_answers(ref: SetRef) -> dict[str, Any] | None:
    """What a set's sweeps were run for, as data (the tables `compare` prints beside its ratios): per
    power-limit sweep the watts for 80/90/95% of its best speed, per batch sweep the batch from which
    the GPU bounds training; None where the set holds neither (a projected set has no power curve)."""
    from llmbench.analysis.bottleneck import sweeps
    from llmbench.analysis.power import curves

    power = [] if ref.kind == "projected" else [
        {"workload": r["workload"], "metric": r["metric"], "unit": r["unit"],
         "points_w": [list(p) for p in r["points"]],
         "watts_for": {f"{f:g}": w for f, w in r["watts_for"].items()}} for r in curves(ref.cases())]
    batch = [{"sweep": s.label, "scenario": s.scenario, "bottleneck_batch": s.batch, "rule": s.rule,
              "points": [{"batch": b, "speed": v, "gpu_busy_fraction": busy} for b, v, busy in s.points]}
             for s in sweeps(ref.cases())]
    if not power and not batch:
        return None
    return {"set": ref.name, "power": power, "bottleneck": batch}


def orient(this: Any, base: Any, better: Better) -> Any:
    """this/base for higher-better metrics, base/this for lower-better ones (scalars or arrays)."""
    if better == "higher":
        return this / base
    if better == "lower":
        return base / this
    raise ValueError("metrics whose better direction is 'neither' have no ratio")


def _ci(draws: np.ndarray) -> tuple[float, float]:
    alpha = (1.0 - CONFIDENCE) / 2.0
    lo, hi = np.quantile(draws, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def ratio(base: MetricResult, this: MetricResult, better: Better, stream: str = "") -> Ratio | None:
    """The oriented ratio of two metric values with a bootstrap CI of the ratio of medians, or no CI
    where either side has no raw samples. None where the ratio is undefined (a value <= 0).
    `stream` (case id and metric) picks the fixed seeds, so cases resample independently."""
    if better == "neither" or base.value <= 0 or this.value <= 0:
        return None
    point = float(orient(this.value, base.value, better))
    if not base.samples or not this.samples:
        return Ratio(point)
    seed = zlib.crc32(stream.encode("utf-8")) * 2
    b = bootstrap_distribution(base.samples, resamples=BOOTSTRAP_RESAMPLES, seed=seed)
    t = bootstrap_distribution(this.samples, resamples=BOOTSTRAP_RESAMPLES, seed=seed + 1)
    if (b <= 0).any() or (t <= 0).any():
        return Ratio(point)
    draws = orient(t, b, better)
    return Ratio(point, _ci(draws), draws)


def geomean(ratios: list[Ratio]) -> Ratio:
    """Geometric mean of ratios; its CI is the geomean of each bootstrap replicate, given only when
    every ratio has replicates (a partial interval would look tighter than it is)."""
    if not ratios:
        raise ValueError("geometric mean of no ratios")
    point = float(np.exp(np.mean(np.log([r.value for r in ratios]))))
    bases = {r.basis for r in ratios}
    # the weakest basis wins: one within-run-only ratio makes the whole mean's interval within-run only
    basis = next((b for b in (BASIS_NONE, BASIS_SINGLE, BASIS_SAMPLES, BASIS_FLOOR, BASIS_RUNS) if b in bases),
                 BASIS_SAMPLES)
    replicates = [r.replicates() for r in ratios]
    if any(d is None for d in replicates):
        why = next((r.note for r, d in zip(ratios, replicates, strict=True) if d is None and r.note), "")
        return Ratio(point, basis=basis, note=why)
    with np.errstate(over="ignore", divide="ignore"):
        draws = np.exp(np.mean(np.log(np.stack(replicates)), axis=0))  # type: ignore[arg-type]
    method = SINGLE_RUN_METHOD if basis == BASIS_SINGLE else ratios[0].method
    return Ratio(point, _ci(draws), draws, method, basis)


def runs_ratio(base: list[MetricResult], this: list[MetricResult], better: Better, stream: str = "",
               machines: tuple[list[str], list[str]] | None = None,
               floors: tuple[Floor | None, Floor | None] | None = None,
               names: tuple[str, str] = ("", "")) -> Ratio | None:
    """The oriented ratio of two sides' figures (the medians of their runs' medians), its interval a
    t-interval on the log ratio of the sides' machine means (pooled.level_interval). `machines`: each
    run's machine (default: every run a machine of its own); `floors`: each side's GPU spread for the case
    family (default: from the sides' own runs). No interval where no spread says how far machines land."""
    if better == "neither":
        return None
    b, t = pool_metric(base, []).value, pool_metric(this, []).value
    if b <= 0 or t <= 0:
        return None
    point = float(orient(t, b, better)) if np.isfinite(t / b) else float("nan")
    vb, vt = [m.value for m in base], [m.value for m in this]
    mb, mt = machines or ([f"run {k}" for k in range(len(vb))], [f"run {k} of the other" for k in range(len(vt))])
    fb, ft = floors if floors is not None else tuple(own_floor(vb, vt))
    answer = level_interval(SideRuns(vb, mb, fb, names[0]), SideRuns(vt, mt, ft, names[1]), better)
    if answer.interval is None:
        return Ratio(point, method=RUNS_CI_METHOD, basis=BASIS_NONE, note=answer.why)
    li = answer.interval
    lo, hi = li.bounds(CONFIDENCE)
    basis = BASIS_FLOOR if answer.why else BASIS_RUNS
    return Ratio(point, (min(lo, point), max(hi, point)), None, RUNS_CI_METHOD, basis, answer.why, li, stream)


def _all_cases(sets: list[SetRef]) -> tuple[list[str], dict[str, CaseResult]]:
    """Case ids in first-seen order, and one representative case per id (for scenario and params)."""
    order: list[str] = []
    rep: dict[str, CaseResult] = {}
    for s in sets:
        for c in s.cases():
            if c.id not in rep:
                order.append(c.id)
                rep[c.id] = c
    return order, rep


def _note(cid: str, rep: CaseResult, label: str, found: list[CaseResult | None]) -> CaseNote:
    return CaseNote(
        cid,
        rep.scenario,
        label,
        [c.status if c else None for c in found],
        [c.reason if c else None for c in found],
    )


MAX_BATCH_METRIC = "max_batch_size"  # derived from each run's info.max_batch (metrics.py describes it)
# shown wherever a case has them: memory, energy per unit, and a max_batch case's answer
HEADLINE_EXTRAS = frozenset({"peak_memory_gib", "energy_j_per_token", "energy_j_per_sample", MAX_BATCH_METRIC})


def headline_metric_names() -> set[str]:
    """Each registered scenario's headline metrics, plus peak memory and energy per unit: what a
    published comparison shows (`llmbench compare` shows every metric unless asked otherwise). A
    comparison keeps, of these, each case's own scenario's headline (`is_headline`)."""
    from llmbench.scenarios.base import SCENARIOS

    names = {m for _, cls in SCENARIOS for m in cls.headline}
    return names | HEADLINE_EXTRAS


def is_headline(scenario: str, metric: str) -> bool:
    """Whether `metric` is a headline metric of `scenario` (or one of HEADLINE_EXTRAS); any metric
    of a scenario this llmbench does not know."""
    from llmbench.scenarios.base import SCENARIOS

    if metric in HEADLINE_EXTRAS or scenario not in SCENARIOS:
        return True
    return metric in SCENARIOS.get(scenario).headline


def compare(sets: list[SetRef], baseline: int = 0, metrics: Collection[str] | None = None,
            floor: NoiseFloor | None = None) -> Comparison:
    """Join `sets` by case id and compare every other set with `sets[baseline]` (on `metrics` only,
    when given, and of those only each case's own scenario's headline ones). `floor`: the measured
    between-run spread that widens the interval of a ratio of one run per side (noisefloor.py)."""
    if len(sets) < 2:
        raise ValueError("compare needs at least two result sets")
    order, rep = _all_cases(sets)
    labels = case_labels(list(rep.values()))
    one_sided: list[CaseNote] = []
    not_ok: list[CaseNote] = []
    for cid in order:
        found = [s.case(cid) for s in sets]
        if any(c is None for c in found):
            one_sided.append(_note(cid, rep[cid], labels[cid], found))
        elif any(c.status != "ok" for c in found if c is not None):
            not_ok.append(_note(cid, rep[cid], labels[cid], found))
    rows = metric_rows(
        sets, baseline,
        lambda cid, scenario, name: metrics is None or (name in metrics and is_headline(scenario, name)),
        floor,
    )
    return Comparison(
        sets,
        baseline,
        rows,
        one_sided,
        not_ok,
        _geomeans(rows, len(sets)),
        env_differences([s.rs for s in sets]),
        mixing_warning([s.rs for s in sets]),
        code_path_notes(sets, labels),
    )


@dataclass(frozen=True)
class SuiteFigure:
    """GPUs compared over one suite's cases as every command reads it: the suite, and the comparison
    (`suite_comparison`)."""

    suite: str
    comparison: Comparison

    @property
    def overall(self) -> Geomean | None:
        return next((g for g in self.comparison.geomeans if g.scenario == "overall" and g.metric == "speed"), None)


def suite_comparison(gpus: list[GpuRuns], floor: NoiseFloor | None) -> SuiteFigure | None:
    """The GPUs (the first the baseline) over the declared cases (`runs.declared_cases`: the headline
    suite's), each GPU's chosen runs of them, joined on the cases measured with the same settings, on
    each scenario's headline metrics: the figure the pages, `compare` and `versus` print. None where the
    GPUs share no declared case."""
    from llmbench.analysis.runs import declared_cases
    from llmbench.analysis.suitejoin import plan_joins

    declared = declared_cases({g.gpu: g for g in gpus})
    if declared is None:
        return None
    suite, ids = declared
    sides = [g.only(ids).side(g.gpu) for g in gpus]
    try:
        group = plan_joins(sides).groups[0]
    except UserError:  # every shared case measured with other settings on each GPU
        return None
    return SuiteFigure(suite, compare(group, 0, headline_metric_names(), floor))


def metric_rows(
    sets: list[SetRef], baseline: int, keep: Callable[[str, str, str], bool] | None = None,
    floor: NoiseFloor | None = None,
) -> list[MetricRow]:
    """The rows of every case `ok` in every set, in first-seen case order: each side's figure over its
    ok runs (pooled where a side has several) and the ratios. `keep(case_id, scenario, metric)` picks
    the metrics (default: all); rows do not depend on one another (each is seeded by its case and
    metric), so a row is the same whichever others are kept."""
    order, rep = _all_cases(sets)
    labels = case_labels(list(rep.values()))
    rows: list[MetricRow] = []
    for cid in order:
        found = [s.case(cid) for s in sets]
        if any(c is None or c.status != "ok" for c in found):
            continue
        runs = [[c for c in s.case_runs(cid) if c.status == "ok"] for s in sets]
        rows += _metric_rows(cid, rep[cid].scenario, labels[cid], runs, baseline, sets, keep, floor)
    return rows


def sample_count(m: MetricResult | None) -> int | None:
    """How many raw samples a value is the median of (None for a single reading or no value)."""
    if m is None:
        return None
    if m.stats is not None and m.stats.n is not None:
        return m.stats.n
    return len(m.samples) if m.samples else None


def _side_ratio(
    base: list[tuple[MetricResult, str]], this: list[tuple[MetricResult, str]], better: Better, cid: str, name: str,
    floors: tuple[Floor | None, Floor | None] | None, names: tuple[str, str],
) -> Ratio | None:
    """Each side's runs of the metric, each with its machine. A single run a side with no spread measured:
    the bootstrap of the ratio of medians from the raw samples, labelled within-run only; else the runs'
    ratio (`runs_ratio`), machines its independent units. Replicates are seeded by case, so a case's
    metrics move together in a geometric mean (TPOT and decode tok/s are one timing)."""
    if not base or not this:
        return None
    unmeasured = floors is None or (floors[0] is None and floors[1] is None)
    if len(base) == 1 and len(this) == 1 and unmeasured:
        single = ratio(base[0][0], this[0][0], better, f"{cid}:{name}")
        if single is None or single.ci is None:
            return single
        return replace(single, method=SINGLE_RUN_METHOD, basis=BASIS_SINGLE)
    if floors is not None:
        floors = (floors[0] or floors[1], floors[1] or floors[0])  # one GPU: a side lacking one borrows
    return runs_ratio([m for m, _ in base], [m for m, _ in this], better, cid,
                      ([w for _, w in base], [w for _, w in this]), floors, names)


def _metric_rows(
    cid: str, scenario: str, label: str, runs: list[list[CaseResult]], baseline: int, sets: list[SetRef],
    keep: Callable[[str, str, str], bool] | None = None, floor: NoiseFloor | None = None,
) -> list[MetricRow]:
    """One row per metric of the case (those `keep` picks): each side's figure over its ok runs, and
    the ratios."""
    names: list[str] = []
    for side in runs:
        for c in side:
            names += [m for m in case_metrics(c) if m not in names]
    batches_differ = len({b for side in runs for c in side if (b := searched_batch(c)) is not None}) > 1
    rows = []
    for name in names:
        if keep is not None and not keep(cid, scenario, name):
            continue
        mdef = METRICS.get(name)
        better: Better = mdef.better if mdef else "neither"  # an unknown metric is shown, not ratioed
        if batches_differ and mdef is not None and mdef.per_batch:
            better = "neither"  # a step at 25 samples against one at 64: shown, not ratioed
        if len({m[name].version for side in runs for c in side if name in (m := case_metrics(c))}) > 1:
            better = "neither"  # two definitions of the metric (MetricDef.version): shown, not ratioed
        # each side's ok runs of the metric, with the machine of each
        on = [[(m[name], machine_of(r, f"{i}:{k}")) for k, (r, c) in enumerate(sets[i].case_sets(cid))
               if c.status == "ok" and name in (m := case_metrics(c))] for i in range(len(sets))]
        got = [[m for m, _ in side] for side in on]
        pooled = [pool_metric(ms, [sample_count(m) for m in ms]) if ms else None for ms in got]
        unit = next(ms[0].unit for ms in got if ms)
        host = bool(runs[baseline]) and measures_host(runs[baseline][0], name)
        floors = [floor.get(s.rs.gpu_slug, scenario, name, side[0] if side else None) if floor else None
                  for s, side in zip(sets, runs, strict=True)]  # each side's GPU, host-bound cells apart
        ratios = [
            None if i == baseline else _side_ratio(
                on[baseline], on[i], better, cid, name,
                (floors[baseline], floors[i]) if floor is not None else None, (sets[baseline].label, sets[i].label))
            for i in range(len(sets))
        ]
        machines = [None if not ms else machine_count(runs_with(sets[i], cid, name)) for i, ms in enumerate(got)]
        rows.append(MetricRow(
            cid, scenario, label, name, unit, better,
            [p.value if p else None for p in pooled], ratios, [p.n if p else None for p in pooled],
            [p.runs if p else 0 for p in pooled], machines,
            [p.between_run_cv if p else None for p in pooled],
            [f.cv if f is not None and ms else None for f, ms in zip(floors, got, strict=True)], host,
        ))
    return rows


def case_metrics(c: CaseResult) -> dict[str, MetricResult]:
    """A case's metrics as a comparison sees them: a max_batch case's answer (its info.max_batch) first,
    as `max_batch_size`, then what it measured."""
    found = searched_batch(c)
    if found is None:
        return c.metrics
    return {MAX_BATCH_METRIC: MetricResult(value=found, unit=METRICS[MAX_BATCH_METRIC].unit), **c.metrics}


def runs_with(side: SetRef, cid: str, name: str) -> list[ResultSet]:
    """The runs of a side in which case `cid` is ok and has metric `name`."""
    return [r for r, c in side.case_sets(cid) if c.status == "ok" and name in case_metrics(c)]


def _family(metric_name: str) -> str:
    mdef = METRICS.get(metric_name)
    return mdef.family_name if mdef else metric_name


def _speed_geomean(members: list[MetricRow], i: int) -> tuple[Ratio | None, int]:
    """The geomean over speed metrics for set `i`, each measurement counted once: the ratios of one
    case's metrics of one family (TPOT and decode tok/s, reciprocals of one timing) are first
    averaged (geomean) into one cell. Returns it and the number of (case, family) cells."""
    cells: dict[tuple[str, str], list[Ratio]] = {}
    for r in members:
        got = r.ratios[i]
        if got is not None:
            cells.setdefault((r.case_id, _family(r.metric)), []).append(got)
    if not cells:
        return None, 0
    return geomean([rs[0] if len(rs) == 1 else geomean(rs) for rs in cells.values()]), len(cells)


def is_speed(r: MetricRow) -> bool:
    """Whether a row goes into a speed geomean: a headline speed metric of its case's scenario."""
    return r.unit in SPEED_UNITS and is_headline(r.scenario, r.metric)


def case_speed_ratios(cmp: Comparison, i: int) -> dict[str, Ratio]:
    """Each joined case's speed ratio for side `i`: the geometric mean of its speed metrics, each metric
    family once (as the scenario's speed geomean counts it), over the metrics that time the GPU where the
    case has any (as the overall mean takes them: a host-bound TTFT beside a decode rate would pull the
    case's figure away from the summary line's), else over its host-bound ones."""
    gpu: dict[str, list[MetricRow]] = {}
    host: dict[str, list[MetricRow]] = {}
    for r in cmp.rows:
        if r.better != "neither" and is_speed(r):
            (host if r.measures_host else gpu).setdefault(r.case_id, []).append(r)
    by_case = {**{cid: rows for cid, rows in host.items() if cid not in gpu}, **gpu}
    return {cid: got for cid, members in by_case.items() if (got := _speed_geomean(members, i)[0]) is not None}


def _geomeans(rows: list[MetricRow], nsets: int) -> list[Geomean]:
    """Per scenario and metric, per scenario over its speed metrics, and overall over speed metrics;
    a speed geomean counts each metric family (metrics.py) once per case, over each scenario's headline
    speed metrics (`is_headline`): the figure is the same whether a comparison keeps every metric or
    the headline ones (the pages, `--headline`)."""
    groups: dict[tuple[str, str], list[MetricRow]] = {}
    for r in rows:
        if r.better == "neither":
            continue
        speed = is_speed(r)
        if r.measures_host:  # measures the host: a mean of its own, never in a GPU's
            groups.setdefault((HOST_BOUND, r.metric), []).append(r)
            if speed:
                groups.setdefault((HOST_BOUND, "speed"), []).append(r)
            continue
        groups.setdefault((r.scenario, r.metric), []).append(r)
        if speed:
            groups.setdefault((r.scenario, "speed"), []).append(r)
            groups.setdefault(("overall", "speed"), []).append(r)
    out = []
    for (scenario, metric), members in groups.items():
        per_set: list[Ratio | None] = []
        n = 0
        for i in range(nsets):
            if metric == "speed":
                g, cells = _speed_geomean(members, i)
            else:
                rs = [r.ratios[i] for r in members if r.ratios[i] is not None]
                g, cells = (geomean(rs) if rs else None), len(rs)  # type: ignore[arg-type]
            per_set.append(g)
            n = max(n, cells)
        if n:
            out.append(Geomean(scenario, metric, per_set, n))
    out.sort(key=lambda g: (g.scenario == "overall", g.scenario == HOST_BOUND, g.scenario, g.metric != "speed",
                            g.metric))
    return out
