"""The one rule: which runs of a case on a GPU stand for it, and how they pool (docs/design.md,
"The one rule"; every page, `compare`, the README table and `versus` ask it)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llmbench.analysis.codepath import compared_path
from llmbench.analysis.inputs import PUBLISHED_DIR, SPREAD_DIR, SetRef, load_checked, name_sets, pool_key, read_inputs
from llmbench.analysis.labels import is_measured
from llmbench.analysis.noisefloor import NoiseFloor, floor_of, run_key
from llmbench.analysis.pooled import PooledMetric, pool_metric
from llmbench.analysis.recorded import recorded
from llmbench.analysis.suitejoin import measurement_settings
from llmbench.caseinfo import CaseInfo
from llmbench.results import CaseResult, MetricResult, ResultSet

NOT_GPU_DIRS = (SPREAD_DIR, PUBLISHED_DIR)  # folders of a results tree that are no GPU's own runs
CPU_PREFIX = "cpu-"  # results/cpu-<arch>/: runs on a machine without a GPU (`nox -s scenario`), no GPU's evidence
HEADLINE_SUITE = "headline"  # the suite made to answer: a comparison of GPUs covers its cases unless widened
MEASURED_DATA = Path(__file__).resolve().parents[1] / "references/data/measured"  # the packaged export


@dataclass(frozen=True)
class Identity:
    """What a run measured besides its case: never pooled across."""

    gpus: int = 1  # GPUs the case held
    topology: str = ""  # how they were joined ('' for one GPU or not recorded)
    launcher: str = "local"
    alone: bool = True  # False: other cases ran beside it (run --parallel)

    @property
    def label(self) -> str:
        parts = [f"{self.gpus} GPUs" if self.gpus != 1 else "1 GPU"]
        parts += [self.topology] if self.topology else []
        parts += [f"launcher {self.launcher}"] if self.launcher != "local" else []
        parts += [] if self.alone else ["beside other cases"]
        return ", ".join(parts)


def identity_of(rs: ResultSet, case: CaseResult) -> Identity:
    """A run's identity: the GPUs its case used are those its placement asks for, of those it saw (a
    serial run once showed every case all of --gpus), and their topology only where they are several."""
    info = CaseInfo.of(case.info)
    seen = len([g for g in (info.gpus or "").split(",") if g.strip()])
    placed = recorded(case).gpus
    gpus = (min(seen, placed) if seen else placed) if placed else (seen or 1)
    topology = str((rs.env.get("gpu") or {}).get("topology") or "") if gpus > 1 else ""
    return Identity(gpus, topology, info.launcher or "local", not info.ran_beside_cases)


@dataclass(frozen=True)
class Run:
    """One run of a case: the case as one measured set holds it."""

    file: str  # where it was read from (a path, or bundle:member)
    rs: ResultSet
    case: CaseResult

    @property
    def when(self) -> str:
        return self.case.started_at or self.rs.created_at

    @property
    def identity(self) -> Identity:
        return identity_of(self.rs, self.case)

    @property
    def path(self) -> dict[str, Any] | None:
        return compared_path(self.case)

    @property
    def definitions(self) -> dict[str, int]:
        """The metrics measured by a definition other than the first (metrics.MetricDef.version)."""
        return {n: m.version for n, m in self.case.metrics.items() if m.version != 1}

    @property
    def how(self) -> str:
        """The code path, timing settings and metric definitions, as one comparable key."""
        return json.dumps([self.path, measurement_settings(self.case.settings or {}), self.definitions],
                          sort_keys=True, default=str)


@dataclass(frozen=True)
class LeftOut:
    run: Run
    why: str


@dataclass
class CaseRuns:
    """The runs that stand for one case on one GPU, and those left out with why."""

    gpu: str
    case_id: str
    used: list[Run]
    left_out: list[LeftOut] = field(default_factory=list)

    @property
    def case(self) -> CaseResult:
        """The newest chosen run's case: its params, info and code path speak for the runs."""
        return self.used[0].case

    @property
    def path_recorded(self) -> bool:
        return self.used[0].path is not None

    @property
    def identity(self) -> Identity:
        return self.used[0].identity

    @property
    def note(self) -> str:
        """'' for runs of one recorded code path; otherwise what the figure is."""
        return "" if self.path_recorded else "no code path recorded: runs pooled only within one repeat group"

    def metric(self, name: str) -> PooledMetric | None:
        got: list[MetricResult] = [m for r in self.used if (m := r.case.metrics.get(name)) is not None]
        return pool_metric(got, [m.stats.n if m.stats else None for m in got]) if got else None

    def value(self, name: str) -> float | None:
        pooled = self.metric(name)
        return pooled.value if pooled is not None else None


