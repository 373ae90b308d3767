"""The H100-vs-A100 answer as tables (Markdown, terminal, CSV, JSON through report.tables), as an HTML
fragment, and as the section the published pages open with (`a100_section`: one call in publish.py
writes results/h100-vs-a100.md and returns what results/h100-vs-h200.md and report.html put first).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from llmbench.analysis.a100 import Answer, AnswerRow, Evidence, build_answer, short
from llmbench.analysis.a100_data import A100_NO_FP8, A100_TARGETS, H100, is_a100
from llmbench.analysis.prices import Price
from llmbench.report.html import _table_body, table_html
from llmbench.report.tables import MISSING, Table, fmt_num, to_markdown
from llmbench.results import write_atomic

PAGE_NAME = "h100-vs-a100.md"
TITLE = "H100 vs A100"


def _ratio_text(e: Evidence) -> str:
    iv = f" [{e.interval[0]:.2f}, {'inf' if e.interval[1] == float('inf') else f'{e.interval[1]:.2f}'}]" \
        if e.interval else ""
    return f"{e.ratio:.2f}x{iv}"


def _used(e: Evidence) -> str:
    if e.kind == "measured":
        return f"measured: {e.source}"
    if e.kind == "projected":
        return f"projected from the {short(e.source).split()[0]}, ±{_band(e)}"
    return f"published: {e.source} ({e.quality})"


def _band(e: Evidence) -> str:
    """The band's width from a projected ratio's interval text ('±22% projection band ...')."""
    return e.interval_kind.removeprefix("±").split(" ")[0] + " band" if e.interval_kind.startswith("±") else "no band"


def _usd(v: float | None) -> str:
    return MISSING if v is None else f"${v:.2f}/h"


def _row_cells(r: AnswerRow, with_prices: bool) -> list[str]:
    e, v = r.chosen, r.verdict
    cells = [r.workload.title, r.compared]
    if e is None or v is None:
        return [*cells, MISSING, "no source", MISSING] + ([MISSING, MISSING] if with_prices else [])
    cells += [_ratio_text(e), _used(e), v.worth_2x]
    if with_prices:
        be = _usd(v.break_even_usd)
        if v.break_even_interval:
            be += f" [{v.break_even_interval[0]:.2f}, {v.break_even_interval[1]:.2f}]"
        cells += [v.at_prices or "no A100 price given", be]
    return cells


def lead_sentence(a: Answer) -> str:
    """The answer's first line: what the ratios are and whether an A100 was measured."""
    done = (f"measured figures of your {short(a.a100)} ({', '.join(a.measured)}) replace the published and "
            "projected ones where a case is in them" if a.measured else
            "no A100 was measured here: each ratio is published or projected, and labelled so")
    return f"H100 SXM over {short(a.a100)}, per headline workload (> 1: the H100 is faster); {done}."


def lead_text(a: Answer) -> str:
    """How to read the answer: the lead sentence, the sources, the verdict's choice and fp8."""
    how = ("" if a.measured else "Published: a source's own figures, or its claim; projected: llmbench's H100 "
           "and H200 measurements scaled by roofline, with the error band of the workload's family from "
           "validation (not a confidence interval). `llmbench versus YOUR-A100-BUNDLE` puts your measurement "
           "in their place. ")
    return (f"{lead_sentence(a)} {how}The verdict uses the measured ratio where there is one, else a close "
            "published pair of the same GPUs, else the projection (column 'source used'). "
            f"{A100_NO_FP8[0].upper()}{A100_NO_FP8[1:]}.")


def answer_table(a: Answer) -> Table:
    with_prices = H100 in a.prices
    cols = ["workload", "compared", "H100 over A100", "source used", "H100 worth 2x the rent?"]
    if with_prices:
        cols += [f"cheaper per unit at the prices given ({short(H100)} {_usd(a.prices[H100].usd_per_hour)}, "
                 f"{short(a.a100)} {_usd(a.prices[a.a100].usd_per_hour) if a.a100 in a.prices else 'no price'})",
                 "break-even A100 rent"]
    caption = ("'within the noise': the interval holds 2 (or the price ratio); '(no interval)': the source gives "
               "single figures. Break-even A100 rent = the H100's price / the ratio: below it the A100 costs "
               "less per unit of work.")
    if not with_prices:
        caption += (" No prices were given: --price h100-sxm-80gb=USD (and the A100's) adds the verdict at your "
                    "prices and the break-even rent.")
    else:
        given = "; ".join(f"{s} ${p.usd_per_hour:g}/h ({p.origin()})" for s, p in sorted(a.prices.items()))
        caption += f" Prices, from {a.prices_origin}: {given}."
    return Table(f"{TITLE}: the answer", cols, [_row_cells(r, with_prices) for r in a.rows], caption=caption)


