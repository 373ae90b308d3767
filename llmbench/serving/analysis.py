"""Figures from request records (TTFT, ITL, TPOT, throughputs, goodput), as vLLM's benchmark and NVIDIA
AIPerf define them; failed requests are counted and kept out of every latency. Definitions:
docs/scenarios.md, the serving metrics table."""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from llmbench.errors import UserError
from llmbench.measure.stats import summarize as summarize_samples
from llmbench.results import CaseResult, MetricResult, Stats
from llmbench.serving.records import NO_COUNT, RequestRecord

SLO_KEYS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "e2e": "e2e_ms", "e2el": "e2e_ms"}
MAX_BOOTSTRAP = 5000  # samples the 95% CI of a large distribution (all ITL gaps) is bootstrapped from
BURST_SHARE = 0.5  # more than this share of ITL gaps exactly 0: chunks were read in bursts
QUEUE_GROWTH = 0.5  # latency up this much from the first tenth of the requests to the last: a queue grew
QUEUE_METRICS = {"ttft_ms": "in the server", "e2e_ms": "in the server", "client_queue_ms": "in the client"}


def parse_slo(text: str | None) -> dict[str, float]:
    """'ttft:500 tpot:50' (spaces or commas between, ms) -> {'ttft_ms': 500.0, 'tpot_ms': 50.0}."""
    out: dict[str, float] = {}
    for part in filter(None, re.split(r"[\s,]+", (text or "").strip())):
        key, sep, value = part.partition(":")
        if not sep or key.lower() not in SLO_KEYS:
            raise UserError(f"SLO {part!r}: write KEY:MS with KEY one of ttft, tpot, e2e (e.g. 'ttft:500 tpot:50')")
        try:
            ms = float(value)
        except ValueError:
            raise UserError(f"SLO {part!r}: {value!r} is not a number of milliseconds") from None
        if not ms > 0 or math.isinf(ms):
            raise UserError(f"SLO {part!r}: the limit must be a positive number of milliseconds")
        out[SLO_KEYS[key.lower()]] = ms
    return out


@dataclass(frozen=True)
class Latency:
    """One successful request's figures, in ms."""

    ttft_ms: float
    e2e_ms: float
    tpot_ms: float | None  # None for a one-token answer
    itl_ms: list[float]
    output_tokens: int
    tokens_from_usage: bool


def latency(r: RequestRecord) -> Latency:
    if not r.ok or not r.chunks_s:
        raise ValueError(f"request {r.index} has no latency: {r.error or 'no output text'}")
    ttft = (r.chunks_s[0] - r.sent_s) * 1e3
    e2e = (r.end_s - r.sent_s) * 1e3
    from_usage = r.output_tokens != NO_COUNT
    n = r.output_tokens if from_usage else len(r.chunks_s)
    return Latency(
        ttft_ms=ttft, e2e_ms=e2e, tpot_ms=(e2e - ttft) / (n - 1) if n > 1 else None,
        itl_ms=[(b - a) * 1e3 for a, b in itertools.pairwise(r.chunks_s)],
        output_tokens=n, tokens_from_usage=from_usage,
    )


def meets(lat: Latency, slo: dict[str, float]) -> bool:
    """A request is good when it meets every SLO (a one-token answer has no TPOT to miss)."""
    values = {"ttft_ms": lat.ttft_ms, "e2e_ms": lat.e2e_ms, "tpot_ms": lat.tpot_ms or 0.0}
    return all(values[k] <= limit for k, limit in slo.items())


