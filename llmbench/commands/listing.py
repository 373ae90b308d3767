"""`llmbench list`: suites, scenarios, precisions, engines, metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.commands.common import SUITES_OPT, console
from llmbench.errors import UserError
from llmbench.report.tables import Table
from llmbench.report.terminal import print_terminal
from llmbench.suite import PACKAGED, SuiteFile, available_suites, replaced_text


def suite_row(s: SuiteFile) -> tuple[str, str]:
    """A suite's name and where it comes from: shipped with llmbench, or the user's file (and what
    it replaces)."""
    if s.origin == PACKAGED:
        return s.name, "packaged"
    instead = f" (replaces {replaced_text(s.replaces)})" if s.replaces else ""
    return s.name, f"{s.origin}: {s.path}{instead}"


def list_(
    what: str = typer.Argument("all", help="suites, scenarios, precisions, engines, metrics or all"),
    suites: Optional[list[Path]] = SUITES_OPT,
) -> None:
    """List suites (and where each comes from), scenarios, precisions, engines and metrics (with units
    and which way is better)."""
    from llmbench.engines.base import ENGINES
    from llmbench.metrics import METRICS
    from llmbench.precision import PRECISIONS
    from llmbench.scenarios.base import SCENARIOS

    sections = {
        "suites": lambda: [suite_row(s) for s in available_suites(suites or []).values()],
        "scenarios": lambda: [(n, c.description) for n, c in SCENARIOS],
        "precisions": lambda: [(p.name, p.description) for p in PRECISIONS.values()],
        "engines": lambda: [(n, c.summary() + (f"  [{c.missing_reason()}]" if c.missing_reason() else ""))
                            for n, c in ENGINES],
        "metrics": lambda: [(m.name, f"{m.unit}, {m.better} is better: {m.description}"
                             if m.better != "neither" else f"{m.unit}: {m.description}") for m in METRICS.values()],
    }
    if what != "all" and what not in sections:
        raise UserError(f"unknown list {what!r}; valid: {', '.join(sections)}, all")
    print_terminal([Table(name, [name.removesuffix("s"), "file" if name == "suites" else "description"],
                          [list(row) for row in sections[name]()], empty="none here")
                    for name in (sections if what == "all" else [what])], console)


def register(app: typer.Typer) -> None:
    app.command("list")(list_)
