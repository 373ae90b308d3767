"""publish(): the H100-vs-H200 page, the HTML report, the spread pages and the packaged reference data
from result sets in a folder, every figure by the one rule (analysis/runs.py); published figures."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_compare_support import h100_set, h200_set

from llmbench.analysis.prices import Price, first_list_prices
from llmbench.ids import case_id
from llmbench.publishing.publish import publish
from llmbench.results import CaseResult, ResultSet, save


def _only(rs: ResultSet, suite: str) -> ResultSet:
    """The set under another suite, its cases of other params (ids no other suite holds)."""
    cases = [c.model_copy(update={"params": {**c.params, "only": suite}, "id": case_id(c.scenario, {**c.params,
                                                                                                 "only": suite})})
             for c in rs.cases]
    return rs.model_copy(update={"suite": suite, "cases": cases})


@pytest.mark.slow
def test_publish_takes_every_run_of_a_case_by_the_one_rule(tmp_path: Path) -> None:
    save(h100_set(created_at="2026-11-01T00:00:00Z"), tmp_path / "h100-sxm-80gb" / "quickstart-old.json")
    save(h100_set(created_at="2026-11-22T00:00:00Z"), tmp_path / "h100-sxm-80gb" / "quickstart-new.json")
    save(h200_set(), tmp_path / "h200-sxm-141gb" / "quickstart-1.json")
    save(_only(h100_set(), "only-h100"), tmp_path / "h100-sxm-80gb" / "only-h100-1.json")
    md, html, *_ = publish(tmp_path, after=None)
    text = md.read_text()
    inputs = text[text.index("## Inputs"):]
    assert "h100-sxm-80gb/quickstart-new.json" in inputs and "h100-sxm-80gb/quickstart-old.json" in inputs
    assert "| only-h100 | h100-sxm-80gb |" in text  # measured on one machine only
    assert "Geometric means of ratios" in text and "[" in text  # CIs
    assert "## Runs used" in text and "## Runs left out" in text
    page = html.read_text()
    # the reference sets shipped with the package (llmbench/references/data/published/), labelled so
    assert "Published reference: mamf-ml-engineering" in page and 'class="tag published"' in page
    assert 'id="runs"' in page and "Runs left out" in page


@pytest.mark.slow
def test_the_page_opens_with_what_was_measured_then_the_evidence_after_it(tmp_path: Path) -> None:
    save(h100_set(), tmp_path / "h100-sxm-80gb" / "quickstart-1.json")
    save(h200_set(), tmp_path / "h200-sxm-141gb" / "quickstart-1.json")
    md, html, *_ = publish(tmp_path, after=lambda _results, _prices: ("# Published evidence\n\n",
                                                                       '<section id="evidence"></section>'))
    text = md.read_text()
    assert text.startswith("# H100 SXM vs H200 SXM (measured)\n")  # what was measured comes first
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    pair = headings.index("## H200 SXM 141GB vs H100 SXM5 80GB")
    assert pair == 0 and text.index("# Published evidence") > text.index(headings[pair])
    assert headings[-3:] == ["## Inputs", "## Runs used", "## Runs left out"]
    answer = text[text.index(headings[pair]): text.index("# Published evidence")]
    assert "### quickstart: H100 vs H200" in answer and "| all workloads | 1." in answer
    assert "H100 SXM5 80GB: 1 run; H200 SXM 141GB: 1 run" in answer  # runs per side
    assert "Projection check, quickstart: H100 projected to H200 vs measured H200" in text
    page = html.read_text()
    assert page.index('id="answer"') < page.index('id="evidence"') < page.index('id="projection-check"')


def test_publish_with_nothing_to_compare(tmp_path: Path) -> None:
    md, html = publish(tmp_path, after=None)
    assert "No suite has a measured result set on both machines" in md.read_text() and html.exists()


@pytest.mark.slow
def test_a_suite_one_gpu_ran_is_compared_with_the_other_gpus_runs_of_its_cases(tmp_path: Path) -> None:
    """The headline suite ran on one GPU only; its cases have the ids of the other GPU's suites' cases,
    and the rule takes each GPU's runs of a case from any of its sets: the page compares them, and adds
    the headline's costs at the prices given."""
    save(h100_set(suite="headline"), tmp_path / "results" / "h100-sxm-80gb" / "headline-1.json")
    save(h200_set(suite="quickstart"), tmp_path / "results" / "h200-sxm-141gb" / "quickstart-1.json")
    prices = {"h100-sxm-80gb": Price(2.0, provider="mine"), "h200-sxm-141gb": Price(3.0)}
    md, *_ = publish(tmp_path / "results", after=None, prices=prices)
    text = md.read_text()
    assert "## headline: H100 vs H200 — Result sets" in text and "### headline: H100 vs H200" in text
    assert "Cost at the given hourly prices" in text and "$ per 1M output tokens" in text
    assert "H100 SXM5 80GB: $2.00/h (mine)" in text and "H200 SXM 141GB: $3.00/h" in text
    listed = first_list_prices()["h100-sxm-80gb"]  # by default: the list prices shipped with llmbench
    md, *_ = publish(tmp_path / "results", after=None)
    assert f"H100 SXM5 80GB: ${listed.usd_per_hour:.2f}/h ({listed.origin()})" in md.read_text()
    one = text[text.index("## Measured on one machine only"):text.index("## Inputs")]  # the suite only the H200 ran
    assert "| quickstart | h200-sxm-141gb |" in one and "| headline |" not in one


