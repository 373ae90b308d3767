"""`llmbench compare`: result sets side by side, case by case."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from llmbench.analysis.basediff import base_diff, by_gpu, parse_base
from llmbench.analysis.compare import compare, headline_metric_names
from llmbench.analysis.cost_rows import cost_data
from llmbench.analysis.gate import GateResult, gate, parse_threshold
from llmbench.analysis.inputs import SetRef, load_sets, resolve_baseline
from llmbench.analysis.migslice import slice_rows
from llmbench.analysis.noisefloor import floor_from_folders, folders_for
from llmbench.analysis.suitejoin import MIX_OPTION, JoinPlan, plan_joins
from llmbench.commands.common import FILES_ARG, FORMAT_OPT, OUT_OPT, POOL_OPT, Fmt, check_out_file, emit
from llmbench.commands.costopts import PRICE_OPT, PRICES_OPT, RUN_TOKENS_OPT, prices_for
from llmbench.errors import UserError
from llmbench.report.answer_view import answer_tables
from llmbench.report.cost_view import cost_table
from llmbench.report.gate_view import gate_table
from llmbench.report.matchview import match_table
from llmbench.report.slice_view import slice_table
from llmbench.report.tables import Table, fmt_ratio
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
        "the baseline by more than this AND its 95% interval lies beyond it (more than the noise).",
    ),
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
    mix_suites: bool = typer.Option(
        False, MIX_OPTION, metavar="", help="Join result sets of different suites on every case they share, "
        "whatever settings each suite measured it with (by default each suite is compared on its own, and sets "
        "of different suites join only on the cases measured with the same settings)."),
) -> None:
    """Compare result sets case by case. First the answer, per suite and GPU pair: the speed ratio
    (geometric mean, > 1: faster than the baseline) with its 95% interval and what it rests on, the runs
    and machines behind each side, the noise floor, the headline metrics, the cases that differ most and
    the warnings; then, with --all, every case."""
    threshold = parse_threshold(fail_if_slower) if fail_if_slower is not None else None
    check_out_file(out)
    sets = load_sets(files, pool=pool)
    floor = floor_from_folders(noise_floor or folders_for(files))
    if len(sets) < 2 and base is None:
        raise UserError("compare needs two or more result sets (sides, after pooling repeat groups"
                        + (" and --pool" if pool else "") + "), or --base KEY=VALUE to compare within one")
    if len(sets) < 2 and threshold is not None:
        raise UserError("--fail-if-slower needs two or more result sets (a baseline and a candidate)")
    plan = plan_joins(sets, mix_suites) if len(sets) >= 2 else JoinPlan([], [], [])
    joined = [(g, n) for g, n in zip(plan.groups, plan.notes, strict=True) if _joins(g)]
    if len(sets) >= 2 and not joined and base is None:
        _check_joins(sets)  # says why, exit 2
    prices = prices_for(sets, price, prices_file)
    if prices is not None and len(sets) < 2:
        raise UserError("--price/--prices need two or more result sets (costs are shown beside a comparison)")
    tables: list[Table] = []
    parts: list[dict[str, Any]] = []
    verdicts: list[GateResult] = []
    left_out = plan.left_out + [f"Not compared: the {len(g)} result sets of {g[0].rs.suite} share no case."
                                for g in plan.groups if not _joins(g) and len({s.rs.suite for s in g}) == 1]
    for k, (group, notes) in enumerate(joined):
        cmp = compare(group, resolve_baseline(group, baseline), headline_metric_names() if headline else None,
                      floor)
        tables += answer_tables(cmp, notes=notes + (left_out if k == 0 else []))
        extra = slice_table(cmp, short_note(group))
        tables += [extra] if extra is not None and not every_case else []
        tables += comparison_tables(cmp) if every_case else []
        tables += [t for t in (match_table(group),) if t is not None]
        part: dict[str, Any] = {"comparison": cmp.to_dict()}
        mig_rows = slice_rows(cmp)
        if mig_rows:
            part["mig_slices"] = [r.to_dict() for r in mig_rows]
        if prices is not None:
            tables.append(cost_table(cmp, prices, run_tokens))
            part["cost"] = cost_data(cmp, prices, run_tokens)
        if threshold is not None:
            verdict = gate(cmp, threshold, headline_metric_names())
            verdicts.append(verdict)
            tables.append(gate_table(verdict))
            part["gate"] = verdict.to_dict()
        parts.append(part)
    if joined and not every_case:
        tables.append(Table("", [], [], lead=[DETAILS_HINT]))
    if not joined and baseline is not None:
        resolve_baseline(sets, baseline)
    data: dict[str, Any] = parts[0] if len(parts) == 1 else ({"comparisons": parts} if parts else {})
    if base is not None:
        key, value = parse_base(base)
        diffs = [base_diff(s, key, value) for s in by_gpu(sets)]
        tables += [t for d in diffs for t in basediff_tables(d)]
        data["base_diffs"] = [d.to_dict() for d in diffs]
    emit(tables, fmt, out, data)
    failed = [v for v in verdicts if v.failed]
    for verdict in failed:
        typer.echo(f"regression gate failed: {len(verdict.failures)} headline metric(s) slower than "
                   f"{verdict.threshold:.1%} vs {verdict.baseline}, beyond the noise:", err=True)
        for c in verdict.failures:
            typer.echo(f"  {c.set_label}: {c.scenario} {c.case}: {c.metric} {fmt_ratio(c.ratio, c.ci)}", err=True)
    if failed:
        raise typer.Exit(1)


DETAILS_HINT = "Every case, metric and environment difference: add --all."


def _joins(sets: list[SetRef]) -> bool:
    ids = [{c.id for c in s.cases()} for s in sets]
    return bool(set.intersection(*ids)) or any(ids[0] & other for other in ids[1:])


def _check_joins(sets: list[SetRef]) -> None:
    """Sets that share no case id have nothing to compare: say so (exit 2) rather than print empty tables."""
    ids = [{c.id for c in s.cases()} for s in sets]
    if not set.intersection(*ids) and not any(ids[0] & other for other in ids[1:]):
        suites = sorted({s.rs.suite for s in sets})
        raise UserError(f"no case joins: the result sets share no case id (suites: {', '.join(suites)}); "
                        "compare result sets of the same suite, or cases with the same scenario and params")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
