"""The command line, one module per command (as asv does); each has `register(app)`. `llmbench.cli`
builds the Typer app from them. This is the top layer: it may import anything below it."""

from llmbench.commands import (
    compare,
    doctor,
    fleet,
    listing,
    oneshot,
    project,
    report,
    run,
    serve_bench,
    show,
    specs,
    spread,
    versus,
)

ALL = (run, oneshot, listing, show, doctor, compare, report, spread, specs, project, versus, serve_bench, fleet)
