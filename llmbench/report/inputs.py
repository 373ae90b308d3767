"""Loading result sets named on the command line and naming them for display."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from llmbench.bundle import Bundle, is_bundle, read_bundle
from llmbench.errors import UserError, choices_text
from llmbench.report.labels import tag
from llmbench.results import ResultSet, load


@dataclass
class SetRef:
    """A result set with the short name it is shown and chosen by (`--baseline NAME`)."""

    name: str
    rs: ResultSet
    stem: str = ""

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


def load_sets(paths: list[Path]) -> list[SetRef]:
    """Load files (a folder stands for its newest result set, a bundle `.tar.gz` for every result set
    in it) and give each a unique short name: its GPU slug, or its file stem where two sets share a slug."""
    sets: list[SetRef] = []
    for p in paths:
        if is_bundle(p):
            b = load_bundle_checked(p)
            one = len(b.result_sets) == 1  # stem: the bundle's (usable as --baseline), with the suite if several
            sets += [SetRef(name="", rs=rs, stem=b.stem if one else f"{b.stem}:{rs.suite}") for _, rs in b.result_sets]
        else:
            f = newest_in(p) if p.is_dir() else p
            sets.append(SetRef(name="", rs=load_checked(f), stem=f.stem))
    return name_sets(sets)


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
    hits = [i for i, s in enumerate(sets) if name in (s.name, s.stem)]
    if not hits:
        hits = [i for i, s in enumerate(sets) if s.rs.gpu_slug == name]
    if len(hits) == 1:
        return hits[0]
    valid = sorted({s.name for s in sets} | {s.stem for s in sets if s.stem})
    if not hits:
        raise UserError(f"--baseline {name!r} names none of the result sets; valid: {choices_text(valid)}")
    raise UserError(
        f"--baseline {name!r} is ambiguous ({len(hits)} sets); use a file stem: {choices_text(valid)}"
    )
