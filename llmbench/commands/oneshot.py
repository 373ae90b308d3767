"""`llmbench oneshot`: everything a freshly rented GPU machine should do, in one command — check the
stack (doctor), run the headline suite (or others) within a wall-clock budget, and leave one bundle
`<gpu-slug>-<UTC>.tar.gz` with the result sets, the HTML report, the log and the environment. An
interrupt (Ctrl-C, SIGTERM from a pre-empted spot instance or `timeout`) writes the bundle of what
finished; `--resume BUNDLE` continues it, on this machine or another of the same GPU model. The work
is `llmbench.api.oneshot`; this module parses the options and draws its progress."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from llmbench import api
from llmbench.api import Check, gpu_display_name, node_placement
from llmbench.commands.common import CEILINGS_OPT, SUITES_OPT, console, err_console, over_slots, parse_budget
from llmbench.commands.run import RichUI, print_plan, quote_summary


class OneshotUI(RichUI):
    """The run's progress on the terminal: doctor's findings, the cases as they end, and the time spent
    and left against the budget beside the quote (a line at most once a minute and at each suite's end;
    the log the bundle carries has it on every case's line)."""

    def check(self, check: Check) -> None:
        if check.level != "ok":
            console.print(f"  [yellow]{check.level}[/yellow] {check.name}: {escape(check.detail)}")

    def interrupted(self) -> None:
        err_console.print("interrupted: writing the bundle of what finished ...")

    def clock(self, text: str, calm: bool) -> None:
        if calm:
            console.print(f"  [dim]time[/dim] {escape(text)}", highlight=False)


def oneshot(
    suites: Optional[list[str]] = typer.Argument(
        None, help="Suites to run, in order (default: headline; with --resume: the bundle's)."),
    budget: Optional[str] = typer.Option(
        None, "--budget", help="Wall-clock budget for the whole command, e.g. 45m, 1h30m, 900: a case is "
        "started only if its time (measured here or in the committed results/ of this GPU, else estimated) "
        "fits in what is left; the rest are left for --resume."),
    out: Path = typer.Option(Path("oneshot"), "--out", help="Folder for the result sets, the log and the bundle."),
    resume: Optional[Path] = typer.Option(
        None, "--resume", help="A bundle of an earlier oneshot: continue its result sets (cases done there are "
        "not run again; this machine must have the same GPU model)."),
    gpus: Optional[str] = typer.Option(None, "--gpus", help="GPUs for the case processes: 0, 0,1 or MIG-<uuid>,..."),
    parallel: Optional[bool] = typer.Option(
        None, "--parallel/--no-parallel", help="Run cases side by side, one per --gpus entry (multi-GPU cases take "
        "as many as they need; a share group holds one; host-exclusive cases run alone). Default: on where "
        "there are several GPUs (--gpus defaults to every visible one); --no-parallel runs one case at a time."),
    cpu: bool = typer.Option(False, "--cpu", metavar="", help="Run on the CPU (tests; no GPU figures)."),
    dry_run: bool = typer.Option(False, "--dry-run", metavar="", help="Print the plan with each case's quoted "
                                 "time (as --budget reads it) and the total; run nothing."),
    suite_dirs: Optional[list[Path]] = SUITES_OPT,
    ceilings: Optional[Path] = CEILINGS_OPT,
) -> None:
    """A freshly rented machine in one command: doctor, the headline suite within --budget, and one
    bundle <gpu-slug>-<UTC>.tar.gz (result sets, HTML report, log, environment) in --out.

    Ctrl-C or SIGTERM writes the bundle of what finished (exit 130); --resume BUNDLE continues it.
    Exit code 1: the stack is broken (doctor) or a case failed, timed out or was killed; 2: bad input;
    3: the bundle or a result set could not be written (a full disk: one line names what was kept)."""
    seconds = parse_budget(budget) if budget is not None else None
    gpus, parallel = node_placement(gpus, parallel, cpu)
    if dry_run:
        plan = api.plan_oneshot(suites or [], out=out, resume=resume, gpus=gpus, parallel=parallel, cpu=cpu,
                                suite_dirs=suite_dirs or [], ceilings=ceilings, budget_s=seconds)
        earlier = f" ({plan.done_before} done in the bundle)" if plan.done_before else ""
        print_plan(plan, seconds, f"{len(plan.cases)} case(s) to run{earlier}, about {plan.total_s / 60:.1f} min on "
                   f"{gpu_display_name(plan.slug)}{over_slots(plan)} "
                   f"({escape(quote_summary(plan.times, plan.slug))}), plus doctor and the bundle; nothing was run")
        return
    if parallel:
        console.print(f"cases side by side over GPUs {gpus} (to run them one at a time: --no-parallel)",
                      highlight=False)
    try:
        done = api.oneshot(suites or [], budget_s=seconds, out=out, resume=resume, gpus=gpus, parallel=parallel,
                           cpu=cpu, suite_dirs=suite_dirs or [], ceilings=ceilings, ui=OneshotUI())
    except api.BrokenStack as e:
        err_console.print(f"[red]error:[/red] the stack is broken, nothing was measured: {escape(e.problem)} "
                          "(llmbench doctor repeats the checks)", soft_wrap=True)
        raise typer.Exit(1) from None
    console.print(done.summary)
    if done.interrupted or done.deferred:  # plain lines, never wrapped: a script can take the path from them
        typer.echo(f"continue with: llmbench oneshot --resume {done.bundle}")
    typer.echo(f"bundle: {done.bundle}")
    if done.exit_code():
        raise typer.Exit(done.exit_code())


def register(app: typer.Typer) -> None:
    app.command("oneshot")(oneshot)