def evidence_table(a: Answer) -> Table:
    rows = []
    for r in a.rows:
        for e in r.evidence:
            rows.append([r.workload.key, "fp8 vs bf16" if r.fp8 else "same", e.kind + (" (used)" if e is r.chosen
                                                                                     else ""),
                         _ratio_text(e), e.interval_kind or "-", e.pair, e.precisions, e.quality,
                         fmt_num(e.h100) if e.h100 is not None else MISSING,
                         fmt_num(e.a100) if e.a100 is not None else MISSING, e.what])
        rows += [[r.workload.key, "fp8 vs bf16" if r.fp8 else "same", "note", "", "", "", "", "", "", "", n]
                 for n in r.notes if n != A100_NO_FP8]
    return Table(
        "Every source, per workload", ["workload", "compared", "kind", "H100 over A100", "interval is", "GPUs",
                                       "precisions", "match", "H100", "A100", "from"], rows,
        caption="match: how well a published figure's conditions match the llmbench case (close: same model, "
        "precision and batch on other software; loose: another model, batch or kind of figure; own workload: the "
        "source's own). A claim gives a ratio only. Projected intervals are error bands from validation.")


def bands_table(a: Answer) -> Table:
    rows = []
    for fam, b in sorted(a.bands.items()):
        h200 = [c for c in b.checks if c.kind.startswith("H100 -> H200")]
        rows.append([fam, str(len(b.checks)), str(len(h200)), str(len(b.checks) - len(h200)),
                     f"{b.median:.1%}" if b.median is not None else MISSING,
                     f"{b.worst:.1%}" if b.worst is not None else MISSING])
    return Table(
        "Projection error per workload family (validation)",
        ["family", "checks", "H100 -> H200 (measured)", "against published A100 figures and ratios",
         "median |error|", "worst |error| (the band)"], rows,
        caption="The band of a family is the worst |error| of its checks at the same precision on both sides: the "
        "H100 projected to the H200 against the H200's measurement, and llmbench's measurement projected to an A100 "
        "against published A100 figures and H100/A100 ratios (close and loose matches). Prefill and matmul count "
        "compute-bound cases only (prompts of 1024+ tokens, matmuls of 4096+ per side).")


def checks_table(a: Answer) -> Table:
    rows = [[c.family, c.kind, c.what, c.target, c.quality, fmt_num(c.reference), fmt_num(c.projected),
             f"{c.error_pct:+.1f}%", "yes" if c.in_band else "no", c.source]
            for c in a.checks if not c.kind.startswith("H100 -> H200")]
    return Table(
        "Projected A100 against published A100 figures and ratios (case by case)",
        ["family", "check", "case or claim", "GPU (pair)", "match", "published", "projected", "error",
         "in the band", "source"], rows,
        caption="error = projected / published - 1 for a figure; for a ratio, the error of the A100 figure the "
        "projected ratio implies (> 0: the projection put the A100 too high). Checks across precisions (the H100's "
        "fp8 against the A100's fp16) test llmbench's fp8 path against the source's, not the projection: shown, not "
        "in the band.", empty="no published A100 figure joins a committed case")


def projections_table(a: Answer) -> Table:
    rows = []
    for p in a.projections:
        runs = f" ({len(p.h100_runs)} runs: {min(p.h100_runs):.4g}-{max(p.h100_runs):.4g})" if len(p.h100_runs) > 1 \
            else ""
        cells = [p.workload.key, p.workload.metric, fmt_num(p.h100) + runs, fmt_num(p.h200) if p.h200 else MISSING]
        for slug in A100_TARGETS:
            mine, other = p.from_h100.get(slug), p.from_h200.get(slug)
            text = fmt_num(mine) if isinstance(mine, float) else f"not projected: {mine}"
            if isinstance(other, float):
                text += f" (from H200: {fmt_num(other)})"
            cells.append(text)
        cells.append(p.band.text())
        rows.append(cells)
    return Table(
        "Projected A100 figures of the committed headline cases",
        ["workload", "metric", "H100 measured", "H200 measured", *(short(s) for s in A100_TARGETS), "band"], rows,
        caption="Roofline projections (analysis/project.py) of the newest committed H100 case, and of the H200's case "
        "of the same id where there is one; estimates, not measurements. A100 40GB: the SXM part (the 40GB PCIe has "
        "the same datasheet bandwidth and peaks). Power limits are not modelled.")


