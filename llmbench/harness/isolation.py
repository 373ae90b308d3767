"""One subprocess per case: a crash, a CUDA error, an out-of-memory or a hang becomes that case's
status, and the suite goes on. GPU memory is clean for every case because the process is new.

Nothing a case starts outlives it: each case process gets a marker of its own (CASE_TOKEN_ENV) that
its descendants inherit, and when it ends (ok, failed, timed out, interrupted) the runner stops every
process still carrying it, also those that left its process group (setsid, a double fork, torchrun's
ranks); a suite's shared server is started without it (serving/server.py). A case process whose
runner dies (kill -9) stops itself, its group and what carries its marker (`watch_runner`)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from llmbench.errors import UserError, choices_hint
from llmbench.hardware import nvml
from llmbench.hardware.cpus import CPUS_ENV
from llmbench.measure import compile_cache, progress
from llmbench.measure.quiet import CASE_ENV, QUIET_ENV, TIMING_MARK_ENV
from llmbench.serving.server import CASE_TOKEN_ENV, SHARED_ENV, stop_shared_servers

STDERR_TAIL = 4000
COMPILE_TMP = "compile"  # the run's compile-cache folder kind
RANKS_TMP = "ranks"  # a case's rank launch folder kind (harness/launchers/torchrun.py; the pid is the case process's)
TMP_KINDS = ("case", "env", COMPILE_TMP, RANKS_TMP)  # the temporary folders a run makes (llmbench-<kind>-<pid>-...)
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_LIVE: dict[subprocess.Popen[str], str] = {}  # case processes now running (several in a parallel run): marker
_LIVE_LOCK = threading.Lock()
RUNNER_PID_ENV = "LLMBENCH_RUNNER_PID"  # the runner a case process stops with (watch_runner)
WATCH_STEP_S = 0.5  # how often a case process looks whether its runner is still there
STOP_GRACE_S = 3.0  # SIGTERM to SIGKILL, for a case's leftover processes
SESSION_CLOSE_S = 60.0  # a share group's time to close its sessions after its last case, then it is stopped
_OOM_TEXT = re.compile(r"out of memory|can(no|')t allocate memory|\bMemoryError\b", re.IGNORECASE)


@dataclass
class ChildOutcome:
    status: str
    reason: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    traceback: str | None = None
    duration_s: float = 0.0
    timing_began: bool | None = None  # its first timed window opened (quiet.TIMING_MARK_ENV); None: not known
    wrote_result: bool = False  # the case process wrote its outcome (else its status is read from how it ended)


GPU_SELECTION = re.compile(r"^(\d+(,\d+)*|((MIG|GPU)-[0-9A-Za-z/-]+)(,(MIG|GPU)-[0-9A-Za-z/-]+)*)$")


def check_gpus(gpus: str) -> str:
    """A --gpus value: device indices ('0' or '0,1') or GPU/MIG UUIDs, as CUDA_VISIBLE_DEVICES takes."""
    if not GPU_SELECTION.match(gpus.replace(" ", "")):
        raise UserError(f"--gpus {gpus!r}: give device indices (0 or 0,1) or UUIDs (GPU-<uuid>, MIG-<uuid>)")
    return gpus.replace(" ", "")


def check_gpu_count(gpus: str | None, cpu: bool, count: int) -> None:
    """--gpus against the GPUs this machine has (`count`, from NVML): an index that does not exist
    would leave the case processes on the CPU, or on no device, without saying so. With --cpu the GPU
    selection does not matter."""
    if gpus is None or cpu:
        return
    gpus = check_gpus(gpus)
    if count == 0:
        raise UserError(f"--gpus {gpus}: this machine has no NVIDIA GPU (NVML finds none); "
                        "leave --gpus out, or run on the CPU with --cpu")
    bad = [i for i in gpus.split(",") if i.isdigit() and int(i) >= count]
    if bad:
        raise UserError(f"--gpus {gpus}: GPU index {bad[0]} does not exist; this machine has {count} GPU(s), "
                        f"{choices_hint(bad[0], range(count), 'valid indices')}")


def _tmp_prefix(kind: str = "case") -> str:
    """Temporary folders carry the runner's pid, so a later run can remove those of a killed one."""
    return f"llmbench-{kind}-{os.getpid()}-"


