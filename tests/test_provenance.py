"""Which code measured a case, and what a re-measure replaced: recorded, kept and shown."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from test_compare_support import H100_ENV, H200_ENV, gemm_case, refs, result_set

from llmbench.analysis.compare import compare
from llmbench.hardware.fingerprint import llmbench_info
from llmbench.results import ResultSet, history_of, load, save


def test_a_pinned_commit_is_recorded_as_given_and_its_tree_state_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMBENCH_GIT_COMMIT", "ecc53d1deadbeef")
    info = llmbench_info()
    assert info["git_commit"] == "ecc53d1deadbeef" and info["git_dirty"] is None


def test_a_git_checkout_records_its_commit_and_whether_it_was_modified(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLMBENCH_GIT_COMMIT", raising=False)
    info = llmbench_info()
    if info["git_commit"] is None:
        pytest.skip("llmbench runs from a tree without git here")
    assert isinstance(info["git_dirty"], bool)


def test_a_re_measure_keeps_the_replaced_values_and_commit_compact(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rs = result_set(H100_ENV, [])
    first = gemm_case("bf16", 700.0)
    first.info.update(llmbench_commit="aaaa111", llmbench_tree_modified=False)
    rs.upsert(first)
    assert history_of(rs.cases[0]) == []
    second = gemm_case("bf16", 650.0, seed=5)
    second.info.update(llmbench_commit="bbbb222", llmbench_tree_modified=True)
    rs.upsert(second)
    third = gemm_case("bf16", 660.0, seed=9)
    rs.upsert(third)
    assert len(rs.cases) == 1
    hist = history_of(rs.cases[0])
    assert [h["llmbench_commit"] for h in hist] == ["aaaa111", "bbbb222"]
    assert hist[1]["llmbench_tree_modified"] is True
    assert hist[0]["metrics"]["tflops"] == {"value": first.metrics["tflops"].value, "unit": "TFLOP/s"}
    assert "samples" not in str(hist)  # compact: values, not samples
    path = tmp_path / "set.json"
    save(rs, path)
    assert history_of(load(path).cases[0]) == hist
    # a case measured once carries no history key at all
    once = ResultSet(suite="s", cases=[], env={})
    once.upsert(gemm_case("fp8", 900.0))
    assert "history" not in once.cases[0].model_dump()


def test_keys_recorded_on_one_side_only_are_shown() -> None:
    a = result_set(copy.deepcopy(H100_ENV), [gemm_case("bf16", 700.0)])
    b = result_set(H200_ENV, [gemm_case("bf16", 900.0)])
    b.llmbench = {"git_commit": "ecc53d1aaaa"}
    b.cases[0].info["llmbench_tree_modified"] = True
    del a.env["gpu"]["driver"]
    diffs = dict(compare(refs(a, b), 0).env_diffs)
    assert diffs["llmbench commit"] == ["(not recorded)", "ecc53d1"]
    assert diffs["llmbench tree modified"] == ["(not recorded)", "yes"]
    assert diffs["gpu.driver"] == ["(not recorded)", "580.159.04"]


def test_the_commit_comes_only_from_llmbench_s_own_checkout(tmp_path: Path) -> None:
    """A tree without its own .git inside another repository (a virtualenv in a user's project) is not
    llmbench's checkout: that repository's HEAD is not llmbench's commit."""
    import subprocess

    from llmbench.hardware.fingerprint import own_checkout

    outer, tree = tmp_path / "project", tmp_path / "project" / "venv" / "src"
    tree.mkdir(parents=True)
    (tree / "pyproject.toml").write_text('[project]\nname = "llmbench"\n', encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    assert not own_checkout(tree)
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    assert own_checkout(tree)
    (tree / "pyproject.toml").write_text('[project]\nname = "other"\n', encoding="utf-8")
    assert not own_checkout(tree)  # a repository of another project
