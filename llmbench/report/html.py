"""`llmbench report`: one static HTML page (inline CSS and SVG, no scripts, no URLs: a Content-Security-Policy
forbids any load), its answer on the first screen, the rest folded (docs/design.md, "The HTML page")."""

from __future__ import annotations

import functools
import html
import importlib.util
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from llmbench import __version__
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.labels import is_measured, source_line
from llmbench.analysis.runs import RunLine
from llmbench.analysis.sections import Section
from llmbench.analysis.summary import Summary, summary
from llmbench.report.firstscreen import AnswerBlock, pair_answers, projection_answers, projection_title
from llmbench.report.headline_view import headline_table, lead_sentence
from llmbench.report.tables import Table
from llmbench.report.views import (
    comparison_tables,
    engine_tables,
    runs_tables,
    set_tables,
    short_note,
    source_notes,
    validation_tables,
)

if TYPE_CHECKING:  # charts.py and plots.py import matplotlib (over a second): only a page with charts needs it
    from llmbench.report.plots import Chart

REPORT_EXTRA = "pip install 'llmbench[report]'"

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
SHOWN_CHART_PX = 460  # a comparison shows its first chart at most this tall; every other chart is folded
CSS = """
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1rem auto;max-width:1100px;
color:#1b1f24;padding:0 1rem}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.3rem;margin:1.4rem 0 .4rem;border-bottom:1px solid #d0d7de}
h3{font-size:1.05rem;margin:1rem 0 .3rem}h4{margin:1rem 0 .3rem}
table{border-collapse:collapse;margin:.4rem 0;font-size:13px}th,td{border:1px solid #d0d7de;padding:2px 7px;
text-align:left;vertical-align:top}th{background:#f6f8fa}tr:nth-child(even) td{background:#fbfcfd}
tr.group th{background:#e7eef8;font-weight:600}tr.group .caption{font-weight:400;margin-left:.6rem}
.note{background:#fff8c5;border-left:4px solid #d4a72c;padding:.3rem .7rem;margin:.4rem 0;font-size:14px}
.caption{color:#57606a;font-size:13px;margin:.3rem 0}.tag{border-radius:4px;padding:0 5px;font-size:12px;
font-weight:600}.tag.published{background:#ddf4ff;color:#0550ae}.tag.projected{background:#ffebe9;color:#a40e26}
figure{margin:.6rem 0}figure svg{max-width:100%;height:auto}.empty{color:#57606a}
nav.toc{background:#f6f8fa;border:1px solid #d0d7de;padding:.3rem 1rem;margin:1rem 0;font-size:14px}
nav.toc ol{margin:.2rem 0;padding-left:1.4rem;columns:3;column-gap:2rem}nav.toc h2{border:0;margin:.2rem 0;
font-size:1.05rem}
details{margin:.3rem 0}summary{cursor:pointer;font-weight:600;color:#1f4e9c}
details>div{border-left:3px solid #d0d7de;padding-left:.8rem;margin:.3rem 0 .8rem}
.answer{border:2px solid #1f4e9c;border-radius:6px;padding:0 1rem .5rem;margin:.6rem 0}
.answer h2{margin-top:.5rem}.lead{font-size:15px;font-weight:600;margin:.3rem 0}
"""


@dataclass
class _Built:
    """A section where the page puts it (its anchor), with the tables the caller rendered for it."""

    sec: Section
    anchor: str
    more: list[Table] = field(default_factory=list)

    @functools.cached_property
    def summary(self) -> Summary | None:
        """The answer of the section's comparison, once for its lead line, the contents and its first table."""
        return summary(self.sec.cmp) if self.sec.cmp else None


def _cell(text: str) -> str:
    out = html.escape(text)
    for kind in ("published", "projected"):
        out = out.replace(f"[{kind}]", f'<span class="tag {kind}">{kind}</span>')
    return out


def _rows_html(t: Table) -> str:
    return "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r) + "</tr>" for r in t.rows)


def _table_body(t: Table) -> str:
    parts = [f'<div class="note">{_cell(n)}</div>' for n in t.notes]
    if t.rows:
        head = "".join(f"<th>{_cell(c)}</th>" for c in t.columns)
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{_rows_html(t)}</tbody></table>")
    else:
        parts.append(f'<p class="empty">{_cell(t.none_text)}</p>')
    if t.caption:
        parts.append(f'<p class="caption">{_cell(t.caption)}</p>')
    return "\n".join(parts)


