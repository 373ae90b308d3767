"""What the published pages open with, before any detail: answer blocks, and the projection summary.

An `AnswerBlock` is one answer (a title, a lead line, a short table per suite): the HTML report shows
the blocks on its first screen, `publishing/publish.py` writes them at the top of the Markdown page, in the order
given. `pair_answers` makes the blocks of measured GPU pairs (per suite: the speed ratio with its
interval, the headline metrics, the cases, the runs and machines per side, the noise floor); another
answer (a GPU measured against published or projected figures) is one more block in the list.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llmbench.analysis.answer import ANSWER_METRICS_SKIP, ProjectionCheck, noise_cv
from llmbench.analysis.compare import HOST_BOUND, SPEED_UNITS, Comparison, Geomean, MetricRow, Ratio, is_headline
from llmbench.analysis.inputs import SetRef, display_names
from llmbench.analysis.labels import gpu_display_name as gpu_name
from llmbench.analysis.labels import is_measured
from llmbench.metrics import METRICS
from llmbench.report.tables import MISSING, Table, ratio_text, to_markdown
from llmbench.scenarios.base import SCENARIOS

ALL_WORKLOADS = "all workloads"
NO_NOISE = "not measured"
MAX_HEADLINE_METRICS = 3  # a workload's headline metrics named in the answer, one per metric family
BASIS_FIELD = "basis"  # what a ratio's interval rests on, where the comparison says (Ratio.basis)
PAIR_COLUMNS = ["workload", "speed ratio [interval]", "headline metrics", "cases", "noise floor"]
PAIR_CAPTION = (
    "speed ratio: the geometric mean of each workload's speed metrics over the cases both GPUs ran "
    "(> 1: {other} is faster), with its interval: a 95% interval where it rests on runs (a side pools "
    "several) or on the GPUs' measured noise floor; from one run's samples ('single run') it leaves out the "
    "spread between runs and is no 95% interval of the GPUs' ratio. noise floor: the spread between separate "
    "runs of one GPU (a side's own runs where it pooled several, else the floor measured for that GPU and case "
    "family in other runs; {no_noise} where neither); a ratio says more than the noise only where it is further "
    "from 1 than that."
)


@dataclass
class AnswerBlock:
    """One answer shown before any detail. `tables` share their columns where they can (the HTML page then
    draws them as one table with a row per table title); `caption` says once what the columns mean."""

    title: str
    lead: str
    tables: list[Table]
    caption: str = ""
    notes: list[str] = field(default_factory=list)  # warnings shown above the tables


def _runs_text(ref: SetRef) -> str:
    runs, machines = len(ref.all_runs), ref.machines
    text = f"{runs} run{'s' if runs != 1 else ''}"
    if machines is not None:
        text += f" on {machines} machine{'s' if machines != 1 else ''}"
    return text


def _in(r: MetricRow, scenario: str | None) -> bool:
    """Whether a row counts in a workload's row as the geometric means count it: host-bound cells in the
    host-bound row only, the others in their scenario's (and in all workloads)."""
    if scenario == HOST_BOUND:
        return r.measures_host
    return not r.measures_host and (scenario is None or r.scenario == scenario)


def _speed_rows(cmp: Comparison, i: int, scenario: str | None) -> list[MetricRow]:
    return [r for r in cmp.rows if _in(r, scenario) and r.unit in SPEED_UNITS and r.ratios[i] is not None]


def _overlap(a: set[str] | None, b: set[str] | None) -> bool:
    return a is None or b is None or bool(a & b)


def answer_metrics(scenario: str, cases: dict[str, set[str] | None]) -> list[str]:
    """Of the metrics with ratios (name -> the case ids behind it, None where not known), the scenario's
    headline speed metrics worth naming, most important first: at most MAX_HEADLINE_METRICS, and a metric
    of a family already named on the same cases (TPOT beside decode tok/s: one timing) left out."""
    order = SCENARIOS.get(scenario).headline if scenario in SCENARIOS else ()
    names = sorted((m for m in cases if m not in ANSWER_METRICS_SKIP and is_headline(scenario, m)
                    and (METRICS[m].unit if m in METRICS else "") in SPEED_UNITS),
                   key=lambda m: (order.index(m) if m in order else len(order), m))
    chosen: list[str] = []
    for m in names:
        family = METRICS[m].family_name
        same = [c for c in chosen if METRICS[c].family_name == family]
        if any(_overlap(cases[m], cases[c]) for c in same):
            continue
        if len(chosen) < MAX_HEADLINE_METRICS:
            chosen.append(m)
    return chosen


def _headline_metrics(cmp: Comparison, i: int, scenario: str) -> str:
    """The scenario's headline speed metrics with their ratios ('decode_tokens_per_s 1.18x · ttft_ms 1.08x')."""
    found = {g.metric: g for g in cmp.geomeans if g.scenario == scenario and g.ratios[i] is not None}
    cases = {m: {r.case_id for r in cmp.rows if _in(r, scenario) and r.metric == m and r.ratios[i]} for m in found}
    parts = []
    for m in answer_metrics(scenario, dict(cases)):
        r = found[m].ratios[i]
        assert r is not None
        parts.append(f"{m} {r.value:.2f}x")
    return " · ".join(parts) or MISSING


def _ratio_cells(r: Ratio | None, with_basis: bool) -> list[str]:
    cells = [ratio_text(r)]
    if with_basis:
        cells.append(str(getattr(r, BASIS_FIELD, "") or MISSING) if r else MISSING)
    return cells


