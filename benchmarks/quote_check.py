"""A oneshot's quote against what its cases took: each case's quote as `oneshot --dry-run` printed it
before the run (its dryrun.txt), beside the case's wall time in the result sets the run wrote, and the
totals over the cases that ran; and the run's span (first case start to last case end, what cases side
by side over several GPUs take) beside the dry-run's total ("about N min", the makespan over its GPUs).
Cases skipped, failed or left for --resume (in no set) are listed with their quotes, apart.

    python benchmarks/quote_check.py DRYRUN.txt SET.json [SET.json ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from report_out import emit

from llmbench.results import load, started_unix

QUOTE = re.compile(r"quote: (?:(?P<s>\d+) s|(?P<skip>skipped)).*?id: (?P<id>\S+)", re.S)
TOTAL = re.compile(r"about (?P<min>[\d.]+) min")


def quotes(dry_run: str) -> dict[str, float | None]:
    """Each case id's quoted seconds in a dry-run's plan (None: quoted as skipped here)."""
    return {m["id"]: None if m["skip"] else float(m["s"]) for m in QUOTE.finditer(dry_run)}


def check(dry_run: Path, sets: list[Path]) -> dict[str, Any]:
    quoted = quotes(dry_run.read_text(encoding="utf-8"))
    rows, apart = [], []
    spans: list[tuple[float, float]] = []
    for path in sets:
        for case in load(path).cases:
            start = started_unix(case)
            if start is not None and case.duration_s:
                spans.append((start, start + case.duration_s))
            q = quoted.get(case.id)
            if case.status == "ok" and q is not None:
                rows.append({"case": case.id, "set": path.name, "quoted_s": q, "took_s": round(case.duration_s, 1)})
            elif case.status != "ok":
                apart.append({"case": case.id, "set": path.name, "status": case.status, "quoted_s": q})
    seen = {r["case"] for r in rows} | {r["case"] for r in apart}
    apart += [{"case": i, "set": None, "status": "not in the sets (left for --resume)", "quoted_s": q}
              for i, q in quoted.items() if i not in seen]
    q_sum, t_sum = sum(r["quoted_s"] for r in rows), sum(r["took_s"] for r in rows)
    total = TOTAL.search(dry_run.read_text(encoding="utf-8"))
    return {"dry_run": dry_run.name, "rows": rows, "not_run": apart,
            "totals": {"cases": len(rows), "quoted_s": q_sum, "took_s": round(t_sum, 1),
                       "error_pct": round((q_sum - t_sum) / t_sum * 100, 2) if t_sum else None,
                       "span_s": round(max(e for _, e in spans) - min(s for s, _ in spans), 1) if spans else None,
                       "quoted_total_min": float(total["min"]) if total else None}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dry_run", type=Path)
    ap.add_argument("sets", type=Path, nargs="+")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    emit(check(args.dry_run, args.sets), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
