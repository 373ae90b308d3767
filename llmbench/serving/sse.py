"""Server-sent events, read whole up to a bound on their length.

aiohttp's line reader stops at 64 KiB (`async for line in resp.content` raises "Chunk too big" or
splits a long line), and one SSE event of a long response can be larger. So the stream is read in
whatever pieces arrive and split on blank lines here; each event carries the time its last byte
arrived. An event (or line) longer than MAX_EVENT_BYTES is an error, not a buffer that grows with
whatever the server sends.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass

_SEPARATORS = (b"\r\n\r\n", b"\n\n", b"\r\r")
MAX_EVENT_BYTES = 16 * 2**20  # one event, its lines included: far above any token chunk's


class EventTooLong(ValueError):
    """The server sent an event (or a line) longer than the bound."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an SSE event or line over {_size(limit)} (the bound on one event's length)")
        self.limit = limit


def _size(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 and n % 2**20 == 0 else f"{n} bytes"


@dataclass(frozen=True)
class Event:
    time_s: float  # clock() when the event's last byte arrived
    data: str  # the `data:` lines joined with newlines
    event: str = "message"  # the `event:` field, when the server names one


def _split(buf: bytearray, start: int) -> tuple[int, int] | None:
    """(end of the first complete event, length of its separator), searching from `start`."""
    best: tuple[int, int] | None = None
    for sep in _SEPARATORS:
        i = buf.find(sep, start)
        if i >= 0 and (best is None or i < best[0]):
            best = (i, len(sep))
    return best


def parse_event(block: bytes, time_s: float) -> Event | None:
    """One event's fields (comments and unknown fields ignored); None for a block without data."""
    data: list[str] = []
    name = "message"
    for raw in block.decode("utf-8", errors="replace").splitlines():
        if not raw or raw.startswith(":"):
            continue
        key, _, value = raw.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if key == "data":
            data.append(value)
        elif key == "event":
            name = value
    return Event(time_s, "\n".join(data), name) if data else None


async def events(
    pieces: AsyncIterable[bytes], clock: Callable[[], float] = time.perf_counter, max_bytes: int = MAX_EVENT_BYTES
) -> AsyncIterator[Event]:
    """The events of a byte stream (aiohttp's `resp.content.iter_any()`), in order, each stamped
    with the arrival time of the piece that completed it. An event longer than `max_bytes` raises
    EventTooLong as soon as that many bytes of it are buffered."""
    buf = bytearray()
    async for piece in pieces:
        now = clock()
        start = max(0, len(buf) - 3)  # a separator may straddle two pieces
        buf += piece
        while (found := _split(buf, start)) is not None:
            end, sep = found
            if end > max_bytes:
                raise EventTooLong(max_bytes)
            ev = parse_event(bytes(buf[:end]), now)
            del buf[: end + sep]
            start = 0
            if ev is not None:
                yield ev
        if len(buf) > max_bytes:  # an unfinished event already past the bound
            raise EventTooLong(max_bytes)
    if buf.strip():  # a last event without its blank line (the connection closed after it)
        ev = parse_event(bytes(buf), clock())
        if ev is not None:
            yield ev
