"""`llmbench report`: a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench import api
from llmbench.commands.common import FILES_ARG, POOL_OPT, write_out
from llmbench.commands.costopts import PRICE_OPT, PRICES_OPT, RUN_TOKENS_OPT


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
    api.check_out_file(out)
    write_out(out, api.report_html(files, baseline=baseline, title=title, pool=pool, all_metrics=all_metrics,
                                   prices=price or [], prices_file=prices_file, run_tokens=run_tokens))
    typer.echo(f"wrote {out}", err=True)


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
