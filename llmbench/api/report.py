"""The HTML report: `report_html` (what `llmbench report` writes) and `sets_html` (the page a oneshot
bundle carries)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from llmbench.analysis.compare import headline_metric_names
from llmbench.analysis.cost import DEFAULT_RUN_TOKENS
from llmbench.analysis.inputs import SetRef, display_names, resolve_baseline
from llmbench.analysis.pages import section
from llmbench.analysis.runs import load_sets
from llmbench.api.comparison import price_sets
from llmbench.errors import UserError
from llmbench.report.cost_view import cost_table
from llmbench.results import load


def report_html(files: Sequence[Path], *, baseline: str | None = None, title: str = "llmbench report",
                pool: bool = False, all_metrics: bool = False, prices: Sequence[str] = (),
                prices_file: Path | None = None, run_tokens: float = DEFAULT_RUN_TOKENS) -> str:
    """One self-contained page for a result set or a comparison of several (costs where prices are given).
    Needs matplotlib (llmbench[report]): without it, a UserError naming the install."""
    sets = load_sets(list(files), pool=pool)
    priced = price_sets(sets, prices, prices_file)
    if priced is not None and len(sets) < 2:
        raise UserError("--price/--prices need two or more result sets (costs are shown beside a comparison)")
    try:  # plots need matplotlib, an optional extra: the other commands work without it
        from llmbench.report.html import render_html
    except ModuleNotFoundError as e:
        raise UserError(
            f"llmbench report needs {e.name}, which is not installed: pip install 'llmbench[report]'"
        ) from None
    sec = section(
        ", ".join(dict.fromkeys(s.rs.suite for s in sets)) + ": " + " vs ".join(s.label for s in display_names(sets)),
        sets,
        resolve_baseline(sets, baseline),
        None if all_metrics else frozenset(headline_metric_names()),
    )
    costs = {sec.title: [cost_table(sec.cmp, priced, run_tokens)]} if priced is not None and sec.cmp else {}
    return render_html([sec], title, more=costs)


def sets_html(paths: list[Path], title: str) -> tuple[str | None, str | None]:
    """The HTML report of the result sets, one section each; None and why, where it cannot be drawn."""
    try:
        from llmbench.report.html import render_html

        headline = frozenset(headline_metric_names())  # as `llmbench report` shows by default
        sections = []
        for p in paths:
            rs = load(p)
            sections.append(section(f"{rs.suite} on {rs.env.get('gpu', {}).get('name', rs.gpu_slug)}",
                                    [SetRef(name=rs.gpu_slug, rs=rs, stem=p.stem)], 0, headline))
        return render_html(sections, title), None
    except Exception as e:  # a report problem must not cost the bundle its result sets
        return None, f"{type(e).__name__}: {e}"
