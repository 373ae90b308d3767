"""GPU pairs (analysis/pairs.py, parts.py, `llmbench versus`): the answer by one rule (measured > a controlled
published pair > a validated projection, else not known), graded evidence, the projection by parts with
bands per class, like-for-like prices, and the reference data shipped in the package. Synthetic sets are
built here, never committed as if measured; the committed tree is read to show its pages hold none of these defects."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import typer
from test_compare_support import H100_ENV, H200_ENV, case, metric, result_set
from typer.testing import CliRunner

from llmbench.analysis import pairs
from llmbench.analysis.pairs import PairAnswer, Row, build_pair, pair_prices
from llmbench.analysis.prices import Price
from llmbench.bundle import write_bundle
from llmbench.caseinfo import PublishedInfo, info_problems
from llmbench.commands import compare, versus
from llmbench.errors import UserError
from llmbench.hardware.specs import lookup
from llmbench.ids import case_id
from llmbench.publishing.publish import publish
from llmbench.references import DATA, GRADES, PUBLISHED, Claim, claims, informs, published_sets, workloads
from llmbench.report.pair_view import answer_table, pair_markdown
from llmbench.results import CaseResult, MetricResult, ResultSet, Source, load, save

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
H100, H200, A100 = "h100-sxm-80gb", "h200-sxm-141gb", "a100-sxm-80gb"
A100_ENV = {"gpu": {"name": "NVIDIA A100-SXM4-80GB", "slug": A100, "count": 1, "compute_capability": "8.0"}}
runner = CliRunner()


def _w(key: str) -> pairs.Workload:
    return next(w for w in workloads() if w.key == key)


def _decode(tps: float, seed: int, bound_ms: float, busy_ms: float, precision: str = "bf16") -> CaseResult:
    """The decode-b1 workload's case: tpot from the rate, its step split as generate records it."""
    w = _w("decode-b1")
    tpot = 1000.0 / tps
    params = {**w.params, **(w.fp8 or {})} if precision == "fp8" else {**w.params, "precision": precision}
    c = case("generate", params, {
        "decode_tokens_per_s": metric("decode_tokens_per_s", tps, seed=seed),
        "tpot_ms": metric("tpot_ms", tpot, seed=seed + 1)})
    return c.model_copy(update={"info": {"decode_step_bound_ms": bound_ms, "decode_bound_by": "memory",
                                         "gpu_busy_ms_per_step": busy_ms}})


def _matmul(tflops: float, seed: int) -> CaseResult:
    return case("gemm", _w("matmul").params, {"tflops": metric("tflops", tflops, seed=seed)})


def _tree(tmp: Path) -> Path:
    """An H100 and an H200 set: decode at batch 1 (bandwidth-bound: its roof is 80% of the step) and the
    bf16 matmul (compute-bound)."""
    save(result_set(H100_ENV, [_decode(160.0, 1, 5.0, 6.2), _decode(150.0, 5, 2.6, 5.3, "fp8"), _matmul(700, 2)],
                    "headline"), tmp / H100 / "headline-1.json")
    save(result_set(H200_ENV, [_decode(200.0, 3, 3.5, 4.9), _matmul(705, 4)], "headline"),
         tmp / H200 / "headline-1.json")
    return tmp


def _row(a: PairAnswer, key: str, fp8: bool = False) -> Row:
    return next(r for r in a.rows if r.workload.key == key and (r.sides[0] == "fp8") == fp8)


def _a100(tps: float = 100.0) -> ResultSet:
    return result_set(A100_ENV, [_decode(tps, 7, 7.8, 9.6)], "headline")


# -- the rule: measured > controlled published pair > validated projection, else not known -------------

