"""The largest batch that fits: doubling, then bisection, each probe a fresh case process (an
out-of-memory leaves the CUDA context unusable), resumable through a probe file beside the result set.
How it searches, resumes and retries a measurement that ran out of memory: docs/design.md, "The
harness and the rules of measurement" (`max_batch = true`). It names no param: it reads the scenario's
`max_batch_search` declaration; its records name the batch `batch_size` (`BATCH`), the result-set format."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmbench import __version__
from llmbench.harness.isolation import ChildOutcome, run_case_process
from llmbench.redact import redact_value
from llmbench.results import utc_now, write_atomic
from llmbench.scenarios.base import SCENARIOS, BatchSearch

PROBE_SETTINGS = {"warmup_iters": 1, "min_iters": 1, "min_seconds": 0.0, "min_sample_s": 0.0}
DEFAULT_LIMIT = 1024
MEASUREMENT_RETRIES = 3  # step-downs after a measurement runs out of memory at the batch its probe fit

PROBES_DIR = ".max_batch"  # beside the result sets of a GPU slug; hidden: not a result set
REUSABLE = ("ok", "oom")  # probe outcomes a resumed search trusts; anything else is probed again
INFO_KEY = "max_batch"  # the case's info entry holding its search (result-set format)
BATCH = "batch_size"  # a probe record's batch, and the batch found, in INFO_KEY (result-set format)

RunFn = Callable[[dict[str, Any], dict[str, str], float], ChildOutcome]
ProbeFn = Callable[[dict[str, Any]], None]


def probes_path(result_path: Path, case_id: str) -> Path:
    """Where a case's probes are kept while its result set is unfinished:
    `<gpu-slug folder>/.max_batch/<result-set stem>/<case id, "/" as "__">.json`."""
    return result_path.parent / PROBES_DIR / result_path.stem / f"{case_id.replace('/', '__')}.json"


@dataclass
class ProbeLog:
    """The probes of one case's search on disk: written as each probe ends, read by a later run."""

    path: Path
    case_id: str
    gpu_slug: str
    commit: str | None = None  # llmbench's git commit (None: unknown, a pinned install)
    version: str = __version__

    def identity(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "gpu_slug": self.gpu_slug, "llmbench_version": self.version,
                "llmbench_commit": self.commit}

    def load(self) -> tuple[dict[int, dict[str, Any]], str | None]:
        """The recorded `ok`/`oom` probes by batch size, and why a file there was not reused (None when
        there was none, or it was)."""
        if not self.path.exists():
            return {}, None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            mine = self.identity()
            differ = [k for k, v in mine.items() if data.get(k) != v]
            if differ:
                return {}, (f"{self.path} not reused: its " + ", ".join(f"{k} {data.get(k)!r}" for k in differ)
                            + " differ from this run's " + ", ".join(f"{mine[k]!r}" for k in differ))
            # in order, so a later record of a batch wins (a measurement that ran out of memory after its
            # probe fit is recorded as a second, `oom`, entry)
            known = {int(p[BATCH]): p for p in data["probes"] if p.get("status") in REUSABLE}
        except (OSError, ValueError, KeyError, TypeError) as e:
            return {}, f"{self.path} not reused: unreadable ({e})"
        return known, None

    def save(self, probes: list[dict[str, Any]]) -> None:
        """Write the probes in order (a replayed probe's `resumed` mark is this run's, not the record's),
        credentials in their reasons hidden (llmbench.redact)."""
        probes = redact_value([{k: v for k, v in p.items() if k != "resumed"} for p in probes])
        write_atomic(self.path, json.dumps({**self.identity(), "updated_at": utc_now(), "probes": probes},
                                           indent=1) + "\n")

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
        for d in (self.path.parent, self.path.parent.parent):  # the result set's folder, then .max_batch
            try:
                d.rmdir()  # only when empty
            except OSError:
                break


