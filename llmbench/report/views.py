"""Tables for comparisons, within-set diffs and single result sets (formatted by tables.py).

Every column of a non-measured set carries its '[published]' / '[projected]' tag, and every view
that holds one starts with a note saying where its figures come from.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from llmbench.analysis.basediff import BaseDiff
from llmbench.analysis.caselabels import case_labels, constant_params, params_text, with_searched_batch
from llmbench.analysis.compare import MAX_BATCH_METRIC, Comparison, MetricRow
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.labels import is_measured, mixing_warning, source_line
from llmbench.analysis.project import Validation
from llmbench.analysis.runs import RunLine, files_used
from llmbench.report.bottleneck_view import bottleneck_table
from llmbench.report.power_view import power_table
from llmbench.report.slice_view import slice_table
from llmbench.report.tables import MISSING, Table, fmt_num, fmt_pct, ratio_text
from llmbench.report.terminal import NUMBER, merge_numbers, one_line

RATIO_CAPTION = (
    "ratio > 1: better than {base} (throughput up or latency down); [95% CI]: percentile bootstrap "
    "of the ratio of medians from the raw samples (absent where a side has no samples; n = samples "
    "per side, few samples make it optimistic); "
    "metrics with no better direction are shown, not ratioed."
)
MAX_BATCH_CAPTION = (
    " max_batch_size: the largest batch each side's search found (a max_batch case); where the sides "
    "differ, its per-step metrics (step time, memory, energy of the window) are not ratioed: only rates "
    "per token or sample compare."
)
RUNS_CAPTION = (
    " Where a side pools several runs (run --repeat, or --pool): its value is the median of the runs' "
    "medians, n counts the samples of all its runs, and the ratio's interval is a t-interval on the log "
    "ratio of the runs' medians (between-run spread included; a single-run side borrows the other side's "
    "spread)."
)


def source_notes(sets: list[SetRef]) -> list[str]:
    notes = [f"{s.label}: {source_line(s.rs)}" for s in sets if not is_measured(s.rs)]
    warning = mixing_warning([s.rs for s in sets])
    return ([warning] if warning else []) + notes


def short_note(sets: list[SetRef]) -> list[str]:
    """The one-line reminder on every table after the first that holds non-measured figures."""
    named = [s.label for s in sets if not is_measured(s.rs)]
    return [f"Not measured here: {', '.join(named)} (see 'Result sets' for the source)."] if named else []


def _unfinished(s: SetRef) -> bool:
    """A measured run that stopped (interrupted, or cases left by --budget): the suite has cases the
    set lacks. Published and projected sets have no run to finish."""
    return is_measured(s.rs) and s.rs.finished_at is None


def sets_table(sets: list[SetRef], baseline: int | None = None) -> Table:
    rows = []
    for i, s in enumerate(sets):
        cases = s.cases()
        ok = sum(c.status == "ok" for c in cases)
        notes = (["baseline"] if i == baseline else []) + ([_runs_text(len(s.all_runs), s.machines)]
                                                           if len(s.all_runs) > 1 else [])
        name = s.label + (f" ({'; '.join(notes)})" if notes else "")
        rows.append(
            [
                name,
                s.rs.suite,
                str(s.rs.env.get("gpu", {}).get("name", MISSING)),
                s.rs.source.kind,  # the whole source is a note above the table
                s.rs.created_at,
                f"{ok}/{len(cases)}" + (" (run unfinished)" if _unfinished(s) else ""),
            ]
        )
    return Table(
        "Result sets",
        ["set", "suite", "GPU", "source", "created", "cases ok"],
        rows,
        notes=source_notes(sets),
    )


def _runs_text(runs: int, machines: int | None) -> str:
    """'3 runs, 2 machines' ('3 runs' where a run recorded no machine id)."""
    return f"{runs} runs" + ("" if machines is None else f", {machines} machine{'s' if machines != 1 else ''}")


def _value_text(v: float | None, n: int | None, runs: int = 1, machines: int | None = None) -> str:
    """A value and, beside it, how many samples it is the median of (what its ratio's interval rests on)
    and, for a figure pooled from several runs, how many runs and machines stand behind it."""
    if v is None:
        return fmt_num(v)
    parts = ([f"n={n}"] if n is not None and n > 1 else []) + ([_runs_text(runs, machines)] if runs > 1 else [])
    return " ".join([fmt_num(v), ", ".join(parts)]) if parts else fmt_num(v)


def _cells(r: MetricRow) -> list[str]:
    k = len(r.values)
    runs, machines = r.runs or [1] * k, r.machines or [None] * k
    ns = r.ns or [None] * k
    return [_value_text(v, n, ru, ma) for v, n, ru, ma in zip(r.values, ns, runs, machines, strict=True)]


def spread_table(cmp: Comparison) -> Table | None:
    """The between-run spread of each figure that pools two runs or more (None when none does)."""
    sets = cmp.sets
    rows = [r for r in cmp.rows if any(cv is not None for cv in r.between_run_cv)]
    if not rows:
        return None
    body = [
        [r.case, r.metric, *[MISSING if cv is None else f"{cv:.2%} ({ru} runs)" for cv, ru in
                             zip(r.between_run_cv, r.runs, strict=True)]]
        for r in rows
    ]
    return Table(
        "Between-run spread",
        ["case", "metric", *[s.label for s in sets]],
        body,
        caption="between-run CV = standard deviation of the runs' medians over their mean: how far a new "
        "run of the same case on the same kind of GPU may land; a ratio of single runs within about twice "
        "this of 1 is within the noise.",
    )


def code_path_table(cmp: Comparison) -> Table | None:
    """The joined cases whose sides ran different code (the differing keys, each side's values), and
    a note for those a side recorded no code path for."""
    differ = [n for n in cmp.code_paths if n.keys]
    notes = cmp.code_path_warnings()
    if not notes:
        return None
    body = [
        [n.case, key, *[MISSING if p is None else str(p.get(key, MISSING)) for p in n.paths]]
        for n in differ for key in n.keys
    ]
    return Table("Code paths that differ", ["case", "code path", *[s.label for s in cmp.sets]], body,
                 notes=notes, empty="no joined case ran a different code path on another side")


def runs_tables(lines: list[RunLine]) -> list[Table]:
    """The runs behind the figures (analysis/runs.py): each file's runs used, then every run left out
    and why."""
    return [
        Table("Runs used", ["GPU", "result set", "cases"], [[g, f, str(n)] for g, f, n in files_used(lines)],
              caption="the runs the one rule chose for each case (analysis/runs.py): of its newest identity and "
              "recorded code path; a case's figure is the median of its runs' medians", empty="no run"),
        Table("Runs left out", ["GPU", "case id", "result set", "why"],
              [[r.gpu, r.case_id, r.file, one_line(r.why)] for r in lines if not r.used],
              empty="no run was left out"),
    ]


def comparison_tables(cmp: Comparison, runs: bool = True) -> list[Table]:
    """Every table of a comparison (`--all`); `runs`: with the runs it read (a page lists them once)."""
    sets, b = cmp.sets, cmp.baseline
    others = [i for i in range(len(sets)) if i != b]
    base_name = sets[b].label
    tables = [sets_table(sets, b)]
    if cmp.env_diffs:
        tables.append(
            Table(
                "Environment differences",
                ["key", *[s.label for s in sets]],
                [[k, *v] for k, v in cmp.env_diffs],
            )
        )
    code_paths = code_path_table(cmp)
    if code_paths is not None:
        tables.append(code_paths)
    scenarios = list(dict.fromkeys(r.scenario for r in cmp.rows))
    for sc in scenarios:
        rows = [r for r in cmp.rows if r.scenario == sc]
        cases = [c for c in (sets[b].case(cid) for cid in dict.fromkeys(r.case_id for r in rows)) if c]
        const = params_text(constant_params(cases)) if len(cases) > 1 else ""
        cols = [
            "case",
            "metric",
            "unit",
            *[s.label for s in sets],
            *[f"{sets[i].label} vs {sets[b].name}" for i in others],
        ]
        body = [
            [
                r.case,
                r.metric,
                r.unit,
                *_cells(r),
                *[ratio_text(r.ratios[i]) if r.better != "neither" else "(not ratioed)" for i in others],
            ]
            for r in rows
        ]
        caption = (f"common params: {const}. " if const else "") + RATIO_CAPTION.format(base=base_name)
        if any(ru > 1 for r in rows for ru in r.runs):
            caption += RUNS_CAPTION
        if any(r.metric == MAX_BATCH_METRIC for r in rows):
            caption += MAX_BATCH_CAPTION
        tables.append(Table(f"Scenario {sc}", cols, body, caption=caption, notes=short_note(sets)))
    tables += [t for s in sets for t in seed_tables(s)]
    mig_table = slice_table(cmp, short_note(sets))
    if mig_table is not None:
        tables.append(mig_table)
    spread = spread_table(cmp)
    if spread is not None:
        tables.append(spread)
    if cmp.geomeans:
        tables.append(
            Table(
                "Geometric means of ratios",
                ["scenario", "metric", "cells", *[f"{sets[i].label} vs {sets[b].name}" for i in others]],
                [
                    [g.scenario, g.metric, str(g.n), *[ratio_text(g.ratios[i]) for i in others]]
                    for g in cmp.geomeans
                ],
                notes=short_note(sets),
                key_columns=2,
                caption="'speed' = the latency and throughput metrics of the scenario, each measurement once "
                "(metrics of one family, e.g. TPOT and decode tok/s, are averaged into one cell per case; "
                "'cells' counts those). "
                + RATIO_CAPTION.format(base=base_name),
            )
        )
    listed = cmp.runs_listed() if runs else []
    tables += runs_tables(listed) if listed else []
    tables.append(
        Table(
            "Cases not in every result set",
            ["scenario", "case", *[s.label for s in sets]],
            [[n.scenario, n.case, *[st or "absent" for st in n.statuses]] for n in cmp.one_sided],
            empty="every case is in every result set",
            key_columns=2,
        )
    )
    tables.append(
        Table(
            "Cases that did not run ok everywhere",
            ["scenario", "case", *[s.label for s in sets], "reason"],
            [
                [
                    n.scenario,
                    n.case,
                    *[st or "absent" for st in n.statuses],
                    "; ".join(f"{sets[i].name}: {r}" for i, r in enumerate(n.reasons) if r),
                ]
                for n in cmp.not_ok
            ],
            empty="every joined case ran ok in every result set",
            key_columns=2,
        )
    )
    return tables


def basediff_tables(bd: BaseDiff) -> list[Table]:
    base = params_text({bd.key: bd.value})
    rows = [
        [
            r.scenario,
            r.case,
            r.metric,
            r.unit,
            fmt_num(r.base_value),
            fmt_num(r.value),
            fmt_pct(r.diff_pct),
            MISSING if r.improved is None else ("better" if r.improved else "worse"),
        ]
        for r in bd.rows
    ]
    return [
        Table(
            f"{bd.set.label}: each case against {base}",
            ["scenario", "case", "metric", "unit", base, "value", "diff %", "vs base"],
            rows,
            notes=source_notes([bd.set]),
            caption="diff % = value / base - 1 (raw sign); 'vs base' says whether that is better or worse.",
            empty=f"no case has a {base} counterpart to compare with",
            key_columns=2,
        ),
        Table(
            f"{bd.set.label}: cases with no {base} counterpart",
            ["case id", "case", "why"],
            [list(u) for u in bd.unmatched],
            empty=f"every case has its {base} counterpart",
        ),
    ]


MAX_CORRECTION_ROWS = 8  # kinds of correction shown by default (`show --all`: every correction)


def corrections_table(sets: list[SetRef], *, every: bool = True) -> Table | None:
    """What was changed in the sets' files after they were written (`results.Correction`), by file; None
    where no set records a change. `every`: one row each; else, as warnings are, corrections that differ
    only in their figures are one row (a figure that varies as its range, how many times, the first and
    last time), at most MAX_CORRECTION_ROWS kinds and a row of how many more: a set corrected case by case
    (100,000 times) is a few lines, not minutes of them."""
    rows: list[list[str]] = []
    groups: dict[tuple[str, str, str, str], list[list[str]]] = defaultdict(list)
    for s in sets:  # a pooled side names each run by its file
        names = s.stems if len(s.stems) == len(s.all_runs) else [s.stem or s.name] * len(s.all_runs)
        for n, rs in zip(names, s.all_runs, strict=True):
            for c in rs.corrections:
                row = [n, c.when, c.what, c.why, c.by or MISSING]
                if every:
                    rows.append(row)
                else:
                    groups[(n, NUMBER.sub("#", c.what), NUMBER.sub("#", c.why), row[4])].append(row)
    kinds = list(groups.values())
    for same in kinds[:MAX_CORRECTION_ROWS]:
        if len(same) == 1:
            rows.append(same[0])
            continue
        whens = [r[1] for r in same]
        rows.append([same[0][0], f"{min(whens)} .. {max(whens)}",
                     f"{merge_numbers([r[2] for r in same])} ({len(same)} times)", merge_numbers([r[3] for r in same]),
                     same[0][4]])
    rest = kinds[MAX_CORRECTION_ROWS:]
    if rest:
        rows.append([MISSING, MISSING, f"{sum(map(len, rest))} more correction(s) of {len(rest)} other kind(s)",
                     "llmbench show --all lists every one", MISSING])
    return Table("Corrections recorded in the result sets", ["set", "when (UTC)", "what was changed", "why", "by"],
                 rows, caption="changes made to a set's file after its run, as the set records them") if rows else None


def engine_tables(diff: BaseDiff) -> list[Table]:
    """A suite's cases on another engine beside the transformers engine's (analysis/basediff.py)."""
    return [replace(t, title=f"engines side by side — {t.title}") for t in basediff_tables(diff)]


def seed_tables(ref: SetRef) -> list[Table]:
    """The answers a set's sweeps were run for, where it holds one: the watts for 80/90/95% of the best
    speed (a power-limit sweep) and the batch where the host stops bounding training (host_bound)."""
    return [t for t in (power_table(ref), bottleneck_table(ref)) if t is not None]


def set_tables(ref: SetRef) -> list[Table]:
    """One result set on its own: per scenario, each case's status and metric values."""
    tables = [sets_table([ref])]
    labels = case_labels(ref.rs.cases)
    for sc in dict.fromkeys(c.scenario for c in ref.rs.cases):
        cases = [c for c in ref.rs.cases if c.scenario == sc]
        metrics = list(dict.fromkeys(m for c in cases for m in c.metrics))
        units = {m: next(c.metrics[m].unit for c in cases if m in c.metrics) for m in metrics}
        rows = [
            [
                with_searched_batch(labels[c.id], c),
                c.status,
                *[fmt_num(c.metrics[m].value) if m in c.metrics else MISSING for m in metrics],
            ]
            for c in cases
        ]
        const = params_text(constant_params(cases)) if len(cases) > 1 else ""
        tables.append(
            Table(
                f"{ref.label}: scenario {sc}",
                ["case", "status", *[f"{m} ({units[m]})" for m in metrics]],
                rows,
                caption=f"common params: {const}" if const else "",
                notes=short_note([ref]),
            )
        )
    return tables + seed_tables(ref) + [t for t in [corrections_table([ref], every=False)] if t is not None]


def validation_tables(v: Validation, projected: SetRef, measured: SetRef) -> list[Table]:
    """How far a projection was from a real run on the target GPU, per scenario and metric."""
    rows = [
        [
            r.scenario,
            r.metric,
            str(r.n),
            fmt_pct(r.mean_pct),
            f"{r.median_abs_pct:.1f}%",
            f"{r.max_abs_pct:.1f}%",
        ]
        for r in v.rows
    ]
    return [
        Table(
            f"Projection error: {projected.label} against {measured.label}",
            ["scenario", "metric", "cases", "mean error", "median |error|", "max |error|"],
            rows,
            notes=source_notes([projected]),
            caption="error = projected / measured - 1; > 0: the projection was too optimistic for "
            "rates (too pessimistic for latencies).",
            empty="no case was measured on both GPUs",
        ),
        Table("Cases not validated (absent or not ok on one side)", ["case id"], [[c] for c in v.unmatched],
              empty="every case was projected and measured"),
    ]
