"""Edges a newcomer hits on a fresh clone: each bad input is one line and exit code 2 (never a traceback,
never a silent exit), typos get their fix, budgets read alike in run and oneshot, and a run's lines fit
an 80-column terminal. Plugins and the case processes run as real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.registry import PLUGINS_ENV
from llmbench.results import load
from tests.conftest import ROOT, tracked, write
from tests.test_bad_inputs import invoke

LONG = "a" * 300


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m llmbench ARGS` in a process of its own (a plugin's sys.exit ends only that)."""
    return subprocess.run([sys.executable, "-m", "llmbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "80", **(env or {})})


def one_line_exit_2(code: int, err: str, *says: str) -> None:
    """Bad input: exit 2, one line naming it, no traceback."""
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and all(s in lines[0] for s in says), err


# ------------------------------------------------------------------------------------------------- names


def test_a_300_character_suite_name_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = invoke(["run", LONG, "--cpu", "--dry-run"], monkeypatch, capsys)
    one_line_exit_2(code, err, "unknown suite 'aaaa")
    assert len(err.strip()) < 200
    suite = write(tmp_path, f'name = "{LONG}"\n[[case]]\nscenario = "gemm"\n')
    code, err = invoke(["run", str(suite), "--cpu", "--out", str(tmp_path / "r")], monkeypatch, capsys)
    one_line_exit_2(code, err, "suite name must be at most 100 characters")
    assert not (tmp_path / "r").exists()  # refused before any case ran, nothing written


def test_a_suite_name_typo_says_did_you_mean_in_a_short_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = invoke(["run", "quickstrat", "--cpu", "--dry-run"], monkeypatch, capsys)
    one_line_exit_2(code, err, "did you mean 'quickstart'?", "llmbench list suites")
    assert len(err.strip()) <= 160


def test_an_unknown_scenario_or_precision_in_a_suite_says_did_you_mean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = invoke(["run", str(write(tmp_path, '[[case]]\nscenario = "gemn"\n')), "--cpu", "--dry-run"],
                       monkeypatch, capsys)
    one_line_exit_2(code, err, "did you mean 'gemm'?")
    bad = write(tmp_path, '[[case]]\nscenario = "gemm"\nprecision = "bf61"\n', "p.toml")
    code, err = invoke(["run", str(bad), "--cpu", "--dry-run"], monkeypatch, capsys)
    one_line_exit_2(code, err, "did you mean 'bf16'?")


# ----------------------------------------------------------------------------------------------- plugins

PLUGINS = {
    "raises": ('raise RuntimeError("plugin bug")\n', "failed at import (RuntimeError: plugin bug)"),
    "exits": ("import sys\nsys.exit(0)\n", "failed at import (sys.exit(0))"),
    "twice": ("from llmbench.scenarios.base import SCENARIOS\n\n@SCENARIOS.register('gemm')\nclass Gemm:\n"
              "    pass\n", "scenario 'gemm' is registered twice"),
}


@pytest.mark.parametrize("kind", sorted(PLUGINS))
def test_a_broken_plugin_is_one_line_naming_it(kind: str, tmp_path: Path) -> None:
    text, says = PLUGINS[kind]
    (tmp_path / f"plugin_{kind}.py").write_text(text)
    env = {PLUGINS_ENV: f"plugin_{kind}", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    r = cli("run", "quickstart", "--cpu", "--out", str(tmp_path / "r"), env=env)
    one_line_exit_2(r.returncode, r.stderr, f"plugin module 'plugin_{kind}'", says)
    assert not (tmp_path / "r").exists() and not r.stdout.strip()


@pytest.mark.slow
def test_a_plugin_failing_in_the_case_process_is_the_cases_reason(tmp_path: Path) -> None:
    # fine in the runner (and its fingerprint process), a silent exit in each case process
    (tmp_path / "plugin_in_case.py").write_text(
        "import sys\nif sys.argv[0].endswith('worker.py') and sys.argv[1:2] == ['case']:\n    sys.exit(0)\n")
    env = {PLUGINS_ENV: "plugin_in_case", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    r = cli("run", "quickstart", "--cpu", "-k", "shape=1024x1024x1024", "-k", "precision=fp32",
            "--out", str(tmp_path / "r"), env=env)
    assert r.returncode == 1, r.stderr
    (case,) = load(next((tmp_path / "r").glob("*/quickstart-*.json"))).cases
    assert case.status == "failed"
    assert "plugin module 'plugin_in_case' failed at import (sys.exit(0))" in (case.reason or "")


# ----------------------------------------------------------------------------------- where results go


def _out_rows(tmp: Path) -> dict[str, tuple[list[str], dict[str, str], str]]:
    """Each row: extra run arguments, environment, what the line says. Unwritable places are a file where a
    folder should be (CI runs as root, whom chmod does not stop)."""
    from llmbench.hardware.fingerprint import cpu_slug

    (tmp / "dangling").symlink_to(tmp / "gone")
    (tmp / "withfile").mkdir()
    (tmp / "withfile" / cpu_slug()).write_text("not a folder")
    (tmp / "afile").write_text("x")
    return {
        "a dangling --out link": (["--out", str(tmp / "dangling")], {}, "which does not exist"),
        "a file where <out>/<slug> goes": (["--out", str(tmp / "withfile")], {}, f"{cpu_slug()}' is a file"),
        "LLMBENCH_COMPILE_CACHE a file": (["--out", str(tmp / "r")], {"LLMBENCH_COMPILE_CACHE": str(tmp / "afile")},
                                          "LLMBENCH_COMPILE_CACHE"),
        "LLMBENCH_COMPILE_CACHE under a file": (["--out", str(tmp / "r")],
                                                {"LLMBENCH_COMPILE_CACHE": str(tmp / "afile" / "cache")},
                                                "is a file, not a folder"),
    }


@pytest.mark.parametrize("row", ["a dangling --out link", "a file where <out>/<slug> goes",
                                 "LLMBENCH_COMPILE_CACHE a file", "LLMBENCH_COMPILE_CACHE under a file"])
@pytest.mark.parametrize("command", ["run", "oneshot"])
def test_an_unusable_place_for_results_is_one_line_before_any_case(
    row: str, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args, env, says = _out_rows(tmp_path)[row]
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    before = {p for p in tmp_path.rglob("*")}
    one_case = ["-k", "shape=1024x1024x1024", "-k", "precision=fp32"]  # what today's code would run
    code, err = invoke([command, "quickstart", "--cpu", *(one_case if command == "run" else ["--dry-run"]), *args],
                       monkeypatch, capsys)
    one_line_exit_2(code, err, says)
    assert {p for p in tmp_path.rglob("*")} == before


# ------------------------------------------------------------------------------------------------ budget


@pytest.mark.parametrize(("text", "seconds"), [("15m", 900), ("1h30m", 5400), ("900s", 900), ("900", 900),
                                               ("15", 15), ("1.5h", 5400)])
def test_run_and_oneshot_read_a_budget_alike(text: str, seconds: float) -> None:
    from llmbench.commands.common import parse_budget

    assert parse_budget(text) == seconds


@pytest.mark.parametrize("command", ["run", "oneshot"])
def test_budget_15m_is_taken_and_a_bare_15_is_warned_as_seconds(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [command, "quickstart", "--cpu", "--dry-run", "--out", str(tmp_path)]
    code, err = invoke([*base, "--budget", "15m"], monkeypatch, capsys)
    assert code == 0 and "warning" not in err, err
    code, err = invoke([*base, "--budget", "15"], monkeypatch, capsys)
    assert code == 0 and err.count("--budget 15 is 15 s; write 15m for minutes") == 1, err


@pytest.mark.parametrize("command", ["run", "oneshot"])
def test_a_dry_run_says_when_the_plan_does_not_fit_the_budget(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["llmbench", command, "quickstart", "--cpu", "--dry-run", "--out", str(tmp_path),
                                      "--budget", "1s"])
    from llmbench.cli import main

    with pytest.raises(SystemExit):
        main()
    out = " ".join(capsys.readouterr().out.split())
    assert "does not fit --budget 1 s:" in out and "left for --resume" in out
    monkeypatch.setattr(sys, "argv", [*sys.argv[:-1], "1h"])
    with pytest.raises(SystemExit):
        main()
    assert "fits --budget 60 min" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------- a busy host


def test_a_busy_host_is_warned_about_and_an_idle_one_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmbench.hardware import fingerprint

    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "getloadavg", lambda: (6.0, 5.0, 4.0))
    (warning,) = fingerprint.environment_warnings({})
    assert "host was busy" in warning and "load average 6.0 on 4 CPUs" in warning
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    assert fingerprint.environment_warnings({}) == []


@pytest.mark.slow
def test_a_run_on_a_busy_host_records_the_warning_in_its_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (64.0, 64.0, 64.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setenv("COLUMNS", "200")
    code, err = invoke(["run", "quickstart", "--cpu", "-k", "precision=fp8", "--out", str(tmp_path)],
                       monkeypatch, capsys)  # cases this CPU skips: no case process
    assert code == 0, err
    rs = load(next(tmp_path.glob("*/quickstart-*.json")))
    assert [w for w in rs.warnings if "host was busy" in w]


def test_results_holds_result_sets_bundles_and_pages_not_work_logs() -> None:
    logs = sorted(str(p.relative_to(ROOT)) for p in tracked("results") if p.suffix in (".log", ".txt"))
    assert not logs, f"work logs belong in docs/evidence/<gpu-slug>/: {logs[:5]}"


# ------------------------------------------------------------------------------------- an 80-column terminal


@pytest.mark.slow
def test_a_cpu_runs_case_lines_fit_80_columns_unwrapped(tmp_path: Path) -> None:
    r = cli("run", "quickstart", "--cpu", "-k", "precision=tf32,fp8", "--out", "r", cwd=tmp_path,
            env={"PYTHONPATH": str(ROOT)})  # a pipe, not a tty: rich wraps at COLUMNS
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), r.stdout
    heads = [k for k, line in enumerate(lines) if line.startswith("  skipped  ")]
    assert len(heads) == 4, r.stdout
    for k in heads:  # the label whole on its line, the reason from its start on the next, indented
        assert lines[k].startswith("  skipped  gemm precision=") and "shape=" in lines[k], r.stdout
        assert lines[k + 1].lstrip().startswith(("tf32 needs", "fp8 needs")) and lines[k + 1].startswith(" " * 11)


def test_a_case_line_keeps_its_label_whole_and_its_detail_under_it() -> None:
    from llmbench.report.terminal import DETAIL_LINES, case_lines

    assert case_lines("ok", "gemm shape=8x8x8", "tflops 1.0", 80) == ["  ok       gemm shape=8x8x8: tflops 1.0"]
    label = "generate model=llama-3-8b precision=fp8 batch_size=32 input_len=2048 output_len=128 mode=compiled"
    reason = "fp8 needs compute capability >= 8.9; this machine has none " + "and more words " * 30
    got = case_lines("skipped", label, reason + "\nsecond line", 80)
    assert all(len(line) <= 80 for line in got)
    head = [line for line in got if not line.startswith(" " * 13)]
    assert " ".join(line.strip() for line in head).removeprefix("skipped ").strip() == label + ":"
    body = got[len(head):]
    assert body[0].strip().startswith("fp8 needs compute capability >= 8.9; this machine has none")
    assert len(body) == DETAIL_LINES and body[-1].endswith(" …") and "second line" not in " ".join(body)


@pytest.mark.parametrize("command", ["run", "oneshot", "compare"])
def test_help_fits_80_columns(command: str) -> None:
    r = cli(command, "--help")
    assert r.returncode == 0 and all(len(line) <= 80 for line in r.stdout.splitlines()), r.stdout
