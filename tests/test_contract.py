"""The result-set contract (llmbench/results.py): NaN and infinities kept as what they are, a closed
schema (version 2) that reads every shape of version 1, and case info of the wrong type or a newer
version said in one line, never a traceback."""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llmbench import api
from llmbench.bundle import read_bundle
from llmbench.measure.stats import summarize
from llmbench.registry import PLUGINS_ENV
from llmbench.results import (
    SCHEMA_VERSION,
    CaseResult,
    MetricResult,
    ReadWarning,
    ResultSet,
    check_finite,
    load,
    save,
)
from tests.conftest import tracked

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = "tests.plugins.nonfinite_scenarios"
Command = Callable[[list[str]], tuple[int, str, str]]  # a CLI command run in this process: code, stdout, stderr
SETS = sorted(p for p in tracked("results", "*.json")  # the committed sets, not a user's own runs
              if isinstance(d := json.loads(p.read_text()), dict) and d.get("schema_version") is not None)


def strict_json(text: str) -> Any:
    """JSON as the standard has it: a bare NaN or Infinity (Python's json extension) is refused."""
    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def _case(**metrics: MetricResult) -> CaseResult:
    return CaseResult(id="x/1", scenario="gemm", params={}, status="ok", metrics=metrics,
                      settings={"timeout_s": math.inf})


def test_nan_and_infinities_round_trip_through_a_valid_json_file(tmp_path: Path) -> None:
    inf = MetricResult.from_samples("tflops", [math.inf] * 6)
    mixed = MetricResult(value=-math.inf, unit="ms", samples=[1.0, math.nan, math.inf, -math.inf])
    rs = ResultSet(suite="s", cases=[_case(tflops=inf, time_ms=mixed)])
    path = tmp_path / "set.json"
    save(rs, path)
    data = strict_json(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION == 3
    assert data["cases"][0]["metrics"]["tflops"]["value"] == "Infinity"
    assert data["cases"][0]["settings"]["timeout_s"] == "Infinity"  # --timeout inf, not null
    back = load(path).cases[0]
    assert back.metrics["tflops"].value == math.inf and back.metrics["tflops"].stats is not None
    assert back.metrics["tflops"].stats.ci95 == [math.inf, math.inf]
    assert back.metrics["time_ms"].value == -math.inf
    samples = back.metrics["time_ms"].samples or []
    assert math.isnan(samples[1]) and samples[2:] == [math.inf, -math.inf]
    assert back.settings["timeout_s"] == math.inf


def test_a_non_finite_headline_fails_the_case_a_secondary_one_is_flagged() -> None:
    nan = MetricResult.from_samples("tflops", [math.nan] * 6)
    energy = MetricResult.single("energy_j", math.nan)
    case = check_finite(_case(tflops=nan, energy_j=energy), ("tflops",))
    assert case.status == "failed" and "tflops" in (case.reason or "")
    assert len(case.metrics["tflops"].samples or []) == 6  # kept
    ok = check_finite(_case(tflops=MetricResult.from_samples("tflops", [1.0, 2.0]), energy_j=energy), ("tflops",))
    assert ok.status == "ok" and any("not a finite number" in f for f in ok.metrics["energy_j"].flags)
    assert not ok.metrics["tflops"].flags


def test_statistics_of_samples_holding_nan_do_not_stop() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value" would be one
        s = summarize([1.0, math.nan, -math.inf, math.inf] * 6)
    assert math.isnan(float(s["median"])) and s["n"] == 24  # type: ignore[arg-type]


def test_the_terminal_shows_nan_and_no_infinite_interval() -> None:
    from llmbench.report.terminal import fmt_metric

    text = fmt_metric(MetricResult.from_samples("tflops", [-math.inf] * 5 + [math.inf] * 5))
    assert text.startswith("nan TFLOP/s") and "[" not in text  # no [-inf, inf] shown as an interval
    assert fmt_metric(MetricResult.single("energy_j", math.nan)).startswith("nan J")


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data))
    return path


def _v1(tmp_path: Path, **case_keys: Any) -> dict[str, Any]:
    """A set as version 1 wrote it: a NaN value and sample and `--timeout inf` as null, `repeat` and
    `history` as undeclared keys."""
    case = {"id": "gemm/1", "scenario": "gemm", "params": {"m": 1}, "status": "ok",
            "metrics": {"tflops": {"value": None, "unit": "TFLOP/s", "samples": [1.0, None],
                                   "stats": {"median": 1.0, "ci95": None, "n": 2}}},
            "settings": {"timeout_s": None}, "info": {},
            "history": [{"status": "oom", "started_at": None, "llmbench_commit": "abc", "llmbench_tree_modified": None,
                         "metrics": {}, "reason": "planted"}], **case_keys}
    return {"schema_version": 1, "suite": "s", "repeat": {"group": "g", "index": 1, "of": 2}, "cases": [case]}


