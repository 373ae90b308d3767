"""Loading result sets named on the command line and naming them for display."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from llmbench.analysis.labels import gpu_name, tag
from llmbench.bundle import Bundle, is_bundle, read_bundle
from llmbench.errors import UserError, choices_hint, choices_text
from llmbench.results import CaseResult, ResultSet, load


class Chosen(Protocol):
    """What a side chosen by the one rule answers (analysis/runs.py's `GpuRuns`, which builds on this
    module): each case's chosen runs with their sets, and the side cut to some cases."""

    def case_sets(self, case_id: str) -> list[tuple[ResultSet, CaseResult]]: ...

    def only_side(self, ids: set[str], name: str) -> SetRef: ...

    @property
    def left_out(self) -> Sequence[object]: ...

SPREAD_DIR = "spread"  # results/spread/<gpu-slug>/: a GPU's extra runs of a suite, measured for the noise floor
PUBLISHED_DIR = "published"  # results/published/<gpu-slug>/: published reference sets


def machine_count(runs: list[ResultSet]) -> int | None:
    """Distinct machines (GPU sets, by their anonymous id) among the runs; None where a run did not
    record one."""
    ids = [r.machine for r in runs]
    return None if any(i is None for i in ids) else len(set(ids))


@dataclass
class SetRef:
    """A result set with the short name it is shown and chosen by (`--baseline NAME`). A side that pools
    several runs (the passes of `run --repeat`, or `--pool`) keeps them all in `runs`, `rs` being the
    first: env, suite and name come from it, the figures from every run. A GPU's side chosen by the one
    rule (analysis/runs.py: `GpuRuns.side`) has `chosen`: each case's runs are its chosen runs, `rs` holds
    each case once with its pooled figure, `runs` the files the chosen runs came from."""

    name: str
    rs: ResultSet
    stem: str = ""
    runs: list[ResultSet] = field(default_factory=list)  # every pooled run, rs among them; empty: rs alone
    stems: list[str] = field(default_factory=list)  # the file stems of the pooled runs
    chosen: Chosen | None = None

    @property
    def all_runs(self) -> list[ResultSet]:
        return self.runs or [self.rs]

    @property
    def machines(self) -> int | None:
        """How many machines measured the runs (`machine_count`)."""
        return machine_count(self.all_runs)

    def case_sets(self, case_id: str) -> list[tuple[ResultSet, CaseResult]]:
        """Each run of the case with the set it is in: the chosen runs (those of a case never ok where it
        has none), else the case in every run that holds it."""
        if self.chosen is not None:
            return self.chosen.case_sets(case_id)
        return [(r, c) for r in self.all_runs if (c := r.case(case_id)) is not None]

    def case_runs(self, case_id: str) -> list[CaseResult]:
        """The case as each run has it (runs without it left out)."""
        return [c for _, c in self.case_sets(case_id)]

    def case(self, case_id: str) -> CaseResult | None:
        """The case as the side shows it: its first `ok` run, else its first run; None: in no run."""
        found = self.case_runs(case_id)
        return next((c for c in found if c.status == "ok"), found[0] if found else None)

    def cases(self) -> list[CaseResult]:
        """Each case of the side once (`case`), in first-seen order over the runs."""
        sets = [self.rs] if self.chosen is not None else self.all_runs
        ids = list(dict.fromkeys(c.id for r in sets for c in r.cases))
        return [c for c in (self.case(i) for i in ids) if c is not None]

    def only(self, ids: set[str]) -> SetRef:
        """The side with the cases `ids` only, in every run."""
        if self.chosen is not None:
            return self.chosen.only_side(ids, self.name)

        def cut(rs: ResultSet) -> ResultSet:
            return rs.model_copy(update={"cases": [c for c in rs.cases if c.id in ids]})
        return replace(self, rs=cut(self.rs), runs=[cut(r) for r in self.runs])

    @property
    def label(self) -> str:
        """The name plus '[published]' / '[projected]' where the figures were not measured here."""
        return f"{self.name}{tag(self.rs)}"

    @property
    def kind(self) -> str:
        return self.rs.source.kind


