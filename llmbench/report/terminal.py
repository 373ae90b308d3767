"""Everything llmbench draws on a terminal: report tables through rich, and the run summary and
`llmbench show` tables of a result set."""

from __future__ import annotations

import io
import math
import re
import textwrap
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.table import Table as RichTable
from rich.text import Text

from llmbench.analysis.caselabels import case_labels, constant_params, with_searched_batch
from llmbench.analysis.labels import gpu_name
from llmbench.ids import params_text
from llmbench.measure.stats import MIN_N_FOR_CI95
from llmbench.redact import redact
from llmbench.report.escapes import escape_controls
from llmbench.report.tables import MISSING, Table, fmt_num
from llmbench.results import CaseResult, MetricResult, ResultSet
from llmbench.scenarios.base import SCENARIOS

SEPARATOR = " · "  # between the "column: value" pairs of a stacked row
INDENT = "  "  # a stacked row's pairs under its heading


def terminal_safe(text: str) -> str:
    """`text` as it may reach a terminal: control and format characters written as escapes (ESC as
    \\x1b, a bidi override as \\u202e: report/escapes.py, as the HTML report writes them), credentials
    hidden (llmbench.redact). Files keep the original text."""
    return escape_controls(redact(text))


class SafeConsole(Console):
    """A rich console whose every printed text goes through `terminal_safe` (rich's own control codes,
    colours and cursor moves, are segments of their own and pass). The consoles of the commands."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for seg in super().render(renderable, options):
            yield seg if seg.control or not seg.text else Segment(terminal_safe(seg.text), seg.style)


UNIT = re.compile(r"\S*\[[^\]\s]+, [^\]\s]+\]\S*|\S+")  # a word, or an interval '[1.10, 1.15]' kept whole


def _units(text: str) -> list[str]:
    """What a line may break between: words, with an interval in brackets as one."""
    return UNIT.findall(text)


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """`text` in lines of at most `width` characters, broken only between units (`_units`: never inside a
    word, a number or an interval); a unit longer than a line has a line of its own. `first` and `rest`
    begin the first and the following lines."""
    out: list[str] = []
    for raw in text.splitlines() or [""]:
        line = first if not out else rest
        filled = False
        for unit in _units(raw):
            if filled and cell_len(line) + 1 + cell_len(unit) > width:
                out.append(line)
                line, filled = rest, False
            line += (" " if filled else "") + unit
            filled = True
        out.append(line)
    return out


def _longest_word(text: str) -> int:
    """The narrowest a cell can be without breaking a word, a number or an interval."""
    return max((cell_len(w) for w in _units(text)), default=0)


def _longest_line(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def column_overhead(n: int) -> int:
    """Characters a table of `n` columns spends between them (no outer edge: three per gap)."""
    return 3 * (n - 1)


def column_widths(t: Table, width: int) -> list[int] | None:
    """Column widths that fit the table in `width` characters with no word or number broken: each column
    gets its longest word (header included), then what is left goes one character at a time to every
    column still short of its longest line (short columns stop wrapping first). None where even the
    longest words do not fit: the table is then stacked (`stacked_lines`)."""
    n = len(t.columns)
    cells = [t.columns, *t.rows]
    widths = [max(_longest_word(r[j]) for r in cells) or 1 for j in range(n)]
    want = [max(_longest_line(r[j]) for r in cells) or 1 for j in range(n)]
    spare = width - column_overhead(n) - sum(widths)
    if spare < 0:
        return None
    while spare > 0 and any(w < h for w, h in zip(widths, want, strict=True)):
        for j in range(n):
            if spare and widths[j] < want[j]:
                widths[j] += 1
                spare -= 1
    return widths


def _pairs_lines(pairs: list[str], width: int) -> list[str]:
    """'key: value' pairs packed into lines of at most `width`, a pair never split between lines unless
    it is longer than a line alone (then it wraps at spaces)."""
    lines: list[str] = []
    for pair in pairs:
        joined = f"{lines[-1]}{SEPARATOR}{pair}" if lines else pair
        if lines and cell_len(INDENT + joined) <= width:
            lines[-1] = joined
        else:
            lines.append(pair)
    return [w for line in lines for w in wrap(line, width, INDENT, INDENT * 2)]


def _one_line(cell: str) -> str:
    return "; ".join(line.strip() for line in cell.splitlines() if line.strip())


def stacked_lines(t: Table, width: int) -> list[Text]:
    """A table too wide for the terminal, one row after another: the row's key columns as a heading, its
    other cells as 'column: value' pairs under it (rows that share a heading share one heading line)."""
    k = max(1, min(t.key_columns, len(t.columns)))
    out: list[Text] = []
    heading: list[str] | None = None
    for row in t.rows:
        if row[:k] != heading:
            heading = row[:k]
            text = "  ".join(_one_line(c) for c in heading if c.strip()) or MISSING
            out += [Text(line, style="bold") for line in wrap(text, width, "", INDENT)]
        pairs = [f"{col}: {_one_line(cell)}" if col else _one_line(cell)
                 for col, cell in zip(t.columns[k:], row[k:], strict=False) if cell.strip()]
        out += [_styled(line, t) for line in _pairs_lines(pairs, width)]
    return out


def _styled(text: str, t: Table) -> Text:
    style = t.styles.get(text.strip(), "")
    return Text(text, style=style)


def to_rich(t: Table, widths: list[int] | None = None) -> RichTable:
    """A rich table at the given column widths (no word is wider than its column: see `column_widths`).
    Cells are Text, never markup: '[projected]' stays text."""
    rt = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for j, c in enumerate(t.columns):
        rt.add_column("\n".join(wrap(c, widths[j])) if widths else c, width=widths[j] if widths else None,
                      overflow="fold")
    for r in t.rows:  # wrapped here, between units, so rich never breaks a line itself
        rt.add_row(*(_styled("\n".join(wrap(c, widths[j])) if widths else c, t) for j, c in enumerate(r)))
    return rt


def _paragraph(console: Console, text: str, style: str = "") -> None:
    """A paragraph wrapped at the console's width, at spaces only; a '- ' item gets a hanging indent."""
    hang = "  " if text.startswith("- ") else ""
    for line in wrap(text, max(console.width, 20), "", hang):
        console.print(Text(line, style=style), soft_wrap=True)


