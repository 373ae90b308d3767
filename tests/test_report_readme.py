"""The README's answer table, generated from result sets: each question picks one headline case, each
GPU's figure is the one rule's (analysis/runs.py: a newer recorded code path replaces runs that recorded
none, which the page the block links to lists as left out), ratios read "above 1 is faster" for latencies
too, and the block between the markers is all that changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmbench.publishing import readme
from llmbench.results import CaseResult, MetricResult, ResultSet, save
from llmbench.suite import SUITES_DIR, load_suite

HEADLINE = load_suite(str(SUITES_DIR / "headline.toml")).cases
BF16_DECODE = next(q for q in readme.QUESTIONS if q.label.startswith("Llama-3-8B decode, bf16, batch 1"))
TTFT = next(q for q in readme.QUESTIONS if q.metric == "ttft_ms")


def test_every_question_picks_exactly_one_headline_case() -> None:
    ids = [readme.headline_case(q, HEADLINE).id for q in readme.QUESTIONS]
    assert len(set(ids)) == len(ids)


def _set(results: Path, slug: str, suite: str, stamp: str, figures: dict[readme.Question, float],
         path: dict[str, str] | None = None) -> None:
    cases = []
    for q, value in figures.items():
        spec = readme.headline_case(q, HEADLINE)
        cases.append(CaseResult(id=spec.id, scenario=spec.scenario, params=spec.params_dict, status="ok",
                                metrics={q.metric: MetricResult.single(q.metric, value)}, code_path=path or {}))
    rs = ResultSet(suite=suite, created_at=f"2030-01-0{stamp}T00:00:00Z", env={"gpu": {"slug": slug}}, cases=cases)
    save(rs, results / slug / f"{suite}-2030010{stamp}T000000Z.json")


def test_the_rule_gives_each_gpus_figure_and_ratios_read_faster(tmp_path: Path) -> None:
    _set(tmp_path, "h100-sxm-80gb", "inference-llama3-8b", "1", {BF16_DECODE: 100.0, TTFT: 80.0})
    _set(tmp_path, "h100-sxm-80gb", "headline", "2", {BF16_DECODE: 150.0}, {"engine": "hf"})  # a recorded path
    _set(tmp_path, "h200-sxm-141gb", "headline", "1", {BF16_DECODE: 200.0, TTFT: 40.0})
    (tmp_path / "published" / "a100-sxm-80gb").mkdir(parents=True)  # reference figures: not a GPU column
    table = readme.answer_table(tmp_path)
    head, _rule, decode, ttft, _blank, *sources = table.splitlines()
    assert head == "| question | H100 SXM5 80GB | H200 SXM 141GB | H200 SXM 141GB vs H100 SXM5 80GB |"
    assert decode == f"| {BF16_DECODE.label} | 150.0 | 200.0 | 1.33x |"
    assert ttft == f"| {TTFT.label} | 80.00 | 40.00 | 2.00x |"  # half the latency: twice as fast
    # the runs behind the figures are the page's to list (they grow with every run), not the README's
    link = f"[{readme.PAGE}]({readme.PAGE}#runs-used)"
    assert sources == [f"The runs behind each figure, and those left out with why: {link}."]
    assert "20300101" not in table


def test_a_question_no_gpu_measured_is_left_out_and_one_side_shows_a_dash(tmp_path: Path) -> None:
    _set(tmp_path, "h100-sxm-80gb", "headline", "1", {BF16_DECODE: 100.0, TTFT: 50.0})
    _set(tmp_path, "h200-sxm-141gb", "headline", "1", {BF16_DECODE: 120.0})
    rows = [r for r in readme.answer_table(tmp_path).splitlines() if r.startswith("| ") and "question" not in r]
    assert rows == [f"| {BF16_DECODE.label} | 100.0 | 120.0 | 1.20x |", f"| {TTFT.label} | 50.00 | – | – |"]


def test_rewrite_replaces_only_the_block(tmp_path: Path) -> None:
    text = f"intro\n{readme.BEGIN}\nold\n{readme.END}\nafter\n"
    assert readme.rewrite(text, "new") == f"intro\n{readme.BEGIN}\nnew\n{readme.END}\nafter\n"
    with pytest.raises(ValueError, match="no"):
        readme.rewrite("no markers", "new")
    _set(tmp_path / "results", "h100-sxm-80gb", "headline", "1", {BF16_DECODE: 100.0})
    doc = tmp_path / "README.md"
    doc.write_text(text, encoding="utf-8")
    readme.main([str(doc)])  # results/ beside the README
    assert "| 100.0 |" in doc.read_text(encoding="utf-8") and "after" in doc.read_text(encoding="utf-8")


def test_the_page_the_block_links_to_lists_the_runs() -> None:
    page = Path(__file__).resolve().parents[1] / readme.PAGE
    headings = page.read_text(encoding="utf-8").splitlines()
    assert "## Runs used" in headings and "## Runs left out" in headings
