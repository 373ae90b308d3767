"""What the commands share: the consoles, the output formats and how tables reach a file or the
terminal."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from llmbench.errors import UserError
from llmbench.report.tables import Table, render
from llmbench.report.terminal import print_terminal

console = Console()  # width from the terminal; plain text (no colour codes) through a pipe
err_console = Console(stderr=True)

INTERRUPTED = "interrupted: finished cases are saved; run again with --resume to continue"


class Fmt(str, Enum):
    terminal = "terminal"
    markdown = "markdown"
    csv = "csv"
    json = "json"


FILES_ARG = typer.Argument(..., help="Result set JSON files (a folder stands for its newest result set, with the "
                           "rest of its repeat group; a bundle .tar.gz from oneshot for the result sets in it).")
FORMAT_OPT = typer.Option(Fmt.terminal, "--format", "-f", help="Output format.")
OUT_OPT = typer.Option(None, "--out", "-o", help="Write to this file instead of standard output.")
POOL_OPT = typer.Option(
    False, "--pool", metavar="", help="Pool every measured result set of the same GPU and suite into one side "
    "(runs from several leases): its figure is the median of the runs' medians and its ratios' intervals "
    "include the between-run spread. The passes of one `run --repeat` group are pooled without it.")


def _writable_parent(path: Path, option: str) -> None:
    """The nearest existing folder above `path` must be a folder we may write into."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{option} {str(path)!r}: {str(parent)!r} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{option} {str(path)!r}: the folder {str(parent)!r} is not writable")


def check_out_file(out: Path | None, option: str = "--out") -> None:
    """Refuse an --out FILE that cannot be written before any work is done (exit 2, nothing written)."""
    if out is None:
        return
    if out.is_dir():
        raise UserError(f"{option} {str(out)!r} is a folder; give a file name, e.g. {str(out / 'out.txt')!r}")
    if out.exists() and not os.access(out, os.W_OK):
        raise UserError(f"{option} {str(out)!r} exists and is not writable")
    _writable_parent(out, option)


def check_out_dir(out: Path, option: str = "--out") -> None:
    """Refuse an --out FOLDER that is a file or cannot be created or written (exit 2, nothing written)."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{option} {str(out)!r} is a file; it must be a folder (result sets go to OUT/<gpu-slug>/)")
    if out.is_dir():
        if not os.access(out, os.W_OK | os.X_OK):
            raise UserError(f"{option} {str(out)!r}: the folder is not writable")
        return
    _writable_parent(out, option)


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
