"""The server's prefix cache over one load point, from its own counters.

vLLM and SGLang count prefix-cache lookups in tokens since they started, on GET /metrics (Prometheus
text). A cumulative rate mixes in every earlier point, so the point reads the counters just before its
load and just after, and the hit rate of this run is the ratio of the deltas:

- vLLM (V1): `vllm:prefix_cache_hits` / `vllm:prefix_cache_queries` (tokens found in the cache / tokens
  looked up), or their names before vLLM 0.9, `vllm:gpu_prefix_cache_hits` / `..._queries`;
- SGLang (`--enable-metrics`): `sglang:cached_tokens` / `sglang:prompt_tokens`. Its `sglang:cache_hit_rate`
  is a gauge of the last scheduling step, not of a window, and is not used.

Label sets are summed (data-parallel engines, SGLang's cache tiers); where a sample names its model, only
the served model's count. A server with no /metrics, or none of these counters, gives nothing and no
error. Other clients' requests to the same server in the window are counted too.

Beside it, from the requests themselves: the prompt tokens each answer's usage says were cached
(`cached_tokens`, client.py), summed over the point, of its prompt tokens.
"""

from __future__ import annotations

import math
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from llmbench.results import MetricResult
from llmbench.serving.records import NO_COUNT, RequestRecord

SCRAPE_TIMEOUT_S = 5.0
MAX_BYTES = 32 * 2**20  # a /metrics page larger than this is not read further


@dataclass(frozen=True)
class CounterPair:
    """One server's counters of the cache: tokens found in it (`hits`) of tokens looked up (`queries`),
    as sample names on /metrics (a counter's samples end in _total)."""

    server: str
    hits: str
    queries: str


COUNTERS = (
    CounterPair("vllm", "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"),
    CounterPair("vllm", "vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"),
    CounterPair("sglang", "sglang:cached_tokens_total", "sglang:prompt_tokens_total"),
)
WANTED = frozenset(n for c in COUNTERS for n in (c.hits, c.queries))

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def parse(text: str) -> list[Sample]:
    """The samples of a Prometheus text exposition (comments and lines that are not samples skipped)."""
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())  # a comment (# HELP, # TYPE) does not match
        if m is None:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out.append(Sample(m.group(1), dict(_LABEL.findall(m.group(2) or "")), value))
    return out


def totals(samples: list[Sample], model: str | None = None, names: frozenset[str] = WANTED) -> dict[str, float]:
    """Each named counter summed over its label sets; with `model`, a sample that names another model
    (label model_name) is left out."""
    out: dict[str, float] = {}
    for s in samples:
        if s.name not in names or not math.isfinite(s.value):
            continue
        if model is not None and s.labels.get("model_name", model) != model:
            continue
        out[s.name] = out.get(s.name, 0.0) + s.value
    return out


def scrape(base_url: str, model: str | None = None, timeout_s: float = SCRAPE_TIMEOUT_S) -> dict[str, float] | None:
    """The cache counters on `base_url`/metrics now; None where the server has no /metrics page (an HTTP
    error, no answer, not Prometheus text). No proxy from the environment is used, as the load's client
    uses none."""
    url = base_url.rstrip("/") + "/metrics"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout_s) as resp:
            if resp.status != 200:
                return None
            text = resp.read(MAX_BYTES).decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return totals(parse(text), model)


def hit_rate(before: dict[str, float] | None, after: dict[str, float] | None) -> tuple[float | None, dict[str, Any]]:
    """The prefix-cache hit rate of the window between two scrapes (hits delta / queries delta) and what
    it came from: {"server", "counters": [hits, queries], "hits_tokens", "queries_tokens"}; or None and
    {"not_measured": why} where the server has no such counters, counted no lookup, or restarted."""
    if before is None or after is None:
        return None, {"not_measured": "the server has no /metrics page"}
    pair = next((c for c in COUNTERS if all(n in before and n in after for n in (c.hits, c.queries))), None)
    if pair is None:
        return None, {"not_measured": "the server's /metrics has no prefix-cache counters llmbench knows"}
    hits, queries = after[pair.hits] - before[pair.hits], after[pair.queries] - before[pair.queries]
    got: dict[str, Any] = {"server": pair.server, "counters": [pair.hits, pair.queries],
                           "hits_tokens": hits, "queries_tokens": queries}
    if hits < 0 or queries < 0:
        return None, {**got, "not_measured": "a counter went down: the server restarted during the point"}
    if queries == 0:
        return None, {**got, "not_measured": "the server counted no prefix-cache lookup (is its prefix cache on?)"}
    return hits / queries, got


def usage_cached(records: list[RequestRecord]) -> tuple[float | None, dict[str, Any]]:
    """Cached of prompt tokens, summed over the successful requests whose usage gave both; None and {}
    where none did."""
    told = [r for r in records if r.ok and r.cached_tokens != NO_COUNT and r.input_tokens > 0]
    if not told:
        return None, {}
    cached, prompt = sum(r.cached_tokens for r in told), sum(r.input_tokens for r in told)
    return cached / prompt, {"requests": len(told), "cached_tokens": cached, "prompt_tokens": prompt}


def point_metrics(before: dict[str, float] | None, after: dict[str, float] | None,
                  records: list[RequestRecord]) -> tuple[dict[str, MetricResult], dict[str, Any]]:
    """The point's `prefix_cache_hit_rate` (server counters) and `cached_prompt_fraction` (usage), each
    where it could be measured, and the facts for info `prefix_cache`: `server_counters` (the counters
    used and their deltas, or why there is no rate) and `usage` (the token sums)."""
    metrics: dict[str, MetricResult] = {}
    rate, counted = hit_rate(before, after)
    if rate is not None:
        metrics["prefix_cache_hit_rate"] = MetricResult.single("prefix_cache_hit_rate", rate)
    facts: dict[str, Any] = {"server_counters": counted}
    fraction, told = usage_cached(records)
    if fraction is not None:
        metrics["cached_prompt_fraction"] = MetricResult.single("cached_prompt_fraction", fraction)
        facts["usage"] = told
    return metrics, facts
