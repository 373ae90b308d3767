"""Written for llmbench's users: no work-log or workplace words (test-machine names, leases, issue numbers,
"the lead", work-session dates) in the user docs, in any command's --help, in the reference data, or in
the names of the evidence and results folders (evidence is named by what it shows)."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

from llmbench.cli import app
from tests.conftest import ROOT

USER_DOCS = ("README.md", "docs/usage.md", "docs/scenarios.md", "docs/measurements.md", "docs/a100.md",
             "docs/design.md")
# words of the place the work was done in, not of the tool: in documents, --help, folder names
WORKPLACE = re.compile(r"nvidia-h\d00|\bleases?\b|\bleased\b|SEEDS\.md|\bissue #?\d+|\bthe lead\b|\bworkplace\b"
                       r"|\bhelper session|\bwork session")
# a document besides reads like a diary: a run of the day, a fix dated, a date of work
DIARY = re.compile(WORKPLACE.pattern + r"|\bthis run\b|[Ff]ixed since|\b20\d\d-\d\d-\d\d\b")
DIARY_KEPT = {"docs/a100.md"}  # cites published sources by their dates (a pull request's, a paper's)
FOLDERS = ("docs/evidence", "results")
REFERENCE_DATA = ROOT / "llmbench" / "references" / "data"
URL = re.compile(r"https?://[^\s\"'<>)]+")  # a source's address is its own words (`...-nvidia-h100-sxm5-...`)


@pytest.mark.parametrize("doc", USER_DOCS)
def test_the_docs_are_documentation_not_a_diary(doc: str) -> None:
    words = WORKPLACE if doc in DIARY_KEPT else DIARY
    found = words.findall((ROOT / doc).read_text(encoding="utf-8"))
    assert not found, f"{doc} reads like a work log: {found}"


def _commands(group: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command's words (`()`: llmbench itself), its subcommands' after it."""
    out = [path]
    if hasattr(group, "commands"):
        for name, sub in group.commands.items():  # type: ignore[attr-defined]
            out += _commands(sub, (*path, name))
    return out


def test_every_commands_help_is_free_of_workplace_words() -> None:
    paths = _commands(typer.main.get_command(app))
    assert len(paths) > 5
    for path in paths:
        got = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert got.exit_code == 0, (path, got.output)
        assert not WORKPLACE.findall(got.output), f"llmbench {' '.join(path)} --help: {WORKPLACE.findall(got.output)}"


@pytest.mark.parametrize("top", FOLDERS)
def test_evidence_and_results_folders_are_named_by_what_they_hold(top: str) -> None:
    bad = [str(p.relative_to(ROOT)) for p in (ROOT / top).rglob("*") if p.is_dir() and WORKPLACE.search(p.name)]
    assert not bad


def test_the_reference_data_and_committed_sets_name_no_issue_or_session() -> None:
    files = [*REFERENCE_DATA.rglob("*.json"), *(ROOT / "results").rglob("*.json")]
    bad = [f"{p.relative_to(ROOT)}: {m}" for p in files
           for m in WORKPLACE.findall(URL.sub(" ", p.read_text(encoding="utf-8")))]
    assert not bad
