"""What llmbench's intervals and regression gate deliver, by simulation through the functions `compare`
uses (analysis/noisefloor.floor_beside, analysis/compare.compare, analysis/gate.gate) on synthetic result
sets laid out as the committed ones are: machines per side, runs per machine, the spread between
machines and between runs, the other runs of the case family that the floor pools. Per layout it
prints the coverage of each cell's "95%" interval and of the summary's (the geometric mean over the
suite's cases), the gate's false-alarm rate over a suite with nothing changed, and its power against a
real slowdown of one cell.

    python benchmarks/gate_calibration.py [--trials 400] [--out FILE] [--from-results results]

With --from-results, the layouts' spreads are the committed floors' (results/<slug>/ and the spread
folder): each GPU's decode family on one machine and between machines.

The model: a case's log figure on machine m, run r is its level + the GPU's (log 1.3 apart for a pair of
GPUs) + a machine effect (sd `machine_sd`) + a run effect (sd `run_sd`); the effects of one machine (and
of one run) are correlated across cases (`case_corr`), as a run's cases share its machine's state.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from llmbench.analysis.compare import compare
from llmbench.analysis.gate import gate
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.noisefloor import floor_beside
from llmbench.ids import case_id
from llmbench.results import CaseResult, MetricResult, ResultSet

TRUE_RATIO = 1.3
METRIC = "tflops"
PATH = {"kernel": "simulated"}  # one recorded code path: the runs pool across machines


@dataclass(frozen=True)
class Layout:
    """How one comparison's runs lie: per side `machines` x `runs`, over a suite of `cases`, beside the
    family's other runs (`history`: cases, machines, runs per machine) that the floor also pools."""

    name: str
    machines: int
    runs: int
    machine_sd: float
    run_sd: float
    cases: int = 17
    history: tuple[int, int, int] = (6, 8, 2)  # about a committed GPU's family: 13-27 machines, 50+ cells
    case_corr: float = 0.5
    same_machines: bool = False  # the gate's two sides measured on the same machines (before/after on one box)


def _env(slug: str, machine: str) -> dict[str, Any]:
    return {"gpu": {"name": slug, "slug": slug, "count": 1, "id_hash": machine}}


def _effects(rng: np.random.Generator, n: int, cases: int, sd: float, corr: float) -> np.ndarray:
    """n units' effects on each case: a shared part and a case's own, correlated `corr` across cases."""
    shared = rng.standard_normal((n, 1))
    own = rng.standard_normal((n, cases))
    return np.asarray(sd * (np.sqrt(corr) * shared + np.sqrt(1.0 - corr) * own))


def _machines(rng: np.random.Generator, slug: str, tag: str, n: int, cases: int, lay: Layout
              ) -> tuple[list[str], np.ndarray]:
    """`n` machines of a GPU: their ids and their effects on each case."""
    return [f"{slug}-{tag}-m{m}" for m in range(n)], _effects(rng, n, cases, lay.machine_sd, lay.case_corr)


def _runs(rng: np.random.Generator, slug: str, levels: np.ndarray, machines: tuple[list[str], np.ndarray],
          runs: int, lay: Layout, shapes: list[int]) -> list[ResultSet]:
    """Result sets of `runs` runs on each of `machines` of the cases `shapes` at log `levels`."""
    out = []
    for machine, m_eff in zip(*machines, strict=True):
        r_eff = _effects(rng, runs, len(shapes), lay.run_sd, lay.case_corr)
        for r in range(runs):
            cases = []
            for shape, v in zip(shapes, np.exp(levels + m_eff + r_eff[r]), strict=True):
                params = {"precision": "bf16", "shape": [shape, 4096, 4096]}
                cases.append(CaseResult(id=case_id("gemm", params), scenario="gemm", params=params, status="ok",
                                        metrics={METRIC: MetricResult.single(METRIC, float(v))},
                                        code_path=dict(PATH)))
            out.append(ResultSet(suite="sim", created_at=f"2026-01-01T00:00:00Z {machine} run {r}",
                                 finished_at="2026-01-01T00:00:00Z", env=_env(slug, machine), cases=cases))
    return out


def _side(name: str, runs: list[ResultSet]) -> SetRef:
    return SetRef(name=name, rs=runs[0], runs=runs if len(runs) > 1 else [], stems=[name])


