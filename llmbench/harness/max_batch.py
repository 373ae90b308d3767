"""The largest batch that fits: doubling, then bisection, each probe a fresh case process (an
out-of-memory leaves the CUDA context unusable, so a probe never shares one with the next).

A case whose params say `max_batch = true` is searched from its `batch_size` up: probes run with a
short stop rule (one warm-up and one timed step: the peak is reached by then) and `max_batch` off;
the runner then measures the case at the batch found with the case's own settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llmbench.harness.isolation import ChildOutcome, run_case_process

PROBE_SETTINGS = {"warmup_iters": 1, "min_iters": 1, "min_seconds": 0.0, "min_sample_s": 0.0}
DEFAULT_LIMIT = 1024

RunFn = Callable[[dict[str, Any], dict[str, str], float], ChildOutcome]


@dataclass
class Search:
    best: int | None  # the largest batch that ran; None when even the first probe did not
    probes: list[dict[str, Any]] = field(default_factory=list)  # {"batch_size", "status", "reason"} in order
    stopped: str | None = None  # why the search stopped early (a probe that neither ran nor ran out of memory)

    def info(self) -> dict[str, Any]:
        return {"batch_size": self.best, "probes": self.probes, "stopped": self.stopped}


def search_max_batch(spec: dict[str, Any], env: dict[str, str], timeout_s: float, *, limit: int = DEFAULT_LIMIT,
                     run: RunFn = run_case_process) -> Search:
    """Largest batch_size in [spec's batch_size, limit] whose probe ends `ok`, assuming that fitting is
    monotonic in the batch size. A probe that fails for another reason stops the search there."""
    found = Search(best=None)

    def fits(batch: int) -> bool | None:
        probe = {**spec, "params": {**spec["params"], "batch_size": batch, "max_batch": False},
                 "settings": {**spec.get("settings", {}), **PROBE_SETTINGS}}
        out = run(probe, env, timeout_s)
        found.probes.append({"batch_size": batch, "status": out.status, "reason": out.reason})
        if out.status == "ok":
            return True
        if out.status == "oom":
            return False
        found.stopped = f"probe at batch_size {batch} ended {out.status}: {out.reason}"
        return None

    lo = int(spec["params"].get("batch_size", 1))
    ok = fits(lo)
    if not ok:
        return found
    hi: int | None = None
    while hi is None and lo < limit:  # doubling until a probe runs out of memory
        nxt = min(lo * 2, limit)
        r = fits(nxt)
        if r is None:
            found.best = lo
            return found
        if r:
            lo = nxt
        else:
            hi = nxt
    while hi is not None and hi - lo > 1:  # bisection: lo fits, hi does not
        mid = (lo + hi) // 2
        r = fits(mid)
        if r is None:
            break
        if r:
            lo = mid
        else:
            hi = mid
    found.best = lo
    return found
