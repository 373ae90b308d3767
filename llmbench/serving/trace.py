"""Request traces to replay: when each request arrived and how long its input and output were.

Two formats: JSONL in the Mooncake layout (`{"timestamp": ms, "input_length": n, "output_length":
m}` per line) and CSV with BurstGPT's columns (`Timestamp` in seconds, `Request tokens`,
`Response tokens`). Rows are replayed in time order, from the first one, at the trace's own pace
times `time_scale` (0.5 replays it twice as fast).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from llmbench.errors import UserError, choices_hint


@dataclass(frozen=True)
class TraceRow:
    offset_s: float
    input_len: int
    output_len: int


def _jsonl(path: Path) -> list[tuple[float, int, int]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            rows.append((float(d["timestamp"]) / 1e3, int(d["input_length"]), int(d["output_length"])))
        except (ValueError, KeyError, TypeError) as e:
            raise UserError(f"{path}:{n}: a trace line needs timestamp (ms), input_length and output_length "
                            f"({type(e).__name__}: {e})") from None
    return rows


def _csv(path: Path) -> list[tuple[float, int, int]]:
    rows = []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        need = {"Timestamp", "Request tokens", "Response tokens"}
        if not need <= set(reader.fieldnames or []):
            raise UserError(f"{path}: a CSV trace needs the columns {', '.join(sorted(need))} "
                            f"(has {', '.join(reader.fieldnames or [])})")
        for n, r in enumerate(reader, 2):
            try:
                rows.append((float(r["Timestamp"]), int(r["Request tokens"]), int(r["Response tokens"])))
            except ValueError as e:
                raise UserError(f"{path}:{n}: {e}") from None
    return rows


READERS = {".jsonl": _jsonl, ".json": _jsonl, ".csv": _csv}


def read_trace(path: str | Path, time_scale: float = 1.0, limit: int | None = None) -> list[TraceRow]:
    """The trace's rows sorted by time, offsets from its first row scaled by `time_scale`; rows with
    no output (BurstGPT logs failures as 0 response tokens) are left out; at most `limit` rows."""
    p = Path(path)
    reader = READERS.get(p.suffix.lower())
    if reader is None:
        raise UserError(f"trace {str(p)!r}: unknown format; {choices_hint(None, READERS)}")
    if not p.is_file():
        raise UserError(f"trace {str(p)!r} does not exist")
    if time_scale <= 0:
        raise UserError(f"time_scale must be > 0, got {time_scale}")
    rows = sorted((r for r in reader(p) if r[2] > 0 and r[1] > 0), key=lambda r: r[0])[:limit]
    if not rows:
        raise UserError(f"trace {str(p)!r} has no request with input and output tokens")
    t0 = rows[0][0]
    return [TraceRow((t - t0) * time_scale, i, o) for t, i, o in rows]
