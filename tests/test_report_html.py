"""The HTML report: self-contained, and loads in a real headless browser without console messages."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

import pytest
from chromium_cdp import CHART_TEXT_JS, CHROMIUM, Browser
from test_compare_support import H100_ENV, H200_ENV, generate_case, h100_set, h200_set, refs, result_set

from llmbench.report.html import Section, render_html
from llmbench.report.project import project
from llmbench.results import ResultSet

if CHROMIUM is None and os.environ.get("LLMBENCH_REQUIRE_BROWSER"):
    raise RuntimeError("LLMBENCH_REQUIRE_BROWSER is set (CI) but chromium is not installed")
NEEDS_CHROMIUM = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
MIN_TEXT_PX = 10.0  # the smallest chart text allowed, in CSS px at 100% zoom
PAGE_COLUMN_PX = 1100  # the page's content width (html.CSS max-width)
GPUS = ("h100-sxm-80gb", "h200-sxm-141gb")


def _sweep(env: dict[str, Any], scale: float, seed: int) -> ResultSet:
    """A generate sweep over batch size and input length in two precisions, with a roofline share."""
    cases = [
        generate_case(p, batch, scale * tps * batch ** 0.8, ttft * (input_len / 128) ** 0.7, seed=seed + k,
                      efficiency=0.7, input_len=input_len)
        for k, (p, tps, ttft) in enumerate([("bf16", 160.0, 30.0), ("fp8", 240.0, 25.0)])
        for batch in (1, 8, 32) for input_len in (128, 2048)
    ]
    return result_set(env, cases, suite="inference")


@functools.cache
def _page() -> str:
    a, b = h100_set(), h200_set()
    return render_html(
        [
            Section("H100 vs H200 (+ projection)", refs(a, b, project(a, "h200-sxm-141gb"))),
            Section("sweep: H100 vs H200", refs(_sweep(H100_ENV, 1.0, 1), _sweep(H200_ENV, 1.3, 50))),
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


def test_the_answer_comes_first_then_contents_then_sections() -> None:
    page = _page()
    answer, toc = page.index('id="answer"'), page.index('class="toc"')
    first_section = page.index("<section id=\"s1-")
    assert answer < toc < first_section
    head = page[answer:toc]
    assert "Projection check" in head and "Noise floor: not measured for this pair" in head
    assert "h200-sxm-141gb runs at 1." in head
    assert re.search(r"1\.\d\dx \[1\.\d\d, 1\.\d\d\]", head)  # a headline ratio with its interval
    for anchor in re.findall(r'href="#([^"]+)"', page):
        assert f'id="{anchor}"' in page
    assert "<details><summary>" in page  # the long per-case tables are folded
    assert "published" not in page.split("<body>")[1].split("</p>")[0]  # no tag explained that is not used


def _svg_text_px(svg: str) -> list[float]:
    """The rendered size (CSS px at 100% zoom) of every text of a chart: SVG user units are points."""
    width_pt = float(re.search(r'<svg[^>]*width="([\d.]+)pt"', svg).group(1))  # type: ignore[union-attr]
    scale = min(1.0, PAGE_COLUMN_PX / (width_pt * 4 / 3))
    return [float(px) * 4 / 3 * scale for px in re.findall(r"font-size: ([\d.]+)px", svg)]


def _is_line_chart(title: str) -> bool:
    """The sweep's lines: throughput against batch size, TTFT against input length, roofline share."""
    return title.startswith("generate:") and " against " in title and "speed-up" not in title


def _charts(page: str) -> list[tuple[str, str]]:
    return re.findall(r'<figure aria-label="([^"]*)">(<svg.*?</svg>)\s*</figure>', page, flags=re.S)


