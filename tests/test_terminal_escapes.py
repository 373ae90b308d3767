"""Control characters and rich markup from labels and params never reach the terminal raw from `run`,
`show` or `compare`; the result files keep the original text (issue 38)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_compare_support import H100_ENV, H200_ENV, case, metric, result_set

from llmbench.results import load, save
from tests.conftest import ROOT

HOSTILE = "\x1b]0;pwned\x07\x1b[2J[bold]loud[/bold]"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "llmbench", *args], capture_output=True, text=True, timeout=300,
                          env=env, cwd=cwd)


def assert_escaped(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert "\\x1b]0;pwned" in text and "[bold]loud[/bold]" in text, text


def hostile_set(env: dict[str, object], value: float) -> object:
    c = case("gemm", {"precision": "bf16", "shape": [64, 64, 64], "note": HOSTILE},
             {"tflops": metric("tflops", value)}, status="ok")
    bad = case("gemm", {"precision": "fp8", "shape": [64, 64, 64], "note": HOSTILE}, status="failed",
               reason=f"boom {HOSTILE}")
    return result_set(env, [c, bad])


@pytest.mark.slow
def test_show_and_compare_print_hostile_params_escaped(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "quickstart-1.json", tmp_path / "b" / "quickstart-2.json"
    save(hostile_set(H100_ENV, 700.0), a)  # type: ignore[arg-type]
    save(hostile_set(H200_ENV, 900.0), b)  # type: ignore[arg-type]
    shown = cli("show", str(a))
    assert shown.returncode in (0, 1), shown.stderr
    assert_escaped(shown.stdout + shown.stderr)
    compared = cli("compare", str(a), str(b), "--all")
    assert compared.returncode == 0, compared.stderr
    assert_escaped(compared.stdout + compared.stderr)
    assert load(a).cases[0].params["note"] == HOSTILE  # the file keeps what was measured


@pytest.mark.slow
def test_run_prints_a_hostile_param_escaped(tmp_path: Path, fault_plugin: str) -> None:
    suite = tmp_path / "hostile.toml"
    suite.write_text('name = "hostile"\n[defaults]\nmin_iters = 1\nwarmup_iters = 0\nmin_seconds = 0\n'
                     '[[case]]\nscenario = "shared"\nshare = "\\u001b]0;pwned\\u0007\\u001b[2J[bold]loud[/bold]"\n'
                     'kind = "raise"\n')
    r = cli("run", str(suite), "--cpu", "--out", str(tmp_path / "r"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert_escaped(r.stdout + r.stderr)
    rs = load(next((tmp_path / "r").glob("*/hostile-*.json")))
    assert rs.cases[0].params["share"] == HOSTILE
