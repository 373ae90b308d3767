"""At the SLO: tokens/s per GPU and $/Mtok from capacity cases, in `compare` and on the pages, from synthetic
result sets written with the public result-writing API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from test_compare_support import H100_ENV, H200_ENV, case, gemm_case, result_set
from typer.testing import CliRunner

from llmbench.analysis.at_slo import BASIS_HIGHEST, BASIS_NONE_MET, BASIS_REFINEMENTS, slo_answer
from llmbench.analysis.prices import Price
from llmbench.commands import compare, report
from llmbench.report.slo_view import NOT_KNOWN, slo_table
from llmbench.results import CaseResult, MetricResult, ResultSet, load, save
from llmbench.scenarios.serving_search import capacity_metric

H100, H200 = "h100-sxm-80gb", "h200-sxm-141gb"
INTERACTIVE, SERVER = "mlperf-llama3.1-8b-interactive", "mlperf-llama3.1-8b-server"
LIMITS = {INTERACTIVE: {"ttft_p99": 500.0, "tpot_p99": 30.0}, SERVER: {"ttft_p99": 2000.0, "tpot_p99": 100.0}}
runner = CliRunner()


def capacity_case(limits: str, estimates: list[float], boundary_tokens: list[float], *, precision: str = "bf16",
                  gpus: int = 1, highest: tuple[float, float] | None = None, bound: str | None = None) -> CaseResult:
    """A concurrency search as serving_search.run_search records it: the capacity metric over `estimates`,
    the metrics of the highest met point (`highest`: load, total output tok/s), the curve in info. Each
    refinement r's boundary point (load estimates[r]) delivers boundary_tokens[r] output tok/s in all."""
    points: list[dict[str, Any]] = [
        {"load": 4.0, "repeat": 0, "phase": "coarse", "met": True, "output_tokens_per_s": 500.0 * gpus},
        {"load": 64.0, "repeat": 0, "phase": "coarse", "met": False, "output_tokens_per_s": 9000.0 * gpus},
    ]
    for r, (at, tokens) in enumerate(zip(estimates, boundary_tokens, strict=True)):
        points += [{"load": at + 1, "repeat": r, "phase": "refine", "met": False, "output_tokens_per_s": tokens * 1.1},
                   {"load": at, "repeat": r, "phase": "refine", "met": True, "output_tokens_per_s": tokens}]
    last = len(estimates) - 1 - estimates[::-1].index(max(estimates))  # the search keeps the last of equal loads
    at, tokens = highest or (estimates[last], boundary_tokens[last])
    metrics = {
        "output_tokens_per_s": MetricResult.single("output_tokens_per_s", tokens),
        "output_tokens_per_s_per_gpu": MetricResult.single("output_tokens_per_s_per_gpu", tokens / gpus),
        "capacity_concurrency": capacity_metric("capacity_concurrency", estimates, bound),
    }
    params = {"model": "llama-3-8b", "precision": precision, "input_len": 1024, "output_len": 128,
              "num_requests": 256, "limits": limits, "search": "concurrency", "search_start": 4.0,
              "n_gpus": gpus, "url": "http://127.0.0.1:8000"}
    c = case("serving", params, metrics)
    c.info["capacity"] = {"axis": "concurrency", "slo": limits, "limits": LIMITS[limits], "estimates": estimates,
                          "bound": bound, "metrics_at": at, "points": points}
    return c


def _sets(tmp_path: Path, h100_cases: list[CaseResult], h200_cases: list[CaseResult]) -> tuple[Path, Path]:
    """An H100 and an H200 set, each with a shared gemm case (so that compare joins them) and the cases given."""
    a, b = tmp_path / "h100" / "slo-20300101T000000Z.json", tmp_path / "h200" / "slo-20300101T000000Z.json"
    for path, env, cases, tflops in ((a, H100_ENV, h100_cases, 700.0), (b, H200_ENV, h200_cases, 720.0)):
        path.parent.mkdir(parents=True)
        save(result_set(env, [gemm_case("bf16", tflops), *cases], suite="slo"), path)
    return a, b


