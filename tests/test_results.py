"""Result sets: schema round trip, atomic writes, refusal of other schema versions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmbench.results import CaseResult, MetricResult, ResultSet, load, save, write_atomic


def _rs() -> ResultSet:
    m = MetricResult.from_samples("tflops", [100.0, 101.5, 99.25, 100.125])
    return ResultSet(
        suite="t", env={"gpu": {"name": "NVIDIA H100 80GB HBM3", "slug": "h100-sxm-80gb"}},
        cases=[
            CaseResult(id="gemm/abc", scenario="gemm", params={"precision": "bf16", "shape": [8, 8, 8]},
                       status="ok", metrics={"tflops": m}, timer="cuda_event"),
            CaseResult(id="gemm/def", scenario="gemm", params={"precision": "fp8"}, status="skipped",
                       reason="fp8 needs compute capability >= 8.9; this GPU is 8.0 (A100)"),
        ],
    )


def test_round_trip_keeps_everything(tmp_path: Path) -> None:
    rs = _rs()
    save(rs, tmp_path / "a.json")
    back = load(tmp_path / "a.json")
    assert back == rs
    m = back.cases[0].metrics["tflops"]
    assert m.unit == "TFLOP/s"
    assert m.value == pytest.approx(100.0625)
    assert m.samples == [100.0, 101.5, 99.25, 100.125]
    assert back.gpu_slug == "h100-sxm-80gb"


def test_result_files_are_readable_by_others(tmp_path: Path) -> None:
    import os
    import stat

    old = os.umask(0o022)
    try:
        save(_rs(), tmp_path / "a.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644


def test_samples_are_kept_on_one_line(tmp_path: Path) -> None:
    save(_rs(), tmp_path / "a.json")
    assert '"samples": [100.0, 101.5, 99.25, 100.125]' in (tmp_path / "a.json").read_text()


def test_upsert_replaces_a_rerun_case() -> None:
    rs = _rs()
    rs.upsert(CaseResult(id="gemm/def", scenario="gemm", params={"precision": "fp8"}, status="failed", reason="x"))
    assert [c.status for c in rs.cases] == ["ok", "failed"]


def test_other_schema_versions_are_refused(tmp_path: Path) -> None:
    p = tmp_path / "b.json"
    data = json.loads(_rs().model_dump_json())
    for version, why in ((4, r"schema_version 4 is not supported \(a newer llmbench's set: upgrade llmbench to "
                             r"read it\); this llmbench reads 1, 2 and 3"),
                         ("3", "schema_version '3' is not supported; this llmbench reads 1, 2 and 3")):
        data["schema_version"] = version
        p.write_text(json.dumps(data))
        with pytest.raises(ValueError, match=why):
            load(p)


def test_atomic_write_leaves_the_old_file_on_failure(tmp_path: Path) -> None:
    p = tmp_path / "c.json"
    write_atomic(p, "old")

    with pytest.raises(TypeError):
        write_atomic(p, 123)  # type: ignore[arg-type]
    assert p.read_text() == "old"
    assert [f.name for f in tmp_path.iterdir()] == ["c.json"]  # no temporary left behind


def test_unknown_metric_names_are_a_programming_error() -> None:
    with pytest.raises(KeyError, match=r"not in llmbench\.metrics"):
        MetricResult.from_samples("tokens_per_sec", [1.0])


def test_a_pinned_commit_beats_the_trees_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """A copied tree may carry a stale .git: the commit given by whoever copied it wins."""
    from llmbench.hardware.fingerprint import llmbench_info

    monkeypatch.delenv("LLMBENCH_GIT_COMMIT", raising=False)
    from_git = llmbench_info()["git_commit"]
    monkeypatch.setenv("LLMBENCH_GIT_COMMIT", "0123abc")
    info = llmbench_info()
    assert info["git_commit"] == "0123abc" != from_git
    assert info["git_dirty"] is None  # unknown: nothing was compared
