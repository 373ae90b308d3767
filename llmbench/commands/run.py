"""`llmbench run`: a suite, every case in its own process, with progress and a summary."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from llmbench import api
from llmbench.api import FAILED_STATUSES, UI, CaseTime, Plan, SuiteRun, gpu_display_name, with_searched_batch
from llmbench.commands.common import (
    CEILINGS_OPT,
    INTERRUPTED,
    SUITES_OPT,
    budget_fit_text,
    console,
    err_console,
    over_slots,
    parse_budget,
)
from llmbench.errors import UserError
from llmbench.report.tables import Table
from llmbench.report.terminal import (
    FLAG_LEGEND,
    FLAG_MARK,
    case_headline,
    case_lines,
    flag_summary,
    fmt_metric,
    merge_numbers,
    one_line,
    print_terminal,
    result_table,
    warning_summary,
)
from llmbench.results import CaseResult, load
from llmbench.suite import CaseSpec, Suite, load_suite

CONFIRM_ABOVE_CASES = 200
REASON_WIDTH = 78  # a skip reason of the plan on one line of an 80-column terminal


class RichUI(UI):
    """Progress bars (suite and case, with ETA) while cases run, each case's line as it ends, and a
    summary table after each pass."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.p: Progress | None = None
        self.legend_shown = False  # the '(!)' legend, printed with the first flagged figure of a pass

    def line(self, text: str) -> None:
        console.print(escape(text), highlight=False)

    def pass_start(self, index: int, of: int, group: str) -> None:
        console.print(f"[bold]pass {index} of {of}[/bold] (repeat group {group})")

    def cases_begin(self) -> None:
        self.p = run_progress()
        self.suite_task = self.p.add_task("suite", total=0, visible=False)
        self.case_task = self.p.add_task("", total=1.0, visible=False)
        self.legend_shown = False
        self.p.start()

    def cases_end(self) -> None:
        if self.p is not None:
            self.p.stop()

    def suite_start(self, suite: Suite, cases: list[CaseSpec], path: Path, skipped: int) -> None:
        assert self.p is not None
        note = f" ({skipped} already done, resumed)" if skipped else ""
        console.print(f"[bold]{suite.name}[/bold]: {len(cases)} case(s){note} -> {path}")
        self.p.update(self.suite_task, description=f"suite {suite.name}", total=len(cases), visible=True)
        self.p.update(self.case_task, visible=True)

    def case_start(self, case: CaseSpec, index: int) -> None:
        assert self.p is not None
        self.p.reset(self.case_task, total=1.0, description=f"  {case.label}"[:70])

    def case_progress(self, fraction: float, text: str) -> None:
        assert self.p is not None
        self.p.update(self.case_task, completed=fraction)

    def case_probe(self, case: CaseSpec, probe: dict[str, Any]) -> None:
        how = " (recorded by an earlier run)" if probe.get("resumed") else ""
        if probe.get("stage") == "measurement":
            how += " in the measurement (its probe fit): searching below it"
        console.print(f"    max_batch probe batch_size {probe['batch_size']}: {probe['status']}{how}", highlight=False)

    def case_done(self, case: CaseSpec, result: CaseResult) -> None:
        assert self.p is not None
        self.p.update(self.case_task, completed=1.0)
        self.p.advance(self.suite_task)
        style = {"ok": "green", "skipped": "yellow"}.get(result.status, "red")
        label = with_searched_batch(case.label, result)
        if result.status == "ok":
            detail = ", ".join(f"{n} {fmt_metric(m)}" for n, m in case_headline(result))
        else:  # the only place a run prints it (the result set keeps the whole text)
            detail = result.reason or ""
        # the label whole, the figures or reason under it where one line is too short: nothing wrapped by rich
        first, *rest = case_lines(result.status, label, detail, console.width)
        status = f"{result.status:8}"
        console.print(f"  [{style}]{status}[/{style}]{escape(first[len(status) + 2:])}", highlight=False)
        for line in rest:
            console.print(escape(line), highlight=False)
        if FLAG_MARK in detail and not self.legend_shown:
            self.legend_shown = True
            console.print(f"  {escape(FLAG_LEGEND).replace('below', 'at the end')}", highlight=False)

    def case_deferred(self, case: CaseSpec, needs_s: float, left_s: float) -> None:
        assert self.p is not None
        self.p.advance(self.suite_task)
        console.print(f"  [yellow]{'deferred':8}[/yellow] {escape(case.label)}: needs about {needs_s:.0f} s, "
                      f"{max(left_s, 0):.0f} s of --budget left; run again with --resume")

    def warn(self, text: str) -> None:
        console.print(f"[yellow]warning:[/yellow] {escape(text)}")

    def suite_done(self, result_set: Any, path: Path) -> None:
        assert self.p is not None
        self.p.update(self.case_task, visible=False)

    def pass_done(self, run: SuiteRun) -> None:
        """The pass's table (skip reasons were printed as they came), its counts and warnings."""
        rs = load(run.path)
        print_terminal([result_table(rs, skipped=False)], console)
        deferred = f", {run.deferred} deferred (--budget; --resume runs them)" if run.deferred else ""
        console.print(", ".join(f"{v} {k}" for k, v in sorted(run.counts.items())) + deferred + f" -> {run.path}")
        for w in warning_summary(rs.warnings) + flag_summary(rs):
            console.print(f"[yellow]warning:[/yellow] {escape(w)}")
        code = run.exit_code(self.strict)
        if code:
            bad = ", ".join(f"{run.counts[s]} {s}" for s in (*FAILED_STATUSES, "oom") if run.counts.get(s))
            err_console.print(f"exit code {code}: {bad} (llmbench show {run.path} lists the reasons)",
                              highlight=False)


