"""The compare/report/specs/project commands through typer, as llmbench.cli registers them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from test_compare_support import h100_set, h200_set
from typer.testing import CliRunner

from llmbench.commands import compare, project, report, specs
from llmbench.errors import UserError
from llmbench.results import load, save

runner = CliRunner()


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()
    for command in (compare, report, specs, project):
        command.register(a)
    return a


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "h100" / "quickstart-1.json", tmp_path / "h200" / "quickstart-2.json"
    save(h100_set(), a)
    save(h200_set(), b)
    return a, b


def test_compare_formats(app: typer.Typer, files: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = files
    res = runner.invoke(app, ["compare", str(a), str(b), "--format", "markdown", "--all"])
    assert res.exit_code == 0, res.output
    assert "## Scenario gemm" in res.output
    out = tmp_path / "c.json"
    res = runner.invoke(
        app, ["compare", str(a), str(b), "--baseline", "h200-sxm-141gb", "-f", "json", "-o", str(out)]
    )
    assert res.exit_code == 0 and json.loads(out.read_text())["comparison"]["baseline"] == "h200-sxm-141gb"
    res = runner.invoke(app, ["compare", str(a), "--base", "precision=bf16", "-f", "csv"])
    assert res.exit_code == 0 and "buys over precision=bf16" in res.output
    res = runner.invoke(app, ["compare", str(a), "--base", "precision=bf16", "--all", "-f", "csv"])
    assert res.exit_code == 0 and "diff %" in res.output  # each run's own diff: the details
    res = runner.invoke(app, ["compare", str(a.parent), str(b.parent)])  # folders: newest set in each
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compare", "missing.json", "x.json"], "no such files (2 of 2 given): missing.json, x.json"),
        (["compare", "{a}"], "two or more result sets"),
        (["compare", "{a}", "{b}", "--baseline", "a100"], "valid: "),
        (["compare", "{a}", "--base", "precision=int4"], "valid: bf16"),
        (["project", "{a}", "--to", "h300"], "valid: h100-sxm-80gb"),
        (["specs", "rtx-9090"], "'rtx-9090'"),
    ],
)
def test_bad_inputs_raise_user_errors(
    app: typer.Typer, files: tuple[Path, Path], args: list[str], message: str
) -> None:
    a, b = files
    res = runner.invoke(app, [x.format(a=a, b=b) for x in args])
    assert isinstance(res.exception, UserError), res.output
    assert message in str(res.exception) and res.exception.exit_code == 2


def test_bad_format_is_a_usage_error(app: typer.Typer, files: tuple[Path, Path]) -> None:
    res = runner.invoke(app, ["compare", str(files[0]), str(files[1]), "--format", "yaml"])
    assert res.exit_code == 2


def test_report_specs_project(app: typer.Typer, files: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = files
    html = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(a), str(b), "-o", str(html)]).exit_code == 0
    assert "<table" in html.read_text()
    res = runner.invoke(app, ["specs", "-f", "markdown"])
    assert res.exit_code == 0 and "h200-sxm-141gb" in res.output and "datasheet" in res.output
    proj = tmp_path / "p.json"
    res = runner.invoke(
        app,
        [
            "project",
            str(a),
            "--to",
            "h200-sxm-141gb",
            "-o",
            str(proj),
            "--validate",
            str(b),
            "-f",
            "markdown",
        ],
    )
    assert res.exit_code == 0, res.output
    assert (
        load(proj).source.kind == "projected"
        and "Projection error" in res.output
        and "[projected]" in res.output
    )


def test_compare_prints_none_for_an_empty_section(app: typer.Typer, tmp_path: Path) -> None:
    """A section with no rows is one line naming what it would hold, not a frame of empty headers."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save(h100_set(), a)
    save(h100_set(), b)
    res = runner.invoke(app, ["compare", str(a), str(b), "--fail-if-slower", "5%", "--all"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    none = [ln for ln in lines if "(none" in ln]
    assert "Cases not in every result set: (none: every case is in every result set)" in none
    assert any(ln.startswith("Regression gate: passed") and "(none: no headline cell" in ln for ln in none)
    assert not any(ln.strip().startswith("Cases not in every result set") and "(none" not in ln for ln in lines)
    res = runner.invoke(app, ["compare", str(a), str(b), "-f", "markdown", "--all"])
    assert "(none: every case is in every result set)" in res.output


def test_base_pairs_cases_across_the_sets_of_one_gpu(app: typer.Typer, tmp_path: Path) -> None:
    """Two suites of one GPU that share no case (the transformers and the vLLM engine) still compare
    with --base engine=hf: each vLLM case is put beside the transformers case it differs from in the
    engine only."""
    from test_compare_support import case, h100_set, metric, result_set

    def gen(engine: str, tps: float) -> object:
        params = {"model": "llama-3-8b", "engine": engine, "precision": "bf16", "batch_size": 1}
        return case("generate", params, {"decode_tokens_per_s": metric("decode_tokens_per_s", tps)})

    env = h100_set().env
    hf, vl = tmp_path / "inference.json", tmp_path / "vllm.json"
    save(result_set(env, [gen("hf", 160.0)], suite="inference"), hf)
    save(result_set(env, [gen("vllm", 200.0)], suite="vllm"), vl)
    res = runner.invoke(app, ["compare", str(hf), str(vl), "--base", "engine=hf", "-f", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["base_diffs"][0]["rows"]
    assert [(round(r["base_value"]), round(r["value"]), round(r["diff_pct"])) for r in rows] == [(160, 200, 25)]
    no_base = runner.invoke(app, ["compare", str(hf), str(vl)])
    assert isinstance(no_base.exception, UserError)  # without --base, sets that share no case are an error (exit 2)
