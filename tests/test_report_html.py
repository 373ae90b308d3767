"""The HTML report: self-contained, and loads in a real headless browser without console messages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_compare_support import h100_set, h200_set, refs

from llmbench.report.html import Section, render_html
from llmbench.report.project import project

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and os.environ.get("LLMBENCH_REQUIRE_BROWSER"):
    raise RuntimeError("LLMBENCH_REQUIRE_BROWSER is set (CI) but chromium is not installed")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
]


def _page() -> str:
    a, b = h100_set(), h200_set()
    return render_html(
        [
            Section("H100 vs H200 (+ projection)", refs(a, b, project(a, "h200-sxm-141gb"))),
            Section("single set", refs(a)),
        ],
        "test report",
    )


def test_page_is_self_contained() -> None:
    page = _page()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<script" not in page and "Content-Security-Policy" in page
    assert page.count("<svg") >= 5 and page.count("<table") >= 8
    assert 'class="tag projected"' in page


def _load(path: Path, tmp: Path) -> tuple[str, list[str]]:
    """DOM after load and the console lines chromium logged (any console line is a failure for a page
    with no scripts: a blocked load, a CSP violation, an error)."""
    assert CHROMIUM is not None
    proc = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_report_loads_in_headless_chromium(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(_page(), encoding="utf-8")
    dom, console = _load(page, tmp_path)
    assert console == []
    assert dom.count("<table") >= 8 and "Scenario generate" in dom and "Geometric means of ratios" in dom
    assert "precision=bf16" in dom and "projected" in dom


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_console_check_does_catch_problems(tmp_path: Path) -> None:
    """Negative control: the same check flags a page that tries an external load."""
    page = tmp_path / "bad.html"
    page.write_text(
        _page().replace("</body>", '<img src="http://example.invalid/x.png"></body>'), encoding="utf-8"
    )
    _, console = _load(page, tmp_path)
    assert console, "an external image under the page's CSP must produce a console message"


def test_a_burn_timeline_is_charted_and_other_sets_get_no_timeline() -> None:
    from llmbench.report.inputs import SetRef
    from llmbench.report.plots import timeline_charts
    from llmbench.results import CaseResult, ResultSet

    tl = {"t_s": [1.0, 2.0, 3.0], "tflops": [700.0, 690.0, 600.0], "sm_clock_mhz": [1980, 1900, 1700],
          "power_w": [690.0, 700.0, 700.0], "temp_c": [50.0, 60.0, 70.0]}
    burn = CaseResult(id="burn/x", scenario="burn", params={"precision": "bf16"}, status="ok",
                      info={"timeline": tl, "throttled": True})
    charts = timeline_charts([SetRef(name="h200", rs=ResultSet(suite="burn", cases=[burn]))])
    assert len(charts) == 1 and "throttling flagged" in charts[0].title and charts[0].svg.startswith("<svg")
    plain = CaseResult(id="gemm/x", scenario="gemm", params={}, status="ok")
    assert timeline_charts([SetRef(name="h200", rs=ResultSet(suite="q", cases=[plain]))]) == []


def test_a_serving_sweep_of_two_gpus_gets_one_pareto_chart_naming_both() -> None:
    from llmbench.report.inputs import SetRef
    from llmbench.report.plots import pareto_charts, pareto_lines
    from llmbench.results import CaseResult, MetricResult, ResultSet

    def point(concurrency: int, per_user: float, per_gpu: float) -> CaseResult:
        metrics = {"tokens_per_s_per_user": MetricResult(value=per_user, unit="tok/s"),
                   "output_tokens_per_s_per_gpu": MetricResult(value=per_gpu, unit="tok/s")}
        return CaseResult(id=f"serving/{concurrency}", scenario="serving", status="ok", metrics=metrics,
                          params={"model": "m", "precision": "bf16", "concurrency": concurrency})

    a = ResultSet(suite="s", cases=[point(1, 90.0, 90.0), point(8, 60.0, 480.0)])
    b = ResultSet(suite="s", cases=[point(1, 110.0, 110.0), point(8, 80.0, 640.0)])
    sets = [SetRef(name="h100-sxm-80gb", rs=a), SetRef(name="h200-sxm-141gb", rs=b)]
    assert len(pareto_charts(sets)) == 1
    lines = pareto_lines(sets)
    assert [label.split()[0] for label, _ in lines] == ["h100-sxm-80gb", "h200-sxm-141gb"]
    assert [(x, y) for x, y, _ in lines[1][1]] == [(80.0, 640.0), (110.0, 110.0)]  # sorted by speed per user
    assert pareto_charts([SetRef(name="x", rs=ResultSet(suite="s", cases=[]))]) == []