def test_measured_runs_are_the_answer_and_the_projection_stays_beside_them(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    before = _row(build_pair(H100, A100, tree), "decode-b1")
    assert before.chosen is not None and before.chosen.kind == "projection" and before.chosen.grade == "validated"
    after = _row(build_pair(H100, A100, tree, [("my-a100", _a100())]), "decode-b1")
    assert after.chosen is not None and after.chosen.kind == "measured"
    assert after.chosen.ratio == pytest.approx(1.6, rel=0.02)
    assert any(e.kind == "projection" for e in after.evidence)  # still shown, so the projection is checked
    fp8 = _row(build_pair(H100, A100, tree, [("my-a100", _a100())]), "decode-b1", fp8=True)
    assert fp8.sides == ("fp8", "bf16") and fp8.chosen is not None and fp8.chosen.ratio == pytest.approx(1.5, rel=0.02)


def _published(slug: str, tps: float, grade: str, quality: str = "close",
               key: str = "decode-b1") -> tuple[str, ResultSet]:
    c = case("generate", _w(key).params, {"decode_tokens_per_s": MetricResult.single("decode_tokens_per_s", tps)})
    c.info = {"match": {"workload": key, "quality": quality, "grade": grade}}
    rs = result_set({"gpu": {"slug": slug, "name": slug}}, [c], f"src-{grade}",
                    source=Source(kind="published", citation="a table"))
    return f"{slug}/src-{grade}.json", rs


def test_a_controlled_published_pair_beats_the_projection_and_an_uncontrolled_one_never_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path)
    monkeypatch.setattr(pairs, "published_sets", lambda: [_published(H100, 120.0, "uncontrolled"),
                                                          _published(A100, 100.0, "uncontrolled")])
    row = _row(build_pair(H100, A100, tree), "decode-b1")
    pub = next(e for e in row.evidence if e.kind == "published pair")
    assert pub.grade == "uncontrolled" and not pub.picks and row.chosen is not None and row.chosen.kind == "projection"
    assert row.disagree and row.span is not None and row.span[0] == pytest.approx(1.2)  # 1.2x against ~1.6x: said
    monkeypatch.setattr(pairs, "published_sets", lambda: [_published(H100, 120.0, "controlled"),
                                                          _published(A100, 100.0, "controlled")])
    a = build_pair(H100, A100, tree)
    row = _row(a, "decode-b1")
    assert row.chosen is not None and row.chosen.kind == "published pair" and row.chosen.ratio == pytest.approx(1.2)
    checked = [c for c in a.bands["memory-bound"].checks if c.projection.scales.dst == A100]
    assert len(checked) == 1 and checked[0].measured == pytest.approx(160.0 / 1.2, rel=0.02)  # it checks the projection
    monkeypatch.setattr(pairs, "published_sets", lambda: [_published(H100, 120.0, "controlled", "own workload"),
                                                          _published(A100, 100.0, "controlled", "own workload")])
    row = _row(build_pair(H100, A100, tree), "decode-b1")  # the source's own workload: evidence, not the answer
    assert row.chosen is not None and row.chosen.kind == "projection"


def _claim(kind: str, low: float, high: float, quality: str | None, median: float | None = None) -> Claim:
    return Claim("c", "decode-b1", kind, low, high, H100, A100, True, (H100, A100), "controlled", "one table", "q", "",
                 "", "a source", quality=quality, median=median)


