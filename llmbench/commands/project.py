"""`llmbench project`: a measured result set projected to another GPU by roofline scaling."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from llmbench import api
from llmbench.commands.common import FORMAT_OPT, Fmt, emit
from llmbench.report.views import set_tables, validation_tables


def project_cmd(
    result: Path = typer.Argument(..., help="A measured result set JSON file."),
    to: str = typer.Option(..., "--to", help="Target GPU slug (see `llmbench specs`)."),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="Write the projected result set (JSON) here."
    ),
    validate_against: Optional[Path] = typer.Option(
        None, "--validate", help="A measured result set on the target GPU: report the projection's error."
    ),
    fmt: Fmt = FORMAT_OPT,
) -> None:
    """Project a measured result set to another GPU by roofline scaling (memory-bound parts by the
    bandwidth ratio, compute-bound parts by the peak TFLOP/s ratio). Estimates, labelled 'projected'."""
    ref = api.project_set(result, to, out)
    if out is not None:
        typer.echo(f"wrote {out}", err=True)
    tables = set_tables(ref)
    data: dict[str, Any] = {"projected": ref.rs.model_dump()}
    if validate_against is not None:
        measured, v = api.validate_projection(ref, validate_against)
        tables += validation_tables(v, ref, measured)
        data["validation"] = v.to_dict()
    emit(tables, fmt, None, data)


def register(app: typer.Typer) -> None:
    app.command("project")(project_cmd)
