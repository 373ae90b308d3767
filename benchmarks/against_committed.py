"""A new result set's headline figures against the committed runs of the same cases on the same GPU:
each case's figure, the median of the committed runs that measured it (results/<slug>/ and
results/spread/<slug>/), their ratio, and the GPU's measured noise floor for that scenario and metric
(llmbench.analysis.noisefloor, from the committed sets alone). `within` says whether the ratio lies
inside +-2 floors (about 95% of single runs do, where the floor is the between-run spread). It is how a
oneshot run (share groups, a fresh machine) is checked against the isolated runs before it is published.

    python benchmarks/against_committed.py NEW.json [--results results] [--out FILE]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from report_out import emit

from llmbench.analysis.compare import headline_metric_names
from llmbench.analysis.noisefloor import SPREAD_DIR, floor_of
from llmbench.results import ResultSet, load


def committed(results: Path, slug: str, skip: Path, *more: Path) -> list[ResultSet]:
    """The committed sets of `slug` (results/<slug>/ and its spread folder), but `skip` and `more`."""
    out = []
    left = {p.resolve() for p in (skip, *more)}
    for folder in (results / slug, results / SPREAD_DIR / slug):
        for p in sorted(folder.glob("*.json")):
            if p.resolve() in left:
                continue
            try:
                out.append(load(p))
            except (OSError, ValueError):
                continue
    return out


def rows(new: ResultSet, sets: list[ResultSet]) -> list[dict[str, Any]]:
    floor = floor_of(sets)
    names = set(headline_metric_names())
    out = []
    for c in new.cases:
        if c.status != "ok":
            continue
        for name, m in c.metrics.items():
            if name not in names:
                continue
            seen = [float(o.metrics[name].value) for rs in sets for o in rs.cases
                    if o.id == c.id and o.status == "ok" and name in o.metrics]
            if not seen:
                continue
            ref = statistics.median(seen)
            f = floor.get(new.gpu_slug, c.scenario, name)
            ratio = float(m.value) / ref
            within = None if f is None else abs(math.log(ratio)) <= 2 * f.cv
            group = (c.info.get("share_group") or {}).get("index")
            out.append({"case": c.id, "metric": name, "new": round(float(m.value), 4),
                        "committed_median": round(ref, 4), "committed_runs": len(seen), "ratio": round(ratio, 4),
                        "floor_cv": None if f is None else round(f.cv, 4), "within_2_floors": within,
                        "share_group_index": group})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("new", type=Path)
    ap.add_argument("--results", type=Path, default=Path("results"))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    new = load(args.new)
    found = rows(new, committed(args.results, new.gpu_slug, args.new))
    emit({"new": str(args.new), "gpu": new.gpu_slug, "rows": found,
          "within": sum(r["within_2_floors"] is True for r in found),
          "outside": sum(r["within_2_floors"] is False for r in found),
          "no_floor": sum(r["within_2_floors"] is None for r in found)}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
