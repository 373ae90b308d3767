"""Within one result set: each case against the case that differs from it only in one param
(HF trainer-benchmark style: `--base precision=bf16` puts every precision next to bf16)."""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass
from typing import Any

from llmbench.analysis.caselabels import case_labels, fmt_param
from llmbench.analysis.inputs import SetRef
from llmbench.errors import UserError, choices_hint
from llmbench.metrics import METRICS, Better
from llmbench.results import CaseResult
from llmbench.suite import case_from


@dataclass
class DiffRow:
    case_id: str
    scenario: str
    case: str
    metric: str
    unit: str
    better: Better
    base_value: float
    value: float
    diff_pct: float | None  # (value / base - 1) * 100, raw sign; None where base is 0
    improved: bool | None  # oriented by the metric catalogue; None for `neither` metrics

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BaseDiff:
    set: SetRef
    key: str
    value: Any
    rows: list[DiffRow]
    unmatched: list[tuple[str, str, str]]  # (case id, case label, why it has no diff)

    def to_dict(self) -> dict[str, Any]:
        return {
            "set": self.set.label,
            "base": {self.key: self.value},
            "source": self.set.rs.source.model_dump(),
            "rows": [r.to_dict() for r in self.rows],
            "unmatched": [{"case_id": c, "case": lbl, "why": why} for c, lbl, why in self.unmatched],
        }


def parse_base(text: str) -> tuple[str, Any]:
    """'precision=bf16' -> ('precision', 'bf16'); values are read as JSON where they parse
    ('batch_size=8' -> 8), else kept as text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise UserError(f"--base {text!r}: expected KEY=VALUE, e.g. --base precision=bf16")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


_MISSING = object()


def _param(c: CaseResult, key: str) -> Any:
    """The case's `key`: as recorded, else the default of an engine option or param added later (a
    result set leaves those out at their default, as the case id does: a fused case records no
    `fuse`), else _MISSING."""
    if key in c.params:
        return c.params[key]
    return _added_later(c.scenario, json.dumps(c.params, sort_keys=True, default=str), key)


@functools.lru_cache(maxsize=4096)
def _added_later(scenario: str, params: str, key: str) -> Any:
    try:
        spec = case_from(scenario, json.loads(params))
    except (UserError, ValueError):  # params this version no longer reads: as recorded
        return _MISSING
    for part in (spec.engine, spec.params):
        if part is not None and key in type(part).added_later and key in type(part).model_fields:
            return getattr(part, key)
    return _MISSING


def _matches(c: CaseResult, key: str, value: Any) -> bool:
    v = _param(c, key)
    return v is not _MISSING and fmt_param(v) == fmt_param(value)


def _check(ref: SetRef, key: str, value: Any) -> None:
    values = {fmt_param(v) for c in ref.rs.cases if (v := _param(c, key)) is not _MISSING}
    if not values:
        keys = sorted({k for c in ref.rs.cases for k in c.params})
        raise UserError(
            f"--base {key}=...: no case of {ref.label} has param {key!r}; {choices_hint(key, keys)}"
        )
    if fmt_param(value) not in values:
        raise UserError(
            f"--base {key}={fmt_param(value)}: no case of {ref.label} has that value; "
            f"{choices_hint(fmt_param(value), sorted(values))}"
        )


def _base_case(c: CaseResult, cases: list[CaseResult], key: str, value: Any) -> CaseResult | None:
    others = {k: v for k, v in c.params.items() if k != key}
    return next(
        (
            b
            for b in cases
            if b.scenario == c.scenario
            and _matches(b, key, value)
            and {k: v for k, v in b.params.items() if k != key} == others
        ),
        None,
    )


def base_diff(ref: SetRef, key: str, value: Any) -> BaseDiff:
    """Diff % of every case against its base variation; cases without one are listed, not dropped."""
    _check(ref, key, value)
    cases = ref.rs.cases
    labels = case_labels(cases)
    rows: list[DiffRow] = []
    unmatched: list[tuple[str, str, str]] = []
    for c in cases:
        if _matches(c, key, value):
            continue
        has_key = _param(c, key) is not _MISSING
        base = _base_case(c, cases, key, value) if has_key else None
        why = (
            f"no param {key!r}"
            if not has_key
            else "no case differing only in " + key
            if base is None
            else f"status {c.status}"
            if c.status != "ok"
            else f"base case status {base.status}"
            if base.status != "ok"
            else ""
        )
        if why or base is None:
            unmatched.append((c.id, labels[c.id], why + (f": {c.reason}" if c.reason else "")))
            continue
        for name, m in c.metrics.items():
            b = base.metrics.get(name)
            if b is None:
                continue
            better: Better = METRICS[name].better if name in METRICS else "neither"
            diff = (m.value / b.value - 1.0) * 100.0 if b.value else None
            improved = (
                None
                if better == "neither" or diff is None or diff == 0
                else ((diff > 0) == (better == "higher"))
            )
            rows.append(
                DiffRow(
                    c.id, c.scenario, labels[c.id], name, m.unit, better, b.value, m.value, diff, improved
                )
            )
    return BaseDiff(ref, key, value, rows, unmatched)
