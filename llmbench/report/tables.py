"""One table model, four outputs: Markdown, CSV and JSON here, the terminal (rich) in terminal.py.

Views (views.py, specs_view.py) build `Table`s; this module and terminal.py only format them, so every
command prints every format the same way.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any

from llmbench.analysis.compare import Ratio
from llmbench.errors import choices_hint

FORMATS: tuple[str, ...] = ("markdown", "csv", "json")  # render's; terminal.to_terminal_text the fourth
MISSING = "—"


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    caption: str = ""
    notes: list[str] = field(default_factory=list)  # printed above the table: warnings, sources
    empty: str = ""  # what an empty table means ('every case ran ok'): shown as "(none: ...)"
    lead: list[str] = field(default_factory=list)  # paragraphs between the title and the rows: the answer
    key_columns: int = 1  # leading columns that name a row: its heading where a narrow terminal stacks it
    styles: dict[str, str] = field(default_factory=dict)  # terminal only: a cell with this exact text, its style

    @property
    def is_text(self) -> bool:
        """A block of text under a title (no columns): its notes and lead paragraphs are all it holds."""
        return not self.columns

    @property
    def none_text(self) -> str:
        """The one line an empty table prints instead of its header."""
        return f"(none: {self.empty})" if self.empty else "(none)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "notes": self.notes,
            **({"lead": self.lead} if self.lead else {}),
            "caption": self.caption,
            "rows": [dict(zip(self.columns, r, strict=False)) for r in self.rows],
        }


def fmt_num(v: float | None) -> str:
    """Readable magnitude-dependent precision: 27,911 / 312.5 / 4.80 / 0.0123."""
    if v is None:
        return MISSING
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def fmt_ratio(value: float, ci: tuple[float, float] | None) -> str:
    """'1.23x [1.10, 1.35]'; a ratio of a NaN or infinite value as 'nan', with no interval."""
    if not math.isfinite(value):
        return str(value)
    text = f"{value:.2f}x"
    return f"{text} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci and all(map(math.isfinite, ci)) else text


def ratio_text(r: Ratio | None) -> str:
    """A comparison's ratio as `fmt_ratio` writes it; MISSING where there is none."""
    return fmt_ratio(r.value, r.ci) if r else MISSING


def fmt_pct(v: float | None) -> str:
    return MISSING if v is None else f"{v:+.1f}%"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(tables: list[Table], title: str | None = None) -> str:
    parts = [f"# {title}\n"] if title else []
    for t in tables:
        parts += [f"## {t.title}\n"] if t.title else []
        parts += [f"> {n}\n" for n in t.notes]
        parts += [f"{p}\n" for p in t.lead]
        if t.rows:
            parts.append("| " + " | ".join(_md_cell(c) for c in t.columns) + " |")
            parts.append("|" + "|".join("---" for _ in t.columns) + "|")
            parts += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in t.rows]
            parts.append("")
        elif not t.is_text:
            parts.append(f"{t.none_text}\n")
        if t.caption:
            parts.append(f"{t.caption}\n")
    return "\n".join(parts).rstrip() + "\n"


def to_csv(tables: list[Table]) -> str:
    """Each table as a CSV block: a '# title' line, its header, its rows, a blank line."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for t in tables:
        w.writerow([f"# {t.title}"])
        for n in [*t.notes, *t.lead]:
            w.writerow([f"# {n}"])
        if t.is_text:
            w.writerow([])
            continue
        w.writerow(t.columns)
        w.writerows(t.rows)
        w.writerow([])
    return buf.getvalue()


def render(
    tables: list[Table], fmt: str, *, data: dict[str, Any] | None = None, title: str | None = None
) -> str:
    """Text of `tables` in `fmt`; JSON prints `data` (the structured object) where given, else the tables."""
    if fmt == "markdown":
        return to_markdown(tables, title)
    if fmt == "csv":
        return to_csv(tables)
    if fmt == "json":
        return json.dumps(data if data is not None else [t.to_dict() for t in tables], indent=1) + "\n"
    raise ValueError(f"unknown format {fmt!r}; {choices_hint(fmt, FORMATS)}")