def table_html(t: Table, level: int = 4) -> str:
    """A table under its title."""
    return f"<h{level}>{_cell(t.title)}</h{level}>\n{_table_body(t)}"


_SVG_REFS = re.compile(r'(id="|url\(#|href="#)')


def chart_html(c: Chart, prefix: str = "") -> str:
    """The chart as a figure, its SVG's ids (hatch patterns, markers, clip paths) prefixed: charts reuse
    ids, and a browser resolves a reference to the first element of that id on the page, which draws
    nothing where it lies in a folded <details>."""
    svg = _SVG_REFS.sub(lambda m: m.group(1) + prefix, c.svg) if prefix else c.svg
    return f'<figure aria-label="{html.escape(c.title)}">{svg}</figure>'


def _anchor(title: str, k: int) -> str:
    return f"s{k}-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40]


def _build(sections: list[Section], more: dict[str, list[Table]]) -> list[_Built]:
    return [_Built(sec, _anchor(sec.title, k), more.get(sec.title, [])) for k, sec in enumerate(sections, 1)]


def _charts(b: _Built) -> list[Chart]:
    # here, not at the top: every `llmbench` command imports this module (versus -> pair_view), and
    # matplotlib's import was over a second of each command's start
    from llmbench.report.charts import (
        loss_curve_charts,
        pareto_charts,
        scenario_charts,
        speedup_charts,
        timeline_charts,
    )

    charts = speedup_charts(b.sec.cmp) if b.sec.cmp else []
    for scenario in dict.fromkeys(c.scenario for s in b.sec.sets for c in s.rs.cases):
        charts += scenario_charts(b.sec.sets, scenario)
    return charts + timeline_charts(b.sec.sets) + loss_curve_charts(b.sec.sets) + pareto_charts(b.sec.sets)


def _fold(summary: str, inner: list[str]) -> str:
    return f"<details><summary>{summary}</summary><div>\n" + "\n".join(inner) + "\n</div></details>"


def _source_texts(sets: list[SetRef]) -> set[str]:
    """Every note the tables of these sets repeat (where their figures come from): shown once instead."""
    return {*source_notes(sets), *short_note(sets), *(n for s in sets for n in source_notes([s]))}


def _once(tables: list[Table], sets: list[SetRef]) -> list[Table]:
    """The tables without the source notes the section shows once, and a source cell pointing there."""
    repeated = _source_texts(sets)
    lines = {source_line(s.rs): f"{s.kind} (source above)" for s in sets if not is_measured(s.rs)}
    return [replace(t, notes=[n for n in t.notes if n not in repeated],
                    rows=[[lines.get(c, c) for c in r] for r in t.rows]) for t in tables]


def _sources_html(sets: list[SetRef]) -> str:
    """Where the figures that were not measured here come from: each source once, naming its sets."""
    by_line: dict[str, list[str]] = {}
    for s in sets:
        if not is_measured(s.rs):
            by_line.setdefault(source_line(s.rs), []).append(s.label)
    return "\n".join(f'<div class="note">{_cell(", ".join(names))}: {_cell(line)}</div>'
                     for line, names in by_line.items())


def _files_line(b: _Built) -> str:
    """The sets' slugs and files: what `--baseline` and the result folders know them by."""
    parts = []
    for ref in b.sec.sets:
        files = ref.stems or [ref.stem]
        parts.append(f"{ref.label} = {ref.rs.gpu_slug}" + (f" ({', '.join(f for f in files if f)})"
                                                           if any(files) else ""))
    return f'<p class="caption">Result sets: {_cell("; ".join(parts))}</p>'


def _lead(b: _Built) -> str:
    """The comparison's overall speed ratio; where no case joins, each set's count of cases ok."""
    if b.summary is not None and b.sec.cmp and b.sec.cmp.rows:
        return lead_sentence(b.summary)
    counts = [(ref.label, sum(c.status == "ok" for c in ref.cases()), len(ref.cases())) for ref in b.sec.sets]
    return "; ".join(f"{name}: {ok} of {n} cases ok" for name, ok, n in counts) + "."


