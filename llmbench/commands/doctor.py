"""`llmbench doctor`: is the stack sound, does work really run on the GPU."""

from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape

from llmbench import api
from llmbench.commands.common import console


def doctor(
    gpus: Optional[str] = typer.Option(None, "--gpus", help="GPUs to check (CUDA_VISIBLE_DEVICES)."),
) -> None:
    """Check the stack: driver, CUDA, torch, that work really runs on the GPU, optional engines, MIG
    instances. Read-only: llmbench never enables or changes MIG (nvidia-smi mig, as root, does)."""
    ok = True
    for check in api.run_checks(gpus):
        style = {"ok": "green", "warn": "yellow", "fail": "red"}[check.level]
        ok &= check.level != "fail"
        console.print(f"[{style}]{check.level:4}[/{style}] {check.name}: {escape(check.detail)}")
    if not ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