def same_measurement(a: Run, b: Run) -> bool:
    """Whether two runs of a case measured one thing, so that they pool: the same recorded code path,
    timing settings and metric definitions; where neither recorded a path, only the passes of one repeat
    group (nothing says two separate runs took one path)."""
    if a.how != b.how:
        return False
    if a.path is not None or a is b:
        return True
    group = (a.rs.repeat_info or {}).get("group")
    return group is not None and group == (b.rs.repeat_info or {}).get("group")


def _differs(a: Run, b: Run) -> str:
    """Why run `b` is not pooled with the chosen run `a` (same identity assumed)."""
    if b.path is None and a.path is not None:
        return "recorded no code path"
    if a.path is None and b.path is None and a.how == b.how:
        return "recorded no code path: pooled only within one repeat group"
    if a.path is not None and b.path is not None and a.path != b.path:
        keys = sorted(k for k in a.path.keys() | b.path.keys() if a.path.get(k) != b.path.get(k))
        return f"another code path ({', '.join(keys)})"
    if a.definitions != b.definitions:
        names = sorted(n for n in a.definitions.keys() | b.definitions.keys()
                       if a.definitions.get(n, 1) != b.definitions.get(n, 1))
        return "another metric definition (" + ", ".join(
            f"{n} v{b.definitions.get(n, 1)}, not v{a.definitions.get(n, 1)}" for n in names) + ")"
    return "other timing settings"


def choose(gpu: str, case_id: str, runs: list[Run]) -> CaseRuns | None:
    """The rule (module docstring) over every run of one case on one GPU; None where none ran ok."""
    # alone before beside (a case measured beside others stands for it only where no run had the host to
    # itself: comparisons across GPUs read like with like), then the newest
    ok = sorted((r for r in runs if r.case.status == "ok"), key=lambda r: (r.identity.alone, r.when, r.file),
                reverse=True)
    left = [LeftOut(r, f"{r.case.status}: {r.case.reason or ''}".rstrip(": ")) for r in runs if r.case.status != "ok"]
    if not ok:
        return None
    ident = ok[0].identity
    same = [r for r in ok if r.identity == ident]
    left += [LeftOut(r, f"another measurement ({r.identity.label}, not {ident.label})")
             for r in ok if r.identity != ident]
    lead = next((r for r in same if r.path is not None), same[0])
    used = [r for r in same if same_measurement(lead, r)]
    left += [LeftOut(r, _differs(lead, r)) for r in same if not same_measurement(lead, r)]
    return CaseRuns(gpu, case_id, used, left)


@dataclass
class GpuRuns:
    """Every case of one GPU (slug), each with its chosen runs; `never_ok`: the cases no run measured ok,
    with their runs (their status says why)."""

    gpu: str
    cases: dict[str, CaseRuns]
    files: list[str]  # every file read for this GPU
    never_ok: dict[str, list[Run]] = field(default_factory=dict)

    def case(self, case_id: str) -> CaseRuns | None:
        return self.cases.get(case_id)

    @property
    def used_files(self) -> list[str]:
        """The files at least one chosen run came from."""
        used = {r.file for c in self.cases.values() for r in c.used}
        return [f for f in self.files if f in used]

    @property
    def left_out(self) -> list[tuple[str, LeftOut]]:
        """(case id, run left out with why) over every case, the runs of cases never ok among them."""
        out = [(cid, lo) for cid, c in self.cases.items() for lo in c.left_out]
        return out + [(cid, LeftOut(r, f"{r.case.status}: {r.case.reason or ''}".rstrip(": ")))
                      for cid, runs in self.never_ok.items() for r in runs]

    def only(self, ids: Collection[str]) -> GpuRuns:
        """These cases only (a suite's, or those another side shares)."""
        return GpuRuns(self.gpu, {k: v for k, v in self.cases.items() if k in ids}, self.files,
                       {k: v for k, v in self.never_ok.items() if k in ids})

    def _runs(self) -> list[Run]:
        """The chosen runs; where no case ran ok, the runs of the cases never ok."""
        return [r for c in self.cases.values() for r in c.used] or [r for rs in self.never_ok.values() for r in rs]

    def figures(self) -> ResultSet:
        """One set holding each case once as the rule gives it: the newest chosen run's case with each
        metric's value the median of the runs' (samples and stats dropped where runs were pooled), and
        each case never ok as its newest run ran: what charts, projections and single-set tables read."""
        cases = [_pooled_case(c) for c in self.cases.values()]
        cases += [max(runs, key=lambda r: (r.when, r.file)).case for runs in self.never_ok.values()]
        runs = self._runs()
        if not runs:
            return ResultSet(suite="", env={"gpu": {"slug": self.gpu}})
        newest = max(runs, key=lambda r: (r.rs.created_at, r.file)).rs
        suites = " + ".join(dict.fromkeys(r.rs.suite for r in runs))
        return newest.model_copy(update={"suite": suites, "cases": cases, "repeat": None})

    def case_sets(self, case_id: str) -> list[tuple[ResultSet, CaseResult]]:
        """The chosen runs of a case with their sets (those of a case never ok where it has none)."""
        got = self.case(case_id)
        return [(r.rs, r.case) for r in (got.used if got else self.never_ok.get(case_id, []))]

    def only_side(self, ids: set[str], name: str) -> SetRef:
        return self.only(ids).side(name)

    def side(self, name: str = "") -> SetRef:
        """This GPU as one side of a comparison: its cases' chosen runs (SetRef.chosen), the files they
        came from as its runs."""
        sets = {r.file: r.rs for r in self._runs()}
        files = [f for f in self.files if f in sets]
        return SetRef(name=name, rs=self.figures(), stem=self.gpu, runs=[sets[f] for f in files], stems=files,
                      chosen=self)


