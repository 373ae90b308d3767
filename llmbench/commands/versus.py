"""`llmbench versus`: the H100-vs-A100 answer, with your own A100's result sets in it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.analysis.a100 import build_answer, check_a100_sets
from llmbench.analysis.a100_data import H100, PRIMARY_A100
from llmbench.analysis.inputs import load_sets
from llmbench.analysis.prices import resolve_prices
from llmbench.commands.common import FORMAT_OPT, OUT_OPT, Fmt, check_out_file, emit
from llmbench.commands.costopts import PRICE_OPT, PRICES_OPT
from llmbench.errors import UserError
from llmbench.report.a100_view import all_tables, answer_table, evidence_table


def versus_cmd(
    files: Optional[list[Path]] = typer.Argument(
        None, help="Your A100's result sets or `llmbench oneshot` bundles (.tar.gz); none: the answer from "
        "published and projected figures only."),
    results: Path = typer.Option(
        Path("results"), "--results",
        help="The committed result sets to compare with: results/ of an llmbench checkout (<gpu-slug>/ and "
        "published/)."),
    full: bool = typer.Option(
        False, "--full", metavar="", help="Every table: the validation of the projection, the projected A100 "
        "figures, the prices and the sources, after the answer and its evidence."),
    price: Optional[list[str]] = PRICE_OPT,
    prices_file: Optional[Path] = PRICES_OPT,
    fmt: Fmt = FORMAT_OPT,
    out: Optional[Path] = OUT_OPT,
) -> None:
    """H100 vs A100 per headline workload: your A100's measurements (where given) against the committed H100
    sets, else published figures, else the H100 projected to the A100 with its validated error band; and
    whether the H100 is worth twice the A100's rent (at your prices: --price / --prices)."""
    check_out_file(out)
    if not (results / H100).is_dir():
        raise UserError(f"--results {str(results)!r}: no committed H100 result sets there ({results / H100}/); "
                        "run from an llmbench checkout or give --results PATH/TO/results")
    sets = [(stem, rs) for ref in load_sets(list(files or [])) for stem, rs in
            zip(ref.stems or [ref.stem], ref.all_runs, strict=True)]
    a100 = check_a100_sets(sets) or PRIMARY_A100
    prices = resolve_prices(list(price or []), prices_file, [H100, a100]) if price or prices_file else {}
    origin = f"--prices {prices_file}" if prices_file else ""
    origin += (" and " if origin and price else "") + ("--price" if price else "")
    answer = build_answer(results, sets, prices, origin)
    tables = all_tables(answer) if full else [answer_table(answer), evidence_table(answer)]
    emit(tables, fmt, out, answer.to_dict())


def register(app: typer.Typer) -> None:
    app.command("versus")(versus_cmd)
