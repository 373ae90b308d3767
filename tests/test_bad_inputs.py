"""The newcomer's path: every bad input is one line on stderr, exit code 2, no traceback and no file
written; a run whose cases failed exits 1. The CLI runs in this process through `llmbench.cli.main`
(the function `python -m llmbench` calls), so each row costs milliseconds."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from llmbench.cli import main
from llmbench.errors import UserError
from llmbench.harness.isolation import check_gpu_count
from llmbench.registry import PLUGINS_ENV
from llmbench.results import CaseResult, ResultSet, save

SLUG = "cpu-x86_64"


def result_set(path: Path, suite: str = "quickstart", case_id: str = "gemm/aaaaaaaaaaaa") -> Path:
    rs = ResultSet(suite=suite, env={"gpu": {"slug": SLUG, "name": "none (CPU)", "count": 0}},
                   cases=[CaseResult(id=case_id, scenario="gemm", params={"precision": "fp32"}, status="skipped",
                                     reason="test")])
    save(rs, path)
    return path


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def invoke(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["llmbench", *args])
    on_term = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as exc:
        main()
    assert signal.getsignal(signal.SIGTERM) is on_term  # main() run in a process that goes on leaves it as it was
    code = exc.value.code
    return (code if isinstance(code, int) else 0), capsys.readouterr().err


def _setup_sets(tmp: Path) -> dict[str, str]:
    """The inputs the rows name: a JSON list, two good sets of one suite, one of another suite, a folder."""
    (tmp / "list.json").write_text("[1, 2, 3]")
    result_set(tmp / "a.json")
    result_set(tmp / "b.json")
    result_set(tmp / "other.json", suite="ceilings", case_id="bandwidth/bbbbbbbbbbbb")
    (tmp / "adir").mkdir()
    (tmp / "afile").write_text("x")
    (tmp / "matrix.toml").write_text('name = "m"\n[[case]]\nscenario = "gemm"\nmatrix.min_iters = [1, 2, 3]\n')
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    return {k: str(tmp / k) for k in ("list.json", "a.json", "b.json", "other.json", "adir", "afile",
                                      "matrix.toml", "deep.json")}


Row = tuple[str, Callable[[dict[str, str]], list[str]], str]
ROWS: list[Row] = [
    ("show a JSON list", lambda p: ["show", p["list.json"]], "JSON object"),
    ("compare a JSON list", lambda p: ["compare", p["list.json"], p["a.json"]], "JSON object"),
    ("report a JSON list", lambda p: ["report", p["list.json"], "--out", p["adir"] + "/r.html"], "JSON object"),
    ("report --out a folder", lambda p: ["report", p["a.json"], "--out", p["adir"]], "is a folder"),
    ("compare --out a folder", lambda p: ["compare", p["a.json"], p["b.json"], "--out", p["adir"]], "is a folder"),
    ("compare --out under a file", lambda p: ["compare", p["a.json"], p["b.json"], "--out", p["afile"] + "/x.md"],
     "is a file, not a folder"),
    ("specs --out a folder", lambda p: ["specs", "--out", p["adir"]], "is a folder"),
    ("project --out a folder", lambda p: ["project", p["a.json"], "--to", "h100-sxm-80gb", "--out", p["adir"]],
     "is a folder"),
    ("run --out a file", lambda p: ["run", "quickstart", "--cpu", "--out", p["afile"]], "must be a folder"),
    ("run --out under a file", lambda p: ["run", "quickstart", "--cpu", "--out", p["afile"] + "/results"],
     "is a file, not a folder"),
    ("run --gpus on a machine without a GPU", lambda p: ["run", "quickstart", "--gpus", "99", "--out", p["adir"]],
     "no NVIDIA GPU"),
    ("compare of suites that share no case", lambda p: ["compare", p["a.json"], p["other.json"]], "no case joins"),
    ("--filter with an invalid value", lambda p: ["run", "quickstart", "--cpu", "--filter", "precision=fp7",
                                                 "--out", p["adir"]], "precision=fp7 names no case"),
    ("a harness setting as a matrix axis", lambda p: ["run", p["matrix.toml"], "--cpu", "--out", p["adir"]],
     "settings cannot be matrix axes"),
    ("an unimportable plugin", lambda p: ["run", "quickstart", "--cpu", "--dry-run", "--out", p["adir"]],
     "must be an importable module"),
    # /proc takes no new files, even from root (for whom os.access says a folder is writable)
    ("specs --out where nothing can be written", lambda p: ["specs", "--out", "/proc/llmbench.md"],
     "cannot write in '/proc'"),
    ("report --out where nothing can be written", lambda p: ["report", p["a.json"], "--out", "/proc/r.html"],
     "cannot write in '/proc'"),
    ("compare --out where nothing can be written",
     lambda p: ["compare", p["a.json"], p["b.json"], "--out", "/proc/sub/x.md"], "cannot write in '/proc'"),
    ("run --out where nothing can be written", lambda p: ["run", "quickstart", "--cpu", "--out", "/proc/x"],
     "cannot write in '/proc'"),
    ("oneshot --out where nothing can be written", lambda p: ["oneshot", "--cpu", "--out", "/proc/x"],
     "cannot write in '/proc'"),
    ("serve-bench --out where nothing can be written",
     lambda p: ["serve-bench", "--url", "http://127.0.0.1:9", "--model", "m", "--rate", "1", "--out", "/proc/x"],
     "cannot write in '/proc'"),
    ("run --suites that is not a folder", lambda p: ["run", "quickstart", "--cpu", "--suites", p["afile"]],
     "is not a folder"),
    ("run --ceilings that does not exist", lambda p: ["run", "quickstart", "--cpu", "--ceilings", p["adir"] + "/no"],
     "does not exist"),
    ("serve-bench --url that is no URL",
     lambda p: ["serve-bench", "--url", "notaurl", "--model", "m", "--rate", "1", "--out", p["adir"]],
     "give the server's base URL"),
    ("show of JSON nested too deep to parse", lambda p: ["show", p["deep.json"]], "not a readable"),
    ("run --ceilings that is not a result set", lambda p: ["run", "quickstart", "--cpu", "--ceilings", p["afile"]],
     "is not a result set"),
]


@pytest.mark.parametrize(("name", "args", "says"), ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    name: str, args: Callable[[dict[str, str]], list[str]], says: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    paths = _setup_sets(tmp_path)
    monkeypatch.chdir(tmp_path)  # a default output (report.html, results/) would land here
    monkeypatch.setattr("llmbench.hardware.nvml.handles", lambda: [])  # a machine without a GPU
    if name == "an unimportable plugin":
        from llmbench.scenarios.base import SCENARIOS

        monkeypatch.setenv(PLUGINS_ENV, "no_such_llmbench_plugin_module")
        monkeypatch.setattr(SCENARIOS, "_loaded", False)
    before = files_under(tmp_path)
    code, err = invoke(args(paths), monkeypatch, capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert says in lines[0] and "Traceback" not in err
    assert files_under(tmp_path) == before


def test_a_suite_file_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    from llmbench.suite import load_suite

    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + b'name = "bom"\n[[case]]\nscenario = "gemm"\n')
    assert load_suite(str(tmp_path / "bom.toml")).name == "bom"


def test_a_nan_param_is_refused_where_its_field_has_no_bound_of_its_own() -> None:
    """A float param without a range (a plugin's) took NaN and the case failed at run time; inf stays
    valid where a field allows it (an unbounded request rate)."""
    from pydantic import ValidationError

    from tests.plugins.fault_scenarios import FaultParams

    with pytest.raises(ValidationError, match="seconds is NaN"):
        FaultParams(seconds=float("nan"))
    assert FaultParams(seconds=float("inf")).seconds == float("inf")


def test_the_filter_message_names_the_valid_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, err = invoke(["run", "quickstart", "--cpu", "--dry-run", "--filter", "precision=fp7,bf16"], monkeypatch, capsys)
    assert "precision=fp7 names no case" in err and "fp32" in err and "bf16" in err.split("valid")[1]


def test_gpus_is_checked_against_the_device_count() -> None:
    check_gpu_count("0,1", cpu=False, count=2)
    check_gpu_count("99", cpu=True, count=0)  # --cpu: the selection does not matter
    check_gpu_count("MIG-abc", cpu=False, count=1)  # a UUID: CUDA resolves it
    with pytest.raises(UserError, match=r"GPU index 2 does not exist.*valid indices: 0, 1"):
        check_gpu_count("0,2", cpu=False, count=2)
    with pytest.raises(UserError, match="no NVIDIA GPU"):
        check_gpu_count("0", cpu=False, count=0)


def test_show_of_a_folder_shows_its_newest_result_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    result_set(tmp_path / "quickstart-20260101T000000Z.json", suite="older-suite")
    newer = ResultSet(suite="newer-suite", created_at="2027-01-01T00:00:00Z", env={"gpu": {"slug": SLUG}})
    save(newer, tmp_path / "quickstart-20270101T000000Z.json")
    with pytest.raises(SystemExit) as exc:
        monkeypatch.setattr(sys, "argv", ["llmbench", "show", str(tmp_path)])
        main()
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert "newer-suite" in out and "older-suite" not in out


@pytest.mark.slow
def test_a_run_with_a_failed_case_exits_1_and_oom_only_with_strict(
    tmp_path: Path, fault_plugin: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "faults.toml"
    suite.write_text('name = "faults"\n[defaults]\nmin_iters = 1\nwarmup_iters = 0\nmin_seconds = 0\n'
                     '[[case]]\nscenario = "fault"\nmatrix.kind = ["ok", "skip", "oom"]\n')
    code, err = invoke(["run", str(suite), "--cpu", "--out", str(tmp_path / "r")], monkeypatch, capsys)
    assert code == 0, err
    code, err = invoke(["run", str(suite), "--cpu", "--strict", "--filter", "kind=oom", "--out", str(tmp_path / "r")],
                       monkeypatch, capsys)
    assert code == 1 and "1 oom" in err
    suite.write_text(suite.read_text().replace('"oom"]', '"oom", "raise"]'))
    code, err = invoke(["run", str(suite), "--cpu", "--filter", "kind=raise", "--out", str(tmp_path / "r")],
                       monkeypatch, capsys)
    assert code == 1 and "1 failed" in err
