"""Load shapes and the driver that keeps them.

A workload is a list of sessions; a session is one or more turns sent one after another (a
multi-turn conversation appends each answer and the next question to its history, so its prefix
is shared and prefix caching shows in TTFT). Sessions start either at scheduled times (Poisson or
gamma arrivals at a rate, all at once, a replayed trace) or whenever one of N slots is free (fixed
concurrency). The client's own connection pool never caps concurrency: aiohttp's default of 100
connections is lifted, and the open-file limit is raised when the run needs more sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import resource
import signal
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from llmbench.serving.client import Endpoint, Prompt, stream_request
from llmbench.serving.records import RequestRecord
from llmbench.serving.watch import Watch, watch

STOPPED = "stopped"  # the error of a request cut off when its point was ended early (dropped from the records)


T = TypeVar("T")


def run_async(coro: Coroutine[Any, Any, T], uvloop_if_installed: bool = True) -> tuple[T, str]:
    """Run on uvloop when it is installed (a faster client), else asyncio's loop; which one is returned."""
    if uvloop_if_installed:
        with contextlib.suppress(ImportError):
            import uvloop

            return uvloop.run(coro), "uvloop"
    return asyncio.run(coro), "asyncio"


@dataclass(frozen=True)
class Turn:
    text: str  # the new user text of this turn (the whole prompt of a single-turn session)
    output_len: int
    input_len: int = 0  # the tokens of `text` as the workload made it (0: unknown)


@dataclass(frozen=True)
class Session:
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Schedule:
    """When sessions start: `offsets_s` (one per session, seconds from the start) or `concurrency`
    slots. `duration_s` stops starting new sessions after that long."""

    offsets_s: tuple[float, ...] | None = None
    concurrency: int | None = None
    duration_s: float | None = None

    def __post_init__(self) -> None:
        if (self.offsets_s is None) == (self.concurrency is None):
            raise ValueError("a schedule has either arrival offsets or a concurrency, not both")


def arrival_offsets(n: int, rate: float, burstiness: float = 1.0, seed: int = 0) -> tuple[float, ...]:
    """Start times of n requests at `rate` per second: gamma-distributed gaps with shape
    `burstiness` and scale 1/(rate*burstiness), as vLLM's benchmark draws them (burstiness 1 is a
    Poisson process; below 1 burstier, above 1 more regular). rate=inf sends everything at once.
    The first request goes at 0."""
    if n <= 0:
        return ()
    if math.isinf(rate):
        return (0.0,) * n
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n - 1)
    return (0.0, *(float(x) for x in np.cumsum(gaps)))


@dataclass
class LoadResult:
    records: list[RequestRecord] = field(default_factory=list)
    not_started: int = 0  # sessions (or later turns) not sent: the duration ran out, or a turn failed
    peak_in_flight: int = 0
    stopped: int = 0  # requests in flight when the point was ended early (saturated), cut off and dropped
    watch: Watch | None = None
    wall_s: float = 0.0  # from the start to the last request's end
    cpu_s: float = 0.0  # the client process's CPU time over that span
    processes: int = 1
    busiest_cpu_share: float | None = None  # several processes: the largest share of a core one of them used


def _dropping_stopped(result: LoadResult) -> LoadResult:
    """The records without those cut off by an early end, renumbered in order (an index is a position)."""
    kept = [r for r in result.records if not (r.error or "").startswith(STOPPED)]
    result.stopped += len(result.records) - len(kept)
    for i, r in enumerate(kept):
        r.index = i
    result.records = kept
    return result


class _Driver:
    def __init__(self, ep: Endpoint, sessions: list[Session], on_done: Callable[[RequestRecord], None] | None) -> None:
        self.ep, self.sessions, self.on_done = ep, sessions, on_done
        self.result = LoadResult()
        self.in_flight = 0
        self.t0 = 0.0
        self.multi_turn = any(len(s.turns) > 1 for s in sessions)
        self.stopped = False
        self.tasks: list[asyncio.Task[None]] = []

    def stop(self, why: str) -> None:
        """End the point now: no new request, and those in flight cancelled (recorded as STOPPED)."""
        if not self.stopped:
            self.stopped = True
            for t in self.tasks:
                t.cancel()

    def now(self) -> float:
        return time.perf_counter() - self.t0

    async def session(self, http: object, sid: int, scheduled_s: float) -> None:
        history: list[dict[str, str]] = []
        prompt_text = ""
        for k, turn in enumerate(self.sessions[sid].turns):
            prompt: Prompt
            if self.ep.kind == "chat":
                history.append({"role": "user", "content": turn.text})
                prompt = list(history)
            else:
                prompt_text = f"{prompt_text} {turn.text}" if prompt_text else turn.text
                prompt = prompt_text
            rec = RequestRecord(index=len(self.result.records), scheduled_s=scheduled_s if k == 0 else self.now(),
                                requested_tokens=turn.output_len, session=sid, turn=k)
            self.result.records.append(rec)
            self.in_flight += 1
            self.result.peak_in_flight = max(self.result.peak_in_flight, self.in_flight)
            try:
                await stream_request(http, self.ep, prompt, rec, self.t0, keep_text=self.multi_turn)
            except asyncio.CancelledError:
                rec.error = f"{STOPPED}: the point was ended early"
                raise
            finally:
                self.in_flight -= 1
            if self.on_done is not None:
                self.on_done(rec)
            if not rec.ok:
                self.result.not_started += len(self.sessions[sid].turns) - k - 1
                return
            if self.ep.kind == "chat":
                history.append({"role": "assistant", "content": rec.text})
            else:
                prompt_text += rec.text
            rec.text = ""

    async def by_schedule(self, http: object, sched: Schedule) -> None:
        assert sched.offsets_s is not None
        tasks = []
        for sid, offset in enumerate(sched.offsets_s):
            if (sched.duration_s is not None and offset > sched.duration_s) or self.stopped:
                self.result.not_started += len(sched.offsets_s) - sid
                break
            delay = offset - self.now()
            if delay > 0:
                await asyncio.sleep(delay)
            if self.stopped:
                self.result.not_started += len(sched.offsets_s) - sid
                break
            tasks.append(asyncio.create_task(self.session(http, sid, offset)))
            self.tasks.append(tasks[-1])
        await asyncio.gather(*tasks, return_exceptions=True)

    async def by_concurrency(self, http: object, sched: Schedule) -> None:
        assert sched.concurrency is not None
        todo = iter(range(len(self.sessions)))

        async def slot() -> None:
            for sid in todo:
                if (sched.duration_s is not None and self.now() > sched.duration_s) or self.stopped:
                    self.result.not_started += 1
                    continue
                await self.session(http, sid, self.now())

        self.tasks = [asyncio.create_task(slot()) for _ in range(min(sched.concurrency, len(self.sessions)))]
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.result.not_started += sum(1 for _ in todo)  # those a cancelled slot never took


