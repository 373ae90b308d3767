"""The prefix-cache hit rate of one point from the server's counters (serving/cache_stats.py): the
Prometheus text parsed, counters summed over label sets, the rate from the deltas, and no /metrics no
error."""

from __future__ import annotations

import pytest

from llmbench.serving.bench import run_point
from llmbench.serving.cache_stats import hit_rate, parse, scrape, totals
from llmbench.serving.client import Endpoint
from llmbench.serving.fake_server import FakeOptions, Gauge, running
from llmbench.serving.load import Schedule
from llmbench.serving.records import from_columns
from tests.serving_helpers import sessions

VLLM_PAGE = """# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 500.0
vllm:prefix_cache_queries_created{engine="0",model_name="m"} 1.7e9
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 300.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 100.0
vllm:prefix_cache_hits_total{engine="0",model_name="other"} 99999.0
vllm:num_requests_running{engine="0",model_name="m"} 2.0
"""


def test_counters_are_summed_over_label_sets_of_the_served_model() -> None:
    got = totals(parse(VLLM_PAGE), "m")
    assert got == {"vllm:prefix_cache_queries_total": 1500.0, "vllm:prefix_cache_hits_total": 400.0}


def test_labels_with_spaces_braces_and_quotes_parse() -> None:
    page = 'sglang:cached_tokens_total{model_name="a {b} \\"c\\"",cache_source="device"} 7 1700000000000\n'
    [s] = parse(page)
    assert s.name == "sglang:cached_tokens_total" and s.value == 7.0
    assert s.labels["cache_source"] == "device"


def test_the_hit_rate_is_the_ratio_of_the_deltas_not_of_the_totals() -> None:
    before = {"vllm:prefix_cache_hits_total": 400.0, "vllm:prefix_cache_queries_total": 1500.0}
    after = {"vllm:prefix_cache_hits_total": 700.0, "vllm:prefix_cache_queries_total": 1900.0}
    rate, info = hit_rate(before, after)
    assert rate == pytest.approx(300 / 400)
    assert info == {"server": "vllm", "counters": ["vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"],
                    "hits_tokens": 300.0, "queries_tokens": 400.0}


def test_sglang_counts_cached_of_prompt_tokens() -> None:
    before = {"sglang:cached_tokens_total": 0.0, "sglang:prompt_tokens_total": 100.0}
    after = {"sglang:cached_tokens_total": 50.0, "sglang:prompt_tokens_total": 300.0}
    rate, info = hit_rate(before, after)
    assert rate == pytest.approx(0.25) and info["server"] == "sglang"


@pytest.mark.parametrize(("before", "after", "why"), [
    (None, None, "no /metrics"),
    ({}, {}, "no prefix-cache counters"),
    ({"vllm:prefix_cache_hits_total": 0.0, "vllm:prefix_cache_queries_total": 0.0},
     {"vllm:prefix_cache_hits_total": 0.0, "vllm:prefix_cache_queries_total": 0.0}, "no prefix-cache lookup"),
    ({"vllm:prefix_cache_hits_total": 10.0, "vllm:prefix_cache_queries_total": 90.0},
     {"vllm:prefix_cache_hits_total": 1.0, "vllm:prefix_cache_queries_total": 5.0}, "restarted"),
])
def test_no_rate_where_the_counters_cannot_give_one(before: dict | None, after: dict | None, why: str) -> None:
    rate, info = hit_rate(before, after)
    assert rate is None and why in info["not_measured"]


def test_a_server_without_metrics_gives_nothing_and_no_error() -> None:
    with running() as url:  # the fake server without counters: 404 on /metrics
        assert scrape(url) is None
    assert scrape("http://127.0.0.1:9") is None  # nothing listens there


def _point(opts: FakeOptions, turns: int = 3, kind: str = "completions",
           warm: tuple[int, int] = (0, 0)) -> tuple[dict, dict, Gauge]:
    """A multi-turn point against the fake server (its counters started at `warm` hits and queries, as a
    server that served earlier points); the metrics, the info and what the server saw."""
    g = Gauge(cache_hits=warm[0], cache_queries=warm[1])
    info: dict = {}
    with running(opts, g) as url:
        work = sessions(4, output_len=5, text="the same system prompt of many words for every user", turns=turns)
        metrics = run_point(Endpoint(url, kind, "fake"), work, Schedule(concurrency=2), info=info)
    return metrics, info, g


@pytest.mark.parametrize("kind", ["completions", "chat"])
def test_a_point_records_the_hit_rate_of_its_own_window(kind: str) -> None:
    metrics, info, g = _point(FakeOptions(prefix_cache=True, report_cached=True), kind=kind, warm=(10**6, 10**6))
    load = g.cache_log[1:]  # the first request the server saw was the test request, before the window
    assert len(load) == 12
    expected = sum(c for c, _ in load) / sum(w for _, w in load)
    assert 0 < expected < 1
    assert metrics["prefix_cache_hit_rate"].value == pytest.approx(expected)  # not ~1: the server's since its start
    assert metrics["prefix_cache_hit_rate"].unit == "ratio"
    counted = info["prefix_cache"]["server_counters"]
    assert counted["counters"] == ["vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"]
    assert counted["queries_tokens"] == sum(w for _, w in load)
    # the usage of each answer says the same tokens were cached
    assert metrics["cached_prompt_fraction"].value == pytest.approx(expected)
    records = from_columns(info["requests"])
    # each answer's cached tokens are one of the server's: the same multiset (two requests in flight at once
    # reach the server in either order, so records and the server's log need not be in one order)
    assert sorted(r.cached_tokens for r in records) == sorted(c for c, _ in load)
    later = [r for r in records if r.turn > 0]
    assert all(r.cached_tokens > 0 for r in later)  # a later turn begins with the turns before it


def test_a_server_without_metrics_records_no_cache_figure_and_the_point_runs() -> None:
    metrics, info, _ = _point(FakeOptions(), turns=2)
    assert metrics["failed_requests"].value == 0
    assert "prefix_cache_hit_rate" not in metrics and "cached_prompt_fraction" not in metrics
    assert "no /metrics" in info["prefix_cache"]["server_counters"]["not_measured"]
    assert "cached_tokens" not in info["requests"]


def test_counters_without_usage_give_the_hit_rate_alone() -> None:
    metrics, info, _ = _point(FakeOptions(prefix_cache=True), turns=2)
    assert "prefix_cache_hit_rate" in metrics and "cached_prompt_fraction" not in metrics
    assert "usage" not in info["prefix_cache"]
