"""Several runs of a case: `run --repeat` writes one result set per pass, compare/report/spread pool them,
and the ratio's interval includes the between-run spread (its coverage checked here by simulation)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llmbench.analysis.compare import compare, ratio, runs_ratio
from llmbench.analysis.pooled import RUNS_CI_METHOD, LogRatioInterval
from llmbench.analysis.runs import load_sets
from llmbench.api import plan_passes
from llmbench.report.views import comparison_tables
from llmbench.results import MetricResult, ResultSet, load, save
from tests.conftest import ROOT
from tests.test_compare_support import H100_ENV, H200_ENV, gemm_case


@pytest.mark.parametrize(("df", "expected"), [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (1000, 1.9623)])
def test_the_log_ratio_interval_takes_the_t_quantile_of_its_df(df: float, expected: float) -> None:
    lo, hi = LogRatioInterval(0.0, 1.0, df).bounds(0.95)  # se 1: the bounds are exp(-+ the quantile)
    assert np.log(hi) == pytest.approx(expected, abs=1e-4)
    assert np.log(lo) == pytest.approx(-expected, abs=1e-4)


def _runs(rng: np.random.Generator, centre: float, k: int, between: float, within: float = 0.01,
          n: int = 20) -> list[MetricResult]:
    """k runs: each run's own centre drawn around `centre` (log-normal, sd `between`), then n samples
    around it (sd `within`); each run's figure is the median of its samples, as a result set has it."""
    centres = centre * np.exp(between * rng.standard_normal(k))
    samples = centres[:, None] * np.exp(within * rng.standard_normal((k, n)))
    return [MetricResult(value=float(np.median(s)), unit="TFLOP/s", samples=[float(x) for x in s]) for s in samples]


def _coverage(kb: int, kt: int, between_b: float, between_t: float, trials: int = 1500) -> float:
    rng = np.random.default_rng(20261124 + 10 * kb + kt)
    hits = 0
    for _ in range(trials):  # the true ratio is 130/100: the runs' centres are symmetric around 100 and 130
        r = runs_ratio(_runs(rng, 100.0, kb, between_b), _runs(rng, 130.0, kt, between_t), "higher")
        assert r is not None and r.ci is not None and r.method == RUNS_CI_METHOD
        hits += r.ci[0] <= 1.3 <= r.ci[1]
    return hits / trials


@pytest.mark.parametrize(
    ("kb", "kt", "between_b", "between_t"),
    [
        (3, 3, 0.02, 0.02),  # achieved 0.970 (6000 trials while writing this: 0.9695)
        (3, 3, 0.02, 0.005),  # unequal spreads (Welch): 0.953
        (3, 1, 0.02, 0.02),  # one side a single run, borrowing the other's spread: 0.946
        (5, 5, 0.03, 0.03),  # 0.954
    ],
)
def test_the_runs_interval_covers_the_true_ratio_95_percent_of_the_time(
    kb: int, kt: int, between_b: float, between_t: float
) -> None:
    # Runs whose centres differ by 2% (a between-run spread such as clocks and thermal state give),
    # 20 samples each with 1% within-run noise. 1500 trials: the estimate's own sd is about 0.006.
    assert 0.93 <= _coverage(kb, kt, between_b, between_t) <= 0.985


