"""Short, readable names for cases: the params that vary within a scenario, not the whole dict."""

from __future__ import annotations

from typing import Any

from llmbench.caseinfo import CaseInfo
from llmbench.ids import fmt_param, params_text
from llmbench.results import CaseResult

__all__ = ["case_labels", "constant_params", "fmt_param", "params_text", "searched_batch", "shared_params",
           "varying_keys", "with_searched_batch"]


def case_labels(cases: list[CaseResult]) -> dict[str, str]:
    """Case id -> the params that differ between the cases of its scenario ('precision=fp8 batch_size=8');
    a scenario with one case is named by all its params."""
    by_scenario: dict[str, list[CaseResult]] = {}
    for c in cases:
        by_scenario.setdefault(c.scenario, []).append(c)
    labels = {}
    for members in by_scenario.values():
        varying = varying_keys([c.params for c in members])
        for c in members:
            labels[c.id] = params_text(c.params, varying if len(members) > 1 else None) or c.id
    return labels


def searched_batch(case: CaseResult) -> int | None:
    """The batch a `max_batch` case was measured at (its params keep the search's starting batch)."""
    search = CaseInfo.of(case.info).max_batch
    return search.batch_size if search else None


def with_searched_batch(label: str, case: CaseResult) -> str:
    """A case's label, plus the batch its max_batch search found, where it has one: within one result set
    the params alone ('batch_size=1 max_batch=True') would hide the batch the metrics belong to."""
    found = searched_batch(case)
    if found is None:
        return label
    if case.status == "ok":
        return f"{label} (measured at batch_size={found}, the largest that fits)"
    return f"{label} (run at batch_size={found}, the largest its probes fit)"


def varying_keys(params: list[dict[str, Any]]) -> list[str]:
    """The keys whose values differ between the param dicts (a key some lack counts as differing), in
    first-seen order."""
    keys = list(dict.fromkeys(k for p in params for k in p))
    return [k for k in keys if len({repr(p.get(k)) for p in params}) > 1]


def shared_params(params: list[dict[str, Any]]) -> dict[str, Any]:
    """The params every dict holds with the same value (shown once, as a caption)."""
    if not params:
        return {}
    first = params[0]
    return {k: v for k, v in first.items() if all(p.get(k, object()) == v for p in params[1:])}


def constant_params(cases: list[CaseResult]) -> dict[str, Any]:
    """Params shared by all `cases` (shown once, as a caption)."""
    return shared_params([c.params for c in cases])
