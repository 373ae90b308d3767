"""The answer of a comparison on one screen: what `llmbench compare` prints first, in the terminal and in
Markdown (docs/design.md, "What `compare` prints"); `views.comparison_tables` holds the details."""

from __future__ import annotations

import math

from llmbench.analysis.compare import HOST_BOUND, SPEED_UNITS, Comparison, Geomean, Ratio, case_speed_ratios
from llmbench.analysis.inputs import SetRef, side_names
from llmbench.analysis.pooled import RUNS_CI_METHOD
from llmbench.metrics import METRICS
from llmbench.report.tables import Table, ratio_text
from llmbench.report.views import source_notes
from llmbench.scenarios.base import SCENARIOS

MOST_DIFFERENT = 5  # cases shown: the highest and the lowest ratios
MAX_METRIC_ROWS = 10
MAX_ENV_WARNINGS = 4
EXPECTED_ENV_KEYS = frozenset({"gpu.name", "gpu.memory_gib"})  # the GPUs differ: that is the comparison
ENERGY_PER_UNIT = ("energy_j_per_token", "energy_j_per_sample")
BASIS_TEXT = {
    "single run": "from the samples of one run per side: not a 95% interval of the GPUs' ratio (the spread "
                  "between runs is not in it)",
    "runs": "from the spread between runs and between machines",
    "noise floor": "widened by the measured noise floor between runs and machines",
}


def interval_basis(r: Ratio, runs: list[int]) -> str:
    """What a ratio's interval rests on: the `basis` the comparison gives it where it does, else 'runs'
    (a side pools several runs: a between-run interval) or 'single run' (within-run samples only)."""
    basis = getattr(r, "basis", None)
    if basis:
        return str(basis)
    return "runs" if r.method == RUNS_CI_METHOD or max(runs, default=1) > 1 else "single run"


def _ratio_sentence(r: Ratio | None, other: str, base: str, cells: int, cases: str, runs: list[int]) -> str:
    if r is None:
        return f"{other}: no speed metric was measured ok on both {other} and {base}."
    text = f"{other} runs at {r.value:.2f}x the speed of {base}"
    if r.ci is None:
        text += f" (no 95% interval: {r.note})" if r.note else " (no interval: a side has no raw samples)"
    else:
        basis = interval_basis(r, runs)
        kind = "interval" if basis == "single run" else "95% interval"
        text += f", {kind} [{r.ci[0]:.2f}, {r.ci[1]:.2f}] {BASIS_TEXT.get(basis, f'({basis})')}"
    return f"{text}; geometric mean of {cells} speed cells over {cases}."


def _runs_text(runs: int, machines: int | None) -> str:
    head = f"{runs} run{'s' if runs != 1 else ''}"
    return f"{head}, {machines} machine{'s' if machines != 1 else ''}" if machines is not None else \
        f"{head} (machine not recorded)"


def side_noise(cmp: Comparison, i: int) -> float | None:
    """The largest between-run CV of side `i` over its speed metrics (None: no speed metric of it was
    measured in two runs or more)."""
    cvs = [cv for r in cmp.rows if r.unit in SPEED_UNITS and (cv := _at(r.between_run_cv, i)) is not None]
    return max(cvs) if cvs else None


def _at(values: list[float | None], i: int) -> float | None:
    return values[i] if i < len(values) else None


def _overall(cmp: Comparison) -> Geomean | None:
    return next((g for g in cmp.geomeans if g.scenario == "overall" and g.metric == "speed"), None)


