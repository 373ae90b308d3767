"""`llmbench list`: suites, scenarios, precisions, engines, metrics."""

from __future__ import annotations

import typer

from llmbench.commands.common import console
from llmbench.errors import UserError
from llmbench.report.tables import Table
from llmbench.report.terminal import print_terminal
from llmbench.suite import available_suites


def list_(what: str = typer.Argument("all", help="suites, scenarios, precisions, engines, metrics or all")) -> None:
    """List suites, scenarios, precisions, engines and metrics (with units and which way is better)."""
    from llmbench.engines.base import ENGINES
    from llmbench.metrics import METRICS
    from llmbench.precision import PRECISIONS
    from llmbench.scenarios.base import SCENARIOS

    sections = {
        "suites": lambda: [(n, str(p)) for n, p in available_suites().items()],
        "scenarios": lambda: [(n, c.description) for n, c in SCENARIOS],
        "precisions": lambda: [(p.name, p.description) for p in PRECISIONS.values()],
        "engines": lambda: [(n, c.description + (f"  [{c.missing_reason()}]" if c.missing_reason() else ""))
                            for n, c in ENGINES],
        "metrics": lambda: [(m.name, f"{m.unit}, {m.better} is better: {m.description}"
                             if m.better != "neither" else f"{m.unit}: {m.description}") for m in METRICS.values()],
    }
    if what != "all" and what not in sections:
        raise UserError(f"unknown list {what!r}; valid: {', '.join(sections)}, all")
    print_terminal([Table(name, [name.removesuffix("s"), "file" if name == "suites" else "description"],
                          [list(row) for row in sections[name]()], empty="none here")
                    for name in (sections if what == "all" else [what])], console)


def register(app: typer.Typer) -> None:
    app.command("list")(list_)
