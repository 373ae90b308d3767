"""A GPU-pair answer (analysis/pairs.py) as tables, a Markdown page and an HTML fragment: what was measured
first, then per workload the answer with its evidence range and graded sources, then the projection by
parts and its validation per class, the prices and the sources. Renders only."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from llmbench.analysis.labels import gpu_display_name as gpu_name
from llmbench.analysis.pairs import DEFAULT_PAIR, Evidence, PairAnswer, build_pair, family
from llmbench.report.html import _table_body, table_html
from llmbench.report.tables import MISSING, Table, to_markdown

NOT_KNOWN = "not known — measure it"


def _x(lo: float, hi: float, pre: str = "", unit: str = "x") -> str:
    return f"{pre}{lo:.2f}{unit}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{pre}{lo:.2f}-{hi:.2f}{unit}"


def _ratio(e: Evidence) -> str:
    point = MISSING if e.ratio is None else f"{e.ratio:.2f}x"
    return point if e.low == e.high else f"{point} [{e.low:.2f}, {e.high:.2f}]"


def _from(e: Evidence) -> str:
    return {"measured": "measured", "projection": f"{e.grade} projection ({e.interval})"}.get(
        e.kind, f"{e.grade} {e.kind}: {e.source}")


def _short(why: str) -> str:
    """A reason's first clause (a skip reason's install hint is in its result set)."""
    return why.split(", which ")[0].split(": pip ")[0]


def page_name(a: str, b: str) -> str:
    """results/<a>-vs-<b>.md: GPU families where they differ ('h100-vs-a100.md'), else the slugs."""
    return f"{family(a)}-vs-{family(b)}.md" if family(a) != family(b) else f"{a}-vs-{b}.md"


def lead(ans: PairAnswer) -> str:
    a, b = gpu_name(ans.a), gpu_name(ans.b)
    done = {g: sorted({m.case_id for m in ans.measured if m.gpu == g}) for g in (ans.a, ans.b)}
    said = [f"{gpu_name(g)}: {len(ids)} of the workloads' cases" if ids else
            f"{gpu_name(g)}: nothing here (`llmbench versus YOUR-BUNDLE` measures it)" for g, ids in done.items()]
    return (f"{a} over {b} per workload (> 1: the {a} is faster). What was measured: {'; '.join(said)}. The answer is "
            "measured, else a controlled published pair of these two GPUs, else a validated projection; otherwise "
            f"'{NOT_KNOWN}', with the range of the evidence. Host time is kept as measured in every projection: "
            f"the {b}'s host is not known.")


def measured_table(ans: PairAnswer) -> Table:
    rows = [[gpu_name(m.gpu), m.row, str(len(m.used)), ", ".join(m.used),
             "; ".join(f"{f}: {_short(why)}" for f, why in m.left_out) or "-", m.note or "-"] for m in ans.measured]
    return Table("What was measured: the runs that stand for each case", ["GPU", "workload", "runs", "used",
                                                                           "left out (why)", "note"], rows,
                 caption="Runs chosen by one rule (analysis/runs.py): the newest identity and code path; a run of "
                 "another path is left out, never pooled.", empty="neither GPU has a run of these workloads")


def answer_table(ans: PairAnswer) -> Table:
    a, b = gpu_name(ans.a), gpu_name(ans.b)
    prices = ans.prices
    rows = []
    for r in ans.rows:
        e, v = r.chosen, r.verdict
        span = MISSING if r.span is None else _x(*r.span) + (" (sources disagree)" if r.disagree else "")
        ctl = None if e and e.grade == "controlled" else r.controlled
        span += f"; controlled published: {_x(*ctl)}" if ctl else ""
        rows.append([r.title, _ratio(e) if e else NOT_KNOWN, _from(e) if e else MISSING, span,
                     v.cheaper if v else MISSING, _x(*v.break_even, "$", "/h") if v and v.break_even else MISSING])
    ask = (f"{a} cheaper per unit at {prices[0].usd_per_hour:g} / {prices[1].usd_per_hour:g} USD/h?" if prices else
           f"{a} worth twice the {b}'s rent?")
    dropped = "; ".join(f"{t}: {why}" for t, why in ans.omitted)
    return Table(f"{a} vs {b}: the answer", ["workload", f"{a} over {b}", "from", "evidence range (same GPUs)", ask,
                                             f"break-even {a} rent"], rows,
                 caption="controlled published: the range of the published pairs and claims graded controlled (one "
                 "source measured both GPUs with one model, software and settings), where the answer is not one. "
                 f"Prices: {ans.price_basis}. Break-even rent = the {b}'s price x the ratio: below it the {a} "
                 "costs less per unit of work; the verdict flips where the ratio equals the rent ratio." +
                 (f" Rows not shown: {dropped}." if dropped else ""), lead=suite_lines(ans))


def suite_lines(ans: PairAnswer) -> list[str]:
    """The suite's figure (the one `compare` and the pages give), and which runs were read."""
    overall = ans.suite.overall if ans.suite else None
    got = overall.ratios[1] if overall else None
    if ans.suite is None or overall is None or got is None:
        return [ans.read] if ans.read else []
    interval = f" [{got.ci[0]:.2f}, {got.ci[1]:.2f}]" if got.ci and got.is_95 else ""
    return [f"Over the {ans.suite.suite} suite's {overall.n} cases (as `llmbench compare` and the pages): "
            f"{got.value:.2f}x{interval}.", *([ans.read] if ans.read else [])]


