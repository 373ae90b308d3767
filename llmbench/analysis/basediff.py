"""Within one result set: each case against the case that differs from it only in one param
(HF trainer-benchmark style: `--base precision=bf16` puts every precision next to bf16)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from llmbench.analysis.caselabels import case_labels, fmt_param
from llmbench.analysis.inputs import SetRef
from llmbench.errors import UserError, choices_text
from llmbench.metrics import METRICS, Better
from llmbench.results import CaseResult


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


def _matches(params: dict[str, Any], key: str, value: Any) -> bool:
    return key in params and fmt_param(params[key]) == fmt_param(value)


def _check(ref: SetRef, key: str, value: Any) -> None:
    keys = sorted({k for c in ref.rs.cases for k in c.params})
    if key not in keys:
        raise UserError(
            f"--base {key}=...: no case of {ref.label} has param {key!r}; valid: {choices_text(keys)}"
        )
    if not any(_matches(c.params, key, value) for c in ref.rs.cases):
        values = sorted({fmt_param(c.params[key]) for c in ref.rs.cases if key in c.params})
        raise UserError(
            f"--base {key}={fmt_param(value)}: no case of {ref.label} has that value; "
            f"valid: {choices_text(values)}"
        )


def _base_case(c: CaseResult, cases: list[CaseResult], key: str, value: Any) -> CaseResult | None:
    others = {k: v for k, v in c.params.items() if k != key}
    return next(
        (
            b
            for b in cases
            if b.scenario == c.scenario
            and _matches(b.params, key, value)
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
        if _matches(c.params, key, value):
            continue
        base = _base_case(c, cases, key, value) if key in c.params else None
        why = (
            f"no param {key!r}"
            if key not in c.params
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
