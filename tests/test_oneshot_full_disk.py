"""A oneshot whose bundle cannot be written (a full disk) ends with exit code 3 and one line naming the
result sets and the log it kept, not a traceback."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import pytest

from llmbench.api import session
from llmbench.harness.doctor import Check
from llmbench.results import load
from tests.conftest import write

SUITE = """
name = "tiny-full-disk"
[[case]]
scenario = "fault"
kind = "ok"
min_iters = 1
min_seconds = 0.0
"""


def _no_space(*args: object, **kwargs: object) -> Path:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.slow
def test_a_full_disk_at_the_bundle_is_exit_3_naming_what_was_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fault_plugin: str) -> None:
    from llmbench import cli

    monkeypatch.setattr(session, "run_checks", lambda gpus: [Check("torch", "ok", "planted")])
    monkeypatch.setattr("llmbench.bundle.write_new", _no_space)  # the bundle's write hits a full disk
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["llmbench", "oneshot", "--cpu", "--out", str(out), str(write(tmp_path, SUITE))])
    with pytest.raises(SystemExit) as ended:
        cli.main()
    assert ended.value.code == 3
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err  # one line, no traceback
    (kept,) = out.glob("*/tiny-full-disk-*.json")
    assert lines[0].startswith(f"error: cannot write the bundle in {out}: No space left on device")
    assert f"the result set(s) are kept: {kept}" in lines[0] and "the log: " in lines[0]
    assert "Traceback" not in err
    assert [c.status for c in load(kept).cases] == ["ok"]  # what was measured is there
    assert not list(out.glob("*.tar.gz")) and not list(out.glob(".*.tmp"))
