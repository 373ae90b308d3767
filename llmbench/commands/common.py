"""What the commands share: the consoles, the output formats and how tables reach a file or the
terminal."""

from __future__ import annotations

import os
import tempfile
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
SUITES_OPT = typer.Option(
    None, "--suites", metavar="DIR", help="A folder of your own suite files, searched before "
    "LLMBENCH_SUITES, ./suites, ./scenarios and the packaged suites (a file of a packaged suite's name "
    "replaces it). Repeatable.")
CEILINGS_OPT = typer.Option(
    None, "--ceilings", metavar="PATH", help="Measured ceilings for the roofline figures (generate's "
    "roofline_efficiency, linear_fp8's roof): a ceilings result set, or a results folder whose newest "
    "<gpu-slug>/ceilings-*.json is used. Default: LLMBENCH_CEILINGS if set, else --out (oneshot: then the "
    "checkout's committed results/). None found: the datasheet. Each case records the set it used.")
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
    _can_create_in(parent, path, option)


def _can_create_in(folder: Path, path: Path, option: str) -> None:
    """Create and remove a file in `folder`: the one test that holds for root, read-only mounts and
    pseudo-filesystems such as /proc alike (where os.access says yes to root, and writing fails)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise UserError(f"{option} {str(path)!r}: cannot write in {str(folder)!r} ({e.strerror or e})") from None


def write_out(path: Path, text: str, option: str = "--out") -> None:
    """Write a command's output file; a failure (a disk that filled, a folder removed meanwhile) is one
    line naming the option and the reason, not a traceback."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"{option} {str(path)!r}: cannot write it ({e.strerror or e})") from None


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
        _can_create_in(out, out, option)
        return
    _writable_parent(out, option)


def ceilings_env(ceilings: Path | None, out: Path, also: Path | None = None) -> dict[str, str]:
    """The case processes' LLMBENCH_CEILINGS: --ceilings, else the user's own LLMBENCH_CEILINGS, else
    the run's results folder (then `also`, where it exists: oneshot's committed reference sets), as
    absolute paths (a case reads the same set from any working directory)."""
    from llmbench.hardware.roofline import CEILINGS_ENV

    if ceilings is not None:
        if not ceilings.exists():
            raise UserError(f"--ceilings {str(ceilings)!r} does not exist; give a ceilings result set (.json) or "
                            "a results folder (OUT of an earlier run, holding <gpu-slug>/ceilings-*.json)")
        if ceilings.is_file():
            from llmbench.results import load

            try:
                load(ceilings)
            except (OSError, ValueError) as e:  # not JSON, not a result set: one line, not a traceback
                raise UserError(f"--ceilings {str(ceilings)!r} is not a result set: {e}".splitlines()[0]) from None
        return {CEILINGS_ENV: str(ceilings.resolve())}
    if os.environ.get(CEILINGS_ENV):
        return {}
    places = [out, *([also] if also is not None and also.is_dir() else [])]
    return {CEILINGS_ENV: os.pathsep.join(str(p.resolve()) for p in places)}


def emit(tables: list[Table], fmt: Fmt, out: Path | None, data: dict[str, Any] | None = None) -> None:
    """Print `tables` (terminal: with colour) or write them to `out` in the chosen format."""
    if out is None and fmt is Fmt.terminal:
        print_terminal(tables, Console())
        return
    text = render(tables, fmt.value, data=data)
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_out(out, text)
        typer.echo(f"wrote {out}", err=True)