def test_a_version_1_set_is_read_upgraded_and_not_rewritten(tmp_path: Path) -> None:
    path = _write(tmp_path / "v1.json", _v1(tmp_path))
    before = path.read_bytes()
    rs = load(path)
    assert path.read_bytes() == before
    c = rs.cases[0]
    assert math.isnan(c.metrics["tflops"].value) and math.isnan((c.metrics["tflops"].samples or [0])[1])
    assert c.settings["timeout_s"] == math.inf and c.history[0].reason == "planted"
    assert rs.repeat_info == {"group": "g", "index": 1, "of": 2}
    save(rs, tmp_path / "v3.json")
    assert json.loads((tmp_path / "v3.json").read_text())["schema_version"] == 3


def test_an_unknown_key_is_refused_naming_it_and_the_keys_there(tmp_path: Path) -> None:
    path = _write(tmp_path / "extra.json", _v1(tmp_path, gpu_hours=3))
    with pytest.raises(ValueError, match=r"cases\[0\]: unknown key 'gpu_hours'.*CaseResult keys: id, scenario"):
        load(path)
    data = _v1(tmp_path)
    data["cases"][0]["metrics"]["tflops"]["stats"]["p95"] = 1.0
    with pytest.raises(ValueError, match=r"cases\[0\]\.metrics\.tflops\.stats: unknown key 'p95'.*Stats keys: median"):
        load(_write(tmp_path / "stat.json", data))
    shown = subprocess.run([sys.executable, "-m", "llmbench", "show", str(path)], capture_output=True, text=True,
                           cwd=ROOT, timeout=120)
    assert shown.returncode == 2 and "Traceback" not in shown.stderr
    assert len(shown.stderr.strip().splitlines()) == 1 and "unknown key 'gpu_hours'" in shown.stderr


def test_every_committed_set_loads_and_an_old_and_a_new_set_still_join(tmp_path: Path) -> None:
    assert len(SETS) > 50
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReadWarning)
        for p in SETS:
            load(p)
    old = next(p for p in SETS if p.name.startswith("ceilings-") and p.parent.name == "h100-sxm-80gb")
    new = tmp_path / old.name.replace("ceilings-", "ceilings-new-")
    save(load(old), new)
    assert json.loads(new.read_text())["schema_version"] == 3
    got = api.compare([old, new])
    assert got.groups and got.groups[0].comparison.joined_cases == len(load(old).cases)


def test_wrong_typed_and_newer_info_is_read_with_a_warning() -> None:
    rs_text = json.dumps({"schema_version": 2, "suite": "s", "cases": [
        {"id": f"fault/{i}", "scenario": "fault", "params": {}, "status": "ok",
         "info": {"share_group": "one", "max_batch": 3, "info_version": 99}} for i in range(3)]})
    from llmbench.caseinfo import CaseInfo
    from llmbench.results import from_json

    with pytest.warns(ReadWarning) as got:
        rs = from_json(rs_text, "here.json")
    lines = [str(w.message) for w in got]
    assert any("here.json: case fault/0 (and 2 more cases): info.share_group" in x for x in lines)
    assert any("info.max_batch" in x for x in lines) and any("info_version 99 is newer" in x for x in lines)
    info = CaseInfo.of(rs.cases[0].info)
    assert info.share_group is None and info.max_batch is None and info.info_version == 99


def _llmbench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llmbench", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env=env)


SUITE = """
name = "nonfinite"
[defaults]
min_iters = 2
min_seconds = 0.0
warmup_iters = 0
[[case]]
scenario = "nonfinite"
headline = "nan"
[[case]]
scenario = "nonfinite"
matrix.secondary = ["nan", "inf"]
"""