@dataclass(frozen=True)
class RunLine:
    """One run a page or a comparison read: used for its case, or left out and why."""

    gpu: str
    case_id: str
    file: str
    used: bool
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_lines(gpus: Iterable[GpuRuns]) -> list[RunLine]:
    """Every run of the GPUs' cases: the chosen ones, then those left out with why."""
    out = []
    for g in gpus:
        out += [RunLine(g.gpu, cid, r.file, True) for cid, c in g.cases.items() for r in c.used]
        out += [RunLine(g.gpu, cid, lo.run.file, False, lo.why) for cid, lo in g.left_out]
    return out


def files_used(lines: Iterable[RunLine]) -> list[tuple[str, str, int]]:
    """(GPU, file, cases it gave a chosen run of) for each file a chosen run came from."""
    return [(g, f, n) for (g, f), n in Counter((r.gpu, r.file) for r in lines if r.used).items()]


def _pooled_case(c: CaseRuns) -> CaseResult:
    if len(c.used) == 1:
        return c.case
    metrics = {name: MetricResult(value=p.value, unit=m.unit, flags=m.flags) for name, m in c.case.metrics.items()
               if (p := c.metric(name)) is not None}
    return c.case.model_copy(update={"metrics": metrics})


def case_runs(sets: Iterable[tuple[str, ResultSet]]) -> dict[str, GpuRuns]:
    """Per GPU slug, every case's chosen runs over the measured sets given (name, set); published and
    projected sets are not runs and are ignored here."""
    by_gpu: dict[str, dict[str, list[Run]]] = {}
    files: dict[str, list[str]] = {}
    for name, rs in sets:
        if not is_measured(rs):
            continue
        files.setdefault(rs.gpu_slug, []).append(name)
        for c in rs.cases:
            by_gpu.setdefault(rs.gpu_slug, {}).setdefault(c.id, []).append(Run(name, rs, c))
    out: dict[str, GpuRuns] = {}
    for gpu, cases in by_gpu.items():
        chosen = {cid: got for cid, runs in cases.items() if (got := choose(gpu, cid, runs)) is not None}
        out[gpu] = GpuRuns(gpu, chosen, files[gpu], {cid: runs for cid, runs in cases.items() if cid not in chosen})
    return out


def suite_cases(gpus: Iterable[GpuRuns]) -> dict[str, dict[str, list[str]]]:
    """Suite -> GPU -> the ids of the cases a run of that suite on that GPU holds, in first-seen order."""
    out: dict[str, dict[str, list[str]]] = {}
    for g in gpus:
        runs = [r for c in g.cases.values() for r in c.used] + [lo.run for _, lo in g.left_out]
        for r in sorted(runs, key=lambda r: r.file):
            ids = out.setdefault(r.rs.suite, {}).setdefault(g.gpu, [])
            ids += [] if r.case.id in ids else [r.case.id]
    return out


