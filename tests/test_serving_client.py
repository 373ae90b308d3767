"""The streaming client against a real local SSE server (llmbench.serving.fake_server in a thread):
each pitfall of measuring a served model, tested by behaviour."""

from __future__ import annotations

import asyncio
import statistics

import pytest

from llmbench.serving.analysis import latency, summarize
from llmbench.serving.bench import ServerUnusable, check_server, run_point, served_by
from llmbench.serving.client import Endpoint, stream_request
from llmbench.serving.fake_server import FakeOptions, Gauge, running
from llmbench.serving.load import Schedule, arrival_offsets, open_session
from llmbench.serving.records import RequestRecord
from tests.conftest import EVENT_S
from tests.serving_helpers import load, sessions


def one(url: str, n: int = 8, kind: str = "completions", prompt: str = "hi there", keep_text: bool = False
        ) -> RequestRecord:
    async def main() -> RequestRecord:
        ep = Endpoint(url, kind, "fake")
        rec = RequestRecord(index=0, scheduled_s=0.0, requested_tokens=n)
        async with open_session(ep, 1) as http:  # type: ignore[attr-defined]
            await stream_request(http, ep, prompt, rec, 0.0, keep_text=keep_text)
        return rec

    return asyncio.run(main())


@pytest.mark.parametrize("kind", ["completions", "chat"])
def test_exact_length_is_asked_for_and_counted_from_usage(kind: str) -> None:
    g = Gauge()
    # a model that would stop after 3 tokens unless told to ignore EOS
    with running(FakeOptions(eos_after=3), g) as url:
        rec = one(url, 16, kind)
    assert rec.ok, rec.error
    assert rec.output_tokens == 16 and len(rec.chunks_s) == 16
    body = g.bodies[-1]
    assert body["ignore_eos"] is True and body["min_tokens"] == body["max_tokens"] == 16
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("kind,opts", [("chat", FakeOptions(ttft_ms=300)),
                                       ("completions", FakeOptions(ttft_ms=300, empty_first_chunk=True))])
def test_a_role_only_or_empty_first_chunk_is_not_the_first_token(kind: str, opts: FakeOptions) -> None:
    # the server sends the role/empty chunk at once and the first text 300 ms later
    with running(opts) as url:
        rec = one(url, 4, kind)
    assert rec.ok, rec.error
    assert len(rec.chunks_s) == 4
    assert latency(rec).ttft_ms >= 300


def test_ttft_is_not_an_itl_gap() -> None:
    with running(FakeOptions(ttft_ms=200)) as url:
        rec = one(url, 6)
    lat = latency(rec)
    assert len(lat.itl_ms) == 5  # gaps between the 6 token chunks, none before the first
    assert sum(lat.itl_ms) == pytest.approx((rec.chunks_s[-1] - rec.chunks_s[0]) * 1e3)
    assert lat.ttft_ms >= 200


def test_client_queueing_is_kept_out_of_ttft() -> None:
    # the client's loop is blocked for 0.5 s when the first request is due: it is sent late
    with running() as url:
        res = load(url, sessions(2), Schedule(offsets_s=(0.0, 0.0)), block_s=0.5)
    for r in res.records:
        assert r.queue_s >= 0.5
        # TTFT counts from the send, not the schedule: the 0.5 s the client was late is not in it
        assert latency(r).ttft_ms == pytest.approx((r.chunks_s[0] - r.sent_s) * 1e3)
        assert (r.chunks_s[0] - r.scheduled_s) * 1e3 - latency(r).ttft_ms >= 500
    metrics, _ = summarize(res.records)
    assert metrics["client_queue_ms"].value >= 500
    assert metrics["ttft_ms"].value == pytest.approx(statistics.median(latency(r).ttft_ms for r in res.records),
                                                     rel=1e-4)


def test_an_sse_line_over_64_kib_is_read_whole() -> None:
    # 3 MB in one line: over aiohttp's line reader limit (64 KiB by default, 2 x read_bufsize at most)
    with running(FakeOptions(huge_token_bytes=3_000_000)) as url:
        rec = one(url, 3, keep_text=True)
    assert rec.ok, rec.error
    assert len(rec.chunks_s) == 3 and rec.output_tokens == 3
    assert len(rec.text) > 3_000_000


def test_150_requests_really_are_in_flight_together() -> None:
    # the server holds every request until 150 are open at once (or EVENT_S pass): aiohttp's default pool
    # of 100 connections would never get there
    g = Gauge()
    with running(FakeOptions(hold_until=150, hold_timeout_s=EVENT_S), g) as url:
        res = load(url, sessions(150, 2), Schedule(concurrency=150))
    assert g.peak == 150
    assert all(r.ok for r in res.records)
    assert res.peak_in_flight == 150


def test_requests_go_out_at_the_rate_asked() -> None:
    offsets = arrival_offsets(100, 50.0, seed=1)
    scheduled = 99 / offsets[-1]
    with running() as url:
        res = load(url, sessions(100, 2), Schedule(offsets_s=offsets))
    metrics, _ = summarize(res.records, asked_rate=50.0)
    achieved = metrics["achieved_request_rate_per_s"].value
    assert abs(scheduled / 50.0 - 1) < 0.2
    assert all(r.sent_s >= r.scheduled_s for r in res.records)  # never early
    # never late but for the client's own queueing (its event loop slowed by a loaded host, measured):
    # the sends' span is the schedule's, give or take the latest one's lateness
    late = max(r.queue_s for r in res.records)
    assert abs(achieved / scheduled - 1) < 0.2 + late / offsets[-1], (
        f"achieved {achieved:.1f}/s against {scheduled:.1f}/s scheduled; the client was up to {late * 1e3:.0f} ms late")


