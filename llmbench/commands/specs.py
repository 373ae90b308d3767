"""`llmbench specs`: the GPU spec table with its sources."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench import api
from llmbench.commands.common import FORMAT_OPT, OUT_OPT, Fmt, emit
from llmbench.report.specs_view import specs_tables


def specs_cmd(
    slugs: Optional[list[str]] = typer.Argument(None, help="GPU slugs to show (default: all)."),
    fmt: Fmt = FORMAT_OPT,
    out: Optional[Path] = OUT_OPT,
) -> None:
    """The GPU spec table: dense peak TFLOP/s per precision, bandwidth, memory, TDP, compute capability,
    and the datasheet each figure comes from."""
    api.check_out_file(out)
    chosen = api.gpu_specs(slugs or [])
    emit(specs_tables(chosen), fmt, out, {"specs": [s.__dict__ | {"cc": list(s.cc)} for s in chosen]})


def register(app: typer.Typer) -> None:
    app.command("specs")(specs_cmd)
