"""What the commands share: the consoles, the output formats and how tables reach a file or the
terminal."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from llmbench.report.tables import Table, render
from llmbench.report.terminal import print_terminal

console = Console()
err_console = Console(stderr=True)

INTERRUPTED = "interrupted: finished cases are saved; run again with --resume to continue"


class Fmt(str, Enum):
    terminal = "terminal"
    markdown = "markdown"
    csv = "csv"
    json = "json"


FILES_ARG = typer.Argument(..., help="Result set JSON files (a folder stands for its newest result set).")
FORMAT_OPT = typer.Option(Fmt.terminal, "--format", "-f", help="Output format.")
OUT_OPT = typer.Option(None, "--out", "-o", help="Write to this file instead of standard output.")


def emit(tables: list[Table], fmt: Fmt, out: Path | None, data: dict[str, Any] | None = None) -> None:
    """Print `tables` (terminal: with colour) or write them to `out` in the chosen format."""
    if out is None and fmt is Fmt.terminal:
        print_terminal(tables, Console())
        return
    text = render(tables, fmt.value, data=data)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}", err=True)
