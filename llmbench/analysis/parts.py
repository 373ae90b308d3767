"""Projecting a case to another GPU by the parts of its step (roofline bound, GPU rest, host time), each
scaled by its own ratio, and which classes of case a measured GPU pair validates. docs/design.md,
"Comparing, projecting, publishing" (`analysis/parts.py`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from llmbench.analysis.recorded import recorded
from llmbench.analysis.runs import GpuRuns
from llmbench.caseinfo import StepInfo
from llmbench.hardware.specs import GpuSpec, lookup
from llmbench.metrics import DECODE_RATE, METRICS, PREFILL_RATE, TRAIN_STEP_RATE
from llmbench.results import CaseResult

CLASS_SHARE = 0.6  # the part holding this share of a case's time names its class; none does: "mixed"
MOVES = 0.05  # a pair of GPUs moves a part when that part's ratio differs from 1 by more than this
CLASSES = {"memory": "memory-bound", "compute": "compute-bound", "host": "host-bound"}
NEEDS = {"memory-bound": ("memory",), "compute-bound": ("compute",), "mixed": ("memory", "compute")}
ROOF_UNITS = {"TFLOP/s": "compute", "TB/s": "memory"}  # rates of the bound resource itself


@dataclass(frozen=True)
class Split:
    """Shares of a case's time per part (memory: its bandwidth roof, compute: its peak roof, gpu: busy below the
    roof, host, rest: not split)."""

    shares: dict[str, float]
    bound: str  # the roof the case is bound by: memory or compute
    bandwidth_at: float | None = None  # TB/s the bandwidth part was taken at (a measured ceiling); None: the spec

    @property
    def klass(self) -> str:
        return next((c for k, c in CLASSES.items() if self.shares.get(k, 0.0) >= CLASS_SHARE), "mixed")

    def text(self) -> str:
        return ", ".join(f"{k} {v:.0%}" for k, v in self.shares.items() if v >= 0.005)


def _of(shares: dict[str, float], bound: str, bandwidth_at: float | None = None) -> Split:
    total = sum(shares.values())
    return Split({k: v / total for k, v in shares.items() if v > 0}, bound, bandwidth_at)


def split(case: CaseResult, metric: str, src: GpuSpec) -> Split | None:
    """The parts of the time behind `metric`, from what the case recorded; None where it recorded nothing
    that splits it."""
    info, m = StepInfo.of(case.info), case.metrics
    family, unit = METRICS[metric].family, METRICS[metric].unit
    read = recorded(case)
    bound = "memory" if read.bound(metric, src) == "memory" else "compute"
    if family == DECODE_RATE and "tpot_ms" in m and info.decode_step_bound_ms:
        step = m["tpot_ms"].value
        kind = "compute" if info.decode_bound_by == "compute" else "memory"
        roof = min(info.decode_step_bound_ms, step)
        if info.gpu_busy_ms_per_step is None:
            return _of({kind: roof, "rest": step - roof}, kind, info.bandwidth_tb_s)
        busy = min(max(info.gpu_busy_ms_per_step, roof), step)
        return _of({kind: roof, "gpu": busy - roof, "host": step - busy}, kind, info.bandwidth_tb_s)
    if family == PREFILL_RATE and "ttft_ms" in m and info.prefill_bound_ms:
        roof = min(info.prefill_bound_ms, m["ttft_ms"].value)
        return _of({bound: roof, "rest": m["ttft_ms"].value - roof}, bound)
    if family == TRAIN_STEP_RATE:
        mfu = min(max(m["mfu"].value, 0.0), 1.0) if "mfu" in m else 0.0
        return _of({"compute": mfu, "rest": 1.0 - mfu}, "compute")
    if ROOF_UNITS.get(unit) == bound:
        peak = src.peak(read.compute_precision()) if bound == "compute" and read.scenario else src.bandwidth_tb_s
        share = min(m[metric].value / peak, 1.0) if peak else 1.0
        return _of({bound: share, "gpu": 1.0 - share}, bound)
    return None


@dataclass(frozen=True)
class Scales:
    """Time multipliers from one GPU to another (> 1: slower there) of the bandwidth and compute parts."""

    src: str
    dst: str
    bandwidth: float  # the datasheet bandwidth ratio
    compute: float | None  # the dense peak ratio of the case's precision; None: the target has no such math
    dst_bandwidth: float  # the target's datasheet bandwidth, TB/s

    def parts(self, sp: Split) -> dict[str, tuple[float, float | None, float]]:
        """(lowest, point, highest) multiplier per part, each within its own physical range: the memory part
        by the bandwidth ratio (between the datasheet's and the one at the measured copy bandwidth the case
        was split at), the compute part by the peak ratio, GPU time below the roof between 1 (latency-bound
        work that no ratio moves: the spec table holds no clocks, and the Hopper parts share theirs) and the
        peak ratio, host time as measured, the unsplit rest from host to either ratio."""
        b = self.bandwidth
        c = self.compute if self.compute is not None else b
        at = (sp.bandwidth_at or self.bandwidth * self.dst_bandwidth) / self.dst_bandwidth
        return {"memory": (min(b, at), b, max(b, at)), "compute": (c, c, c),
                "gpu": (min(1.0, c), b if sp.bound == "memory" else c, max(1.0, c)), "host": (1.0, 1.0, 1.0),
                "rest": (min(1.0, b, c), None, max(1.0, b, c))}

    def moves(self, klass: str) -> bool:
        moved = {"memory": abs(self.bandwidth - 1) > MOVES,
                 "compute": self.compute is not None and abs(self.compute - 1) > MOVES}
        return klass in NEEDS and all(moved[k] for k in NEEDS[klass])


def scales(case: CaseResult, src: GpuSpec, dst: GpuSpec) -> Scales:
    prec = recorded(case).compute_precision()
    p_src, p_dst = src.peak(prec), dst.peak(prec)
    compute = p_src / p_dst if p_src and p_dst else None
    return Scales(src.slug, dst.slug, src.bandwidth_tb_s / dst.bandwidth_tb_s, compute, dst.bandwidth_tb_s)


@dataclass(frozen=True)
class Projection:
    """A measured figure projected to another GPU: the multiplier of its time (lowest, point, highest)."""

    case_id: str
    metric: str
    value: float  # measured on the source
    split: Split
    scales: Scales
    low: float
    point: float | None  # None: part of the time is not split (no point estimate)
    high: float

    def values(self) -> tuple[float, float | None, float]:
        """The figure on the target: slowest, point, fastest in the metric's own terms."""
        def at(x: float) -> float:
            return self.value / x if METRICS[self.metric].better == "higher" else self.value * x
        return at(self.high), None if self.point is None else at(self.point), at(self.low)