def distribution(name: str, samples: list[float]) -> MetricResult:
    """`MetricResult.from_samples`, with two changes for request-ordered samples: a large
    distribution's drift is read from an even subsample (its percentiles, median interval and samples
    stay exact and whole), and a drift is reported as what it means in serving."""
    if len(samples) <= MAX_BOOTSTRAP:
        m = MetricResult.from_samples(name, samples)
    else:
        step = len(samples) / MAX_BOOTSTRAP
        m = MetricResult.from_samples(name, [samples[int(i * step)] for i in range(MAX_BOOTSTRAP)])
        x = np.asarray(samples, dtype=np.float64)
        assert m.stats is not None
        m.stats = Stats.model_validate({**summarize_samples(x), "drift": m.stats.drift})
        m.value = float(m.stats.median)  # type: ignore[arg-type]  # summarize always gives it
        m.samples = [float(f"{s:.6g}") for s in samples]
    d = m.stats.drift if m.stats else None
    m.flags = [f for f in m.flags if not f.startswith("drifted")]
    if d is not None and d > QUEUE_GROWTH and name in QUEUE_METRICS and np.median(samples[-len(samples) // 10:]) >= 1.0:
        m.flags.append(f"{d:+.0%} from the first to the last tenth of the requests: a queue grew during the run "
                       f"({QUEUE_METRICS[name]}): the load is above what keeps up")
    return m


def summarize(
    records: list[RequestRecord],
    *,
    slo: dict[str, float] | None = None,
    n_gpus: int = 1,
    asked_rate: float | None = None,
) -> tuple[dict[str, MetricResult], dict[str, Any]]:
    """The case's metrics and the facts beside them (counts, duration, rates asked and achieved)."""
    sent = sorted((r for r in records if not math.isnan(r.sent_s)), key=lambda r: r.sent_s)
    ok = [r for r in sent if r.ok and r.chunks_s]
    failed = [r for r in sent if not (r.ok and r.chunks_s)]
    metrics: dict[str, MetricResult] = {}
    duration = 0.0
    info: dict[str, Any] = {"requests_sent": len(sent), "requests_ok": len(ok), "requests_failed": len(failed)}
    metrics["failed_requests"] = MetricResult.single("failed_requests", len(failed))
    if failed:
        info["first_errors"] = sorted({r.error or "no output text" for r in failed})[:5]
    if sent:
        start = sent[0].sent_s
        end = max(r.end_s for r in sent)
        duration = end - start
        info["duration_s"] = round(duration, 6)
        span = sent[-1].sent_s - start
        if len(sent) > 1 and span > 0:
            metrics["achieved_request_rate_per_s"] = MetricResult.single(
                "achieved_request_rate_per_s", (len(sent) - 1) / span)
        if asked_rate is not None:
            info["asked_request_rate_per_s"] = asked_rate if math.isfinite(asked_rate) else "inf"
        metrics["client_queue_ms"] = distribution("client_queue_ms", [r.queue_s * 1e3 for r in sent])
    if not ok:
        return metrics, info
    lats = [latency(r) for r in ok]
    for name in ("ttft_ms", "e2e_ms"):
        metrics[name] = distribution(name, [getattr(x, name) for x in lats])
    tpots = [x.tpot_ms for x in lats if x.tpot_ms is not None]
    if tpots:
        metrics["tpot_ms"] = distribution("tpot_ms", tpots)
        metrics["tokens_per_s_per_user"] = distribution("tokens_per_s_per_user", [1e3 / t for t in tpots if t > 0])
    itls = [g for x in lats for g in x.itl_ms]
    tokens = sum(x.output_tokens for x in lats)
    chunks = sum(len(r.chunks_s) for r in ok)
    info["output_tokens"] = tokens
    info["tokens_per_chunk"] = round(tokens / chunks, 4)
    if itls:
        m = distribution("itl_ms", itls)
        if tokens > chunks * 1.01:
            m.flags.append(f"{tokens / chunks:.2f} tokens per chunk of text on average (the server put several "
                           "tokens in a chunk, or some tokens had no text): itl_ms is the gap between chunks; "
                           "tpot_ms is per token")
        together = sum(g == 0.0 for g in itls) / len(itls)
        if together > BURST_SHARE:
            m.flags.append(f"{together:.0%} of the token chunks arrived in the same read as the one before: the "
                           "server sent them in bursts, or the client or server was short of CPU (a busy machine); "
                           "itl_ms and tpot_ms then say little about decoding")
        metrics["itl_ms"] = m
    no_usage = sum(not x.tokens_from_usage for x in lats)
    mismatched = [r for r in ok if r.output_tokens not in (NO_COUNT, r.requested_tokens)]
    info["length_mismatches"] = len(mismatched)
    info["no_usage_reported"] = no_usage
    flags = []
    if mismatched:
        first = mismatched[0]
        flags.append(f"{len(mismatched)} request(s) got another output length than asked (e.g. {first.output_tokens} "
                     f"for {first.requested_tokens}): the server ignored ignore_eos/min_tokens")
    if no_usage:
        flags.append(f"{no_usage} request(s) had no usage in the stream: their token count is the chunk count")
    if duration > 0:
        metrics["request_throughput_per_s"] = MetricResult.single("request_throughput_per_s", len(ok) / duration)
        metrics["output_tokens_per_s"] = MetricResult.single("output_tokens_per_s", tokens / duration, flags)
        metrics["output_tokens_per_s_per_gpu"] = MetricResult.single(
            "output_tokens_per_s_per_gpu", tokens / duration / n_gpus, flags)
        if slo:
            good = sum(meets(x, slo) for x in lats)
            info["good_requests"] = good
            info["slo_ms"] = slo
            metrics["goodput_per_s"] = MetricResult.single("goodput_per_s", good / duration)
    by_turn = _by_turn(ok, lats)
    if len(by_turn) > 1:
        info["ttft_ms_median_by_turn"] = by_turn
    return metrics, info


def _by_turn(ok: list[RequestRecord], lats: list[Latency]) -> list[float]:
    turns: dict[int, list[float]] = {}
    for r, x in zip(ok, lats, strict=True):
        turns.setdefault(r.turn, []).append(x.ttft_ms)
    return [round(float(np.median(turns[k])), 3) for k in sorted(turns)]


def peak_in_flight(records: list[RequestRecord]) -> int:
    """The most requests that were open at once (sent, not yet ended), from the records."""
    ev = sorted([(r.sent_s, 1) for r in records if not math.isnan(r.sent_s)]
                + [(r.end_s, -1) for r in records if not math.isnan(r.end_s)], key=lambda e: (e[0], e[1]))
    peak = cur = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    return peak


# The throughput-latency Pareto view of a sweep (report/charts.pareto_charts): one line per server
# configuration, one point per load point.
X, Y = "tokens_per_s_per_user", "output_tokens_per_s_per_gpu"
SERIES_KEYS = ("preset", "model", "precision", "endpoint", "input_len", "output_len")
POINT_KEYS = ("concurrency", "rate")


def pareto_points(cases: list[CaseResult]) -> dict[str, list[tuple[float, float, str]]]:
    """(tok/s per user, tok/s per GPU, point label) of each ok serving case, by series label."""
    out: dict[str, list[tuple[float, float, str]]] = {}
    for c in cases:
        if c.status != "ok" or X not in c.metrics or Y not in c.metrics:
            continue
        series = " ".join(f"{k}={c.params[k]}" for k in SERIES_KEYS if c.params.get(k) is not None)
        point = next((f"{k} {c.params[k]}" for k in POINT_KEYS if c.params.get(k) is not None), "")
        out.setdefault(series, []).append((c.metrics[X].value, c.metrics[Y].value, point))
    return {k: sorted(v) for k, v in out.items()}