def newest_in(folder: Path) -> Path:
    """The newest result set in a folder (by created_at, then file name)."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise UserError(f"{folder}: no result sets (*.json) in this folder")
    return max(files, key=lambda p: (load_checked(p).created_at, p.name))


def load_checked(path: Path) -> ResultSet:
    """`results.load`, with a missing or malformed file turned into a message naming it (exit 2)."""
    if not path.exists():
        raise UserError(f"{path}: no such file")
    try:
        return load(path)
    except (ValueError, ValidationError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not a readable llmbench result set: {e}") from None


def folder_files(folder: Path) -> list[Path]:
    """Every result set of a folder, and where the folder is results/<slug> of a results tree, the GPU's
    spread runs beside it (results/spread/<slug>/)."""
    spread = folder.parent / SPREAD_DIR / folder.name
    files = sorted(folder.glob("*.json")) + (sorted(spread.glob("*.json")) if spread.is_dir() else [])
    if not files:
        raise UserError(f"{folder}: no result sets (*.json) in this folder")
    return files


def pool_key(rs: ResultSet, index: int, pool: bool) -> tuple[str, ...]:
    """Which side a set joins: the passes of one repeat group always pool; with `pool`, every measured
    set of the same GPU and suite; a published or projected set is always a side of its own."""
    if rs.source.kind != "measured":
        return ("single", str(index))
    if pool:
        return ("pool", rs.gpu_slug, rs.suite)
    group = (rs.repeat_info or {}).get("group")
    return ("group", str(group)) if group else ("single", str(index))


def load_bundle_checked(path: Path) -> Bundle:
    """`bundle.read_bundle`, with a missing or unreadable bundle turned into a message naming it (exit 2)."""
    if not path.exists():
        raise UserError(f"{path}: no such file")
    try:
        b = read_bundle(path)
    except (ValueError, ValidationError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not a readable llmbench bundle: {e}") from None
    if not b.result_sets:
        raise UserError(f"{path}: the bundle holds no result set")
    return b


def read_inputs(paths: list[Path]) -> list[tuple[str, str, ResultSet]]:
    """(stem, where, set) of every result set the paths name, each once: a file; a folder's every set
    (`folder_files`); a oneshot bundle's every set (stem: the bundle's, with the suite where it holds
    several; where: bundle:member)."""
    check_exist(paths)
    loaded: list[tuple[str, str, ResultSet]] = []
    seen: set[Path] = set()  # resolved: a file named twice (a folder and a glob, a/x.json and b/../a/x.json) is one run
    for p in paths:
        if is_bundle(p):
            if p.resolve() in seen:
                continue
            b = load_bundle_checked(p)
            seen.add(p.resolve())
            one = len(b.result_sets) == 1  # stem: the bundle's (usable as --baseline), with the suite if several
            loaded += [(b.stem if one else f"{b.stem}:{rs.suite}", f"{shown(p)}:{member}", rs)
                       for member, rs in b.result_sets]
            continue
        for f in folder_files(p) if p.is_dir() else [p]:
            if f.resolve() not in seen:
                seen.add(f.resolve())
                loaded.append((f.stem, shown(f), load_checked(f)))
    return loaded


def check_exist(paths: list[Path]) -> None:
    """Every path given is there; else one error naming each one that is not (a mistyped glob or two
    are fixed in one go, not one per run)."""
    missing = list(dict.fromkeys(str(p) for p in paths if not p.exists()))
    if len(missing) == 1:
        raise UserError(f"{missing[0]}: no such file")
    if missing:
        raise UserError(f"no such files ({len(missing)} of {len(paths)} given): {choices_text(missing)}")


def shown(path: Path) -> str:
    """A path as a listing shows it: relative to the working directory where it lies under it."""
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel


def name_sets(sets: list[SetRef]) -> list[SetRef]:
    slugs = [s.rs.gpu_slug for s in sets]
    for i, s in enumerate(sets):
        if s.name:
            continue
        unique = slugs.count(s.rs.gpu_slug) == 1
        s.name = s.rs.gpu_slug if unique else f"{s.rs.gpu_slug}/{s.stem or s.rs.suite}"
        if any(o.name == s.name for o in sets[:i]):
            s.name = f"{s.name}#{i + 1}"
    return sets


def resolve_baseline(sets: list[SetRef], name: str | None) -> int:
    """Index of the baseline: the set whose name, GPU slug or file stem is `name` (default: the first)."""
    if name is None:
        return 0
    hits = [i for i, s in enumerate(sets) if name in (s.name, s.stem, *s.stems)]
    if not hits:
        hits = [i for i, s in enumerate(sets) if s.rs.gpu_slug == name]
    if len(hits) == 1:
        return hits[0]
    valid = sorted({s.name for s in sets} | {s.stem for s in sets if s.stem})
    if not hits:
        raise UserError(f"--baseline {name!r} names none of the result sets; {choices_hint(name, valid)}")
    raise UserError(
        f"--baseline {name!r} is ambiguous ({len(hits)} sets); use a file stem: {choices_text(valid)}"
    )


def display_names(sets: list[SetRef]) -> list[SetRef]:
    """Copies of `sets` named as pages read by people name them (`side_names`, the tag left to `label`);
    the originals keep their names (`--baseline`, Markdown)."""
    return [replace(s, name=n.replace(tag(s.rs), "", 1)) for s, n in zip(sets, side_names(sets), strict=True)]


def side_names(sets: list[SetRef]) -> list[str]:
    """What each side is called where a person reads the answer: its GPU's name ('H200 SXM 141GB'), with
    its '[published]' / '[projected]' tag; sides of one GPU are told apart by their suite, else the day
    they were measured, else the minute, else their file stem."""
    gpus = [f"{gpu_name(s.rs)}{tag(s.rs)}" for s in sets]
    if len(set(gpus)) == len(gpus):
        return gpus
    for tell in (lambda s: s.rs.suite, lambda s: s.rs.created_at[:10], lambda s: s.rs.created_at[:16].replace("T", " "),
                 lambda s: s.stem or s.name):
        names = [g if gpus.count(g) == 1 else f"{g} ({tell(s)})" for g, s in zip(gpus, sets, strict=True)]
        if len(set(names)) == len(names):
            return names
    return [f"{g} ({s.name})" for g, s in zip(gpus, sets, strict=True)]
