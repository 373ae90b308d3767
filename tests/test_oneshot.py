"""`llmbench oneshot` on the CPU: doctor first, the budget and the order, the bundle's contents,
resume from a bundle in another folder, and SIGTERM mid-run leaving a valid bundle."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from test_compare_support import h100_set
from typer.testing import CliRunner

from llmbench import api
from llmbench.api import session
from llmbench.bundle import read_bundle, write_bundle
from llmbench.commands import oneshot
from llmbench.errors import UserError
from llmbench.hardware import nvml
from llmbench.harness.doctor import Check
from tests.conftest import EVENT_S, ROOT, wait_for, write

pytestmark = pytest.mark.slow
runner = CliRunner()

# `seconds` of an "ok" case only sets its quote (estimate_s = seconds + 1): the third case is quoted
# far over any budget below an hour and runs in a second.
SUITE = """
name = "tiny-oneshot"
[defaults]
min_iters = 1
min_seconds = 0.0
[[case]]
scenario = "fault"
matrix.kind = ["ok", "env"]
[[case]]
scenario = "fault"
kind = "ok"
seconds = 3000.0
"""


def _oneshot(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llmbench", "oneshot", "--cpu", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def test_budget_leaves_cases_for_resume_and_resume_from_the_bundle_completes_one_set(
    tmp_path: Path, fault_plugin: str
) -> None:
    suite = write(tmp_path, SUITE)
    first = _oneshot(str(suite), "--out", str(tmp_path / "a"), "--budget", "10m")
    assert first.returncode == 0, first.stderr
    bundles = list((tmp_path / "a").glob("cpu-*.tar.gz"))
    assert len(bundles) == 1 and f"bundle: {bundles[0]}" in " ".join(first.stdout.split())
    assert "left of 10:00; quote " in first.stdout  # the time against the budget, at the suite's end
    b = read_bundle(bundles[0])
    (name, rs), = b.result_sets
    assert [c.params["kind"] for c in rs.cases] == ["ok", "env"]  # in suite order; the third deferred
    assert rs.finished_at is None
    assert {"report.html", "logs/part-1.log", "env/part-1/doctor.json", "env/part-1/pip-freeze.txt",
            "suites/tiny-oneshot.toml"} <= set(b.files)
    assert b.manifest["suites"] == ["tiny-oneshot"]
    assert b.manifest["parts"][0]["deferred"] == 1 and not b.manifest["parts"][0]["interrupted"]
    assert "deferred" in b.files["logs/part-1.log"].decode()

    second = _oneshot("--resume", str(bundles[0]), "--out", str(tmp_path / "b"), "--budget", "2h")
    assert second.returncode == 0, second.stderr
    final = read_bundle(next((tmp_path / "b").glob("cpu-*.tar.gz")))
    (name2, rs2), = final.result_sets
    assert Path(name2).name == Path(name).name  # the same result set, continued
    assert sorted(c.params.get("seconds") or 0 for c in rs2.cases) == [0, 0, 3000.0]
    assert {c.id: c.model_dump() for c in rs.cases}.items() <= {c.id: c.model_dump() for c in rs2.cases}.items()
    assert rs2.finished_at is not None
    assert len(final.manifest["parts"]) == 2
    assert {"logs/part-1.log", "logs/part-2.log", "env/part-2/doctor.json"} <= set(final.files)


SLOW = """
name = "slow-oneshot"
[defaults]
min_iters = 1
min_seconds = 0.0
[[case]]
scenario = "fault"
kind = "sleep"
matrix.seconds = [0.1, 60.0, 0.2]
"""


def test_sigterm_mid_run_writes_a_valid_bundle_of_what_finished(tmp_path: Path, fault_plugin: str) -> None:
    suite, out, pids = write(tmp_path, SLOW), tmp_path / "out", tmp_path / "pids"
    pids.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "llmbench", "oneshot", str(suite), "--cpu", "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "LLMBENCH_TEST_PID_DIR": str(pids)}, start_new_session=True)
    wait_for("the 60 s case running", lambda: any(f.read_text() == "60.0" for f in pids.glob("*.pid")))
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=EVENT_S)  # the 60 s case is not waited for: it is not in the set
    assert proc.returncode == 130, stderr
    b = read_bundle(next(out.glob("cpu-*.tar.gz")))
    (_, rs), = b.result_sets
    assert [c.params["seconds"] for c in rs.cases] == [0.1]
    assert b.manifest["parts"][-1]["interrupted"] is True
    assert "report.html" in b.files
    assert "--resume" in " ".join(stdout.split())



def test_an_interrupted_oneshot_gives_sigterm_back_as_it_found_it(tmp_path: Path, fault_plugin: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """While the bundle is written a second SIGTERM is ignored; after it, the caller's handler is back (an
    API caller, a notebook, a test process goes on)."""
    def interrupt(*args: object, **kwargs: object) -> None:
        assert signal.getsignal(signal.SIGTERM) is mine
        raise KeyboardInterrupt

    def mine(signum: int, frame: object) -> None:
        raise AssertionError("not reached")

    monkeypatch.setattr(session, "run_cases", interrupt)
    before = signal.signal(signal.SIGTERM, mine)
    try:
        result = session.oneshot([write(tmp_path, SUITE)], cpu=True, out=tmp_path / "out")
        assert result.interrupted and result.bundle.exists()
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()
    oneshot.register(a)
    a.command("noop")(lambda: None)  # a group, so the command is named as on the real CLI
    return a


def test_a_broken_stack_stops_before_anything_is_measured(app: typer.Typer, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "run_checks", lambda gpus: [
        Check("torch", "ok", "2.13.0"), Check("gpu matmul", "fail", "a 4096^3 bf16 matmul ran on cpu at 0 TFLOP/s")])
    res = runner.invoke(app, ["oneshot", "--cpu", "--out", str(tmp_path / "o")])
    assert res.exit_code == 1
    assert "the stack is broken" in res.output and "gpu matmul" in res.output
    assert not list((tmp_path / "o").glob("*.tar.gz"))


def test_torch_without_the_gpu_the_driver_sees_is_a_broken_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    checks = [Check("cuda", "warn", "no CUDA GPU visible to torch")]
    monkeypatch.setattr(nvml, "handles", lambda: [object()])
    assert "driver, CUDA and torch do not match" in (api.stack_problem(checks, cpu=False) or "")
    assert api.stack_problem(checks, cpu=True) is None


def test_resume_on_another_gpu_model_and_bad_budgets_are_refused(app: typer.Typer, tmp_path: Path) -> None:
    b = write_bundle(tmp_path / "h100.tar.gz", {"quickstart-1.json": h100_set()}, {}, {"suites": ["quickstart"]})
    res = runner.invoke(app, ["oneshot", "--cpu", "--resume", str(b), "--out", str(tmp_path / "o")])
    assert isinstance(res.exception, UserError)  # the CLI prints it on one line and exits 2
    assert "measured on h100-sxm-80gb" in str(res.exception)
    for bad in ("soon", "0", "5x"):
        res = runner.invoke(app, ["oneshot", "--cpu", "--budget", bad, "--out", str(tmp_path / "o")])
        assert isinstance(res.exception, UserError) and "--budget" in str(res.exception)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("text", "seconds"), [("45m", 2700), ("1h30m", 5400), ("90s", 90), ("900", 900),
                                                ("1.5h", 5400)])
def test_parse_budget(text: str, seconds: float) -> None:
    assert oneshot.parse_budget(text) == seconds


def test_dry_run_quotes_the_plan_and_writes_nothing(app: typer.Typer, tmp_path: Path) -> None:
    res = runner.invoke(app, ["oneshot", "--cpu", "--dry-run", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "25 case(s) to run" in text and "nothing was run" in text
    assert not (tmp_path / "o").exists()


def test_a_resumed_bundle_cannot_write_its_suite_files_outside_out(tmp_path: Path) -> None:
    """A suite name from the manifest becomes OUT/suites/<name>.toml; '/abs' would join to /abs.toml."""
    from llmbench.bundle import Bundle
    from llmbench.errors import UserError

    target = tmp_path / "elsewhere" / "evil"
    b = Bundle(tmp_path / "b.tar.gz", {"suites": [str(target)]}, [], {f"suites/{target}.toml": b"x = 1\n"})
    with pytest.raises(UserError, match="not a plain name"):
        api.bundled_suites(b, tmp_path / "out")
    assert not (tmp_path / "elsewhere").exists()
