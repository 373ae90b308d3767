"""`show` of a set corrected case by case prints its corrections as it prints warnings: those that differ
only in their figures are one row (how many, the figures' ranges, the first and last time), a few kinds
and then how many more; `show --all` lists every one."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmbench.results import CaseResult, Correction, MetricResult, ResultSet, save

N = 100_000


def corrected(path: Path, n: int, kinds: int = 1) -> Path:
    case = CaseResult(id="gemm/1", scenario="gemm", params={"m": 1}, status="ok",
                      metrics={"tflops": MetricResult.from_samples("tflops", [1.0, 2.0, 3.0])})
    fixes = [Correction(what=f"cases[{i}].metrics.tflops: {i} -> {i + 1}", why="rescaled by 2",
                        when=f"2026-01-{1 + i % 28:02d}T00:00:00Z", by="tester") for i in range(n)]
    fixes += [Correction(what=f"kind {chr(97 + k)} changed", why=f"reason {chr(97 + k)}", when="2026-02-01T00:00:00Z")
              for k in range(kinds - 1)]
    save(ResultSet(suite="s", cases=[case], corrections=fixes), path)
    return path


def show(*args: str) -> str:
    import typer

    from llmbench.commands import show as show_command

    app = typer.Typer()
    show_command.register(app)
    app.command("noop")(lambda: None)  # a group, so the command is named as on the real CLI
    res = CliRunner().invoke(app, ["show", *args], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.slow
def test_a_hundred_thousand_corrections_are_one_row(tmp_path: Path) -> None:
    out = show(str(corrected(tmp_path / "s-20260101T000000Z.json", N)))
    rows = [line for line in out.splitlines() if "times)" in line]
    assert len(rows) == 1, out
    row = rows[0]
    assert f"cases[0..{N - 1}].metrics.tflops: 0..{N - 1} -> 1..{N} ({N} times)" in row, row
    assert "2026-01-01T00:00:00Z .. 2026-01-28T00:00:00Z" in row and "rescaled by 2" in row and "tester" in row
    assert len(out) < 20_000, len(out)  # a screen, not 7.7 MB


def test_many_kinds_end_in_a_row_of_how_many_more(tmp_path: Path) -> None:
    out = show(str(corrected(tmp_path / "s-20260101T000000Z.json", 5, kinds=12)))
    assert "(5 times)" in out
    assert "4 more correction(s) of 4 other kind(s)" in out and "llmbench show --all" in out


def test_show_all_lists_every_correction(tmp_path: Path) -> None:
    out = show(str(corrected(tmp_path / "s-20260101T000000Z.json", 3)), "--all")
    assert all(f"cases[{i}].metrics.tflops: {i} -> {i + 1}" in out for i in range(3))
    assert "times)" not in out