def test_a_controlled_source_of_another_case_is_graded_as_it_is_shown_and_never_the_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The grade is the source's; whether it may answer is the match's: another engine or model is evidence."""
    tree = _tree(tmp_path)
    monkeypatch.setattr(pairs, "published_sets", lambda: [_published(H100, 180.0, "controlled", "loose"),
                                                          _published(A100, 100.0, "controlled", "loose")])
    monkeypatch.setattr(pairs, "claims", lambda: (_claim("range", 1.7, 1.95, "loose", median=1.75),))
    a = build_pair(H100, A100, tree)
    row = _row(a, "decode-b1")
    pub, claim = (next(e for e in row.evidence if e.kind == k) for k in ("published pair", "claim"))
    assert pub.grade == claim.grade == "controlled" and not pub.picks and not claim.picks
    assert row.chosen is not None and row.chosen.kind == "projection"
    assert claim.ratio == pytest.approx(1.75) and row.controlled == pytest.approx((1.7, 1.95))
    shown = next(r for r in answer_table(a).rows if r[0] == row.title)
    assert "controlled published: 1.70-1.95x" in shown[3]
    monkeypatch.setattr(pairs, "claims", lambda: (_claim("range", 1.7, 1.95, "close"),))
    row = _row(build_pair(H100, A100, tree), "decode-b1")  # a controlled claim of this case answers
    assert row.chosen is not None and row.chosen.kind == "claim"


def test_a_figure_of_a_workload_informs_those_it_prefixes_and_answers_only_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pairs, "published_sets", lambda: [_published(H100, 4000.0, "controlled", key="decode-b32"),
                                                          _published(A100, 2000.0, "controlled", key="decode-b32")])
    a = build_pair(H100, A100, _tree(tmp_path))
    own, vllm = _row(a, "decode-b32"), _row(a, "decode-b32-vllm")
    assert own.chosen is not None and own.chosen.kind == "published pair" and own.chosen.ratio == pytest.approx(2.0)
    pub = next(e for e in vllm.evidence if e.kind == "published pair")
    assert pub.grade == "controlled" and not pub.picks and vllm.chosen is None and vllm.controlled == (2.0, 2.0)


def test_an_up_to_claim_is_a_maximum_and_disagrees_with_nothing_below_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path)
    monkeypatch.setattr(pairs, "published_sets", lambda: [])
    monkeypatch.setattr(pairs, "claims", lambda: (_claim("up to", 4.6, 4.6, None),))
    row = _row(build_pair(H100, A100, tree), "decode-b1")
    assert row.span is not None and row.span[1] == pytest.approx(4.6) and not row.disagree
    assert row.chosen is not None and row.chosen.kind == "projection" and row.controlled is None  # a maximum
    monkeypatch.setattr(pairs, "claims", lambda: (_claim("range", 4.4, 4.6, None),))
    assert _row(build_pair(H100, A100, tree), "decode-b1").disagree  # a range above the projection's does


def test_with_no_source_that_may_answer_the_row_is_not_known_with_the_evidence_range(tmp_path: Path) -> None:
    a = build_pair(H100, A100, _tree(tmp_path))
    mm = _row(a, "matmul")  # compute-bound: H100 and H200 share the peak, so nothing validates it
    assert mm.chosen is None and mm.projection is not None and mm.span is not None
    assert "not known — measure it" in pair_markdown(a)
    assert a.bands["compute-bound"].seen > 0 and not a.bands["compute-bound"].checks
    assert a.bands["memory-bound"].checks  # decode at batch 1 on H100 and H200


# -- the projection by parts -----------------------------------------------------------------------

def test_parts_scale_by_their_own_ratio_and_host_time_stays(tmp_path: Path) -> None:
    a = build_pair(H100, A100, _tree(tmp_path))
    p = _row(a, "decode-b1").projection
    assert p is not None and p.split.shares == pytest.approx({"memory": 0.8, "gpu": 0.192, "host": 0.008},
                                                             abs=0.01)
    bw = lookup(H100).bandwidth_tb_s / lookup(A100).bandwidth_tb_s  # type: ignore[union-attr]
    assert p.point == pytest.approx(0.992 * bw + 0.008, rel=0.01)  # GPU time at the bandwidth ratio, host at 1


@pytest.fixture(scope="module")
def committed(committed_results: Path) -> PairAnswer:
    return build_pair(H100, A100, committed_results)


def test_batch_32_decode_is_gpu_time_never_an_a100_faster(committed: PairAnswer) -> None:
    """Issue 39: the old model kept 48% of the batch-32 step fixed as if host time (1.33x, below the
    bandwidth ratio) and its band allowed 0.69x."""
    p = _row(committed, "decode-b32").projection
    bw = lookup(H100).bandwidth_tb_s / lookup(A100).bandwidth_tb_s  # type: ignore[union-attr]
    assert p is not None and p.split.shares["host"] < 0.05 and p.point is not None and p.point >= bw * 0.99
    assert p.low >= 1.0 and _row(committed, "decode-b32").chosen is None  # mixed: not validated by H100/H200


def test_ttft_never_above_the_compute_ratio_and_training_never_from_a_spec_ratio(committed: PairAnswer) -> None:
    compute = 989.5 / 312
    ttft = _row(committed, "ttft-2048")
    assert ttft.projection is not None and ttft.projection.high <= compute * 1.001 and ttft.chosen is None
    for key in ("qlora-8b", "qlora-70b", "trainer-bf16", "trainer-fp32"):
        row = _row(committed, key)
        assert row.chosen is None and row.verdict is not None and row.verdict.cheaper == "not known", key
        assert row.projection is not None and row.projection.point is None, key  # no point from a spec ratio


def test_the_uncontrolled_torchao_pair_is_evidence_and_the_disagreement_is_said(committed: PairAnswer) -> None:
    """Issue 39: 1.33x came from torchao rows added in different PRs for different models."""
    row = _row(committed, "decode-b1")
    torchao = next(e for e in row.evidence if e.kind == "published pair" and e.source == "torchao-decode-2024")
    assert torchao.grade == "uncontrolled" and row.chosen is not torchao and not torchao.picks
    assert row.disagree and row.span is not None and row.span[0] <= torchao.ratio <= row.span[1]  # type: ignore[operator]


def test_controlled_published_pairs_of_another_engine_or_model_are_evidence_within_the_bounds(
        committed: PairAnswer) -> None:
    """TensorRT-LLM's perf-overview pairs inform batched decode, LLM Foundry's training: graded controlled, shown,
    never the answer for llmbench's own case; and no 16-bit pair is above the compute ratio, no fp8 one above the
    H100's fp8 peak over the A100's bf16."""
    for key in ("decode-b32", "decode-b32-vllm", "trainer-bf16"):
        row = _row(committed, key)
        ctl = [e for e in row.evidence if e.grade == "controlled" and e.same_pair and e.kind == "published pair"]
        assert ctl and row.chosen is None and row.controlled is not None and not any(e.picks for e in ctl), key
    serving = _row(committed, "serving-max-load")
    assert serving.chosen is not None and serving.chosen.source == "trtllm-v0.14-llama3.1-8b-throughput"
    assert serving.span == (1.49, 2.52)  # the pooled claim over the releases' 116 pairs widens the range
    h100, a100 = lookup(H100), lookup(A100)
    assert h100 is not None and a100 is not None
    for r in committed.rows:
        top = (h100.peak("fp8") if r.sides[0] == "fp8" else h100.peak("bf16")) / a100.peak("bf16")  # type: ignore[operator]
        for e in (e for e in r.evidence if e.kind in ("published pair", "claim") and e.same_pair):
            assert e.low > 1.0 and e.high <= top, (r.title, e.source)


def test_the_seed_pcie_ratios_are_shown_and_never_used_for_the_sxm_pair(committed: PairAnswer) -> None:
    seeds = [(r, e) for r in committed.rows for e in r.evidence if e.source.startswith("seed-")]
    assert seeds and all(not e.same_pair and not e.picks and "pcie" in e.gpus for _, e in seeds)
    for r, _ in seeds:
        assert pairs._span([e for e in r.evidence if not e.source.startswith("seed-")]) == (r.span, r.disagree,
                                                                                                r.controlled)


def test_the_torchao_pair_cites_both_pull_requests_and_no_measured_bandwidth() -> None:
    sets = [rs for _, rs in published_sets() if rs.suite == "torchao-decode-2024"]
    assert len(sets) == 2
    for rs in sets:
        assert all(x in (rs.source.citation or "") for x in ("PR #804", "317392d06", "PR #1017", "92dd5f557"))
        assert "not a measured bandwidth" in (rs.source.note or "") and "bandwidth" not in rs.env["gpu"]["name"]


def test_the_eager_fp8_prefill_row_is_dropped_with_why(committed: PairAnswer) -> None:
    dropped = dict(committed.omitted)
    assert any("TTFT" in t and "mode compiled or engine vllm" in why for t, why in dropped.items())
    assert not any(r.workload.key == "ttft-2048" and r.sides[0] == "fp8" for r in committed.rows)


def test_the_answers_docs_a100_quotes_are_the_committed_ones(committed: PairAnswer) -> None:
    """docs/a100.md's closing note quotes each answer: new runs must update it."""
    doc = (ROOT / "docs" / "a100.md").read_text(encoding="utf-8")
    note = doc[doc.index("## Closing note"):]
    quoted = {cells[1]: cells[2] for line in note.splitlines()
              if len(cells := [c.strip() for c in line.split("|")]) > 3 and cells[1] not in ("workload", "---")}
    answers = {row[0]: row[1] for row in answer_table(committed).rows}
    assert len(quoted) >= 8 and {t: answers.get(t) for t in quoted} == quoted