def test_chart_text_is_readable_and_two_gpu_charts_name_both() -> None:
    charts = _charts(_page())
    assert len(charts) >= 8
    for title, svg in charts:
        sizes = _svg_text_px(svg)
        assert sizes and min(sizes) >= MIN_TEXT_PX, (title, min(sizes, default=None))
    sweep = [(t, svg) for t, svg in charts if _is_line_chart(t)]
    assert {t.split(":")[1].split(" against")[0].strip() for t, _ in sweep} >= {
        "decode_tokens_per_s", "time to first token", "achieved share of the roofline"}
    for title, svg in sweep + [(t, s) for t, s in charts if "speed-up" in t]:
        for gpu in GPUS:
            assert gpu in svg, (title, gpu)


def test_a_series_has_one_style_on_every_chart() -> None:
    from llmbench.report.styles import series_style

    assert series_style(0, "bf16") == series_style(0, "bf16")
    assert len({series_style(g, p) for g in (0, 1) for p in ("bf16", "fp8", "int4", "nf4")}) == 8
    page = _page()
    bf16_h200 = series_style(1, "bf16").color
    sweep = [svg for t, svg in _charts(page) if _is_line_chart(t)]
    assert len(sweep) == 3
    assert all(bf16_h200 in svg for svg in sweep)


@NEEDS_CHROMIUM
def test_report_loads_in_chromium_with_readable_charts(tmp_path: Path) -> None:
    """In a real browser: no console message (any is a failure for a page with no scripts: a blocked
    load, a CSP violation), every chart's text at least MIN_TEXT_PX on screen at 100% zoom in a
    1280 px window, and both GPUs named on the sweep's charts; a screenshot of the first screen."""
    page = tmp_path / "report.html"
    page.write_text(_page(), encoding="utf-8")
    with Browser(width=1280, height=900) as b:
        b.open(page)
        figures = b.evaluate(CHART_TEXT_JS)
        tables = b.evaluate("document.querySelectorAll('table').length")
        b.screenshot(tmp_path / "first.png")
        console = b.console
    assert console == []
    assert tables >= 8 and len(figures) >= 8
    for f in figures:
        assert f["n"] > 0 and f["min_px"] >= MIN_TEXT_PX, f["title"]
    for f in figures:
        if _is_line_chart(f["title"]):
            assert all(gpu in f["text"] for gpu in GPUS), f["title"]
    png = (tmp_path / "first.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1280


@NEEDS_CHROMIUM
def test_console_check_does_catch_problems(tmp_path: Path) -> None:
    """Negative control: the same check flags a page that tries an external load."""
    page = tmp_path / "bad.html"
    page.write_text(
        _page().replace("</body>", '<img src="http://example.invalid/x.png"></body>'), encoding="utf-8"
    )
    with Browser() as b:
        b.open(page)
        console = b.console
    assert any("Content Security Policy" in line for line in console), console


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


def test_long_case_labels_leave_the_speedup_chart_drawable() -> None:
    """A lone joined case is labelled by all its params (a QLoRA case: 251 characters), which once
    squeezed the bars' axes to nothing: matplotlib warned and laid nothing out."""
    import warnings

    from test_compare_support import case, metric

    from llmbench.report.charts import speedup_charts
    from llmbench.report.compare import compare

    def sides(env: dict[str, Any], rate: float, seed: int) -> ResultSet:
        params = {"engine": "hf", "model": "llama-3-8b", "method": "qlora", "double_quant": True, "lora_rank": 16,
                  "lora_alpha": 32, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                       "down_proj"], "gradient_checkpointing": True,
                  "optimizer": "adamw", "batch_size": 4, "seq_len": 1024, "lr": 0.0001, "max_batch": False}
        return result_set(env, [case("qlora", params, {"train_tokens_per_s": metric("train_tokens_per_s", rate,
                                                                                       seed=seed)})], suite="qlora")

    cmp = compare(refs(sides(H100_ENV, 1000.0, 1), sides(H200_ENV, 1100.0, 20)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        charts = speedup_charts(cmp)
    assert len(charts) == 1 and "<svg" in charts[0].svg
