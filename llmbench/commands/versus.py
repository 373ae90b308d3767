"""`llmbench versus`: GPU X vs GPU Y per workload, with your own result sets in it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench import api
from llmbench.commands.common import FORMAT_OPT, OUT_OPT, Fmt, emit
from llmbench.commands.costopts import PRICE_OPT, PRICES_OPT
from llmbench.report.pair_view import all_tables


def versus_cmd(
    files: Optional[list[Path]] = typer.Argument(
        None, help="Your own measured result sets or `llmbench oneshot` bundles (.tar.gz) of either GPU: they join "
        "the committed runs of that GPU."),
    gpus: Optional[str] = typer.Option(
        None, "--gpus", help="The two GPUs, X,Y (spec-table slugs: `llmbench specs`). Default: "
        f"{','.join(api.DEFAULT_PAIR)}, or {api.DEFAULT_PAIR[0]} against the GPU of the sets you give."),
    results: Optional[Path] = typer.Option(
        None, "--results", help="A results tree of measured sets (<gpu-slug>/, spread/<gpu-slug>/); default: "
        "./results where there is one. Published references ship with llmbench."),
    full: bool = typer.Option(False, "--full", metavar="", help="Every table: the runs used, the projection by "
                              "parts and its validation, the prices and the sources."),
    price: Optional[list[str]] = PRICE_OPT,
    prices_file: Optional[Path] = PRICES_OPT,
    fmt: Fmt = FORMAT_OPT,
    out: Optional[Path] = OUT_OPT,
) -> None:
    """GPU X over GPU Y per workload: measured where both ran it, else a controlled published pair, else a
    validated projection by parts; otherwise 'not known — measure it', with the evidence range. Prices compare
    like for like (one offer class and date) or as you give them (--price / --prices)."""
    api.check_out_file(out)
    results = results if results is not None else (Path("results") if Path("results").is_dir() else None)
    answer = api.versus(files or [], gpus=gpus, results=results, prices=price or [], prices_file=prices_file)
    tables = all_tables(answer)
    emit(tables if full else tables[:1] + tables[2:3], fmt, out, answer.to_dict())


def register(app: typer.Typer) -> None:
    app.command("versus")(versus_cmd)
