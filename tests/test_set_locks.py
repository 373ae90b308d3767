"""A result set's lock file (results.set_lock): never opened through a planted symlink, and never left
behind, with the folders made for it, by a write or a correction that failed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.errors import UserError
from llmbench.hardware.fingerprint import cpu_slug
from llmbench.results import ResultSet, correct, load, save, save_merged, set_lock
from tests.conftest import write

SUITE = """
name = "sleeps"
[defaults]
min_iters = 1
min_seconds = 0.0
[[case]]
scenario = "fault"
kind = "sleep"
seconds = 0.0
"""


def _set(path: Path) -> Path:
    save(ResultSet(suite="sleeps", env={"gpu": {"slug": cpu_slug(), "count": 0}}), path)
    return path


@pytest.mark.parametrize("dangling", [True, False])
def test_a_planted_lock_symlink_is_refused_and_nothing_is_made_where_it_points(tmp_path: Path,
                                                                               dangling: bool) -> None:
    path = _set(tmp_path / "shared" / "sleeps-20260101T000000Z.json")
    target = tmp_path / "elsewhere" / "made-by-llmbench"
    if not dangling:
        target.parent.mkdir()
        target.write_text("kept")
    lock = path.parent / f".{path.name}.lock"
    lock.symlink_to(target)
    before = path.read_text()
    with pytest.raises(UserError) as got:
        save_merged(path, load(path), [])
    assert str(lock) in str(got.value) and "symlink" in str(got.value) and "\n" not in str(got.value)
    assert (target.read_text() == "kept") if not dangling else not target.parent.exists()
    assert lock.is_symlink() and path.read_text() == before


def test_a_lock_that_is_no_file_is_refused(tmp_path: Path) -> None:
    path = _set(tmp_path / "s.json")
    os.mkfifo(path.parent / f".{path.name}.lock")  # opened for writing, a FIFO would block a plain open
    with pytest.raises(UserError, match="not a plain file"):
        correct(path, "a: 1 -> 2", "why")
    assert load(path).corrections == []


@pytest.mark.slow
def test_run_resume_refuses_a_planted_lock_symlink_in_one_line(tmp_path: Path, fault_plugin: str) -> None:
    """The probe: --resume of a set whose lock is a planted symlink created an empty file at its target."""
    suite = write(tmp_path, SUITE)
    path = _set(tmp_path / "out" / cpu_slug() / "sleeps-20260101T000000Z.json")
    target = tmp_path / "root-only" / "created"
    target.parent.mkdir()
    (path.parent / f".{path.name}.lock").symlink_to(target)
    r = subprocess.run([sys.executable, "-m", "llmbench", "run", str(suite), "--out", str(tmp_path / "out"), "--cpu",
                        "--resume"], capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "300"})
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert f".{path.name}.lock" in line and "symlink" in line
    assert not target.exists() and load(path).cases == []  # nothing made there, nothing run


def test_a_correction_of_no_set_makes_no_folder_or_lock(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        correct(tmp_path / "a" / "b" / "s.json", "x: 1 -> 2", "why")
    assert list(tmp_path.iterdir()) == []


def test_a_correction_that_fails_leaves_no_lock_behind(tmp_path: Path) -> None:
    bad = tmp_path / "s.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError):
        correct(bad, "x: 1 -> 2", "why")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"] and bad.read_text() == "{not json"
    good = _set(tmp_path / "t.json")
    correct(good, "x: 1 -> 2", "why")  # one that works keeps its lock file, as every write does
    assert (tmp_path / ".t.json.lock").is_file() and len(load(good).corrections) == 1


def test_a_failed_write_under_the_lock_removes_what_it_made(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "s.json"
    with pytest.raises(RuntimeError), set_lock(path):
        assert (path.parent / ".s.json.lock").is_file()
        raise RuntimeError("the write failed")
    assert list(tmp_path.iterdir()) == []
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / ".s.json.lock").write_text("")
    with pytest.raises(RuntimeError), set_lock(kept / "s.json"):  # a lock it did not create is left alone
        raise RuntimeError("the write failed")
    assert (kept / ".s.json.lock").is_file()


def test_a_writer_that_waited_on_a_removed_lock_takes_a_new_one(tmp_path: Path) -> None:
    """A failed writer removes the lock it made while holding it; one that had opened the same file and
    waited must not go on holding the removed file (a third writer would lock the new one beside it)."""
    import llmbench.results as results

    path = _set(tmp_path / "s.json")
    opens: list[tuple[int, int]] = []  # (fd, inode) of each open
    real_open = results._open_lock

    def open_then_lose(p: Path) -> tuple[int, bool]:
        fd, created = real_open(p)
        opens.append((fd, os.fstat(fd).st_ino))
        if len(opens) == 1:  # the first file is removed (by a failed writer) before this one locks it
            p.unlink()
        return fd, created

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(results, "_open_lock", open_then_lose)
        with set_lock(path):
            assert len(opens) == 2 and os.stat(tmp_path / ".s.json.lock").st_ino == os.fstat(opens[1][0]).st_ino
