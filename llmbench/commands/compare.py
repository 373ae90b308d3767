"""`llmbench compare`: result sets side by side, case by case."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench import api
from llmbench.api import MIX_OPTION, check_out_file
from llmbench.api.comparison import ALL_CASES_OPTION
from llmbench.commands.common import FILES_ARG, FORMAT_OPT, OUT_OPT, POOL_OPT, Fmt, emit
from llmbench.commands.costopts import PRICE_OPT, PRICES_OPT, RUN_TOKENS_OPT
from llmbench.report.answer_view import answer_tables
from llmbench.report.base_view import base_answer_tables
from llmbench.report.cost_view import cost_table
from llmbench.report.gate_view import cell_ratio, gate_table
from llmbench.report.matchview import match_table
from llmbench.report.slice_view import slice_table
from llmbench.report.slo_view import slo_table
from llmbench.report.tables import Table
from llmbench.report.terminal import terminal_safe
from llmbench.report.views import basediff_tables, comparison_tables, short_note


def compare_cmd(
    files: list[Path] = FILES_ARG,
    baseline: Optional[str] = typer.Option(
        None,
        "--baseline",
        "-b",
        help="The set the others are measured against: a GPU slug or a file stem (default: the first file).",
    ),
    base: Optional[str] = typer.Option(
        None,
        "--base",
        help="Within each set, compare every case with the case that differs only in this "
        "param, e.g. --base precision=bf16 (works with a single file).",
    ),
    fmt: Fmt = FORMAT_OPT,
    out: Optional[Path] = OUT_OPT,
    headline: bool = typer.Option(
        False, "--headline", metavar="", help="Only each scenario's headline metrics, peak memory and energy per unit."
    ),
    pool: bool = POOL_OPT,
    fail_if_slower: Optional[str] = typer.Option(
        None,
        "--fail-if-slower",
        help="A regression gate, e.g. 5%: exit 1 when a headline metric of a joined case is slower than "
        "the baseline by more than this AND slower beyond the noise between runs and machines, judged over "
        "the whole suite (Holm: at most 5% false alarms for a suite with nothing changed). It prints the "
        "smallest slowdown it catches 80% of the time with the runs at hand.",
    ),
    unjudged: str = typer.Option(
        "fail", "--unjudged", metavar="fail|pass", help="With --fail-if-slower: what a slower cell does when "
        "no spread between runs is known to judge it by (one run a side, none measured): fail (the default) "
        "or pass."),
    price: Optional[list[str]] = PRICE_OPT,
    prices_file: Optional[Path] = PRICES_OPT,
    run_tokens: int = RUN_TOKENS_OPT,
    every_case: bool = typer.Option(
        False, "--all", metavar="", help="After the answer, the details: the result sets, their environment "
        "differences, every case and metric, the geometric means, and the cases not compared."),
    noise_floor: Optional[list[Path]] = typer.Option(
        None, "--noise-floor", help="A folder of repeated runs (run --repeat) to read each GPU's noise floor from; "
        "repeatable. Default: each result set's own folder and results/spread/<gpu-slug>/ beside it. A ratio of "
        "one run per side gets its interval widened by the floor of its GPUs and case family, or is labelled "
        "'single run' (within-run only) where none was measured."),
    all_cases: bool = typer.Option(
        False, ALL_CASES_OPTION, metavar="", help="Sets of two GPUs or more: every case they share. By default "
        "a comparison of GPUs covers the headline suite's cases (else the first suite given's), as the "
        "published pages do, and says so on its second line."),
    mix_suites: bool = typer.Option(
        False, MIX_OPTION, metavar="", help="Join result sets of different suites on every case they share, "
        "whatever settings each suite measured it with (by default each suite is compared on its own, and sets "
        "of different suites join only on the cases measured with the same settings)."),
) -> None:
    """Compare result sets (files, globs, folders, oneshot bundles) case by case. Sets of two GPUs or more:
    each GPU is one side, each of its cases' runs chosen by the one rule (its newest recorded code path,
    from any set given; a folder means every set in it, and results/spread/<gpu-slug>/ beside it). Sets of
    one GPU: each file or repeat group a side (before/after a change, the gate). First the answer: the
    speed ratio (geometric mean, > 1: faster than the baseline) with its 95% interval and what it rests
    on, what it covers, the runs and machines behind each side (and those left out), the noise floor, the
    headline metrics, the cases that differ most and the warnings; where SLO capacity cases were read, each
    GPU's output tokens/s per GPU and $ per 1M output tokens at each SLO ("At the SLO"); then, with --all,
    every case and the runs used and left out, with why."""
    threshold = api.parse_threshold(fail_if_slower) if fail_if_slower is not None else None
    check_out_file(out)
    result = api.compare(files, baseline=baseline, base=base, headline=headline, pool=pool, fail_if_slower=threshold,
                         prices=price or [], prices_file=prices_file, run_tokens=run_tokens,
                         noise_floor=noise_floor or [], mix_suites=mix_suites, unjudged=unjudged,
                         all_cases=all_cases)
    tables: list[Table] = []
    for k, group in enumerate(result.groups):
        cmp = group.comparison
        tables += answer_tables(cmp, notes=group.notes + (result.left_out if k == 0 else []))
        extra = slice_table(cmp, short_note(cmp.sets))
        tables += [extra] if extra is not None and not every_case else []
        tables += comparison_tables(cmp) if every_case else []
        tables += [t for t in (match_table(cmp.sets),) if t is not None]
        if result.prices is not None:
            tables.append(cost_table(cmp, result.prices, run_tokens))
        if group.gate is not None:
            tables.append(gate_table(group.gate))
    if result.at_slo is not None:
        tables.append(slo_table(result.at_slo))
    if result.groups and not every_case:
        tables.append(Table("", [], [], lead=[DETAILS_HINT]))
    measured = {a.side.rs.gpu_slug for a in result.base_answers or []}
    tables += [t for a in result.base_answers or [] for t in base_answer_tables(a, every_case)]
    tables += [t for d in result.base_diffs or [] if every_case or d.set.rs.gpu_slug not in measured
               for t in basediff_tables(d)]  # each run's own diff: the details
    emit(tables, fmt, out, result.to_dict() if fmt is Fmt.json else None)  # only JSON prints the data
    failed = result.failed_gates
    for verdict in failed:
        lost = [c for c in verdict.failures if c.problem]
        let_fail = [c for c in verdict.failures if c in verdict.not_judged]
        typer.echo(f"regression gate failed vs {verdict.baseline}: "
                   f"{len(verdict.failures) - len(lost) - len(let_fail)} headline metric(s) slower than "
                   f"{verdict.threshold:.1%} beyond the noise, {len(let_fail)} slower and not judged (no spread "
                   f"between runs to judge by; --unjudged pass lets them pass), {len(lost)} case(s) or value(s) "
                   "not measured, not finite or not positive:", err=True)
        for c in verdict.failures:
            what = c.problem or f"{c.metric} {cell_ratio(c)}" + (" (not judged)" if c in let_fail else "")
            typer.echo(terminal_safe(f"  {c.set_label}: {c.scenario} {c.case}: {what}"), err=True)
    if failed:
        raise typer.Exit(1)


DETAILS_HINT = "Every case, metric and environment difference: add --all."


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
