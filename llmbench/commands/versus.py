"""`llmbench versus`: GPU X vs GPU Y per workload, with your own result sets in it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.analysis.labels import is_measured
from llmbench.analysis.pairs import DEFAULT_PAIR, build_pair
from llmbench.analysis.prices import resolve_prices
from llmbench.analysis.runs import load_sets
from llmbench.commands.common import FORMAT_OPT, OUT_OPT, Fmt, check_out_file, emit
from llmbench.commands.costopts import PRICE_OPT, PRICES_OPT
from llmbench.errors import UserError
from llmbench.report.pair_view import all_tables


def versus_cmd(
    files: Optional[list[Path]] = typer.Argument(
        None, help="Your own measured result sets or `llmbench oneshot` bundles (.tar.gz) of either GPU: they join "
        "the committed runs of that GPU."),
    gpus: Optional[str] = typer.Option(
        None, "--gpus", help="The two GPUs, X,Y (spec-table slugs: `llmbench specs`). Default: "
        f"{','.join(DEFAULT_PAIR)}, or {DEFAULT_PAIR[0]} against the GPU of the sets you give."),
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
    check_out_file(out)
    sets = [(stem, rs) for ref in load_sets(list(files or [])) for stem, rs in
            zip(ref.stems or [ref.stem], ref.all_runs, strict=True)]
    for name, rs in sets:
        if not is_measured(rs):
            raise UserError(f"{name}: a {rs.source.kind} result set; give your own measured sets")
    mine = sorted({rs.gpu_slug for _, rs in sets})
    a, _, b = (gpus or ",".join(DEFAULT_PAIR if mine in ([], [DEFAULT_PAIR[0]]) or len(mine) > 1
                                else (DEFAULT_PAIR[0], mine[0]))).partition(",")
    a, b = a.strip(), b.strip()
    if not b or a == b:
        raise UserError(f"--gpus {gpus!r}: give two different GPUs as X,Y, e.g. --gpus {','.join(DEFAULT_PAIR)}")
    other = [g for g in mine if g not in (a, b)]
    if other:
        raise UserError(f"your sets are of {', '.join(other)}, not of {a} or {b}; name the pair with --gpus")
    results = results if results is not None else (Path("results") if Path("results").is_dir() else None)
    given = resolve_prices(list(price or []), prices_file, [a, b]) if price or prices_file else None
    answer = build_pair(a, b, results, sets, given)
    tables = all_tables(answer)
    emit(tables if full else tables[:1] + tables[2:3], fmt, out, answer.to_dict())


def register(app: typer.Typer) -> None:
    app.command("versus")(versus_cmd)
