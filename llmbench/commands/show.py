"""`llmbench show`: one result set as a table."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from llmbench import api
from llmbench.commands.common import console
from llmbench.report.terminal import flag_summary, print_terminal, result_table, warning_summary
from llmbench.report.views import corrections_table, seed_tables


def show(
    result: Path = typer.Argument(..., help="A result-set JSON file (a folder stands for its newest result set)."),
    all_metrics: bool = typer.Option(False, "--all", metavar="", help="Every metric, flag, warning and "
                                     "correction, not only the headline ones and a summary of the rest."),
) -> None:
    """Show a result set as a table (and what its sweeps answer: watts for 80/90/95% of the best speed of a
    power-limit sweep, the batch where host_bound stops being host-bound)."""
    ref = api.newest_set(result)
    rs = ref.rs
    # the table, the sweeps' answers, then what was changed in the file after its run
    tables = [result_table(rs, all_metrics=all_metrics), *seed_tables(ref), corrections_table([ref], every=all_metrics)]
    print_terminal([t for t in tables if t is not None], console)
    for w in warning_summary(rs.warnings, every=all_metrics) + flag_summary(rs, every=all_metrics):
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")


def register(app: typer.Typer) -> None:
    app.command("show")(show)