def escaped_table(t: Table) -> Table:
    """The table with its texts as a terminal may show them (`escape_controls`), before widths are measured:
    a bidi override or a zero-width space takes no cell and its escape six, so escaping a laid-out row
    would crop it."""
    esc = escape_controls
    return replace(t, title=esc(t.title), columns=[esc(c) for c in t.columns],
                   rows=[[esc(c) for c in r] for r in t.rows], caption=esc(t.caption),
                   notes=[esc(n) for n in t.notes], empty=esc(t.empty), lead=[esc(p) for p in t.lead])


def print_table(t: Table, console: Console) -> None:
    """One table: its title, notes (warnings, sources) and lead paragraphs, then the rows as a table where
    they fit the console's width without breaking a word, else stacked; then its caption. Its texts are
    escaped first (`escaped_table`)."""
    t = escaped_table(t)
    empty = not t.rows and not t.is_text
    if t.title or empty:
        _paragraph(console, f"{t.title}: {t.none_text}" if empty else t.title, "italic" if empty else "bold")
    for n in t.notes:
        _paragraph(console, n, "yellow")
    for p in t.lead:
        _paragraph(console, p)
    if t.is_text or empty:
        return
    widths = column_widths(t, console.width)
    if widths is None:
        for line in stacked_lines(t, console.width):
            console.print(line, soft_wrap=True)
    else:
        console.print(to_rich(t, widths))
    if t.caption:
        _paragraph(console, t.caption, "dim")


def print_terminal(tables: list[Table], console: Console) -> None:
    """Each table (`print_table`) and a blank line after it."""
    for t in tables:
        print_table(t, console)
        console.print()


def to_terminal_text(tables: list[Table], width: int = 160) -> str:
    """What the terminal format prints, as plain text (for --out FILE)."""
    buf = io.StringIO()
    print_terminal(tables, Console(file=buf, width=width, color_system=None, force_terminal=False))
    return buf.getvalue()


STATUS_STYLE = {"ok": "green", "skipped": "yellow", "oom": "red", "failed": "red", "timeout": "red",
                "killed": "red"}
REASON_CHARS = 60  # a skip or failure reason in a table: its first clause or words (the set keeps it all)
FLAG_MARK = " (!)"
FLAG_LEGEND = ("(!) marks a flagged figure (e.g. an energy window too short to trust, a run far under its "
               "roofline): the warnings below say why.")


def fmt_metric(m: MetricResult) -> str:
    """value unit [95% interval] n=N: the sample count beside every interval; no interval where
    none reaches 95% (fewer than 6 samples; a set stored before that rule may hold one: not shown)."""
    text = f"{fmt_num(m.value)} {m.unit}"
    ci, n = (m.stats.ci95, m.stats.n) if m.stats else (None, None)
    if ci and ci[0] != ci[1] and all(map(math.isfinite, ci)) and (n is None or n >= MIN_N_FOR_CI95):
        text += f" [{fmt_num(ci[0])}, {fmt_num(ci[1])}]"
    if isinstance(n, int) and n > 1:
        text += f" n={n}"
    if m.flags:
        text += FLAG_MARK
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


