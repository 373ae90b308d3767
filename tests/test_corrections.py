"""Corrections recorded in a result set (results.Correction, results.correct): kept through a save, a bad
one refused in one line, printed by `show`, refused by an llmbench from before the key in one line, and
recorded in the committed sets whose file was changed by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import create_model

from llmbench import results
from llmbench.analysis.inputs import SetRef
from llmbench.report.views import corrections_table
from llmbench.results import CaseResult, Closed, MetricResult, ResultSet, correct, from_json, load, save
from tests.conftest import ROOT


def _set(path: Path) -> Path:
    case = CaseResult(id="gemm/1", scenario="gemm", params={"m": 1}, status="ok",
                      metrics={"tflops": MetricResult.from_samples("tflops", [1.0, 2.0, 3.0])})
    save(ResultSet(suite="s", cases=[case]), path)
    return path


def test_corrections_are_appended_in_order_and_survive_a_save(tmp_path: Path) -> None:
    path = _set(tmp_path / "s-20260101T000000Z.json")
    assert "corrections" not in json.loads(path.read_text())  # an uncorrected set: the key is absent
    before = load(path).cases
    correct(path, "cases[0].params.m: 2 -> 1", "typed wrong", when="2026-01-02T03:04:05Z", by="tester")
    correct(path, "suite: t -> s", "renamed")
    back = load(path)
    assert [(c.what, c.why, c.by) for c in back.corrections] == [("cases[0].params.m: 2 -> 1", "typed wrong", "tester"),
                                                               ("suite: t -> s", "renamed", None)]
    assert back.corrections[0].when == "2026-01-02T03:04:05Z" and back.corrections[1].when.endswith("Z")
    assert back.cases == before  # recording a correction changes no figure
    save(back, tmp_path / "again.json")
    assert load(tmp_path / "again.json").corrections == back.corrections
    assert "by" not in json.loads(path.read_text())["corrections"][1]  # an optional key absent where not given


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"when": "2026/01/02"}, "when: Value error, not a UTC time written YYYY-MM-DDTHH:MM:SSZ"),
    ({"when": "2026-01-02T03:04:05+01:00"}, "not a UTC time"),
    ({"what": ""}, "what: String should have at least 1 character"),
])
def test_a_malformed_correction_is_refused_in_one_line_and_the_set_kept(
        tmp_path: Path, kwargs: dict[str, str], needle: str) -> None:
    path = _set(tmp_path / "s.json")
    text = path.read_text()
    args = {"what": "x: 1 -> 2", "why": "because", **kwargs}
    with pytest.raises(ValueError) as got:
        correct(path, args.pop("what"), args.pop("why"), **args)
    assert needle in str(got.value) and "\n" not in str(got.value)
    assert path.read_text() == text


def test_a_malformed_correction_in_a_file_is_refused_naming_it() -> None:
    def read(correction: dict[str, str]) -> str:
        with pytest.raises(ValueError) as got:
            from_json(json.dumps({"schema_version": 2, "suite": "s", "corrections": [correction]}), "x.json")
        assert "\n" not in str(got.value)
        return str(got.value)

    assert "corrections[0].why: Field required" in read({"what": "a", "when": "2026-01-02T03:04:05Z"})
    extra = read({"what": "a", "when": "2026-01-02T03:04:05Z", "why": "b", "reason": "c"})
    assert "corrections[0]: unknown key 'reason'" in extra and "Correction keys: what, when, why, by" in extra


def test_an_llmbench_from_before_the_key_refuses_a_corrected_set_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain, corrected = _set(tmp_path / "plain.json"), _set(tmp_path / "corrected.json")
    correct(corrected, "a: 1 -> 2", "b", when="2026-01-02T03:04:05Z")
    fields = {k: (f.annotation, f) for k, f in ResultSet.model_fields.items() if k != "corrections"}
    monkeypatch.setattr(results, "ResultSet", create_model("ResultSet", __base__=Closed, **fields))  # type: ignore[call-overload]
    assert load(plain).suite == "s"  # sets without corrections read as before
    with pytest.raises(ValueError) as got:
        load(corrected)
    assert "the set: unknown key 'corrections'" in str(got.value) and "\n" not in str(got.value)


def test_show_prints_each_correction(tmp_path: Path) -> None:
    path = _set(tmp_path / "s-20260101T000000Z.json")
    correct(path, "params.m: 2 -> 1", "a typo", when="2026-01-02T03:04:05Z", by="tester")
    shown = subprocess.run([sys.executable, "-m", "llmbench", "show", str(path)], capture_output=True, text=True,
                           cwd=ROOT, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines() if "2026-01-02T03:04:05Z" in x)
    assert all(s in line for s in ("s-20260101T000000Z", "params.m: 2 -> 1", "a typo", "tester"))


def test_a_pooled_side_names_each_corrected_run_by_its_file(tmp_path: Path) -> None:
    a, b = _set(tmp_path / "a.json"), _set(tmp_path / "b.json")
    correct(b, "x: 1 -> 2", "why", when="2026-01-02T03:04:05Z")
    assert corrections_table([SetRef("side", load(a))]) is None
    table = corrections_table([SetRef("side", load(a), "a", runs=[load(a), load(b)], stems=["a", "b"])])
    assert table is not None and table.rows == [["b", "2026-01-02T03:04:05Z", "x: 1 -> 2", "why", "—"]]


@pytest.mark.parametrize("name", ["headline-20261125T084744Z.json", "headline-20261125T085444Z.json"])
def test_the_h200_spread_sets_whose_commit_was_rewritten_say_so(name: str) -> None:
    rs = load(ROOT / "results" / "spread" / "h200-sxm-141gb" / name)
    (c,) = rs.corrections
    commit = rs.llmbench["git_commit"]
    assert f"to {commit}" in c.what and all(k.info["llmbench_commit"] == commit for k in rs.cases)
    assert c.when == "2026-11-25T09:49:40Z" and "commit 1ff4ef6" in c.why and "placeholder by mistake" in c.why