def evidence_table(ans: PairAnswer) -> Table:
    rows = [[r.title, e.kind + (" (the answer)" if e is r.chosen else ""), e.grade, _ratio(e), e.interval or "-",
             e.gpus + ("" if e.same_pair else " (other GPUs: shown, not used)"), e.source, e.what]
            for r in ans.rows for e in r.evidence]
    rows += [[r.title, "note", "", "", "", "", "", n] for r in ans.rows for n in r.notes]
    return Table("Every source, per workload, graded", ["workload", "kind", "grade", "ratio", "interval is", "GPUs",
                                                        "source", "what"], rows,
                 caption="controlled: one source measured both GPUs with one model, software and settings; "
                 "uncontrolled pairs and published-vs-llmbench pairs are evidence, never the answer alone; an 'up "
                 "to' claim is a maximum. A projection's interval is its class's validation band within the parts' "
                 "bounds (not a confidence interval).")


def projection_table(ans: PairAnswer) -> Table:
    rows = []
    for r in ans.rows:
        p = r.projection
        if p is None:
            continue
        sc = p.scales
        rows.append([r.title, f"{gpu_name(sc.src)} -> {gpu_name(sc.dst)}", p.split.klass, p.split.text(),
                     f"x{sc.bandwidth:.2f}", MISSING if sc.compute is None else f"x{sc.compute:.2f}",
                     MISSING if p.point is None else f"x{p.point:.2f}", _x(p.low, p.high)])
    return Table("Projection by parts (time multipliers, > 1: slower on the target)",
                 ["workload", "projected", "class", "parts of the measured time", "memory (bandwidth ratio)",
                  "compute (peak ratio of its precision)", "point", "the parts' bounds"], rows,
                 caption="memory and compute: the step's roofline bound at the bandwidth or at the peak; gpu: the "
                 "rest of the GPU-busy time (between the bandwidth and compute ratios; the case's own bound for the "
                 "point); host: as measured; rest: not split by what the case recorded (from host to GPU: no "
                 "point estimate).",
                 empty="no case of these workloads was measured on either GPU")


def validation_table(ans: PairAnswer) -> Table:
    rows = []
    for klass, band in ans.bands.items():
        pairs = sorted({f"{gpu_name(c.projection.scales.src)} -> {gpu_name(c.projection.scales.dst)}"
                        for c in band.checks})
        err = band.errors
        rows.append([klass, f"{len(band.checks)} of {band.seen}", ", ".join(pairs) or "-",
                     MISSING if err is None else f"{err[0]:+.0%} to {err[1]:+.0%}",
                     "validated" if band.checks else "not validated"])
    return Table("The projection validated, per class of case", ["class", "checks that count", "measured pairs",
                                                                  "error of the projected speed", "status"], rows,
                 caption="Each case measured on two GPUs projected from one to the other, and each controlled "
                 "published pair of a case llmbench measured (its ratio against the projection's). A pair validates "
                 "only the classes whose parts it moves: H100 and H200 share their compute peak, so they validate "
                 "memory-bound cases only; host-bound cases are never validated (no host is modelled).",
                 empty="no case measured on two GPUs")


def prices_table(ans: PairAnswer) -> Table:
    got = ans.prices or ()
    return Table("Prices", ["GPU", "USD per hour", "where from"],
                 [[gpu_name(g), f"{p.usd_per_hour:g}", p.origin()] for g, p in zip((ans.a, ans.b), got, strict=False)],
                 caption=ans.price_basis, empty=ans.price_basis)


def sources_table(ans: PairAnswer) -> Table:
    return Table("Sources", ["source", "grade and why", "citation", "url"],
                 [[s, g, c, u or "-"] for s, (c, u, g) in sorted(ans.sources.items())],
                 caption="Each published figure's row as printed, its conditions and what differs from the llmbench "
                 "case are in its result set under llmbench/references/data/published/ (info.match).")


def all_tables(ans: PairAnswer) -> list[Table]:
    return [answer_table(ans), measured_table(ans), evidence_table(ans), projection_table(ans),
            validation_table(ans), prices_table(ans), sources_table(ans)]


def pair_markdown(ans: PairAnswer) -> str:
    return f"# {gpu_name(ans.a)} vs {gpu_name(ans.b)}\n\n{lead(ans)}\n\n{to_markdown(all_tables(ans))}"


def pair_html(ans: PairAnswer) -> str:
    """The answer unfolded, everything else folded under it."""
    parts = [f'<section id="{html.escape(page_name(ans.a, ans.b)[:-3])}" class="answer">',
             f"<h2>{html.escape(gpu_name(ans.a))} vs {html.escape(gpu_name(ans.b))}</h2>",
             f'<p class="lead">{html.escape(lead(ans))}</p>', _table_body(answer_table(ans))]
    parts += [f"<details><summary>{html.escape(t.title)}</summary>\n{table_html(t)}\n</details>"
              for t in all_tables(ans)[1:]]
    return "\n".join([*parts, "</section>"])


@dataclass
class PairPage:
    name: str  # results/<name>
    markdown: str
    html: str


def pair_page(results_dir: Path, a: str = DEFAULT_PAIR[0], b: str = DEFAULT_PAIR[1]) -> PairPage:
    """The GPU-pair page of a results tree (what `nox -s publish` writes as results/<a>-vs-<b>.md)."""
    ans = build_pair(a, b, results_dir)
    return PairPage(page_name(a, b), pair_markdown(ans), pair_html(ans))
