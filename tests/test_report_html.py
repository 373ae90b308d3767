"""The HTML report: self-contained, and loads in a real headless browser without console messages."""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from chromium_cdp import CHART_TEXT_JS, CHROMIUM, Browser
from test_compare_support import H100_ENV, H200_ENV, generate_case, h100_set, h200_set, refs, result_set

from llmbench.analysis.project import project
from llmbench.analysis.sections import Section, section
from llmbench.report.firstscreen import AnswerBlock
from llmbench.report.html import render_html
from llmbench.report.tables import Table
from llmbench.results import ResultSet, Source

if CHROMIUM is None and os.environ.get("LLMBENCH_REQUIRE_BROWSER"):
    raise RuntimeError("LLMBENCH_REQUIRE_BROWSER is set (CI) but chromium is not installed")
NEEDS_CHROMIUM = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
# one pytest-xdist worker renders the cached pages below (tens of seconds of charts), not each. One group
# name only: pytest-xdist names a test's group after all its xdist_group marks joined, so a test marked
# with another group besides this one would land in a group (and maybe a worker) of its own. slow: the
# pages take tens of seconds to draw on two cores
pytestmark = [pytest.mark.xdist_group("report_html"), pytest.mark.slow]
MIN_TEXT_PX = 10.0  # the smallest chart text allowed, in CSS px at 100% zoom
PAGE_COLUMN_PX = 1100  # the page's content width (html.CSS max-width)
GPUS = ("H100 SXM5 80GB", "H200 SXM 141GB")  # the test sets' GPUs as the page names them (spec table)
SLUGS = ("h100-sxm-80gb", "h200-sxm-141gb")
SCREEN = (1400, 900)  # the window the page is read in: width, height (CSS px)
MAX_SCREENS = 10  # the page's height by default (everything folded), in screens
RATIO_RE = r"\d\.\d\dx \[\d\.\d\d, \d\.\d\d\]"  # a ratio with its interval: 1.16x [1.08, 1.24]


def _sweep(env: dict[str, Any], scale: float, seed: int) -> ResultSet:
    """A generate sweep over batch size and input length in two precisions, with a roofline share."""
    cases = [
        generate_case(p, batch, scale * tps * batch ** 0.8, ttft * (input_len / 128) ** 0.7, seed=seed + k,
                      efficiency=0.7, input_len=input_len)
        for k, (p, tps, ttft) in enumerate([("bf16", 160.0, 30.0), ("fp8", 240.0, 25.0)])
        for batch in (1, 8, 32) for input_len in (128, 2048)
    ]
    return result_set(env, cases, suite="inference")


def _sections() -> list[Section]:
    a, b = h100_set(), h200_set()
    return [
        section("H100 vs H200 (+ projection)", refs(a, b, project(a, "h200-sxm-141gb"))),
        section("sweep: H100 vs H200", refs(_sweep(H100_ENV, 1.0, 1), _sweep(H200_ENV, 1.3, 50))),
        section("single set", refs(a)),
    ]


@functools.cache
def _page() -> str:
    return render_html(_sections(), "test report")


def _published(rs: ResultSet, citation: str) -> ResultSet:
    return rs.model_copy(update={"source": Source(kind="published", citation=citation)})


@functools.cache
def _long_page() -> str:
    """A page of many sections, as `nox -s publish` makes: comparisons with sweeps, sets of one GPU,
    published references."""
    sweeps = [(_sweep(H100_ENV, 1.0, k), _sweep(H200_ENV, 1.2 + k / 10, 50 + k)) for k in range(4)]
    sections = [section(f"suite-{k}: H100 vs H200", refs(a, b)) for k, (a, b) in enumerate(sweeps)]
    sections += [section(f"one-{k}: H200 only", refs(b)) for k, (_, b) in enumerate(sweeps)]
    sections += [section(f"Published reference {k}", refs(_published(h100_set(), f"Vendor table {k}"),
                                                          _published(h200_set(), f"Vendor table {k}")))
                 for k in range(3)]
    return render_html(sections, "long report")


