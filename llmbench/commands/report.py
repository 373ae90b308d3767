"""`llmbench report`: a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.analysis.compare import headline_metric_names
from llmbench.analysis.inputs import display_names, resolve_baseline
from llmbench.analysis.pages import section
from llmbench.analysis.runs import load_sets
from llmbench.commands.common import FILES_ARG, POOL_OPT, check_out_file, write_out
from llmbench.commands.costopts import PRICE_OPT, PRICES_OPT, RUN_TOKENS_OPT, prices_for
from llmbench.errors import UserError
from llmbench.report.cost_view import cost_table


def report_cmd(
    files: list[Path] = FILES_ARG,
    baseline: Optional[str] = typer.Option(
        None, "--baseline", "-b", help="GPU slug or file stem of the baseline."
    ),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="The HTML file to write."),
    title: str = typer.Option("llmbench report", help="Page title."),
    pool: bool = POOL_OPT,
    all_metrics: bool = typer.Option(
        False, "--all-metrics", metavar="",
        help="Every metric (default: each scenario's headline metrics, memory, energy)."
    ),
    price: Optional[list[str]] = PRICE_OPT,
    prices_file: Optional[Path] = PRICES_OPT,
    run_tokens: int = RUN_TOKENS_OPT,
) -> None:
    """Write a self-contained HTML page (no scripts, no external resources) for one result set or a
    comparison of several: the answer on the first screen (per suite and workload, the speed ratio with
    its 95% interval, runs and noise floor), the check of `llmbench project` against the other GPU's
    measurement for measured GPUs of the spec table, then a section per comparison with its charts
    (throughput against batch size, TTFT against input length, roofline share, speed-ups) and tables
    folded."""
    check_out_file(out)
    sets = load_sets(files, pool=pool)
    prices = prices_for(sets, price, prices_file)
    if prices is not None and len(sets) < 2:
        raise UserError("--price/--prices need two or more result sets (costs are shown beside a comparison)")
    try:  # plots need matplotlib, an optional extra: the other commands work without it
        from llmbench.report.html import render_html
    except ModuleNotFoundError as e:
        raise UserError(
            f"llmbench report needs {e.name}, which is not installed: pip install 'llmbench[report]'"
        ) from None
    sec = section(
        ", ".join(dict.fromkeys(s.rs.suite for s in sets)) + ": " + " vs ".join(s.label for s in display_names(sets)),
        sets,
        resolve_baseline(sets, baseline),
        None if all_metrics else frozenset(headline_metric_names()),
    )
    costs = {sec.title: [cost_table(sec.cmp, prices, run_tokens)]} if prices is not None and sec.cmp else {}
    write_out(out, render_html([sec], title, more=costs))
    typer.echo(f"wrote {out}", err=True)


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
