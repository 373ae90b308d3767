"""Which result sets `llmbench compare` joins, and on which cases (docs/design.md, "Which sets join")."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from llmbench.analysis.inputs import SetRef, name_sets, side_names
from llmbench.analysis.labels import gpu_name, is_measured
from llmbench.errors import UserError

NOT_MEASUREMENT_SETTINGS = frozenset({"timeout_s"})  # how long a case may take, not how it is timed
MIX_OPTION = "--mix-suites"


@dataclass
class JoinPlan:
    """The comparisons to make: groups of sides, each with the lines that say how it was joined, and
    the sides left out (a suite with no other side)."""

    groups: list[list[SetRef]]
    notes: list[list[str]]
    left_out: list[str]


def measurement_settings(settings: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if k not in NOT_MEASUREMENT_SETTINGS}


def _differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [f"{k} {a.get(k)} vs {b.get(k)}" for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]


def settings_conflicts(sets: list[SetRef]) -> dict[str, list[str]]:
    """Case id -> how its measurement settings differ between the measured sides that hold it (cases
    whose sides agree, or that one side holds, are not listed; a side that recorded no settings agrees)."""
    out: dict[str, list[str]] = {}
    ids = dict.fromkeys(c.id for s in sets for c in s.cases())
    for cid in ids:
        held = [c.settings for s in sets if is_measured(s.rs) and (c := s.case(cid)) is not None and c.settings]
        found = [measurement_settings(x) for x in held]
        diff = next((d for x in found[1:] if (d := _differences(found[0], x))), None)
        if diff:
            out[cid] = diff
    return out


def without_cases(s: SetRef, drop: set[str]) -> SetRef:
    """The side with the cases `drop` left out of every run."""
    return s.only({c.id for r in [s.rs, *s.runs] for c in r.cases} - drop)


def _renamed(group: list[SetRef]) -> list[SetRef]:
    """The sides of one comparison named among themselves (a slug where it is unique there)."""
    return name_sets([replace(s, name="") for s in group])


def _shared(sets: list[SetRef]) -> set[str]:
    seen: dict[str, int] = {}
    for s in sets:
        for c in s.cases():
            seen[c.id] = seen.get(c.id, 0) + 1
    return {cid for cid, n in seen.items() if n > 1}


def plan_joins(sets: list[SetRef], mix: bool = False) -> JoinPlan:
    """The comparisons `compare` makes of `sets` (see the module doc); a UserError (exit 2) where the sides
    share cases only under different settings. GPUs' sides of the one rule (`SetRef.chosen`) span suites:
    they are joined case by case."""
    suites = list(dict.fromkeys(s.rs.suite for s in sets))
    rule = any(s.chosen is not None for s in sets)
    if len(suites) == 1 and not rule:
        return JoinPlan([sets], [[]], [])
    names = side_names(sets)
    listed = "; ".join(f"{n}: {s.rs.suite}" for n, s in zip(names, sets, strict=True))
    joined = "Each GPU's runs chosen case by case (analysis/runs.py)" if rule else f"Suites differ ({listed})"
    if mix:
        return JoinPlan([sets], [[f"{joined}: joined on every case they share ({MIX_OPTION}), whatever settings "
                                  "each suite measured it with."]], [])
    by_suite = {suite: [s for s in sets if s.rs.suite == suite] for suite in suites}
    paired = [g for g in by_suite.values() if len(g) > 1]
    if paired and not rule:
        alone = [f"{g[0].rs.suite} ({gpu_name(g[0].rs)})" for g in by_suite.values() if len(g) == 1]
        left = [f"Not compared, no other result set of their suite: {', '.join(alone)} ({MIX_OPTION} joins "
                "sets of different suites)."] if alone else []
        return JoinPlan([_renamed(g) for g in paired], [[] for _ in paired], left)
    shared = _shared(sets)
    conflicts = settings_conflicts(sets)
    kept = shared - conflicts.keys()
    if shared and not kept:
        first = next(iter(conflicts.values()))
        raise UserError(f"the {len(shared)} case(s) the result sets share ({listed}) were measured with different "
                        f"settings ({', '.join(first)}): compare result sets of the same suite, or pass {MIX_OPTION} "
                        "to join them anyway")
    if rule and not conflicts:
        return JoinPlan([sets], [[]], [])
    note = f"{joined}: joined on the {len(kept)} case(s) they share that were measured with the same settings"
    if conflicts:
        note += (f"; {len(conflicts)} shared case(s) measured with different settings "
                 f"({', '.join(next(iter(conflicts.values())))}) are left out ({MIX_OPTION} joins them)")
    return JoinPlan([[without_cases(s, set(conflicts)) for s in sets]], [[note + "."]], [])
