"""One load point against one server: check the server, send the workload on its schedule, and
turn the records into metrics. The scenario and `llmbench serve-bench` both call `run_point`."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

from llmbench.results import MetricResult
from llmbench.serving.analysis import peak_in_flight, summarize
from llmbench.serving.cache_stats import point_metrics, scrape
from llmbench.serving.client import Endpoint, connect_error, stream_request
from llmbench.serving.load import LoadResult, Schedule, Session, open_session, run_async, run_load
from llmbench.serving.records import RequestRecord, to_columns
from llmbench.serving.slo import Slo

TEST_TOKENS = 4


class ServerUnusable(RuntimeError):
    """The server cannot be benchmarked: unreachable, or not serving the model. (A test request the
    server answers with an error is not this: it is a failed request of the point, counted.)"""


async def served_models(ep: Endpoint, http: Any = None) -> list[Any]:
    """GET /v1/models: the model cards of what the server serves (empty where it does not say). Raises ServerUnusable
    with one line when the server is not there or does not serve `ep.model`."""
    import aiohttp

    if http is None:
        async with open_session(ep, 1) as own:  # type: ignore[attr-defined]
            return await served_models(ep, own)
    try:
        async with http.get(ep.url.rstrip("/") + "/v1/models", timeout=aiohttp.ClientTimeout(total=30)) as r:
            if r.status != 200:
                return []
            cards = (await r.json()).get("data", [])
    except aiohttp.ClientConnectorError as e:
        raise ServerUnusable(f"cannot reach the server at {ep.url}: {connect_error(e)}") from None
    except (aiohttp.ClientError, asyncio.TimeoutError) as e:
        raise ServerUnusable(f"the server at {ep.url} did not answer GET /v1/models: {type(e).__name__} {e}") \
            from None
    served = [m.get("id") for m in cards]
    if served and ep.model not in served:
        raise ServerUnusable(f"{ep.url} does not serve the model {ep.model!r}; it serves: "
                             + ", ".join(map(str, served)))
    return cards


def served_by(cards: list[Any], model: str) -> str | None:
    """Who serves `model`, as the server's own model card says (`owned_by`: "vllm" for vLLM's server,
    "sglang" for SGLang's); None where it does not say."""
    owner = next((c.get("owned_by") for c in cards if c.get("id") == model), None)
    return str(owner) if owner else None


async def check_server(ep: Endpoint, first: Session) -> dict[str, Any]:
    """GET /v1/models (is the server there, does it serve the model?), then one short streamed
    request (does the endpoint stream, and report usage?). Raises ServerUnusable with one line when
    the server is not there or does not serve the model; a test request that fails is recorded in
    `test_request.error` (the point counts it among its failed requests)."""
    info: dict[str, Any] = {}
    async with open_session(ep, 1) as http:  # type: ignore[attr-defined]
        cards = await served_models(ep, http)
        if cards:
            info["served_models"] = [c.get("id") for c in cards]
        if owner := served_by(cards, ep.model):
            info["served_by"] = owner
        rec = RequestRecord(index=0, scheduled_s=0.0, requested_tokens=min(TEST_TOKENS, first.turns[0].output_len))
        await stream_request(http, ep, first.turns[0].text, rec, 0.0)
        info["test_request"] = {"tokens": rec.output_tokens, "chunks": len(rec.chunks_s),
                                "usage_reported": rec.output_tokens >= 0}
        if rec.error:
            info["test_request"]["error"] = rec.error
    return info


def _count_failed_test_request(metrics: dict[str, MetricResult], info: dict[str, Any]) -> None:
    """A test request the server failed is one more failed request of the point: in `failed_requests`,
    `requests_failed` and first among `first_errors` (a server error is a result, not the user's mistake)."""
    error = (info.get("test_request") or {}).get("error")
    if not error:
        return
    metrics["failed_requests"] = MetricResult.single("failed_requests", metrics["failed_requests"].value + 1)
    info["requests_failed"] = info.get("requests_failed", 0) + 1
    info["first_errors"] = [f"test request: {error}", *info.get("first_errors", [])][:5]


