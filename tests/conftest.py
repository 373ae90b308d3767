from __future__ import annotations

import copy
import fnmatch
import functools
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from llmbench.registry import PLUGINS_ENV

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
FAULT_PLUGIN = "tests.plugins.fault_scenarios"
# pytest-xdist's workers start with COLUMNS=80, and rich takes a COLUMNS it finds when a console is made
# as that console's fixed width: the commands' console would ignore a test's own COLUMNS.
os.environ.pop("COLUMNS", None)


@pytest.fixture
def fault_plugin(monkeypatch: pytest.MonkeyPatch) -> str:
    """Registers the test-only `fault` scenario here and in every case process."""
    monkeypatch.setenv(PLUGINS_ENV, FAULT_PLUGIN)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    from llmbench.scenarios.base import SCENARIOS

    SCENARIOS._loaded = False  # pick the plugin up in this process too
    import importlib

    importlib.import_module(FAULT_PLUGIN)
    return FAULT_PLUGIN


@pytest.fixture(autouse=True)
def _in_its_xdist_group(request: pytest.FixtureRequest) -> None:
    """Under `--dist loadgroup` a test marked xdist_group has its group at the end of its id, which keeps the
    group in one worker; without it the group was spread over the workers like any other test (pytest 9.2
    with pytest-xdist 3.8 did so silently): such a test fails, naming both versions."""
    node = request.node
    if getattr(request.config.option, "loadgroup", False) and node.get_closest_marker("xdist_group") \
            and "@" not in node.nodeid:
        from importlib.metadata import version

        pytest.fail(f"--dist loadgroup did not keep this test's xdist_group together under pytest "
                    f"{version('pytest')} and pytest-xdist {version('pytest-xdist')}; pyproject.toml's dev extra "
                    "names the pytest that does", pytrace=False)


# Every run of a suite in a test's process (run_suite, the API, the CLI in-process) first starts a process that
# imports torch to read the environment (its `env` block): seconds each, for the same answer whenever the
# environment it is started with is the same. A pytest process keeps the answer per environment, keyed on
# every variable but these, which only tests set and the fingerprint never reads. The first run per environment
# in each pytest process, and every `llmbench` command run as a process of its own, still starts it.
_FINGERPRINT_IGNORES = frozenset({"PYTEST_CURRENT_TEST", "LLMBENCH_TEST_PID_DIR", "LLMBENCH_TEST_PROBE_DIR"})
_FINGERPRINTS: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}


@pytest.fixture(autouse=True)
def _one_fingerprint_per_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmbench.harness.launchers import local

    taken = local.fingerprint

    def fingerprint(env: dict[str, str]) -> dict[str, Any]:  # as IsolatedProcess.fingerprint calls it
        key = tuple(sorted((k, v) for k, v in env.items() if k not in _FINGERPRINT_IGNORES))
        if key not in _FINGERPRINTS:
            _FINGERPRINTS[key] = taken(env)
        return copy.deepcopy(_FINGERPRINTS[key])  # the runner fills in what it forces (--cpu) on its copy

    monkeypatch.setattr(local, "fingerprint", fingerprint)


def write(tmp_path: Path, text: str, name: str = "suite.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def alive(pid: int) -> bool:
    """Whether a process of this id exists (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# How long a test waits for something it expects to happen (a process to start, reach a phase or exit): long
# enough for a loaded two-core host, where starting Python and importing torch takes many seconds. A wait
# returns as soon as the thing happens, so a test is no slower for it; only a test that fails waits it out.
EVENT_S = 120.0
T = TypeVar("T")


def wait_gone(pids: list[int], seconds: float = EVENT_S) -> bool:
    """Whether every process of `pids` has exited within `seconds` (polled)."""
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(alive(p) for p in pids)


def wait_for(what: str, check: Callable[[], T], seconds: float = EVENT_S, step: float = 0.02) -> T:
    """`check()`'s first truthy answer, polled every `step` seconds; an AssertionError saying `what` did not
    happen when there is none within `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {seconds:g}s")
        time.sleep(step)


class Posted:
    """The results a parallel run's units have put in the runner's queue (the main thread records them from
    there), as they are put: what a test waits for instead of a sleep where it needs a result queued."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._changed = threading.Condition()

    def put(self, case_id: str) -> None:
        with self._changed:
            self.ids.append(case_id)
            self._changed.notify_all()

    def wait(self, case_ids: list[str], seconds: float = EVENT_S) -> bool:
        """Whether every one of `case_ids` has been put within `seconds`."""
        with self._changed:
            return self._changed.wait_for(lambda: set(case_ids) <= set(self.ids), timeout=seconds)


@pytest.fixture
def posted(monkeypatch: pytest.MonkeyPatch) -> Posted:
    """Hears each case result a parallel run's unit puts in the runner's queue (runner._Posted.done)."""
    from llmbench.harness import runner

    heard = Posted()
    done = runner._Posted.done

    def put(self: Any, case: Any, *args: Any, **kwargs: Any) -> None:
        done(self, case, *args, **kwargs)
        heard.put(case.id)

    monkeypatch.setattr(runner._Posted, "done", put)
    return heard


# The checkout's results/ holds the committed result sets and pages, and whatever a user ran there besides
# (`nox -s scenario` writes results/cpu-<arch>/quickstart-*.json, which .gitignore keeps out of git). A test
# over the committed tree reads only what git tracks, through these two, whatever else lies in results/.
_UNTRACKED_RESULTS = "results/cpu-*/*.json"  # .gitignore's rule, for a tree that is not a git checkout


@functools.lru_cache
def _tracked_names(top: str) -> tuple[str, ...]:
    """`git ls-files` under `top`, once per test process."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", top], cwd=ROOT, capture_output=True, check=True,
                             timeout=60).stdout.decode()
        return tuple(n for n in out.split("\0") if n)
    except (OSError, subprocess.SubprocessError):
        return tuple(p.relative_to(ROOT).as_posix() for p in (ROOT / top).rglob("*") if p.is_file()
                     and not fnmatch.fnmatch(p.relative_to(ROOT).as_posix(), _UNTRACKED_RESULTS))


def tracked(top: str = "results", pattern: str = "*") -> list[Path]:
    """The files under ROOT/`top` that git tracks (and that exist), sorted, that `pattern` matches: a name
    (`*.json`) at any depth, as rglob reads it, or a path below `top` (`spread/h100-sxm-80gb/*.json`), as
    glob reads it. Outside a git checkout: the files there, less the ones .gitignore keeps out."""
    names = _tracked_names(top)
    want = pattern.split("/")

    def matches(rel: tuple[str, ...]) -> bool:
        if len(want) == 1:
            return fnmatch.fnmatchcase(rel[-1], pattern)
        return len(rel) == len(want) and all(map(fnmatch.fnmatchcase, rel, want))

    return sorted(ROOT / n for n in names if matches(Path(n).relative_to(top).parts) and (ROOT / n).is_file())


def is_tracked(path: Path) -> bool:
    """Whether git tracks this file of the checkout (and it exists); outside a git checkout, whether it exists."""
    path = path.resolve()
    return path.is_relative_to(ROOT) and path in set(tracked(path.parent.relative_to(ROOT).as_posix(), path.name))


@pytest.fixture(scope="session")
def committed_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout's results/ as committed (the files git tracks), for the commands and pages that
    read a whole tree: a `results` folder of a temporary directory, one per test process. Read it; do not
    write to it."""
    tree = tmp_path_factory.mktemp("committed") / "results"
    for src in tracked("results"):
        dst = tree / src.relative_to(RESULTS)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    return tree
