"""What llmbench's own published pages show (`nox -s publish`: results/h100-vs-h200.md, report.html,
the README's table, the packaged reference data), computed from a results tree by the one rule
(analysis/runs.py) with the analysis any user can call, so that publishing/publish.py only renders: the
sections (a comparison per suite measured on both GPUs of the pair, each GPU one side whose runs are
chosen per case over the whole tree; a section per suite measured on one GPU; the published reference
sets), a suite's other engines beside the transformers engine, and every run read, used or left out with
why; the README's headline figures; the reference data shipped with the package."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from llmbench.analysis.at_slo import SloAnswer, slo_answer
from llmbench.analysis.basediff import BaseDiff, base_diff
from llmbench.analysis.compare import headline_metric_names, is_headline
from llmbench.analysis.inputs import SetRef, load_checked, name_sets
from llmbench.analysis.labels import gpu_display_name, is_measured
from llmbench.analysis.noisefloor import NoiseFloor, floor_of
from llmbench.analysis.prices import Price, first_list_prices
from llmbench.analysis.runs import HEADLINE_SUITE, GpuRuns, RunLine, case_runs, run_lines, suite_cases, tree_sets
from llmbench.analysis.sections import Section, section
from llmbench.analysis.suitejoin import JoinPlan, plan_joins
from llmbench.caseinfo import CaseInfo
from llmbench.errors import UserError
from llmbench.metrics import metric
from llmbench.references import PUBLISHED
from llmbench.results import CaseResult, ResultSet
from llmbench.serving.analysis import X as PARETO_X

H100_SLUG = "h100-sxm-80gb"
H200_SLUG = "h200-sxm-141gb"
FIRST_SUITE = HEADLINE_SUITE  # the suite made to answer: first, and compared wherever both GPUs ran its cases
BASE_ENGINE = "hf"  # the transformers engine: what another engine's cases are set beside
ENGINE_EXTRA_METRICS = frozenset({"device_memory_used_gib"})  # what an engine preallocates, beside the headline


@dataclass
class Page:
    """A results tree's pages: the GPU pair's compared sections, the sections of one GPU, the published
    reference sections, every run the rule read of the pair's GPUs, and what each GPU of the pair serves
    at each SLO it was searched under (`slo`: None where neither has a capacity case)."""

    compared: list[Section]
    single: list[Section]
    published: list[Section]
    runs: list[RunLine]
    gpus: dict[str, GpuRuns]
    slo: SloAnswer | None = None


def tree_page(results_dir: Path, pair: tuple[str, str] = (H100_SLUG, H200_SLUG),
              prices: dict[str, Price] | None = None) -> Page:
    """The pages of a results tree: per suite either GPU of `pair` measured, its cases (the ids any run
    of that suite holds), each GPU's runs of them chosen over the whole tree: compared between the two
    GPUs' sides (the first GPU the baseline) where both ran the suite (the headline suite: where the other
    GPU ran its cases in any suite), else shown for the GPU that ran it; then the published reference sets;
    and the pair's figures at each SLO, priced at `prices` (default: each GPU's first list price)."""
    sets = tree_sets(results_dir, pair)
    gpus = case_runs(sets)
    suites = suite_cases(gpus.values())
    headline, floor = frozenset(headline_metric_names()), floor_of(rs for _, rs in sets)
    compared, single = [], []
    sweeps: dict[str, list[SetRef]] = {}  # serving sweeps of one GPU share one section
    for suite in sorted(suites, key=lambda s: (s != FIRST_SUITE, s)):
        ids = {cid for held in suites[suite].values() for cid in held}
        sides = [g.side(g.gpu) for slug in pair if slug in gpus and (g := gpus[slug].only(ids)).cases]
        joined = _joined(sides) if len(suites[suite]) > 1 or suite == FIRST_SUITE else None
        if joined is not None:
            title = f"{suite}: {' vs '.join(s.split('-')[0].upper() for s in pair)}"  # 'headline: H100 vs H200'
            compared.append(section(title, joined.groups[0], 0, headline, floor, " ".join(joined.notes[0]),
                                    _engines(gpus, pair, ids, headline)))
            continue
        for slug, held in suites[suite].items():  # each GPU that ran the suite, alone
            mine = gpus[slug].only(held).side(slug)
            if _sweep(mine.rs.cases):
                sweeps.setdefault(slug, []).append(mine)
                continue
            single.append(section(f"{suite}: {gpu_display_name(slug)} only", [mine], metrics=headline,
                                  engines=_engines(gpus, [slug], set(held), headline)))
    for slug, members in sweeps.items():  # one Pareto chart with a line per server configuration
        title = f"{' + '.join(m.rs.suite for m in members)}: {gpu_display_name(slug)} only"
        single.append(section(title, members, metrics=headline))
    return Page(compared, single, published_sections(PUBLISHED),
                run_lines(g for slug, g in gpus.items() if slug in pair), gpus,
                slo_answer(sets, pair, None, first_list_prices() if prices is None else prices))


def _sweep(cases: list[CaseResult]) -> bool:
    """A throughput-latency sweep (serving.analysis.pareto_points): every ok case a point of the Pareto view."""
    ok = [c for c in cases if c.status == "ok"]
    return bool(ok) and all(PARETO_X in c.metrics for c in ok)


def _joined(sides: list[SetRef]) -> JoinPlan | None:
    """How the GPUs' sides of a suite join (suitejoin.plan_joins); None where they share no case ok
    measured with the same settings."""
    try:
        plan = plan_joins(sides) if len(sides) > 1 else None
    except UserError:  # every shared case measured with other settings on each GPU
        return None
    ids = [{c.id for c in s.cases() if c.status == "ok"} for s in plan.groups[0]] if plan else []
    return plan if ids and ids[0] & set().union(*ids[1:]) else None


def _engines(gpus: dict[str, GpuRuns], slugs: Collection[str], ids: set[str],
             metrics: frozenset[str]) -> list[BaseDiff]:
    """Per GPU, a suite's cases run on another engine (vLLM, TensorRT-LLM), each against the transformers
    engine's case of the same params on that GPU (from any of its suites): the engines side by side. None
    where the suite's cases run the transformers engine only, or no case of that GPU is their twin."""
    out = []
    for slug in (s for s in slugs if s in gpus):
        side = gpus[slug].side(slug)
        if not any(c.params.get("engine", BASE_ENGINE) != BASE_ENGINE for c in side.rs.cases if c.id in ids):
            continue
        diff = base_diff(side, "engine", BASE_ENGINE)
        diff.rows = [r for r in diff.rows if r.metric in metrics | ENGINE_EXTRA_METRICS and r.case_id in ids]
        diff.unmatched = [u for u in diff.unmatched if u[0] in ids]
        out += [diff] if diff.rows else []
    return out


