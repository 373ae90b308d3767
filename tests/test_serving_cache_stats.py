"""The prefix-cache hit rate of one point from the server's counters (serving/cache_stats.py): the
Prometheus text parsed, counters summed over label sets, the rate from the deltas, and no /metrics no
error."""

from __future__ import annotations

import pytest

from llmbench.serving.cache_stats import hit_rate, parse, scrape, totals

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
    from llmbench.serving.fake_server import running

    with running() as url:  # the fake server without counters: 404 on /metrics
        assert scrape(url) is None
    assert scrape("http://127.0.0.1:9") is None  # nothing listens there
