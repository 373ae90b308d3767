"""Reading a bundle is linear in its members: a gzip tar is a stream, so the members a resumed oneshot
carries over are read in one pass over the archive, not one pass from its start each."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import pytest

from llmbench.api.bundling import write_oneshot_bundle
from llmbench.bundle import read_bundle, read_members, write_bundle

MEMBERS = 20_000


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The archives tarfile opens (each open is a pass from the start of the gzip stream)."""
    seen: list[str] = []
    real = tarfile.open

    def counted(*args: Any, **kwargs: Any) -> tarfile.TarFile:
        seen.append(str(args[0] if args else kwargs.get("name") or kwargs.get("fileobj")))
        return real(*args, **kwargs)

    monkeypatch.setattr(tarfile, "open", counted)
    return seen


def tiny_members(tmp_path: Path) -> Path:
    files: dict[str, bytes | str] = {f"env/part-1/f{i:05d}": b"x" for i in range(MEMBERS)}
    files["logs/part-1.log"] = "a log line\n"
    return write_bundle(tmp_path / "many.tar.gz", {}, files)


@pytest.mark.slow
def test_twenty_thousand_members_are_read_in_one_pass(tmp_path: Path, opens: list[str]) -> None:
    path = tiny_members(tmp_path)
    opens.clear()
    bundle = read_bundle(path)
    names = [n for n in bundle.files if n.startswith(("env/", "logs/"))]
    got = read_members(bundle.files, names)
    assert len(got) == MEMBERS + 1 and got["env/part-1/f12345"] == b"x" and got["logs/part-1.log"] == b"a log line\n"
    assert len(opens) == 2, f"{len(opens)} passes over the archive"  # the manifest and sets, then the members
    assert bundle.files["env/part-1/f00007"] == b"x" and len(opens) == 2  # read already: no pass more


@pytest.mark.slow
def test_a_resumed_oneshot_carries_the_members_over_in_one_pass(tmp_path: Path, opens: list[str]) -> None:
    previous = read_bundle(tiny_members(tmp_path))
    opens.clear()
    log = tmp_path / "part-2.log"
    log.write_text("part 2\n")
    out = write_oneshot_bundle(tmp_path / "out", "cpu-test", [], previous, {"env/part-2/x": b"y"}, log, 2, {})
    written = [o for o in opens if o.endswith(".tar.gz")]
    assert len(written) <= 1, opens  # the earlier members: one pass
    again = read_bundle(out)
    assert len([n for n in again.files if n.startswith("env/part-1/")]) == MEMBERS


@pytest.mark.slow
def test_a_member_missing_from_the_archive_is_one_line(tmp_path: Path) -> None:
    bundle = read_bundle(tiny_members(tmp_path))
    bundle.files.sizes["env/ghost"] = 1  # type: ignore[attr-defined]  # listed, but not in the archive
    with pytest.raises(ValueError, match="member env/ghost is not readable: not in the archive"):
        read_members(bundle.files, ["env/part-1/f00001", "env/ghost"])
    with pytest.raises(KeyError):
        bundle.files["env/none"]
