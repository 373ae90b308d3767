"""Terminal summaries of result sets and plans (rich tables): the run summary and `llmbench show`."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from llmbench.ids import params_text
from llmbench.report.tables import fmt_num
from llmbench.results import CaseResult, MetricResult, ResultSet
from llmbench.scenarios.base import SCENARIOS

STATUS_STYLE = {"ok": "green", "skipped": "yellow", "oom": "red", "failed": "red", "timeout": "red"}


def fmt_metric(m: MetricResult) -> str:
    text = f"{fmt_num(m.value)} {m.unit}"
    ci = (m.stats or {}).get("ci95")
    if ci and ci[0] != ci[1]:
        text += f" [{fmt_num(ci[0])}, {fmt_num(ci[1])}]"
    if m.flags:
        text += " (!)"
    return text


def headline_metrics(case: CaseResult, all_metrics: bool = False) -> list[tuple[str, MetricResult]]:
    if all_metrics:
        return sorted(case.metrics.items())
    names: tuple[str, ...] = ()
    if case.scenario in SCENARIOS:
        names = SCENARIOS.get(case.scenario).headline
    picked = [(n, case.metrics[n]) for n in names if n in case.metrics]
    return picked or sorted(case.metrics.items())[:2]


def case_label(case: CaseResult) -> str:
    return params_text(case.params)


def result_table(rs: ResultSet, *, all_metrics: bool = False, title: str | None = None) -> Table:
    source = "" if rs.source.kind == "measured" else f" [{rs.source.kind.upper()}]"
    gpu = rs.env.get("gpu", {}).get("name", "?")
    t = Table(title=title or f"{rs.suite}{source} — {gpu} — {rs.created_at}", show_lines=False)
    for col in ("scenario", "case", "status", "metrics"):
        t.add_column(col, overflow="fold")
    for c in rs.cases:
        style = STATUS_STYLE.get(c.status, "")
        if c.status == "ok":
            detail = "\n".join(f"{n} = {fmt_metric(m)}" for n, m in headline_metrics(c, all_metrics))
        else:
            detail = c.reason or ""
        t.add_row(c.scenario, escape(case_label(c)), f"[{style}]{c.status}[/{style}]", escape(detail))
    return t


def status_counts(rs: ResultSet) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in rs.cases:
        out[c.status] = out.get(c.status, 0) + 1
    return out


def flags_of(rs: ResultSet) -> list[str]:
    """Every flag raised on a metric (an untrusted energy window, a run far under its roofline)."""
    out: list[str] = []
    for c in rs.cases:
        for name, m in c.metrics.items():
            out.extend(f"{c.scenario} {case_label(c)}: {name}: {f}" for f in m.flags)
    return out


