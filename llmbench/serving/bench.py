"""One load point against one server: check the server, send the workload on its schedule, and
turn the records into metrics. The scenario and `llmbench serve-bench` both call `run_point`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from llmbench.results import MetricResult
from llmbench.serving.analysis import peak_in_flight, summarize
from llmbench.serving.client import Endpoint, connect_error, stream_request
from llmbench.serving.load import LoadResult, Schedule, Session, open_session, run_load
from llmbench.serving.records import RequestRecord, to_columns

T = TypeVar("T")
TEST_TOKENS = 4


class ServerUnusable(RuntimeError):
    """The server cannot be benchmarked: unreachable, or not serving the model. (A test request the
    server answers with an error is not this: it is a failed request of the point, counted.)"""


def run_async(coro: Coroutine[Any, Any, T], uvloop_if_installed: bool = True) -> tuple[T, str]:
    """Run on uvloop when it is installed (a faster client), else asyncio's loop; which one is returned."""
    if uvloop_if_installed:
        with contextlib.suppress(ImportError):
            import uvloop

            return uvloop.run(coro), "uvloop"
    return asyncio.run(coro), "asyncio"


async def check_server(ep: Endpoint, first: Session) -> dict[str, Any]:
    """GET /v1/models (is the server there, does it serve the model?), then one short streamed
    request (does the endpoint stream, and report usage?). Raises ServerUnusable with one line when
    the server is not there or does not serve the model; a test request that fails is recorded in
    `test_request.error` (the point counts it among its failed requests)."""
    import aiohttp

    info: dict[str, Any] = {}
    async with open_session(ep, 1) as http:  # type: ignore[attr-defined]
        try:
            async with http.get(ep.url.rstrip("/") + "/v1/models", timeout=aiohttp.ClientTimeout(total=30)) as r:
                if r.status == 200:
                    served = [m.get("id") for m in (await r.json()).get("data", [])]
                    info["served_models"] = served
                    if served and ep.model not in served:
                        raise ServerUnusable(f"{ep.url} does not serve the model {ep.model!r}; it serves: "
                                             + ", ".join(map(str, served)))
        except aiohttp.ClientConnectorError as e:
            raise ServerUnusable(f"cannot reach the server at {ep.url}: {connect_error(e)}") from None
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            raise ServerUnusable(f"the server at {ep.url} did not answer GET /v1/models: {type(e).__name__} {e}") \
                from None
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
    n_gpus: int = 1,
    asked_rate: float | None = None,
    progress: Callable[[float], None] | None = None,
    info: dict[str, Any] | None = None,
) -> dict[str, MetricResult]:
    """Check the server, run the load, and return the metrics; `info` (filled as it goes, so a
    failure keeps what was learnt) gets the facts and every request's record. Raises ServerUnusable
    (the server is not there or does not serve the model) or RuntimeError (every request failed)."""
    info = {} if info is None else info
    total = sum(len(s.turns) for s in sessions)
    done = 0

    def on_done(rec: RequestRecord) -> None:
        nonlocal done
        done += 1
        if progress is not None and (done % max(1, total // 50) == 0 or done == total):
            progress(done / total)

    async def main() -> tuple[dict[str, Any], LoadResult]:
        checked = await check_server(ep, sessions[0])
        return checked, await run_load(ep, sessions, sched, on_done)

    (checked, result), loop = run_async(main())
    info.update(checked)
    info["event_loop"] = loop
    metrics, facts = summarize(result.records, slo=slo, n_gpus=n_gpus, asked_rate=asked_rate)
    info.update(facts)
    _count_failed_test_request(metrics, info)
    info["not_started"] = result.not_started
    info["peak_in_flight"] = peak_in_flight(result.records)
    info["requests"] = to_columns(result.records)
    if not facts["requests_ok"]:
        raise RuntimeError(f"all {facts['requests_sent']} requests to {ep.request_url} failed: "
                           + "; ".join(facts.get("first_errors", []))[:400])
    return metrics
