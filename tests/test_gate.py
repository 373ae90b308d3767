"""`llmbench compare --fail-if-slower`: exit codes on synthetic result sets."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from test_compare_support import H100_ENV, H200_ENV, case, gemm_case, generate_case, noisy, refs, result_set
from typer.testing import CliRunner

from llmbench.commands import compare as compare_command
from llmbench.errors import UserError
from llmbench.report.compare import compare, headline_metric_names
from llmbench.report.gate import gate, parse_threshold
from llmbench.results import MetricResult, ResultSet, save

runner = CliRunner()


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()
    compare_command.register(a)
    a.command("noop")(lambda: None)  # two commands: typer keeps the command name on the line
    return a


def baseline() -> ResultSet:
    return result_set(H100_ENV, [gemm_case("bf16", 700.0, seed=1), generate_case("bf16", 1, 60.0, 20.0, seed=3)])


def candidate(decode_tps: float) -> ResultSet:
    cases = [gemm_case("bf16", 700.0, seed=11), generate_case("bf16", 1, decode_tps, 20.0, seed=13)]
    return result_set(H200_ENV, cases)


def noisy_gemm(tflops: float, rel: float) -> ResultSet:
    """A set whose gemm throughput is measured with few, very noisy samples."""
    c = case("gemm", {"precision": "bf16", "shape": [8192, 8192, 8192]},
             {"tflops": MetricResult.from_samples("tflops", noisy(tflops, n=6, rel=rel, seed=21))})
    return result_set(H200_ENV, [c])


def invoke(app: typer.Typer, tmp_path: Path, base: ResultSet, cand: ResultSet, *args: str):  # type: ignore[no-untyped-def]
    a, b = tmp_path / "a" / "s-1.json", tmp_path / "b" / "s-2.json"
    save(base, a)
    save(cand, b)
    return runner.invoke(app, ["compare", str(a), str(b), "--format", "markdown", *args])


def test_a_slowdown_beyond_threshold_and_noise_exits_1_and_names_the_case(app: typer.Typer, tmp_path: Path) -> None:
    res = invoke(app, tmp_path, baseline(), candidate(50.0), "--fail-if-slower", "5%")  # decode 17% slower
    assert res.exit_code == 1, res.output
    assert "regression gate failed" in res.output and "decode_tokens_per_s" in res.output
    assert "Regression gate: FAILED" in res.output
    assert "gemm" not in res.output.split("regression gate failed")[1]  # the unchanged case is not blamed


def test_a_slowdown_within_the_threshold_exits_0(app: typer.Typer, tmp_path: Path) -> None:
    res = invoke(app, tmp_path, baseline(), candidate(58.8), "--fail-if-slower", "5%")  # 2% slower
    assert res.exit_code == 0, res.output
    assert "Regression gate: passed" in res.output
    res = invoke(app, tmp_path, baseline(), candidate(50.0), "--fail-if-slower", "25%")
    assert res.exit_code == 0, res.output


def test_a_slowdown_inside_the_noise_does_not_fail() -> None:
    base = result_set(H100_ENV, [case("gemm", {"precision": "bf16", "shape": [8192, 8192, 8192]},
                                      {"tflops": MetricResult.from_samples("tflops", noisy(700.0, n=6, rel=0.3))})])
    cand = noisy_gemm(600.0, rel=0.3)
    g = gate(compare(refs(base, cand), 0), 0.05, headline_metric_names())
    cell = next(c for c in g.slower if c.metric == "tflops")
    assert cell.ratio < 1 / 1.05 and cell.ci is not None and cell.ci[1] >= 1 / 1.05
    assert not cell.beyond_noise and not g.failed


def test_without_the_option_a_slowdown_exits_0(app: typer.Typer, tmp_path: Path) -> None:
    assert invoke(app, tmp_path, baseline(), candidate(50.0)).exit_code == 0


@pytest.mark.parametrize("bad", ["5", "fast", "-5%", "0%", "5%%", "1000%"])
def test_a_malformed_threshold_is_a_user_error(app: typer.Typer, tmp_path: Path, bad: str) -> None:
    res = invoke(app, tmp_path, baseline(), candidate(50.0), "--fail-if-slower", bad)
    assert isinstance(res.exception, UserError) and res.exception.exit_code == 2
    assert "--fail-if-slower" in str(res.exception) and repr(bad) in str(res.exception) and "5%" in str(res.exception)


def test_threshold_parsing() -> None:
    assert parse_threshold("5%") == pytest.approx(0.05)
    assert parse_threshold(" 2.5 % ") == pytest.approx(0.025)