def run_point(
    ep: Endpoint,
    sessions: list[Session],
    sched: Schedule,
    *,
    slo: dict[str, float] | None = None,
    limits: Slo | None = None,
    n_gpus: int = 1,
    asked_rate: float | None = None,
    progress: Callable[[float], None] | None = None,
    info: dict[str, Any] | None = None,
    client_processes: int = 1,
    window_s: float = 0.0,
) -> dict[str, MetricResult]:
    """Check the server, run the load, and return the metrics; `info` (filled as it goes, so a
    failure keeps what was learnt) gets the facts and every request's record. `limits`: the SLO the
    point is checked against (info `slo_check`; its per-request limits give goodput where `slo` is not
    given); `client_processes` > 1 drives the load from that many processes (procs.py); `window_s` > 0
    ends a saturated point early (watch.py; info `saturated`). The server's prefix-cache counters are read
    before and after the load, where it has them (cache_stats.py; info `prefix_cache`). Raises ServerUnusable
    (the server is not there or does not serve the model) or RuntimeError (every request failed)."""
    from llmbench.serving.selfcheck import client_check

    info = {} if info is None else info
    total = sum(len(s.turns) for s in sessions)
    done = 0

    def on_done(rec: RequestRecord) -> None:
        nonlocal done
        done += 1
        if progress is not None and (done % max(1, total // 50) == 0 or done == total):
            progress(done / total)

    checked, loop = run_async(check_server(ep, sessions[0]))
    info.update(checked)
    info["event_loop"] = loop
    counters = scrape(ep.url, ep.model)  # the prefix cache's counters before the load (the test request's out)
    result: LoadResult
    if client_processes > 1:
        from llmbench.serving.procs import run_load_processes

        result = run_load_processes(ep, sessions, sched, client_processes, window_s)
    else:
        result, _ = run_async(run_load(ep, sessions, sched, on_done, window_s=window_s))
    goodput_slo = slo or (limits.per_request() if limits else None)
    metrics, facts = summarize(result.records, slo=goodput_slo, n_gpus=n_gpus, asked_rate=asked_rate)
    info.update(facts)
    _count_failed_test_request(metrics, info)
    cached, info["prefix_cache"] = point_metrics(counters, scrape(ep.url, ep.model) if counters else None,
                                                 result.records)
    metrics.update(cached)
    mine, check = client_check(result, asked_rate)
    metrics.update(mine)
    info["client_check"] = check
    info["not_started"] = result.not_started
    info["peak_in_flight"] = peak_in_flight(result.records)
    if result.watch is not None and window_s > 0:
        info["watch"] = result.watch.as_info()
    saturated = result.watch.saturated if result.watch is not None else None
    if saturated:
        info["saturated"] = saturated
        info["stopped_requests"] = result.stopped
    if limits is not None:
        info["slo_check"] = point_check(limits, result, saturated)
    info["requests"] = to_columns(result.records)
    if not facts["requests_ok"]:
        raise RuntimeError(f"all {facts['requests_sent']} requests to {ep.request_url} failed: "
                           + "; ".join(facts.get("first_errors", []))[:400])
    return metrics


def point_check(limits: Slo, result: LoadResult, saturated: str | None) -> dict[str, Any]:
    """The point against the SLO (slo.check), TTFT and E2E from the intended send times; a saturated
    point does not meet it, whatever its percentiles."""
    from llmbench.serving.analysis import latency
    from llmbench.serving.selfcheck import intended_latencies
    from llmbench.serving.slo import check

    values: dict[str, list[Any]] = dict(intended_latencies(result))
    ok = [r for r in result.records if r.ok and r.chunks_s and not math.isnan(r.sent_s)]
    values["tpot_ms"] = [latency(r).tpot_ms for r in ok]
    failed = sum(1 for r in result.records if not math.isnan(r.sent_s) and not (r.ok and r.chunks_s))
    out = check(limits, values, failed)
    out["slo"] = limits.text
    if saturated:
        out["met"] = False
        out["saturated"] = True
    return out