def published_sections(folder: Path) -> list[Section]:
    """Published reference sets grouped by suite (one section per suite, every GPU side by side): of each
    GPU folder, the newest set of each suite."""
    groups: dict[str, list[SetRef]] = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        found = sorted(((rs, p) for p in sub.glob("*.json") if not is_measured(rs := load_checked(p))),
                       key=lambda x: (x[0].created_at, x[1].name))
        newest = {rs.suite: SetRef(name="", rs=rs, stem=path.stem) for rs, path in found}  # the newest wins
        for suite, ref in newest.items():
            groups.setdefault(suite, []).append(ref)
    return [section(f"Published reference: {suite}", name_sets(refs)) for suite, refs in sorted(groups.items())]


def headline_runs(results: Path, ids: Collection[str]) -> dict[str, GpuRuns]:
    """The README's table: per GPU slug of the tree that measured any of the cases `ids` ok, its chosen
    runs of them (publishing/readme.py picks the cases and renders it)."""
    gpus = {slug: g.only(ids) for slug, g in case_runs(tree_sets(results)).items()}
    return {slug: g for slug, g in gpus.items() if g.cases}


def left_out_by_file(g: GpuRuns) -> list[tuple[str, str, int]]:
    """(file, why, cases) of the runs left out, a line per file and reason."""
    counts = Counter((lo.run.file, lo.why) for _, lo in g.left_out)
    return [(f, why, n) for (f, why), n in sorted(counts.items())]


def speedup(base: float, other: float, name: str) -> float:
    """How many times faster `other` is than `base` (> 1: faster), by the metric's better direction."""
    return other / base if metric(name).better == "higher" else base / other


def export_sets(results_dir: Path) -> dict[str, ResultSet]:
    """The reference data shipped with the package (llmbench/references/data/measured/, `nox -s publish`):
    the chosen runs of every GPU of a results tree, by their path in it, each set holding only the cases
    it gave a chosen run of (`_light`): a results tree of its own, about a megabyte, which the rule
    reads back to the same figures."""
    sets = tree_sets(results_dir)
    used = {(r.file, r.case.id) for g in case_runs(sets).values() for c in g.cases.values() for r in c.used}
    return {name: rs.model_copy(update={"cases": [_light(c) for c in rs.cases if (name, c.id) in used]})
            for name, rs in sets if any(f == name for f, _ in used)}


def export_floor(results_dir: Path) -> NoiseFloor:
    """The noise floor shipped beside the export: read from every run of the tree (the export holds the
    chosen ones), so that the runs llmbench ships give the figures the tree gives."""
    return floor_of(rs for _, rs in tree_sets(results_dir))


EXPORT_STATS = ("n", "cv", "ci95", "n_bf16")  # what analysis reads of a run's stats besides its value
EXPORT_TEXT_CHARS = 40  # a longer info text is a note for people


def _light(c: CaseResult) -> CaseResult:
    """The case as reference data: its headline metrics (`is_headline`: what pages, quotes and `versus`
    read) without samples and with the stats of EXPORT_STATS; of its info, the keys llmbench reads back
    (CaseInfo's), numbers (profile figures: cpu_ms_per_step, decode_step_bound_ms, ...) and short texts."""
    metrics = {k: m.model_copy(update={"samples": None, "stats": m.stats and m.stats.model_copy(
        update={f: None for f in type(m.stats).model_fields if f not in EXPORT_STATS})})
        for k, m in c.metrics.items() if is_headline(c.scenario, k)}
    info = {k: v for k, v in c.info.items() if k in CaseInfo.model_fields or isinstance(v, int | float)
            or (isinstance(v, str) and len(v) <= EXPORT_TEXT_CHARS)}
    return c.model_copy(update={"metrics": metrics, "info": info})
