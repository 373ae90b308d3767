"""Which cells of a comparison measure the host rather than the GPU: llmbench's own classification, so
that a GPU's answer pools only cells that measure the GPU and host-bound ones are shown apart."""

from __future__ import annotations

from llmbench.analysis.recorded import recorded
from llmbench.caseinfo import StepInfo
from llmbench.hardware.roofline import HOST_BOUND_GPU_SHARE
from llmbench.metrics import DECODE_RATE, E2E_RATE, METRICS
from llmbench.results import CaseResult


def measures_host(case: CaseResult, metric: str) -> bool:
    """Whether `metric` of `case` is host-bound: what its scenario declares so (a short prompt's time to
    first token), and a decode (and so the whole request) whose GPU was busy for less than
    HOST_BOUND_GPU_SHARE of each step (the roofline diagnosis's host-bound)."""
    if recorded(case).measures_host(metric):
        return True
    mdef = METRICS.get(metric)
    if mdef is None or mdef.family not in (DECODE_RATE, E2E_RATE):
        return False
    busy, tpot = StepInfo.of(case.info).gpu_busy_ms_per_step, case.metrics.get("tpot_ms")
    return busy is not None and tpot is not None and tpot.value > 0 and busy < HOST_BOUND_GPU_SHARE * tpot.value


HOST_FAMILY = " (host-bound)"  # a floor family's suffix for its host-bound cells: a spread of its own


def floor_family(case: CaseResult, metric: str) -> str:
    """The family a cell's spread pools in: the metric's, host-bound cells apart."""
    mdef = METRICS.get(metric)
    name = mdef.family_name if mdef else metric
    return name + HOST_FAMILY if measures_host(case, metric) else name