def rank_tmp_prefix() -> str:
    """The folder prefix of a case's rank launch (spec and rank files), swept like the others."""
    return _tmp_prefix(RANKS_TMP)


def sweep_stale_tmp(root: str | None = None) -> int:
    """Remove llmbench-{case,env,compile}-<pid>-* folders whose runner process is gone (a
    kill -9 skips TemporaryDirectory's clean-up). Returns how many were removed."""
    import shutil

    removed = 0
    for d in Path(root or tempfile.gettempdir()).glob("llmbench-*-*-*"):
        parts = d.name.split("-")
        if len(parts) < 4 or parts[1] not in TMP_KINDS or not parts[2].isdigit() or not d.is_dir():
            continue
        if nvml.pid_alive(int(parts[2])):
            continue
        stop_shared_servers(d)  # a server a killed run's cases shared (detached, so it outlived them)
        shutil.rmtree(d, ignore_errors=True)
        removed += 1
    return removed


def child_env(gpus: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a case process: GPU selection is set here, before torch is imported there.
    CUDA_DEVICE_ORDER=PCI_BUS_ID makes CUDA's indices the same as nvidia-smi's and NVML's."""
    env = dict(os.environ)
    for own in (CPUS_ENV, QUIET_ENV, CASE_ENV):  # set only where this run's slots say (GpuSlots.take), never
        env.pop(own, None)  # by inheritance
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    if gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = check_gpus(gpus)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_ROOT, env.get("PYTHONPATH")]))
    env.setdefault("PYTHONUNBUFFERED", "1")
    shared = run_compile_cache()
    if shared and compile_cache.ENV_DIR not in env:  # a user's own inductor cache folder is kept as it is
        env.update(compile_cache.cache_env(shared, env, engine_cache_dirs()))
    env.update(extra or {})
    return env


@functools.cache
def engine_cache_dirs() -> dict[str, str]:
    """The on-disk caches the engines declare (Engine.cache_dirs), for the run's compile cache folder."""
    from llmbench.engines.base import ENGINES

    return {var: sub for _, engine in ENGINES for var, sub in engine.cache_dirs.items()}


@functools.cache
def run_compile_cache() -> str | None:
    """The folder the case processes of this run (this llmbench process: every pass of --repeat) share
    for torch.compile's caches: LLMBENCH_COMPILE_CACHE if set to a folder, none if "off", else a
    temporary folder removed when the run ends (and by `sweep_stale_tmp` after a kill)."""
    import atexit
    import shutil

    setting = os.environ.get(compile_cache.USER_SETTING, "")
    if setting.lower() == "off":
        return None
    if setting:
        Path(setting).mkdir(parents=True, exist_ok=True)
        return setting
    folder = tempfile.mkdtemp(prefix=_tmp_prefix(COMPILE_TMP))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def says_out_of_memory(text: str) -> bool:
    """Whether an error text is an allocation failure: CUDA's "out of memory", torch's CPU allocator
    ("DefaultCPUAllocator: can't allocate memory"), ENOMEM, Python's MemoryError in a traceback."""
    return _OOM_TEXT.search(text) is not None


VMSTAT = Path("/proc/vmstat")  # the host's count of OOM kills: `oom_kill N` (Linux 4.13+)
CGROUP_ROOT = Path("/sys/fs/cgroup")
KERNEL_LOG = Path("/dev/kmsg")  # readable where dmesg is (root, or kernel.dmesg_restrict = 0)


@dataclass(frozen=True)
class OomCounts:
    """The kernel's counts of out-of-memory kills before a process ran: the host's (/proc/vmstat
    `oom_kill`) and this process's cgroup's (v2 memory.events `oom_kill`, v1 memory.oom_control), which
    count the kills in the cgroups below it too (a case process is in the runner's). None: unreadable."""

    host: int | None = None
    cgroup: int | None = None
    since_us: int = 0  # when they were read, on the kernel log's clock (CLOCK_MONOTONIC, microseconds)


