"""Projecting a measured result set to another GPU of the spec table, by roofline decomposition: the bound
share of a case's time (its `roofline_efficiency` e, else all of it) scales with the spec ratio, the
rest stays: time' = time * (e * ratio + 1 - e). The bound is the scenario's to say (its `reading`:
scenarios/reading.py); a projection is never a measurement (`source.kind = "projected"`), and `validate`
measures how wrong it was. docs/design.md, "Comparing, projecting, publishing"."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean, median
from typing import Any

from llmbench.analysis.labels import is_measured
from llmbench.analysis.recorded import recorded
from llmbench.errors import UserError, choices_hint
from llmbench.hardware.roofline import Bound
from llmbench.hardware.specs import GpuSpec, lookup, match_name, slugs
from llmbench.results import CaseResult, MetricResult, ResultSet, Source, utc_now

PROJECTED_FLAG = "projected"

TIME_UNITS = frozenset({"ms", "s"})
RATE_UNITS = frozenset({"tok/s", "req/s", "samples/s", "TFLOP/s", "TB/s", "GB/s"})
EFFICIENCIES = frozenset({"roofline_efficiency", "mfu"})  # achieved / bound: value * ratio / time factor
# Properties of the model and its numerics, not of the GPU's speed: carried over unchanged.
INVARIANT = frozenset(
    {
        "peak_memory_gib",
        "peak_reserved_gib",
        "device_memory_used_gib",
        "logits_rel_error",
        "kl_divergence",
        "top1_agreement",
        "rel_error_vs_fp32",
        "train_loss",
    }
)
NOT_SCALED = frozenset({"compile_s"})  # one-off costs: not a roofline quantity
def spec_or_error(slug: str) -> GpuSpec:
    spec = lookup(slug)
    if spec is None:
        raise UserError(f"unknown GPU slug {slug!r}; {choices_hint(slug, slugs())}")
    return spec


def source_spec(rs: ResultSet) -> GpuSpec:
    gpu = rs.env.get("gpu", {})
    spec = lookup(rs.gpu_slug) or match_name(str(gpu.get("name", "")), gpu.get("memory_gib"))
    if spec is None:
        raise UserError(
            f"the result set's GPU {rs.gpu_slug!r} is not in the spec table; {choices_hint(rs.gpu_slug, slugs())}"
        )
    return spec


@dataclass(frozen=True)
class Scales:
    """Time multipliers of the bound parts (< 1: the target is faster) and the bound share e, which
    applies to `efficiency_bound`'s metrics (None: to every metric)."""

    memory: float
    compute: float | None  # None: the target has no math for the case's precision
    efficiency: float
    efficiency_bound: Bound | None = None

    def share(self, bound: Bound) -> float:
        return self.efficiency if self.efficiency_bound in (None, bound) else 1.0

    def time_factor(self, bound: Bound) -> float:
        s = self.memory if bound == "memory" else self.compute
        assert s is not None
        e = self.share(bound)
        return e * s + (1.0 - e)


def _scales(case: CaseResult, src: GpuSpec, dst: GpuSpec) -> tuple[Scales, str]:
    compute_prec = recorded(case).compute_precision()
    p_src, p_dst = src.peak(compute_prec), dst.peak(compute_prec)
    eff_metric = case.metrics.get("roofline_efficiency")
    eff = min(max(eff_metric.value, 0.0), 1.0) if eff_metric else 1.0
    eff_bound = _bound(case, "roofline_efficiency", src) if eff_metric else None
    compute = p_src / p_dst if p_src and p_dst else None
    return Scales(src.bandwidth_tb_s / dst.bandwidth_tb_s, compute, eff, eff_bound), compute_prec


def _bound(case: CaseResult, metric: str, src: GpuSpec) -> Bound | None:
    return recorded(case).bound(metric, src)