def test_page_is_self_contained() -> None:
    page = _page()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<script" not in page and "Content-Security-Policy" in page
    assert page.count("<svg") >= 5 and page.count("<table") >= 8
    assert 'class="tag projected"' in page


def test_the_answer_comes_first_then_the_projection_check_contents_and_folded_sections() -> None:
    page = _page()
    answer, check = page.index('id="answer"'), page.index('id="projection-check"')
    toc, first_section = page.index('class="toc"'), page.index('<section id="s1-')
    assert answer < check < toc < first_section
    head = page[answer:check]
    assert f"<h2>{GPUS[1]} vs {GPUS[0]}</h2>" in head  # GPUs by name ...
    assert not any(slug in head for slug in SLUGS)  # ... their slugs only in the details
    assert re.search(RATIO_RE, head) and "not measured" in head  # a ratio with its interval; the noise floor
    assert f"<h2>Projection check: {GPUS[0]} projected to {GPUS[1]} vs measured {GPUS[1]}</h2>" in page
    assert "Projection error" not in page
    for anchor in re.findall(r'href="#([^"]+)"', page):
        assert f'id="{anchor}"' in page
    assert "published" not in page.split("<body>")[1].split("</p>")[0]  # no tag explained that is not used
    for part in re.findall(r'<section id="s\d.*?</section>', page, flags=re.S):
        unfolded = re.sub(r"<details>.*?</details>", "", part, flags=re.S)
        assert unfolded.count("<figure") <= 1 and "<table" not in unfolded  # the rest is folded
        assert re.search(r"<details><summary>Tables \(\d+\)</summary>", part)
        assert f"= {SLUGS[0]}" in part  # every part's sets hold the H100's, named with its slug


def test_the_projection_check_heading_names_no_particular_gpu() -> None:
    """The generic report serves any two GPUs: its own words name none; the GPUs come from the data."""
    page = _page()
    summary = page[page.index('id="projection-check"'):].split("</summary>")[0]
    assert "Projection check" in summary and not re.search(r"[AHL]\d{2,3}\b", summary)


def test_answer_blocks_given_come_first_in_their_order() -> None:
    """The hook for another answer (H100 vs A100): blocks passed in come first, in the order given."""
    other = AnswerBlock("H100 vs A100", "the other answer", [Table("decode", ["workload", "ratio"], [["x", "2.00x"]])])
    page = render_html(_sections(), "t", answers=[other])
    assert page.index("<h2>H100 vs A100</h2>") < page.index('id="projection-check"')
    assert f"<h2>{GPUS[1]} vs {GPUS[0]}</h2>" not in page  # the caller chose the answers
    assert "<h2>What was measured</h2>" in render_html([section("one", refs(h100_set()))])


def test_every_id_is_unique_and_every_reference_resolves() -> None:
    """Charts reuse SVG ids (hatch patterns, markers); a browser takes the first of an id on the page,
    and one inside a folded <details> draws nothing: a published bar in an open section went blank."""
    page = _long_page()
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids)) and page.count("<pattern") >= 2
    refs_ = set(re.findall(r'url\(#([^)]+)\)', page)) | set(re.findall(r'href="#([^"]+)"', page))
    assert refs_ and refs_ <= set(ids)


def test_each_source_text_appears_once() -> None:
    """Two published sets of one source, with tables that each repeated it: the page names it once."""
    page = _long_page()
    for k in range(3):
        assert page.count(f"Vendor table {k}") == 1, k


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
    assert len(charts) >= 7
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


