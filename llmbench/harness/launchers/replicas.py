"""The replicas launcher (`replicas`): a case whose placement asks for `replicas` copies runs them at once
from its case process, each a fresh case process of its own (`worker case`, harness/isolation.py) on its
equal slice of the case's GPUs, their timed windows started together (measure/replica_sync.py), and
makes the case's metrics of theirs: an additive metric (a throughput: MetricDef.additive) is summed
sample by sample (the i-th timed iteration of each), a latency (ms) pools every copy's samples, anything
else is the worst copy's; each copy's figures stay in `info.replicas`. The question it answers: one
engine over N GPUs (tensor parallel) or N engines, one per GPU, side by side. docs/design.md, "The
launcher layer"."""

from __future__ import annotations

import copy
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from llmbench.harness.isolation import ChildOutcome, rank_tmp_prefix, run_case_process
from llmbench.harness.launchers.torchrun import node_env
from llmbench.measure.replica_sync import STOPPED, ReplicaStopped
from llmbench.metrics import metric
from llmbench.results import MetricResult
from llmbench.scenarios.base import CaseContext, Scenario

NAME = "replicas"
MIN_OVERLAP = 0.9  # the share of the replicas' time together below which their sum is flagged


def replica_spec(spec: dict[str, Any], index: int, of: int, folder: Path) -> dict[str, Any]:
    """Replica `index`'s worker spec: the case on its share of the GPUs, one copy, and the start line."""
    out = copy.deepcopy(spec)
    place = dict(out.get("placement") or {})
    out["placement"] = {**place, "gpus": int(place.get("gpus", of)) // of, "replicas": 1}
    out["replica"] = {"index": index, "of": of, "folder": str(folder)}
    return out


def run_replica_case(scenario: Scenario, spec: dict[str, Any], ctx: CaseContext,
                     timeout_s: float) -> ChildOutcome | None:
    """The case's replicas, at once, within its timeout; None when each ended ok and their metrics are the
    case's (`combine`); else the outcome of the first replica that did not, its reason naming it."""
    n = scenario.placement.replicas
    envs = [node_env(dict(os.environ), i, n) for i in range(n)]
    ctx.info["launcher"] = NAME
    outcomes: list[ChildOutcome | None] = [None] * n
    with tempfile.TemporaryDirectory(prefix=rank_tmp_prefix()) as tmp:
        folder = Path(tmp)

        def one(i: int) -> None:
            try:
                out = run_case_process(replica_spec(spec, i, n, folder), envs[i], timeout_s,
                                       ctx.progress if i == 0 else None)
            except Exception as e:  # recorded as the replica's end; the others are told to stop
                out = ChildOutcome("failed", f"could not start: {type(e).__name__}: {e}")
            outcomes[i] = out
            if out.status != "ok":
                (folder / STOPPED).touch()

        threads = [threading.Thread(target=one, args=(i,), name=f"replica-{i}", daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    ended = [o if o is not None else ChildOutcome("failed", "ended without an outcome") for o in outcomes]
    failed = [(i, o) for i, o in enumerate(ended) if o.status != "ok"]
    if failed:  # the first to fail on its own, not one told to stop because of it
        i, first = next(((i, o) for i, o in failed if ReplicaStopped.__name__ not in (o.reason or "")), failed[0])
        first.reason = f"replica {i + 1} of {n}: {first.reason}"
        return first
    combine([o.payload for o in ended], ctx, [e.get("CUDA_VISIBLE_DEVICES") for e in envs])
    return None


def overlap(windows: list[list[float]]) -> float | None:
    """The time every replica's timed window was open / the time from the first start to the last end
    (each window: its start and end, last)."""
    if not windows or any(len(w) < 2 for w in windows):
        return None
    windows = [w[-2:] for w in windows]
    together = min(w[1] for w in windows) - max(w[0] for w in windows)
    span = max(w[1] for w in windows) - min(w[0] for w in windows)
    return max(together, 0.0) / span if span > 0 else 1.0


def copy_window(info: dict[str, Any]) -> list[float]:
    """A copy's last timed window as [ready, start, end] (`CaseContext.measure`: when it reached the start
    line, then its window); [] where it recorded none."""
    last = (info.get("windows_unix") or [[]])[-1]
    ready = info.get("replica_ready_unix")
    return ([ready] if ready is not None and last else []) + list(last)


def combine(payloads: list[dict[str, Any]], ctx: CaseContext, gpus: list[str | None] | None = None) -> None:
    """The case's metrics, info and code path from its replicas' (replica 0's info and code path, with
    what differs noted); `gpus`: each replica's CUDA_VISIBLE_DEVICES."""
    first = payloads[0]
    own = ("launcher", "windows_unix", "replica_ready_unix")  # each copy's: kept per copy in info.replicas
    ctx.info.update({k: v for k, v in first.get("info", {}).items() if k not in own})
    ctx.code_path.update(first.get("code_path", {}))
    ctx.code_path["same_on_every_replica"] = all(p.get("code_path") == first.get("code_path") for p in payloads)
    windows = [copy_window(p.get("info", {})) for p in payloads]
    share = overlap(windows)
    apart = ([] if share is None or share >= MIN_OVERLAP else
             [f"the replicas' timed windows were open together for {share:.0%} of their span: part of the sum "
              "ran alone"])
    per: dict[str, list[float]] = {}
    for name in first.get("metrics", {}):
        got = [p.get("metrics", {}).get(name) for p in payloads]
        if any(g is None for g in got):
            continue
        ms = [MetricResult.model_validate(g) for g in got]
        per[name] = [m.value for m in ms]
        flags = list(dict.fromkeys(f for m in ms for f in m.flags))
        d = metric(name)
        samples = [m.samples for m in ms]
        if d.additive:
            if all(samples):
                k = min(len(s or []) for s in samples)
                ctx.record(name, [sum((s or [])[i] for s in samples) for i in range(k)], flags + apart)
            else:
                ctx.record_value(name, sum(m.value for m in ms), flags + apart)
        elif d.unit == "ms" and all(samples):
            ctx.record(name, [x for s in samples for x in (s or [])], flags)
        else:  # the worst copy's (for "neither", the largest)
            pick = min if d.better == "higher" else max
            worst = pick(ms, key=lambda m: m.value)
            ctx.metrics[name] = worst.model_copy(update={"flags": flags})
    ctx.info["replicas"] = {"count": len(payloads), "gpus": gpus, "overlap": None if share is None else round(share, 4),
                            "windows_unix": windows, "metrics": per}
