"""`llmbench report`: one self-contained static HTML page (inline CSS, inline SVG charts, no scripts,
no external URLs; a Content-Security-Policy forbids any load, so a browser would complain if one slipped in).

The page reads top down: the answer first (per GPU pair and suite, the headline ratios with their
intervals and noise floor, and the projection check), a table of contents, then a section per
comparison or result set with its charts before its tables; tables longer than a screen are folded.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from llmbench import __version__
from llmbench.report.answer import (
    ProjectionCheck,
    headline_table,
    lead_sentence,
    projection_checks,
    projection_table,
)
from llmbench.report.charts import scenario_charts, speedup_charts
from llmbench.report.compare import Comparison, compare
from llmbench.report.inputs import SetRef
from llmbench.report.labels import is_measured
from llmbench.report.plots import Chart, pareto_charts, timeline_charts
from llmbench.report.tables import Table
from llmbench.report.views import comparison_tables, set_tables, validation_tables

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
FOLD_ROWS = 8  # tables with more rows start folded
CSS = """
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5rem auto;max-width:1100px;
color:#1b1f24;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.3rem}h2{margin-top:2.2rem;border-bottom:1px solid #d0d7de}
h3{margin-top:1.4rem}h4{margin:1rem 0 .3rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:13px}th,td{border:1px solid #d0d7de;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f6f8fa}tr:nth-child(even) td{background:#fbfcfd}
.note{background:#fff8c5;border-left:4px solid #d4a72c;padding:.4rem .7rem;margin:.4rem 0}
.caption{color:#57606a;font-size:13px}.tag{border-radius:4px;padding:0 5px;font-size:12px;font-weight:600}
.tag.published{background:#ddf4ff;color:#0550ae}.tag.projected{background:#ffebe9;color:#a40e26}
figure{margin:1rem 0}figure svg{max-width:100%;height:auto}.empty{color:#57606a}
nav.toc{background:#f6f8fa;border:1px solid #d0d7de;padding:.5rem 1rem;margin:1rem 0}
nav.toc ol{margin:.2rem 0;padding-left:1.4rem}nav.toc h2{border:0;margin:.2rem 0;font-size:1.1rem}
details{margin:.6rem 0}summary{cursor:pointer;font-weight:600}
.answer{border:2px solid #1f4e9c;border-radius:6px;padding:.2rem 1rem .8rem;margin:1rem 0}
.answer h2{margin-top:.6rem}.lead{font-size:16px;font-weight:600;margin:.3rem 0}
"""


@dataclass
class Section:
    """One group of result sets shown together (a comparison, or a single set)."""

    title: str
    sets: list[SetRef]
    baseline: int = 0
    metrics: frozenset[str] | None = None  # only these metrics (None: all)
    extra_tables: Callable[[Comparison], list[Table]] | None = None  # more tables of a comparison (costs)
    tables: list[Table] = field(default_factory=list)  # more tables, already built (engines side by side)


@dataclass
class _Built:
    """A section with what its parts share: the comparison and the projection checks."""

    sec: Section
    anchor: str
    cmp: Comparison | None = None
    checks: list[ProjectionCheck] = field(default_factory=list)
    no_check: list[str] = field(default_factory=list)


def _cell(text: str) -> str:
    out = html.escape(text)
    for kind in ("published", "projected"):
        out = out.replace(f"[{kind}]", f'<span class="tag {kind}">{kind}</span>')
    return out


def _table_body(t: Table) -> str:
    parts = [f'<div class="note">{_cell(n)}</div>' for n in t.notes]
    if t.rows:
        head = "".join(f"<th>{_cell(c)}</th>" for c in t.columns)
        body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r) + "</tr>" for r in t.rows)
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    else:
        parts.append(f'<p class="empty">{_cell(t.none_text)}</p>')
    if t.caption:
        parts.append(f'<p class="caption">{_cell(t.caption)}</p>')
    return "\n".join(parts)


def table_html(t: Table, level: int = 4) -> str:
    """A table under its title; one longer than FOLD_ROWS rows is folded (<details>, no script)."""
    if len(t.rows) > FOLD_ROWS:
        return (f"<details><summary>{_cell(t.title)} ({len(t.rows)} rows)</summary>\n"
                f"{_table_body(t)}\n</details>")
    return f"<h{level}>{_cell(t.title)}</h{level}>\n{_table_body(t)}"


def chart_html(c: Chart) -> str:
    return f'<figure aria-label="{html.escape(c.title)}">{c.svg}</figure>'


def _anchor(title: str, k: int) -> str:
    return f"s{k}-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40]


def _build(sections: list[Section]) -> list[_Built]:
    out = []
    for k, sec in enumerate(sections, 1):
        b = _Built(sec, _anchor(sec.title, k))
        if len(sec.sets) > 1:
            b.cmp = compare(sec.sets, sec.baseline, sec.metrics)
            b.checks, b.no_check = projection_checks(sec.sets, sec.baseline)
        out.append(b)
    return out


def _charts(b: _Built) -> list[Chart]:
    sets = b.sec.sets
    charts = speedup_charts(b.cmp) if b.cmp else []
    for scenario in dict.fromkeys(c.scenario for s in sets for c in s.rs.cases):
        charts += scenario_charts(sets, scenario)
    return charts + timeline_charts(sets) + pareto_charts(sets)


def section_html(b: _Built) -> str:
    """Charts first (the questions), then the tables (the evidence), long ones folded."""
    sec = b.sec
    tables = comparison_tables(b.cmp) if b.cmp else set_tables(sec.sets[0])
    if b.cmp and sec.extra_tables:
        tables += sec.extra_tables(b.cmp)
    for c in b.checks:
        tables += [t for t in validation_tables(c.validation, c.projected, c.measured)]
    tables = list(sec.tables) + tables
    charts = _charts(b)
    parts = [f'<section id="{b.anchor}"><h2>{_cell(sec.title)}</h2>']
    if charts:
        parts += ["<h3>Charts</h3>", *map(chart_html, charts)]
    parts += ["<h3>Tables</h3>", *(table_html(t) for t in tables), "</section>"]
    return "\n".join(parts)


def answer_html(built: list[_Built]) -> str:
    """Per comparison: its headline ratios and the projection check; then the single-GPU sections."""
    parts = ['<section id="answer" class="answer"><h2>The answer</h2>']
    measured = [b for b in built if b.cmp and all(is_measured(s.rs) for s in b.sec.sets)]
    for b in measured:
        assert b.cmp is not None
        parts.append(f'<h3><a href="#{b.anchor}">{_cell(b.sec.title)}</a></h3>')
        parts.append(f'<p class="lead">{_cell(lead_sentence(b.cmp))}</p>')
        parts.append(_table_body(headline_table(b.cmp, "")))
        if b.checks:
            parts.append("<h4>Projection check</h4>")
            parts.append(_table_body(projection_table(b.checks, "")))
        parts += [f'<p class="caption">{_cell(w)}</p>' for w in b.no_check]
    others = [b for b in built if b.cmp and b not in measured]
    if others:
        items = "".join(f'<li><a href="#{b.anchor}">{_cell(b.sec.title)}</a></li>' for b in others)
        parts.append(f"<h3>Comparisons with figures not measured here</h3><ul>{items}</ul>")
    single = [b for b in built if not b.cmp]
    if single:
        items = "".join(
            f'<li><a href="#{b.anchor}">{_cell(b.sec.title)}</a>: {_ok_text(b.sec.sets[0])}</li>' for b in single
        )
        parts.append(f"<h3>Measured on one GPU only (no ratio)</h3><ul>{items}</ul>")
    if not built:
        parts.append('<p class="empty">No result sets.</p>')
    parts.append("</section>")
    return "\n".join(parts)


def _ok_text(ref: SetRef) -> str:
    ok = sum(c.status == "ok" for c in ref.rs.cases)
    return html.escape(f"{ok} of {len(ref.rs.cases)} cases ok")


def toc_html(built: list[_Built]) -> str:
    items = "".join(f'<li><a href="#{b.anchor}">{_cell(b.sec.title)}</a></li>' for b in built)
    return (f'<nav class="toc"><h2>Contents</h2><ol><li><a href="#answer">The answer</a></li>{items}</ol>'
            "</nav>")


def _tags_line(built: list[_Built]) -> str:
    """What the tags mean, only where the page uses them."""
    kinds = {s.rs.source.kind for b in built for s in b.sec.sets if not is_measured(s.rs)}
    if any(b.checks for b in built):
        kinds.add("projected")
    text = {
        "published": 'Figures tagged <span class="tag published">published</span> come from the cited source.',
        "projected": 'Figures tagged <span class="tag projected">projected</span> are roofline estimates from '
        "spec sheets, not measurements.",
    }
    return " ".join(text[k] for k in sorted(kinds) if k in text)


def render_html(sections: list[Section], title: str = "llmbench report", lead: str = "") -> str:
    """The page; `lead` is HTML put before everything else (the H100-vs-A100 answer of publish.py)."""
    built = _build(sections)
    body = "\n".join([lead, answer_html(built), toc_html(built), *map(section_html, built)])
    newest = max((r.rs.created_at for s in sections for r in s.sets), default="-")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{CSS}</style></head>
<body><h1>{html.escape(title)}</h1>
<p class="caption">Generated by llmbench {__version__} from result sets
(newest created {html.escape(newest)}). {_tags_line(built)}</p>
{body}
</body></html>
"""