def test_the_single_run_bootstrap_misses_when_runs_differ() -> None:
    """Why runs are pooled: with a 2% between-run spread, the bootstrap of one run against one run (its
    interval made from within-run samples only) holds the true ratio in far fewer than 95% of trials."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(300):
        b, t = _runs(rng, 100.0, 1, 0.02)[0], _runs(rng, 130.0, 1, 0.02)[0]
        r = ratio(b, t, "higher", "sim")
        assert r is not None and r.ci is not None
        hits += r.ci[0] <= 1.3 <= r.ci[1]
    assert hits / 300 < 0.5  # about 0.22 here


def _pass(env: dict, group: str | None, index: int, tflops: float, created: str, seed: int) -> ResultSet:
    extra = {"repeat": {"group": group, "index": index, "of": 3}} if group else {}
    return ResultSet(suite="ceilings", env=env, created_at=created, cases=[gemm_case("bf16", tflops, seed=seed)],
                     **extra)


def _env(base: dict, machine: str) -> dict:
    return {**base, "gpu": {**base["gpu"], "id_hash": machine}}


def _write_group(folder: Path, env: dict, group: str, values: list[float], day: str) -> list[Path]:
    paths = []
    for i, v in enumerate(values, 1):
        p = folder / f"ceilings-{day}T00000{i}Z.json"
        save(_pass(env, group, i, v, f"{day[:4]}-{day[4:6]}-{day[6:]}T00:00:0{i}Z", seed=i), p)
        paths.append(p)
    return paths


def test_a_repeat_group_is_one_side_and_tables_say_how_many_runs(tmp_path: Path) -> None:
    h100 = _write_group(tmp_path / "h100", _env(H100_ENV, "aaa"), "g1", [700.0, 720.0, 710.0], "20261101")
    h200 = _write_group(tmp_path / "h200", _env(H200_ENV, "bbb"), "g2", [790.0, 800.0, 830.0], "20261102")
    sets = load_sets([*h100, *h200])
    assert [len(s.all_runs) for s in sets] == [3, 3]
    assert [s.name for s in sets] == ["h100-sxm-80gb", "h200-sxm-141gb"]
    cmp = compare(sets)
    row = next(r for r in cmp.rows if r.metric == "tflops")
    assert row.runs == [3, 3] and row.machines == [1, 1]
    assert row.values[0] == pytest.approx(np.median([c.metrics["tflops"].value for c in
                                                     (load(p).cases[0] for p in h100)]))
    assert row.between_run_cv[0] == pytest.approx(np.std([700, 720, 710], ddof=1) / 710, rel=0.05)
    r = row.ratios[1]
    assert r is not None and r.method == RUNS_CI_METHOD and r.ci is not None
    assert r.ci[0] <= r.value <= r.ci[1]
    data = json.loads(json.dumps(cmp.to_dict()))
    got = next(x for x in data["rows"] if x["metric"] == "tflops")
    assert got["runs"] == [3, 3] and got["between_run_cv"][1] is not None
    assert data["rows"][0]["ratios"][1]["ci_method"] == RUNS_CI_METHOD
    text = "\n".join(str(cell) for t in comparison_tables(cmp) for row_ in t.rows for cell in row_)
    assert "n=90, 3 runs, 1 machine" in text
    assert any(t.title == "Between-run spread" for t in comparison_tables(cmp))


def test_the_runs_interval_is_wider_than_the_single_run_one(tmp_path: Path) -> None:
    h100 = _write_group(tmp_path / "h100", _env(H100_ENV, "aaa"), "g1", [700.0, 760.0, 730.0], "20261101")
    h200 = _write_group(tmp_path / "h200", _env(H200_ENV, "bbb"), "g2", [790.0, 800.0, 850.0], "20261102")
    pooled = compare(load_sets([*h100, *h200]))
    single = compare(load_sets([h100[0], h200[0]]))
    wide = next(r for r in pooled.rows if r.metric == "tflops").ratios[1]
    narrow = next(r for r in single.rows if r.metric == "tflops").ratios[1]
    assert wide is not None and narrow is not None and wide.ci and narrow.ci
    assert wide.ci[1] / wide.ci[0] > narrow.ci[1] / narrow.ci[0]


def test_a_gpu_is_one_side_over_several_leases_and_pool_joins_one_gpus_sets(tmp_path: Path) -> None:
    """Sets of two GPUs: each GPU one side, its runs chosen by the one rule (here: runs that recorded no
    code path, so only the newest repeat group's pool). Sets of one GPU: each repeat group a side, unless
    --pool."""
    a = _write_group(tmp_path / "a", _env(H200_ENV, "m1"), "g1", [800.0, 810.0, 805.0], "20261101")
    b = _write_group(tmp_path / "b", _env(H200_ENV, "m2"), "g2", [790.0, 800.0, 795.0], "20261102")
    base = tmp_path / "h100.json"
    save(_pass(H100_ENV, None, 1, 700.0, "2026-11-01T00:00:00Z", seed=9), base)
    assert len(load_sets([*a, *b])) == 2  # one GPU: two repeat groups, two sides
    assert [len(s.all_runs) for s in load_sets([*a, *b], pool=True)] == [6]
    sets = load_sets([base, *a, *b])
    assert [len(s.all_runs) for s in sets] == [1, 3] and sets[1].chosen is not None
    assert sets[1].machines == 1
    row = next(r for r in compare(sets).rows if r.metric == "tflops")
    assert row.runs == [1, 3] and row.machines[1] == 1
    assert row.ratios[1] is not None and row.ratios[1].method == RUNS_CI_METHOD  # one side single: borrowed spread


def test_machines_are_counted_by_one_function_for_sides_and_rows() -> None:
    """`machine_count` (analysis/inputs.py) is the one count: a side's `machines` and a row's (compare.py)."""
    from llmbench.analysis import compare as compare_mod
    from llmbench.analysis.inputs import SetRef, machine_count

    runs = [_pass(_env(H200_ENV, m), "g", i, 800.0, "2026-11-01T00:00:00Z", seed=i)
            for i, m in enumerate(["m1", "m2", "m1"], 1)]
    assert machine_count(runs) == 2 and machine_count(runs[:1]) == 1
    assert machine_count([*runs, _pass(H200_ENV, "g", 4, 800.0, "2026-11-01T00:00:00Z", seed=4)]) is None
    assert SetRef("h200", runs[0], runs=runs).machines == 2
    assert compare_mod.machine_count is machine_count


def test_a_file_named_twice_by_different_paths_loads_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sets are told apart by their resolved path: a/x.json, ./a/../a/x.json, an absolute path and a
    symlink to it are one run (not a second side, nor a run pooled with itself); so is a bundle."""
    from llmbench.bundle import write_bundle

    (tmp_path / "a").mkdir()
    save(_pass(_env(H200_ENV, "m1"), None, 1, 800.0, "2026-11-01T00:00:00Z", seed=1), tmp_path / "a" / "x.json")
    save(_pass(H100_ENV, None, 1, 700.0, "2026-11-01T00:00:00Z", seed=2), tmp_path / "base.json")
    (tmp_path / "link.json").symlink_to(tmp_path / "a" / "x.json")
    monkeypatch.chdir(tmp_path)
    same = [Path("a/x.json"), Path("a/../a/x.json"), tmp_path / "a" / "x.json", Path("link.json")]
    sets = load_sets([Path("base.json"), *same])
    assert [len(s.all_runs) for s in sets] == [1, 1]
    pooled = load_sets([Path("base.json"), *same], pool=True)
    assert [len(s.all_runs) for s in pooled] == [1, 1]
    write_bundle(tmp_path / "b.tar.gz", {"x.json": load(tmp_path / "a" / "x.json")})
    both = load_sets([Path("base.json"), Path("b.tar.gz"), Path("a/../b.tar.gz"), tmp_path / "b.tar.gz"])
    assert [len(s.all_runs) for s in both] == [1, 1]


def test_a_folder_stands_for_every_set_in_it(tmp_path: Path) -> None:
    folder = tmp_path / "h200"
    _write_group(folder, _env(H200_ENV, "m"), "old", [700.0, 710.0, 720.0], "20261101")
    _write_group(folder, _env(H200_ENV, "m"), "new", [800.0, 810.0, 820.0], "20261102")
    assert [len(s.all_runs) for s in load_sets([folder])] == [3, 3]  # one GPU: a side per repeat group
    (side,) = load_sets([folder], by_gpu=True)  # by the rule: no run recorded a code path, one group pools
    assert len(side.all_runs) == 3 and side.chosen is not None
    assert {(r.repeat_info or {}).get("group") for r in side.all_runs} == {"new"}


def test_plan_passes_continues_an_unfinished_group(tmp_path: Path) -> None:
    folder = tmp_path / "h200-sxm-141gb"
    save(_pass(H200_ENV, "g", 2, 800.0, "2026-11-01T00:00:00Z", seed=1), folder / "ceilings-20261101T000000Z.json")
    assert plan_passes(tmp_path, "h200-sxm-141gb", "ceilings", 3, resume=True) == [(2, "g", True), (3, "g", False)]
    fresh = plan_passes(tmp_path, "h200-sxm-141gb", "ceilings", 3, resume=False)
    assert [(i, resume) for i, _, resume in fresh] == [(1, False), (2, False), (3, False)]
    assert len({g for _, g, _ in fresh}) == 1 and fresh[0][1] != "g"
    assert plan_passes(tmp_path, "h200-sxm-141gb", "ceilings", 1, resume=True) == [(1, "", True)]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llmbench", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**__import__("os").environ, "COLUMNS": "200"})


def test_repeat_refuses_force_and_budget(tmp_path: Path) -> None:
    for extra in (["--resume", "--force"], ["--budget", "60"]):
        r = cli("run", "quickstart", "--cpu", "--repeat", "2", "--out", str(tmp_path), *extra)
        assert r.returncode == 2, r.stderr
        assert "--repeat with" in r.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_repeat_runs_each_pass_in_fresh_processes_and_spread_reads_them(tmp_path: Path) -> None:
    r = cli("run", "quickstart", "--cpu", "--repeat", "2", "--out", str(tmp_path),
            "-k", "shape=1024x1024x1024", "-k", "precision=fp32")
    assert r.returncode == 0, r.stderr
    files = sorted(tmp_path.glob("cpu-*/quickstart-*.json"))
    assert len(files) == 2
    sets = [load(f) for f in files]
    infos = [s.repeat_info for s in sets]
    assert [i["index"] for i in infos if i] == [1, 2] and len({i["group"] for i in infos if i}) == 1
    assert all(s.cases[0].status == "ok" for s in sets)
    assert sets[0].cases[0].started_at <= sets[1].cases[0].started_at  # pass 2 after pass 1
    out = tmp_path / "spread.json"
    s = cli("spread", str(files[0].parent), "--format", "json", "--out", str(out))
    assert s.returncode == 0, s.stderr
    data = json.loads(out.read_text())
    row = next(x for x in data["rows"] if x["metric"] == "tflops")
    assert row["runs"] == 2 and row["between_run_cv"] is not None and len(row["run_values"]) == 2


def test_spread_of_single_runs_is_a_user_error(tmp_path: Path) -> None:
    p = tmp_path / "one.json"
    save(_pass(H100_ENV, None, 1, 700.0, "2026-11-01T00:00:00Z", seed=1), p)
    r = cli("spread", str(p))
    assert r.returncode == 2 and "two runs" in r.stderr
