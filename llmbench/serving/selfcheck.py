"""Does the client's own measurement hold? Figures a point reports about its client beside the server's:

- latency from the intended send time (the schedule's, or when a concurrency slot came free) beside the
  one from the actual send: where the client sent late, only the first shows what a user would have
  waited (coordinated omission corrected);
- the rate achieved against the rate asked;
- Little's law, L = lambda W: the requests in flight as the watcher sampled them (time-averaged) against
  the completion rate times the mean request time from the records; two independent readings of the same
  load, so a disagreement means the records or the gauge are wrong (a dropped record, a late timestamp);
- the client's CPU: the share of a core its busiest process used, and how late its event loop woke.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from llmbench.results import MetricResult
from llmbench.serving.load import LoadResult
from llmbench.serving.watch import TICK_S

CPU_SATURATED = 0.9  # a client process above this share of a core is short of CPU: its timings are its own
LAG_P99_MS = 20.0  # its loop woke this late at the 99th percentile: sends and reads were delayed
RATE_SHORT = 0.95  # achieved under this share of the rate asked: the client did not keep the schedule
LITTLE_TOLERANCE = 0.1  # L and lambda W further apart than this share: the records disagree with the gauge


def intended_latencies(result: LoadResult) -> dict[str, list[float]]:
    """TTFT and E2E (ms) of each successful request from its intended send time, in request order."""
    ok = [r for r in result.records if r.ok and r.chunks_s and not math.isnan(r.sent_s)]
    return {"ttft_ms": [(r.chunks_s[0] - r.scheduled_s) * 1e3 for r in ok],
            "e2e_ms": [(r.end_s - r.scheduled_s) * 1e3 for r in ok]}


def client_check(result: LoadResult, asked_rate: float | None) -> tuple[dict[str, MetricResult], dict[str, Any]]:
    """The client's metrics (ttft_intended_ms, e2e_intended_ms, client_cpu_share, client_loop_lag_ms) and
    `client_check` facts with `flags` (each a sentence: what the client got wrong, or why its figures are
    its own)."""
    from llmbench.serving.analysis import distribution

    metrics: dict[str, MetricResult] = {}
    facts: dict[str, Any] = {"processes": result.processes}
    flags: list[str] = []
    lat = intended_latencies(result)
    for name, values in (("ttft_intended_ms", lat["ttft_ms"]), ("e2e_intended_ms", lat["e2e_ms"])):
        if values:
            metrics[name] = distribution(name, values)
    sent = sorted((r for r in result.records if not math.isnan(r.sent_s) and not math.isnan(r.end_s)),
                  key=lambda r: r.sent_s)
    if len(sent) > 1:
        start, end = sent[0].sent_s, max(r.end_s for r in sent)
        span = sent[-1].sent_s - start
        planned = max(r.scheduled_s for r in sent) - min(r.scheduled_s for r in sent)
        if asked_rate is not None and math.isfinite(asked_rate) and span > 0 and planned > 0:
            # against the schedule's own rate over the same requests (a Poisson draw is not exactly the rate)
            achieved, scheduled = (len(sent) - 1) / span, (len(sent) - 1) / planned
            facts["achieved_of_scheduled_rate"] = round(achieved / scheduled, 4)
            if achieved < RATE_SHORT * scheduled:
                flags.append(f"the client sent {achieved:.3g} req/s where its schedule asked {scheduled:.3g}: it did "
                             "not keep the schedule (read the *_intended_ms figures; give it more processes or CPU)")
        w = result.watch
        samples = w.in_flight[int(start / TICK_S):int(end / TICK_S)] if w is not None else []
        if result.stopped:  # the requests cut off were in the gauge and are not in the records
            facts["littles_law"] = "not checked: the point was ended early"
        elif samples and end > start:
            l_gauge = float(np.mean(samples))
            lam_w = sum(r.end_s - r.sent_s for r in sent) / (end - start)  # lambda = n / T, W = mean time
            facts["littles_law"] = {"in_flight_mean": round(l_gauge, 4), "rate_times_latency": round(lam_w, 4),
                                    "ratio": round(l_gauge / lam_w, 4) if lam_w > 0 else None}
            if lam_w > 0 and len(samples) >= 20 and abs(l_gauge / lam_w - 1) > LITTLE_TOLERANCE:
                flags.append(f"Little's law does not hold: {l_gauge:.2f} requests in flight on average by the gauge, "
                             f"{lam_w:.2f} by rate x latency from the records: the records are not the load that ran")
    if result.wall_s > 0:
        share = result.busiest_cpu_share if result.busiest_cpu_share is not None else result.cpu_s / result.wall_s
        cpu_flags = []
        if share > CPU_SATURATED:
            cpu_flags.append(f"the client used {share:.0%} of a core: it was short of CPU, and its latencies and "
                             "rates may be its own (give it more processes: --client-procs)")
        metrics["client_cpu_share"] = MetricResult.single("client_cpu_share", share, cpu_flags)
        flags.extend(cpu_flags)
    if result.watch is not None and result.watch.lag_ms:
        lag = distribution("client_loop_lag_ms", result.watch.lag_ms)
        p99 = float(np.percentile(result.watch.lag_ms, 99))
        if p99 > LAG_P99_MS:
            lag.flags.append(f"the client's event loop woke {p99:.0f} ms late at the 99th percentile: its sends and "
                             "reads were delayed")
            flags.append(lag.flags[-1])
        metrics["client_loop_lag_ms"] = lag
    facts["flags"] = flags
    return metrics, facts
