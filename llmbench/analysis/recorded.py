"""A case as a result set recorded it, read back as the case it was: its scenario bound to the engine
and placement it ran on, its params typed, its engine's name and its GPUs. The one reader of a recorded
case's parts: analysis asks it what a case ran on and how its scenario reads it (which ceiling binds a
metric, what measures the host), never the params under the names they had in some version."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from llmbench.errors import UserError
from llmbench.hardware.roofline import Bound
from llmbench.hardware.specs import GpuSpec
from llmbench.placement import Placement
from llmbench.precision import peak_of
from llmbench.registry import PluginError
from llmbench.results import CaseResult, MetricResult
from llmbench.scenarios.base import SCENARIOS, Scenario, ScenarioParams
from llmbench.scenarios.reading import CapacityLoad


@dataclass(frozen=True)
class Recorded:
    """A recorded case's parts. `scenario` and `params` are None for a scenario this llmbench does not
    know (a plugin's not installed here): each answer below is then the one for a case nothing is known
    of. Where the params do not make a case this llmbench could run (a published figure of an engine or
    a model it has not), `placement` is None and `params` hold the scenario's own keys as recorded,
    unvalidated."""

    scenario: Scenario[Any] | None
    params: ScenarioParams | None
    engine: str | None  # the engine's name, as the case's scenario reads it (a `url` param: the url engine)
    placement: Placement | None
    precision: str | None  # as recorded: what a case runs at whose scenario has no precision param

    @property
    def gpus(self) -> int | None:
        """The GPUs the case's placement asks for; None where it cannot be read."""
        return self.placement.gpus if self.placement is not None else None

    def bound(self, metric: str, spec: GpuSpec) -> Bound | None:
        """The ceiling that binds `metric` on `spec` (its scenario's reading); None: not projected."""
        return self.scenario.reading.bound(self.params, metric, spec) if self.scenario and self.params else None

    def compute_precision(self) -> str:
        """The dense peak its matrix math runs at (Reading.compute_precision); a recorded precision its
        scenario's params do not hold (a published figure's) is its precision's, and a case of no known
        scenario runs at its recorded precision."""
        if self.scenario is None or self.params is None:
            return self.precision or "bf16"
        if self.precision is not None and "precision" not in type(self.params).model_fields:
            return peak_of(self.precision)
        return self.scenario.reading.compute_precision(self.params)

    def projection_skip(self) -> str | None:
        return self.scenario.reading.projection_skip(self.params) if self.scenario and self.params else None

    def capacity_load(self) -> CapacityLoad | None:
        return self.scenario.reading.capacity_load(self.params) if self.scenario and self.params else None

    def measures_host(self, metric: str) -> bool:
        return bool(self.scenario and self.params and self.scenario.reading.measures_host(self.params, metric))

    def projected_composites(self, metrics: dict[str, MetricResult],
                             time_factor: Callable[[Bound], float]) -> dict[str, float]:
        return self.scenario.reading.projected_composites(metrics, time_factor) if self.scenario else {}


def recorded(case: CaseResult) -> Recorded:
    """`case` read back as its parts (cached: a results tree asks it of every cell). Its engine and GPUs
    are the typed `engine` and `placement` a set of schema 3 records, else what its params say of them."""
    placed = case.placement
    return _typed(case.scenario, json.dumps(case.params, sort_keys=True), case.engine.name if case.engine else None,
                  (placed.gpus, placed.nodes, placed.replicas) if placed else None)


@functools.cache
def _typed(scenario: str, params_json: str, engine: str | None, counts: tuple[int, int, int] | None) -> Recorded:
    """The case read from its params, with the engine and placement its set records typed, where it does."""
    read = _read(scenario, params_json)
    if counts is not None:
        gpus, nodes, replicas = counts
        read = replace(read, placement=Placement.model_validate({"gpus": gpus, "nodes": nodes, "replicas": replicas}))
    return replace(read, engine=engine) if engine is not None else read


def _engine_named(cls: type[Scenario[Any]], flat: dict[str, Any]) -> str | None:
    """The engine a record names, however it spells it (a serving `url` param: the url engine), read
    without validating its options; None where it names one this llmbench has not."""
    from llmbench.suite import split_flat

    try:
        table = split_flat(cls, dict(flat))[1]
    except (UserError, PluginError, ValueError, LookupError, TypeError):
        return None
    return str(table["name"]) if table and table.get("name") is not None else None


@functools.cache
def _read(scenario: str, params_json: str) -> Recorded:
    from llmbench.suite import case_from

    flat = json.loads(params_json)
    precision = str(flat["precision"]) if flat.get("precision") is not None else None
    named = str(flat["engine"]) if flat.get("engine") is not None else None
    if scenario not in SCENARIOS:
        return Recorded(None, None, named, None, precision)
    try:
        spec = case_from(scenario, flat)
    except (UserError, PluginError, ValueError, LookupError, TypeError):
        cls = SCENARIOS.get(scenario)
        own = {k: v for k, v in flat.items() if k in cls.Params.model_fields}
        try:  # the scenario's own params, without what this llmbench does not know
            params = cls.Params.model_validate(own)
        except ValidationError:  # values it would not take (a published figure's model): as recorded
            params = cls.Params.model_construct(**own)
        return Recorded(cls(), params, _engine_named(cls, flat) or named, None, precision)
    engine = spec.engine.name if spec.engine is not None else named
    return Recorded(spec.scenario_obj(), spec.params, engine, spec.placement, precision)