def _read(*paths: Path) -> list[tuple[str, ResultSet]]:
    return [(str(p), load(p)) for p in paths]


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()
    compare.register(a)
    report.register(a)  # two commands: `compare` is a subcommand, as in llmbench
    return a


def test_tokens_per_gpu_at_the_capacity_with_its_interval_and_cost(tmp_path: Path) -> None:
    # H200: the interactive preset over 3 refinements ending at 19, 18, 19 with 1900, 1800, 2000 tok/s
    a, b = _sets(tmp_path, [], [capacity_case(INTERACTIVE, [19.0, 18.0, 19.0], [1900.0, 1800.0, 2000.0])])
    ans = slo_answer(_read(a, b), [H100, H200], {H200: Price(3.6)})
    assert ans is not None and ans.gpus == [H100, H200]
    (row,) = ans.rows
    assert (row.key.slo, row.key.precision, row.key.engine, row.key.axis) == (INTERACTIVE, "bf16", "url", "concurrency")
    assert dict(row.key.limits_ms) == LIMITS[INTERACTIVE]
    none, cell = row.cells
    assert none is None  # the H100 has no capacity case: not known
    assert cell is not None and cell.capacity == 19.0
    assert cell.capacity_interval is not None and (cell.capacity_interval.lo, cell.capacity_interval.hi) == (18.0, 19.0)
    assert cell.tokens_per_s_per_gpu == 1900.0 and cell.basis == BASIS_REFINEMENTS and cell.refinements == 3
    assert cell.interval is not None and (cell.interval.lo, cell.interval.hi) == (1800.0, 2000.0)
    assert cell.interval.level == cell.capacity_interval.level == pytest.approx(0.75)  # 3 refinements: [min, max]
    assert cell.highest_met == (19.0, 2000.0)  # the last refinement's 19 is the highest met point recorded
    # $/Mtok = price / (tok/s per GPU x 3600) x 1e6
    assert cell.usd_per_mtok == pytest.approx(3.6 / (1900.0 * 3600) * 1e6)
    assert cell.usd_interval == pytest.approx((3.6 / (2000.0 * 3600) * 1e6, 3.6 / (1800.0 * 3600) * 1e6))
    text = slo_table(ans)
    assert text.rows[0][4:7] == [NOT_KNOWN] * 3
    assert text.rows[0][7:] == ["concurrency 19 [18, 19] 75%", "1,900 [1,800, 2,000] 75%", "$0.526 [$0.5, $0.556] 75%"]
    assert "your price: given on the command line" in text.notes[0]


def test_servers_at_a_url_are_rows_of_their_own_by_who_their_model_card_says_serves(tmp_path: Path) -> None:
    # the same load on two servers at URLs, one saying it is vLLM's, one SGLang's: two rows, never one
    vllm, sglang = (capacity_case(INTERACTIVE, [19.0, 18.0, 19.0], [1900.0, 1800.0, 2000.0]),
                    capacity_case(INTERACTIVE, [20.0, 20.0, 20.0], [2080.0, 2080.0, 2080.0]))
    vllm.info["served_by"], sglang.info["served_by"] = "vllm", "sglang"
    sglang.params["url"], sglang.id = "http://127.0.0.1:8001", "serving/on-port-8001"  # a case of its own
    a, b = _sets(tmp_path, [], [vllm, sglang])
    ans = slo_answer(_read(a, b), [H100, H200], {})
    assert ans is not None
    assert {row.key.engine: row.cells[1].capacity for row in ans.rows if row.cells[1]} == {"url vllm": 19.0,
                                                                                          "url sglang": 20.0}


