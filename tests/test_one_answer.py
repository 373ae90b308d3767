"""One tree, one figure per case: the README block, results/h100-vs-h200.md, report.html, the
spread pages and `llmbench compare` (folders and globs, Markdown and JSON) print the same figure for each
case, the one rule's (analysis/runs.py). The synthetic tree holds what fooled the pages before: several runs of a case,
a run of another code path, runs that recorded no path, a spread run, and a newer partial resume file
that holds only some cases. The same check runs over the committed results/ tree."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmbench.analysis.runs import case_runs, tree_sets
from llmbench.cli import app
from llmbench.publishing import readme
from llmbench.publishing.pages import tree_page
from llmbench.publishing.publish import publish
from llmbench.report.tables import fmt_num
from llmbench.results import CaseResult, MetricResult, ResultSet, save
from llmbench.suite import SUITES_DIR, load_suite
from tests.conftest import RESULTS as ROOT_RESULTS
from tests.conftest import tracked

GPUS = ("h100-sxm-80gb", "h200-sxm-141gb")
NAMES = ("H100 SXM5 80GB", "H200 SXM 141GB")
HEADLINE = load_suite(str(SUITES_DIR / "headline.toml")).cases
Q = {q.label.split(" (")[0]: q for q in readme.QUESTIONS}
DECODE, DECODE_FP8 = Q["Llama-3-8B decode, bf16, batch 1"], Q["Llama-3-8B decode, fp8, batch 1"]
TTFT, GEMM = Q["time to first token, 2048 in, bf16"], Q["matmul bf16, 8192³"]
PATH, OLD_PATH = {"engine": "hf", "mode": "compiled"}, {"engine": "hf", "mode": "compiled", "fused": 0}
runner = CliRunner()


def _run(tree: Path, rel: str, when: str, runs: dict[readme.Question, tuple[float, dict[str, Any] | None]],
         failed: tuple[readme.Question, ...] = ()) -> None:
    """A result set at `rel` under the tree: each question's case with its figure and code path (None:
    recorded none)."""
    cases = []
    for q, (value, path) in runs.items():
        spec = readme.headline_case(q, HEADLINE)
        cases.append(CaseResult(id=spec.id, scenario=spec.scenario, params=spec.params_dict, status="ok",
                                started_at=when, code_path=path or {}, settings={"warmup_iters": 2},
                                metrics={q.metric: MetricResult.single(q.metric, value)}))
    for q in failed:
        spec = readme.headline_case(q, HEADLINE)
        cases.append(CaseResult(id=spec.id, scenario=spec.scenario, params=spec.params_dict, status="failed",
                                reason="boom", started_at=when))
    slug = next(s for s in GPUS if s in rel)
    rs = ResultSet(suite=Path(rel).name.rsplit("-", 1)[0], created_at=when, cases=cases,
                   env={"gpu": {"slug": slug, "name": slug}})
    save(rs, tree / rel)


def synthetic_tree(tree: Path) -> Path:
    h100, h200, spread = "h100-sxm-80gb", "h200-sxm-141gb", "spread/h100-sxm-80gb"
    _run(tree, f"{h100}/headline-20300101T000000Z.json", "2030-01-01T00:00:00Z",
         {DECODE: (140.0, None), TTFT: (70.0, None), GEMM: (700.0, None), DECODE_FP8: (250.0, None)})
    _run(tree, f"{h100}/headline-20300102T000000Z.json", "2030-01-02T00:00:00Z",
         {DECODE: (150.0, OLD_PATH), TTFT: (64.0, PATH), GEMM: (710.0, PATH)})
    _run(tree, f"{h100}/headline-20300103T000000Z.json", "2030-01-03T00:00:00Z",
         {DECODE: (160.0, PATH), TTFT: (66.0, PATH), GEMM: (705.0, PATH)})
    _run(tree, f"{spread}/headline-20300103T120000Z.json", "2030-01-03T12:00:00Z",
         {DECODE: (158.0, PATH), TTFT: (65.0, PATH)})
    _run(tree, f"{h100}/headline-20300104T000000Z.json", "2030-01-04T00:00:00Z",  # a resume: some cases only
         {GEMM: (690.0, PATH)})
    _run(tree, f"{h100}/inference-llama3-8b-20300101T000000Z.json", "2030-01-01T06:00:00Z",
         {DECODE_FP8: (240.0, None)})  # no run of the case recorded a path: the two pool, labelled so
    _run(tree, f"{h200}/headline-20300101T000000Z.json", "2030-01-01T00:00:00Z",
         {DECODE: (190.0, PATH), TTFT: (60.0, PATH), GEMM: (680.0, PATH), DECODE_FP8: (200.0, PATH)})
    _run(tree, f"{h200}/headline-20300102T000000Z.json", "2030-01-02T00:00:00Z",
         {DECODE: (195.0, PATH), GEMM: (690.0, PATH)}, failed=(TTFT,))
    return tree


def md_table(text: str, title: str) -> list[list[str]]:
    """The rows of the Markdown table under the heading `## {title}`."""
    at = text.index(f"## {title}\n")
    body = text[at:].split("\n\n")[1]
    return [[c.strip() for c in line.strip("|").split("|")] for line in body.splitlines()[2:]]


def html_table(page: str, section: str, title: str) -> list[list[str]]:
    """The rows of the table titled `title` in the HTML section headed `section`."""
    part = page[page.index(f"<h2>{html.escape(section)}</h2>"):]
    part = part[part.index(f"<h4>{html.escape(title)}</h4>"):]
    table = part[: part.index("</table>")]
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)]
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)) for c in row] for row in rows if row]


def _cell(rows: list[list[str]], label: str, metric: str, side: int) -> str:
    """The figure of a scenario table's row (case, metric, unit, one column per side, ...)."""
    (row,) = [r for r in rows if r[0] == label and r[1] == metric]
    return row[3 + side].split()[0]


