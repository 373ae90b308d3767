"""A scenario whose metrics are NaN or infinite on purpose (tests/test_contract.py): a real case can
measure one (a timing of zero work, an energy counter that did not move)."""

from __future__ import annotations

import math
from typing import Any, Literal

from llmbench.scenarios.base import SCENARIOS, CaseContext, Scenario, ScenarioParams

Value = Literal["finite", "nan", "inf"]
FACTOR = {"finite": 1.0, "nan": math.nan, "inf": math.inf}


class NonFiniteParams(ScenarioParams):
    headline: Value = "finite"  # time_ms, the scenario's headline metric
    secondary: Value = "finite"  # energy_j, a metric beside it


@SCENARIOS.register("nonfinite")
class NonFinite(Scenario):
    Params = NonFiniteParams
    description = "test-only: a case whose headline or secondary metric is NaN or infinite"
    headline = ("time_ms",)

    def run(self, params: Any, ctx: CaseContext) -> None:
        m = ctx.measure(lambda: sum(range(100)))
        ctx.record("time_ms", [t * 1e3 * FACTOR[params.headline] for t in m.samples_s])
        ctx.record_value("energy_j", 1.0 * FACTOR[params.secondary])