def one_line(text: str | None, limit: int = REASON_CHARS) -> str:
    """A text on one line of at most `limit` characters: its first non-empty line; where longer, its longest
    leading clause that fits ('fp8 needs compute capability >= 8.9' of '...; this machine has none'), else
    cut after a word; with '…' where cut (the result set keeps the whole text)."""
    first = next((" ".join(line.split()) for line in (text or "").splitlines() if line.strip()), "")
    if cell_len(first) <= limit:
        return first
    clauses = [first.split(sep, 1)[0] for sep in ("; ", ": ")]
    fits = [c for c in clauses if cell_len(c) < limit]
    if fits:
        return max(fits, key=len) + "…"
    cut = first[: max(limit - 1, 1)]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


DETAIL_LINES = 3  # a finished case's figures or reason under its label: at most this many lines, then " …"


def case_lines(status: str, label: str, detail: str, width: int) -> list[str]:
    """A finished case at the terminal's `width`: '  ok       LABEL: DETAIL' where it fits; else the label
    whole on its own line(s), wrapped at spaces, and the detail (its figures, or the reason's first line)
    on the next lines, indented, at most DETAIL_LINES of them (the result set keeps the whole text)."""
    prefix = f"  {status:8} "
    detail = next((" ".join(line.split()) for line in detail.splitlines() if line.strip()), "")
    one = f"{prefix}{label}: {detail}" if detail else f"{prefix}{label}"
    width = max(width, 40)
    if cell_len(one) <= width:
        return [one]
    pad = " " * len(prefix)
    head = textwrap.wrap(label + (":" if detail else ""), width, initial_indent=prefix, subsequent_indent=pad,
                         break_long_words=False, break_on_hyphens=False) or [prefix.rstrip()]
    body = textwrap.wrap(detail, width, initial_indent=pad + "  ", subsequent_indent=pad + "  ",
                         break_long_words=False, break_on_hyphens=False, max_lines=DETAIL_LINES,
                         placeholder=" …") if detail else []
    return head + body


def result_table(rs: ResultSet, *, all_metrics: bool = False, title: str | None = None,
                 skipped: bool = True) -> Table:
    """A result set, a row per case: its headline metrics (all of them with `all_metrics`), or why it did
    not run ok on one line. `skipped=False` leaves skipped cases out (a run printed their reasons as
    they came)."""
    source = "" if rs.source.kind == "measured" else f" [{rs.source.kind.upper()}]"
    labels = case_labels(rs.cases)  # the params that vary within each scenario: the rest is the caption
    rows = []
    for c in rs.cases:
        if c.status == "skipped" and not skipped:
            continue
        if c.status == "ok":
            detail = "\n".join(f"{n} = {fmt_metric(m)}" for n, m in case_headline(c, all_metrics))
        else:
            detail = one_line(c.reason)
        rows.append([c.scenario, with_searched_batch(labels[c.id], c), c.status, detail])
    flagged = any(FLAG_MARK in r[-1] for r in rows)
    common = [f"{sc}: {params_text(p)}" for sc in dict.fromkeys(c.scenario for c in rs.cases)
              if len(members := [c for c in rs.cases if c.scenario == sc]) > 1
              and (p := constant_params(members))]
    caption = " ".join([*(["common params: " + "; ".join(common) + "."] if common else []),
                        *([FLAG_LEGEND] if flagged else [])])
    return Table(title or f"{rs.suite}{source} — {gpu_name(rs)} — {rs.created_at}",
                 ["scenario", "case", "status", "metrics"], rows, caption=caption,
                 key_columns=2, styles=STATUS_STYLE, empty="no case to show")


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


def merge_numbers(texts: list[str]) -> str:
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
        out.append(f"{merge_numbers([f for _, _, f in hits])} — on {len(cases)} case(s) ({metrics}); "
                   "each case: llmbench show --all")
    rest = ordered[max_lines:]
    if rest:
        n = sum(len(h) for h in rest)
        out.append(f"{n} more flag(s) of {len(rest)} other kind(s): llmbench show --all")
    return out


def warning_summary(warnings: list[str], *, every: bool = False, max_lines: int = MAX_FLAG_LINES) -> list[str]:
    """A result set's warnings for a terminal, as `flag_summary` does flags: those that differ only in their
    figures are one line (with how many), at most `max_lines` lines and then how many more (`every`: all).
    A set with a warning per step would otherwise print for minutes."""
    if every:
        return warnings
    groups: dict[str, list[str]] = defaultdict(list)
    for w in warnings:
        groups[NUMBER.sub("#", w)].append(w)
    kinds = list(groups.values())
    out = [ws[0] if len(ws) == 1 else f"{merge_numbers(ws)} ({len(ws)} times)" for ws in kinds[:max_lines]]
    rest = kinds[max_lines:]
    if rest:
        out.append(f"{sum(map(len, rest))} more warning(s) of {len(rest)} other kind(s): llmbench show --all")
    return out
