"""`llmbench project`: a measured result set projected to another GPU by roofline scaling."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from llmbench.analysis.inputs import SetRef, load_checked, name_sets
from llmbench.analysis.project import project, validate
from llmbench.commands.common import FORMAT_OPT, Fmt, check_out_file, emit
from llmbench.errors import UserError, choices_text
from llmbench.hardware.specs import SPECS, lookup
from llmbench.report.views import set_tables, validation_tables
from llmbench.results import save


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
    if lookup(to) is None:
        raise UserError(f"--to {to!r} is not a GPU slug; valid: {choices_text(s.slug for s in SPECS)}")
    check_out_file(out)
    src = load_checked(result)
    projected = project(src, to)
    if out is not None:
        save(projected, out)
        typer.echo(f"wrote {out}", err=True)
    ref = name_sets([SetRef(name="", rs=projected, stem=f"{result.stem}-projected")])[0]
    tables = set_tables(ref)
    data: dict[str, Any] = {"projected": projected.model_dump()}
    if validate_against is not None:
        measured = name_sets(
            [SetRef(name="", rs=load_checked(validate_against), stem=validate_against.stem)]
        )[0]
        v = validate(projected, measured.rs)
        tables += validation_tables(v, ref, measured)
        data["validation"] = v.to_dict()
    emit(tables, fmt, None, data)


def register(app: typer.Typer) -> None:
    app.command("project")(project_cmd)