def figures_everywhere(tree: Path, tmp: Path) -> dict[tuple[str, str, str], set[str]]:
    """(GPU, case id, metric) -> every figure the pages and `compare` print for it, and the rule's own."""
    questions = [(q, readme.headline_case(q, HEADLINE)) for q in readme.QUESTIONS]
    rule = case_runs(tree_sets(tree))
    seen: dict[tuple[str, str, str], set[str]] = {}

    def saw(i: int, cid: str, metric: str, text: str) -> None:
        seen.setdefault((GPUS[i], cid, metric), set()).add(text)

    for q, spec in questions:
        for i, slug in enumerate(GPUS):
            got = rule[slug].case(spec.id) if slug in rule else None
            if got is not None and got.value(q.metric) is not None:
                saw(i, spec.id, q.metric, fmt_num(got.value(q.metric)))
    block = readme.answer_table(tree)
    for q, spec in questions:
        row = next((r for r in block.splitlines() if r.startswith(f"| {q.label} |")), None)
        for i in range(len(GPUS)):
            if row is not None and row.split(" | ")[1 + i] != "–":
                saw(i, spec.id, q.metric, row.split(" | ")[1 + i])
    md, page_html, *_ = publish(tree, after=None)
    md_text, page = md.read_text(), page_html.read_text()
    wanted = {(spec.id, q.metric) for q, spec in questions}
    for sec in tree_page(tree).compared:
        assert sec.cmp is not None
        for r in sec.cmp.rows:
            if (r.case_id, r.metric) in wanted:
                title = f"Scenario {r.scenario}"
                for i in range(2):
                    saw(i, r.case_id, r.metric, _cell(md_table(md_text, f"{sec.title} — {title}"), r.case, r.metric, i))
                    saw(i, r.case_id, r.metric, _cell(html_table(page, sec.title, title), r.case, r.metric, i))
    for i, slug in enumerate(GPUS):  # the spread pages: each GPU's cases of two runs or more
        page_json = tree / "spread" / f"{slug}.json"
        for r in json.loads(page_json.read_text())["rows"] if page_json.exists() else []:
            if (r["case_id"], r["metric"]) in wanted:
                saw(i, r["case_id"], r["metric"], fmt_num(r["value"]))
    folders = [tree / slug for slug in GPUS]
    files = [p for slug in GPUS for p in (*sorted((tree / slug).glob("*.json")),
                                          *sorted((tree / "spread" / slug).glob("*.json")))]
    for args in (folders, files):
        out = tmp / "compare.json"
        res = runner.invoke(app, ["compare", *map(str, args), "-f", "json", "-o", str(out)])
        assert res.exit_code == 0, res.output
        data = json.loads(out.read_text())
        rows = [r for part in data.get("comparisons", [data]) for r in part["comparison"]["rows"]]
        for r in rows:
            if (r["case_id"], r["metric"]) in wanted:
                for i in range(2):
                    saw(i, r["case_id"], r["metric"], fmt_num(r["values"][i]))
        res = runner.invoke(app, ["compare", *map(str, args), "--all", "-f", "markdown"], env={"COLUMNS": "200"})
        assert res.exit_code == 0, res.output
        for r in rows:
            if (r["case_id"], r["metric"]) in wanted:
                for i in range(2):
                    saw(i, r["case_id"], r["metric"], _cell(md_table(res.output, f"Scenario {r['scenario']}"),
                                                            r["case"], r["metric"], i))
    return seen