def sources_table(a: Answer) -> Table:
    seen: dict[str, list[str]] = {}
    cites: dict[str, tuple[str, str]] = {}
    for f in a.figures:
        seen.setdefault(f.source, [])
        if f.slug not in seen[f.source]:
            seen[f.source].append(f.slug)
        cites[f.source] = (f.rs.source.citation or "", f.rs.source.url or "")
    rows = [[s, ", ".join(slugs), cites[s][0], cites[s][1] or "-"] for s, slugs in seen.items()]
    rows += [[c.key, f"{c.faster} / {c.slower}", f"{c.citation}: '{c.quote}'" + (f" ({c.english})" if c.english
                                                                                 else ""), c.url or "-"]
             for c in a.claims]
    return Table("Sources", ["source", "GPUs", "citation and quoted text", "url"], rows,
                 caption="Each published figure's row or sentence, its conditions and what differs from the llmbench "
                 "case are in its result set under results/published/ (info.match); the ratio-only claims are in "
                 "results/published/h100-vs-a100-ratios.json.")


def prices_table(prices: dict[str, Price], origin: str) -> Table:
    return Table("Prices", ["GPU", "USD per hour", "where from"],
                 [[s, f"{p.usd_per_hour:g}", p.origin()] for s, p in sorted(prices.items())],
                 caption=origin, empty="no prices given")


def all_tables(a: Answer) -> list[Table]:
    out = [answer_table(a), evidence_table(a), bands_table(a), checks_table(a), projections_table(a)]
    if a.prices:
        out.append(prices_table(a.prices, a.prices_origin))
    return [*out, sources_table(a)]


def page_markdown(a: Answer) -> str:
    return f"# {TITLE}\n\n{lead_text(a)}\n\n{to_markdown(all_tables(a))}"


def top_markdown(a: Answer) -> str:
    """What results/h100-vs-h200.md opens with: the answer table and where the evidence is."""
    body = to_markdown([answer_table(a)])
    return f"# {TITLE}\n\n{lead_text(a)}\n\n{body}\nEvery source, the validation and the projections: [{PAGE_NAME}]" \
           f"({PAGE_NAME}).\n\n"


def answer_html(a: Answer) -> str:
    """The HTML fragment: the answer first, the evidence folded under it."""
    rest = lead_text(a).removeprefix(lead_sentence(a)).strip()
    parts = [f'<section id="h100-vs-a100" class="answer"><h2>{TITLE}</h2>',
             f'<p class="lead">{html.escape(lead_sentence(a))}</p>', f'<p class="caption">{html.escape(rest)}</p>',
             f'<div class="a100-answer">{_table_body(answer_table(a))}</div>']  # unfolded: it is the answer
    parts += [f"<details><summary>{html.escape(t.title)}</summary>\n{table_html(t, 4)}\n</details>"
              for t in all_tables(a)[1:]]
    parts.append("</section>")
    return "\n".join(parts)


@dataclass
class AnswerSection:
    markdown: str  # the top of results/h100-vs-h200.md
    html: str  # the top of results/report.html
    path: Path  # results/h100-vs-a100.md, written


def a100_section(results_dir: Path, prices: dict[str, Price], origin: str) -> AnswerSection:
    """The H100-vs-A100 answer from the committed sets (prices: the example file's, with its dates): writes
    results/h100-vs-a100.md and returns the section the other pages open with."""
    keep = {k: v for k, v in prices.items() if k == H100 or is_a100(k)}
    a = build_answer(results_dir, prices=keep, prices_origin=origin)
    path = results_dir / PAGE_NAME
    write_atomic(path, page_markdown(a))
    return AnswerSection(top_markdown(a), answer_html(a), path)
