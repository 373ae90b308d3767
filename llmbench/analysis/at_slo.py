"""Tokens per GPU and dollars per million output tokens at an SLO: what a capacity case (a search's answer,
`capacity_concurrency` or `capacity_rate`) says a GPU delivers within the SLO's limits, and what that costs
at its hourly price; one row per SLO, precision, engine and workload, a cell per GPU ("not known" where a
GPU has no capacity case for the row). `compare` and the published pages show it ("At the SLO").

The tokens/s at the capacity: each refinement of the search ends at its highest load that met the SLO
(its estimate of the boundary); that point's output tokens/s per GPU is the refinement's figure. The
figure shown is their median and its interval the median's order-statistic interval over them, with the
coverage it achieves (3 refinements: [min, max] at 75%), as the capacity's own. Where the case records no
curve (`info.capacity.points`) or one refinement only, it is the case's `output_tokens_per_s_per_gpu`, the
figure of the highest point that met the SLO, with no interval. $/Mtok = USD per GPU-hour /
(tok/s per GPU x 3600) x 1e6; its interval is the tokens' interval mapped through it."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from llmbench.analysis.cost import cost_per
from llmbench.analysis.prices import Price
from llmbench.analysis.recorded import recorded
from llmbench.analysis.runs import case_runs
from llmbench.caseinfo import CapacitySearch, RequestRateInfo
from llmbench.measure.stats import median_ci
from llmbench.results import CaseResult, ResultSet
from llmbench.serving.search import client_late

CAPACITY_METRICS = ("capacity_concurrency", "capacity_rate")
TOKENS = "output_tokens_per_s"
TOKENS_PER_GPU = "output_tokens_per_s_per_gpu"
PER_MTOK = 1e6
BASIS_REFINEMENTS = "median of the refinements' boundary points"
BASIS_HIGHEST = "the highest point that met the SLO"
BASIS_NONE_MET = "no load met the SLO"
PRICE_GIVEN = "your price"
PRICE_LISTED = "list price shipped with llmbench"

@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float
    level: float  # the coverage it achieves
    method: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SloKey:
    """What a row is of: the SLO (its preset or limits text, and the limits in ms), the precision the server
    ran, its engine, the load (`workload`: model and token lengths), the searched axis and the GPUs per case."""

    slo: str
    limits_ms: tuple[tuple[str, float], ...]
    precision: str
    engine: str
    workload: str
    axis: str
    gpus_per_case: int

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "limits_ms": dict(self.limits_ms)}


@dataclass(frozen=True)
class SloCell:
    """One GPU's figures for one row, from the newest capacity case of the row on that GPU."""

    gpu: str
    file: str  # the result set it came from
    runs: int  # runs of the row on this GPU (the newest is shown)
    capacity: float
    capacity_interval: Interval | None
    bound: str | None  # the search's sentence where its answer is a bound, not a boundary
    tokens_per_s_per_gpu: float | None  # None: no load met the SLO
    interval: Interval | None
    basis: str  # how the figure was made (BASIS_*)
    refinements: int  # the refinements behind it (0: the highest met point's figure)
    highest_met: tuple[float, float] | None  # (load, tok/s per GPU) of the highest point that met the SLO
    price: Price | None = None
    price_from: str = ""  # PRICE_GIVEN or PRICE_LISTED ("" without a price)
    usd_per_mtok: float | None = None
    usd_interval: tuple[float, float] | None = None  # the tokens' interval mapped through the price
    capacity_unit: str = ""  # the capacity metric's unit (requests, req/s)
    client_late: str | None = None  # the client flagged itself near the boundary (serving.search.client_late)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu, "file": self.file, "runs": self.runs,
            "capacity": self.capacity, "capacity_unit": self.capacity_unit,
            "capacity_interval": self.capacity_interval.to_dict() if self.capacity_interval else None,
            "bound": self.bound, "client_late": self.client_late,
            "output_tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "interval": self.interval.to_dict() if self.interval else None,
            "basis": self.basis, "refinements": self.refinements,
            "highest_met_point": {"load": self.highest_met[0], "output_tokens_per_s_per_gpu": self.highest_met[1]}
            if self.highest_met else None,
            "usd_per_gpu_hour": self.price.usd_per_hour if self.price else None,
            "price_from": f"{self.price_from}: {self.price.origin()}" if self.price else None,
            "usd_per_mtok": self.usd_per_mtok,
            "usd_per_mtok_interval": {"lo": self.usd_interval[0], "hi": self.usd_interval[1],
                                      "level": self.interval.level} if self.usd_interval and self.interval else None,
        }


