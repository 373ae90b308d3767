"""The llmbench command line: run, list, show, doctor (and compare, report, specs from report/)."""

from __future__ import annotations

import signal
import sys
import warnings

import typer
from rich.markup import escape

from llmbench import __version__
from llmbench.commands import ALL
from llmbench.commands.common import INTERRUPTED, console, err_console
from llmbench.errors import NotSaved, UserError
from llmbench.registry import PluginError
from llmbench.results import ReadWarning

app = typer.Typer(  # its help is the root callback's docstring (with the exit codes)
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        console.print(f"llmbench {__version__}")
        raise typer.Exit()


HELP = ("Benchmark LLM workloads across GPUs, precisions and engines, and compare the results.\n\n"
        "Exit codes: 0 every case ok or skipped; 1 a case failed, timed out or was killed (oom counts as a result "
        "unless run --strict); 2 bad input (one message, nothing written); 3 results could not be written (a full "
        "disk; the message says where they went); 130 interrupted (finished cases are saved).")


@app.callback(help=HELP)
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
        metavar="", help="Print the version."),
) -> None:
    """The root of the command line; its help text (HELP) lists the exit codes."""


for _command in ALL:
    _command.register(app)


def _terminate_as_interrupt(signum: int, frame: object) -> None:
    """SIGTERM (a cloud instance being pre-empted, `timeout`, a job scheduler) ends a run the way Ctrl-C
    does: the case in flight is killed with its process group and the finished cases stay saved."""
    raise KeyboardInterrupt


_show_warning = warnings.showwarning


def _warn_in_one_line(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
    """A result set's read warning (results.ReadWarning) as one calm line on stderr; others as Python shows them."""
    if not issubclass(category, ReadWarning):
        _show_warning(message, category, *args, **kwargs)  # type: ignore[arg-type]
        return
    err_console.print(f"[yellow]warning:[/yellow] {escape(' '.join(str(message).split()))}", highlight=False,
                      soft_wrap=True)


def main() -> None:
    on_term, show = signal.signal(signal.SIGTERM, _terminate_as_interrupt), warnings.showwarning
    warnings.showwarning = _warn_in_one_line
    try:
        app()
    except (UserError, PluginError, NotSaved) as e:
        text = " ".join(str(e).split())  # one line, never wrapped: a script can grep it
        err_console.print(f"[red]error:[/red] {escape(text)}", highlight=False, soft_wrap=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        err_console.print(INTERRUPTED)
        sys.exit(130)
    finally:  # main() called in a process that goes on (a test, a notebook) leaves it as it was
        signal.signal(signal.SIGTERM, on_term)
        warnings.showwarning = show