def test_a_capacity_whose_client_was_late_near_the_boundary_says_so(tmp_path: Path) -> None:
    late = capacity_case(INTERACTIVE, [19.0, 18.0, 19.0], [1900.0, 1800.0, 2000.0])
    missed = next(p for p in late.info["capacity"]["points"] if p["phase"] == "refine" and not p["met"])
    missed["client_flags"] = ["the client's event loop woke 256 ms late at the 99th percentile"]
    a, b = _sets(tmp_path, [], [late])
    ans = slo_answer(_read(a, b), [H100, H200], {})
    assert ans is not None
    cell = ans.rows[0].cells[1]
    assert cell is not None and cell.client_late is not None and "256 ms late" in cell.client_late
    assert cell.bound is None  # a flag of the client is no bound of the search
    assert slo_table(ans).rows[0][7].endswith("(client late)")
    assert slo_table(ans).rows[0][7].startswith("concurrency 19 [18, 19] 75%")


def test_figures_are_per_gpu_and_one_refinement_is_the_highest_met_point_without_interval(tmp_path: Path) -> None:
    a, b = _sets(tmp_path, [capacity_case(INTERACTIVE, [10.0], [1000.0])],
                 [capacity_case(INTERACTIVE, [40.0, 38.0, 40.0], [8000.0, 7600.0, 8400.0], gpus=2)])
    ans = slo_answer(_read(a, b), [H100, H200], {}, {H100: Price(2.0, provider="X"), H200: Price(4.0, provider="Y")})
    assert ans is not None and [r.key.gpus_per_case for r in ans.rows] == [1, 2]  # a server on 2 GPUs: a row of its own
    h100, none = ans.rows[0].cells
    assert h100 is not None and h100.basis == BASIS_HIGHEST and h100.interval is None and h100.usd_interval is None
    assert h100.tokens_per_s_per_gpu == 1000.0 and h100.price_from == "list price shipped with llmbench"
    assert h100.usd_per_mtok == pytest.approx(2.0 / (1000.0 * 3600) * 1e6)
    none2, h200 = ans.rows[1].cells
    assert none is None and none2 is None
    assert h200 is not None and h200.tokens_per_s_per_gpu == 4000.0  # 8000 tok/s over the server's 2 GPUs
    assert h200.interval is not None and (h200.interval.lo, h200.interval.hi) == (3800.0, 4200.0)
    assert h200.usd_per_mtok == pytest.approx(4.0 / (4000.0 * 3600) * 1e6)  # a GPU-hour's price, per GPU
    assert slo_table(ans).rows[0][5] == "1,000*"


def test_a_search_that_met_nothing_has_no_tokens_and_no_cost(tmp_path: Path) -> None:
    nothing = capacity_case(SERVER, [0.0], [0.0], bound="no load met the SLO: not even the first, 4")
    nothing.info["capacity"]["metrics_at"] = None
    a, b = _sets(tmp_path, [], [nothing])
    ans = slo_answer(_read(a, b), [H100, H200], {H200: Price(3.0)})
    assert ans is not None
    cell = ans.rows[0].cells[1]
    assert cell is not None and cell.tokens_per_s_per_gpu is None and cell.basis == BASIS_NONE_MET
    assert cell.usd_per_mtok is None and cell.bound
    assert slo_table(ans).rows[0][7:] == ["concurrency 0 (bound)", BASIS_NONE_MET, "—"]


def test_no_capacity_case_no_section(tmp_path: Path) -> None:
    a, b = _sets(tmp_path, [], [])
    assert slo_answer(_read(a, b), [H100, H200]) is None