def test_spread_runs_are_pooled_into_the_published_side(tmp_path: Path) -> None:
    """Runs kept under results/spread/<slug>/ are runs of their GPU like any other: the rule pools them
    with the GPU's other runs of a case (here all recorded one code path), so its cases carry the spread
    between runs (the noise floor) and intervals that include it; the GPU's spread page lists them."""
    first = h100_set()
    for c in first.cases:
        c.code_path = {"mode": "eager"}
    save(first, tmp_path / "h100-sxm-80gb" / "quickstart-1.json")
    save(h200_set(), tmp_path / "h200-sxm-141gb" / "quickstart-1.json")
    for i, scale in enumerate((0.98, 1.02)):
        run = h100_set(created_at=f"2026-11-24T0{i}:00:00Z")
        for c in run.cases:
            c.code_path = {"mode": "eager"}
            for m in c.metrics.values():
                m.value *= scale
                m.samples = [v * scale for v in m.samples] if m.samples else m.samples
        save(run, tmp_path / "spread" / "h100-sxm-80gb" / f"quickstart-{i}.json")
    md, html, *rest = publish(tmp_path, after=None)
    text = md.read_text()
    assert "Between-run spread" in text and "(3 runs)" in text
    assert "noise floor</th>" in html.read_text()
    spread = tmp_path / "spread" / "h100-sxm-80gb.md"
    assert spread in rest and "| 3 |" in spread.read_text()  # the GPU's spread page: three runs of its cases


def _with_engine(c: CaseResult, engine: str) -> CaseResult:
    params = {**c.params, "engine": engine}
    return c.model_copy(update={"params": params, "id": case_id(c.scenario, params)})


def test_a_suite_on_another_engine_is_published_beside_the_transformers_engine(tmp_path: Path) -> None:
    """vLLM's suite ran on the H200 only: the page sets each of its cases beside the transformers
    engine's case of the same params from that GPU's other set, and lists the cases with no twin."""
    from test_compare_support import H200_ENV, generate_case, result_set

    hf = [_with_engine(generate_case("bf16", b, tps, 20.0, samples=False), "hf") for b, tps in ((1, 100.0), (8, 700.0))]
    vllm = [
        _with_engine(generate_case("bf16", b, tps, 15.0, samples=False), "vllm") for b, tps in ((1, 120.0), (8, 1400.0))
    ]
    vllm.append(_with_engine(generate_case("fp8", 1, 160.0, 12.0, samples=False), "vllm"))
    save(result_set(H200_ENV, hf, suite="inference"), tmp_path / "h200-sxm-141gb" / "inference-1.json")
    save(result_set(H200_ENV, vllm, suite="vllm"), tmp_path / "h200-sxm-141gb" / "vllm-1.json")
    md, html, *_ = publish(tmp_path, after=None)
    text = md.read_text()
    side = text[text.index("engines side by side — h200-sxm-141gb: each case against engine=hf"):]
    rows = [line for line in side.splitlines() if "| decode_tokens_per_s |" in line]
    assert len(rows) == 2 and "| 700.0 | 1,400 | +100.0% | better |" in rows[1]
    missing = side[side.index("cases with no engine=hf counterpart"):]
    assert "precision=fp8" in missing and "precision=bf16" not in missing.split("\n\n")[1]
    assert "engines side by side" in html.read_text()


@pytest.mark.slow
def test_a_transformers_only_suite_gets_no_engine_section(tmp_path: Path) -> None:
    save(h200_set(suite="only-h200"), tmp_path / "h200-sxm-141gb" / "only-h200-1.json")
    md, *_ = publish(tmp_path, after=None)
    assert "engines side by side" not in md.read_text()
