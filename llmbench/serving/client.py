"""One streamed request to an OpenAI-compatible endpoint, measured.

Output length is made exact: `max_tokens` and `min_tokens` both equal the requested length and
`ignore_eos` is true (vLLM and SGLang accept both), and the count the server reports in `usage`
is what the figures use, as are the prompt tokens it found in its prefix cache where it reports them
(`usage.prompt_tokens_details.cached_tokens`: vLLM with --enable-prompt-tokens-details, SGLang with
--enable-cache-report). A chunk counts as a token chunk only when it carries output text: the
role-only first delta of a chat stream and empty texts are not the first token.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llmbench.serving.records import NO_COUNT, RequestRecord
from llmbench.serving.sse import EventTooLong, events

Prompt = str | list[dict[str, str]]  # completions: a string; chat: messages


@dataclass(frozen=True)
class EndpointKind:
    """What differs between /v1/completions and /v1/chat/completions: the path, how a request body
    says prompt and length, and where a chunk's text is."""

    path: str
    body: Callable[[str, Prompt, int], dict[str, Any]]
    text: Callable[[dict[str, Any]], str]


def _exact(n: int) -> dict[str, Any]:
    return {"min_tokens": n, "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True},
            "temperature": 0.0}


def _completion_body(model: str, prompt: Prompt, n: int) -> dict[str, Any]:
    if not isinstance(prompt, str):
        raise TypeError("the completions endpoint takes a text prompt")
    return {"model": model, "prompt": prompt, "max_tokens": n, **_exact(n)}


def _chat_body(model: str, prompt: Prompt, n: int) -> dict[str, Any]:
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    return {"model": model, "messages": messages, "max_tokens": n, "max_completion_tokens": n, **_exact(n)}


def _completion_text(choice: dict[str, Any]) -> str:
    return str(choice.get("text") or "")


