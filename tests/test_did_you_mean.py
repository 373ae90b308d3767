"""Every misspelt name gets its nearest valid names, then all of them, in the same words
(`errors.choices_hint`): an engine, a placement key, a filter key or value, a launcher, a GPU slug, a
list; and `compare` names every file it cannot find, not only the first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llmbench.errors import choices_hint, did_you_mean
from tests.conftest import ROOT, write
from tests.test_bad_inputs import invoke
from tests.test_newcomer_edges import one_line_exit_2

GENERATE = '[[case]]\nscenario = "generate"\nmodel = "tiny-llama"\n'


def test_the_hint_names_the_nearest_then_every_choice() -> None:
    assert choices_hint("vlm", ["hf", "trtllm", "vllm"]) == "did you mean 'vllm'? valid: hf, trtllm, vllm"
    assert choices_hint("VLLM", ["hf", "trtllm", "vllm"], "engines") == "did you mean 'vllm'? engines: hf, trtllm, vllm"
    assert choices_hint("zzz", ["hf", "vllm"]) == "valid: hf, vllm"  # nothing close: the list alone
    assert choices_hint(None, []) == "valid: none"
    assert did_you_mean(3, ["3"]) == ""  # a value that is no name gets no guess


@pytest.mark.parametrize(("line", "says"), [
    ('engine = "vlm"', "unknown engine 'vlm'; did you mean 'vllm'? valid inference engines: "),  # and plugins'
    ('engine = {name = "hf", mdoe = "eager"}', "did you mean 'mode'? valid keys: mode, "),
    ("placement = {gpu = 2}", "placement has no key 'gpu'; did you mean 'gpus'? its keys: gpus, exclusive, nodes"),
    ('precision = "bf61"', "did you mean 'bf16'? valid: fp32, "),
])
def test_a_misspelt_name_in_a_suite_gets_its_fix_and_the_valid_names(
    line: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write(tmp_path, GENERATE + line + "\n")
    code, err = invoke(["run", str(suite), "--cpu", "--dry-run"], monkeypatch, capsys)
    one_line_exit_2(code, err, says)


@pytest.mark.parametrize(("args", "says"), [
    (["run", "quickstart", "--cpu", "--dry-run", "-k", "precison=fp32"],
     "unknown key 'precison'; did you mean 'precision'? valid: "),
    (["run", "quickstart", "--cpu", "--dry-run", "-k", "precision=fp23"],
     "names no case; did you mean 'fp32'? valid precision values: "),
    (["run", "quickstart", "--cpu", "--dry-run", "--launcher", "rayy"], "did you mean 'ray'? valid: local, ray"),
    (["list", "suite"], "did you mean 'suites'? valid: suites, "),
    (["project", "x.json", "--to", "h200-sxm-141"], "did you mean 'h200-sxm-141gb'"),
])
def test_a_misspelt_name_on_the_command_line_gets_its_fix(
    args: list[str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = invoke(args, monkeypatch, capsys)
    one_line_exit_2(code, err, says)


def test_compare_names_every_missing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = invoke(["compare", "a.json", "b.json"], monkeypatch, capsys)
    one_line_exit_2(code, err, "no such files (2 of 2 given): a.json, b.json")
    code, err = invoke(["compare", "a.json"], monkeypatch, capsys)
    one_line_exit_2(code, err, "a.json: no such file")



def test_no_message_lists_choices_without_the_hint() -> None:
    """An "unknown X; valid: ..." message written by hand would get no "did you mean": each goes through
    choices_hint (a list that is not of names, as a file list, may use choices_text)."""
    by_hand = re.compile(r"valid[\w ]*: \{(?:', '\.join|choices_text)")
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "llmbench").rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if by_hand.search(line)]
    assert found == []
