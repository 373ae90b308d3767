"""Control characters and rich markup from labels and params never reach the terminal raw from `run`,
`show` or `compare`; the result files keep the original text."""

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


# every kind of character that reorders, hides or controls what a reader sees: C0 (NUL, BS, BEL, CR,
# ESC), DEL, C1 (CSI), bidi overrides and isolates, zero-width space and joiner, BOM, line separator
UNSEEN = "\x00\x08\x07\r\x1b\x7f\x9b\u202e\u2066\u200b\u200d\ufeff\u2028"
ESCAPED = ["\\x00", "\\x08", "\\x07", "\\x0d", "\\x1b", "\\x7f", "\\x9b", "\\u202e", "\\u2066", "\\u200b",
           "\\u200d", "\\ufeff", "\\u2028"]


def test_one_helper_escapes_every_control_and_format_character() -> None:
    from llmbench.report.escapes import escape_controls
    from llmbench.report.terminal import terminal_safe

    label = f"gpu{UNSEEN}end"
    for out in (escape_controls(label), terminal_safe(label)):
        assert not any(ch in out for ch in UNSEEN), repr(out)
        assert out == "gpu" + "".join(ESCAPED) + "end"
    kept = "tab\there\nnewline é — · × 中文 ✓"  # text, not control: as it is
    assert escape_controls(kept) == kept


def test_the_terminal_prints_bidi_and_zero_width_escaped() -> None:
    import io

    from llmbench.report.tables import Table
    from llmbench.report.terminal import SafeConsole, print_terminal

    buf = io.StringIO()
    console = SafeConsole(file=buf, width=200, force_terminal=False)
    print_terminal([Table(f"title{UNSEEN}", ["case"], [["label\u202eevil\u200b"]])], console)
    console.print(f"reason \u202e{UNSEEN}")
    out = buf.getvalue()
    assert not any(ch in out for ch in UNSEEN), repr(out)
    assert "label\\u202eevil\\u200b" in out and "\\x9b" in out


def test_the_html_report_writes_no_control_or_format_character(tmp_path: Path) -> None:
    from llmbench.api.bundling import sets_html

    hostile = f"note{UNSEEN}"
    c = case("gemm", {"precision": "bf16", "shape": [64, 64, 64], "note": hostile},
             {"tflops": metric("tflops", 700.0)}, status="ok")
    bad = case("gemm", {"precision": "fp8", "shape": [64, 64, 64], "note": hostile}, status="failed",
               reason=f"boom {hostile}")
    path = tmp_path / "quickstart-1.json"
    save(result_set(H100_ENV, [c, bad]), path)  # type: ignore[arg-type]
    page, why = sets_html([path], f"report {hostile}")
    assert page is not None, why
    assert not any(ch in page for ch in UNSEEN), [hex(ord(ch)) for ch in UNSEEN if ch in page]
    assert "note" + "".join(ESCAPED) in page  # shown, escaped: the reader sees something was there
    assert load(path).cases[0].params["note"] == hostile  # the file keeps what was measured