@dataclass
class Search:
    best: int | None  # the largest batch that ran; None when even the first probe did not
    axis: BatchSearch  # the scenario's declaration: which param is searched, which asks for the search
    probes: list[dict[str, Any]] = field(default_factory=list)  # {BATCH, "status", "reason"} in order
    stopped: str | None = None  # why the search stopped early (a probe that neither ran nor ran out of memory)
    not_reused: str | None = None  # why a recorded search (ProbeLog) was not reused
    # how probes run, and what an earlier run recorded (search_max_batch sets them)
    spec: dict[str, Any] = field(default_factory=dict, repr=False)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    timeout_s: float = 0.0
    run: RunFn = field(default=run_case_process, repr=False)
    known: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)
    log: ProbeLog | None = field(default=None, repr=False)
    on_probe: ProbeFn | None = field(default=None, repr=False)

    @property
    def resumed(self) -> int:
        """How many probes were replayed from an earlier, interrupted run rather than run here."""
        return sum(1 for p in self.probes if p.get("resumed"))

    def _add(self, rec: dict[str, Any], *, save: bool) -> None:
        """Append an outcome, save the probes (before anything else runs: an interrupt loses only the probe
        in flight) and tell `on_probe`."""
        self.probes.append(rec)
        if save and self.log is not None:
            self.log.save(self.probes)
        if self.on_probe is not None:
            self.on_probe(rec)

    def fits(self, batch: int) -> bool | None:
        """Whether `batch` fits its probe (replayed where an earlier run recorded it); None: the probe neither
        ran nor ran out of memory, which stops the search."""
        if batch in self.known:
            rec = {BATCH: batch, "status": self.known[batch]["status"],
                   "reason": self.known[batch].get("reason"), "resumed": True}
            self._add(rec, save=False)
        else:
            probe = {**self.spec, "params": self.axis.at(self.spec["params"], batch),
                     "settings": {**self.spec.get("settings", {}), **PROBE_SETTINGS}}
            out = self.run(probe, self.env, self.timeout_s)
            rec = {BATCH: batch, "status": out.status, "reason": out.reason}
            self._add(rec, save=True)
        if rec["status"] == "ok":
            return True
        if rec["status"] == "oom":
            return False
        self.stopped = f"probe at {BATCH} {batch} ended {rec['status']}: {rec['reason']}"
        return None

    def bisect(self, lo: int, hi: int) -> None:
        """Narrow `best` between `lo` (fits) and `hi` (does not)."""
        while hi - lo > 1:
            mid = (lo + hi) // 2
            r = self.fits(mid)
            if r is None:
                break
            if r:
                lo = mid
            else:
                hi = mid
        self.best = lo

    def measurement_oom(self, reason: str | None) -> int | None:
        """The measurement at `best` ran out of memory although its probe fit (it runs more steps, and the
        allocator's fragmentation grows over steps): record that batch as `oom` (in the log too, after its
        probe's `ok`, so a resumed search replays it as `oom`) and continue the bisection below it, as a
        resumed search would. The new best, or None when no batch below it fits."""
        failed = self.best
        if failed is None:
            return None
        self._add({BATCH: failed, "status": "oom", "reason": reason, "stage": "measurement"}, save=True)
        fit = [int(p[BATCH]) for p in self.probes if p["status"] == "ok" and int(p[BATCH]) < failed]
        if not fit:
            self.best = None
            return None
        self.bisect(max(fit), failed)
        return self.best

    def info(self) -> dict[str, Any]:
        out = {BATCH: self.best, "probes": self.probes, "stopped": self.stopped, "resumed": self.resumed}
        if self.not_reused:
            out["not_reused"] = self.not_reused
        return out


def search_of(scenario: str) -> BatchSearch | None:
    """The scenario's max-batch search, where it offers one."""
    return SCENARIOS.get(scenario).max_batch_search


def search_max_batch(spec: dict[str, Any], env: dict[str, str], timeout_s: float, *, limit: int = DEFAULT_LIMIT,
                     run: RunFn = run_case_process, log: ProbeLog | None = None, fresh: bool = False,
                     on_probe: ProbeFn | None = None, axis: BatchSearch | None = None) -> Search:
    """Largest batch in [the case's value on the axis, limit] whose probe ends `ok`, assuming that fitting
    is monotonic in the batch size. A probe that fails for another reason stops the search there. `axis`:
    the spec's scenario's `max_batch_search` unless given.

    With `log`, each probe's outcome is saved there as it ends, and the `ok`/`oom` outcomes an earlier
    run saved are replayed (marked `"resumed": true`) instead of run; `fresh` ignores them (--force).
    `on_probe` hears of each probe as it ends (replayed ones too)."""
    axis = axis or search_of(str(spec["scenario"]))
    if axis is None:
        raise ValueError(f"scenario {spec['scenario']!r} declares no max_batch_search")
    found = Search(best=None, axis=axis, spec=spec, env=env, timeout_s=timeout_s, run=run, log=log, on_probe=on_probe)
    if log is not None and not fresh:
        found.known, found.not_reused = log.load()
    lo = int(spec["params"].get(axis.axis, 1))
    if not found.fits(lo):
        return found
    hi: int | None = None
    while hi is None and lo < limit:  # doubling until a probe runs out of memory
        nxt = min(lo * 2, limit)
        r = found.fits(nxt)
        if r is None:
            found.best = lo
            return found
        if r:
            lo = nxt
        else:
            hi = nxt
    if hi is None:
        found.best = lo
    else:
        found.bisect(lo, hi)  # lo fits, hi does not
    return found
