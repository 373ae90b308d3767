"""`compare --base precision=bf16`: what fp8 buys on one GPU, from every run of each case and its bf16
twin (the one rule), through the estimator GPU comparisons use: a summary line first, then each case
with its interval, accuracy beside speed where a case measured it."""

from __future__ import annotations

from pathlib import Path

from llmbench.analysis.baseratio import base_answer
from llmbench.analysis.runs import load_sets
from llmbench.api import compare
from llmbench.report.base_view import base_answer_tables
from llmbench.report.terminal import to_terminal_text
from llmbench.results import MetricResult, save
from tests.test_compare_support import H100_ENV, gemm_case, generate_case, result_set


def _runs(tmp_path: Path) -> list[Path]:
    paths = []
    for k, (bf16, fp8) in enumerate([(700.0, 1300.0), (705.0, 1290.0), (698.0, 1310.0)]):
        cases = [gemm_case("bf16", bf16, seed=k), gemm_case("fp8", fp8, seed=10 + k)]
        cases[1].metrics["rel_error_vs_fp32"] = MetricResult.single("rel_error_vs_fp32", 0.04)
        cases[0].metrics["rel_error_vs_fp32"] = MetricResult.single("rel_error_vs_fp32", 0.002)
        for c in cases:  # one recorded code path: the three runs of a case pool
            c.code_path = {"engine": "torch", "mode": "eager"}
        rs = result_set({**H100_ENV, "gpu": {**H100_ENV["gpu"], "id_hash": f"m{k}"}}, cases,
                        suite="ceilings", created_at=f"2026-11-2{k}T10:00:00Z")
        save(rs, tmp_path / f"ceilings-2026112{k}T100000Z.json")
        paths.append(tmp_path / f"ceilings-2026112{k}T100000Z.json")
    return paths


def test_what_fp8_buys_is_one_ratio_over_every_run_with_its_interval(tmp_path: Path) -> None:
    paths = _runs(tmp_path)
    (side,) = load_sets(paths, by_gpu=True)
    ans = base_answer(side, "precision", "bf16", None)
    assert list(ans.comparisons) == ["fp8"]
    speed = ans.speed("fp8")
    (got,) = speed.values()
    assert 1.7 < got.value < 2.0 and got.ci is not None and got.ci[0] < got.value < got.ci[1]
    row = next(r for r in ans.comparisons["fp8"].rows if r.metric == "tflops")
    assert row.runs == [3, 3]  # every run of each case, not one set's
    text = to_terminal_text(base_answer_tables(ans), width=80)
    lines = text.splitlines()
    assert lines[1].startswith("precision=fp8 over precision=bf16: ") and "x [" in lines[1]
    assert "rel_error_vs_fp32 0.002 vs 0.04" in text
    assert all(len(line) <= 80 for line in lines)


def test_compare_base_answers_per_gpu_without_comparing_the_sets(tmp_path: Path) -> None:
    result = compare(_runs(tmp_path), base="precision=bf16")
    assert result.groups == [] and result.base_answers is not None and len(result.base_answers) == 1
    data = result.to_dict()
    assert data["base_answers"][0]["values"]["fp8"]["speed"]["ci95"] is not None


def test_base_over_a_suites_files_answers_for_its_cases_not_the_headline_beside_them(tmp_path: Path) -> None:
    paths = _runs(tmp_path)  # ceilings sets: a gemm pair
    head = result_set(H100_ENV, [generate_case("bf16", 1, 200.0, 60.0, seed=30),
                                 generate_case("fp8", 1, 280.0, 80.0, seed=40)],
                      suite="headline", created_at="2026-11-25T10:00:00Z")
    save(head, tmp_path / "headline-20261125T100000Z.json")
    (asked,) = compare(paths, base="precision=bf16").base_answers or []
    assert {cid.split("/")[0] for cid in asked.speed("fp8")} == {"gemm"}
    (declared,) = compare([tmp_path], base="precision=bf16").base_answers or []
    assert {cid.split("/")[0] for cid in declared.speed("fp8")} == {"generate"}


def test_a_cases_speed_is_the_summary_lines_with_one_case_host_bound_ttft_apart(tmp_path: Path) -> None:
    paths = []
    for k, (bf16, fp8) in enumerate([(200.0, 300.0), (201.0, 299.0), (199.0, 301.0)]):
        # a short prompt's TTFT measures the host: fp8 slower there, faster at decode
        cases = [generate_case("bf16", 1, bf16, 20.0, seed=k), generate_case("fp8", 1, fp8, 60.0, seed=10 + k)]
        rs = result_set({**H100_ENV, "gpu": {**H100_ENV["gpu"], "id_hash": f"m{k}"}}, cases,
                        suite="inference", created_at=f"2026-11-2{k}T10:00:00Z")
        save(rs, tmp_path / f"inference-2026112{k}T100000Z.json")
        paths.append(tmp_path / f"inference-2026112{k}T100000Z.json")
    (ans,) = compare(paths, base="precision=bf16").base_answers or []
    (case_ratio,) = ans.speed("fp8").values()
    overall = ans.overall("fp8")
    assert overall is not None and case_ratio.value > 1.3
    assert abs(case_ratio.value - overall.value) < 1e-9
