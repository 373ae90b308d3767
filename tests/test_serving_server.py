"""A server process a case starts: placeholders, readiness, a clear error when it dies or hangs,
and stopping the whole process group."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from llmbench.errors import UserError
from llmbench.serving.server import ServerProcess, fill, free_port
from tests.conftest import wait_for, wait_gone


def test_placeholders_are_filled_and_json_braces_left_alone() -> None:
    cmd = fill(["{python}", "--port", "{port}", "--cfg", '{"level": 3}', "x{port}y"], {"python": "py", "port": "8"})
    assert cmd == ["py", "--port", "8", "--cfg", '{"level": 3}', "x8y"]
    with pytest.raises(UserError, match=r"unknown placeholder \{prot\}; valid: \{port\}, \{python\}"):
        fill(["{prot}"], {"python": "py", "port": "8"})




@pytest.mark.slow
def test_a_server_is_started_waited_for_and_stopped(tmp_path: Path) -> None:
    port = free_port()
    server = ServerProcess([sys.executable, "-m", "llmbench.serving.fake_server", "--port", str(port)],
                           tmp_path / "log" / "server.log")
    with server:
        ready = server.wait_ready(f"http://127.0.0.1:{port}", timeout_s=60)
        assert ready >= 0
        assert server.proc is not None and server.proc.poll() is None
    assert server.proc.poll() is not None
    assert (tmp_path / "log" / "server.log").exists()


@pytest.mark.slow
def test_a_server_that_exits_is_a_clear_error_with_its_log(tmp_path: Path) -> None:
    server = ServerProcess([sys.executable, "-c", "print('boom: no such model', flush=True); raise SystemExit(3)"],
                           tmp_path / "server.log")
    with server, pytest.raises(RuntimeError, match=r"exited with code 3 before it answered on http://127\.0\.0\.1:9:"
                                                   r" boom: no such model"):
        server.wait_ready("http://127.0.0.1:9", timeout_s=60)


@pytest.mark.slow
def test_a_server_that_never_answers_times_out_and_its_whole_group_is_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = ("import subprocess, sys, time; "
              "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
              f"open({str(pid_file)!r}, 'w').write(str(c.pid)); print('loading', flush=True); time.sleep(60)")
    log = tmp_path / "server.log"
    server = ServerProcess([sys.executable, "-c", script], log)
    with server, pytest.raises(RuntimeError, match=r"did not answer on http://127\.0\.0\.1:9 within 1 s: loading"):
        # its 1 s counts from when it is loading (its child started), however long Python took to start
        wait_for("the server loading", lambda: pid_file.exists() and "loading" in log.read_text())
        server.wait_ready("http://127.0.0.1:9", timeout_s=1)
    child = int(pid_file.read_text())
    assert wait_gone([child])


@pytest.mark.slow
def test_the_reason_is_the_root_cause_not_the_last_error(tmp_path: Path) -> None:
    script = ("print('INFO loading'); print('ERROR [worker] ValueError: not enough memory for the KV cache'); "
              "print('RuntimeError: Engine core initialization failed. See root cause above.'); raise SystemExit(1)")
    server = ServerProcess([sys.executable, "-c", script], tmp_path / "server.log")
    with server, pytest.raises(RuntimeError, match=r"exited with code 1 .*: ValueError: not enough memory"):
        server.wait_ready("http://127.0.0.1:9", timeout_s=60)


def test_a_shared_servers_own_gpu_processes_are_not_foreign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A TP or data-parallel server leaves worker processes on the GPUs between the suite's cases: they are
    the suite's own (the server's process group), not a foreign process falsifying the next case."""
    import json
    import os
    import subprocess

    from llmbench.harness import runner
    from llmbench.serving.server import shared_server_groups

    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        (tmp_path / "server-0_1.json").write_text(json.dumps({"key": "k", "pid": worker.pid, "url": "u", "log": "l"}))
        monkeypatch.setattr(runner.nvml, "handles", lambda: ["gpu0"])
        monkeypatch.setattr(runner.nvml, "compute_processes",
                            lambda h: [{"pid": worker.pid, "used_gib": 60.0}, {"pid": os.getpid(), "used_gib": 1.0}])
        assert shared_server_groups(tmp_path) == {worker.pid}
        assert [p["pid"] for p in runner.foreign_gpu_processes("0")] == [worker.pid, os.getpid()]
        assert [p["pid"] for p in runner.foreign_gpu_processes("0", shared_server_groups(tmp_path))] == [os.getpid()]
    finally:
        worker.kill()
        worker.wait()
