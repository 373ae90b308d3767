"""Every committed result set's intervals, recomputed from their samples with the hand-written statistics
llmbench had before scipy.stats (measure/stats.py at --old, read with `git show`) and with today's: how far
each kind moved, and every bound that moved more than --tolerance (relative).

    python benchmarks/stats_scipy_check.py [--old 86ec819] [--tolerance 0.01] [results/ ...]

Kinds: the median's order-statistic interval (what a set stores as `ci`), the percentile bootstrap of the
median (the replicates compare's ratios are made of), the t interval of the mean at df = n - 1 (the
quantile pooled runs and noise floors take), and the bootstrap interval of a ratio of medians (linear_fp8's
speedup; the in-case bf16 samples a stored speedup came from are not kept, so each linear_fp8 case's time
samples against the next case in the set with the same params but its impl). Exit 1 when a bound moved more.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import scipy.stats

from llmbench.measure import stats as new
from llmbench.results import CaseResult, load

ROOT = Path(__file__).resolve().parent.parent


def old_stats(rev: str) -> types.ModuleType:
    """measure/stats.py as it was at `rev`, as a module."""
    src = subprocess.run(["git", "show", f"{rev}:llmbench/measure/stats.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    mod = types.ModuleType("old_stats")
    exec(compile(src, f"{rev}:llmbench/measure/stats.py", "exec"), mod.__dict__)
    return mod


def result_sets(paths: list[Path]) -> Iterator[Path]:
    """The JSON files under `paths` that are result sets (they carry a schema_version)."""
    for p in paths:
        for f in sorted(p.rglob("*.json")) if p.is_dir() else [p]:
            if "schema_version" in json.loads(f.read_text(encoding="utf-8")):
                yield f


def t_interval(x: np.ndarray, q: float) -> tuple[float, float]:
    half = q * x.std(ddof=1) / np.sqrt(x.size)
    return float(x.mean() - half), float(x.mean() + half)


def pct(draws: np.ndarray) -> tuple[float, float]:
    lo, hi = np.quantile(draws, [0.025, 0.975])
    return float(lo), float(hi)


def twin(case: CaseResult, cases: list[CaseResult]) -> CaseResult | None:
    """The next linear_fp8 case after `case` with the same params but the impl."""
    def rest(c: CaseResult) -> dict[str, object]:
        return {k: v for k, v in c.params.items() if k != "impl"}

    later = cases[cases.index(case) + 1:]
    return next((c for c in later if c.scenario == "linear_fp8" and rest(c) == rest(case)), None)


def intervals(old: types.ModuleType, path: Path) -> Iterator[tuple[str, str, tuple[float, ...], tuple[float, ...]]]:
    """(kind, where, old bounds, new bounds) for every interval of the set that samples give."""
    rs = load(path)
    for c in rs.cases:
        for name, m in c.metrics.items():
            x = np.asarray(m.samples or [], dtype=np.float64)
            if x.size < 2 or not np.isfinite(x).all():
                continue
            where = f"{path.relative_to(ROOT)} {c.id} {name} n={x.size}"
            o, n = old.median_ci(x), new.median_ci(x)
            yield "order statistic", where, (o["lo"], o["hi"], o["level"]), (n["lo"], n["hi"], n["level"])
            yield "bootstrap median", where, pct(old.bootstrap_distribution(x)), pct(new.bootstrap_distribution(x))
            yield ("t interval of the mean", where, t_interval(x, old.t_quantile(0.975, x.size - 1)),
                   t_interval(x, float(scipy.stats.t.ppf(0.975, x.size - 1))))
        other = twin(c, rs.cases) if c.scenario == "linear_fp8" else None
        for name in ("fwd_ms", "fwd_bwd_ms"):
            b = other.metrics[name].samples if other and name in other.metrics else None
            f = c.metrics[name].samples if name in c.metrics else None
            if other and b and f:
                ratios = old.bootstrap_distribution(b) / old.bootstrap_distribution(f)  # linear_fp8's old ratio_ci
                yield ("ratio of medians", f"{path.relative_to(ROOT)} {other.id}/{c.id} {name}",
                       pct(ratios), new.median_ratio_ci(b, f)[1:])


def rel(a: float, b: float) -> float:
    return abs(b - a) / abs(a) if a else abs(b - a)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, default=[ROOT / "results"])
    ap.add_argument("--old", default="86ec819", help="a commit with the hand-written statistics")
    ap.add_argument("--tolerance", type=float, default=0.01, help="largest relative move of a bound")
    args = ap.parse_args()
    old = old_stats(args.old)
    worst: dict[str, tuple[float, str]] = {}
    counts: dict[str, int] = {}
    moved: list[str] = []
    sets = list(result_sets([p.resolve() for p in args.paths]))
    for path in sets:
        for kind, where, a, b in intervals(old, path):
            counts[kind] = counts.get(kind, 0) + 1
            r = max(rel(x, y) for x, y in zip(a, b, strict=True))
            if r > worst.get(kind, (-1.0, ""))[0]:
                worst[kind] = (r, where)
            if r > args.tolerance:
                moved.append(f"  {kind}: {where}: {np.round(a, 6).tolist()} -> {np.round(b, 6).tolist()}")
    print(f"{len(sets)} result sets; old statistics from {args.old}; tolerance {args.tolerance:.1%}")
    for kind, n in counts.items():
        r, where = worst[kind]
        print(f"{kind}: {n} intervals, largest relative move of a bound {r:.2e} ({where})")
    print(f"{len(moved)} moved more than {args.tolerance:.1%}" + (":" if moved else ""))
    print("\n".join(moved))
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
