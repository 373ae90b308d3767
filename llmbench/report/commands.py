"""The `compare`, `report`, `specs` and `project` commands; the lead's cli.py calls `register(app)`."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from llmbench.errors import UserError, choices_text
from llmbench.hardware.specs import SPECS, lookup
from llmbench.report.basediff import base_diff, parse_base
from llmbench.report.compare import compare, headline_metrics
from llmbench.report.inputs import SetRef, load_checked, load_sets, name_sets, resolve_baseline
from llmbench.report.project import project, spec_or_error, validate
from llmbench.report.specs_view import specs_tables
from llmbench.report.tables import Table, print_terminal, render
from llmbench.report.views import basediff_tables, comparison_tables, set_tables, validation_tables
from llmbench.results import save


class Fmt(str, Enum):
    terminal = "terminal"
    markdown = "markdown"
    csv = "csv"
    json = "json"


FILES_ARG = typer.Argument(..., help="Result set JSON files (a folder stands for its newest result set).")
FORMAT_OPT = typer.Option(Fmt.terminal, "--format", "-f", help="Output format.")
OUT_OPT = typer.Option(None, "--out", "-o", help="Write to this file instead of standard output.")


def emit(tables: list[Table], fmt: Fmt, out: Path | None, data: dict[str, Any] | None = None) -> None:
    """Print `tables` (terminal: with colour) or write them to `out` in the chosen format."""
    if out is None and fmt is Fmt.terminal:
        print_terminal(tables, Console())
        return
    text = render(tables, fmt.value, data=data)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}", err=True)


def compare_cmd(
    files: list[Path] = FILES_ARG,
    baseline: Optional[str] = typer.Option(
        None,
        "--baseline",
        "-b",
        help="The set the others are measured against: a GPU slug or a file stem (default: the first file).",
    ),
    base: Optional[str] = typer.Option(
        None,
        "--base",
        help="Within each set, compare every case with the case that differs only in this "
        "param, e.g. --base precision=bf16 (works with a single file).",
    ),
    fmt: Fmt = FORMAT_OPT,
    out: Optional[Path] = OUT_OPT,
    headline: bool = typer.Option(
        False, "--headline", help="Only each scenario's headline metrics, peak memory and energy per unit."
    ),
) -> None:
    """Compare result sets case by case: ratios oriented so > 1 means better than the baseline, with
    95% bootstrap CIs, geometric means, and every missing or failed case listed."""
    sets = load_sets(files)
    if len(sets) < 2 and base is None:
        raise UserError("compare needs two or more result sets, or --base KEY=VALUE to compare within one")
    tables: list[Table] = []
    data: dict[str, Any] = {}
    if len(sets) >= 2:
        cmp = compare(sets, resolve_baseline(sets, baseline), headline_metrics() if headline else None)
        tables += comparison_tables(cmp)
        data["comparison"] = cmp.to_dict()
    elif baseline is not None:
        resolve_baseline(sets, baseline)
    if base is not None:
        key, value = parse_base(base)
        diffs = [base_diff(s, key, value) for s in sets]
        tables += [t for d in diffs for t in basediff_tables(d)]
        data["base_diffs"] = [d.to_dict() for d in diffs]
    emit(tables, fmt, out, data)


def report_cmd(
    files: list[Path] = FILES_ARG,
    baseline: Optional[str] = typer.Option(
        None, "--baseline", "-b", help="GPU slug or file stem of the baseline."
    ),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="The HTML file to write."),
    title: str = typer.Option("llmbench report", help="Page title."),
    all_metrics: bool = typer.Option(
        False, "--all-metrics", help="Every metric (default: each scenario's headline metrics, memory, energy)."
    ),
) -> None:
    """Write a self-contained HTML page (tables and charts, no external resources) for one result set
    or a comparison of several."""
    sets = load_sets(files)
    try:  # plots need matplotlib, an optional extra: the other commands work without it
        from llmbench.report.html import Section, render_html
    except ModuleNotFoundError as e:
        raise UserError(
            f"llmbench report needs {e.name}, which is not installed: pip install 'llmbench[report]'"
        ) from None
    section = Section(
        title if len(sets) == 1 else "Comparison",
        sets,
        resolve_baseline(sets, baseline),
        None if all_metrics else frozenset(headline_metrics()),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html([section], title), encoding="utf-8")
    typer.echo(f"wrote {out}", err=True)


def specs_cmd(
    slugs: Optional[list[str]] = typer.Argument(None, help="GPU slugs to show (default: all)."),
    fmt: Fmt = FORMAT_OPT,
    out: Optional[Path] = OUT_OPT,
) -> None:
    """The GPU spec table: dense peak TFLOP/s per precision, bandwidth, memory, TDP, compute capability,
    and the datasheet each figure comes from."""
    chosen = [spec_or_error(s) for s in slugs] if slugs else list(SPECS)
    emit(specs_tables(chosen), fmt, out, {"specs": [s.__dict__ | {"cc": list(s.cc)} for s in chosen]})


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
    """Add compare, report, specs and project to the llmbench CLI."""
    app.command("compare")(compare_cmd)
    app.command("report")(report_cmd)
    app.command("specs")(specs_cmd)
    app.command("project")(project_cmd)
