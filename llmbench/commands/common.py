"""What the commands share: the consoles, the output formats and how tables reach a file or the
terminal."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from llmbench.api import Plan, duration_text
from llmbench.errors import UserError
from llmbench.redact import redact
from llmbench.report.tables import Table, render
from llmbench.report.terminal import SafeConsole, print_terminal, terminal_safe, to_terminal_text

console = SafeConsole()  # width from the terminal; plain text (no colour codes) through a pipe
err_console = SafeConsole(stderr=True)

INTERRUPTED = "interrupted: finished cases are saved; run again with --resume to continue"


class Fmt(str, Enum):
    terminal = "terminal"
    markdown = "markdown"
    csv = "csv"
    json = "json"


FILES_ARG = typer.Argument(..., help="Result set JSON files (a folder stands for every result set in it, and for "
                           "results/<gpu-slug>/ the spread runs in results/spread/<gpu-slug>/; a bundle .tar.gz "
                           "from oneshot for the result sets in it).")
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
    False, "--pool", metavar="", help="Sets of one GPU: pool every measured result set of the same suite into one "
    "side (runs from several machines): its figure is the median of the runs' medians and its ratios' intervals "
    "include the between-run spread. The passes of one `run --repeat` group are pooled without it. Sets of two "
    "GPUs or more are always pooled, each GPU one side, by the one rule (a case's runs of its newest code path).")


_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?$")


def parse_budget(text: str) -> float:
    """'45m', '1h30m', '900s' or plain seconds ('900') -> seconds: one reading for run and oneshot. A bare
    number under a minute is said once to be seconds (a newcomer's `--budget 15` means 15 s)."""
    m = _DURATION.match(text.strip().lower())
    if not text.strip() or m is None or not any(m.groups()):
        raise UserError(f"--budget {text!r}: give a duration such as 45m, 1h30m, 900s or 900 (seconds)")
    h, mins, s = (float(g) if g else 0.0 for g in m.groups())
    seconds = h * 3600 + mins * 60 + s
    if seconds <= 0:
        raise UserError(f"--budget {text!r}: the budget must be more than 0 seconds")
    if text.strip().replace(".", "", 1).isdigit() and seconds < 60:
        err_console.print(f"[yellow]warning:[/yellow] --budget {text.strip()} is {seconds:g} s; write "
                          f"{text.strip()}m for minutes", highlight=False)
    return seconds


def over_slots(plan: Plan) -> str:
    """' over 2 GPUs side by side (case quotes sum to 21.0 min; ...)' where the plan's run lays its cases
    over several slots; '' on one. The makespan keeps each case's timed part apart from its neighbours'
    set-ups and timed parts, as the run does (measure/quiet.py); a quote with no timed part on record
    (a case last measured before they were) counts as all set-up, which waits for no one: said."""
    slots = plan.schedule.slots if plan.schedule else 1
    if slots < 2:
        return ""
    quoted = [t for t in plan.times if t.source != "skipped"]
    unsplit = sum(not t.timed_s for t in quoted)
    return (f" over {slots} GPUs side by side (case quotes sum to {sum(t.seconds for t in plan.times) / 60:.1f} min; "
            "timed parts kept apart from set-ups and from each other, as the run keeps them"
            + (f"; {unsplit} of {len(quoted)} case(s) with no timed part on record, counted as all set-up"
               if unsplit else "") + ")")


def budget_fit_text(plan: Plan, budget_s: float | None) -> str:
    """One line on whether the plan fits --budget: '' when it does (or no budget was given), else how
    many cases, and how much of their quoted time, a run would leave for --resume."""
    if budget_s is None:
        return ""
    left = plan.left_for_resume(budget_s)
    budget = f"--budget {duration_text(budget_s)}"
    if not left:
        return f"fits {budget}"
    measured = sum(t.source != "skipped" for t in plan.times)
    return (f"does not fit {budget}: {len(left)} of {measured} case(s) (about "
            f"{duration_text(sum(t.seconds for t in left))}) left for --resume")


def write_out(path: Path, text: str, option: str = "--out") -> None:
    """Write a command's output file, credentials hidden (llmbench.redact: a result set written before
    it hid them); a failure (a disk that filled, a folder removed meanwhile) is one line naming the option
    and the reason, not a traceback."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(redact(text), encoding="utf-8")
    except OSError as e:
        raise UserError(f"{option} {str(path)!r}: cannot write it ({e.strerror or e})") from None


def emit(tables: list[Table], fmt: Fmt, out: Path | None, data: dict[str, Any] | None = None) -> None:
    """Print `tables` (terminal: with colour) or write them to `out` in the chosen format."""
    if out is None and fmt is Fmt.terminal:
        print_terminal(tables, SafeConsole())
        return
    text = to_terminal_text(tables) if fmt is Fmt.terminal else render(tables, fmt.value, data=data)
    if out is None:
        typer.echo(terminal_safe(text), nl=False)
    else:
        write_out(out, text)
        typer.echo(f"wrote {out}", err=True)
