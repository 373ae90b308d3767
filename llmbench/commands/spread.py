"""`llmbench spread`: the between-run spread of each case over several runs (the noise floor)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench import api
from llmbench.commands.common import FILES_ARG, FORMAT_OPT, OUT_OPT, Fmt, emit
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
    the passes of `run --repeat N`, runs from other machines), and the noise floor a ratio must clear."""
    api.check_out_file(out)
    found = api.spread(files, all_metrics)
    emit(spread_tables(found.sets, found.rows), fmt, out, found.to_dict())


def register(app: typer.Typer) -> None:
    app.command("spread")(spread_cmd)
