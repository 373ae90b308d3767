"""`llmbench list`: suites, scenarios, precisions, engines, metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench import api
from llmbench.commands.common import SUITES_OPT, console
from llmbench.errors import UserError, choices_hint
from llmbench.report.tables import Table
from llmbench.report.terminal import print_terminal


def list_(
    what: str = typer.Argument("all", help="suites, scenarios, precisions, engines, metrics or all"),
    suites: Optional[list[Path]] = SUITES_OPT,
) -> None:
    """List suites (and where each comes from), scenarios, precisions, engines and metrics (with units
    and which way is better)."""
    sections = api.listings(suites or [])
    if what != "all" and what not in sections:
        raise UserError(f"unknown list {what!r}; {choices_hint(what, [*sections, 'all'])}")
    print_terminal([Table(name, [name.removesuffix("s"), "file" if name == "suites" else "description"],
                          [list(row) for row in sections[name]()], empty="none here")
                    for name in (sections if what == "all" else [what])], console)


def register(app: typer.Typer) -> None:
    app.command("list")(list_)