@pytest.mark.slow
def test_every_page_and_compare_print_the_rules_figure_for_each_case(tmp_path: Path) -> None:
    tree = synthetic_tree(tmp_path / "results")
    seen = figures_everywhere(tree, tmp_path)
    assert {k: v for k, v in seen.items() if len(v) != 1} == {}
    spec = readme.headline_case(DECODE, HEADLINE)
    # the full set's run and the spread run of the newest path (the resume file does not hide the case)
    assert seen[("h100-sxm-80gb", spec.id, DECODE.metric)] == {"159.0"}
    fp8 = readme.headline_case(DECODE_FP8, HEADLINE)
    # the newer of the two runs without a path: runs that recorded none pool only within one repeat group
    assert seen[("h100-sxm-80gb", fp8.id, DECODE_FP8.metric)] == {"240.0"}
    assert len(seen) == 8  # every question's case on both GPUs, none absent
    assert (tree / "spread" / "h100-sxm-80gb.json").exists()  # its cases of several runs were checked too


@pytest.mark.slow
def test_the_committed_tree_reads_one_figure_per_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from llmbench.report import html as report_html

    # the figures are read from the pages' tables: report.html's charts (most of this test's time over the
    # whole committed tree) are left out here; the synthetic tree's test above draws them
    monkeypatch.setattr(report_html, "_charts", lambda built: [])
    tree = tmp_path / "results"
    for slug in GPUS:
        for where in (slug, f"spread/{slug}"):  # the committed sets only, not a user's own runs beside them
            (tree / where).mkdir(parents=True)
            for p in tracked("results", f"{where}/*.json"):
                shutil.copy(p, tree / where / p.name)
    seen = figures_everywhere(tree, tmp_path)
    assert {k: v for k, v in seen.items() if len(v) != 1} == {}
    assert len(seen) == 2 * len(readme.QUESTIONS)  # every question measured on both GPUs, none absent


@pytest.mark.slow
def test_the_packaged_export_is_the_committed_trees_and_reads_back_to_its_figures(committed_results: Path) -> None:
    """llmbench/references/data/measured/ is what `nox -s publish` writes from results/ (run it after a
    set is committed), under 1.5 MB, and the rule reads it back to the tree's figures. The tree is the
    committed one: a user's own runs in results/ (`nox -s scenario`'s quickstart sets) are not published."""
    from llmbench.analysis.runs import FLOOR_FILE, MEASURED_DATA
    from llmbench.publishing.pages import export_floor, export_sets

    files = sorted(p for p in MEASURED_DATA.rglob("*.json") if p.name != FLOOR_FILE)
    assert sorted(str(p.relative_to(MEASURED_DATA)) for p in files) == sorted(export_sets(committed_results)), (
        "the packaged export is stale: nox -s publish")
    assert sum(p.stat().st_size for p in files) < 1_500_000  # grows with each committed run: a budget
    assert _figures(MEASURED_DATA) == _figures(committed_results)
    shipped = json.loads((MEASURED_DATA / FLOOR_FILE).read_text())  # its floor: the tree's, to rounding
    tree = export_floor(committed_results).to_list()
    assert [(r["gpu"], r["scenario"], r["family"]) for r in shipped] == [
        (r["gpu"], r["scenario"], r["family"]) for r in tree], "stale: nox -s publish"
    for got, want in zip(shipped, tree, strict=True):
        assert {k: v for k, v in got.items() if isinstance(v, str)} == {k: v for k, v in want.items()
                                                                           if isinstance(v, str)}
        assert {k: v for k, v in got.items() if not isinstance(v, str)} == pytest.approx(
            {k: v for k, v in want.items() if not isinstance(v, str)}, rel=1e-9, nan_ok=True)