def trial(rng: np.random.Generator, lay: Layout, slow_cell: float | None = None, same_gpu: bool = False
          ) -> dict[str, Any]:
    """One comparison: a pair of GPUs (TRUE_RATIO apart) or, `same_gpu`, a baseline and a candidate of one
    GPU (nothing changed, or one cell `slow_cell` slower). What it covered and what the gate said."""
    suite = list(range(1, lay.cases + 1))
    hist_cases, hist_m, hist_r = lay.history
    hist = [1000 + k for k in range(hist_cases)]
    levels = rng.normal(np.log(500.0), 0.5, lay.cases)
    slugs = ("gpu-a", "gpu-a") if same_gpu else ("gpu-a", "gpu-b")
    shift = np.zeros(lay.cases)
    if not same_gpu:
        shift += np.log(TRUE_RATIO)
    if slow_cell is not None:
        shift[0] -= np.log(1.0 + slow_cell)
    history = []
    for slug in dict.fromkeys(slugs):
        history += _runs(rng, slug, rng.normal(np.log(500.0), 0.5, hist_cases),
                         _machines(rng, slug, "hist", hist_m, hist_cases, lay), hist_r, lay, hist)
    on = _machines(rng, slugs[0], "base", lay.machines, lay.cases, lay)
    base = _runs(rng, slugs[0], levels, on, lay.runs, lay, suite)
    if not (same_gpu and lay.same_machines):  # the candidate on machines of its own
        on = _machines(rng, slugs[1], "cand", lay.machines, lay.cases, lay)
    cand = _runs(rng, slugs[1], levels + shift, on, lay.runs, lay, suite)
    sides = [_side(slugs[0] + "/base", base), _side(slugs[1] + "/cand", cand)]
    cmp = compare(sides, 0, None, floor_beside(history, [s.all_runs for s in sides]))
    truth = 1.0 / (1.0 + slow_cell) if slow_cell is not None else 1.0 if same_gpu else TRUE_RATIO
    cells = [r.ratios[1] for r in cmp.rows if r.metric == METRIC]
    overall = next(g.ratios[1] for g in cmp.geomeans if g.scenario == "gemm" and g.metric == METRIC)
    first = next(r.ratios[1] for r in cmp.rows if r.metric == METRIC and r.case_id == cmp.rows[0].case_id)
    g = gate(cmp, 0.05, {METRIC}, unjudged="pass")
    failed_ids = {c.case_id for c in g.failures}
    return {
        "cells": [r.ci[0] <= (truth if k == 0 or slow_cell is None else 1.0) <= r.ci[1]
                  for k, r in enumerate(cells) if r is not None and r.is_95 and r.ci],
        "unjudged": sum(1 for r in cells if r is None or not r.is_95),
        "summary": overall is not None and overall.is_95 and overall.ci is not None
        and overall.ci[0] <= np.exp(np.mean(np.log([truth if k == 0 else (1.0 if same_gpu else TRUE_RATIO)
                                                      for k in range(lay.cases)]))) <= overall.ci[1],
        "gate_failed": g.failed,
        "slow_caught": first is not None and cmp.rows[0].case_id in failed_ids,
        "power_80": g.power.smallest_caught if g.power else None,
    }


def calibrate(lay: Layout, trials: int, seed: int = 20261202) -> dict[str, Any]:
    """Coverage of cells and summary (pairs of GPUs), suite false alarms (nothing changed) and the power
    against a 10% slowdown of one cell, over `trials` comparisons each."""
    rng = np.random.default_rng(seed)
    pairs = [trial(rng, lay) for _ in range(trials)]
    null = [trial(rng, lay, same_gpu=True) for _ in range(trials)]
    slow = [trial(rng, lay, slow_cell=0.10, same_gpu=True) for _ in range(trials)]
    cells = [hit for t in pairs for hit in t["cells"]]
    stated = [t["power_80"] for t in null if t["power_80"] is not None]
    return {
        **asdict(lay),
        "trials": trials,
        "cell_coverage": float(np.mean(cells)) if cells else None,
        "cells_with_95": len(cells),
        "cells_unjudged": sum(t["unjudged"] for t in pairs),
        "summary_coverage": float(np.mean([t["summary"] for t in pairs])),
        "suite_false_alarms": float(np.mean([t["gate_failed"] for t in null])),
        "power_10pct": float(np.mean([t["slow_caught"] for t in slow])),
        "stated_smallest_caught_80pct": float(np.median(stated)) if stated else None,
    }


def layouts(machine_sd: float, run_sd: float) -> list[Layout]:
    """The committed sets' layouts: one machine a side with 2-3 runs (the H100's fp8 decode, the Trainer's
    6), three machines x 2 runs, one run a side on two fresh machines, before/after on one machine."""
    base = Layout("", 1, 1, machine_sd, run_sd)
    return [
        replace(base, name="1 machine x 2 runs", machines=1, runs=2),
        replace(base, name="1 machine x 6 runs", machines=1, runs=6),
        replace(base, name="3 machines x 2 runs", machines=3, runs=2),
        replace(base, name="1 machine x 1 run", machines=1, runs=1),
        replace(base, name="same machine, 3 runs a side", machines=1, runs=3, same_machines=True),
    ]


def committed_spreads(results: Path) -> list[tuple[str, float, float]]:
    """(label, machine sd, run sd) of each GPU's decode family in the committed sets, where both levels
    were measured."""
    from llmbench.analysis.noisefloor import floor_from_folders
    from llmbench.analysis.runs import NOT_GPU_DIRS

    out = []
    for gpu in sorted(p for p in results.iterdir() if p.is_dir() and p.name not in NOT_GPU_DIRS):
        f = floor_from_folders([gpu, results / "spread" / gpu.name]).get(gpu.name, "generate", "decode_tokens_per_s")
        if f is not None and f.machine_var is not None and f.run_var is not None:
            out.append((f"{gpu.name} decode", float(np.sqrt(f.machine_var)), float(np.sqrt(f.run_var))))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--from-results", type=Path, help="take the spreads of the committed sets under this folder")
    args = ap.parse_args(argv)
    spreads = committed_spreads(args.from_results) if args.from_results else []
    spreads += [("2% noise", 0.02, 0.01), ("5% noise", 0.05, 0.02)]
    rows = []
    for label, msd, rsd in spreads:
        for lay in layouts(msd, rsd):
            got = calibrate(replace(lay, name=f"{label}: {lay.name}"), args.trials)
            rows.append(got)
            print(f"{got['name']:<48} cells {got['cell_coverage'] or 0:.3f} summary {got['summary_coverage']:.3f} "
                  f"false alarms {got['suite_false_alarms']:.3f} power(10%) {got['power_10pct']:.3f}",
                  file=sys.stderr, flush=True)
    from report_out import emit

    emit({"true_ratio": TRUE_RATIO, "rows": rows}, args.out, echo=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
