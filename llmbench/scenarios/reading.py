"""How analysis reads a scenario's recorded cases: which ceiling binds each metric, the peak its matrix
math runs at, why a case cannot be projected to another GPU, which metrics the host sets, what a
capacity search searched under. A scenario declares one `Reading` (`Scenario.reading`); the one reader
of a recorded case (analysis/recorded.py) asks it with the case's params typed. The harness never does:
none of this changes how a case runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from llmbench import precision as prec
from llmbench.hardware.roofline import Bound
from llmbench.hardware.specs import GpuSpec
from llmbench.results import MetricResult

P = TypeVar("P", bound=BaseModel)  # the scenario's params


@dataclass(frozen=True)
class CapacityLoad:
    """What a case that searched its capacity under an SLO put on its server, as "At the SLO" names its
    row (analysis/at_slo.py): the SLO as the case names it (a preset, or its limits), the searched axis,
    and the load (the model, its token lengths, what else shapes the requests)."""

    slo: str
    axis: str
    workload: str


class Reading(Generic[P]):
    """The default reading: each metric bound as `bounds` says (`"memory"` or `"compute"`, `"*"` for
    every metric; a metric it does not name is not projected), matrix math at the case's precision's dense
    peak, every case projectable, nothing set by the host, no capacity searched. A scenario whose answer
    depends on the case subclasses it."""

    def __init__(self, bounds: Mapping[str, Bound] | None = None) -> None:
        self.bounds: dict[str, Bound] = dict(bounds or {})

    def bound(self, params: P, metric: str, spec: GpuSpec) -> Bound | None:
        """The ceiling that binds `metric` of a case with `params` on `spec`; None: not projected."""
        return self.bounds.get(metric) or self.bounds.get("*")

    def compute_precision(self, params: P) -> str:
        """The dense peak (spec-table key) a case's matrix math runs at: its precision's, from
        llmbench.precision (weight-only formats multiply in bf16)."""
        return prec.peak_of(str(getattr(params, "precision", None) or "bf16"))

    def projection_skip(self, params: P) -> str | None:
        """Why a case cannot be projected to another GPU at all (it measures the host); None if it can."""
        return None

    def measures_host(self, params: P, metric: str) -> bool:
        """Whether `metric` of a case with `params` is set by the host's work, not the GPU's (a GPU's
        answer pools only cells that measure the GPU: analysis/hostbound.py)."""
        return False

    def capacity_load(self, params: P) -> CapacityLoad | None:
        """What a case searched its capacity under and with (analysis/at_slo.py); None: it searched none."""
        return None

    def projected_composites(self, metrics: dict[str, MetricResult],
                             time_factor: Callable[[Bound], float]) -> dict[str, float]:
        """Metrics made of parts bound by different ceilings (E2E = prefill + decode), projected from
        their parts: `time_factor(bound)` is the time multiplier of a part with that bound."""
        return {}
