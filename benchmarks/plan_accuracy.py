"""How well `run --dry-run` and `run --budget` quote cases never measured: each ok case of a result set
quoted from all the others (leave one out), by the plan's rule and by the closest-sibling rule alone,
against the wall time it took. The figures in llmbench/harness/plan.py's docstring come from here.

    python benchmarks/plan_accuracy.py results/h100-sxm-80gb/inference-llama3-8b-*.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from report_out import emit

from llmbench.harness import plan
from llmbench.results import load
from llmbench.suite import load_suite

Rule = Callable[[dict[str, Any], list[plan.MeasuredCase]], float | None]
RULES: dict[str, Rule] = {"plan": plan.similar_time, "closest-only": plan.closest_time}


def errors(result: Path, rule: Rule) -> list[tuple[str, float, float]]:
    """(case label, measured s, quoted s) for each ok case of the set, quoted without it."""
    rs = load(result)
    measured = plan.ok_case_times(rs)
    cases = {c.id: c for c in load_suite(rs.suite).cases}
    out = []
    for cid, m in measured.items():
        if cid not in cases:  # the suite file changed since: its settings are unknown
            continue
        c = cases[cid]
        peers = [v for k, v in measured.items() if k != cid and v.scenario == c.scenario]
        estimate = plan.estimate_time(c)
        like = rule(c.params_dict, peers)
        out.append((c.label, m.seconds, max(like, estimate) if like is not None else estimate))
    return out


def summary(rows: list[tuple[str, float, float]]) -> dict[str, Any]:
    rel = [(q - t) / t for _, t, q in rows]
    worst = min(range(len(rows)), key=lambda i: rel[i])
    return {
        "cases": len(rows),
        "median_abs_error": round(statistics.median(abs(e) for e in rel), 3),
        "mean_error": round(statistics.mean(rel), 3),
        "under": sum(e < 0 for e in rel),
        "under_by_more_than_15pct": sum(e < -0.15 for e in rel),
        "worst_under": {"case": rows[worst][0], "measured_s": rows[worst][1], "quoted_s": round(rows[worst][2], 1)},
        "total_measured_s": round(sum(t for _, t, _ in rows)),
        "total_quoted_s": round(sum(q for _, _, q in rows)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("result", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    res = {"result": str(args.result), **{name: summary(errors(args.result, rule)) for name, rule in RULES.items()}}
    emit(res, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
