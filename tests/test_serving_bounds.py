"""What bounds one request of a serving benchmark against a server that misbehaves: a slow loris
(one byte at a time, never an event) ends at the request timeout, an endless SSE line ends at the
bound on an event's length, and a token count of zero or less is a failed request, not a figure."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from llmbench.serving.analysis import summarize
from llmbench.serving.client import TIMEOUT, Endpoint, stream_request
from llmbench.serving.fake_server import FakeOptions, running
from llmbench.serving.load import Schedule, open_session
from llmbench.serving.records import RequestRecord
from llmbench.serving.sse import MAX_EVENT_BYTES, EventTooLong, events
from tests.serving_helpers import sessions


def one(url: str, n: int = 8, timeout_s: float = 600.0) -> RequestRecord:
    async def main() -> RequestRecord:
        ep = Endpoint(url, "completions", "fake", request_timeout_s=timeout_s)
        rec = RequestRecord(index=0, scheduled_s=0.0, requested_tokens=n)
        async with open_session(ep, 1) as http:  # type: ignore[attr-defined]
            await stream_request(http, ep, "hi there", rec, 0.0)
        return rec

    return asyncio.run(main())


def test_a_slow_loris_server_is_a_failed_request_with_reason_timeout() -> None:
    # a byte every 20 ms: never silent long enough for a read timeout, and never an event
    with running(FakeOptions(trickle_s=0.02)) as url:
        rec = one(url, timeout_s=0.5)
    assert not rec.ok
    assert rec.error is not None and rec.error.startswith(f"{TIMEOUT}: "), rec.error
    assert "request timeout of 0.5 s" in rec.error
    assert rec.end_s >= rec.sent_s  # ended: the record is complete


def test_an_sse_line_over_the_bound_fails_the_request_naming_the_bound() -> None:
    with running(FakeOptions(huge_token_bytes=MAX_EVENT_BYTES + 1)) as url:
        rec = one(url, 3)
    assert not rec.ok
    assert rec.error is not None and "over 16 MiB" in rec.error, rec.error


def test_an_endless_line_is_not_buffered_past_the_bound() -> None:
    sent = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal sent
        yield b"data: "
        while True:  # a server that never ends its line
            sent += 1000
            yield b"x" * 1000

    async def main() -> None:
        async for _ in events(endless(), max_bytes=10_000):
            pass

    with pytest.raises(EventTooLong, match="over 10000 bytes"):
        asyncio.run(main())
    assert sent <= 11_000  # read up to the bound, then stopped


def test_events_under_the_bound_are_read() -> None:
    async def pieces() -> AsyncIterator[bytes]:
        yield b"data: " + b"y" * 5000 + b"\n\n"
        yield b"data: [DONE]\n\n"

    async def main() -> list[str]:
        return [ev.data async for ev in events(pieces(), max_bytes=10_000)]

    assert [len(d) for d in asyncio.run(main())] == [5000, 6]


@pytest.mark.parametrize("offset,reported", [(-8, 0), (-100, -92)])
def test_zero_or_negative_completion_tokens_is_a_failed_request(offset: int, reported: int) -> None:
    with running(FakeOptions(usage_offset=offset)) as url:
        rec = one(url, 8)
    assert not rec.ok
    assert rec.error is not None and f"reported {reported} completion tokens" in rec.error, rec.error


def test_a_negative_token_count_gives_no_ok_throughput() -> None:
    from tests.serving_helpers import load

    with running(FakeOptions(usage_offset=-100)) as url:
        res = load(url, sessions(3, 8), Schedule(concurrency=3))
    metrics, info = summarize(res.records)
    assert info["requests_ok"] == 0 and metrics["failed_requests"].value == 3
    assert "output_tokens_per_s" not in metrics or metrics["output_tokens_per_s"].value >= 0


@pytest.mark.slow
def test_serve_bench_request_timeout_fails_the_point_with_reason_timeout(tmp_path: Path) -> None:
    from llmbench import api
    from llmbench.models.tokenizer import build_offline_tokenizer

    tok = build_offline_tokenizer(tmp_path / "tok", 512)
    with running(FakeOptions(model="tiny", trickle_s=0.02)) as url:
        done = api.serve_bench(url, "tiny", concurrencies=[2], tokenizer=str(tok), input_len=8, output_len=3,
                               num_requests=2, out=tmp_path / "out", request_timeout_s=0.3)
    (case,) = done.result_set.cases
    assert case.status == "failed"
    assert case.params["request_timeout_s"] == 0.3
    assert f"{TIMEOUT}: the request took longer than its request timeout of 0.3 s" in (case.reason or "")


@pytest.mark.slow
def test_the_request_timeout_is_checked_and_shown_in_the_help(tmp_path: Path) -> None:
    from tests.test_serving_cli import cli

    r = cli("serve-bench", "--help")
    assert r.returncode == 0 and "--request-timeout" in r.stdout and "600" in r.stdout
    bad = cli("serve-bench", "--url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", "x", "--rate", "1",
              "--request-timeout", "0", "--out", str(tmp_path))
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "--request-timeout 0: give the seconds one request may take" in bad.stderr
