"""A result set measured side by side (`oneshot` or `run --parallel` over several GPUs) against the same
cases measured alone on the same GPU model: for each case and headline metric, the figure beside others,
the alone runs' median, range and count, and the case's own between-run spread (the standard deviation
of the log of its alone runs: a CV), not the pooled noise floor of the pages. `within` is True where the
figure lies inside the 95% prediction interval of one more alone run (`alone_pi95`: Student's t at the
alone runs' count, on the log scale; measure/stats.prediction_interval), None where fewer than three alone
runs give no spread. Two CVs around the median is not a 95% band at these counts: with 3 alone runs it
holds about 76% of new runs, with 5 about 84% (tests/test_stats_intervals.py).

Alone runs: every committed case of the same id (results/<slug>/ and results/spread/<slug>/, the set
itself left out, and the sets in each --also folder: alone runs of the same machine kept as evidence)
that is `ok` and was not measured beside others (`info.ran_beside_cases`); for a share of a ceiling
(`roofline_efficiency`), only those read against the same ceilings (a oneshot reads its own measured
ones, a plain `run` the datasheet's). A ratio against alone runs of
other machines carries their machine-to-machine spread too: `--machine SET.json` names alone runs of the
same machine as the side-by-side set (docs/runbooks/gpu/node.sh's `alone` step, right after it), whose
median and ratio each row also gives (`machine_alone`, `machine_ratio`): the one comparison with no
machine between the two.

`host_slowdown`: how much slower the measuring thread's core ran during the case than the fastest it ran
in its set (the median of the case's `info.host_probe_us` over the set's lowest probe; measure/host_speed.py),
and `alone_host_slowdown` the median of the alone runs' own, where they have probes. A host-bound figure
(TTFT of a compiled transformers decode) off its alone runs with a host slowdown well above theirs was
read on a slowed core, not beside a neighbour (docs/evidence/h200-sxm-141gb/host-state/): such a
row outside its interval reads `host_slowed` True (beside at `host_speed.SLOWED` or more, its alone runs
under it or without probes).

    python benchmarks/beside_vs_alone.py SIDE_BY_SIDE.json [--results results] [--also DIR]
        [--machine SET.json] [--out FILE]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from against_committed import committed
from report_out import emit

from llmbench.analysis.compare import headline_metric_names
from llmbench.analysis.runs import Run, same_measurement
from llmbench.measure.host_speed import SLOWED, slowdowns
from llmbench.measure.stats import prediction_interval
from llmbench.results import CaseResult, ResultSet, load, started_unix

MIN_RUNS = 3  # alone runs needed for a spread
EPS = 1e-9  # a figure every run repeats exactly (a peak memory) is inside its zero-width interval


def setup_spans(case: CaseResult) -> list[tuple[float, float]]:
    """When a case was setting up: from each set-up it entered to the moment it asked to time, as its
    phases record them (measure/quiet.py); else, for a run before those, from its start to its first
    timed window; nothing where neither is recorded."""
    moves = case.info.get("quiet_phases_unix")
    if moves:
        spans, start = [], None
        for phase, asked, entered in moves:
            if phase == "setup":
                start = entered
            elif start is not None:
                spans.append((start, asked))
                start = None
        begun = started_unix(case)
        if start is not None and begun is not None:  # it never timed: set-up to its end
            spans.append((start, begun + (case.duration_s or 0.0)))
        return spans
    start, windows = started_unix(case), case.info.get("windows_unix")
    return [(start, windows[0][0])] if start is not None and windows else []


def window_in_setup_s(case: CaseResult, others: list[CaseResult]) -> float | None:
    """Seconds of `case`'s timed windows during which another case was setting up; None without
    recorded windows."""
    mine = case.info.get("windows_unix")
    if not mine:
        return None
    setups = [span for o in others if o is not case for span in setup_spans(o)]
    return round(sum(max(0.0, min(we, se) - max(ws, ss)) for ws, we in mine for ss, se in setups), 3)


CEILING_BOUND = {"roofline_efficiency"}  # a share of a ceiling: compared only under the same ceiling


def _ceiling(case: CaseResult) -> tuple[Any, Any]:
    """The ceilings a case's roofline figure was read against (a run's own measured ones, or the
    datasheet's where it had none)."""
    return case.info.get("bandwidth_tb_s"), case.info.get("peak_tflops")


def host_slowdowns(rs: ResultSet) -> dict[str, float]:
    """Each case's host slowdown against the fastest probe of its set (cases with probes only)."""
    return slowdowns({c.id: [float(v) for v in c.info.get("host_probe_us") or []] for c in rs.cases})


def alone_host_slowdowns(sets: list[ResultSet]) -> dict[str, float]:
    """Per case id, the median host slowdown of its alone runs (each against its own set's fastest probe)."""
    seen: dict[str, list[float]] = {}
    for rs in sets:
        alone = {o.id for o in rs.cases if not o.info.get("ran_beside_cases")}
        for cid, s in host_slowdowns(rs).items():
            if cid in alone:
                seen.setdefault(cid, []).append(s)
    return {cid: round(statistics.median(v), 3) for cid, v in seen.items()}


