"""Short, readable names for cases: the params that vary within a scenario, not the whole dict."""

from __future__ import annotations

from typing import Any

from llmbench.ids import fmt_param, params_text
from llmbench.results import CaseResult

__all__ = ["case_labels", "constant_params", "fmt_param", "params_text"]


def case_labels(cases: list[CaseResult]) -> dict[str, str]:
    """Case id -> the params that differ between the cases of its scenario ('precision=fp8 batch_size=8');
    a scenario with one case is named by all its params."""
    by_scenario: dict[str, list[CaseResult]] = {}
    for c in cases:
        by_scenario.setdefault(c.scenario, []).append(c)
    labels = {}
    for members in by_scenario.values():
        keys: list[str] = []
        for c in members:
            keys += [k for k in c.params if k not in keys]
        varying = [k for k in keys if len({repr(c.params.get(k)) for c in members}) > 1]
        for c in members:
            labels[c.id] = params_text(c.params, varying if len(members) > 1 else None) or c.id
    return labels


def constant_params(cases: list[CaseResult]) -> dict[str, Any]:
    """Params shared by all `cases` (shown once, as a caption)."""
    if not cases:
        return {}
    first = cases[0].params
    return {k: v for k, v in first.items() if all(c.params.get(k, object()) == v for c in cases[1:])}