OPEN_ALL_JS = "document.querySelectorAll('details').forEach(d => d.open = true)"
# The answer's first table: where it ends on the page, its heading rows (one per suite) and its ratios.
# The page's first answer table (the H100-vs-A100 answer where publish puts it first, else the GPU pairs'):
# where it starts and ends, and how many of its cells hold a ratio, in all and on the first screen.
FIRST_ANSWER_JS = """(() => {
  const re = new RegExp(RATIO_RE);
  const table = document.querySelector('section.answer table, #answer table');
  if (!table) return null;
  const r = table.getBoundingClientRect();
  const cells = [...table.querySelectorAll('td')].filter(td => re.test(td.textContent));
  return {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, id: table.closest('section').id,
          groups: [...table.querySelectorAll('tr.group')].map(tr => tr.textContent), ratios: cells.length,
          ratios_in_view: cells.filter(td => td.getBoundingClientRect().bottom + window.scrollY <= SCREEN_H).length};
})()""".replace("RATIO_RE", json.dumps(RATIO_RE)).replace("SCREEN_H", str(SCREEN[1]))
COMMITTED_REPORT = Path(__file__).resolve().parents[1] / "results" / "report.html"


@NEEDS_CHROMIUM
@pytest.mark.parametrize("which", ["many sections", "results/report.html"])
def test_the_page_is_a_few_screens_and_its_first_screen_holds_the_answer(which: str, tmp_path: Path) -> None:
    """At 1400 x 900 px: the page, details folded, is at most MAX_SCREENS screens tall, and the answer's
    first table, a ratio with its interval per suite, ends on the first screen; the published page as
    committed, too."""
    page = tmp_path / "page.html"
    if which == "many sections":
        page.write_text(_long_page(), encoding="utf-8")
    elif COMMITTED_REPORT.exists():
        page = COMMITTED_REPORT
    else:
        pytest.skip("no committed results/report.html")
    with Browser(*SCREEN) as b:
        b.open(page)
        height = b.evaluate("document.documentElement.scrollHeight")
        first = b.evaluate(FIRST_ANSWER_JS)
        b.evaluate(OPEN_ALL_JS)
        unfolded = b.evaluate("document.documentElement.scrollHeight")
        console = b.console
    assert console == []
    assert height <= MAX_SCREENS * SCREEN[1], f"{height} px: {height / SCREEN[1]:.1f} screens"
    assert unfolded > 2 * height  # what is folded is most of the page: the check measures something
    assert first is not None and first["top"] < SCREEN[1] / 2, first  # the answer starts high on the first screen
    if which == "many sections":  # the pair answer: the whole table in view, a ratio with its interval per suite
        assert first["bottom"] <= SCREEN[1], first
        assert len(first["groups"]) >= 2 and first["ratios"] >= len(first["groups"])
        assert [g.split(":")[0] for g in first["groups"]] == [f"suite-{k}" for k in range(4)]
    else:  # the published page opens with what was measured: a ratio per suite, most of them on the first screen
        assert first["id"] == "answer" and first["ratios_in_view"] >= 5, first


@NEEDS_CHROMIUM
def test_report_loads_in_chromium_with_readable_charts(tmp_path: Path) -> None:
    """In a real browser: no console message (any is a failure for a page with no scripts: a blocked
    load, a CSP violation), every chart's text at least MIN_TEXT_PX on screen at 100% zoom in a
    1280 px window with every <details> open, and both GPUs named on the sweep's charts; a screenshot
    of the first screen."""
    page = tmp_path / "report.html"
    page.write_text(_page(), encoding="utf-8")
    with Browser(width=1280, height=900) as b:
        b.open(page)
        b.evaluate(OPEN_ALL_JS)
        figures = b.evaluate(CHART_TEXT_JS)
        tables = b.evaluate("document.querySelectorAll('table').length")
        b.screenshot(tmp_path / "first.png")
        console = b.console
    assert console == []
    assert tables >= 8 and len(figures) >= 7
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
    from llmbench.analysis.inputs import SetRef
    from llmbench.report.charts import timeline_charts
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
    from llmbench.analysis.inputs import SetRef
    from llmbench.report.charts import _pareto_series, pareto_charts
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
    lines = _pareto_series(sets)
    assert [label.split()[0] for _, label, _ in lines] == ["h100-sxm-80gb", "h200-sxm-141gb"]
    assert [(x, y) for x, y, _ in lines[1][2]] == [(80.0, 640.0), (110.0, 110.0)]  # sorted by speed per user
    assert pareto_charts([SetRef(name="x", rs=ResultSet(suite="s", cases=[]))]) == []


