"""Each case in its own process: failures become statuses, the suite goes on, nothing is lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from llmbench.caseinfo import INFO_VERSION
from llmbench.harness.runner import RunOptions, latest_result, run_suite
from llmbench.results import history_of, load
from llmbench.suite import load_suite
from tests.conftest import EVENT_S, ROOT, wait_for, wait_gone, write

pytestmark = pytest.mark.slow

FAULTS = """
name = "faults"
[defaults]
min_iters = 3
min_seconds = 0.0
timeout_s = 30
[[case]]
scenario = "fault"
matrix.kind = ["raise", "segfault", "exit", "oom", "skip", "ok"]
[[case]]
scenario = "fault"
kind = "hang"
timeout_s = 3
"""


def test_every_misbehaviour_becomes_a_status_and_the_suite_goes_on(tmp_path: Path, fault_plugin: str) -> None:
    suite = load_suite(str(write(tmp_path, FAULTS)))
    path = run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu"))
    rs = load(path)
    by_kind = {c.params["kind"]: c for c in rs.cases}
    assert len(rs.cases) == 7
    assert by_kind["raise"].status == "failed"
    assert "ValueError: planted failure" in by_kind["raise"].reason
    assert "planted failure" in by_kind["raise"].traceback
    assert by_kind["segfault"].status == "failed"
    assert "SIGSEGV" in by_kind["segfault"].reason
    assert "Fatal Python error" in (by_kind["segfault"].traceback or "")  # faulthandler's stack
    assert by_kind["exit"].status == "failed"
    assert "exited with code 3" in by_kind["exit"].reason
    assert by_kind["oom"].status == "oom"
    assert by_kind["skip"].status == "skipped"
    assert by_kind["skip"].reason == "planted: this case cannot run here"
    assert by_kind["hang"].status == "timeout"
    assert "timeout of 3s" in by_kind["hang"].reason
    # stopped at its 3 s timeout, not at the end of its hour's sleep (the kill's own time aside)
    assert by_kind["hang"].duration_s < 120, by_kind["hang"].duration_s
    ok = by_kind["ok"]
    assert ok.status == "ok" and ok.timer == "perf_counter"
    assert ok.metrics["time_ms"].stats.n >= 3
    assert len(ok.metrics["time_ms"].samples) == ok.metrics["time_ms"].stats.n
    assert rs.finished_at is not None
    assert rs.env["gpu"]["slug"].startswith("cpu-")


SLOW = """
name = "slow"
[defaults]
min_iters = 1
min_seconds = 0.0
[[case]]
scenario = "fault"
kind = "sleep"
matrix.seconds = [0.1, 0.2, 0.3, 60.0, 0.4]
"""


def _runner(suite: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "llmbench", "run", str(suite), "--out", str(out), "--cpu", *extra],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        env={**os.environ, **(env or {})},
    )




def test_sigterm_stops_the_run_kills_the_case_and_keeps_finished_cases(tmp_path: Path, fault_plugin: str) -> None:
    """What a pre-empted cloud instance or `timeout` sends: the runner alone gets SIGTERM."""
    suite = write(tmp_path, SLOW)
    out, pids = tmp_path / "out", tmp_path / "pids"
    pids.mkdir()
    proc = _runner(suite, out, env={"LLMBENCH_TEST_PID_DIR": str(pids)})
    long_case = wait_for("the 60 s case running", lambda: next(
        (int(f.stem) for f in pids.glob("*.pid") if f.read_text() == "60.0"), None))
    began = (pids / f"{long_case}.pid").stat().st_mtime  # its 60 s sleep began
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=EVENT_S)
    assert proc.returncode == 130
    # the runner stopped, and did not wait out the case
    assert time.time() - began < 50, f"the run ended {time.time() - began:.1f} s into the 60 s case"
    assert "--resume" in err.decode()
    assert wait_gone([long_case])  # the case process went with the runner
    rs = load(next(out.glob("*/slow-*.json")))
    assert [c.params["seconds"] for c in rs.cases] == [0.1, 0.2, 0.3]
    assert rs.finished_at is None


def test_kill_9_loses_no_finished_case_and_resume_completes(tmp_path: Path, fault_plugin: str) -> None:
    suite = write(tmp_path, SLOW)
    out = tmp_path / "out"
    proc = _runner(suite, out)

    def three_done() -> Path | None:
        files = list(out.glob("*/slow-*.json"))
        return files[0] if files and len(json.loads(files[0].read_text())["cases"]) >= 3 else None

    path = wait_for("three cases finished", three_done, step=0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the runner and its current case, mid-suite
    proc.wait()
    rs = load(path)  # still valid JSON, with every finished case
    assert [c.params["seconds"] for c in rs.cases] == [0.1, 0.2, 0.3]
    assert all(c.status == "ok" for c in rs.cases)
    assert rs.finished_at is None
    first_ids = {c.id: c.started_at for c in rs.cases}

    # resume: the 60 s case is filtered out so the test stays short; finished cases are not rerun
    proc = _runner(suite, out, "--resume", "--filter", "seconds=0.1,0.2,0.3,0.4")
    assert proc.wait(timeout=300) == 0
    assert latest_result(out, rs.gpu_slug, "slow") == path
    rs2 = load(path)
    assert [c.params["seconds"] for c in rs2.cases] == [0.1, 0.2, 0.3, 0.4]
    assert {c.id: c.started_at for c in rs2.cases[:3]} == first_ids
    assert rs2.finished_at is not None
    assert all(c.info["llmbench_commit"] == rs2.llmbench["git_commit"] for c in rs2.cases)
    assert all(c.info["llmbench_tree_modified"] == rs2.llmbench["git_dirty"] for c in rs2.cases)
    assert all(c.info["info_version"] == INFO_VERSION for c in rs2.cases)

    # --force re-measures the selected cases in place; the others stay as they were
    proc = _runner(suite, out, "--resume", "--force", "--filter", "seconds=0.1")
    assert proc.wait(timeout=300) == 0
    rs3 = load(path)
    assert len(rs3.cases) == 4
    redone = next(c for c in rs3.cases if c.params["seconds"] == 0.1)
    assert redone.started_at > first_ids[redone.id]
    replaced = next(c for c in rs2.cases if c.id == redone.id)
    (kept,) = history_of(redone)  # what the re-measure replaced: its values and commit, no samples
    assert kept["started_at"] == replaced.started_at and kept["llmbench_commit"] == replaced.info["llmbench_commit"]
    assert kept["metrics"] == {n: {"value": m.value, "unit": m.unit} for n, m in replaced.metrics.items()}
    assert {c.id: c.started_at for c in rs3.cases if c.params["seconds"] != 0.1} == {
        c.id: c.started_at for c in rs2.cases if c.params["seconds"] != 0.1}


def test_budget_starts_only_cases_that_fit_and_leaves_the_rest_for_resume(tmp_path: Path, fault_plugin: str) -> None:
    suite = write(tmp_path, SLOW)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "llmbench", "run", str(suite), "--out", str(out), "--cpu",
                        "--budget", "40"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rs = load(next(out.glob("*/slow-*.json")))
    ran = [c.params["seconds"] for c in rs.cases]
    assert 60.0 not in ran and 0.1 in ran  # 60 s of sleep is estimated at 61 s: not started
    assert all(c.status == "ok" for c in rs.cases)
    assert "deferred" in r.stdout and "seconds=60.0" in r.stdout.replace("\n", "")
    assert rs.finished_at is None  # the run left cases for --resume

    # the plan and the budget use the same per-case times: measured where this result set has them
    proc = _runner(suite, out, "--resume", "--budget", "40", "--filter", "seconds=0.1,0.2,0.3,0.4,60.0")
    assert proc.wait(timeout=300) == 0
    rs2 = load(next(out.glob("*/slow-*.json")))
    assert sorted(c.params["seconds"] for c in rs2.cases) == [0.1, 0.2, 0.3, 0.4]
    assert rs2.finished_at is None


def test_budget_without_resume_uses_the_times_of_an_earlier_run(tmp_path: Path, fault_plugin: str) -> None:
    from llmbench.hardware.fingerprint import cpu_slug
    from llmbench.results import CaseResult, ResultSet, save

    suite = load_suite(str(write(tmp_path, SLOW)))
    first = suite.cases[0]  # sleeps 0.1 s, but an earlier run here took 600 s over it
    out = tmp_path / "out"
    save(ResultSet(suite="slow", env={"gpu": {"slug": cpu_slug()}}, cases=[
        CaseResult(id=first.id, scenario=first.scenario, params=first.params_dict, status="ok", duration_s=600.0)]),
        out / cpu_slug() / "slow-20261101T000000Z.json")
    path = run_suite(suite, [first], RunOptions(out_dir=out, device="cpu", budget_s=40))
    rs = load(path)
    assert path.name != "slow-20261101T000000Z.json" and rs.cases == []  # a new set; the case was deferred
    assert rs.finished_at is None


def test_budget_quotes_later_cases_with_the_times_of_cases_this_run_measured(
    tmp_path: Path, fault_plugin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the H100 a case quoted from siblings measured before the run (91 s) ran while a sibling
    measured earlier in the same run (221 s) said it would not fit, and was cut off: each finished
    case joins the times the next quotes read."""
    from llmbench.harness import runner

    seen: dict[str, set[str]] = {}
    quote = runner.case_time

    def spy(case: Any, measured: dict[str, Any]) -> Any:
        seen[case.id] = set(measured)
        return quote(case, measured)

    monkeypatch.setattr(runner, "case_time", spy)
    suite = load_suite(str(write(tmp_path, SLOW)))
    first, second = suite.cases[:2]
    run_suite(suite, [first, second], RunOptions(out_dir=tmp_path / "out", device="cpu", budget_s=40))
    assert seen[first.id] == set() and seen[second.id] == {first.id}


