from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from llmbench.registry import PLUGINS_ENV

ROOT = Path(__file__).resolve().parent.parent
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


def wait_gone(pids: list[int], seconds: float = 10.0) -> bool:
    """Whether every process of `pids` has exited within `seconds` (polled)."""
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(alive(p) for p in pids)