def sides_table(cmp: Comparison, names: list[str], notes: list[str]) -> Table:
    """The answer itself: a sentence per GPU pair, then what stands behind each side."""
    sets, b = cmp.sets, cmp.baseline
    order = [b, *(i for i in range(len(sets)) if i != b)]
    overall = _overall(cmp)
    runs = [len(s.all_runs) for s in sets]
    host = next((g for g in cmp.geomeans if g.scenario == HOST_BOUND and g.metric == "speed"), None)
    lead = [
        _ratio_sentence(overall.ratios[i] if overall else None, names[i], names[b], overall.n if overall else 0,
                        cmp.coverage, [runs[i], runs[b]])
        + (f" {host.n} host-bound cells apart (they measure the host)." if host else "")
        for i in order[1:]
    ]
    noise = [side_noise(cmp, i) for i in range(len(sets))]
    bases = {getattr(r, "basis", None) for g in cmp.geomeans for r in g.ratios if r is not None}
    if all(v is None for v in noise) and overall is not None:
        if "noise floor" in bases:
            lead.append("Noise floor: one run per side; each interval is widened by the spread between runs "
                        "measured on these GPUs (repeated runs of the same case family, run --repeat).")
        else:
            lead.append("Noise floor: not measured for this pair (one run per side); a ratio within a few "
                        "percent of 1 may be the runs, not the GPUs (llmbench spread measures it from repeated "
                        "runs).")
    suites = [s.rs.suite for s in sets]
    rows = ([["suite", *(suites[i] for i in order)]] if len(set(suites)) > 1 else []) + [
        ["runs", *(_runs_text(runs[i], sets[i].machines) for i in order)],
        *([["runs left out (--all: which, why)", *(_left_out(sets[i]) for i in order)]]
          if any(s.chosen and s.chosen.left_out for s in sets) else []),
        *([["noise floor", *("not measured" if noise[i] is None else f"±{noise[i]:.1%} between runs"
                             for i in order)]] if any(v is not None for v in noise) else []),
        ["cases ok", *(_ok_text(cmp, i) for i in order)],
    ]
    title = f"{', '.join(names[i] for i in order[1:])} vs {names[b]}"
    if len(set(suites)) == 1:
        title = f"{suites[b]}: {title}"
    return Table(title, ["", *(names[i] + (" (baseline)" if i == b else "") for i in order)], rows,
                 notes=notes, lead=lead)


def _left_out(s: SetRef) -> str:
    return str(len(s.chosen.left_out)) if s.chosen else ""


def _ok_text(cmp: Comparison, i: int) -> str:
    cases = cmp.sets[i].cases()
    return f"{sum(c.status == 'ok' for c in cases)} of {len(cases)}"


def _same(a: Geomean, b: Geomean) -> bool:
    """Two geomeans that say the same thing (a scenario whose one speed metric is its headline)."""
    values = [(x.value if x else None, y.value if y else None) for x, y in zip(a.ratios, b.ratios, strict=True)]
    return a.n == b.n and all(x == y or (x is not None and y is not None and math.isclose(x, y)) for x, y in values)


def answer_geomeans(cmp: Comparison) -> list[Geomean]:
    """Per scenario: its speed geomean, then its headline metrics and energy per unit, each measurement
    once: a metric whose geomean is the speed geomean, or of a family already shown (TPOT after decode
    tok/s: one timing), is not repeated."""
    out: list[Geomean] = []
    for sc in dict.fromkeys(g.scenario for g in cmp.geomeans if g.scenario != "overall"):
        mine = {g.metric: g for g in cmp.geomeans if g.scenario == sc}
        speed = mine.get("speed")
        headline = SCENARIOS.get(sc).headline if sc in SCENARIOS else ()
        families: set[str] = set()
        picked = []
        for m in (*headline, *ENERGY_PER_UNIT):
            family = METRICS[m].family_name if m in METRICS else m
            if m in mine and family not in families and (speed is None or not _same(mine[m], speed)):
                picked.append(mine[m])
                families.add(family)
        out += ([speed] if speed else []) + picked
    return out


def _ratio_columns(cmp: Comparison, names: list[str]) -> tuple[list[int], list[str]]:
    others = [i for i in range(len(cmp.sets)) if i != cmp.baseline]
    if len(others) == 1:
        return others, ["ratio"]
    return others, [f"{names[i]} vs {names[cmp.baseline]}" for i in others]


def metrics_table(cmp: Comparison, names: list[str]) -> Table:
    """Per scenario, the speed geomean and the headline metrics' geomeans, with their intervals."""
    others, cols = _ratio_columns(cmp, names)
    chosen = answer_geomeans(cmp)
    rows = [
        [g.scenario, g.metric, str(g.n), *(ratio_text(g.ratios[i]) for i in others)]
        for g in chosen[:MAX_METRIC_ROWS]
    ]
    more = len(chosen) - MAX_METRIC_ROWS
    pair = f"{names[others[0]]} vs {names[cmp.baseline]}" if len(others) == 1 else f"vs {names[cmp.baseline]}"
    return Table(
        f"Headline metrics, {pair}", ["scenario", "metric", "cells", *cols], rows,
        caption="ratio > 1: better (throughput up, latency or energy down); geometric mean over the cases both "
        "ran ok, [95% interval]; 'speed': every speed metric, each case's timing once."
        + (f" {more} more metric(s): --all." if more > 0 else ""),
        empty="no metric was measured ok on both sides", key_columns=2,
    )