@pytest.fixture
def plugin_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The nonfinite scenario registered in case processes, commands started here, and this process."""
    from llmbench.scenarios.base import SCENARIOS

    env = {PLUGINS_ENV: PLUGIN, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    SCENARIOS._loaded = False
    importlib.import_module(PLUGIN)
    return {**os.environ, **env}


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Command:
    """A command run in this process, as `llmbench` runs it (cli.main): its exit code, stdout and stderr."""
    from llmbench.cli import main

    def run(args: list[str]) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["llmbench", *args])
        with warnings.catch_warnings():
            warnings.simplefilter("default")  # as a fresh process: a read warning printed once per message
            warnings.simplefilter("error", RuntimeWarning)  # numpy's noise about NaN is no output of a command
            try:
                main()
                code: object = 0
            except SystemExit as e:
                code = e.code
        got = capsys.readouterr()
        assert "Traceback" not in got.err
        return (code if isinstance(code, int) else 0), got.out, got.err
    return run


@pytest.mark.slow
def test_a_nan_headline_is_a_failed_case_every_command_reads(
    tmp_path: Path, plugin_env: dict[str, str], cli: Command
) -> None:
    suite = tmp_path / "nonfinite.toml"
    suite.write_text(SUITE)
    out = tmp_path / "out"
    run = _llmbench("run", str(suite), "--out", str(out), "--cpu", "--timeout", "inf", env=plugin_env)
    assert run.returncode == 1, run.stderr  # a failed case
    assert "Traceback" not in run.stdout + run.stderr
    (path,) = out.glob("*/nonfinite-*.json")
    strict_json(path.read_text())
    rs = load(path)
    by = {(c.params.get("headline", "finite"), c.params.get("secondary", "finite")): c for c in rs.cases}
    failed = by[("nan", "finite")]
    assert failed.status == "failed" and "time_ms" in (failed.reason or "")
    assert all(math.isnan(s) for s in failed.metrics["time_ms"].samples or [0.0])  # the samples are kept
    flagged = by[("finite", "nan")]
    assert flagged.status == "ok" and any("not a finite number" in f for f in flagged.metrics["energy_j"].flags)
    assert by[("finite", "inf")].status == "ok" and by[("finite", "inf")].metrics["energy_j"].value == math.inf
    assert all(c.settings["timeout_s"] == math.inf for c in rs.cases)

    twin = tmp_path / "twin.json"
    twin.write_text(path.read_text())
    code, out_text, err = cli(["show", str(path)])
    assert code == 0 and "time_ms" in " ".join(out_text.split()), err  # the failed case's reason names the metric
    code, out_text, err = cli(["compare", str(path), str(twin), "--all", "--format", "csv"])
    assert code == 0 and "nan" in out_text and "inf" in out_text, err
    code, out_text, err = cli(["spread", str(path), str(twin), "--all"])
    assert code == 2 and "no case was measured ok in two runs" in err, err  # a copy of one run is that run
    code, out_text, err = cli(["report", str(path), "--out", str(tmp_path / "report.md")])
    assert code == 0 and "<td>nan</td>" in (tmp_path / "report.md").read_text(), err

    before = {c.id: c.started_at for c in rs.cases if c.status == "ok"}
    resumed = _llmbench("run", str(suite), "--out", str(out), "--cpu", "--resume", env=plugin_env)
    assert resumed.returncode == 1 and "Traceback" not in resumed.stderr, resumed.stderr
    again = load(path)
    assert {c.id: c.started_at for c in again.cases if c.status == "ok"} == before  # only the failed case ran again
    assert again.case(failed.id).history[0].status == "failed"  # type: ignore[union-attr]

    one = _llmbench("oneshot", "--cpu", str(suite), "--out", str(tmp_path / "o"), env=plugin_env)
    assert "Traceback" not in one.stderr, one.stderr
    (bundle,) = (tmp_path / "o").glob("*.tar.gz")
    ((_, bundled),) = read_bundle(bundle).result_sets
    assert {c.status for c in bundled.cases} == {"ok", "failed"}


WRONG_INFO_SUITE = """
name = "wronginfo"
[defaults]
min_iters = 1
min_seconds = 0.0
warmup_iters = 0
[[case]]
scenario = "nonfinite"
matrix.secondary = ["finite", "inf"]
"""


@pytest.mark.slow
def test_wrong_typed_info_is_one_warning_for_show_resume_budget_and_dry_run(
    tmp_path: Path, plugin_env: dict[str, str], cli: Command
) -> None:
    suite = tmp_path / "wronginfo.toml"
    suite.write_text(WRONG_INFO_SUITE)
    out = tmp_path / "out"
    assert _llmbench("run", str(suite), "--out", str(out), "--cpu", env=plugin_env).returncode == 0
    (path,) = out.glob("*/wronginfo-*.json")
    data = json.loads(path.read_text())
    data["cases"][0]["info"].update(share_group="one", info_version=7)
    path.write_text(json.dumps(data))
    shown = _llmbench("show", str(path), env=plugin_env)  # as a user sees it: one calm line per problem
    lines = [x for x in shown.stderr.splitlines() if x.strip()]
    assert shown.returncode == 0 and all(x.startswith("warning:") for x in lines), shown.stderr
    assert any(path.name in x and "info.share_group" in x for x in lines), shown.stderr
    for args in (["run", str(suite), "--out", str(out), "--cpu", "--resume", "--dry-run"],
                 ["run", str(suite), "--out", str(out), "--cpu", "--resume", "--budget", "600"]):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            code, _, err = cli(args)
        assert code == 0, (args, err)
        said = [str(w.message) for w in got if issubclass(w.category, ReadWarning)] or err.splitlines()
        assert any(path.name in x and "info.share_group" in x for x in said), (args, said)
        assert any("info_version 7 is newer" in x for x in said), (args, said)