def _chat_text(choice: dict[str, Any]) -> str:
    delta = choice.get("delta") or {}
    # reasoning models stream their thinking as reasoning_content (vLLM) or reasoning: tokens too
    return str(delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning") or "")


ENDPOINTS: dict[str, EndpointKind] = {
    "completions": EndpointKind("/v1/completions", _completion_body, _completion_text),
    "chat": EndpointKind("/v1/chat/completions", _chat_body, _chat_text),
}


DEFAULT_REQUEST_TIMEOUT_S = 600.0
TIMEOUT = "timeout"  # the reason that starts a request's error when it ran past its request timeout


@dataclass(frozen=True)
class Endpoint:
    url: str  # the server's base URL, http://host:port
    kind: str  # a key of ENDPOINTS
    model: str
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S  # longest one request may take, send to last byte

    @property
    def request_url(self) -> str:
        return self.url.rstrip("/") + ENDPOINTS[self.kind].path


class StreamError(Exception):
    """The server reported an error inside the stream, or the stream broke off."""


def _error_text(obj: Any) -> str:
    if isinstance(obj, dict):
        return str(obj.get("message") or obj.get("detail") or json.dumps(obj)[:300])
    return str(obj)[:300]


async def stream_request(
    session: Any, ep: Endpoint, prompt: Prompt, rec: RequestRecord, t0: float, keep_text: bool = False
) -> None:
    """Send one request on `session` (an aiohttp ClientSession) and fill `rec`: sent, each token
    chunk's arrival, end, usage counts, or the error. Never raises for a failed request: an HTTP
    error, a refused connection, a mid-stream error, a broken stream, a nonsensical token count or a
    request that takes longer than `ep.request_timeout_s` (however slowly the server trickles bytes:
    the error starts with "timeout") becomes `rec.error`."""
    parts: list[str] = []
    rec.sent_s = time.perf_counter() - t0
    try:
        await asyncio.wait_for(_stream(session, ep, prompt, rec, t0, parts if keep_text else None),
                               ep.request_timeout_s)
    except asyncio.TimeoutError:
        rec.error = (f"{TIMEOUT}: the request took longer than its request timeout of {ep.request_timeout_s:g} s "
                     f"(after {len(rec.chunks_s)} chunks)")
    finally:
        rec.end_s = time.perf_counter() - t0
    rec.text = "".join(parts)


def _count(usage: dict[str, Any], key: str, default: int) -> int:
    value = usage.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise StreamError(f"the server reported {key} {value!r} in its usage: not a whole number")
    return int(value)


async def _stream(session: Any, ep: Endpoint, prompt: Prompt, rec: RequestRecord, t0: float,
                  parts: list[str] | None) -> None:
    import aiohttp

    kind = ENDPOINTS[ep.kind]
    body = kind.body(ep.model, prompt, rec.requested_tokens)
    done = False
    try:
        async with session.post(ep.request_url, json=body) as resp:
            if resp.status != 200:
                detail = (await resp.text())[:500]
                raise StreamError(f"HTTP {resp.status} from {ep.request_url}: {_first_line(detail)}")
            async for ev in events(resp.content.iter_any()):
                if ev.data.strip() == "[DONE]":
                    done = True
                    break
                obj = json.loads(ev.data)
                if ev.event == "error" or "error" in obj:
                    raise StreamError(f"error in the stream after {len(rec.chunks_s)} chunks: "
                                      f"{_error_text(obj.get('error', obj))}")
                for choice in obj.get("choices") or []:
                    text = kind.text(choice)
                    if text:
                        rec.chunks_s.append(ev.time_s - t0)
                        if parts is not None:
                            parts.append(text)
                        break
                usage = obj.get("usage")
                if usage:
                    rec.output_tokens = _count(usage, "completion_tokens", rec.output_tokens)
                    rec.input_tokens = _count(usage, "prompt_tokens", rec.input_tokens)
                    details = usage.get("prompt_tokens_details")
                    if isinstance(details, dict) and details.get("cached_tokens") is not None:
                        rec.cached_tokens = _count(details, "cached_tokens", rec.cached_tokens)
        if not done:
            raise StreamError(f"the stream ended before [DONE], after {len(rec.chunks_s)} chunks")
        if rec.output_tokens != NO_COUNT and rec.output_tokens <= 0:
            raise StreamError(f"the server reported {rec.output_tokens} completion tokens for a request of "
                              f"{rec.requested_tokens}: a count of output tokens is at least 1")
        if rec.input_tokens != NO_COUNT and rec.input_tokens < 0:
            raise StreamError(f"the server reported {rec.input_tokens} prompt tokens: a count is at least 0")
        over = rec.input_tokens != NO_COUNT and rec.cached_tokens > rec.input_tokens
        if rec.cached_tokens != NO_COUNT and (rec.cached_tokens < 0 or over):
            raise StreamError(f"the server reported {rec.cached_tokens} cached of {rec.input_tokens} prompt tokens: "
                              "cached tokens are some of the prompt's")
    except StreamError as e:
        rec.error = str(e)
    except EventTooLong as e:
        rec.error = f"the server sent {e} after {len(rec.chunks_s)} chunks"
    except aiohttp.ClientConnectorError as e:
        rec.error = f"cannot connect to {ep.url}: {connect_error(e)}"
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as e:
        rec.error = f"the connection broke after {len(rec.chunks_s)} chunks: {type(e).__name__}: {e}"
    except asyncio.TimeoutError:
        rec.error = f"{TIMEOUT}: no data from {ep.url} for {ep.request_timeout_s:g} s"
    except json.JSONDecodeError as e:
        rec.error = f"malformed data in the stream: {e}"
    except aiohttp.ClientError as e:
        rec.error = f"{type(e).__name__}: {e}"


def connect_error(e: Exception) -> str:
    """Why a connection failed, in words ('connection refused'), from aiohttp's ClientConnectorError."""
    os_error = getattr(e, "os_error", None)
    if isinstance(os_error, ConnectionRefusedError):
        return "connection refused (nothing listens there)"
    return str(getattr(os_error, "strerror", None) or os_error or e)


def _first_line(text: str) -> str:
    try:  # OpenAI-style error bodies: {"error": {"message": ...}} or {"message": ...}
        obj = json.loads(text)
        return _error_text(obj.get("error", obj)) if isinstance(obj, dict) else text
    except ValueError:
        return (text.strip().splitlines() or [""])[0][:300]
