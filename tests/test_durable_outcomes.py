"""An outcome a case process wrote outlives a runner killed before it recorded it: the case process
writes it to the set's journal first, and `--resume` records what the journal holds."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.harness import journal
from llmbench.harness.runner import RunOptions, run_suite
from llmbench.harness.ui import UI
from llmbench.results import load
from llmbench.suite import load_suite
from tests.conftest import ROOT, write

SLEEP = """
name = "sleepy"
[[case]]
scenario = "fault"
kind = "sleep"
seconds = 0.1
min_iters = 1
min_seconds = 0.0
timeout_s = 120
"""

RUNNER_DIES = """
import os, signal, sys
from pathlib import Path
from llmbench.harness.launchers.local import IsolatedProcess
from llmbench.harness.runner import RunOptions, run_suite
from llmbench.suite import load_suite

class DiesOnceTheOutcomeIsWritten(IsolatedProcess):
    def run(self, *args, **kwargs):
        super().run(*args, **kwargs)  # the case process has written its outcome and ended
        os.kill(os.getpid(), signal.SIGKILL)  # the runner is killed before it records it

suite = load_suite(sys.argv[1])
run_suite(suite, suite.cases, RunOptions(out_dir=Path(sys.argv[2]), device="cpu",
                                         launcher=DiesOnceTheOutcomeIsWritten()))
"""


class Warnings(UI):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def warn(self, text: str) -> None:
        self.lines.append(text)


@pytest.mark.slow
def test_an_outcome_written_just_before_the_runner_is_killed_is_recorded_on_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault_plugin: str) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    monkeypatch.setenv("LLMBENCH_TEST_PID_DIR", str(pid_dir))
    suite_path, out = write(tmp_path, SLEEP), tmp_path / "out"
    died = subprocess.run([sys.executable, "-c", RUNNER_DIES, str(suite_path), str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert died.returncode == -signal.SIGKILL, died.stderr
    (path,) = out.glob("*/sleepy-*.json")
    assert load(path).cases == []  # the runner never recorded the case
    assert len(journal.pending(path)) == 1  # but its outcome is on disk, beside the set
    assert len(list(pid_dir.glob("*.pid"))) == 1

    suite = load_suite(str(suite_path))
    ui = Warnings()
    run_suite(suite, suite.cases, RunOptions(out_dir=out, device="cpu", resume=True), ui)
    (case,) = load(path).cases
    assert case.status == "ok" and case.metrics["time_ms"].value >= 0
    assert case.info["launcher"] == "local" and "llmbench_commit" in case.info
    assert len(list(pid_dir.glob("*.pid"))) == 1  # recorded from its outcome, not run again
    assert any("recorded from the outcomes their case processes wrote" in w for w in ui.lines), ui.lines
    assert not journal.folder(path).exists()  # the set holds it: its entry went


def test_an_entry_the_set_already_holds_is_not_recorded_twice(tmp_path: Path) -> None:
    from llmbench.harness.runner import recovered_cases
    from llmbench.results import CaseResult, ResultSet
    from llmbench.suite import case_from

    case = case_from("gemm", {})
    path = tmp_path / "s.json"
    entry = journal.entry(path, case.id, "2026-01-01T00:00:05Z", {"gpus": "0"})
    journal.write(entry, {"status": "ok", "metrics": {}, "info": {"x": 1}}, began_unix=1767225605.0)
    rs = ResultSet(suite="s")
    (got,) = recovered_cases(path, rs, [case])
    assert got.id == case.id and got.info == {"x": 1, "gpus": "0"} and got.started_at == "2026-01-01T00:00:05Z"
    rs.upsert(CaseResult(id=case.id, scenario="gemm", params=case.params_dict, status="ok",
                         started_at="2026-01-01T00:00:06Z"))
    assert recovered_cases(path, rs, [case]) == []  # the runner recorded it before it stopped
    assert json.loads(Path(entry["path"]).read_text())["id"] == case.id
