"""What the reading commands render: answers from result sets (`show`, `spread`, `project`, `versus`) and
what llmbench knows without a measurement (`list`, `specs`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.analysis.inputs import SetRef, load_checked, name_sets, newest_in
from llmbench.analysis.labels import is_measured
from llmbench.analysis.pairs import DEFAULT_PAIR, PairAnswer, build_pair
from llmbench.analysis.prices import resolve_prices
from llmbench.analysis.project import Validation, project, spec_or_error, validate
from llmbench.analysis.runs import load_sets
from llmbench.analysis.spread import SpreadRow, spread_data, spread_rows
from llmbench.errors import UserError, choices_hint
from llmbench.hardware.specs import SPECS, GpuSpec, lookup
from llmbench.results import save
from llmbench.suite import PACKAGED, SuiteFile, available_suites, replaced_text


def newest_set(result: Path) -> SetRef:
    """A result set (a folder stands for its newest), named by its GPU."""
    if not result.exists():
        raise UserError(f"result set {str(result)!r} does not exist")
    path = newest_in(result) if result.is_dir() else result
    rs = load_checked(path)
    return SetRef(rs.gpu_slug, rs, path.stem)


@dataclass(frozen=True)
class Spread:
    """Each GPU's sets and each case's between-run spread over them (the one rule chose the runs)."""

    sets: list[SetRef]
    rows: list[SpreadRow]

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `llmbench spread`, with each side's noise floor."""
        return spread_data(self.sets, self.rows)


def spread(files: Sequence[Path], all_metrics: bool = False) -> Spread:
    """The between-run spread of each case of the result sets in `files`, per GPU."""
    sets = load_sets(list(files), by_gpu=True)
    rows = spread_rows(sets, all_metrics)
    if not any(r.between_run_cv is not None for r in rows):
        raise UserError(
            "no case was measured ok in two runs of one GPU and suite: give the result sets of "
            "`llmbench run SUITE --repeat N` (or of several runs of the same suite on the same GPU)"
        )
    return Spread(sets, rows)


def project_set(result: Path, to: str, out: Path | None = None) -> SetRef:
    """A measured result set projected to the GPU `to` by roofline scaling (written to `out` where given)."""
    from llmbench.api.checks import check_out_file

    if lookup(to) is None:
        raise UserError(f"--to {to!r} is not a GPU slug; {choices_hint(to, [s.slug for s in SPECS])}")
    check_out_file(out)
    projected = project(load_checked(result), to)
    if out is not None:
        save(projected, out)
    return name_sets([SetRef(name="", rs=projected, stem=f"{result.stem}-projected")])[0]


def validate_projection(projected: SetRef, against: Path) -> tuple[SetRef, Validation]:
    """The measured set on the target GPU and the projection's error against it."""
    measured = name_sets([SetRef(name="", rs=load_checked(against), stem=against.stem)])[0]
    return measured, validate(projected.rs, measured.rs)


def versus(files: Sequence[Path] = (), *, gpus: str | None = None, results: Path | None = None,
           prices: Sequence[str] = (), prices_file: Path | None = None) -> PairAnswer:
    """GPU X over GPU Y per workload (`gpus` 'X,Y'; default DEFAULT_PAIR, or its first against the GPU
    of the sets given), the user's measured sets joining the committed runs in `results`."""
    sets = [(stem, rs) for ref in load_sets(list(files)) for stem, rs in
            zip(ref.stems or [ref.stem], ref.all_runs, strict=True)]
    for name, rs in sets:
        if not is_measured(rs):
            raise UserError(f"{name}: a {rs.source.kind} result set; give your own measured sets")
    mine = sorted({rs.gpu_slug for _, rs in sets})
    a, _, b = (gpus or ",".join(DEFAULT_PAIR if mine in ([], [DEFAULT_PAIR[0]]) or len(mine) > 1
                                else (DEFAULT_PAIR[0], mine[0]))).partition(",")
    a, b = a.strip(), b.strip()
    if not b or a == b:
        raise UserError(f"--gpus {gpus!r}: give two different GPUs as X,Y, e.g. --gpus {','.join(DEFAULT_PAIR)}")
    other = [g for g in mine if g not in (a, b)]
    if other:
        raise UserError(f"your sets are of {', '.join(other)}, not of {a} or {b}; name the pair with --gpus")
    given = resolve_prices(list(prices), prices_file, [a, b]) if prices or prices_file else None
    return build_pair(a, b, results, sets, given)


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
