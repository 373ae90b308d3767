"""H100 vs A100: published reference figures and how they join, the validation of the projection
against them, the answer (measured > published > projected) and `llmbench versus` with a synthetic
A100 set (built here, never committed as if measured)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from test_compare_support import H100_ENV, H200_ENV, case, metric, result_set
from typer.testing import CliRunner

from llmbench.analysis.a100 import Answer, AnswerRow, build_answer, decide, verdict
from llmbench.analysis.a100_check import a100_error
from llmbench.analysis.a100_data import (
    H100,
    H200,
    committed_index,
    published_claims,
    published_figures,
)
from llmbench.analysis.prices import Price
from llmbench.bundle import write_bundle
from llmbench.commands import compare, versus
from llmbench.errors import UserError
from llmbench.references.published_a100 import D2D_PARAMS, MATCH_QUALITIES, Match, decode_params
from llmbench.references.published_ratios import CLAIMS, load_ratios
from llmbench.references.workloads import WORKLOADS, claim_covers
from llmbench.report.a100_view import answer_table, page_markdown
from llmbench.report.publish import publish
from llmbench.report.tables import to_markdown
from llmbench.results import CaseResult, MetricResult, ResultSet, Source, save

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
runner = CliRunner()
A100_ENV = {"gpu": {"name": "NVIDIA A100-SXM4-80GB", "slug": "a100-sxm-80gb", "count": 1,
                    "compute_capability": "8.0", "memory_gib": 79.2}}
A100_SKIP = "fp8 needs compute capability >= 8.9 (this GPU is 8.0)"


def _decode(precision: str, tps: float, seed: int, efficiency: float = 0.8) -> CaseResult:
    return case("generate", decode_params(precision), {
        "decode_tokens_per_s": metric("decode_tokens_per_s", tps, seed=seed),
        "roofline_efficiency": MetricResult.single("roofline_efficiency", efficiency),
    })


def _d2d(tb_per_s: float, seed: int) -> CaseResult:
    return case("bandwidth", D2D_PARAMS, {"tb_per_s": metric("tb_per_s", tb_per_s, seed=seed)})


def _results(tmp: Path) -> Path:
    """A results/ folder with an H100 and an H200 headline set of decode (bf16, fp8) and the copy ceiling."""
    save(result_set(H100_ENV, [_decode("bf16", 150.0, 1), _decode("fp8", 180.0, 2), _d2d(3.0, 3)], "headline"),
         tmp / H100 / "headline-1.json")
    save(result_set(H200_ENV, [_decode("bf16", 200.0, 4), _d2d(4.2, 5)], "headline"), tmp / H200 / "headline-1.json")
    return tmp


def _a100_set() -> ResultSet:
    return result_set(A100_ENV, [
        _decode("bf16", 100.0, 7),
        case("generate", decode_params("fp8"), status="skipped", reason=A100_SKIP),
    ], "headline")


def _row(a: Answer, key: str, fp8: bool = False) -> AnswerRow:
    return next(r for r in a.rows if r.workload.key == key and r.fp8 == fp8)


def test_a_synthetic_a100_set_replaces_the_projected_figures(tmp_path: Path) -> None:
    res = _results(tmp_path)
    before = _row(build_answer(res), "decode-b1")
    assert before.chosen is not None and before.chosen.kind == "projected" and before.chosen.source == H100

    after = build_answer(res, [("my-a100-headline", _a100_set())])
    row = _row(after, "decode-b1")
    assert row.chosen is not None and row.chosen.kind == "measured"
    assert row.chosen.ratio == pytest.approx(1.5, rel=0.02) and row.chosen.interval is not None
    assert row.verdict is not None and row.verdict.ratio == row.chosen.ratio
    assert any(e.kind == "projected" for e in row.evidence)  # still shown beside the measurement
    fp8 = _row(after, "decode-b1", fp8=True)  # the H100's fp8 against the A100's bf16 (its fp8 was skipped)
    assert fp8.chosen is not None and fp8.chosen.kind == "measured"
    assert fp8.chosen.ratio == pytest.approx(1.8, rel=0.02)
    assert any(A100_SKIP in n for n in fp8.notes)
    bw = _row(after, "bandwidth")  # not in the A100 sets: the projection stands, and the row says why
    assert bw.chosen is not None and bw.chosen.kind == "projected" and any("no ok result" in n for n in bw.notes)
    text = to_markdown([answer_table(after)])
    assert "measured: my-a100-headline" in text and "projected from the H100" in text


def test_versus_puts_a_users_a100_in_the_answer(tmp_path: Path) -> None:
    app = typer.Typer()
    versus.register(app)
    compare.register(app)  # a second command, so typer keeps the command name
    res = _results(tmp_path / "results")
    bundle = write_bundle(tmp_path / "a100-sxm-80gb-20261125T000000Z.tar.gz",
                          {"headline-20261125T000000Z.json": _a100_set()})  # what `oneshot` on an A100 writes
    got = runner.invoke(app, ["versus", str(bundle), "--results", str(res), "--price", "h100-sxm-80gb=3",
                              "--price", "a100-sxm-80gb=2", "-f", "json"])
    assert got.exit_code == 0, got.output
    data = json.loads(got.stdout)
    row = next(r for r in data["rows"] if r["workload"] == "decode-b1" and r["compared"] == "same precision")
    assert row["chosen"]["kind"] == "measured" and data["measured_sets"] == ["a100-sxm-80gb-20261125T000000Z"]
    assert row["verdict"]["break_even_usd"] == pytest.approx(3 / row["chosen"]["ratio"])
    assert row["verdict"]["at_prices"] in ("yes", "no", "within the noise")

    h100_file = tmp_path / "h100.json"
    save(result_set(H100_ENV, [_decode("bf16", 150.0, 1)]), h100_file)
    bad = runner.invoke(app, ["versus", str(h100_file), "--results", str(res)])
    assert isinstance(bad.exception, UserError) and "is not an A100" in str(bad.exception)
    mine = tmp_path / "a100.json"
    save(_a100_set(), mine)
    pcie = tmp_path / "pcie.json"
    save(result_set({"gpu": {**A100_ENV["gpu"], "slug": "a100-pcie-80gb"}}, [_decode("bf16", 90.0, 8)]), pcie)
    mixed = runner.invoke(app, ["versus", str(mine), str(pcie), "--results", str(res)])
    assert isinstance(mixed.exception, UserError) and "2 kinds of A100" in str(mixed.exception)
    nowhere = runner.invoke(app, ["versus", "--results", str(tmp_path / "nothing")])
    assert isinstance(nowhere.exception, UserError) and "no committed H100 result sets" in str(nowhere.exception)


def test_the_validation_checks_projections_against_published_a100_figures(tmp_path: Path) -> None:
    """A published A100 figure of the H100's case: the H100 projected to that A100, error against it; and
    a published H100/A100 pair of one source: the projection's ratio against the source's."""
    res = _results(tmp_path)
    fig = case("generate", decode_params("bf16"), {"decode_tokens_per_s": MetricResult.single(
        "decode_tokens_per_s", 90.0)})
    fig.info = Match("decode-b1", "close", "| row |", {"model": "m"}).info()
    h100_fig = fig.model_copy(deep=True)
    h100_fig.metrics = {"decode_tokens_per_s": MetricResult.single("decode_tokens_per_s", 120.0)}
    for slug, c in (("a100-sxm-80gb", fig), (H100, h100_fig)):
        save(result_set({"gpu": {"slug": slug, "name": slug}}, [c], "src",
                        source=Source(kind="published", citation="a table")), tmp_path / "published" / slug / "s.json")
    a = build_answer(res)
    direct = next(c for c in a.checks if c.kind.endswith("(published figure)"))
    assert direct.error_pct == pytest.approx((direct.projected / 90.0 - 1) * 100)
    pair = next(c for c in a.checks if c.kind == "published pair")
    assert pair.reference == pytest.approx(120.0 / 90.0)
    assert pair.error_pct == pytest.approx(a100_error(120.0 / 90.0, pair.projected, "higher"))
    band = a.bands["decode"]
    assert direct in band.checks and pair in band.checks
    assert band.worst == pytest.approx(max(abs(c.error_pct) for c in band.checks) / 100)
    row = _row(a, "decode-b1")  # a close published pair of the same GPUs is preferred to the projection
    assert row.chosen is not None and row.chosen.kind == "published" and row.chosen.ratio == pytest.approx(120 / 90)
    assert "Projection error per workload family" in page_markdown(a)


def test_verdicts_at_two_times_the_rent_and_at_the_prices_given() -> None:
    assert decide(2.5, (2.1, 3.0), 2.0) == "yes" and decide(1.5, (1.2, 1.9), 2.0) == "no"
    assert decide(2.2, (1.8, 2.6), 2.0) == "within the noise" and decide(2.2, None, 2.0) == "yes (no interval)"
    from llmbench.analysis.a100 import Evidence

    e = Evidence("projected", "x", 1.6, (1.3, 1.9), "band", "p", "same", "roofline projection")
    v = verdict(e, Price(3.0), Price(2.0))
    assert v.worth_2x == "no" and v.price_ratio == pytest.approx(1.5) and v.at_prices == "within the noise"
    assert v.break_even_usd == pytest.approx(3.0 / 1.6) and v.break_even_interval == pytest.approx((3 / 1.9, 3 / 1.3))


def test_committed_published_references_join_committed_cases_and_name_real_workloads() -> None:
    h100, h200 = committed_index(RESULTS, H100), committed_index(RESULTS, H200)
    keys = {w.key for w in WORKLOADS}
    figs = published_figures(RESULTS)
    assert figs
    for f in figs:
        assert f.match.quality in MATCH_QUALITIES and f.match.workload in keys and f.match.quote
        assert set(f.match.conditions) >= {"model", "precision", "batch", "engine", "form_factor", "power_limit"}
        if f.match.quality != "own workload":  # it stands for an llmbench case: its id joins a committed one
            assert f.case.id in h100.cases or f.case.id in h200.cases, (f.source, f.case.id)
    assert load_ratios(RESULTS / "published") == list(CLAIMS)
    claims = published_claims(RESULTS)
    assert all(c.workload is None or any(claim_covers(c, w) for w in WORKLOADS) for c in claims)


def test_the_committed_answer_has_every_workload_and_a_band_per_family() -> None:
    a = build_answer(RESULTS)
    assert {r.workload.key for r in a.rows} == {w.key for w in WORKLOADS}
    assert all(r.chosen is not None for r in a.rows), [r.workload.key for r in a.rows if r.chosen is None]
    for fam in ("decode", "prefill", "qlora", "trainer", "matmul", "bandwidth"):
        assert a.bands[fam].worst is not None, fam
    kinds = {c.kind for c in a.checks}
    assert {"H100 -> H200 (measured)", "H100 -> A100 (published figure)", "published pair",
            "published claim"} <= kinds
    fp8_linear = _row(a, "fp8-linear", fp8=True)
    assert fp8_linear.chosen is not None and "bf16" in fp8_linear.chosen.precisions


def test_compare_joins_a_published_a100_set_with_a_committed_h100_set(tmp_path: Path) -> None:
    app = typer.Typer()
    compare.register(app)
    versus.register(app)
    a100 = RESULTS / "published" / "a100-sxm-80gb" / "torchao-decode-2024.json"
    h100 = next((RESULTS / H100).glob("inference-llama3-8b-*.json"))
    got = runner.invoke(app, ["compare", str(a100), str(h100), "--headline", "-f", "markdown"])
    assert got.exit_code == 0, got.output
    assert "How the published figures match the cases they join" in got.stdout and "[published]" in got.stdout
    data = json.loads(runner.invoke(app, ["compare", str(a100), str(h100), "--headline", "-f", "json"]).stdout)
    rows = [r for r in data["comparison"]["rows"] if r["metric"] == "decode_tokens_per_s"]
    assert len(rows) == 3 and all(r["ratios"][1]["value"] > 1 for r in rows)


def test_published_pages_show_the_h100_vs_a100_answer_after_what_was_measured(tmp_path: Path) -> None:
    res = _results(tmp_path)
    md, html, *_ = publish(res)
    text = md.read_text()
    assert text.startswith("# H100 SXM vs H200 SXM (measured)\n") and "\n# H100 vs A100\n" in text
    assert html.read_text().index('id="answer"') < html.read_text().index('id="h100-vs-a100"')
    page = (res / "h100-vs-a100.md").read_text()
    assert page.startswith("# H100 vs A100") and "Projected A100 figures of the committed headline cases" in page


def test_the_bands_docs_a100_cites_are_the_committed_ones() -> None:
    """docs/a100.md quotes each family's checks and median / worst error: re-measured sets must update it."""
    doc = (ROOT / "docs" / "a100.md").read_text(encoding="utf-8")
    bands = build_answer(RESULTS).bands
    rows = re.findall(r"^\| (\w[\w ]*?)(?: \(TTFT\))? \| (\d+) \([^)]*\) \| (\d+)% / (\d+)% \|", doc, re.M)
    assert {r[0] for r in rows} == {"bandwidth", "matmul", "decode", "prefill", "qlora", "trainer"}
    for family, n, med, worst in rows:
        b = bands[family]
        assert (int(n), int(med), int(worst)) == (len(b.checks), round(b.median * 100), round(b.worst * 100)), family
