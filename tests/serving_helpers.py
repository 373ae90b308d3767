"""Shared pieces of the serving tests: run the real client against the real fake server."""

from __future__ import annotations

import asyncio
from typing import Any

from llmbench.serving.client import Endpoint
from llmbench.serving.load import LoadResult, Schedule, Session, Turn, run_load


def sessions(n: int, output_len: int = 8, text: str = "hello world", turns: int = 1) -> list[Session]:
    return [Session(tuple(Turn(f"{text} {i} {k}", output_len) for k in range(turns))) for i in range(n)]


def load(url: str, work: list[Session], sched: Schedule, kind: str = "completions", model: str = "fake",
         block_s: float = 0.0) -> LoadResult:
    """Run the load on a fresh event loop; `block_s` blocks that loop before the first send (a client
    that is late for its schedule)."""
    import time

    async def main() -> LoadResult:
        if block_s:
            asyncio.get_running_loop().call_soon(time.sleep, block_s)
        return await run_load(Endpoint(url, kind, model), work, sched)

    return asyncio.run(main())


def by_index(result: LoadResult) -> dict[int, Any]:
    return {r.index: r for r in result.records}
