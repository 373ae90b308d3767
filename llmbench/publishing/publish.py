"""`nox -s publish`: regenerate llmbench's own published pages under results/ (the pair pages, report.html,
the spread pages) and the packaged reference data from the committed result sets. Every figure is computed
in publishing/pages.py by the one rule (analysis/runs.py); this module renders it with report's renderers.
The pages and their order: docs/design.md, "Comparing, projecting, publishing"."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from llmbench.analysis.inputs import SPREAD_DIR
from llmbench.analysis.prices import Price, first_list_prices
from llmbench.analysis.runs import FLOOR_FILE, MEASURED_DATA
from llmbench.analysis.spread import spread_data, spread_rows
from llmbench.publishing.pages import FIRST_SUITE, Page, export_floor, export_sets, tree_page
from llmbench.redact import machine_paths, redact
from llmbench.report.cost_view import cost_table
from llmbench.report.firstscreen import answers_markdown, pair_answers
from llmbench.report.html import render_html
from llmbench.report.pair_view import pair_page
from llmbench.report.slo_view import slo_block
from llmbench.report.spread_view import spread_tables
from llmbench.report.tables import Table, to_markdown
from llmbench.report.views import comparison_tables, engine_tables, runs_tables, validation_tables
from llmbench.results import write_atomic

MARKDOWN_NAME = "h100-vs-h200.md"
MARKDOWN_TITLE = "H100 SXM vs H200 SXM (measured)"
DETAILS_LINE = ("The tables behind the answer follow, suite by suite, then the projection check and the suites "
                "measured on one machine only; the runs each side used are listed at the end (Inputs), then every "
                "run read, used or left out, with why.")
HTML_NAME = "report.html"
Evidence = Callable[[Path, dict[str, Price]], tuple[str, str]]  # (Markdown, HTML) shown after the measured answer


def pair_evidence(results_dir: Path, prices: dict[str, Price]) -> tuple[str, str]:
    """The GPU-pair page (report/pair_view.py: H100 vs A100 from measured, published and projected
    evidence), written beside the pages; a link to it in the Markdown and its answer in the HTML, after what
    was measured. `prices`: the pair page takes its own, like for like (references/data/prices.json)."""
    del prices
    pair = pair_page(results_dir)
    write_atomic(results_dir / pair.name, pair.markdown)
    return f"The GPU-pair answer, with published and projected evidence: [{pair.name}]({pair.name}).\n", pair.html


def page_tables(page: Page, more: dict[str, list[Table]]) -> list[Table]:
    """The details of the Markdown page: each comparison's tables, the projection checks, the suites of
    one machine, the inputs, the runs read."""
    tables: list[Table] = []
    for sec in page.compared:
        assert sec.cmp is not None
        own = [t for d in sec.engines for t in engine_tables(d)]
        tables += [replace(t, title=f"{sec.title} — {t.title}")
                   for t in comparison_tables(sec.cmp, runs=False) + own + more.get(sec.title, [])]
    for sec in page.compared:
        for c in sec.checks:
            error, unmatched = validation_tables(c.validation, c.projected, c.measured)
            title = f"Projection check, {sec.title.split(':')[0]}: H100 projected to H200 vs measured H200"
            tables += [replace(error, title=f"{title} — error per workload and metric"),
                       replace(unmatched, title=f"{title} — {unmatched.title}")]
    tables += [t for sec in page.single for d in sec.engines for t in engine_tables(d)]
    if page.single:
        tables.append(Table(
            "Measured on one machine only (no comparison yet; each is a section of the HTML report)",
            ["suite", "GPU", "runs used", "cases ok"],
            [[sec.title.split(":")[0], s.rs.gpu_slug, ", ".join(s.stems),
              f"{sum(c.status == 'ok' for c in s.cases())} of {len(s.cases())}"]
             for sec in page.single for s in sec.sets],
        ))
    names = [s.name for s in page.compared[0].sets] if page.compared else []
    heads = [f"{n} runs" + (" (baseline)" if i == 0 else "") for i, n in enumerate(names)]
    tables.append(Table("Inputs", ["suite", *heads],
                        [[sec.title.split(":")[0], *(", ".join(s.stems) for s in sec.sets)] for sec in page.compared],
                        caption="each side's runs of the suite's cases, chosen case by case by the one rule "
                        "(analysis/runs.py) over every committed set of its GPU"))
    return tables + runs_tables(page.runs)


def write_spread_pages(page: Page, folder: Path) -> list[Path]:
    """Each GPU's between-run spread over the rule's chosen runs: results/spread/<slug>.md and .json."""
    out = []
    for slug, gpu in page.gpus.items():
        sides = [gpu.only({cid for cid, c in gpu.cases.items() if len(c.used) > 1}).side(slug)]
        rows = spread_rows(sides)
        if not any(r.between_run_cv is not None for r in rows):
            continue
        md, js = folder / f"{slug}.md", folder / f"{slug}.json"
        write_atomic(md, to_markdown(spread_tables(sides, rows)))
        write_atomic(js, json.dumps(spread_data(sides, rows), indent=2) + "\n")
        out += [md, js]
    return out


def write_export(results_dir: Path, out: Path) -> list[Path]:
    """The chosen runs of each committed GPU as package data (`runs.export_sets`), replacing the old."""
    for old in (p for p in out.iterdir() if p.is_dir()) if out.is_dir() else []:
        shutil.rmtree(old)
    written = []
    for rel, rs in export_sets(results_dir).items():  # compact: package data, read by the one reader
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out / rel, machine_paths(redact(rs.model_dump_json(exclude_none=True))))
        written.append(out / rel)
    write_atomic(out / FLOOR_FILE, json.dumps(export_floor(results_dir).to_list(), indent=0) + "\n")
    return [*written, out / FLOOR_FILE]


def publish(results_dir: Path, after: Evidence | None = pair_evidence, export: Path | None = None,
            prices: dict[str, Price] | None = None) -> list[Path]:
    """Write the Markdown comparison, the HTML report and the spread pages under `results_dir` (and the
    packaged reference data into `export`, where given); return their paths. `after`: the published and
    projected evidence shown after the measured answer (default: the H100-vs-A100 answer). `prices`: the
    headline's cost table (default: each GPU's first list price, references/data/prices.json)."""
    prices = first_list_prices() if prices is None else prices
    page = tree_page(results_dir, prices=prices)
    more = {sec.title: [cost_table(sec.cmp, prices)] for sec in page.compared
            if prices and sec.cmp is not None and sec.title.startswith(f"{FIRST_SUITE}:")}
    answers = pair_answers([(sec.title, sec.cmp) for sec in page.compared if sec.cmp is not None])
    answers += [slo_block(page.slo)] if page.slo is not None else []
    evidence_md, evidence_html = after(results_dir, prices) if after is not None else ("", "")
    md = f"# {MARKDOWN_TITLE}\n\n"
    md += answers_markdown(answers) if answers else "No suite has a measured result set on both machines yet.\n"
    md += f"\n{evidence_md}\n{DETAILS_LINE}\n\n" + to_markdown(page_tables(page, more))
    md_path, html_path = results_dir / MARKDOWN_NAME, results_dir / HTML_NAME
    write_atomic(md_path, md)
    write_atomic(html_path, render_html(page.compared + page.single + page.published,
                                        "llmbench: H100 vs H200 and published references",
                                        answers=answers, after=evidence_html, more=more, runs=page.runs))
    paths = [md_path, html_path, *sorted(results_dir.glob("*-vs-a*.md"))]
    paths += write_spread_pages(page, results_dir / SPREAD_DIR)
    return paths + (write_export(results_dir, export) if export is not None else [])


def main(argv: list[str] | None = None) -> int:
    """`python -m llmbench.publishing.publish [RESULTS]`: the pages, and the packaged reference data."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    for p in publish(Path(args[0] if args else "results"), export=MEASURED_DATA):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
