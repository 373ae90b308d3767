"""`llmbench show`: one result set as a table."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from llmbench.commands.common import console
from llmbench.errors import UserError
from llmbench.report.inputs import load_checked, newest_in
from llmbench.report.terminal import flag_summary, result_table


def show(
    result: Path = typer.Argument(..., help="A result-set JSON file (a folder stands for its newest result set)."),
    all_metrics: bool = typer.Option(False, "--all", metavar="", help="Every metric and every flag, not only "
                                     "the headline ones and a summary of the flags."),
) -> None:
    """Show a result set as a table."""
    if not result.exists():
        raise UserError(f"result set {str(result)!r} does not exist")
    rs = load_checked(newest_in(result) if result.is_dir() else result)
    console.print(result_table(rs, all_metrics=all_metrics))
    for w in rs.warnings + flag_summary(rs, every=all_metrics):
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")


def register(app: typer.Typer) -> None:
    app.command("show")(show)