def _project_metric(name: str, m: MetricResult, bound: Bound, sc: Scales) -> float | None:
    tf = sc.time_factor(bound)
    if name in EFFICIENCIES:
        s = sc.memory if bound == "memory" else sc.compute
        return m.value * s / tf  # type: ignore[operator]
    if m.unit in TIME_UNITS:
        return m.value * tf
    if m.unit in RATE_UNITS:
        return m.value / tf
    return None


MEMORY_NEEDED = ("peak_reserved_gib", "peak_memory_gib")  # what must fit on the target, first found


def memory_reason(case: CaseResult, src: GpuSpec, dst: GpuSpec) -> str | None:
    """Why the case would not fit on `dst`: the memory it held on `src` exceeds `dst`'s (None: it fits,
    or the case recorded no peak)."""
    name = next((n for n in MEMORY_NEEDED if n in case.metrics), None)
    if name is None or case.metrics[name].value <= dst.memory_gib:
        return None
    return (f"needs {case.metrics[name].value:.1f} GiB ({name} on {src.slug}) and {dst.slug} has "
            f"{dst.memory_gib:g} GiB")


def _projected(value: float, m: MetricResult) -> MetricResult:
    return MetricResult(value=value, unit=m.unit, flags=[PROJECTED_FLAG])


def project_case(case: CaseResult, src: GpuSpec, dst: GpuSpec) -> CaseResult:
    """The case as it would run on `dst`; metrics the model cannot scale are dropped and listed."""
    base: dict[str, Any] = {"id": case.id, "scenario": case.scenario, "params": case.params, "engine": case.engine,
                            "placement": case.placement}
    if case.status != "ok":
        reason = f"not projected: {case.status} on {src.slug}" + (f" ({case.reason})" if case.reason else "")
        return CaseResult(**base, status="skipped", reason=reason)
    read = recorded(case)
    why = read.projection_skip() or memory_reason(case, src, dst)
    if why:
        return CaseResult(**base, status="skipped", reason=f"projection: {why}")
    sc, prec = _scales(case, src, dst)
    if sc.compute is None and "precision" in case.params:
        return CaseResult(
            **base, status="skipped", reason=f"projection: {dst.slug} has no {prec} math in the spec table"
        )
    metrics: dict[str, MetricResult] = {}
    if sc.compute is not None:
        for name, composite in read.projected_composites(case.metrics, sc.time_factor).items():
            metrics[name] = _projected(composite, case.metrics[name])
    skipped: list[str] = []
    for name, m in case.metrics.items():
        if name in metrics:
            continue
        bound = _bound(case, name, src)
        if name in INVARIANT:
            metrics[name] = _projected(m.value, m)
            continue
        if bound is None or name in NOT_SCALED or (bound == "compute" and sc.compute is None):
            skipped.append(name)
            continue
        value = _project_metric(name, m, bound, sc)
        if value is None:
            skipped.append(name)
        else:
            metrics[name] = _projected(value, m)
    info = {
        "projection": {
            "from": src.slug,
            "to": dst.slug,
            "memory_time_scale": sc.memory,
            "compute_time_scale": sc.compute,
            "compute_precision": prec,
            "bound_share": sc.efficiency,
            "bound_share_of": sc.efficiency_bound or "all",
            "not_projected": skipped,
        }
    }
    return CaseResult(**base, status="ok", metrics=metrics, info=info)


def achieved_share(slug: str, case: CaseResult) -> float | None:
    """The case's share of its roofline: its own `roofline_efficiency`, else its headline TFLOP/s over
    the GPU's datasheet peak for its precision, or its device-copy TB/s over the datasheet bandwidth."""
    if "roofline_efficiency" in case.metrics:
        return case.metrics["roofline_efficiency"].value
    spec = lookup(slug)
    if spec is None:
        return None
    if "tb_per_s" in case.metrics:
        return case.metrics["tb_per_s"].value / spec.bandwidth_tb_s
    if "tflops" in case.metrics and (read := recorded(case)).scenario is not None:
        peak = spec.peak(read.compute_precision())
        return case.metrics["tflops"].value / peak if peak else None
    return None