def test_compare_prints_at_the_slo_and_its_json_keys(app: typer.Typer, tmp_path: Path) -> None:
    a, b = _sets(tmp_path, [capacity_case(INTERACTIVE, [10.0, 11.0, 10.0], [1000.0, 1050.0, 990.0])],
                 [capacity_case(INTERACTIVE, [19.0, 18.0, 19.0], [1900.0, 1800.0, 2000.0]),
                  capacity_case(SERVER, [76.0, 78.0, 76.0], [3200.0, 3000.0, 3300.0]),
                  capacity_case(INTERACTIVE, [30.0, 31.0, 30.0], [3000.0, 3100.0, 2900.0], precision="fp8")])
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["compare", str(a), str(b), "--price", f"{H100}=2", "--price", f"{H200}=3",
                              "-f", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert "comparison" in data  # the comparison as it was, the section beside it
    slo = data["at_slo"]
    assert slo["gpus"] == [H100, H200]
    got = {(r["slo"], r["precision"]): r for r in slo["rows"]}
    assert set(got) == {(INTERACTIVE, "bf16"), (INTERACTIVE, "fp8"), (SERVER, "bf16")}
    row = got[(INTERACTIVE, "bf16")]
    assert set(row) == {"slo", "limits_ms", "precision", "engine", "workload", "axis", "gpus_per_case", "gpus"}
    h100 = row["gpus"][H100]
    assert {"capacity", "capacity_interval", "output_tokens_per_s_per_gpu", "interval", "basis", "usd_per_gpu_hour",
            "price_from", "usd_per_mtok", "usd_per_mtok_interval", "highest_met_point", "file"} <= set(h100)
    assert h100["output_tokens_per_s_per_gpu"] == 1000.0 and h100["usd_per_mtok"] == pytest.approx(2e6 / 3.6e6)
    assert h100["interval"]["level"] == pytest.approx(0.75) and h100["price_from"].startswith("your price")
    assert row["gpus"][H200]["output_tokens_per_s_per_gpu"] == 1900.0
    assert got[(SERVER, "bf16")]["gpus"][H100] is None and got[(INTERACTIVE, "fp8")]["gpus"][H100] is None
    md = runner.invoke(app, ["compare", str(a), str(b), "-f", "markdown"])
    assert md.exit_code == 0, md.output
    assert "## At the SLO: output tokens/s per GPU and $ per 1M output tokens" in md.output
    assert NOT_KNOWN in md.output and "3,200 [3,000, 3,300] 75%" in md.output
    assert "list price shipped with llmbench" in md.output  # no --price: the shipped list prices, named
    term = runner.invoke(app, ["compare", str(a), str(b)])
    assert term.exit_code == 0 and "At the SLO" in term.output


def test_compare_without_capacity_cases_is_as_it_was(app: typer.Typer, tmp_path: Path) -> None:
    a, b = _sets(tmp_path, [], [])
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["compare", str(a), str(b), "-f", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "at_slo" not in json.loads(out.read_text())
    assert "At the SLO" not in runner.invoke(app, ["compare", str(a), str(b), "-f", "markdown"]).output


def _tree(tmp_path: Path) -> Path:
    """A results tree: the H100 with no capacity case, the H200 with one."""
    tree = tmp_path / "results"
    a, b = _sets(tmp_path, [], [capacity_case(INTERACTIVE, [19.0, 18.0, 19.0], [1900.0, 1800.0, 2000.0])])
    tree.mkdir()
    a.parent.rename(tree / H100)
    b.parent.rename(tree / H200)
    return tree


def test_the_pages_answer_at_the_slo_with_not_known_for_the_gpu_without_capacity_cases(tmp_path: Path) -> None:
    from llmbench.publishing.pages import tree_page
    from llmbench.report.firstscreen import answers_markdown
    from llmbench.report.slo_view import slo_block

    page = tree_page(_tree(tmp_path), prices={H200: Price(3.6, provider="Z")})
    assert page.slo is not None and page.slo.gpus == [H100, H200] and page.slo.rows[0].cells[0] is None
    md = answers_markdown([slo_block(page.slo)])
    assert "## At the SLO" in md and "| not known | not known | not known | concurrency 19 [18, 19] 75%" in md
    assert "$3.6 per GPU-hour (list price shipped with llmbench: Z)" in md


@pytest.mark.slow
def test_publish_writes_the_slo_answer_on_the_pair_page(tmp_path: Path) -> None:
    from llmbench.publishing.publish import publish

    tree = _tree(tmp_path)
    publish(tree, after=None, prices={H200: Price(3.6, provider="Z")})
    md = (tree / "h100-vs-h200.md").read_text()
    assert "## At the SLO" in md and "| not known | not known | not known | concurrency 19 [18, 19] 75%" in md
    assert "At the SLO" in (tree / "report.html").read_text()
