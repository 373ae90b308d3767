"""Figures from several runs of a case: the median of the runs' medians, the between-run spread, and a
ratio interval that includes it (docs/design.md, "Several runs of a case"; coverage: tests/test_runs.py)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from llmbench.analysis.noisefloor import Floor, floor_of_values
from llmbench.measure.stats import BOOTSTRAP_RESAMPLES
from llmbench.metrics import Better
from llmbench.results import MetricResult

RUNS_CI_METHOD = (
    "t-interval on the log ratio of the sides' machine means: machines are the independent units; each "
    "side's variance is its GPU's between-machine spread over its machines plus the between-run spread "
    "over its runs (pooled over the case family, Satterthwaite degrees of freedom), widened to hold the point"
)
CONFIDENCE = 0.95


@dataclass
class PooledMetric:
    """One metric of one case on one side, over the runs that measured it `ok`."""

    values: list[float]  # each run's figure (the median of its samples)
    ns: list[int | None]  # each run's sample count; None: a single reading

    @property
    def runs(self) -> int:
        return len(self.values)

    @property
    def value(self) -> float:
        """The median of the runs' medians."""
        return float(np.median(self.values))

    @property
    def n(self) -> int | None:
        """Samples behind the figure, all runs together; None where a run holds a single reading."""
        return None if any(n is None for n in self.ns) else int(sum(n for n in self.ns if n is not None))

    @property
    def between_run_cv(self) -> float | None:
        """Standard deviation of the runs' medians over their mean; None with fewer than 2 runs, or where
        a run's figure is NaN or infinite (no spread is measured from it)."""
        x = np.asarray(self.values, dtype=np.float64)
        if self.runs < 2 or not np.isfinite(x).all():
            return None
        return float(x.std(ddof=1) / x.mean()) if x.mean() else None


def pool_metric(got: list[MetricResult], counts: list[int | None]) -> PooledMetric:
    """The runs' figures of one metric (`counts`: each one's sample count)."""
    return PooledMetric([m.value for m in got], counts)


