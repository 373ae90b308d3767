"""Latency limits a load point must keep (an SLO), as percentiles over its requests, and the named
presets. A point meets the SLO when every limit's percentile is at or under the limit; a request that
failed counts as infinitely late. TTFT and E2E are timed from each request's intended send time
(coordinated omission corrected: a client that sent late does not hide the wait); TPOT has no
send time in it.

    ttft_p99=500ms,tpot_p99=30ms      (ms unless 's' is written; p50..p99.9)
    mlperf-llama3.1-8b-interactive    (a preset, `SLO_PRESETS`)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from llmbench.errors import UserError

# MLPerf Inference's server-scenario token latency limits, 99th percentile (loadgen/mlperf.conf of
# github.com/mlcommons/inference: `*.Server.target_latency_percentile = 99`, and per benchmark
# `llama2-70b.Server.ttft_latency = 2000` / `tpot_latency = 200`, `llama2-70b-interactive` 450 / 40,
# `llama3_1-8b` 2000 / 100, `llama3_1-8b-interactive` 500 / 30, `llama3_1-405b` 6000 / 175,
# `llama3_1-405b-interactive` 4500 / 80; all in ms).
SLO_PRESETS: dict[str, str] = {
    "mlperf-llama2-70b-server": "ttft_p99=2000ms,tpot_p99=200ms",
    "mlperf-llama2-70b-interactive": "ttft_p99=450ms,tpot_p99=40ms",
    "mlperf-llama3.1-8b-server": "ttft_p99=2000ms,tpot_p99=100ms",
    "mlperf-llama3.1-8b-interactive": "ttft_p99=500ms,tpot_p99=30ms",
    "mlperf-llama3.1-405b-server": "ttft_p99=6000ms,tpot_p99=175ms",
    "mlperf-llama3.1-405b-interactive": "ttft_p99=4500ms,tpot_p99=80ms",
}
METRICS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "e2e": "e2e_ms"}
_LIMIT = re.compile(r"^(ttft|tpot|e2e)_p(\d+(?:\.\d+)?)=(\d+(?:\.\d+)?)(ms|s)?$")


@dataclass(frozen=True)
class Limit:
    metric: str  # ttft_ms, tpot_ms or e2e_ms
    percentile: float  # 0 < p < 100
    limit_ms: float

    @property
    def name(self) -> str:
        return f"{self.metric.removesuffix('_ms')}_p{self.percentile:g}"


@dataclass(frozen=True)
class Slo:
    limits: tuple[Limit, ...]
    text: str  # as the user wrote it (a preset's name, or the limits)

    def per_request(self) -> dict[str, float]:
        """The limits as per-request objectives (ms by metric) for goodput: a request is good when it keeps all."""
        return {lim.metric: lim.limit_ms for lim in self.limits}


def parse_limits(text: str) -> Slo:
    """A preset's name or 'ttft_p99=500ms,tpot_p99=30ms' as an Slo; anything else is a UserError naming
    the valid forms."""
    spec = SLO_PRESETS.get(text.strip().lower(), text)
    limits = []
    for part in filter(None, re.split(r"[\s,]+", spec.strip().lower())):
        m = _LIMIT.match(part)
        if not m:
            raise UserError(f"SLO {part!r}: write METRIC_pPCT=LIMIT with METRIC ttft, tpot or e2e and LIMIT in ms "
                            "or s (e.g. 'ttft_p99=500ms,tpot_p99=30ms'), or a preset: " + ", ".join(SLO_PRESETS))
        metric, pct, value, unit = m.group(1), float(m.group(2)), float(m.group(3)), m.group(4) or "ms"
        if not 0 < pct < 100:
            raise UserError(f"SLO {part!r}: the percentile must be between 0 and 100 (e.g. p99)")
        ms = value * (1e3 if unit == "s" else 1.0)
        if not ms > 0 or math.isinf(ms):
            raise UserError(f"SLO {part!r}: the limit must be a positive time")
        limits.append(Limit(METRICS[metric], pct, ms))
    if not limits:
        raise UserError("an empty SLO: give limits such as 'ttft_p99=500ms,tpot_p99=30ms' or a preset: "
                        + ", ".join(SLO_PRESETS))
    return Slo(tuple(limits), text.strip())


def check(slo: Slo, values: dict[str, list[float]], failed: int) -> dict[str, Any]:
    """How a point fared: each limit's percentile (failed requests as infinitely late), whether it was
    kept, `attainment` (the share of requests that kept every limit's value, failed ones not) and
    `met` (every limit kept). `values`: per metric, one figure per successful request, in request order
    (tpot_ms: None for a one-token answer, which has no TPOT to miss)."""
    out: dict[str, Any] = {"limits": {}}
    n_ok = len(values.get("ttft_ms", []))
    met = n_ok > 0
    for lim in slo.limits:
        got = [v for v in values.get(lim.metric, []) if v is not None]
        x = np.asarray(got + [math.inf] * failed, dtype=np.float64)
        pct = float(np.percentile(x, lim.percentile, method="higher")) if x.size else math.inf
        kept = pct <= lim.limit_ms
        met = met and kept
        out["limits"][lim.name] = {"value_ms": round(pct, 3) if math.isfinite(pct) else None,
                                   "limit_ms": lim.limit_ms, "kept": kept}
    good = sum(all((values[lim.metric][i] or 0.0) <= lim.limit_ms for lim in slo.limits) for i in range(n_ok))
    out["attainment"] = round(good / (n_ok + failed), 6) if n_ok + failed else 0.0
    out["met"] = met
    return out