def open_session(ep: Endpoint, connections: int, strict: bool = True) -> object:
    """An aiohttp session whose pool never caps the load (limit=0: as many connections as requests
    in flight), without aiohttp's 5-minute default: each request is bounded by the endpoint's
    request timeout instead (stream_request), and so is silence inside a response."""
    import aiohttp

    ensure_open_files(connections + 64, strict=strict)
    with sigint_deferred():  # a Ctrl-C inside aiohttp's constructors leaves a half-built connector whose
        # finaliser prints a traceback at exit; it is handled once they are built
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30.0, sock_read=ep.request_timeout_s)
        return aiohttp.ClientSession(connector=connector, timeout=timeout, read_bufsize=2**20)


@contextlib.contextmanager
def sigint_deferred() -> Iterator[None]:
    """SIGINT held back for the block (main thread only) and handed to the handler that was in place
    when the block ends: Python's (KeyboardInterrupt) or asyncio's (the main task cancelled)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if got:
            if callable(old):
                old(signal.SIGINT, None)
            elif old == signal.SIG_DFL:
                raise KeyboardInterrupt


def ensure_open_files(needed: int, strict: bool = True) -> None:
    """Raise the soft open-file limit when `needed` sockets would pass it. With `strict` (a fixed
    concurrency that must be reached) a hard limit too low is a clear error, not a cap that turns
    into 'Too many open files' failures; otherwise the limit is raised as far as it goes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        if strict:
            raise RuntimeError(f"this run needs about {needed} open sockets and the open-file limit is {hard} "
                               "(ulimit -n): lower the concurrency or raise the limit")
        needed = hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def most_in_flight(sessions: list[Session], sched: Schedule) -> int:
    if sched.concurrency is not None:
        return min(sched.concurrency, len(sessions))
    return len(sessions)


async def run_load(
    ep: Endpoint,
    sessions: list[Session],
    sched: Schedule,
    on_done: Callable[[RequestRecord], None] | None = None,
    *,
    window_s: float = 0.0,
    t0: float | None = None,
    stop_elsewhere: Callable[[], bool] = lambda: False,
    on_saturated: Callable[[str], None] | None = None,
) -> LoadResult:
    """Send the workload on the schedule; every request's record, in the order they were started, and what
    the watcher saw (watch.py). `window_s` > 0: end the point early when it is found saturated. `t0`: the
    perf_counter origin (the processes of one client share it; it may lie ahead: the load waits for it);
    `stop_elsewhere`: another process of the client ended the point, `on_saturated`: tell them this one did."""
    d = _Driver(ep, sessions, on_done)
    strict = sched.concurrency is not None
    w = Watch(window_s)

    def saturated(why: str) -> None:
        d.stop(why)
        if on_saturated is not None:
            on_saturated(why)

    async with open_session(ep, most_in_flight(sessions, sched), strict) as http:  # type: ignore[attr-defined]
        if t0 is not None:
            await asyncio.sleep(max(0.0, t0 - time.perf_counter()))
        d.t0 = time.perf_counter() if t0 is None else t0
        cpu0 = time.process_time()
        watcher = asyncio.create_task(watch(w, d.t0, d.result.records, lambda: d.in_flight,
                                            sched.offsets_s is not None, saturated, stop_elsewhere))
        try:
            if sched.concurrency is not None:
                await d.by_concurrency(http, sched)
            else:
                await d.by_schedule(http, sched)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        d.result.cpu_s = time.process_time() - cpu0
        d.result.wall_s = d.now()
    d.result.watch = w
    return _dropping_stopped(d.result)
