"""The client in several processes, for loads one event loop cannot drive: each process runs its own
loop over its share of the workload (every N-th arrival of a rate schedule, or its share of the
concurrency slots), all on one time origin (perf_counter is the system's monotonic clock, the same in
every process of a machine), and their records and watch samples are merged into one point. A process
that finds the point saturated tells the others through a shared event; they end it too.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
from dataclasses import replace
from typing import Any

from llmbench.serving.client import Endpoint
from llmbench.serving.load import LoadResult, Schedule, Session, run_async, run_load
from llmbench.serving.watch import Watch

START_AHEAD_S = 0.2  # the shared origin lies this far after the last process said it is ready
READY_TIMEOUT_S = 120.0


def shares(sessions: list[Session], sched: Schedule, n: int) -> list[tuple[list[Session], Schedule]]:
    """Each process's sessions and schedule: arrivals dealt round-robin (together the same schedule), or
    the concurrency slots split as evenly as they go (sessions in proportion)."""
    if sched.offsets_s is not None:
        return [([sessions[i] for i in range(k, len(sessions), n)],
                 replace(sched, offsets_s=sched.offsets_s[k::n])) for k in range(n)]
    assert sched.concurrency is not None
    slots = [sched.concurrency // n + (k < sched.concurrency % n) for k in range(n)]
    out, at = [], 0
    for k, c in enumerate(slots):
        take = round(len(sessions) * sum(slots[:k + 1]) / sched.concurrency) - at
        out.append((sessions[at:at + take], replace(sched, concurrency=max(1, c))))
        at += take
    return [(s, sc) for s, sc in out if s and sc.concurrency]


def _worker(ep: Endpoint, sessions: list[Session], sched: Schedule, window_s: float, ready: Any, start: Any,
            origin: Any, stop: Any, results: Any, uvloop_if_installed: bool) -> None:
    ready.put(1)
    start.wait(READY_TIMEOUT_S)
    result, _ = run_async(run_load(ep, sessions, sched, window_s=window_s, t0=origin.value,
                                   stop_elsewhere=stop.is_set, on_saturated=lambda why: stop.set()),
                          uvloop_if_installed)
    results.put(result)


def run_load_processes(ep: Endpoint, sessions: list[Session], sched: Schedule, n: int, window_s: float = 0.0,
                       uvloop_if_installed: bool = True) -> LoadResult:
    """The load driven by `n` processes (spawned), merged: records in order of their intended send time
    (renumbered), in-flight samples summed tick by tick, lateness pooled, CPU time summed (`cpu_s`) and
    the busiest process's share of a core kept (`busiest_cpu_share`)."""
    ctx = mp.get_context("spawn")
    ready, results = ctx.Queue(), ctx.Queue()
    start, stop, origin = ctx.Event(), ctx.Event(), ctx.Value("d", 0.0)
    parts = shares(sessions, sched, n)
    procs = [ctx.Process(target=_worker, args=(ep, s, sc, window_s, ready, start, origin, stop, results,
                                                uvloop_if_installed), daemon=True) for s, sc in parts]
    for p in procs:
        p.start()
    got: list[LoadResult] = []
    try:
        for _ in procs:
            ready.get(timeout=READY_TIMEOUT_S)
        origin.value = time.perf_counter() + START_AHEAD_S
        start.set()
        while len(got) < len(procs):
            try:
                got.append(results.get(timeout=1.0))
            except queue.Empty:
                if not any(p.is_alive() for p in procs) and results.empty():
                    dead = [p.exitcode for p in procs]
                    raise RuntimeError(f"a client process ended without its results (exit codes {dead})") from None
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
    return merged(got)


def merged(parts: list[LoadResult]) -> LoadResult:
    """One point's result from its processes' (see run_load_processes)."""
    records = sorted((r for p in parts for r in p.records), key=lambda r: (r.scheduled_s, r.session, r.turn))
    for i, r in enumerate(records):
        r.index = i
    watches = [p.watch for p in parts if p.watch is not None]
    w = Watch(watches[0].window_s if watches else 0.0)
    ticks = max((len(x.in_flight) for x in watches), default=0)
    w.in_flight = [sum(x.in_flight[k] for x in watches if k < len(x.in_flight)) for k in range(ticks)]
    w.lag_ms = [v for x in watches for v in x.lag_ms]
    w.saturated = next((x.saturated for x in watches if x.saturated and not x.saturated.startswith("another")),
                       next((x.saturated for x in watches if x.saturated), None))
    w.windows = next((x.windows for x in watches if x.saturated == w.saturated), watches[0].windows if watches else [])
    out = LoadResult(records=records, not_started=sum(p.not_started for p in parts),
                     peak_in_flight=sum(p.peak_in_flight for p in parts), stopped=sum(p.stopped for p in parts),
                     watch=w, wall_s=max((p.wall_s for p in parts), default=0.0),
                     cpu_s=sum(p.cpu_s for p in parts), processes=len(parts),
                     busiest_cpu_share=max((p.cpu_s / p.wall_s for p in parts if p.wall_s > 0), default=0.0))
    return out