def _figures(tree: Path) -> dict[tuple[str, str, str], float | None]:
    """The rule's figure of every headline metric of every case of every GPU of a tree."""
    from llmbench.analysis.compare import is_headline

    return {(slug, cid, m): c.value(m) for slug, g in case_runs(tree_sets(tree)).items()
            for cid, c in g.cases.items() for m in c.case.metrics if is_headline(c.case.scenario, m)}


def test_the_packaged_export_reads_back_to_the_trees_figures(tmp_path: Path) -> None:
    from llmbench.analysis.runs import MEASURED_DATA, reference_dir, reference_sets
    from llmbench.publishing.publish import write_export

    tree = synthetic_tree(tmp_path / "results")
    out = tmp_path / "measured"
    written = write_export(tree, out)
    assert sum(p.stat().st_size for p in written) < 50_000 and all("samples" not in p.read_text() for p in written)
    assert _figures(out) == _figures(tree)
    assert reference_dir(tree) == tree and reference_dir(None) == MEASURED_DATA == reference_dir(tmp_path / "none")
    assert [name for name, _ in reference_sets(out)] == [name for name, _ in tree_sets(out)]


@pytest.mark.slow
def test_the_committed_pages_are_what_publish_writes_from_the_committed_sets(
        committed_results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """results/h100-vs-h200.md, h100-vs-a100.md, report.html and the spread pages, as committed, are what
    `nox -s publish` writes from the committed sets now: a change to what a page prints lands with its
    pages written again, and a page never shows figures its sets no longer give."""
    shutil.copytree(committed_results, tmp_path / "results")
    monkeypatch.chdir(tmp_path)  # `results` as nox -s publish names it: the pages say which folder they read
    tree = Path("results")
    written = [p for p in publish(tree) if p.is_relative_to(tree)]
    committed = {str(p.relative_to(ROOT_RESULTS)): p for p in tracked("results")}
    assert len(written) >= 3
    for page in written:
        rel = str(page.relative_to(tree))
        assert rel in committed, f"results/{rel} is written by publish but not committed"
        assert _drawn_alike(page.read_text(encoding="utf-8"), committed[rel].read_text(encoding="utf-8")), (
            f"results/{rel} is stale: nox -s publish, then commit it")


_LONG_NUMBER = re.compile(r"-?\d+\.\d{5,}(?:e-?\d+)?")


def _drawn_alike(written: str, committed: str) -> bool:
    """The same page, to the last digit of every figure it prints. Numbers of five or more decimals (an SVG
    chart's coordinates, a float written whole in JSON) may differ in their last place: matplotlib's
    transforms and numpy's reductions round differently on different CPUs, so a page written on one
    machine moves a point by 1e-6 on another with nothing changed."""
    if written == committed:
        return True
    if _LONG_NUMBER.split(written) != _LONG_NUMBER.split(committed):
        return False
    return all(math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-5)
               for a, b in zip(_LONG_NUMBER.findall(written), _LONG_NUMBER.findall(committed), strict=True))


def test_a_page_is_alike_when_only_its_drawing_rounds_differently() -> None:
    page = '<p>1.63x [1.49, 1.94]</p><path d="M 53.966094 216.296852 L 53.966094 20.798437"/>'
    assert _drawn_alike(page, page.replace("20.798437", "20.798438"))
    assert not _drawn_alike(page, page.replace("1.63x", "1.64x"))  # a printed figure is never rounded away
    assert not _drawn_alike(page, page.replace("20.798437", "21.798437"))  # a point that moved
    assert not _drawn_alike(page, page.replace("<p>", "<p class=x>"))