def test_mid_stream_errors_are_counted_failures_and_kept_out_of_latencies() -> None:
    # every second request breaks off after 2 tokens with an error event
    with running(FakeOptions(error_after=2, fail_every=2)) as url:
        ep = Endpoint(url, "completions", "fake")
        info: dict = {}
        metrics = run_point(ep, sessions(10, 6), Schedule(concurrency=1), info=info)
    assert metrics["failed_requests"].value == 5
    assert info["requests_failed"] == 5 and info["requests_ok"] == 5
    assert metrics["ttft_ms"].stats.n == 5
    assert any("planted mid-stream failure" in e for e in info["requests"]["errors"].values())
    assert len(info["requests"]["errors"]) == 5


@pytest.mark.parametrize("opts,needle", [
    (FakeOptions(drop_after=2), "the connection broke after 2 chunks"),
    (FakeOptions(http_status=500), "HTTP 500"),
    (FakeOptions(error_after=1), "error in the stream after 1 chunks: planted mid-stream failure"),
])
def test_failures_become_the_request_error(opts: FakeOptions, needle: str) -> None:
    with running(opts) as url:
        rec = one(url, 4)
    assert not rec.ok
    assert needle in (rec.error or "")


def test_an_unreachable_server_is_a_clear_error() -> None:
    with running() as url:
        pass  # the port is free again: nothing listens there
    rec = one(url, 2)
    assert rec.error is not None and f"cannot connect to {url}: connection refused" in rec.error
    with pytest.raises(ServerUnusable, match=f"cannot reach the server at {url}: connection refused"):
        run_point(Endpoint(url, "completions", "fake"), sessions(2), Schedule(concurrency=1))


def test_a_failed_test_request_is_counted_as_a_failed_request_of_the_point() -> None:
    # the server's 5th request is the point's test request (4 were counted already): HTTP 500 on it only
    with running(FakeOptions(http_status=500, fail_every=5), Gauge(requests=4)) as url:
        info: dict[str, object] = {}
        metrics = run_point(Endpoint(url, "completions", "fake"), sessions(3), Schedule(concurrency=1), info=info)
    assert metrics["failed_requests"].value == 1 and info["requests_failed"] == 1
    assert info["first_errors"][0].startswith("test request: HTTP 500")
    assert info["test_request"]["error"].startswith("HTTP 500")
    assert metrics["ttft_ms"].stats.n == 3  # the load itself was measured


def test_the_point_records_who_serves_the_model_as_its_card_says() -> None:
    with running() as url:
        info = asyncio.run(check_server(Endpoint(url, "completions", "fake"), sessions(1)[0]))
    assert info["served_models"] == ["fake"] and info["served_by"] == "llmbench-fake-server"
    cards = [{"id": "a", "owned_by": "vllm"}, {"id": "b", "owned_by": "sglang"}, {"id": "c"}]
    assert [served_by(cards, m) for m in ("a", "b", "c", "d")] == ["vllm", "sglang", None, None]


def test_a_model_the_server_does_not_serve_is_a_clear_error() -> None:
    with running() as url, pytest.raises(ServerUnusable, match="does not serve the model 'other'; it serves: fake"):
        asyncio.run(check_server(Endpoint(url, "completions", "other"), sessions(1)[0]))


def test_a_wrong_usage_count_is_flagged_and_counted() -> None:
    with running(FakeOptions(usage_offset=-1)) as url:
        res = load(url, sessions(4, 8), Schedule(concurrency=2))
    metrics, info = summarize(res.records)
    assert info["length_mismatches"] == 4
    assert any("another output length than asked" in f for f in metrics["output_tokens_per_s"].flags)
    assert metrics["tpot_ms"].stats.n == 4  # TPOT divides by what the server says it sent (7 - 1)


def test_several_tokens_per_chunk_are_noted_on_itl() -> None:
    with running(FakeOptions(tokens_per_chunk=4)) as url:
        res = load(url, sessions(3, 8), Schedule(concurrency=3))
    metrics, info = summarize(res.records)
    assert info["tokens_per_chunk"] == 4.0
    assert any("4.00 tokens per chunk of text" in f for f in metrics["itl_ms"].flags)


@pytest.mark.parametrize("kind", ["completions", "chat"])
def test_multi_turn_appends_each_answer_to_the_history(kind: str) -> None:
    g = Gauge()
    with running(FakeOptions(), g) as url:
        res = load(url, sessions(2, 3, turns=3), Schedule(concurrency=2), kind=kind)
    assert [r.turn for r in res.records if r.session == 0] == [0, 1, 2]
    last = next(b for b in reversed(g.bodies) if "0 2" in str(b))
    if kind == "chat":
        roles = [m["role"] for m in last["messages"]]
        assert roles == ["user", "assistant", "user", "assistant", "user"]
        assert last["messages"][1]["content"] == " tok tok tok"
    else:
        assert last["prompt"] == "hello world 0 0 tok tok tok hello world 0 1 tok tok tok hello world 0 2"
    _, info = summarize(res.records)
    assert len(info["ttft_ms_median_by_turn"]) == 3