def most_different_table(cmp: Comparison, names: list[str], limit: int = MOST_DIFFERENT) -> Table | None:
    """The cases with the highest and the lowest speed ratios (of the first side against the baseline),
    highest first; None where a comparison joins too few cases for that to say anything."""
    others, cols = _ratio_columns(cmp, names)
    per_side = {i: case_speed_ratios(cmp, i) for i in others}
    ranked = sorted(per_side[others[0]], key=lambda cid: per_side[others[0]][cid].value, reverse=True)
    if len(ranked) < 3:
        return None
    top = (limit + 1) // 2
    picked = ranked if len(ranked) <= limit else ranked[:top] + ranked[-(limit - top):]
    labels = {r.case_id: (r.scenario, r.case) for r in cmp.rows}
    one_scenario = len({labels[c][0] for c in ranked}) == 1
    rows = [
        [labels[cid][1] if one_scenario else f"{labels[cid][0]} {labels[cid][1]}",
         *(ratio_text(per_side[i].get(cid)) for i in others)]
        for cid in picked
    ]
    what = f"all {len(ranked)}" if len(picked) == len(ranked) else f"{len(picked)} of {len(ranked)}"
    return Table(
        f"Cases with the highest and lowest ratios ({what})", ["case", *cols], rows,
        caption="each case's speed ratio (geometric mean of its speed metrics); every case: --all.",
    )


def environment_warnings(cmp: Comparison, names: list[str], limit: int = MAX_ENV_WARNINGS) -> list[str]:
    """A line per environment difference that can move the figures (llmbench commits, package versions,
    driver, CUDA, CPU, power limit), at most `limit` and a count of the rest."""
    diffs = [(k, v) for k, v in cmp.env_diffs if k not in EXPECTED_ENV_KEYS]
    lines = [
        f"{_env_label(key)} differs: " + "; ".join(f"{n}: {v}" for n, v in zip(names, values, strict=True))
        for key, values in diffs[:limit]
    ]
    if len(diffs) > limit:
        lines.append(f"{len(diffs) - limit} more environment difference(s): --all lists them")
    return lines


def _env_label(key: str) -> str:
    if key.startswith("packages."):
        return f"{key.removeprefix('packages.')} version"
    return key


def coverage_warnings(cmp: Comparison, names: list[str]) -> list[str]:
    """What the ratios leave out: cases on some sides only, and cases that did not run ok everywhere."""
    lines = []
    if cmp.one_sided:
        only: dict[int, int] = {}
        for n in cmp.one_sided:
            for i, st in enumerate(n.statuses):
                if st is not None:
                    only[i] = only.get(i, 0) + 1
        held = "; ".join(f"{names[i]} holds {k}" for i, k in only.items())
        lines.append(f"{len(cmp.one_sided)} case(s) are not in every result set ({held}): not compared; "
                     "--all lists them")
    if cmp.not_ok:
        lines.append(f"{len(cmp.not_ok)} case(s) did not run ok on every side: not compared; --all lists "
                     "them with the reasons")
    return lines


def answer_tables(cmp: Comparison, warnings: list[str] | None = None, notes: list[str] | None = None) -> list[Table]:
    """The answer block of one comparison: the sides and the ratio, the headline metrics, the cases that
    differ most, and the warnings (`warnings`: lines from the caller, e.g. code paths that differ, shown
    before the environment and coverage ones). `notes` go on top (suites that differ)."""
    names = side_names(cmp.sets)
    tables = [sides_table(cmp, names, [*(notes or []), *source_notes(cmp.sets)]), metrics_table(cmp, names)]
    most = most_different_table(cmp, names)
    if most is not None:
        tables.append(most)
    lines = [*(warnings or []), *cmp.code_path_warnings(names), *environment_warnings(cmp, names),
             *coverage_warnings(cmp, names)]
    if lines:
        tables.append(Table("Warnings", [], [], lead=[f"- {w}" for w in lines]))
    return tables