def project(case: CaseResult, metric: str, value: float, src: str, dst: str) -> Projection | str:
    """`value` (the runs' figure of `case` on `src`) projected to `dst`, or why it cannot be."""
    s, d = lookup(src), lookup(dst)
    if s is None or d is None:
        return f"{src if s is None else dst} is not in the spec table"
    sp = split(case, metric, s)
    if sp is None:
        return f"the case recorded nothing that splits {metric} into parts"
    sc = scales(case, s, d)
    if sc.compute is None and any(k not in ("memory", "host") for k in sp.shares):
        return f"{dst} has no math of the case's precision"
    ranges = sc.parts(sp)
    mix = [(share, *ranges[kind]) for kind, share in sp.shares.items()]
    point = None if any(pt is None for _, _, pt, _ in mix) else sum(s_ * (pt or 0.0) for s_, _, pt, _ in mix)
    return Projection(case.id, metric, value, sp, sc, sum(s_ * lo for s_, lo, _, _ in mix), point,
                      sum(s_ * hi for s_, _, _, hi in mix))


@dataclass(frozen=True)
class Check:
    """A case measured on two GPUs: the one's figure projected to the other against its measurement."""

    projection: Projection
    measured: float

    @property
    def error(self) -> float:
        """Of the projected speed (> 0: the projection put the target too fast)."""
        _, point, _ = self.projection.values()
        assert point is not None
        return (point / self.measured if METRICS[self.projection.metric].better == "higher"
                else self.measured / point) - 1.0


def checks(runs: dict[str, GpuRuns], ids: dict[str, set[str]], metrics: Iterable[str]) -> list[Check]:
    """Every case that two measured GPUs both ran (`ids`: each GPU's case ids), projected each way."""
    out = []
    gpus = sorted(g for g in runs if lookup(g) is not None)
    for src in gpus:
        for dst in (g for g in gpus if g != src):
            for cid in sorted(ids.get(src, set()) & ids.get(dst, set())):
                a, b = runs[src].case(cid), runs[dst].case(cid)
                for metric in metrics:
                    va, vb = (a.value(metric), b.value(metric)) if a and b else (None, None)
                    p = project(a.case, metric, va, src, dst) if a and va and vb else None
                    if isinstance(p, Projection) and p.point is not None and vb:
                        out.append(Check(p, vb))
    return out


@dataclass(frozen=True)
class Band:
    """A class's validation: the checks on pairs that move its parts, and the range of their errors."""

    klass: str
    checks: tuple[Check, ...]  # those on pairs that move the class's parts
    seen: int = 0  # checks of the class on any pair

    @property
    def errors(self) -> tuple[float, float] | None:
        e = [c.error for c in self.checks]
        return (min(0.0, *e), max(0.0, *e)) if e else None


def band(all_checks: list[Check], klass: str) -> Band:
    mine = [c for c in all_checks if c.projection.split.klass == klass]
    return Band(klass, tuple(c for c in mine if c.projection.scales.moves(klass)), len(mine))
