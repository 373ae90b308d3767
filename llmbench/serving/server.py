"""A server process a case starts, waits for, and always stops: its own process group and log file,
readiness a 200 from /health or /v1/models, SIGTERM then SIGKILL to its group, and SIGTERM if its starter
dies first, so no server outlives its case. A suite-scoped server (`server_scope = "suite"`) is the
exception, kept for later cases: docs/design.md, "The harness and the rules of measurement" (shared servers)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from llmbench.errors import UserError

READY_PATHS = ("/health", "/v1/models")  # any one answering 200 is ready, unless an engine names its own
SHARED_ENV = "LLMBENCH_SHARED_SERVERS"  # folder where a suite's shared servers are recorded
CASE_TOKEN_ENV = "LLMBENCH_CASE_TOKEN"  # marks a case process and its descendants (harness/isolation.py)
_PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")
_EXCEPTION = re.compile(r"\b[A-Z]\w*(Error|Exception): .*")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on `host` now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def fill(command: list[str], values: dict[str, str]) -> list[str]:
    """The command with {name} placeholders replaced; an unknown name is an error listing the known
    ones (other braces, such as a JSON argument, are left alone)."""

    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in values:
            raise UserError(f"server command: unknown placeholder {m.group(0)}; valid: "
                            + ", ".join("{" + k + "}" for k in sorted(values)))
        return values[m.group(1)]

    return [_PLACEHOLDER.sub(sub, arg) for arg in command]


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (prctl PR_SET_PDEATHSIG, Linux)."""
    with contextlib.suppress(OSError, AttributeError):  # no glibc prctl: the server outlives a killed parent
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)


class ServerProcess:
    """One server: start() it, wait_ready(), and stop() it (also as a context manager)."""

    def __init__(self, command: list[str], log_path: Path, env: dict[str, str] | None = None,
                 detach: bool = False, ready_paths: tuple[str, ...] = READY_PATHS) -> None:
        self.command = command
        self.log_path = log_path
        self.env = env
        self.detach = detach  # outlives the process that starts it (a server shared by a suite's cases)
        self.ready_paths = ready_paths  # a 200 on one of these: ready for the load
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = self.env
        if self.detach:  # unmarked: the end of the case that starts it does not stop it
            env = {k: v for k, v in (os.environ if env is None else env).items() if k != CASE_TOKEN_ENV}
        with self.log_path.open("wb") as log:
            try:
                self.proc = subprocess.Popen(
                    self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=env, start_new_session=True, preexec_fn=None if self.detach else _die_with_parent,
                )
            except OSError as e:
                raise RuntimeError(f"cannot start the server command {self.command[0]!r}: {e.strerror}") from None

    def wait_ready(self, base_url: str, timeout_s: float) -> float:
        """Poll until the server answers 200 on one of its ready paths; the seconds it took. A server
        that exits, or is not ready within `timeout_s`, is an error with the end of its log."""
        assert self.proc is not None
        t0 = time.monotonic()
        while True:
            code = self.proc.poll()
            if code is not None:
                raise RuntimeError(f"the server exited with code {code} before it answered on {base_url}: "
                                   f"{self.last_line()}\n{self.log_tail()}")
            if answers(base_url, self.ready_paths):
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout_s:
                raise RuntimeError(f"the server did not answer on {base_url} within {timeout_s:g} s: "
                                   f"{self.last_line()}\n{self.log_tail()}")
            time.sleep(0.5)

    def stop(self, grace_s: float = 20.0) -> int | None:
        """SIGTERM the server (it shuts its own workers down, as vLLM does), then SIGTERM and at last
        SIGKILL its process group for whatever is left; the server's exit code."""
        if self.proc is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            self.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace_s)
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=wait)
        return self.proc.returncode

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def last_line(self) -> str:
        """The line that says why the server failed: the first exception message of its log (the
        root cause, before the chain of errors it set off), else the log's last line."""
        try:
            lines = [ln.strip() for ln in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()]
        except OSError:
            lines = []
        cause = next((m.group(0) for ln in lines if (m := _EXCEPTION.search(ln))), None)
        return (cause or next((ln for ln in reversed(lines) if ln), "(the log is empty)"))[:300]

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While a server runs: SIGTERM (the harness ending a case) raises KeyboardInterrupt, so the
    `finally` that stops the server runs. Only in the main thread; elsewhere nothing changes."""
    try:
        old = signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def answers(url: str, paths: tuple[str, ...] = READY_PATHS) -> bool:
    """Whether a server at `url` answers 200 on one of `paths` now."""
    for path in paths:
        with contextlib.suppress(OSError, urllib.error.URLError), urllib.request.urlopen(url + path, timeout=2) as r:
            if r.status == 200:
                return True
    return False


def _stop_group(pid: int) -> None:
    """SIGTERM, then SIGKILL, to a detached server's process group (it is not our child)."""
    for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.2)


def shared_server(folder: Path, key: str, start: ServerProcess, url: str, ready_timeout_s: float
                  ) -> tuple[str, dict[str, object]]:
    """The URL of the suite's server for `key` on this case's GPUs: the one an earlier case left
    running, or `start` started now (detached) and recorded, after stopping a server of another key
    on the same GPUs. Also what to record in the case (reused or not, its log, its readiness time)."""
    slot = re.sub(r"[^\w.-]", "_", os.environ.get("CUDA_VISIBLE_DEVICES", "all")) or "all"
    record = folder / f"server-{slot}.json"
    old = json.loads(record.read_text()) if record.is_file() else None
    if old and old["key"] == key and answers(old["url"]):
        return old["url"], {"server_reused": True, "server_log": old["log"]}
    if old:
        _stop_group(int(old["pid"]))
        record.unlink(missing_ok=True)
    start.start()
    try:
        ready = start.wait_ready(url, ready_timeout_s)
    except BaseException:  # not ready (or interrupted): stop what was started, then raise on
        start.stop()
        raise
    assert start.proc is not None
    tmp = record.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "pid": start.proc.pid, "url": url, "log": str(start.log_path)}))
    tmp.replace(record)
    return url, {"server_reused": False, "server_ready_s": round(ready, 2), "server_log": str(start.log_path)}


def shared_server_groups(folder: Path | None) -> set[int]:
    """The process groups of the servers recorded in `folder`: the suite's own processes on its GPUs
    (a TP server's workers, a data-parallel server's engine copies), not foreign ones."""
    groups: set[int] = set()
    for record in sorted(folder.glob("server-*.json")) if folder is not None and folder.is_dir() else []:
        with contextlib.suppress(OSError, ValueError, KeyError):
            groups.add(int(json.loads(record.read_text())["pid"]))
    return groups


def stop_shared_servers(folder: Path) -> int:
    """Stop every server recorded in `folder` (the end of a suite); how many were stopped."""
    groups = shared_server_groups(folder)
    for pid in groups:
        with contextlib.suppress(OSError):
            _stop_group(pid)
    for record in folder.glob("server-*.json") if folder.is_dir() else []:
        record.unlink(missing_ok=True)
    return len(groups)