def section_html(b: _Built) -> str:
    """A lead line, the sources once, the first chart that fits in view where cases join; the other charts
    and the tables folded."""
    sec = b.sec
    tables = comparison_tables(b.sec.cmp, runs=False) if b.sec.cmp else set_tables(b.sec.sets[0])
    if b.sec.cmp and b.summary is not None:
        tables.insert(0, headline_table(b.sec.cmp, b.summary, "Headline ratios per workload and metric"))
    engines = [t for d in sec.engines for t in engine_tables(d)]
    tables = _once(engines + tables + b.more, b.sec.sets)
    for c in b.sec.checks:
        error, unmatched = validation_tables(c.validation, c.projected, c.measured)
        title = f"{projection_title(b.sec.sets[sec.baseline], c.measured)}: error per workload and metric"
        tables += _once([replace(error, title=title), unmatched], [c.projected])
    charts = _charts(b)
    measured = any(is_measured(s.rs) for s in b.sec.sets)  # a published reference alone: its chart folded too
    shown = (next((c for c in charts if c.height_px <= SHOWN_CHART_PX), None)
             if b.sec.cmp and b.sec.cmp.rows and measured else None)
    parts = [f'<section id="{b.anchor}"><h2>{_cell(sec.title)}</h2>', f'<p class="lead">{_cell(_lead(b))}</p>',
             _sources_html(b.sec.sets)]
    figures = {id(c): chart_html(c, f"{b.anchor.split('-')[0]}c{k}-") for k, c in enumerate(charts)}
    if shown:
        parts.append(figures[id(shown)])
    folded = [figures[id(c)] for c in charts if c is not shown]
    if folded:
        parts.append(_fold(f"{'More charts' if shown else 'Charts'} ({len(folded)})", folded))
    projected = _sources_html([c.projected for c in b.sec.checks])
    inner = [_files_line(b), *(f'<p class="caption">{_cell(w)}</p>' for w in [sec.note, *sec.no_check] if w),
             *(table_html(t) for t in tables)]
    if projected:
        inner.insert(1, projected)
    parts += [_fold(f"Tables ({len(tables)})", inner), "</section>"]
    return "\n".join(p for p in parts if p)


def _block_html(block: AnswerBlock, anchors: dict[str, str]) -> str:
    """An answer: its tables as one table with a heading row per table where they share their columns
    (a table titled as a section links to it), else one after another."""
    parts = [f"<h2>{_cell(block.title)}</h2>", f'<p class="lead">{_cell(block.lead)}</p>']
    parts += [f'<div class="note">{_cell(n)}</div>' for n in block.notes]
    columns = {tuple(t.columns) for t in block.tables}
    if len(columns) == 1:
        cols = block.tables[0].columns
        body = []
        for t in block.tables:
            name = _cell(t.title)
            if t.title in anchors:
                name = f'<a href="#{anchors[t.title]}">{name}</a>'
            cap = f'<span class="caption">{_cell(t.caption)}</span>' if t.caption else ""
            body.append(f'<tr class="group"><th colspan="{len(cols)}">{name}{cap}</th></tr>')
            body.append(_rows_html(t) or f'<tr><td colspan="{len(cols)}">{_cell(t.none_text)}</td></tr>')
        head = "".join(f"<th>{_cell(c)}</th>" for c in cols)
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
    else:
        parts += [table_html(t, 3) for t in block.tables]
    if block.caption:
        parts.append(f'<p class="caption">{_cell(block.caption)}</p>')
    return "\n".join(parts)


def _sets_answer(built: list[_Built]) -> AnswerBlock:
    """Where nothing is compared: what each section holds."""
    rows = [[b.sec.title, ", ".join(s.label for s in b.sec.sets), _lead(b)] for b in built]
    return AnswerBlock("What was measured", "No two GPUs are compared here: each section is one result set.",
                       [Table("Sections", ["section", "GPU", "cases"], rows, empty="no result sets")])


def answer_html(blocks: list[AnswerBlock], built: list[_Built], runs: str = "") -> str:
    anchors = {b.sec.title: b.anchor for b in built}
    parts = ['<section id="answer" class="answer">', *(_block_html(a, anchors) for a in blocks), runs, "</section>"]
    return "\n".join(parts)