def _noise_text(cmp: Comparison, i: int, scenario: str | None) -> str:
    rows = [r for r in cmp.rows if _in(r, scenario)]
    cv = noise_cv(rows, i, cmp.baseline)
    if cv is None:
        return NO_NOISE
    return f"±{cv:.1%}" if cv >= 0.0005 else "<0.1%"


def _geomean(cmp: Comparison, scenario: str) -> Geomean | None:
    return next((g for g in cmp.geomeans if g.scenario == scenario and g.metric == "speed"), None)


def pair_table(title: str, cmp: Comparison, i: int, with_basis: bool) -> Table:
    """One suite of a GPU pair: a row per workload (scenario) with its speed ratio, headline metrics,
    cases and noise floor; first a row over all workloads where there are several."""
    scenarios = list(dict.fromkeys(g.scenario for g in cmp.geomeans if g.metric == "speed"
                                   and g.scenario != "overall" and g.ratios[i] is not None))
    keys: list[str | None] = ([None] if len(scenarios) > 1 else []) + list(scenarios)
    rows = []
    for sc in keys:
        g = _geomean(cmp, sc or "overall")
        cases = len({r.case_id for r in _speed_rows(cmp, i, sc)})
        rows.append([sc or ALL_WORKLOADS, *_ratio_cells(g.ratios[i] if g else None, with_basis),
                     _headline_metrics(cmp, i, sc) if sc else "", str(cases), _noise_text(cmp, i, sc)])
    names = display_names(cmp.sets)
    b = cmp.baseline
    return Table(title, PAIR_COLUMNS[:2] + (["interval from"] if with_basis else []) + PAIR_COLUMNS[2:], rows,
                 caption=f"{names[b].label}: {_runs_text(cmp.sets[b])}; {names[i].label}: {_runs_text(cmp.sets[i])}",
                 empty="no speed metric was measured by both")


def pair_answers(comparisons: list[tuple[str, Comparison]]) -> list[AnswerBlock]:
    """A block per GPU pair (baseline, other) of the comparisons whose sets are all measured, with a
    table per comparison (titled by the comparison's title), in the order given."""
    blocks: dict[tuple[str, str], AnswerBlock] = {}
    for title, cmp in comparisons:
        if not all(is_measured(s.rs) for s in cmp.sets):
            continue
        names = display_names(cmp.sets)
        b = cmp.baseline
        ratios = [g.ratios[i] for g in cmp.geomeans for i in range(len(cmp.sets))]
        with_basis = any(getattr(r, BASIS_FIELD, None) for r in ratios if r is not None)
        for i in range(len(cmp.sets)):
            if i == b:
                continue
            base, other = names[b].label, names[i].label
            block = blocks.setdefault((base, other), AnswerBlock(
                f"{other} vs {base}",
                f"How fast the {other} runs each suite measured on both, against the {base}.",
                [], caption=PAIR_CAPTION.format(other=f"the {other}", no_noise=NO_NOISE)))
            block.tables.append(pair_table(title, cmp, i, with_basis))
    return list(blocks.values())


def projection_title(base: SetRef, measured: SetRef) -> str:
    """'H100 SXM5 80GB projected to H200 SXM 141GB vs measured H200 SXM 141GB'."""
    target = gpu_name(measured.rs.gpu_slug)
    return f"{gpu_name(base.rs.gpu_slug)} projected to {target} vs measured {target}"


PROJECTION_COLUMNS = ["workload", "metric", "cases", "mean error", "median |error|", "max |error|"]
PROJECTION_CAPTION = (
    "error = projected / measured - 1 (> 0: the projection was too optimistic for rates, too pessimistic "
    "for latencies); llmbench project scales each case by the GPUs' datasheet bandwidth and peak."
)


def projection_answers(items: list[tuple[str, SetRef, list[ProjectionCheck]]]) -> list[AnswerBlock]:
    """Per projected pair, how far the baseline projected to the other GPU lands from that GPU's
    measurement: a table per comparison in `items` (its title, its baseline, its checks) with each
    workload's headline speed metrics."""
    blocks: dict[str, AnswerBlock] = {}
    for title, base, checks in items:
        for c in checks:
            name = projection_title(base, c.measured)
            block = blocks.setdefault(name, AnswerBlock(
                f"Projection check: {name}", "How far llmbench's roofline projection of the first GPU's "
                "measurements lands from the second GPU's own.", [], caption=PROJECTION_CAPTION))
            rows = []
            for sc in dict.fromkeys(r.scenario for r in c.validation.rows):
                found = {r.metric: r for r in c.validation.rows if r.scenario == sc}
                for m in answer_metrics(sc, dict.fromkeys(found)):
                    r = found[m]
                    rows.append([sc, m, str(r.n), f"{r.mean_pct:+.1f}%", f"{r.median_abs_pct:.1f}%",
                                 f"{r.max_abs_pct:.1f}%"])
            block.tables.append(Table(title, PROJECTION_COLUMNS, rows, empty="no case was measured on both GPUs"))
    return list(blocks.values())


def answers_markdown(blocks: list[AnswerBlock]) -> str:
    """The blocks as Markdown: a '##' heading each, its lead, its tables under '###' headings."""
    parts = []
    for b in blocks:
        parts.append(f"## {b.title}\n\n{b.lead}\n")
        parts += [f"> {n}\n" for n in b.notes]
        parts += ["#" + to_markdown([t]) for t in b.tables]  # to_markdown heads a table with '## '
        if b.caption:
            parts.append(f"{b.caption}\n")
    return "\n".join(parts)