def test_prices_compare_like_for_like_or_as_given() -> None:
    got, why = pair_prices(H100, A100, None)
    assert got is not None and got[0].offer == got[1].offer and got[0].checked == got[1].checked
    assert "like for like" in why and got[0].offer != "on-demand"  # the data's A100 is serverless only
    assert pair_prices(H100, H200, None)[0] is None  # on-demand, but checked on other dates
    mine, why = pair_prices(H100, A100, {H100: Price(3.0), A100: Price(2.0)})
    assert mine == (Price(3.0), Price(2.0)) and "your prices" in why
    with pytest.raises(UserError, match="give both GPUs' prices"):
        pair_prices(H100, A100, {H100: Price(3.0)})


# -- versus --------------------------------------------------------------------------------------------

def _app() -> typer.Typer:
    app = typer.Typer()
    versus.register(app)
    compare.register(app)  # a second command, so typer keeps the command name
    return app


def test_versus_from_a_pip_install_answers_from_the_packaged_references(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no results/ here: nothing of a checkout
    got = runner.invoke(_app(), ["versus", "-f", "json"])
    assert got.exit_code == 0, got.output
    data = json.loads(got.stdout)
    serving = next(r for r in data["rows"] if r["workload"] == "serving-max-load" and r["sides"][0] == "fp16")
    assert serving["chosen"]["kind"] == "published pair" and serving["chosen"]["grade"] == "controlled"
    assert not any(r["workload"] == "ttft-2048" and r["sides"][0] == "fp8" for r in data["rows"])  # no runs: still
    # the measured runs that ship with llmbench are read: the H100's runs project the A100 (validated)
    decode = next(r for r in data["rows"] if r["workload"] == "decode-b1" and r["sides"][0] == "bf16")
    assert decode["chosen"]["kind"] == "projection" and decode["chosen"]["grade"] == "validated"
    pair = runner.invoke(_app(), ["versus", "--gpus", "h200-sxm-141gb,h100-sxm-80gb", "-f", "json"])
    h200 = next(r for r in json.loads(pair.stdout)["rows"] if r["workload"] == "decode-b1")
    assert h200["chosen"]["kind"] == "measured"
    (tmp_path / "results" / "cpu-x86_64").mkdir(parents=True)  # a user's own CPU run hides nothing shipped
    save(result_set({"gpu": {"slug": "cpu-x86_64"}}, [case("gemm", {"precision": "bf16", "shape": [64, 64, 64]},
                                                            {"tflops": metric("tflops", 0.1)})]),
         tmp_path / "results" / "cpu-x86_64" / "quickstart-1.json")
    again = runner.invoke(_app(), ["versus", "-f", "json"])
    assert json.loads(again.stdout)["rows"] == data["rows"]


def test_versus_puts_your_sets_in_and_takes_any_pair(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "results")
    bundle = write_bundle(tmp_path / "a100-sxm-80gb-20261125T000000Z.tar.gz", {"headline-1.json": _a100()})
    got = runner.invoke(_app(), ["versus", str(bundle), "--results", str(tree), "--price", f"{H100}=3",
                                 "--price", f"{A100}=2", "-f", "json"])  # the pair: H100 against your GPU
    assert got.exit_code == 0, got.output
    data = json.loads(got.stdout)
    row = next(r for r in data["rows"] if r["workload"] == "decode-b1" and r["sides"] == ["bf16", "bf16"])
    assert data["pair"] == [H100, A100] and row["chosen"]["kind"] == "measured"
    assert row["verdict"]["break_even"][0] == pytest.approx(2 * row["chosen"]["low"])  # the H100's rent, as compare
    other = runner.invoke(_app(), ["versus", "--results", str(tree), "--gpus", f"{H200},{H100}", "-f", "json"])
    assert json.loads(other.stdout)["rows"][0]["chosen"]["kind"] == "measured"
    bad = runner.invoke(_app(), ["versus", "--gpus", "h100-sxm-80gb,b900", "--results", str(tree)])
    assert isinstance(bad.exception, UserError) and "unknown GPU 'b900'" in str(bad.exception)
    wrong = runner.invoke(_app(), ["versus", str(bundle), "--gpus", f"{H100},{H200}", "--results", str(tree)])
    assert isinstance(wrong.exception, UserError) and "not of h100-sxm-80gb or h200-sxm-141gb" in str(wrong.exception)


# -- the reference data ----------------------------------------------------------------------------

def test_reference_data_is_graded_joins_llmbench_cases_and_ships_with_the_package(committed_results: Path) -> None:
    sets = published_sets()
    assert sets and all(rs.source.kind == "published" and rs.source.citation for _, rs in sets)
    for name, rs in sets:
        for c in rs.cases:
            assert c.id == case_id(c.scenario, c.params), name
            match = PublishedInfo.of(c.info).match
            assert match is None or (match.grade in GRADES and match.grade_note), (name, c.id)
    assert all(c.grade in GRADES and c.grade_note for c in claims())
    assert next(e for _, rs in sets if rs.suite == "torchao-decode-2024" for c in rs.cases
                if (e := PublishedInfo.of(c.info).match)).grade == "uncontrolled"
    measured = {c["id"] for p in (committed_results / H100).glob("*.json") for c in json.loads(p.read_text())["cases"]}
    assert all(w.ids[0] in measured for w in workloads() if w.scenario), "a workload's case is not in results/"
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["llmbench"]
    shipped = {p for g in globs for p in (ROOT / "llmbench").glob(g)}
    assert {p for p in DATA.rglob("*") if p.is_file()} <= shipped
    assert not (committed_results / "published").exists()  # one home: the package


def test_every_published_figure_and_claim_reads_through_the_models_and_names_a_workload() -> None:
    keys, qualities = {w.key for w in workloads()}, {"close", "loose", "own workload"}
    files = sorted(PUBLISHED.glob("*/*.json"))
    assert len(files) == len(published_sets()) > 20
    for path in files:
        for c in load(path).cases:
            match = PublishedInfo.of(c.info).match
            assert info_problems(c.info) == [], (path.name, c.id)
            assert match is None or match.workload is None or (match.workload in keys and match.quality in qualities), (
                path.name, c.id)
    for cl in claims():
        assert cl.workload is None or any(informs(cl.workload, k) for k in keys), cl.key
        assert cl.quality in (None, *qualities) and (cl.median is None or cl.low <= cl.median <= cl.high), cl.key


def test_publish_writes_the_pair_page_and_the_measured_page_opens_with_measurements(tmp_path: Path) -> None:
    md, *_ = publish(_tree(tmp_path))
    page = (tmp_path / "h100-vs-a100.md").read_text()
    assert page.startswith("# H100 SXM5 80GB vs A100 SXM4 80GB\n") and "What was measured" in page
    assert md.read_text().startswith("# H100 SXM vs H200 SXM (measured)") and "(h100-vs-a100.md)" in md.read_text()
