"""Everything llmbench draws on a terminal: report tables through rich, and the run summary and
`llmbench show` tables of a result set."""

from __future__ import annotations

import io
import re
from collections import defaultdict

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from llmbench.ids import params_text
from llmbench.measure.stats import MIN_N_FOR_CI95
from llmbench.report.caselabels import with_searched_batch
from llmbench.report.tables import Table, fmt_num
from llmbench.results import CaseResult, MetricResult, ResultSet
from llmbench.scenarios.base import SCENARIOS


def to_rich(t: Table) -> RichTable:
    """A rich table; every text is escaped, since '[projected]' would otherwise be read as markup."""
    rt = RichTable(title=escape(t.title), caption=escape(t.caption) or None, title_justify="left")
    for c in t.columns:
        rt.add_column(escape(c), overflow="fold")
    for r in t.rows:
        rt.add_row(*(escape(c) for c in r))
    return rt


def print_terminal(tables: list[Table], console: Console) -> None:
    """Each table with its notes; a table with no rows is one line, its title and "(none: ...)", not an
    empty frame of headers."""
    for t in tables:
        for n in t.notes:
            console.print(f"[bold yellow]{escape(n)}[/]", highlight=False)
        if not t.rows:
            console.print(f"[italic]{escape(t.title)}[/]: {escape(t.none_text)}", highlight=False, soft_wrap=True)
        else:
            console.print(to_rich(t))
        console.print()


def to_terminal_text(tables: list[Table], width: int = 160) -> str:
    """What the terminal format prints, as plain text (for --out FILE)."""
    buf = io.StringIO()
    print_terminal(tables, Console(file=buf, width=width, color_system=None, force_terminal=False))
    return buf.getvalue()


STATUS_STYLE = {"ok": "green", "skipped": "yellow", "oom": "red", "failed": "red", "timeout": "red"}


def fmt_metric(m: MetricResult) -> str:
    """value unit [95% interval] n=N: the sample count beside every interval; no interval where
    none reaches 95% (fewer than 6 samples; a set stored before that rule may hold one: not shown)."""
    text = f"{fmt_num(m.value)} {m.unit}"
    stats = m.stats or {}
    ci, n = stats.get("ci95"), stats.get("n")
    if ci and ci[0] != ci[1] and (not isinstance(n, int) or n >= MIN_N_FOR_CI95):
        text += f" [{fmt_num(ci[0])}, {fmt_num(ci[1])}]"
    if isinstance(n, int) and n > 1:
        text += f" n={n}"
    if m.flags:
        text += " (!)"
    return text


def case_headline(case: CaseResult, all_metrics: bool = False) -> list[tuple[str, MetricResult]]:
    """The metrics a summary shows for one case: its scenario's headline ones (or all of them)."""
    if all_metrics:
        return sorted(case.metrics.items())
    names: tuple[str, ...] = ()
    if case.scenario in SCENARIOS:
        names = SCENARIOS.get(case.scenario).headline
    picked = [(n, case.metrics[n]) for n in names if n in case.metrics]
    return picked or sorted(case.metrics.items())[:2]


def case_label(case: CaseResult) -> str:
    return with_searched_batch(params_text(case.params), case)


def result_table(rs: ResultSet, *, all_metrics: bool = False, title: str | None = None) -> RichTable:
    source = "" if rs.source.kind == "measured" else f" [{rs.source.kind.upper()}]"
    gpu = rs.env.get("gpu", {}).get("name", "?")
    t = RichTable(title=title or f"{rs.suite}{source} — {gpu} — {rs.created_at}", show_lines=False)
    for col in ("scenario", "case", "status", "metrics"):
        t.add_column(col, overflow="fold")
    for c in rs.cases:
        style = STATUS_STYLE.get(c.status, "")
        if c.status == "ok":
            detail = "\n".join(f"{n} = {fmt_metric(m)}" for n, m in case_headline(c, all_metrics))
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


NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
MAX_FLAG_LINES = 4


def _merge_numbers(texts: list[str]) -> str:
    """One text for flags that differ only in their figures: a figure that varies becomes its range."""
    columns = list(zip(*(NUMBER.findall(t) for t in texts), strict=True))
    merged = []
    for col in columns:
        lo, hi = min(col, key=float), max(col, key=float)
        merged.append(lo if float(lo) == float(hi) else f"{lo}..{hi}")
    it = iter(merged)
    return NUMBER.sub(lambda _: next(it), texts[0])


def flag_summary(rs: ResultSet, *, every: bool = False, max_lines: int = MAX_FLAG_LINES) -> list[str]:
    """The flags of a result set for a person reading a terminal: flags that differ only in their
    figures collapse into one line with the number of cases and metrics they touch, at most
    `max_lines` lines (`every`: one line per flag, as `flags_of`). The result set keeps every flag."""
    if every:
        return flags_of(rs)
    groups: dict[str, list[tuple[CaseResult, str, str]]] = defaultdict(list)
    for c in rs.cases:
        for name, m in c.metrics.items():
            for f in m.flags:
                groups[NUMBER.sub("#", f)].append((c, name, f))
    out: list[str] = []
    ordered = sorted(groups.values(), key=len, reverse=True)
    for hits in ordered[:max_lines]:
        cases = {c.id for c, _, _ in hits}
        if len(hits) == 1:
            c, name, f = hits[0]
            out.append(f"{c.scenario} {case_label(c)}: {name}: {f}")
            continue
        metrics = ", ".join(dict.fromkeys(n for _, n, _ in hits))
        out.append(f"{_merge_numbers([f for _, _, f in hits])} — on {len(cases)} case(s) ({metrics}); "
                   "each case: llmbench show --all")
    rest = ordered[max_lines:]
    if rest:
        n = sum(len(h) for h in rest)
        out.append(f"{n} more flag(s) of {len(rest)} other kind(s): llmbench show --all")
    return out
