"""`llmbench specs`: the GPU spec table with its sources."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.analysis.project import spec_or_error
from llmbench.commands.common import FORMAT_OPT, OUT_OPT, Fmt, check_out_file, emit
from llmbench.hardware.specs import SPECS
from llmbench.report.specs_view import specs_tables


def specs_cmd(
    slugs: Optional[list[str]] = typer.Argument(None, help="GPU slugs to show (default: all)."),
    fmt: Fmt = FORMAT_OPT,
    out: Optional[Path] = OUT_OPT,
) -> None:
    """The GPU spec table: dense peak TFLOP/s per precision, bandwidth, memory, TDP, compute capability,
    and the datasheet each figure comes from."""
    check_out_file(out)
    chosen = [spec_or_error(s) for s in slugs] if slugs else list(SPECS)
    emit(specs_tables(chosen), fmt, out, {"specs": [s.__dict__ | {"cc": list(s.cc)} for s in chosen]})


def register(app: typer.Typer) -> None:
    app.command("specs")(specs_cmd)