def projection_html(built: list[_Built]) -> str:
    """How well each baseline projected to the other GPU matched its measurement, all comparisons at once."""
    blocks = projection_answers([(s.title, s.sets[s.baseline], s.checks) for s in (b.sec for b in built) if s.checks])
    if not blocks:
        return ""
    anchors = {b.sec.title: b.anchor for b in built}
    # folded: the answers above are what a reader needs first; this says how far a projection can be trusted
    return "\n".join(['<section id="projection-check"><details><summary>Projection check: how far each '
                      "baseline GPU projected by roofline lands from the other GPU's measurement</summary>",
                      *(_block_html(a, anchors) for a in blocks), "</details></section>"])


def toc_html(built: list[_Built], projection: bool) -> str:
    items = '<li><a href="#answer">The answer</a></li>'
    if projection:
        items += '<li><a href="#projection-check">Projection check</a></li>'
    items += "".join(f'<li><a href="#{b.anchor}">{_cell(b.sec.title)}</a></li>' for b in built)
    return f'<nav class="toc"><h2>Contents</h2><ol>{items}</ol></nav>'


def _tags_line(built: list[_Built]) -> str:
    """What the tags mean, only where the page uses them."""
    kinds = {s.rs.source.kind for b in built for s in b.sec.sets if not is_measured(s.rs)}
    if any(b.sec.checks for b in built):
        kinds.add("projected")
    text = {
        "published": 'Figures tagged <span class="tag published">published</span> come from the cited source.',
        "projected": 'Figures tagged <span class="tag projected">projected</span> are roofline estimates from '
        "spec sheets, not measurements.",
    }
    return " ".join(text[k] for k in sorted(kinds) if k in text)


def runs_html(lines: list[RunLine]) -> str:
    """The runs the page read (analysis/runs.py): used, and left out with why, folded."""
    if not lines:
        return ""
    used = sum(r.used for r in lines)
    tables = [table_html(t) for t in runs_tables(lines)]
    summary = f"Runs behind these figures: {used} used, {len(lines) - used} left out (with why)"
    return f'<div id="runs">{_fold(summary, tables)}</div>'


def charts_missing() -> str | None:
    """What this machine lacks to draw the page's charts (matplotlib, of the `report` extra), for a caller's
    one-line message; None where it has it. Asked without importing matplotlib: this module is imported
    by every command (versus -> pair_view for its tables), and a base install has no matplotlib."""
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a broken install, or one a test hid
        found = False
    return None if found else "matplotlib"


def render_html(sections: list[Section], title: str = "llmbench report", answers: list[AnswerBlock] | None = None,
                lead: str = "", after: str = "", more: dict[str, list[Table]] | None = None,
                runs: list[RunLine] | None = None) -> str:
    """The page: `lead` first, then `answers` (default: the answer of each measured GPU pair of the
    sections) with the runs read, used and left out (`runs`, folded), `after` (HTML: published and
    projected evidence, such as the GPU-pair answer of publishing/publish.py), the projection check, the
    contents and the sections (with `more` tables by section title); the sections of published reference
    sets alone come last, folded together. Without matplotlib (`charts_missing`): ModuleNotFoundError
    naming it, before anything is drawn."""
    missing = charts_missing()
    if missing:
        raise ModuleNotFoundError(f"No module named {missing!r} (the charts need it: {REPORT_EXTRA})", name=missing)
    built = _build(sections, more or {})
    if answers is None:
        answers = pair_answers([(b.sec.title, b.sec.cmp) for b in built if b.sec.cmp]) or [_sets_answer(built)]
    projection = projection_html(built)
    own = [b for b in built if any(is_measured(s.rs) for s in b.sec.sets)]
    refs = [section_html(b) for b in built if b not in own]  # published reference sets: one fold, after
    body = "\n".join([lead, answer_html(answers, built, runs_html(runs or [])), after, projection,
                      toc_html(built, bool(projection)), *map(section_html, own),
                      _fold(f"Published reference sets ({len(refs)})", refs) if refs else ""])
    newest = max((r.rs.created_at for s in sections for r in s.sets), default="-")
    return _escape_page(f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{CSS}</style></head>
<body><h1>{html.escape(title)}</h1>
<p class="caption">Generated by llmbench {__version__} from result sets
(newest created {html.escape(newest)}). {_tags_line(built)}</p>
{body}
</body></html>
""")


def _escape_page(page: str) -> str:
    """The page with every control and format character from a label, a param or a reason written as its
    escape (report/escapes.py, as the terminal writes them): the markup llmbench writes holds none but
    newlines, so one pass over the page reaches every table cell, title and chart label."""
    from llmbench.report.escapes import escape_controls

    return escape_controls(page)
