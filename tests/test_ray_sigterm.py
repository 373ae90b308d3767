"""SIGTERM to `llmbench run --launcher ray` (a pre-empted machine, `timeout`) is an interrupt as in a
local run: the finished cases kept, one "interrupted" line, exit code 130. Ray's local cluster, started
by the run, installs a SIGTERM handler of its own (it stops its processes and exits 1, with a stack
dump); the run puts llmbench's back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmbench.results import load
from tests.conftest import ROOT, write
from tests.test_ray import FAST, _require_ray, case_pids, wait_for


@pytest.mark.ray
@pytest.mark.slow
def test_sigterm_under_the_ray_launcher_is_an_interrupt_exit_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 fault_plugin: str) -> None:
    _require_ray()
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("LLMBENCH_TEST_PID_DIR", str(pids))
    path = write(tmp_path, f'name = "termed"\n{FAST}[[case]]\nscenario = "fault"\nkind = "ok"\n'
                 '[[case]]\nscenario = "fault"\nkind = "sleep"\nseconds = 300\n', "termed.toml")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "llmbench", "run", str(path), "--launcher", "ray", "--cpu",
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env=dict(os.environ))
    try:
        case = wait_for(pids, ".pid", seconds=240)  # the local cluster is up and the sleeping case started
        os.kill(proc.pid, signal.SIGTERM)  # the runner alone, as a pre-emption notice sends it
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    (kept,) = out.rglob("termed-*.json")
    assert [c.status for c in load(kept).cases] == ["ok"]  # what finished is kept, the cut case is not
    deadline = time.monotonic() + 30
    while case in case_pids(pids) and os.path.exists(f"/proc/{case}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not os.path.exists(f"/proc/{case}"), "the case process outlived the interrupted run"