def run_progress() -> Progress:
    """The suite and case bars of a run (oneshot draws the same)."""
    return Progress(
        TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("eta"), TimeRemainingColumn(), console=console, transient=False,
    )


def print_plan(plan: Plan, budget_s: float | None, summary: str) -> None:
    """A --dry-run's plan: a warning for files the quotes passed over, the plan, `summary`, and whether
    it fits --budget."""
    if plan.unread:
        console.print(f"[yellow]warning:[/yellow] {escape(plan.unread)}")
    print_terminal(plan_tables(plan), console)
    console.print(summary)
    fit = budget_fit_text(plan, budget_s)
    if fit:
        console.print(fit, highlight=False)


def plan_tables(plan: Plan) -> list[Table]:
    """The plan, each case with its quote: measured (an earlier run of it), like the most similar measured
    cases, the scenario's estimate, or nothing where this device will skip it; each measured quote names
    the GPU it was measured on. Then the skipped cases' reasons, each once."""
    times, slug = plan.times, plan.slug
    rows = [[str(i), c.label, "skipped" if t.source == "skipped" else f"{t.seconds:.0f} s", _quote_source(t), c.id]
            for i, (c, t) in enumerate(zip(plan.cases, times, strict=True), 1)]
    tables = [Table("plan", ["#", "case", "quote", "from", "id"], rows, key_columns=2,
                    styles={"skipped": "yellow"})]
    skipped = plan.skipped()  # reasons that differ only in their figures, together
    if skipped:
        lines = []
        for hits in skipped:
            head = f"- {_numbers([i for i, _ in hits])}: "
            lines.append(head + one_line(merge_numbers([r for _, r in hits]), REASON_WIDTH - len(head)))
        tables.append(Table(f"Skipped on {gpu_display_name(slug)}, no time", [], [], lead=lines))
    return tables


def _numbers(ns: list[int]) -> str:
    """'#6-10, #21, #29-31': plan numbers, consecutive ones as a range."""
    runs: list[list[int]] = []
    for n in ns:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"#{r[0]}" if len(r) == 1 else f"#{r[0]}-{r[-1]}" for r in runs)


def _quote_source(t: CaseTime) -> str:
    shared = "; on a shared engine" if t.shared else ""  # its share group's first case loads it
    if t.source in ("skipped", "estimate"):
        return "" if t.source == "skipped" else "estimate" + shared
    gpus = ", ".join(gpu_display_name(g) for g in t.gpu.split(", ") if g) or "?"
    return f"{'measured' if t.source == 'measured' else 'similar'}, {gpus}{shared}"


