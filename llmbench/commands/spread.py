"""`llmbench spread`: the between-run spread of each case over several runs (the noise floor)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.analysis.runs import load_sets
from llmbench.analysis.spread import spread_data, spread_rows
from llmbench.commands.common import FILES_ARG, FORMAT_OPT, OUT_OPT, Fmt, check_out_file, emit
from llmbench.errors import UserError
from llmbench.report.spread_view import spread_tables


def spread_cmd(
    files: list[Path] = FILES_ARG,
    fmt: Fmt = FORMAT_OPT,
    out: Optional[Path] = OUT_OPT,
    all_metrics: bool = typer.Option(
        False, "--all", metavar="", help="Every metric (default: each scenario's headline metrics, memory, energy)."
    ),
) -> None:
    """Print each case's between-run spread: the runs' medians and their CV, from result sets (files,
    folders, bundles) of each GPU, each case's runs chosen by the one rule (its newest recorded code path:
    the passes of `run --repeat N`, runs from other leases), and the noise floor a ratio must clear."""
    check_out_file(out)
    sets = load_sets(files, by_gpu=True)
    rows = spread_rows(sets, all_metrics)
    if not any(r.between_run_cv is not None for r in rows):
        raise UserError(
            "no case was measured ok in two runs of one GPU and suite: give the result sets of "
            "`llmbench run SUITE --repeat N` (or of several runs of the same suite on the same GPU)"
        )
    emit(spread_tables(sets, rows), fmt, out, spread_data(sets, rows))


def register(app: typer.Typer) -> None:
    app.command("spread")(spread_cmd)
