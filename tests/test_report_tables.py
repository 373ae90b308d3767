"""Tables: the Markdown golden file, CSV and JSON shapes, terminal text."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from test_compare_support import h100_set, h200_set, refs

from llmbench.analysis.compare import compare
from llmbench.report.answer_view import answer_tables
from llmbench.report.tables import render
from llmbench.report.terminal import to_terminal_text
from llmbench.report.views import comparison_tables

GOLDEN = Path(__file__).parent / "golden" / "compare_h100_h200.md"


def _tables():  # type: ignore[no-untyped-def]
    return comparison_tables(compare(refs(h100_set(), h200_set()), 0))


def test_markdown_matches_golden_file() -> None:
    """What `llmbench compare --format markdown --all` prints: the answer, then the details."""
    cmp = compare(refs(h100_set(), h200_set()), 0)
    text = render(answer_tables(cmp) + comparison_tables(cmp), "markdown")
    if os.environ.get("LLMBENCH_UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8"), (
        "set LLMBENCH_UPDATE_GOLDEN=1 to accept a deliberate change"
    )


def test_csv_blocks_parse() -> None:
    rows = list(csv.reader(io.StringIO(render(_tables(), "csv"))))
    assert rows[0] == ["# Result sets"]
    header = next(r for r in rows if r[:3] == ["case", "metric", "unit"])
    assert header[-1] == "h200-sxm-141gb vs h100-sxm-80gb"


def test_json_is_the_structured_comparison() -> None:
    cmp = compare(refs(h100_set(), h200_set()), 0)
    data = json.loads(render(comparison_tables(cmp), "json", data=cmp.to_dict()))
    assert data["baseline"] == "h100-sxm-80gb"
    row = next(r for r in data["rows"] if r["metric"] == "tb_per_s")
    assert row["ratios"][0] is None and len(row["ratios"][1]["interval"]) == 2
    # one run a side and no noise floor: a within-run interval, never called a 95% one
    assert row["ratios"][1]["basis"] == "single run" and row["ratios"][1]["ci95"] is None


def test_terminal_text_has_tables_and_notes() -> None:
    pub = h200_set()
    pub.source.kind = "projected"
    text = to_terminal_text(comparison_tables(compare(refs(h100_set(), pub), 0)))
    assert (
        "Scenario generate" in text and "[projected]" in text and "Not all figures here are measured" in text
    )


def test_a_measured_run_that_stopped_is_marked_unfinished() -> None:
    """Cases ok out of the cases in the set would read as complete for a run cut short."""
    from llmbench.report.views import sets_table

    stopped, projected = h100_set(), h200_set()
    stopped.finished_at = None
    projected.source.kind = "projected"
    projected.finished_at = None  # projections are not runs
    rows = sets_table(refs(stopped, projected)).rows
    assert rows[0][-1].endswith("(run unfinished)")
    assert "unfinished" not in rows[1][-1]
