"""What llmbench knows without a measurement, for `list` and `specs`: its suites, scenarios, precisions,
engines and metrics, and the GPU spec table."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from llmbench.analysis.project import spec_or_error
from llmbench.hardware.specs import SPECS, GpuSpec
from llmbench.suite import PACKAGED, SuiteFile, available_suites, replaced_text


def gpu_specs(slugs: Sequence[str] = ()) -> list[GpuSpec]:
    """The spec table's GPUs named (a UserError for an unknown slug), or all."""
    return [spec_or_error(s) for s in slugs] if slugs else list(SPECS)


def suite_row(s: SuiteFile) -> tuple[str, str]:
    """A suite's name and where it comes from: shipped with llmbench, or the user's file (and what
    it replaces)."""
    if s.origin == PACKAGED:
        return s.name, "packaged"
    instead = f" (replaces {replaced_text(s.replaces)})" if s.replaces else ""
    return s.name, f"{s.origin}: {s.path}{instead}"


def listings(suite_dirs: Sequence[Path] = ()) -> dict[str, Callable[[], list[tuple[str, str]]]]:
    """Each list (suites, scenarios, precisions, engines, metrics) as (name, description) rows, made
    when asked for: listing scenarios or engines imports every one of them."""
    from llmbench.engines.base import ENGINES
    from llmbench.metrics import METRICS
    from llmbench.precision import PRECISIONS
    from llmbench.scenarios.base import SCENARIOS

    return {
        "suites": lambda: [suite_row(s) for s in available_suites(list(suite_dirs)).values()],
        "scenarios": lambda: [(n, c.description) for n, c in SCENARIOS],
        "precisions": lambda: [(p.name, p.description) for p in PRECISIONS.values()],
        "engines": lambda: [(n, c.summary() + (f"  [{c.missing_reason()}]" if c.missing_reason() else ""))
                            for n, c in ENGINES],
        "metrics": lambda: [(m.name, f"{m.unit}, {m.better} is better: {m.description}"
                             if m.better != "neither" else f"{m.unit}: {m.description}") for m in METRICS.values()],
    }
