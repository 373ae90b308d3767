"""Bundles: one .tar.gz with result sets, report, logs and environment, read back by compare/report."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
import typer
from test_compare_support import h100_set, h200_set
from typer.testing import CliRunner

from llmbench.analysis.runs import load_sets
from llmbench.bundle import LOG_TAIL_BYTES, MANIFEST, bundle_name, read_bundle, write_bundle
from llmbench.commands import compare, report
from llmbench.errors import UserError

runner = CliRunner()


def _bundle(tmp_path: Path, name: str = "b.tar.gz") -> Path:
    return write_bundle(
        tmp_path / name,
        {"quickstart-20261124T000000Z.json": h100_set()},
        {"report.html": "<html></html>", "logs/part-1.log": b"x" * (LOG_TAIL_BYTES + 10) + b"END",
         "env/part-1/pip-freeze.txt": "torch==2.13.0\n"},
        {"command": "test", "parts": [{"interrupted": False}]},
    )


def test_round_trip_keeps_result_sets_files_and_manifest(tmp_path: Path) -> None:
    path = _bundle(tmp_path)
    b = read_bundle(path)
    assert [name for name, _ in b.result_sets] == ["results/h100-sxm-80gb/quickstart-20261124T000000Z.json"]
    rs = b.result_sets[0][1]
    assert rs.model_dump() == h100_set().model_dump()
    assert b.files["report.html"] == b"<html></html>"
    assert b.files["env/part-1/pip-freeze.txt"] == b"torch==2.13.0\n"
    assert b.manifest["bundle_format"] == 1 and b.manifest["command"] == "test"
    assert b.manifest["gpu_slugs"] == ["h100-sxm-80gb"]
    listed = b.manifest["result_sets"][0]
    assert listed["suite"] == rs.suite and listed["cases"] == len(rs.cases)
    assert b.stem == "b"


def test_logs_keep_their_tail(tmp_path: Path) -> None:
    log = read_bundle(_bundle(tmp_path)).files["logs/part-1.log"]
    assert log.endswith(b"END") and log.startswith(b"[... 13 earlier bytes cut ...]")
    assert len(log) < LOG_TAIL_BYTES + 100


BAD_MEMBERS = ["../evil", "/etc/passwd", "//evil", "logs//x.log", "logs/../../evil", "a/..", "..",
               "logs\\..\\evil", "C:\\evil", "", "."]


@pytest.mark.parametrize("name", BAD_MEMBERS)
def test_a_member_name_outside_the_bundle_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="not a relative path"):
        write_bundle(tmp_path / "b.tar.gz", {}, {name: "x"})
    assert not (tmp_path / "b.tar.gz").exists()


@pytest.mark.parametrize("name", BAD_MEMBERS[:-2])
def test_a_bundle_with_a_member_outside_it_is_not_read(tmp_path: Path, name: str) -> None:
    path = _bundle(tmp_path)
    with tarfile.open(path, "r:gz") as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]  # type: ignore[union-attr]
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        for m, data in [*members, (tarfile.TarInfo(name), b"x")]:
            m.size = len(data)
            tar.addfile(m, io.BytesIO(data))
    with pytest.raises(ValueError, match="not a relative path"):
        read_bundle(evil)


@pytest.mark.parametrize("name", ["report.html", "logs/part-1.log", "env/part-1/pip-freeze.txt", "a..b/c..txt"])
def test_plain_member_names_are_kept(tmp_path: Path, name: str) -> None:
    assert name in read_bundle(write_bundle(tmp_path / "b.tar.gz", {}, {name: "x"})).files


def test_files_that_are_not_bundles_are_one_line_errors(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_text("not a tar")
    with pytest.raises(UserError, match=r"junk\.tar\.gz: not a readable llmbench bundle"):
        load_sets([junk])
    foreign = tmp_path / "foreign.tar.gz"
    with tarfile.open(foreign, "w:gz") as tar:
        info = tarfile.TarInfo("hello.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(UserError, match=f"no {MANIFEST}"):
        load_sets([foreign])
    with pytest.raises(UserError, match="no such file"):
        load_sets([tmp_path / "missing.tar.gz"])


def test_bundle_name_is_slug_and_utc() -> None:
    from datetime import datetime, timezone

    assert bundle_name("h100-sxm-80gb", datetime(2026, 11, 24, 1, 2, 3, tzinfo=timezone.utc)) == \
        "h100-sxm-80gb-20261124T010203Z.tar.gz"


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()
    for command in (compare, report):
        command.register(a)
    return a


@pytest.mark.slow
def test_compare_and_report_accept_bundles(app: typer.Typer, tmp_path: Path) -> None:
    a = write_bundle(tmp_path / "h100.tar.gz", {"quickstart-1.json": h100_set()})
    b = write_bundle(tmp_path / "h200.tar.gz", {"quickstart-2.json": h200_set()})
    res = runner.invoke(app, ["compare", str(a), str(b), "--format", "markdown", "--all"])
    assert res.exit_code == 0, res.output
    assert "## Scenario gemm" in res.output and "h200-sxm-141gb" in res.output
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["report", str(a), str(b), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "h200-sxm-141gb" in out.read_text()