def test_gpu_selection_reaches_the_case_process_before_torch(tmp_path: Path, fault_plugin: str) -> None:
    suite = load_suite(str(write(tmp_path, '[[case]]\nscenario = "fault"\nkind = "env"\nmin_iters = 1\n'
                                             'min_seconds = 0.0\n')))
    path = run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu", gpus="MIG-1a2b-3c"))
    env = load(path).cases[0].info["env"]
    assert env == {"CUDA_VISIBLE_DEVICES": "MIG-1a2b-3c", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


@pytest.mark.parametrize("bad", ["a,b", "0;1", "MIG", "-1", ""])
def test_bad_gpu_selections_are_refused(bad: str) -> None:
    from llmbench.errors import UserError
    from llmbench.harness.isolation import check_gpus

    with pytest.raises(UserError, match="--gpus"):
        check_gpus(bad)
    assert check_gpus("0, 1") == "0,1"
    assert check_gpus("GPU-8f2e-11aa") == "GPU-8f2e-11aa"


def _gpu_held_by_pid_4242(monkeypatch: pytest.MonkeyPatch, used_gib: float) -> tuple[type, list[str]]:
    """NVML simulated with one GPU that process 4242 holds; a UI class whose warnings land in the list."""
    from llmbench.harness import runner, ui

    monkeypatch.setattr(runner.nvml, "handles", lambda: ["gpu0"])
    monkeypatch.setattr(runner.nvml, "compute_processes", lambda h: [{"pid": 4242, "used_gib": used_gib}])
    warned: list[str] = []

    class UI(ui.UI):
        def warn(self, text: str) -> None:
            warned.append(text)

    return UI, warned


def test_other_processes_on_the_gpu_are_recorded_and_warned(
    tmp_path: Path, fault_plugin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVML is simulated: a foreign process holds the GPU when the case starts."""
    UI, warned = _gpu_held_by_pid_4242(monkeypatch, 1.5)
    suite = load_suite(str(write(tmp_path, '[[case]]\nscenario = "fault"\nmin_iters = 1\nmin_seconds = 0.0\n')))
    path = run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="auto", gpus="0"), UI())
    rs = load(path)
    assert rs.cases[0].info["other_gpu_processes"] == [{"gpu": 0, "pid": 4242, "used_gib": 1.5}]
    assert any("4242" in w and "falsify timings" in w for w in rs.warnings)
    assert warned and "4242" in warned[0]


def test_the_server_a_case_measures_at_a_url_is_recorded_on_the_gpu_not_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVML is simulated: the process on the GPU is the server the case was pointed at (serve-bench --url)."""
    from llmbench.models.tokenizer import build_offline_tokenizer
    from llmbench.serving.fake_server import OWNER, FakeOptions, running

    UI, warned = _gpu_held_by_pid_4242(monkeypatch, 120.0)
    tok = build_offline_tokenizer(tmp_path / "tok", 512)
    with running(FakeOptions(model="tiny")) as url:
        suite = load_suite(str(write(tmp_path, f'[[case]]\nscenario = "serving"\nurl = "{url}"\nmodel = "tiny"\n'
                                               f'tokenizer = "{tok}"\ninput_len = 16\noutput_len = 4\n'
                                               'num_requests = 3\nconcurrency = 1\n')))
        path = run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="auto", gpus="0"), UI())
    (case,) = load(path).cases
    assert case.status == "ok", case.reason
    assert case.info["other_gpu_processes"] == [{"gpu": 0, "pid": 4242, "used_gib": 120.0}]
    assert case.info["served_by"] == OWNER
    assert not any("4242" in w for w in load(path).warnings) and not any("4242" in w for w in warned)
