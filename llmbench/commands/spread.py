"""`llmbench spread`: the between-run spread of each case over several runs (the noise floor)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.analysis.inputs import load_sets
from llmbench.analysis.spread import noise_floor, spread_rows
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
    """Print each case's between-run spread: the runs' medians and their CV, from result sets of the
    same GPU and suite (the passes of `run --repeat N`, and runs from other leases: all are pooled), and
    the noise floor a ratio must clear."""
    check_out_file(out)
    sets = load_sets(files, pool=True)
    rows = spread_rows(sets, all_metrics)
    if not any(r.between_run_cv is not None for r in rows):
        raise UserError(
            "no case was measured ok in two runs of one GPU and suite: give the result sets of "
            "`llmbench run SUITE --repeat N` (or of several runs of the same suite on the same GPU)"
        )
    data = {
        "sets": [{"name": s.name, "gpu": s.rs.gpu_slug, "suite": s.rs.suite, "runs": len(s.all_runs),
                  "machines": s.machines, "files": s.stems} for s in sets],
        "rows": [r.to_dict() for r in rows],
        "noise_floor": noise_floor(rows),
    }
    emit(spread_tables(sets, rows), fmt, out, data)


def register(app: typer.Typer) -> None:
    app.command("spread")(spread_cmd)
