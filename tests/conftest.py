from __future__ import annotations

import os
from pathlib import Path

import pytest

from llmbench.registry import PLUGINS_ENV

ROOT = Path(__file__).resolve().parent.parent
FAULT_PLUGIN = "tests.plugins.fault_scenarios"


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
