"""What one request measured, and the compact columnar form kept in a result set.

Times are seconds since the benchmark's start (one perf_counter origin for the whole run), so
every figure can be recomputed from a result set: TTFT = first chunk - sent, never - scheduled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

NO_COUNT = -1  # a token count the server did not report (no `usage` in the stream)


@dataclass
class RequestRecord:
    """One request. `scheduled_s` is when the load shape wanted it sent, `sent_s` when the client
    handed it to the connection (their difference is client queueing), `chunks_s` the arrival of
    each chunk that carried output text (the first is the first token), `end_s` when the stream
    closed. Token counts come from the server's `usage`."""

    index: int
    scheduled_s: float
    requested_tokens: int
    session: int = 0
    turn: int = 0
    sent_s: float = math.nan
    chunks_s: list[float] = field(default_factory=list)
    end_s: float = math.nan
    input_tokens: int = NO_COUNT
    output_tokens: int = NO_COUNT
    cached_tokens: int = NO_COUNT  # prompt tokens the server found in its prefix cache (usage.prompt_tokens_details)
    error: str | None = None
    text: str = ""  # the output text, kept only for multi-turn histories; not stored

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def queue_s(self) -> float:
        return self.sent_s - self.scheduled_s


def _ms(x: float) -> float:
    return round(x * 1e3, 3)


def to_columns(records: list[RequestRecord]) -> dict[str, Any]:
    """Records as columns of numbers (one JSON line each in a result set): times in ms since the
    start, chunk arrivals in ms since each request was sent; errors by request index; `cached_tokens` only
    where the server reported any."""
    cols = {
        "scheduled_ms": [_ms(r.scheduled_s) for r in records],
        "sent_ms": [_ms(r.sent_s) if not math.isnan(r.sent_s) else -1.0 for r in records],
        "end_ms": [_ms(r.end_s) if not math.isnan(r.end_s) else -1.0 for r in records],
        "chunk_ms": [[_ms(t - r.sent_s) for t in r.chunks_s] for r in records],
        "requested_tokens": [r.requested_tokens for r in records],
        "input_tokens": [r.input_tokens for r in records],
        "output_tokens": [r.output_tokens for r in records],
        "session": [r.session for r in records],
        "turn": [r.turn for r in records],
        "errors": {str(r.index): r.error for r in records if r.error is not None},
        "legend": "times in ms since the run's start; chunk_ms since the request was sent (the first is "
        "TTFT); token counts from the server's usage, -1 where it reported none; -1 times: never sent/ended",
    }
    if any(r.cached_tokens != NO_COUNT for r in records):
        cols["cached_tokens"] = [r.cached_tokens for r in records]
    return cols


def from_columns(cols: dict[str, Any]) -> list[RequestRecord]:
    """The records back from `to_columns` (to recompute figures from a result set)."""
    out = []
    errors = cols.get("errors", {})
    cached = cols.get("cached_tokens") or [NO_COUNT] * len(cols["scheduled_ms"])
    for i, sched in enumerate(cols["scheduled_ms"]):
        sent = cols["sent_ms"][i] / 1e3 if cols["sent_ms"][i] >= 0 else math.nan
        end = cols["end_ms"][i] / 1e3 if cols["end_ms"][i] >= 0 else math.nan
        out.append(RequestRecord(
            index=i, scheduled_s=sched / 1e3, requested_tokens=cols["requested_tokens"][i],
            session=cols["session"][i], turn=cols["turn"][i], sent_s=sent,
            chunks_s=[sent + c / 1e3 for c in cols["chunk_ms"][i]], end_s=end,
            input_tokens=cols["input_tokens"][i], output_tokens=cols["output_tokens"][i], cached_tokens=cached[i],
            error=errors.get(str(i)),
        ))
    return out
