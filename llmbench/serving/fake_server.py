"""A test and ceiling server, NOT a model: it speaks the OpenAI streaming API (SSE) and sends
fixed tokens (" tok") at a set pace, so tests can drive the client against a real HTTP server and
`benchmarks/serving_client_ceiling.py` can measure what the client itself sustains.

It can misbehave on purpose (a role-only or empty first chunk, one huge token, an error or a
broken connection mid-stream, a wrong usage count, an HTTP error, an early end when `ignore_eos`
is missing, a slow loris that trickles one byte at a time and never finishes an event) and keeps
a gauge of requests in flight. Its prompt_tokens is a word count: it has no tokenizer. Two behave like
servers of known capacity: `capacity` serves at most that many requests at once (the others queue, so a
concurrency above it waits a whole request for its first token, and a rate above capacity / request time
grows a queue without end), and `slowdown_ms` makes every request slower than the one before. With
`prefix_cache` it keeps a prefix cache of whole blocks of words, as vLLM's of tokens: the words of a prompt's
leading blocks that an earlier prompt began with are hits, its counters (`vllm:prefix_cache_hits_total` and
`..._queries_total`) are served on /metrics, and with `report_cached` each usage says `cached_tokens`.

    python -m llmbench.serving.fake_server --port 8000 [--itl-ms 0] [--ttft-ms 0] [--model fake]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

OWNER = "llmbench-fake-server"  # its model cards' owned_by (vLLM's say "vllm", SGLang's "sglang")


@dataclass
class FakeOptions:
    model: str = "fake"
    ttft_ms: float = 0.0
    itl_ms: float = 0.0
    tokens_per_chunk: int = 1
    empty_first_chunk: bool = False  # completions: a first chunk with empty text (chat always sends a role chunk)
    huge_token_bytes: int = 0  # the first token's text is this long: one SSE line over 64 KiB
    error_after: int | None = None  # send an error event after this many tokens
    drop_after: int | None = None  # close the connection after this many tokens
    http_status: int = 200  # answer every completion with this status
    usage_offset: int = 0  # report this many tokens more (or fewer) than sent
    eos_after: int | None = None  # without ignore_eos, stop after this many tokens (a model's EOS)
    fail_every: int = 1  # error_after/drop_after/http_status hit every k-th request (1: all)
    hold_until: int = 0  # hold each request until this many are in flight together (or hold_timeout_s)
    hold_timeout_s: float = 5.0
    trickle_s: float | None = None  # slow loris: after the headers, one byte every this many seconds, no event
    trickle_bytes: int = 100_000  # ... until this many are sent (or the client goes away)
    capacity: int | None = None  # serve at most this many requests at once; the rest wait their turn (a known
    # saturation point: above this concurrency TTFT includes a whole request's wait)
    slowdown_ms: float = 0.0  # each request's TTFT is this much longer than the one before (a server slowing down)
    prefix_cache: bool = False  # count prefix-cache hits in blocks of words and serve the counters on /metrics
    cache_block_words: int = 4
    report_cached: bool = False  # usage.prompt_tokens_details.cached_tokens (needs prefix_cache)


@dataclass
class Gauge:
    """What the server saw: requests in flight now and at most, and the request bodies."""

    in_flight: int = 0
    peak: int = 0
    requests: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    released: asyncio.Event = field(default_factory=asyncio.Event)  # hold_until was reached
    cache_hits: int = 0  # prefix_cache: words found in the cache, of words looked up, since the start
    cache_queries: int = 0
    cache_log: list[tuple[int, int]] = field(default_factory=list)  # (cached, prompt) words of each request in turn
    blocks: set[int] = field(default_factory=set)  # hashes of the cached prefixes, one per whole block


def _prompt_words(body: dict[str, Any]) -> list[str]:
    if "messages" in body:
        return [w for m in body["messages"] for w in str(m.get("content", "")).split()]
    return str(body.get("prompt", "")).split()


def cache_lookup(g: Gauge, words: list[str], block: int) -> int:
    """The words of `words` found in the cache (its leading whole blocks that an earlier prompt had), then
    every whole block of it cached; the counters advance."""
    hashes = [hash(tuple(words[:end])) for end in range(block, len(words) + 1, block)]
    hit = next((k for k, h in enumerate(hashes) if h not in g.blocks), len(hashes)) * block
    g.blocks.update(hashes)
    g.cache_hits += hit
    g.cache_queries += len(words)
    g.cache_log.append((hit, len(words)))
    return hit


def _words(body: dict[str, Any]) -> int:
    return len(_prompt_words(body))


def _event(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def make_app(opts: FakeOptions, gauge: Gauge | None = None) -> Any:
    """The aiohttp application: /health, /v1/models, /v1/completions, /v1/chat/completions."""
    from aiohttp import web

    g = gauge if gauge is not None else Gauge()
    seats = asyncio.Semaphore(opts.capacity) if opts.capacity else None  # bound to the serving loop at first use

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": opts.model, "object": "model",
                                                              "owned_by": OWNER}]})

    async def metrics(request: web.Request) -> web.Response:
        if not opts.prefix_cache:
            return web.Response(status=404, text="404: Not Found")
        labels = f'{{engine="0",model_name="{opts.model}"}}'
        return web.Response(text=f"# TYPE vllm:prefix_cache_queries_total counter\n"
                            f"vllm:prefix_cache_queries_total{labels} {float(g.cache_queries)}\n"
                            f"# TYPE vllm:prefix_cache_hits_total counter\n"
                            f"vllm:prefix_cache_hits_total{labels} {float(g.cache_hits)}\n")

    async def hold() -> None:
        if g.peak >= opts.hold_until:
            g.released.set()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(g.released.wait(), opts.hold_timeout_s)

    async def complete(request: web.Request, chat: bool) -> web.StreamResponse:
        body = await request.json()
        g.bodies.append(body)
        g.requests += 1
        planted = g.requests % opts.fail_every == 0
        if body.get("model") != opts.model:
            return web.json_response({"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                                "type": "NotFoundError", "code": 404}}, status=404)
        if opts.http_status != 200 and planted:
            return web.json_response({"error": {"message": "planted failure", "code": opts.http_status}},
                                     status=opts.http_status)
        g.in_flight += 1
        g.peak = max(g.peak, g.in_flight)
        cached = cache_lookup(g, _prompt_words(body), opts.cache_block_words) if opts.prefix_cache else 0
        try:
            if opts.hold_until:
                await hold()
            async with seats if seats is not None else contextlib.nullcontext():
                return await stream(request, body, chat, planted, cached)
        except ConnectionError:  # the client went away mid-stream (it ended its point early)
            return web.Response(status=499)
        finally:
            g.in_flight -= 1

    async def stream(request: web.Request, body: dict[str, Any], chat: bool, planted: bool,
                     cached: int = 0) -> web.StreamResponse:
        n = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        if opts.eos_after is not None and not body.get("ignore_eos"):
            n = min(n, opts.eos_after)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        if opts.trickle_s is not None:
            return await trickle(resp)

        def chunk(text: str, finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
            return _event({"object": "chat.completion.chunk" if chat else "text_completion", "model": opts.model,
                           "choices": [{**choice, "finish_reason": finish}]})

        if chat:
            await resp.write(_event({"object": "chat.completion.chunk", "model": opts.model, "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}))
        elif opts.empty_first_chunk:
            await resp.write(chunk(""))
        if opts.ttft_ms or opts.slowdown_ms:
            await asyncio.sleep((opts.ttft_ms + opts.slowdown_ms * (g.requests - 1)) / 1e3)
        token = chunk(" tok" * opts.tokens_per_chunk)
        sent = 0
        while sent < n:
            if planted and opts.error_after is not None and sent >= opts.error_after:
                await resp.write(_event({"error": {"message": "planted mid-stream failure", "code": 500}}))
                return resp
            if planted and opts.drop_after is not None and sent >= opts.drop_after:
                assert request.transport is not None
                request.transport.abort()
                return resp
            k = min(opts.tokens_per_chunk, n - sent)
            if sent == 0 and opts.huge_token_bytes:
                await resp.write(chunk(" " + "x" * opts.huge_token_bytes))
            else:
                await resp.write(token if k == opts.tokens_per_chunk else chunk(" tok" * k))
            sent += k
            if opts.itl_ms and sent < n:
                await asyncio.sleep(opts.itl_ms / 1e3)
        await resp.write(chunk("", "length"))
        usage: dict[str, Any] = {"prompt_tokens": _words(body), "completion_tokens": n + opts.usage_offset,
                                 "total_tokens": _words(body) + n + opts.usage_offset}
        if opts.report_cached:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        await resp.write(_event({"object": "chunk", "model": opts.model, "choices": [], "usage": usage}))
        await resp.write(b"data: [DONE]\n\n")
        return resp

    async def trickle(resp: web.StreamResponse) -> web.StreamResponse:
        assert opts.trickle_s is not None
        with contextlib.suppress(ConnectionError):  # the client gave up: its timeout, or the test's end
            await resp.write(b"data: ")
            for _ in range(opts.trickle_bytes):
                await asyncio.sleep(opts.trickle_s)
                await resp.write(b"x")
        return resp

    async def completions(request: web.Request) -> web.StreamResponse:
        return await complete(request, chat=False)

    async def chat(request: web.Request) -> web.StreamResponse:
        return await complete(request, chat=True)

    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", chat)
    return app


@contextlib.contextmanager
def running(opts: FakeOptions | None = None, gauge: Gauge | None = None) -> Iterator[str]:
    """Serve on 127.0.0.1 (a free port) from a thread of this process; yields the base URL."""
    from aiohttp import web

    loop = asyncio.new_event_loop()
    runner = web.AppRunner(make_app(opts or FakeOptions(), gauge), access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=2048)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def main(argv: list[str] | None = None) -> None:
    from aiohttp import web

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--model", default="fake")
    ap.add_argument("--ttft-ms", type=float, default=0.0)
    ap.add_argument("--itl-ms", type=float, default=0.0)
    ap.add_argument("--tokens-per-chunk", type=int, default=1)
    ap.add_argument("--capacity", type=int, default=None, help="serve at most this many requests at once")
    ap.add_argument("--slowdown-ms", type=float, default=0.0, help="each request's TTFT this much longer than the last")
    a = ap.parse_args(argv)
    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()
    opts = FakeOptions(model=a.model, ttft_ms=a.ttft_ms, itl_ms=a.itl_ms, tokens_per_chunk=a.tokens_per_chunk,
                       capacity=a.capacity, slowdown_ms=a.slowdown_ms)
    web.run_app(make_app(opts), host=a.host, port=a.port, access_log=None, print=None, backlog=2048)


if __name__ == "__main__":
    main()