@dataclass
class LogRatioInterval:
    """A ratio's interval on the log scale: centre, standard error and degrees of freedom, and how much
    its error moves with that of the other cases measured in the same runs (`corr`, 1: in full)."""

    centre: float
    se: float
    df: float
    corr: float = 1.0

    def bounds(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        import scipy.stats  # where used: it is slow to import (measure/stats.py)

        if self.se == 0.0:
            return float(np.exp(self.centre)), float(np.exp(self.centre))
        half = scipy.stats.t.ppf(0.5 + confidence / 2.0, self.df) * self.se
        return float(np.exp(self.centre - half)), float(np.exp(self.centre + half))

    def draws(self, own_seed: int, size: int = BOOTSTRAP_RESAMPLES) -> np.ndarray:
        """Replicates of the ratio from its t distribution. Each draw's normal score is a part shared by every
        ratio (one fixed stream: the state of the runs and machines all cases of a comparison were measured
        on) and a part of the case's own (`own_seed`), weighted so that two ratios' draws correlate `corr`:
        a geometric mean over cases then counts the runs' shared state, neither as independent nor, unless
        measured so, in full."""
        import scipy.stats

        shared = np.random.default_rng(SHARED_SEED).standard_normal(size)
        own = np.random.default_rng(own_seed).standard_normal(size)
        z = np.sqrt(self.corr) * shared + np.sqrt(1.0 - self.corr) * own
        t = np.asarray(scipy.stats.t.ppf(scipy.stats.norm.cdf(z), self.df)) if self.se else np.zeros(size)
        with np.errstate(over="ignore"):  # a t draw of 1-2 degrees of freedom may overflow: an unbounded
            return np.asarray(np.exp(self.centre + self.se * t))  # ratio (inf), which percentiles keep


SHARED_SEED = 20261202


@dataclass(frozen=True)
class SideRuns:
    """One side's runs of one metric of one case: each run's figure and the machine that measured it,
    and the spread of the side's GPU for the case's family (None: not measured)."""

    values: list[float]
    machines: list[str]
    floor: Floor | None = None
    name: str = ""  # the side as a note names it

    def machine_means(self) -> list[tuple[float, int]]:
        """(mean log figure, runs) per machine."""
        by: dict[str, list[float]] = {}
        for v, m in zip(self.values, self.machines, strict=True):
            by.setdefault(m, []).append(float(np.log(v)))
        return [(float(np.mean(x)), len(x)) for x in by.values()]

    def centre(self) -> float:
        """The side's log figure: the mean over machines of each machine's mean (each machine counts once)."""
        return float(np.mean([m for m, _ in self.machine_means()]))


@dataclass(frozen=True)
class LevelAnswer:
    """A ratio's log interval from runs on machines, or why there is none (`interval` None)."""

    interval: LogRatioInterval | None
    why: str = ""  # no interval: why; else what was borrowed ("" where each side measured its own spread)


def level_interval(base: SideRuns, this: SideRuns, better: Better) -> LevelAnswer:
    """The t-interval of the oriented log ratio of two sides' machine means. A side of M machines with R
    runs each has the variance (machine_var + run_var * (mean(1/R) - machine_inv_runs)) / M: a machine
    mean's variance as the floor measured it at its own runs a machine, plus the run part's excess where
    the side ran fewer runs a machine (never less: the machines' own part is not split from the runs'
    by subtraction, whose zero-clamped estimate would be too sure). The spreads are its GPU's (`Floor`,
    pooled over the case family); machines shared by both sides of one GPU cancel (their level is in
    both), leaving run_var * mean(1/R) / M. Degrees of freedom: Satterthwaite over the spreads' own."""
    if better == "neither" or min(base.values + this.values, default=0.0) <= 0:
        return LevelAnswer(None, "no positive figure")
    sign = 1.0 if better == "higher" else -1.0
    centre = sign * (this.centre() - base.centre())
    shared = base.floor == this.floor and set(base.machines) == set(this.machines)
    # each estimated spread once, with the weight the ratio's variance gives it: a side that borrows the
    # other's spread adds weight to the same estimate (its degrees of freedom counted once)
    weights: dict[tuple[Floor, str], list[float]] = {}  # (floor, level) -> [weight, variance, df]
    borrowed: list[str] = []
    for side in (base, this):
        means, f = side.machine_means(), side.floor
        m = len(means)
        if f is None:
            return LevelAnswer(None, f"no spread measured for {side.name or 'a side'}'s GPU in this case family")
        if not shared:
            if f.machine_var is None:
                return LevelAnswer(None, f"{side.name or 'a side'}: no spread between machines measured for this "
                                         "case family (runs of one machine cannot say how far another lands)")
            weights.setdefault((f, "machine"), [0.0, f.machine_var, float(f.machine_df)])[0] += 1.0 / m
            if m < 2:
                borrowed.append(f"{side.name or 'one side'} ran on one machine: its between-machine spread is "
                                f"{f.machine_from or 'the case family'}'s, {f.machine_cases} cells of 2+ machines")
            elif f.machine_from:
                borrowed.append(f"{side.name or 'a side'}: no spread between machines measured for this case "
                                f"family; {f.machine_from}'s")
        if f.run_var is not None:
            inv_r = sum(1.0 / r for _, r in means) / m
            excess = inv_r if shared else max(inv_r - f.machine_inv_runs, 0.0)
            weights.setdefault((f, "run"), [0.0, f.run_var, float(f.df)])[0] += excess / m
        elif shared:
            return LevelAnswer(None, "one machine on both sides and no spread between its runs measured")
    parts = [(w * v, d) for w, v, d in weights.values()]
    se2 = sum(v for v, _ in parts)
    note = "; ".join(dict.fromkeys(borrowed))
    corr = max(f.corr for f, _ in weights)
    if se2 == 0.0:
        return LevelAnswer(LogRatioInterval(centre, 0.0, 1e6, corr), note)
    df = se2**2 / sum(v * v / d for v, d in parts if v > 0)  # Satterthwaite
    return LevelAnswer(LogRatioInterval(centre, float(np.sqrt(se2)), max(float(df), 1.0), corr), note)


def own_floor(*sides: list[float]) -> list[Floor | None]:
    """Each side's spread from its own runs alone, each run counted as a machine of its own (runs with no
    machine recorded are independent units); a side with a single run borrows the other's."""
    floors = [floor_of_values(v) for v in sides]
    return [f if f is not None else next((g for g in floors if g is not None), None) for f in floors]


def runs_seed(stream: str) -> int:
    """A fixed seed per case and metric, so the same runs always give the same replicates."""
    return zlib.crc32(f"runs:{stream}".encode()) * 2 + 1