def oom_counts() -> OomCounts:
    """The counts now (`OomCounts`), read before a process starts so that its SIGKILL can be told apart:
    the out-of-memory killer's raises a count, an operator's kill -9 does not."""
    return OomCounts(_count_in(VMSTAT, "oom_kill"), _cgroup_oom_kills(), time.monotonic_ns() // 1000)


def _count_in(path: Path, key: str) -> int | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return None


def _cgroup_oom_kills(proc_cgroup: Path = Path("/proc/self/cgroup")) -> int | None:
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, controllers, rel = ([*line.split(":", 2), "", ""])[:3]
        if hierarchy == "0" and not controllers:  # cgroup v2
            got = _count_in(CGROUP_ROOT / rel.lstrip("/") / "memory.events", "oom_kill")
        elif "memory" in controllers.split(","):  # cgroup v1
            got = _count_in(CGROUP_ROOT / "memory" / rel.lstrip("/") / "memory.oom_control", "oom_kill")
        else:
            continue
        if got is not None:
            return got
    return None


def _kernel_log_names(pid: int, since_us: int) -> bool | None:
    """Whether the kernel log says the out-of-memory killer killed `pid` ("Killed process <pid>") in a
    record stamped after `since_us` (an older one is of another process that had the pid); None where
    the log cannot be read. Read without blocking, up to its end."""
    try:
        fd = os.open(KERNEL_LOG, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    needle = re.compile(rf"Killed process {pid}\b|oom-kill:.*\bpid={pid}\b")
    try:
        for _ in range(1_000_000):  # one record a read; the log's ring buffer bounds it
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:  # the end of the log
                break
            except BrokenPipeError:  # a record overwritten while it was read: go on with the next
                continue
            except OSError:
                return None
            if not record:
                break
            head, _, message = record.decode("utf-8", "replace").partition(";")
            fields = head.split(",")  # priority, sequence, microseconds since boot, flags
            stamp = int(fields[2]) if len(fields) > 2 and fields[2].isdigit() else 0
            if stamp >= since_us and needle.search(message):
                return True
        return False
    finally:
        os.close(fd)


def oom_evidence(since: OomCounts | None, pid: int | None = None) -> str | None:
    """What says the out-of-memory killer sent a SIGKILL that ended `pid` since `since` was read: the
    kernel log naming the pid, the cgroup's or the host's OOM-kill count risen; None where nothing does."""
    if since is None:
        return None
    if pid is not None and _kernel_log_names(pid, since.since_us):
        return f"the kernel log says it killed pid {pid}"
    now = oom_counts()
    if since.cgroup is not None and now.cgroup is not None and now.cgroup > since.cgroup:
        return f"the cgroup's memory.events counted {now.cgroup - since.cgroup} OOM kill(s) meanwhile"
    if since.host is not None and now.host is not None and now.host > since.host:
        return f"the host's /proc/vmstat counted {now.host - since.host} OOM kill(s) meanwhile"
    return None


def sigkill_outcome(what: str, since: OomCounts | None, pid: int | None = None) -> tuple[str, str]:
    """(status, reason) for `what` ("the case process", "rank 1 of 2") ended by SIGKILL: `oom` where the
    kernel log or an OOM-kill count says the out-of-memory killer sent it, else `killed` (an operator's
    kill -9, a supervisor's), saying what was looked at."""
    evidence = oom_evidence(since, pid)
    if evidence:
        return "oom", f"{what} was killed by the host's out-of-memory killer ({evidence})"
    readable = since is not None and (since.host is not None or since.cgroup is not None)
    why = ("no OOM kill was counted meanwhile (cgroup memory.events, /proc/vmstat): not the out-of-memory killer"
           if readable else "the kernel's OOM-kill counts could not be read, so whether it was the out-of-memory "
           "killer is not known")
    return "killed", f"{what} was killed by SIGKILL from outside (a kill -9, a supervisor): {why}"


def marked_pids(token: str, var: str = CASE_TOKEN_ENV) -> list[int]:
    """The processes (this one aside) whose environment carries `var`=token (CASE_TOKEN_ENV: a case
    process and its descendants; a launch's own marker: its ranks), wherever their process group or
    session. Read from /proc/<pid>/environ, the environment each was started with, so Linux only:
    elsewhere none are found and only the process group is stopped. A process that drops the variable
    from its children's environment hides them."""
    root = Path("/proc")
    if not token or not root.is_dir():
        return []
    needle, me, found = f"{var}={token}".encode(), os.getpid(), []
    for d in root.iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            environ = (d / "environ").read_bytes()
        except OSError:  # gone meanwhile, or another user's
            continue
        if needle in environ.split(b"\0"):
            found.append(int(d.name))
    return found


def stop_marked(token: str, grace_s: float = STOP_GRACE_S, var: str = CASE_TOKEN_ENV) -> list[int]:
    """SIGTERM every process marked with `token` in `var` (`marked_pids`), then SIGKILL those still there after
    `grace_s`; the pids found. What a case leaves behind when it ends: a child in a session of its
    own escapes the process-group kill."""
    found = pids = marked_pids(token, var)
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            time.sleep(0.1)
            pids = marked_pids(token, var)  # by marker, not pid: a reused pid is never signalled
        if not pids:
            break
    return found


def watch_runner() -> None:
    """In a case process: a thread that, once the runner that started it (RUNNER_PID_ENV) is gone,
    stops every process carrying this case's marker, the suite's shared servers and this process group,
    this process last. A thread that polls, not a parent-death signal: PR_SET_PDEATHSIG fires when the
    *thread* that forked exits (a parallel run starts cases from threads), and its signal ends only this
    process, not the group nor the processes that left it."""
    runner = os.environ.get(RUNNER_PID_ENV, "")
    if runner.isdigit():
        threading.Thread(target=_stop_without_runner, args=(int(runner),), daemon=True, name="runner-watch").start()


def _stop_without_runner(runner: int) -> None:
    parent = os.getppid()  # the runner, unless it is gone already (or started us through a wrapper)
    while os.getppid() == parent and (parent == runner or nvml.pid_alive(runner)):
        time.sleep(WATCH_STEP_S)
    stop_marked(os.environ.get(CASE_TOKEN_ENV, ""))
    if os.environ.get(SHARED_ENV):  # the suite ended with its runner: so do the servers its cases shared
        stop_shared_servers(Path(os.environ[SHARED_ENV]))
    os.killpg(os.getpgrp(), signal.SIGKILL)


def signal_name(code: int) -> str:
    """The name of the signal that ended a child (`code`: its negative return code)."""
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


WAIT_STEP_S = 0.5  # how often a wait with `on_wait` looks at what the child wrote


def run_child(
    args: list[str],
    env: dict[str, str],
    timeout_s: float,
    on_progress: Callable[[float, str], None] | None = None,
    on_wait: Callable[[], bool] | None = None,
    pid_out: list[int] | None = None,
) -> tuple[int | None, str, float]:
    """Run `python -m llmbench.harness.worker *args` in its own process group. Returns the exit code
    (None on timeout, or where `on_wait` asked for the kill), the stderr tail, and the wall time.
    Progress lines on stdout are forwarded. `on_wait` is called every WAIT_STEP_S from this thread
    while the child runs; it returns True to have the child killed. However it ends, what it started
    is stopped with it (its process group, and what carries its marker: `stop_marked`). `pid_out`
    gets the child's pid."""
    token = uuid.uuid4().hex
    env = {**env, CASE_TOKEN_ENV: token, RUNNER_PID_ENV: str(os.getpid())}
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "llmbench.harness.worker", *args],
            stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, env=env,
            text=True, errors="replace", start_new_session=True,
        )
        if pid_out is not None:
            pid_out.append(proc.pid)
        with _LIVE_LOCK:
            _LIVE[proc] = token
        other_lines: deque[str] = deque(maxlen=40)
        reader = threading.Thread(target=_read_stdout, args=(proc, on_progress, other_lines), daemon=True)
        reader.start()
        try:
            code: int | None = _wait(proc, timeout_s, on_wait)
        except BaseException:  # an interrupt: the case's process group dies with it; raised on
            _kill_group(proc)
            raise
        finally:
            if proc.poll() is None:
                _kill_group(proc)
            stop_marked(token)  # children that left the group (setsid, double fork) or outlived its leader
            with _LIVE_LOCK:
                _LIVE.pop(proc, None)
            reader.join(timeout=5)
        elapsed = time.perf_counter() - t0
        err.seek(0)
        tail = err.read()[-STDERR_TAIL:]
    if other_lines:
        tail = ("[stdout]\n" + "\n".join(other_lines) + "\n[stderr]\n" + tail)[-STDERR_TAIL:]
    return code, tail, elapsed


