"""A result set names no absolute path of the machine that measured it, and a case that `--resume` ran on
another machine carries that machine's fingerprint."""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

import pytest

from llmbench.harness.runner import RunOptions, fingerprint_differences, other_fingerprint, run_suite
from llmbench.redact import PACKAGE_CHECKOUT, machine_paths
from llmbench.results import CaseResult, ResultSet, load, save
from llmbench.suite import load_suite
from tests.conftest import ROOT, write

# a path of the measuring machine as committed sets held them: a temporary folder, a checkout, a venv
MACHINE_PATH = re.compile(r"(?<![\w.~$-])/(?:tmp|home|root|work|scratch|opt/[^/\s\"']+/\.venv)/")


def test_paths_are_written_relative_or_as_their_folders_word(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    tmp = tempfile.gettempdir()
    text = json.dumps({"tokenizer": f"{tmp}/llmbench-serving-x/tokenizer", "server_log": f"{tmp_path}/logs/a.log",
                       "traceback": f'File "{PACKAGE_CHECKOUT}/llmbench/harness/worker.py", line 3',
                       "kept": ["/tmpfs/a", "/srv/data/b", "/usr/lib/python3.12/ctypes/__init__.py"]})
    got = json.loads(machine_paths(text))
    assert got["tokenizer"] == "$TMPDIR/llmbench-serving-x/tokenizer"
    assert got["server_log"] == "logs/a.log"  # under the working folder: relative to it
    assert got["traceback"] == 'File "llmbench/harness/worker.py", line 3'
    assert got["kept"] == ["/tmpfs/a", "/srv/data/b", "/usr/lib/python3.12/ctypes/__init__.py"]


def test_a_saved_set_holds_no_path_of_this_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    tok = tempfile.mkdtemp(prefix="llmbench-serving-")
    case = CaseResult(id="serving/abc", scenario="serving", params={"tokenizer": f"{tok}/tokenizer"}, status="failed",
                      info={"server_log": str(tmp_path / "serving-logs" / "s.log"),
                            "server_command": [sys.executable]},
                      traceback=f'File "{PACKAGE_CHECKOUT}/llmbench/x.py"')
    save(ResultSet(suite="s", cases=[case]), tmp_path / "s.json")
    text = (tmp_path / "s.json").read_text()
    for machine in (tok, str(tmp_path), PACKAGE_CHECKOUT):
        assert machine not in text
    back = load(tmp_path / "s.json").cases[0]
    assert back.id == "serving/abc"  # the id stays the one the case ran under (a resume finds it by it)
    assert back.params["tokenizer"].startswith("$TMPDIR/") and back.info["server_log"] == "serving-logs/s.log"


@pytest.mark.parametrize("tree", ["results", "llmbench/references/data/measured"])
def test_no_committed_set_names_a_path_of_the_machine_that_measured_it(tree: str) -> None:
    found = [str(p.relative_to(ROOT)) for p in sorted((ROOT / tree).rglob("*.json"))
             if MACHINE_PATH.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert found == []


def test_a_fingerprint_that_differs_is_the_cases_own_and_one_that_matches_none() -> None:
    set_env = {"gpu": {"slug": "h200-sxm-141gb", "id_hash": "aaa", "driver": "580"}, "cuda": "13.0"}
    same = json.loads(json.dumps(set_env))
    assert other_fingerprint(set_env, same) == {}
    other = {"gpu": {"slug": "h200-sxm-141gb", "id_hash": "bbb", "driver": "580"}, "cuda": "13.0"}
    assert fingerprint_differences(set_env, other) == ["gpu.id_hash"]
    assert other_fingerprint(set_env, other) == other


SUITE = """
name = "resumed"
[defaults]
min_iters = 2
min_seconds = 0.0
timeout_s = 60
[[case]]
scenario = "fault"
matrix.seconds = [0.0, 0.01]
"""


@pytest.mark.slow
def test_a_resume_on_another_machine_records_that_machines_fingerprint_on_each_case_it_ran(
        tmp_path: Path, fault_plugin: str) -> None:
    suite = load_suite(str(write(tmp_path, SUITE)))
    first, second = suite.cases
    out = tmp_path / "out"
    path = run_suite(suite, [first], RunOptions(out_dir=out, device="cpu"))
    assert "env" not in load(path).cases[0].model_dump(exclude_defaults=True)  # the set's own machine
    data = json.loads(path.read_text())
    here = data["env"]
    data["env"] = {**here, "gpu": {**here["gpu"], "id_hash": "another-machine"}}  # measured elsewhere
    path.write_text(json.dumps(data))
    assert run_suite(suite, suite.cases, RunOptions(out_dir=out, device="cpu", resume=True)) == path
    rs = load(path)
    by_id = {c.id: c for c in rs.cases}
    assert by_id[first.id].env == {}  # ran on the set's machine, before
    assert by_id[second.id].env["gpu"] == here["gpu"]  # ran here, on resume: this machine's fingerprint
    assert rs.case_env(by_id[second.id]) == by_id[second.id].env and rs.case_env(by_id[first.id]) == rs.env


@pytest.mark.slow
def test_a_resume_on_the_same_machine_adds_no_fingerprint(tmp_path: Path, fault_plugin: str) -> None:
    suite = load_suite(str(write(tmp_path, SUITE)))
    path = run_suite(suite, suite.cases[:1], RunOptions(out_dir=tmp_path / "out", device="cpu"))
    run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu", resume=True))
    assert [c.env for c in load(path).cases] == [{}, {}]