QUOTE_ORDER = ("measured", "similar", "other", "other similar", "estimate", "skipped")


def quote_summary(times: list[CaseTime], slug: str) -> str:
    """Where a plan's quotes come from, in one clause: how many from this GPU model's earlier runs, from
    another GPU's timings (named: never passed off as this one's), estimated, skipped."""
    here = gpu_display_name(slug)
    counts: Counter[tuple[str, str]] = Counter()
    for t in times:
        gpus = [g for g in t.gpu.split(", ") if g]
        other = t.source in ("measured", "similar") and not set(gpus) <= {slug}
        kind = f"other{' similar' if t.source == 'similar' else ''}" if other else t.source
        counts[(kind, ", ".join(gpu_display_name(g) for g in gpus) if other else "")] += 1
    text = {
        "measured": f"measured on {here}", "similar": "like similar cases measured there", "estimate": "estimated",
        "skipped": "skipped here (no time)",
    }
    parts = []
    for (kind, names), n in sorted(counts.items(), key=lambda kv: QUOTE_ORDER.index(kv[0][0])):
        what = text.get(kind) or (f"from {names} timings" if kind == "other" else f"like similar cases in {names} "
                                  "timings")
        parts.append(f"{n} {what}")
    return "; ".join(parts)


def run(
    suite: str = typer.Argument(..., help="A suite name (e.g. quickstart; `llmbench list suites` lists them) or a "
                                "path to a .toml file."),
    filter: Optional[list[str]] = typer.Option(
        None, "--filter", "-k", help="Keep matching cases: key=v1,v2 (scenario, id, any param, or gpus, nodes and "
        "replicas of the placement) or text in the case label. Repeat to combine."),
    resume: bool = typer.Option(False, "--resume", metavar="", help="Continue the newest result set of this "
                                "suite on this GPU: cases already ok or skipped are not run again."),
    force: bool = typer.Option(False, "--force", metavar="", help="With --resume: measure the selected cases "
                               "again, replacing their earlier results in the same result set."),
    out: Path = typer.Option(
        Path("results"), "--out", help="Root folder of result sets: OUT/<gpu-slug>/<suite>-<UTC>.json."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", metavar="",
                                 help="Print the expanded plan and an estimate; run nothing."),
    gpus: Optional[str] = typer.Option(None, "--gpus", help="GPUs for the case processes, e.g. 0 or 0,1 or "
                                       "MIG-<uuid> (sets CUDA_VISIBLE_DEVICES before torch is imported)."),
    cpu: bool = typer.Option(False, "--cpu", metavar="", help="Run on the CPU even when a GPU is present."),
    parallel: bool = typer.Option(False, "--parallel", metavar="", help="Run cases side by side, one case "
                                  "process per --gpus entry (an index or MIG UUID), each pinned to it; multi-GPU "
                                  "cases (tensor_parallel, gpus) take as many entries as they need, a share group "
                                  "holds one, host-exclusive cases run alone; each serving case starts its own server "
                                  "(server_scope = \"suite\" is not used)."),
    timeout: Optional[float] = typer.Option(
        None, "--timeout", min=1, help="Per-case timeout in seconds, overriding the suite's timeout_s."
    ),
    budget: Optional[str] = typer.Option(
        None, "--budget", help="Time this run may take, e.g. 45m, 1h30m, 900s or 900 (seconds): start "
        "only cases whose time (as --dry-run "
        "quotes it: measured by an earlier run here, like the most similar measured cases, or estimated) fits in "
        "what is left; the rest are left out of the result set for a later --resume. It picks cases, it does not "
        "cut one off (--timeout does)."),
    yes: bool = typer.Option(False, "--yes", "-y", metavar="",
                             help=f"Start plans of more than {CONFIRM_ABOVE_CASES} cases without asking."),
    strict: bool = typer.Option(False, "--strict", metavar="", help="Exit 1 also when a case ran out of memory "
                                "(by default oom is a result: that size does not fit)."),
    repeat: int = typer.Option(
        1, "--repeat", min=1, help="Run the selected cases N times, each time in a fresh process, as N passes "
        "(pass 1 over every case, then pass 2, ...: drift over time shows as spread between runs). Each pass "
        "writes its own result set, whose header names its repeat group (repeat: group, index, of); compare "
        "and report pool a group into one side, `llmbench spread` prints the between-run spread. --resume "
        "continues an unfinished group of the same N."),
    suites: Optional[list[Path]] = SUITES_OPT,
    ceilings: Optional[Path] = CEILINGS_OPT,
    launcher: Optional[str] = typer.Option(None, "--launcher", help="How each case runs (default: the suite's "
                                           f"[launcher], else local): {api.launcher_help()}."),
    launcher_option: Optional[list[str]] = typer.Option(
        None, "--launcher-option", "-L", metavar="KEY=VALUE", help="An option of the launcher, over the suite's "
        "(e.g. -L address=HOST:6379, -L nodes=2 for ray). Repeat for more."),
    address: Optional[str] = typer.Option(None, "--address", help="With --launcher ray: the cluster, as Ray "
                                          "takes it (HOST:PORT, ray://HOST:PORT, auto); left out, RAY_ADDRESS or a "
                                          "local cluster started for the run (-L address=...)."),
) -> None:
    """Run a suite: every case in its own process, results written after each case.

    Exit code 0: every case ok or skipped (oom is a result unless --strict); 1: a case failed, timed out or
    was killed (a SIGKILL the out-of-memory killer did not send)."""
    budget_s = parse_budget(budget) if budget is not None else None
    s = load_suite(suite, suites or [])
    options = {**api.option_pairs(launcher_option or []), **({"address": address} if address else {})}
    chosen = api.chosen_launcher(s.launcher, str(s.path), launcher, options)
    api.check_launcher(chosen, gpus, repeat, parallel)
    api.check_machine(out, gpus, cpu, parallel, ceilings)
    for line in s.notes():
        console.print(escape(line), highlight=False)
    selection = api.select_cases(s, filter or [], timeout)
    if dry_run:
        plan = api.plan_run(selection, out, gpus, cpu, resume=resume and repeat == 1, force=force, parallel=parallel,
                            budget_s=budget_s)
        how = quote_summary(plan.times, plan.slug) + (f"; earlier run: {plan.earlier}" if plan.earlier else
                                                      f"; no earlier run of {s.name} under {out}")
        total = plan.total_s
        times = f" x {repeat} passes = about {total * repeat / 60:.1f} min" if repeat > 1 else ""
        done = f" ({plan.done_before} already done, resumed)" if plan.done_before else ""
        print_plan(plan, budget_s, f"{len(plan.cases)} case(s){done}, about {total / 60:.1f} min on "
                   f"{gpu_display_name(plan.slug)}{over_slots(plan)}{times} ({escape(how)}); nothing was run")
        return
    n = len(selection.cases)
    if n > CONFIRM_ABOVE_CASES and not yes:
        if not sys.stdin.isatty():
            raise UserError(f"the plan has {n} cases (more than {CONFIRM_ABOVE_CASES}); narrow it with "
                            "--filter, check it with --dry-run, or pass --yes to start it")
        typer.confirm(f"The plan has {n} cases. Start it?", abort=True)
    try:
        result = api.run_suite(selection, out=out, resume=resume, force=force, gpus=gpus, cpu=cpu, parallel=parallel,
                               budget_s=budget_s, repeat=repeat, ceilings=ceilings, ui=RichUI(strict),
                               launcher=chosen)
    except KeyboardInterrupt:  # typer would turn it into a silent exit 130
        err_console.print(INTERRUPTED)
        raise typer.Exit(130) from None  # 128 + SIGINT, also for SIGTERM: the run did not finish
    if repeat > 1:
        console.print(f"{len(result.passes)} pass(es) of repeat group {result.group} -> {out}; the spread between "
                      f"runs: llmbench spread {out}/<gpu-slug>/{s.name}-*.json")
    code = result.exit_code(strict)
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
