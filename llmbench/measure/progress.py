"""The progress protocol between a case process and the runner: one marked JSON line on stdout per
update, so the parent can draw a per-case progress bar without sharing anything else."""

from __future__ import annotations

import json
import sys
from typing import Any

PROGRESS_MARK = "@@llmbench-progress@@ "


def emit(fraction: float, text: str = "") -> None:
    """Tell the parent how far this case is (0..1)."""
    sys.stdout.write(PROGRESS_MARK + json.dumps({"f": round(fraction, 3), "t": text}) + "\n")
    sys.stdout.flush()


def parse(line: str) -> tuple[float, str] | None:
    """(fraction, text) of a progress line (one that starts with PROGRESS_MARK); None if malformed."""
    try:
        ev: Any = json.loads(line[len(PROGRESS_MARK):])
        return float(ev.get("f", 0.0)), str(ev.get("t", ""))
    except (ValueError, TypeError, AttributeError):
        return None