def _alone_values(case: CaseResult, name: str, sets: list[ResultSet], new: ResultSet | None = None) -> list[float]:
    """The alone runs' figures that measured what `case` (of the set `new`) measured: the one rule's
    pooling (runs.same_measurement: one recorded code path, else one repeat group)."""
    mine = Run("", new or ResultSet(suite=""), case)
    return [float(o.metrics[name].value) for rs in sets for o in rs.cases
            if o.id == case.id and o.status == "ok" and name in o.metrics
            and not o.info.get("ran_beside_cases") and float(o.metrics[name].value) > 0
            and (name not in CEILING_BOUND or _ceiling(o) == _ceiling(case))
            and same_measurement(mine, Run("", rs, o))]


def rows(new: ResultSet, sets: list[ResultSet], machine: list[ResultSet] | None = None) -> list[dict[str, Any]]:
    names = set(headline_metric_names())
    machine = machine or []
    beside_host, alone_hosts = host_slowdowns(new), alone_host_slowdowns(sets + machine)
    out = []
    for c in new.cases:
        if c.status != "ok":
            continue
        host, alone_host = beside_host.get(c.id), alone_hosts.get(c.id)
        for name, m in sorted(c.metrics.items()):
            if name not in names:
                continue
            here = _alone_values(c, name, machine, new)
            alone = _alone_values(c, name, sets, new) + here
            if not alone or float(m.value) <= 0:
                continue
            median = statistics.median(alone)
            cv = statistics.stdev(math.log(v) for v in alone) if len(alone) >= MIN_RUNS else None
            pi = prediction_interval(alone) if cv is not None else None
            ratio = float(m.value) / median
            within = None if pi is None else pi[0] * (1 - EPS) <= float(m.value) <= pi[1] * (1 + EPS)
            out.append({"case": c.id, "scenario": c.scenario, "metric": name, "beside": round(float(m.value), 4),
                        "alone_median": round(median, 4), "alone_min": round(min(alone), 4),
                        "alone_max": round(max(alone), 4), "alone_runs": len(alone), "ratio": round(ratio, 4),
                        "case_cv": None if cv is None else round(cv, 4),
                        "alone_pi95": None if pi is None else [round(pi[0], 4), round(pi[1], 4)],
                        "within": within,
                        "in_range": min(alone) <= float(m.value) <= max(alone),
                        "ran_alone": c.info.get("ran_alone"), "cpus": c.info.get("cpus"), "gpus": c.info.get("gpus"),
                        "window_in_setup_s": window_in_setup_s(c, new.cases),
                        "machine_alone": round(statistics.median(here), 4) if here else None,
                        "machine_ratio": round(float(m.value) / statistics.median(here), 4) if here else None,
                        "host_slowdown": None if host is None else round(host, 3), "alone_host_slowdown": alone_host,
                        "host_slowed": _host_slowed(within, host, alone_host)})
    return out


def _host_slowed(within: bool | None, host: float | None, alone_host: float | None) -> bool | None:
    """A figure outside its interval read on a slowed core that its alone runs did not have; None: inside,
    no interval, or no probe to tell."""
    if within is not False or host is None:
        return None
    return host >= SLOWED and (alone_host is None or alone_host < SLOWED)


def markdown(table: list[dict[str, Any]]) -> str:
    lines = ["| case | metric | beside | alone median [min, max] (n) | ratio | case CV | within 95% PI "
             "| alone, same machine (ratio) | host slowdown, beside (alone) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        how = "ran alone" if r["ran_alone"] else {True: "yes", False: "**no**", None: "n < 3"}[r["within"]]
        if r.get("host_slowed"):
            how += " (slowed core)"
        cv = "" if r["case_cv"] is None else f"{r['case_cv']:.3f}"
        here = "" if r.get("machine_alone") is None else f"{r['machine_alone']:,.4g} ({r['machine_ratio']:.3f})"
        host = "" if r.get("host_slowdown") is None else f"{r['host_slowdown']:.2f}"
        if host and r.get("alone_host_slowdown") is not None:
            host += f" ({r['alone_host_slowdown']:.2f})"
        lines.append(f"| {r['case']} | {r['metric']} | {r['beside']:,.4g} | {r['alone_median']:,.4g} "
                     f"[{r['alone_min']:,.4g}, {r['alone_max']:,.4g}] ({r['alone_runs']}) | {r['ratio']:.3f} | {cv} "
                     f"| {how} | {here} | {host} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("new", type=Path)
    ap.add_argument("--results", type=Path, default=Path("results"))
    ap.add_argument("--also", type=Path, action="append", default=[], help="a folder of more alone runs' sets")
    ap.add_argument("--machine", type=Path, action="append", default=[],
                    help="a set of alone runs on the same machine as the side-by-side set")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    new = load(a.new)
    extra = [load(p) for d in a.also for p in sorted(d.glob("*.json"))]
    machine = [load(p) for p in a.machine]
    table = rows(new, committed(a.results, new.gpu_slug, a.new, *a.machine) + extra, machine)
    emit({"set": str(a.new), "rows": table}, a.out)
    print(markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