@dataclass
class SloRow:
    key: SloKey
    cells: list[SloCell | None]  # per GPU of the answer; None: not known (no capacity case of the row there)


@dataclass
class SloAnswer:
    gpus: list[str]
    rows: list[SloRow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of "At the SLO": per row its key and a cell per GPU (null: not known)."""
        return {"gpus": self.gpus,
                "rows": [{**r.key.to_dict(), "gpus": {g: c.to_dict() if c else None
                                                      for g, c in zip(self.gpus, r.cells, strict=True)}}
                         for r in self.rows]}


def is_capacity_case(case: CaseResult) -> bool:
    return case.status == "ok" and any(m in case.metrics for m in CAPACITY_METRICS)


def slo_answer(sets: Iterable[tuple[str, ResultSet]], gpus: Sequence[str] = (),
               given: dict[str, Price] | None = None, listed: dict[str, Price] | None = None) -> SloAnswer | None:
    """The rows of every capacity case among the measured sets (name, set), each case's runs chosen by the
    one rule; the columns `gpus` in order (a GPU with a capacity case not among them after them). Prices:
    `given` (the user's) before `listed` (the shipped list prices). None where no set holds a capacity case."""
    found: dict[SloKey, dict[str, list[tuple[str, CaseResult]]]] = {}
    for gpu, runs in case_runs(sets).items():
        for cr in runs.cases.values():
            if not is_capacity_case(cr.case):
                continue
            for run in cr.used:
                found.setdefault(row_key(run.case), {}).setdefault(gpu, []).append((run.file, run.case))
    if not found:
        return None
    order = list(dict.fromkeys([*gpus, *(g for by in found.values() for g in by)]))
    answer = SloAnswer(order)
    for key in sorted(found, key=lambda k: (k.slo, k.precision, k.workload, k.engine, k.axis, k.gpus_per_case)):
        cells: list[SloCell | None] = []
        for gpu in order:
            got = found[key].get(gpu)
            if not got:
                cells.append(None)
                continue
            file, case = max(got, key=lambda fc: (fc[1].started_at or "", fc[0]))
            cells.append(_priced(slo_cell(gpu, file, case, len(got)), (given or {}).get(gpu), (listed or {}).get(gpu)))
        answer.rows.append(SloRow(key, cells))
    return answer


def row_key(case: CaseResult) -> SloKey:
    """The row of a capacity case: what its scenario declares it searched under and with
    (`Reading.capacity_load`), else what its search recorded (a scenario this llmbench does not know)."""
    cap = _capacity_info(case)
    load = recorded(case).capacity_load()
    axis = load.axis if load else cap.axis or next(m for m in CAPACITY_METRICS if m in case.metrics)[9:]
    return SloKey(load.slo if load else cap.slo or "-", tuple(cap.limits.items()),
                  str(case.params.get("precision") or "not recorded"), engine_of(case),
                  load.workload if load else "-", axis, _gpus(case))


def engine_of(case: CaseResult) -> str:
    """The engine a case ran on (`Recorded.engine`: a `url` param is the `url` engine, a server already
    running, named by what its model card said where it said it: `url vllm`); '-' where none is recorded."""
    name = recorded(case).engine or "-"
    owner = RequestRateInfo.of(case.info).served_by
    return f"{name} {owner}" if name == "url" and owner else name


def slo_cell(gpu: str, file: str, case: CaseResult, runs: int = 1) -> SloCell:
    """One capacity case's figures (module docstring), unpriced."""
    name = next(m for m in CAPACITY_METRICS if m in case.metrics)
    cap_metric = case.metrics[name]
    ci = cap_metric.stats.ci if cap_metric.stats is not None else None
    cap_interval = Interval(ci.lo, ci.hi, ci.level, cap_metric.stats.ci_method or ci.method) \
        if ci is not None and cap_metric.stats is not None else None
    cap = _capacity_info(case)
    bound = cap.bound
    late = client_late(cap.points)
    n = _gpus(case)
    met_load = cap.metrics_at
    per_gpu = case.metrics.get(TOKENS_PER_GPU)
    whole = case.metrics.get(TOKENS)
    highest = per_gpu.value if per_gpu else whole.value / n if whole else None
    highest_met = (float(met_load), highest) if met_load is not None and highest is not None else None
    if met_load is None and cap_metric.value <= 0:
        return SloCell(gpu, file, runs, cap_metric.value, cap_interval, bound, None, None, BASIS_NONE_MET, 0, None,
                       capacity_unit=cap_metric.unit, client_late=late)
    boundary = refinement_figures(cap, n)
    if boundary is not None and len(boundary) >= 2:
        got = median_ci(boundary)
        interval = Interval(float(got["lo"]), float(got["hi"]), float(got["level"]),  # type: ignore[arg-type]
                            "order statistic over the refinements' boundary points")
        return SloCell(gpu, file, runs, cap_metric.value, cap_interval, bound, float(statistics.median(boundary)),
                       interval, BASIS_REFINEMENTS, len(boundary), highest_met, capacity_unit=cap_metric.unit,
                       client_late=late)
    return SloCell(gpu, file, runs, cap_metric.value, cap_interval, bound, highest, None, BASIS_HIGHEST, 0,
                   highest_met, capacity_unit=cap_metric.unit, client_late=late)


def refinement_figures(cap: CapacitySearch, gpus: int) -> list[float] | None:
    """Each refinement's boundary point's output tokens/s per GPU: the point of its estimate (its own
    refine point at that load, else the coarse point there: a refinement that met nothing above the
    bracket's low end); None where a point or its figure is missing."""
    estimates, points = cap.estimates, cap.points
    if not estimates:
        return None
    out = []
    for r, est in enumerate(estimates):
        mine = [p for p in points if p.get("met") and p.get("load") == est]
        p = next((q for q in mine if q.get("phase") == "refine" and q.get("repeat") == r), None) or \
            next((q for q in mine if q.get("phase") == "coarse"), None)
        tokens = p.get(TOKENS) if p else None
        if not isinstance(tokens, int | float):
            return None
        out.append(float(tokens) / gpus)
    return out


def _priced(cell: SloCell, given: Price | None, listed: Price | None) -> SloCell:
    price, origin = (given, PRICE_GIVEN) if given else (listed, PRICE_LISTED) if listed else (None, "")
    if price is None or not cell.tokens_per_s_per_gpu:
        return cell
    usd = cost_per(price.usd_per_hour, cell.tokens_per_s_per_gpu, PER_MTOK)
    span = (cost_per(price.usd_per_hour, cell.interval.hi, PER_MTOK), cost_per(price.usd_per_hour, cell.interval.lo,
                                                                               PER_MTOK)) \
        if cell.interval and cell.interval.lo > 0 else None
    return replace(cell, price=price, price_from=origin, usd_per_mtok=usd, usd_interval=span)


def _capacity_info(case: CaseResult) -> CapacitySearch:
    return RequestRateInfo.of(case.info).capacity or CapacitySearch()


def _gpus(case: CaseResult) -> int:
    """The GPUs the case's server ran on: as its per-GPU figure was divided (tok/s over tok/s per GPU),
    else its placement's."""
    whole, per = case.metrics.get(TOKENS), case.metrics.get(TOKENS_PER_GPU)
    if whole is not None and per is not None and per.value > 0:
        return max(1, round(whole.value / per.value))
    return recorded(case).gpus or 1