def project(rs: ResultSet, to_slug: str) -> ResultSet:
    """Project a measured result set to the GPU `to_slug` (a slug of the spec table)."""
    if not is_measured(rs):
        raise UserError(f"only measured result sets can be projected; this one is {rs.source.kind}")
    dst = spec_or_error(to_slug)
    src = source_spec(rs)
    note = (
        f"projected from {src.slug} (measured {rs.created_at}) to {dst.slug} by roofline scaling: "
        f"memory-bound parts x{src.bandwidth_tb_s:g}/{dst.bandwidth_tb_s:g} TB/s, compute-bound parts by "
        "the dense peak TFLOP/s ratio of the case's precision (spec sheets); an estimate, not a measurement"
    )
    gpu = rs.env.get("gpu", {})
    env = {
        "gpu": {
            "name": dst.name,
            "slug": dst.slug,
            "count": gpu.get("count", 1),
            "compute_capability": f"{dst.cc[0]}.{dst.cc[1]}",
            "memory_gib": dst.memory_gib,
        },
        "projected_from": {k: rs.env[k] for k in ("gpu", "cuda", "packages", "cpu") if k in rs.env},
    }
    return ResultSet(
        suite=rs.suite,
        description=rs.description,
        created_at=utc_now(),
        llmbench=rs.llmbench,
        env=env,
        source=Source(kind="projected", note=note),
        warnings=[f"projected figures ({src.slug} -> {dst.slug}), not measured"],
        cases=[project_case(c, src, dst) for c in rs.cases],
    )


@dataclass
class ErrorRow:
    scenario: str
    metric: str
    n: int
    median_abs_pct: float
    mean_pct: float  # signed: > 0 the projection was too high
    max_abs_pct: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Validation:
    rows: list[ErrorRow]
    per_case: list[dict[str, Any]]  # case id, scenario, metric, projected, measured, error_pct
    unmatched: list[str]  # projected case ids with no ok measured counterpart (or vice versa)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [r.to_dict() for r in self.rows],
            "per_case": self.per_case,
            "unmatched": self.unmatched,
        }


REFERENCE_KINDS = ("measured", "published")


def validate(projected: ResultSet, measured: ResultSet) -> Validation:
    """Error % of each projected figure against the target GPU's figure of the same case, per scenario
    and metric: a measurement, or a published figure (whose case says how well it matches, in
    `info.match`), which makes the error include the source's other software and settings."""
    if projected.source.kind != "projected" or measured.source.kind not in REFERENCE_KINDS:
        raise UserError("validate needs a projected result set and a measured or published one")
    per_case: list[dict[str, Any]] = []
    unmatched: list[str] = []
    for p in projected.cases:
        m = measured.case(p.id)
        if m is None or p.status != "ok" or m.status != "ok":
            unmatched.append(p.id)
            continue
        for name, pm in p.metrics.items():
            mm = m.metrics.get(name)
            if mm is None or mm.value == 0 or name in INVARIANT:
                continue
            per_case.append(
                {
                    "case_id": p.id,
                    "scenario": p.scenario,
                    "metric": name,
                    "projected": pm.value,
                    "measured": mm.value,
                    "error_pct": (pm.value / mm.value - 1.0) * 100.0,
                }
            )
    unmatched += [c.id for c in measured.cases if projected.case(c.id) is None]
    groups: dict[tuple[str, str], list[float]] = {}
    for row in per_case:
        groups.setdefault((row["scenario"], row["metric"]), []).append(row["error_pct"])
    rows = [
        ErrorRow(sc, met, len(e), median(abs(x) for x in e), mean(e), max(abs(x) for x in e))
        for (sc, met), e in sorted(groups.items())
    ]
    return Validation(rows, per_case, unmatched)
