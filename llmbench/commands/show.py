"""`llmbench show`: one result set as a table."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from llmbench.commands.common import console
from llmbench.errors import UserError
from llmbench.report.terminal import flags_of, result_table
from llmbench.results import load


def show(
    result: Path = typer.Argument(..., help="A result-set JSON file."),
    all_metrics: bool = typer.Option(False, "--all", help="Every metric, not only the headline ones."),
) -> None:
    """Show a result set as a table."""
    if not result.is_file():
        raise UserError(f"result set {str(result)!r} does not exist")
    try:
        rs = load(result)
    except ValueError as e:
        raise UserError(str(e)) from None
    console.print(result_table(rs, all_metrics=all_metrics))
    for w in rs.warnings + flags_of(rs):
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")


def register(app: typer.Typer) -> None:
    app.command("show")(show)
