"""`compare --fail-if-slower`: what no interval can excuse fails the gate: a case ok in the
baseline that the candidate lost, a headline value that is not finite, and a noise floor that a NaN-bearing
set would have made NaN."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from test_compare_support import H100_ENV, H200_ENV, case, gemm_case, refs, result_set
from test_gate import baseline, candidate, passes
from typer.testing import CliRunner

from llmbench.analysis.compare import compare, headline_metric_names
from llmbench.analysis.gate import gate
from llmbench.commands import compare as compare_command
from llmbench.results import MetricResult, ResultSet

runner = CliRunner()


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()
    compare_command.register(a)
    a.command("noop")(lambda: None)
    return a


def write(rs: ResultSet, path: Path) -> Path:
    """The set as JSON with NaN/Infinity literals (what json reads back to floats), whatever `save` does with them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rs.model_dump(mode="python")), encoding="utf-8")
    return path


def nan_decode(value: float) -> ResultSet:
    """The candidate with its decode throughput (and its samples) `value`."""
    rs = candidate(60.0)
    c = next(c for c in rs.cases if c.scenario == "generate")
    c.metrics["decode_tokens_per_s"] = MetricResult(value=value, unit="tok/s", samples=[value] * 10)
    return rs


def gate_cli(app: typer.Typer, base: Path, cand: Path, *more: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["compare", str(base), str(cand), "--format", "markdown", "--fail-if-slower", "5%",
                               *more])


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_candidate_value_fails_the_gate_naming_case_and_metric(
        app: typer.Typer, tmp_path: Path, value: float) -> None:
    g = gate(compare(refs(baseline(), nan_decode(value)), 0), 0.05, headline_metric_names())
    assert g.failed
    cell = next(c for c in g.failures if c.metric == "decode_tokens_per_s")
    assert cell.scenario == "generate" and "in the candidate" in cell.problem
    res = gate_cli(app, write(baseline(), tmp_path / "a" / "s-1.json"),
                   write(nan_decode(value), tmp_path / "b" / "s-2.json"))
    assert res.exit_code == 1, res.output
    lines = res.output.split("regression gate failed")[1]
    assert "generate" in lines and f"decode_tokens_per_s is {value} in the candidate" in lines


def test_cases_lost_in_the_candidate_fail_the_gate_each_named(app: typer.Typer, tmp_path: Path) -> None:
    gone = [gemm_case("fp8", 900.0, seed=5), gemm_case("fp16", 700.0, seed=6), gemm_case("fp32", 90.0, seed=7)]
    base = result_set(H100_ENV, [*baseline().cases, *gone,
                                 case("gemm", {"precision": "int8", "shape": [8, 8, 8]}, {})])
    cand = result_set(H200_ENV, [
        *candidate(60.0).cases,
        case("gemm", gone[0].params, status="failed", reason="RuntimeError: boom"),
        case("gemm", gone[1].params, status="timeout", reason="no result within 60 s"),
        # fp32 absent; int8 skipped in the candidate but not ok in the baseline either: not the gate's business
    ])
    cand.cases.append(case("gemm", {"precision": "int8", "shape": [8, 8, 8]}, status="skipped", reason="no int8"))
    base.cases[-1].status = "skipped"  # type: ignore[assignment]
    res = gate_cli(app, write(base, tmp_path / "a" / "s-1.json"), write(cand, tmp_path / "b" / "s-2.json"))
    assert res.exit_code == 1, res.output
    lines = res.output.split("regression gate failed")[1]
    assert "failed in the candidate (RuntimeError: boom)" in lines
    assert "timeout in the candidate (no result within 60 s)" in lines
    assert "absent from the candidate" in lines and "fp32" in lines
    assert "int8" not in lines and "3 case(s)" in lines


def test_a_case_skipped_in_the_candidate_fails_the_gate(app: typer.Typer, tmp_path: Path) -> None:
    cand = candidate(60.0)
    gen = next(c for c in cand.cases if c.scenario == "generate")
    gen.status, gen.reason, gen.metrics = "skipped", "needs a GPU (this machine has none)", {}  # type: ignore[assignment]
    res = gate_cli(app, write(baseline(), tmp_path / "a" / "s-1.json"), write(cand, tmp_path / "b" / "s-2.json"))
    assert res.exit_code == 1, res.output
    assert "skipped in the candidate (needs a GPU" in res.output.split("regression gate failed")[1]


def test_a_nan_set_beside_the_candidate_leaves_the_noise_floor_finite(app: typer.Typer, tmp_path: Path) -> None:
    # the floor from repeat passes beside both sets, one pass of the candidate's holding a NaN decode figure
    passes(lambda k: baseline(), tmp_path / "a", "floor-a")
    passes(lambda k: candidate(60.0 * (1 + 0.01 * (k - 1))), tmp_path / "b", "floor-b")
    stray = nan_decode(float("nan"))
    stray.repeat = {"group": "floor-b", "index": 4, "of": 4}  # type: ignore[attr-defined]
    write(stray, tmp_path / "b" / "s-floor-b-3.json")
    half = candidate(30.0)  # a real 50% slowdown of decode
    res = gate_cli(app, write(baseline(), tmp_path / "a" / "s-1.json"), write(half, tmp_path / "b" / "s-2.json"))
    assert res.exit_code == 1, res.output
    assert "nan" not in res.output.lower().split("regression gate")[1]
    assert "0.50x" in res.output.split("regression gate failed")[1]


def test_a_slower_ratio_with_an_interval_that_is_not_finite_is_never_within_noise() -> None:
    from llmbench.analysis.compare import BASIS_RUNS, Ratio
    from llmbench.analysis.gate import slower_beyond_noise

    assert slower_beyond_noise(Ratio(0.5, (float("nan"), float("nan")), basis=BASIS_RUNS), 1 / 1.05) is True
    assert slower_beyond_noise(Ratio(0.5, (0.1, float("inf")), basis=BASIS_RUNS), 1 / 1.05) is True
    assert slower_beyond_noise(Ratio(1.0, (float("nan"), float("nan")), basis=BASIS_RUNS), 1 / 1.05) is False