def declared_cases(gpus: dict[str, GpuRuns], first: Iterable[str] = (), at_least: int = 2
                   ) -> tuple[str, set[str]] | None:
    """The cases a comparison covers unless widened: those of the headline suite (the ids any run of it
    holds on any of the GPUs, as the pages take them), else of the first suite of `first` (the suites in
    the order they were given), that `at_least` of the GPUs ran ok; None where no suite's are."""
    held = suite_cases(gpus.values())
    for suite in dict.fromkeys([HEADLINE_SUITE, *first]):
        ids = {cid for got in held.get(suite, {}).values() for cid in got}
        if sum(bool(ids & set(g.cases)) for g in gpus.values()) >= at_least:
            return suite, ids
    return None


ALL_CASES_OPTION = "--all-cases"


@dataclass(frozen=True)
class RuleInputs:
    """What a comparison of GPUs reads: the sets (as `inputs.read_inputs` gives them) that hold a case it
    covers, the cases it covers (None: every case), and the line that says so."""

    loaded: list[tuple[str, str, ResultSet]]
    ids: set[str] | None
    note: str


def rule_inputs(given: list[tuple[str, str, ResultSet]], beside: list[tuple[str, ResultSet]],
                all_cases: bool = False) -> RuleInputs:
    """The sets a comparison of the GPUs of `given` reads: `given` and the measured sets `beside` them
    (their folders: results/<gpu>/, results/spread/<gpu>/) of the same GPUs, so that a case's runs are
    the same whether a folder, a glob or its files were named (the one rule reads every run of a case);
    of them, unless `all_cases`, those that hold a case of the declared set (`declared_cases`)."""
    keys = {run_key(rs) for _, _, rs in given}
    slugs = {rs.gpu_slug for _, _, rs in given if is_measured(rs)}
    extra = [(Path(w).stem, w, rs) for w, rs in beside
             if is_measured(rs) and rs.gpu_slug in slugs and run_key(rs) not in keys]
    every = [*given, *extra]
    gpus = case_runs((w, rs) for _, w, rs in every)
    both = "both GPUs" if len(gpus) == 2 else "two GPUs or more"
    shared = {cid for g in gpus.values() for cid in g.cases if sum(cid in h.cases for h in gpus.values()) > 1}
    # the declared set of the sets given (their folders' other suites do not choose it)
    declared = None if all_cases else declared_cases(case_runs((w, rs) for _, w, rs in given),
                                                     [rs.suite for _, _, rs in given])
    if declared is None:
        why = "" if all_cases else "; no suite's cases were run by two of them"
        return RuleInputs(every, None, f"Cases: every case {both} ran ok ({len(shared)}{why}).")
    suite, ids = declared
    first = {rs.gpu_slug: k for k, (_, _, rs) in reversed(list(enumerate(given)))}
    kept = sorted((t for t in every if not is_measured(t[2]) or any(c.id in ids for c in t[2].cases)),
                  key=lambda t: first.get(t[2].gpu_slug, len(given)))
    note = f"Cases: {suite}'s {len(ids & shared)} {both} ran ok ({ALL_CASES_OPTION}: all {len(shared)} shared)."
    joined = sum(1 for t in extra if t in kept)
    note += f" Their runs also from {joined} set(s) beside those given." if joined else ""
    return RuleInputs(kept, ids, note)


def reference_dir(results_dir: Path | None) -> Path:
    """Where the reference runs are: `results_dir` where it is a results tree (a checkout's results/),
    else the packaged export (`nox -s publish` writes it)."""
    if results_dir is not None and results_dir.is_dir() and any(results_dir.glob("*/*.json")):
        return results_dir
    return MEASURED_DATA


def reference_sets(results_dir: Path | None) -> list[tuple[str, ResultSet]]:
    """The reference runs `versus` reads: a results tree's measured runs of each GPU it holds, and the
    packaged export's of every other GPU, so that a ./results holding only a user's own CPU run, or no
    results tree at all (an installed wheel in an empty folder), hides none of the runs llmbench ships."""
    return reference_runs(results_dir).sets


@dataclass(frozen=True)
class ReferenceRuns:
    """The runs a reference answer reads (`reference_sets`), the GPUs whose runs are the packaged ones, and
    the noise floor: the export's own for those (read from every run, where the export holds the chosen
    ones), else from the runs."""

    sets: list[tuple[str, ResultSet]]
    packaged: set[str]
    floor: NoiseFloor
    where: str  # which runs were read, as a line says it