def test_long_case_labels_leave_the_speedup_chart_drawable() -> None:
    """A lone joined case is labelled by all its params (a QLoRA case: 251 characters), which once
    squeezed the bars' axes to nothing: matplotlib warned and laid nothing out."""
    import warnings

    from test_compare_support import case, metric

    from llmbench.analysis.compare import compare
    from llmbench.report.charts import speedup_charts

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


def test_a_long_bar_label_is_shortened_with_its_full_text_as_tooltip() -> None:
    from test_compare_support import case, metric

    from llmbench.report.charts import BAR_LABEL_CHARS, BAR_LABEL_LINES, short_label, value_bars

    params = {"engine": "hf", "model": "llama-3-8b", "method": "qlora", "double_quant": True, "lora_rank": 16,
              "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
              "optimizer": "adamw", "batch_size": 4, "seq_len": 1024, "max_batch": False}
    one = case("qlora", params, {"train_tokens_per_s": metric("train_tokens_per_s", 1000.0)})
    (chart,) = value_bars(refs(result_set(H100_ENV, [one], suite="qlora")), "qlora")
    tick = re.search(r'<g id="case-[0-9a-f]+-0"><title>([^<]*)</title>(.*?)</g>', chart.svg, flags=re.S)
    assert tick, "the bar's label carries a tooltip"
    full, shown = tick.group(1), re.findall(r"<text[^>]*>([^<]*)</text>", tick.group(2))
    assert "target_modules=q_projxk_projxv_proj" in full and "max_batch=False" in full  # every param
    assert 1 <= len(shown) <= BAR_LABEL_LINES and all(len(line) <= BAR_LABEL_CHARS for line in shown)
    assert shown[-1].endswith("…") and "max_batch" not in " ".join(shown)
    assert short_label("precision=bf16 batch_size=8") == "precision=bf16 batch_size=8"  # a short one stays


def test_a_line_joins_only_shapes_of_one_proportion() -> None:
    """gemm at cubes of three sizes and at a Llama projection's shape: the cubes make one line, the
    other shape is no point on it; two unrelated shapes alone make no line at all (bars instead)."""
    from test_compare_support import case, metric

    from llmbench.report.charts import scenario_charts, throughput_chart

    def gemm(shape: list[int], tflops: float) -> Any:
        return case("gemm", {"precision": "bf16", "shape": shape}, {"tflops": metric("tflops", tflops)})

    cubes = [gemm([n, n, n], 100.0 * k) for k, n in enumerate((1024, 4096, 8192), 1)]
    mixed = refs(result_set(H100_ENV, [*cubes, gemm([16, 14336, 4096], 50.0)]))
    chart = throughput_chart(mixed, "gemm")
    assert chart is not None and "shape proportions 1x1x1" in chart.svg
    assert "1x896x256" not in chart.svg  # the lone shape has no panel: its case is in the tables
    pair = refs(result_set(H100_ENV, [gemm([8192, 8192, 8192], 700.0), gemm([16, 14336, 4096], 50.0)]))
    assert throughput_chart(pair, "gemm") is None
    assert [c.title for c in scenario_charts(pair, "gemm")] == ["gemm: tflops (TFLOP/s) per case"]


def test_a_case_of_both_gpus_is_labelled_by_its_params_not_its_id() -> None:
    """One qlora case on two GPUs: its bars are labelled by its params (the case of each set counted
    once), as a case alone in its scenario is."""
    from test_compare_support import case, metric

    from llmbench.report.charts import value_bars

    params = {"model": "llama-3-8b", "batch_size": 4}
    sides = [result_set(env, [case("qlora", params, {"train_tokens_per_s": metric("train_tokens_per_s", v)})])
             for env, v in ((H100_ENV, 900.0), (H200_ENV, 1000.0))]
    (chart,) = value_bars(refs(*sides), "qlora")
    assert "model=llama-3-8b batch_size=4" in chart.svg and "qlora/" not in chart.svg
