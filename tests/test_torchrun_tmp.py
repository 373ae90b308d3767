"""A torchrun launch leaves nothing in the system temp folder: torchrun's own log folder (by default a
torchelastic_* folder there, never removed) is inside the launch's folder, which goes with it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from llmbench.harness.launchers.torchrun import TORCHRUN_LOGS, Torchrun
from llmbench.harness.worker import run_case


def test_torchrun_logs_go_to_the_launchs_own_folder() -> None:
    cmd = Torchrun().command("m:f", 2, Path("/x/spec.json"), Path("/x"))
    assert f"--log-dir={Path('/x') / TORCHRUN_LOGS}" in cmd


@pytest.mark.slow
def test_a_rank_launch_leaves_no_torchelastic_folder_in_the_temp_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault_plugin: str) -> None:
    system_tmp = tmp_path / "tmp"
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))  # the torchrun agents' temp folder
    monkeypatch.setattr(tempfile, "tempdir", None)  # and this process's, read again from TMPDIR
    out = run_case({"scenario": "fault_ranks", "params": {"kind": "ok"}, "placement": {"gpus": 2},
                    "settings": {"timeout_s": 120, "min_iters": 1}, "device": "cpu"})
    assert out["status"] == "ok", out
    left = sorted(p.name for p in system_tmp.iterdir())
    assert not [n for n in left if n.startswith("torchelastic_")], left
    assert not [n for n in left if n.startswith("llmbench-")], left  # the launch's folder went too