def reference_runs(results_dir: Path | None, given: Sequence[tuple[str, ResultSet]] = ()) -> ReferenceRuns:
    """`reference_sets` with the floor of those runs and the user's `given` sets; a GPU of `given` has its
    floor read from the runs (the packaged floor does not hold the user's)."""
    own = tree_sets(results_dir) if results_dir is not None and results_dir.is_dir() else []
    have = {rs.gpu_slug for _, rs in own}
    shipped = [(name, rs) for name, rs in tree_sets(MEASURED_DATA) if rs.gpu_slug not in have]
    packaged = {rs.gpu_slug for _, rs in shipped}
    sets = [*own, *shipped, *given]
    floor = floor_of(rs for _, rs in sets)
    kept = packaged - {rs.gpu_slug for _, rs in given}
    floor = NoiseFloor({**floor.without(kept).floors, **packaged_floor().only(kept).floors})
    parts = [f"{results_dir}/ ({', '.join(sorted(have))})"] if have else []
    parts += [f"the runs llmbench ships ({', '.join(sorted(packaged))})"] if packaged else []
    parts += [f"{len(given)} set(s) of yours"] if given else []
    return ReferenceRuns(sets, packaged, floor, "Runs read: " + "; ".join(parts or ["none"]) + ".")


FLOOR_FILE = "noise-floor.json"  # the packaged export's noise floor (NoiseFloor.to_list)


def packaged_floor() -> NoiseFloor:
    path = MEASURED_DATA / FLOOR_FILE
    return NoiseFloor.from_list(json.loads(path.read_text())) if path.is_file() else NoiseFloor()


def tree_files(results_dir: Path, slug: str) -> list[Path]:
    """A GPU's committed runs in a results tree: results/<slug>/*.json and results/spread/<slug>/*.json
    (not benchmarks/, checks/ or bundles/: plain-torch references and one-off checks are not runs of a
    suite)."""
    return [p for d in (results_dir / slug, results_dir / SPREAD_DIR / slug) for p in sorted(d.glob("*.json"))]


def tree_sets(results_dir: Path, slugs: Iterable[str] | None = None) -> list[tuple[str, ResultSet]]:
    """Every measured run of every GPU folder (or of `slugs`) in a results tree, named by their path
    relative to it; a CPU folder's runs (a quickstart on a machine without a GPU) are no GPU's."""
    if slugs is None:
        slugs = sorted(p.name for p in results_dir.iterdir() if p.is_dir() and p.name not in NOT_GPU_DIRS
                       and not p.name.startswith(CPU_PREFIX)) if results_dir.is_dir() else []
    out = []
    for slug in slugs:
        for p in tree_files(results_dir, slug):
            rs = load_checked(p)
            if is_measured(rs):
                out.append((str(p.relative_to(results_dir)), rs))
    return out


def load_sets(paths: list[Path], pool: bool = False, by_gpu: bool | None = None,
              loaded: list[tuple[str, str, ResultSet]] | None = None) -> list[SetRef]:
    """Load files, folders (`folder_files`) and oneshot bundles (`read_inputs`) into sides. Measured sets
    of two GPUs or more (or any, with `by_gpu`) make one side per GPU, its runs chosen per case by the one
    rule (analysis/runs.py). Sets of one GPU are sides as given (a before/after pair, the gate): the runs
    of one repeat group are one side, and with `pool` so are all measured sets of one GPU and suite
    (several machines). A published or projected set is always a side of its own. Each side gets a unique
    short name: its GPU slug, or its file stem where two sides share a slug."""
    loaded = read_inputs(paths) if loaded is None else loaded  # `loaded`: the paths' read_inputs, read already
    measured = [(where, rs) for _, where, rs in loaded if is_measured(rs)]
    if by_gpu or (by_gpu is None and len({rs.gpu_slug for _, rs in measured}) > 1):
        gpus = case_runs(measured)
        first: dict[str, tuple[str, ResultSet]] = {}  # a GPU's side where its first set was given
        for i, (stem, _, rs) in enumerate(loaded):
            first.setdefault(rs.gpu_slug if is_measured(rs) else str(i), (stem, rs))
        sides = [gpus[key].side() if is_measured(rs) else SetRef("", rs, stem) for key, (stem, rs) in first.items()]
        return name_sets(sides)
    groups: dict[tuple[str, ...], list[tuple[str, ResultSet]]] = {}
    for i, (stem, _, rs) in enumerate(loaded):
        groups.setdefault(pool_key(rs, i, pool), []).append((stem, rs))
    sets = [
        SetRef(name="", rs=members[0][1], stem=members[0][0],
               runs=[rs for _, rs in members] if len(members) > 1 else [],
               stems=[stem for stem, _ in members])
        for members in groups.values()
    ]
    return name_sets(sets)
