"""The max-batch search resumes: probes are recorded as they end, beside the result set, and a later
run of the same case on the same GPU (slug), llmbench version and commit replays them instead of
running them again, reaching the uninterrupted answer; --force (`fresh`) searches afresh."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmbench.harness.isolation import ChildOutcome
from llmbench.harness.max_batch import PROBES_DIR, ProbeLog, probes_path, search_max_batch

SPEC = {"scenario": "qlora", "params": {"batch_size": 1, "max_batch": True}, "settings": {}}
CASE = "qlora/0123456789ab"


def fake(threshold: int, stop_after: int | None = None, fail_at: int | None = None) -> tuple[Any, list[int]]:
    """ok up to `threshold`, oom above; the call after `stop_after` probes is interrupted (Ctrl-C)."""
    seen: list[int] = []

    def run(s: dict[str, Any], env: dict[str, str], timeout: float) -> ChildOutcome:
        if stop_after is not None and len(seen) == stop_after:
            raise KeyboardInterrupt
        b = s["params"]["batch_size"]
        seen.append(b)
        if b == fail_at:
            return ChildOutcome("failed", "planted")
        return ChildOutcome("ok" if b <= threshold else "oom", None if b <= threshold else "OutOfMemoryError")

    return run, seen


def log(tmp_path: Path, case: str = CASE, slug: str = "h100-sxm-80gb", commit: str | None = "abc") -> ProbeLog:
    return ProbeLog(probes_path(tmp_path / "h100-sxm-80gb" / "qlora-20250101T000000Z.json", CASE), case, slug, commit)


def test_probes_live_beside_the_result_set(tmp_path: Path) -> None:
    p = probes_path(tmp_path / "slug" / "suite-20250101T000000Z.json", "qlora/0123456789ab")
    assert p == tmp_path / "slug" / PROBES_DIR / "suite-20250101T000000Z" / "qlora__0123456789ab.json"


@pytest.mark.parametrize(("threshold", "k"), [(5, 1), (5, 3), (5, 5), (13, 4), (1, 1), (1024, 6)])
def test_an_interrupted_search_resumes_without_probing_again(tmp_path: Path, threshold: int, k: int) -> None:
    whole_run, whole_seen = fake(threshold)
    whole = search_max_batch(SPEC, {}, 10.0, run=whole_run)
    assert whole.resumed == 0

    first, first_seen = fake(threshold, stop_after=k)
    with pytest.raises(KeyboardInterrupt):
        search_max_batch(SPEC, {}, 10.0, run=first, log=log(tmp_path))
    assert first_seen == whole_seen[:k]
    saved = json.loads(log(tmp_path).path.read_text())
    assert [p["batch_size"] for p in saved["probes"]] == whole_seen[:k]
    assert saved["case_id"] == CASE and saved["gpu_slug"] == "h100-sxm-80gb"

    again, again_seen = fake(threshold)
    heard: list[dict[str, Any]] = []
    s = search_max_batch(SPEC, {}, 10.0, run=again, log=log(tmp_path), on_probe=heard.append)
    assert again_seen == whole_seen[k:]  # none of the recorded probes ran again
    assert s.best == whole.best == threshold
    assert [p["batch_size"] for p in s.probes] == whole_seen
    assert [bool(p.get("resumed")) for p in s.probes] == [True] * k + [False] * (len(whole_seen) - k)
    assert s.info()["resumed"] == k and "not_reused" not in s.info()
    assert heard == s.probes  # one report per probe, replayed ones included


@pytest.mark.parametrize("other", [{"slug": "a100-sxm-40gb"}, {"case": "qlora/ffffffffffff"}, {"commit": "def"}])
def test_probes_of_another_gpu_case_or_commit_are_not_reused(tmp_path: Path, other: dict[str, str]) -> None:
    first, _ = fake(5, stop_after=3)
    with pytest.raises(KeyboardInterrupt):
        search_max_batch(SPEC, {}, 10.0, run=first, log=log(tmp_path))
    again, seen = fake(5)
    s = search_max_batch(SPEC, {}, 10.0, run=again, log=log(tmp_path, **other))
    assert seen == [1, 2, 4, 8, 6, 5] and s.best == 5 and s.resumed == 0
    assert "not reused" in str(s.info()["not_reused"])


def test_fresh_ignores_the_recorded_probes_and_replaces_them(tmp_path: Path) -> None:
    first, _ = fake(5, stop_after=3)
    with pytest.raises(KeyboardInterrupt):
        search_max_batch(SPEC, {}, 10.0, run=first, log=log(tmp_path))
    again, seen = fake(5)
    s = search_max_batch(SPEC, {}, 10.0, run=again, log=log(tmp_path), fresh=True)  # --force
    assert seen == [1, 2, 4, 8, 6, 5] and s.resumed == 0 and "not_reused" not in s.info()
    assert len(json.loads(log(tmp_path).path.read_text())["probes"]) == 6


def test_a_probe_that_neither_ran_nor_ran_out_of_memory_is_probed_again(tmp_path: Path) -> None:
    first, _ = fake(5, fail_at=8)
    s = search_max_batch(SPEC, {}, 10.0, run=first, log=log(tmp_path))
    assert s.stopped and s.best == 4
    again, seen = fake(5)
    s = search_max_batch(SPEC, {}, 10.0, run=again, log=log(tmp_path))
    assert seen == [8, 6, 5] and s.best == 5 and s.resumed == 3


def test_an_unreadable_record_is_ignored_and_clear_removes_it(tmp_path: Path) -> None:
    lg = log(tmp_path)
    lg.path.parent.mkdir(parents=True)
    lg.path.write_text("{not json")
    run, seen = fake(2)
    s = search_max_batch(SPEC, {}, 10.0, run=run, log=lg)
    assert seen == [1, 2, 4, 3] and "unreadable" in str(s.info()["not_reused"])
    lg.clear()
    assert not lg.path.exists() and not (tmp_path / "h100-sxm-80gb" / PROBES_DIR).exists()


def test_a_measurement_oom_at_the_smallest_batch_that_fit_leaves_nothing(tmp_path: Path) -> None:
    """The measurement ran out of memory at every batch its probes fit: no batch is left (the case is
    `oom`), and each measurement's `oom` is saved to the log and heard, after the probe's `ok`."""
    run, seen = fake(threshold=2)
    heard: list[dict[str, Any]] = []
    s = search_max_batch(SPEC, {}, 10.0, run=run, log=log(tmp_path), on_probe=heard.append)
    assert s.best == 2 and seen == [1, 2, 4, 3]
    assert s.measurement_oom("at 2") == 1 and seen == [1, 2, 4, 3]  # 1 fit its probe: nothing new to probe
    assert s.measurement_oom("at 1") is None and s.best is None
    assert [(p["batch_size"], p["status"]) for p in heard[-2:]] == [(2, "oom"), (1, "oom")]
    saved = json.loads(log(tmp_path).path.read_text())["probes"]
    assert [p.get("stage") for p in saved] == [None, None, None, None, "measurement", "measurement"]
    assert search_max_batch(SPEC, {}, 10.0, run=run, log=log(tmp_path)).best is None  # replayed: none fits
