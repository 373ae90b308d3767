"""The answer of a comparison on one screen: what `llmbench compare` prints first, in the terminal and in
Markdown (docs/design.md, "What `compare` prints"); `views.comparison_tables` holds the details."""

from __future__ import annotations

from llmbench.analysis.compare import Comparison, Geomean, Ratio
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.summary import Summary, summary
from llmbench.report.tables import Table, ratio_text
from llmbench.report.views import source_notes

MOST_DIFFERENT = 5  # cases shown: the highest and the lowest ratios
MAX_METRIC_ROWS = 10
MAX_ENV_WARNINGS = 4
BASIS_TEXT = {
    "single run": "from the samples of one run per side: not a 95% interval of the GPUs' ratio (the spread "
                  "between runs is not in it)",
    "runs": "from the spread between runs and between machines",
    "noise floor": "widened by the measured noise floor between runs and machines",
}


def ratio_sentence(r: Ratio | None, other: str, base: str, cells: int, cases: str, basis: str | None) -> str:
    """'H200 runs at 1.17x the speed of H100, 95% interval [...] from ...': the interval named by what
    it rests on (`basis`: a single run's is no 95% interval of the GPUs' ratio)."""
    if r is None:
        return f"{other}: no speed metric was measured ok on both {other} and {base}."
    text = f"{other} runs at {r.value:.2f}x the speed of {base}"
    if r.ci is None:
        text += f" (no 95% interval: {r.note})" if r.note else " (no interval: a side has no raw samples)"
    else:
        kind = "interval" if basis == "single run" else "95% interval"
        text += f", {kind} [{r.ci[0]:.2f}, {r.ci[1]:.2f}] {BASIS_TEXT.get(str(basis), f'({basis})')}"
    return f"{text}; geometric mean of {cells} speed cells over {cases}."


def _runs_text(runs: int, machines: int | None) -> str:
    head = f"{runs} run{'s' if runs != 1 else ''}"
    return f"{head}, {machines} machine{'s' if machines != 1 else ''}" if machines is not None else \
        f"{head} (machine not recorded)"


def sides_table(cmp: Comparison, s: Summary, notes: list[str]) -> Table:
    """The answer itself: a sentence per GPU pair, then what stands behind each side."""
    sets, b, names = cmp.sets, s.baseline, s.names
    order = [b, *s.others]
    overall, host = s.overall, s.host_bound
    lead = [
        ratio_sentence(overall.ratios[i] if overall else None, names[i], names[b], overall.n if overall else 0,
                        s.covers, s.basis(i))
        + (f" {host.n} host-bound cells apart (they measure the host)." if host else "")
        for i in order[1:]
    ]
    bases = {getattr(r, "basis", None) for g in cmp.geomeans for r in g.ratios if r is not None}
    if all(v is None for v in s.noise) and overall is not None:
        if "noise floor" in bases:
            lead.append("Noise floor: one run per side; each interval is widened by the spread between runs "
                        "measured on these GPUs (repeated runs of the same case family, run --repeat).")
        else:
            lead.append("Noise floor: not measured for this pair (one run per side); a ratio within a few "
                        "percent of 1 may be the runs, not the GPUs (llmbench spread measures it from repeated "
                        "runs).")
    suites = [x.rs.suite for x in sets]
    rows = ([["suite", *(suites[i] for i in order)]] if len(set(suites)) > 1 else []) + [
        ["runs", *(_runs_text(s.runs[i], sets[i].machines) for i in order)],
        *([["runs left out (--all: which, why)", *(_left_out(sets[i]) for i in order)]]
          if any(x.chosen and x.chosen.left_out for x in sets) else []),
        *([["noise floor", *("not measured" if s.noise[i] is None else f"±{s.noise[i]:.1%} between runs"
                             for i in order)]] if any(v is not None for v in s.noise) else []),
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


def _ratio_columns(s: Summary) -> tuple[list[int], list[str]]:
    if len(s.others) == 1:
        return s.others, ["ratio"]
    return s.others, [f"{s.names[i]} vs {s.names[s.baseline]}" for i in s.others]


def metrics_table(s: Summary) -> Table:
    """Per scenario, the speed geomean and the headline metrics' geomeans, with their intervals."""
    others, cols = _ratio_columns(s)
    chosen: list[Geomean] = s.headline
    rows = [
        [g.scenario, g.metric, str(g.n), *(ratio_text(g.ratios[i]) for i in others)]
        for g in chosen[:MAX_METRIC_ROWS]
    ]
    more = len(chosen) - MAX_METRIC_ROWS
    base = s.names[s.baseline]
    pair = f"{s.names[others[0]]} vs {base}" if len(others) == 1 else f"vs {base}"
    return Table(
        f"Headline metrics, {pair}", ["scenario", "metric", "cells", *cols], rows,
        caption="ratio > 1: better (throughput up, latency or energy down); geometric mean over the cases both "
        "ran ok, [95% interval]; 'speed': every speed metric, each case's timing once."
        + (f" {more} more metric(s): --all." if more > 0 else ""),
        empty="no metric was measured ok on both sides", key_columns=2,
    )


def most_different_table(s: Summary, limit: int = MOST_DIFFERENT) -> Table | None:
    """The cases with the highest and the lowest speed ratios (of the first side against the baseline),
    highest first; None where a comparison joins too few cases for that to say anything."""
    others, cols = _ratio_columns(s)
    ranked = s.ranked
    if len(ranked) < 3:
        return None
    top = (limit + 1) // 2
    picked = ranked if len(ranked) <= limit else ranked[:top] + ranked[-(limit - top):]
    one_scenario = len({c.scenario for c in ranked}) == 1
    rows = [[c.case if one_scenario else f"{c.scenario} {c.case}", *(ratio_text(c.ratios[i]) for i in others)]
            for c in picked]
    what = f"all {len(ranked)}" if len(picked) == len(ranked) else f"{len(picked)} of {len(ranked)}"
    return Table(
        f"Cases with the highest and lowest ratios ({what})", ["case", *cols], rows,
        caption="each case's speed ratio (geometric mean of its speed metrics); every case: --all.",
    )


def _env_lines(s: Summary, limit: int = MAX_ENV_WARNINGS) -> list[str]:
    lines = s.environment_warnings
    more = len(lines) - limit
    return lines[:limit] + ([f"{more} more environment difference(s): --all lists them"] if more > 0 else [])


def answer_tables(cmp: Comparison, warnings: list[str] | None = None, notes: list[str] | None = None) -> list[Table]:
    """The answer block of one comparison: the sides and the ratio, the headline metrics, the cases that
    differ most, and the warnings (`warnings`: lines from the caller, e.g. code paths that differ, shown
    before the environment and coverage ones). `notes` go on top (suites that differ)."""
    s = summary(cmp)
    tables = [sides_table(cmp, s, [*(notes or []), *source_notes(cmp.sets)]), metrics_table(s)]
    most = most_different_table(s)
    if most is not None:
        tables.append(most)
    lines = [*(warnings or []), *s.code_path_warnings, *_env_lines(s), *s.coverage_warnings]
    if lines:
        tables.append(Table("Warnings", [], [], lead=[f"- {w}" for w in lines]))
    return tables