def _wait(proc: subprocess.Popen[str], timeout_s: float, on_wait: Callable[[], bool] | None) -> int | None:
    """The child's exit code; None when the timeout passed or `on_wait` asked to stop it."""
    if on_wait is None:
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None
    deadline = time.perf_counter() + timeout_s
    while True:
        try:
            return proc.wait(timeout=max(0.0, min(WAIT_STEP_S, deadline - time.perf_counter())))
        except subprocess.TimeoutExpired:
            if on_wait() or time.perf_counter() >= deadline:
                return None


def _read_stdout(proc: subprocess.Popen[str], on_progress: Any, other: deque[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(progress.PROGRESS_MARK):
            update = progress.parse(line)
            if on_progress is not None and update is not None:
                on_progress(*update)
        elif line.strip():
            other.append(line.rstrip())


def kill_running() -> None:
    """Stop every case process still running, with its process group and what carries its marker. A
    parallel run waits on its case processes in threads, which an interrupt (Ctrl-C, SIGTERM) does not
    reach (and which end with the run, before their own clean-up): the main thread calls this before it
    lets the interrupt end the run."""
    with _LIVE_LOCK:
        procs = dict(_LIVE)
    for proc in procs:  # all at once first, then each waited for
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
    for proc, token in procs.items():
        _kill_group(proc)
        stop_marked(token)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the case's process group, then SIGKILL what is left (compile workers included)."""
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run_case_process(
    spec: dict[str, Any],
    env: dict[str, str],
    timeout_s: float,
    on_progress: Callable[[float, str], None] | None = None,
) -> ChildOutcome:
    """Run one case in a fresh process and turn whatever happened into a status."""
    with tempfile.TemporaryDirectory(prefix=_tmp_prefix("case")) as tmp:
        spec_path, out_path, mark = Path(tmp, "spec.json"), Path(tmp, "out.json"), Path(tmp, "timing-began")
        spec_path.write_text(json.dumps(spec))
        since = oom_counts()  # the OOM-kill counts before: a SIGKILL later is told apart by them
        pid: list[int] = []
        code, tail, elapsed = run_child(["case", str(spec_path), str(out_path)], {**env, TIMING_MARK_ENV: str(mark)},
                                        timeout_s, on_progress, pid_out=pid)
        payload = json.loads(out_path.read_text()) if out_path.exists() else None
        began = mark.exists()
    if code is None:
        return ChildOutcome("timeout", f"the case did not finish within its timeout of {timeout_s:g}s and was killed",
                            traceback=tail or None, duration_s=elapsed, timing_began=began)
    if payload is not None:
        return replace(_payload_outcome(payload, elapsed), timing_began=began)
    return replace(_exit_outcome(code, tail, elapsed, since, pid[0] if pid else None), timing_began=began)


def died_in_startup(out: ChildOutcome) -> bool:
    """A case process that ended without a result (no outcome written: a crash, a kill, an exit) before
    its first timed window opened: the machine's failure, not the measurement's, so worth one more start.
    Known only where the launcher saw the timing mark (`timing_began` False); a timeout is no such end."""
    return out.timing_began is False and not out.wrote_result and out.status != "timeout"


def _payload_outcome(payload: dict[str, Any], elapsed: float) -> ChildOutcome:
    return ChildOutcome(payload.pop("status"), payload.pop("reason", None), payload, payload.pop("traceback", None),
                        elapsed, wrote_result=True)


def run_group_process(
    specs: list[dict[str, Any]],
    env: dict[str, str],
    on_outcome: Callable[[int, ChildOutcome], None],
    on_progress: Callable[[float, str], None] | None = None,
    on_warn: Callable[[str], None] | None = None,
) -> list[ChildOutcome]:
    """Run a share group's cases in one fresh process (worker `group`), one after another. Each case's
    outcome is handed to `on_outcome(i, outcome)` from this thread as soon as its file appears, with
    the wall time since the previous one's (the first's includes the process start and the load); on
    an interrupt, the cases whose files are there are handed over before it goes on. A case that runs
    past its own `settings.timeout_s` is killed with the process; so is a group whose sessions do not
    close within SESSION_CLOSE_S of its last case (`on_warn` says so; its cases stay). Returns the outcomes
    in order, up to the first that did not end ok or skipped; where the process ended before writing
    a case's outcome (a crash, a kill, a timeout), that case's outcome says how, as a lone case's
    would, and the cases after it have none (the runner runs them alone)."""
    outcomes: list[ChildOutcome] = []
    timeouts = [float(sp.get("settings", {}).get("timeout_s") or 600.0) for sp in specs]
    with tempfile.TemporaryDirectory(prefix=_tmp_prefix("case")) as tmp:
        specs_path, out_dir = Path(tmp, "specs.json"), Path(tmp, "out")
        out_dir.mkdir()
        specs_path.write_text(json.dumps(specs))
        mark = time.time()  # wall clock: the case process stamps each case's end on it (same machine)
        killed_at: list[int] = []
        closing: list[float] = []  # the process was stopped while it closed its sessions (after this long)

        def collect() -> bool:
            nonlocal mark
            while len(outcomes) < len(specs):
                path = out_dir / f"{len(outcomes)}.json"
                if not path.exists():
                    break
                payload = json.loads(path.read_text())
                ended = float(payload.pop("ended_unix", time.time()))
                outcome = _payload_outcome(payload, max(ended - mark, 0.0))
                mark = ended
                outcomes.append(outcome)
                on_outcome(len(outcomes) - 1, outcome)
                if outcome.status not in ("ok", "skipped"):
                    return False
            i, waited = len(outcomes), time.time() - mark
            if i == len(specs) or (outcomes and outcomes[-1].status not in ("ok", "skipped")):
                if waited > SESSION_CLOSE_S:  # no case left to run: the process is closing its sessions
                    closing.append(waited)
                    return True
            elif waited > timeouts[i]:
                killed_at.append(i)
                return True
            return False

        since = oom_counts()
        pid: list[int] = []
        try:
            code, tail, _ = run_child(["group", str(specs_path), str(out_dir)], env,
                                      sum(timeouts) + SESSION_CLOSE_S, on_progress, on_wait=collect, pid_out=pid)
        except BaseException:  # an interrupt: the cases the process finished are recorded before it ends the run
            collect()
            raise
        collect()  # what the process wrote as it ended
    i = len(outcomes)
    if closing and on_warn is not None:
        on_warn(f"the share group's session did not close within {SESSION_CLOSE_S:g}s of its last case and was "
                f"stopped; its {i} case(s) that ended are recorded")
    if i == len(specs) or (outcomes and outcomes[-1].status not in ("ok", "skipped")):
        return outcomes
    elapsed = time.time() - mark
    if code is None:
        limit = timeouts[i] if killed_at else sum(timeouts) + SESSION_CLOSE_S
        lost = ChildOutcome("timeout", f"the case did not finish within its timeout of {limit:g}s and was killed "
                            "(with its share group's process)", traceback=tail or None, duration_s=elapsed)
    else:
        lost = _exit_outcome(code, tail, elapsed, since, pid[0] if pid else None)
    outcomes.append(lost)
    on_outcome(i, lost)
    return outcomes


def _exit_outcome(code: int, tail: str, elapsed: float, since: OomCounts | None = None,
                  pid: int | None = None) -> ChildOutcome:
    """A case process that ended without writing an outcome, from its exit code and stderr tail. A SIGKILL
    is `oom` where the kernel says its out-of-memory killer sent it (`sigkill_outcome`: the OOM-kill
    counts read before it started, `since`), else `killed`."""
    if code < 0:
        name = signal_name(code)
        if name == "SIGKILL":
            status, reason = sigkill_outcome("the case process", since, pid)
            return ChildOutcome(status, reason, traceback=tail or None, duration_s=elapsed)
        return ChildOutcome("failed", f"the case process died with {name}", traceback=tail or None, duration_s=elapsed)
    if says_out_of_memory(tail):
        return ChildOutcome("oom", f"the case process ran out of memory (exit code {code})", traceback=tail,
                            duration_s=elapsed)
    return ChildOutcome("failed", f"the case process exited with code {code} without a result",
                        traceback=tail or None, duration_s=elapsed)


def fingerprint(env: dict[str, str], timeout_s: float = 180.0) -> dict[str, Any]:
    """The environment fingerprint as a case process sees it (same GPU selection)."""
    with tempfile.TemporaryDirectory(prefix=_tmp_prefix("env")) as tmp:
        out = Path(tmp, "env.json")
        code, tail, _ = run_child(["fingerprint", str(out)], env, timeout_s)
        if code != 0 or not out.exists():
            raise RuntimeError(f"could not read the environment (exit code {code}):\n{tail}")
        return dict(json.loads(out.read_text()))
