"""Loading result sets named on the command line and naming them for display."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from llmbench.analysis.labels import gpu_name, tag
from llmbench.bundle import Bundle, is_bundle, read_bundle
from llmbench.errors import UserError, choices_text
from llmbench.results import CaseResult, ResultSet, load


def machine_count(runs: list[ResultSet]) -> int | None:
    """Distinct machines (GPU sets, by their anonymous id) among the runs; None where a run did not
    record one."""
    ids = [r.machine for r in runs]
    return None if any(i is None for i in ids) else len(set(ids))


@dataclass
class SetRef:
    """A result set with the short name it is shown and chosen by (`--baseline NAME`). A side that pools
    several runs (the passes of `run --repeat`, or `--pool`) keeps them all in `runs`, `rs` being the
    first: env, suite and name come from it, the figures from every run."""

    name: str
    rs: ResultSet
    stem: str = ""
    runs: list[ResultSet] = field(default_factory=list)  # every pooled run, rs among them; empty: rs alone
    stems: list[str] = field(default_factory=list)  # the file stems of the pooled runs

    @property
    def all_runs(self) -> list[ResultSet]:
        return self.runs or [self.rs]

    @property
    def machines(self) -> int | None:
        """How many machines measured the runs (`machine_count`)."""
        return machine_count(self.all_runs)

    def case_runs(self, case_id: str) -> list[CaseResult]:
        """The case as each run has it (runs without it left out)."""
        return [c for c in (r.case(case_id) for r in self.all_runs) if c is not None]

    def case(self, case_id: str) -> CaseResult | None:
        """The case as the side shows it: its first `ok` run, else its first run; None: in no run."""
        found = self.case_runs(case_id)
        return next((c for c in found if c.status == "ok"), found[0] if found else None)

    def cases(self) -> list[CaseResult]:
        """Each case of the side once (`case`), in first-seen order over the runs."""
        ids = list(dict.fromkeys(c.id for r in self.all_runs for c in r.cases))
        return [c for c in (self.case(i) for i in ids) if c is not None]

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


def newest_group_in(folder: Path) -> list[Path]:
    """The newest result set in a folder and, when it is a pass of `run --repeat`, the other passes of
    its repeat group there."""
    newest = newest_in(folder)
    group = (load_checked(newest).repeat_info or {}).get("group")
    if not group:
        return [newest]
    return [p for p in sorted(folder.glob("*.json")) if (load_checked(p).repeat_info or {}).get("group") == group]


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


def load_sets(paths: list[Path], pool: bool = False) -> list[SetRef]:
    """Load files (a folder stands for its newest result set, with the rest of its repeat group; a
    bundle `.tar.gz` from oneshot for every result set in it) into sides: the runs of one repeat group
    are one side, and with `pool` so are all measured sets of one GPU and suite (several leases). Each
    side gets a unique short name: its GPU slug, or its file stem where two sides share a slug."""
    loaded: list[tuple[str, ResultSet]] = []  # (stem, set) in the order given
    seen: set[Path] = set()  # resolved: a file named twice (a folder and a glob, a/x.json and b/../a/x.json) is one run
    for p in paths:
        if is_bundle(p):
            if p.resolve() in seen:
                continue
            b = load_bundle_checked(p)
            seen.add(p.resolve())
            one = len(b.result_sets) == 1  # stem: the bundle's (usable as --baseline), with the suite if several
            loaded += [(b.stem if one else f"{b.stem}:{rs.suite}", rs) for _, rs in b.result_sets]
            continue
        for f in newest_group_in(p) if p.is_dir() else [p]:
            if f.resolve() not in seen:
                seen.add(f.resolve())
                loaded.append((f.stem, load_checked(f)))
    sides: dict[tuple[str, ...], list[tuple[str, ResultSet]]] = {}
    for i, (stem, rs) in enumerate(loaded):
        sides.setdefault(pool_key(rs, i, pool), []).append((stem, rs))
    sets = [
        SetRef(name="", rs=members[0][1], stem=members[0][0],
               runs=[rs for _, rs in members] if len(members) > 1 else [],
               stems=[stem for stem, _ in members])
        for members in sides.values()
    ]
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
    hits = [i for i, s in enumerate(sets) if name in (s.name, s.stem, *s.stems)]
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
