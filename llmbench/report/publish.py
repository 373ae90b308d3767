"""`nox -s publish`: regenerate the published pages under results/ from the committed result sets.

- results/h100-vs-h200.md: first the answer (`firstscreen.pair_answers`: per suite with a measured
  result set on both machines, the newest H100 set against the newest H200 set, H100 the baseline: the
  speed ratio per workload with its interval, headline metrics, runs and noise floor), then each
  comparison's tables, the projection check (the H100 set projected to the H200 by roofline scaling
  against the measured H200 set, per scenario and metric), the suites measured on one machine, and
  last the inputs (the result sets read);
- results/report.html: the same answer on its first screen, then the same comparisons as an HTML page
  (html.py), plus a section per suite measured on one machine only and the published reference
  figures shipped in llmbench/references/data/published/ (each labelled as published);
- results/h100-vs-a100.md: the GPU-pair answer (report/pair_view.py), linked after the measured answer and
  first in report.html;
- engines side by side: a suite run on another engine (vLLM, TensorRT-LLM) gets, in both pages, each
  of its cases against the transformers engine's case of the same params on the same GPU
  (`llmbench compare ... --base engine=hf`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from llmbench.analysis.basediff import base_diff, by_gpu
from llmbench.analysis.compare import Comparison, compare, headline_metric_names
from llmbench.analysis.inputs import SetRef, load_checked, name_sets
from llmbench.analysis.labels import is_measured
from llmbench.analysis.noisefloor import SPREAD_DIR, floor_from_folders
from llmbench.analysis.prices import Price, load_prices
from llmbench.analysis.project import project, validate
from llmbench.references import PUBLISHED
from llmbench.report.cost_view import cost_table
from llmbench.report.firstscreen import answers_markdown, pair_answers
from llmbench.report.gpunames import gpu_name
from llmbench.report.html import Section, render_html
from llmbench.report.pair_view import pair_page
from llmbench.report.tables import Table, to_markdown
from llmbench.report.views import basediff_tables, comparison_tables, validation_tables
from llmbench.results import CaseResult, write_atomic

H100_SLUG = "h100-sxm-80gb"
H200_SLUG = "h200-sxm-141gb"
PUBLISHED_DIR = "published"
MARKDOWN_NAME = "h100-vs-h200.md"
MARKDOWN_TITLE = "H100 SXM vs H200 SXM (measured)"
DETAILS_LINE = ("The tables behind the answer follow, suite by suite, then the projection check and the suites "
                "measured on one machine only; the result sets they come from are listed at the end (Inputs).")
HTML_NAME = "report.html"
PRICES_EXAMPLE = Path("deploy/prices.example.toml")  # relative to the repository root: results/..


def newest_by_suite(folder: Path, measured: bool = True) -> dict[str, tuple[Path, SetRef]]:
    """The newest result set of each suite in `folder` (measured ones, or the others)."""
    out: dict[str, tuple[Path, SetRef]] = {}
    loaded = [(path, load_checked(path)) for path in (sorted(folder.glob("*.json")) if folder.is_dir() else [])]
    for path, rs in loaded:
        if is_measured(rs) != measured:
            continue
        old = out.get(rs.suite)
        if old is None or (rs.created_at, path.name) > (old[1].rs.created_at, old[0].name):
            out[rs.suite] = (path, SetRef(name="", rs=rs, stem=path.stem))
    for _path, ref in out.values():  # the newest set's repeat group (run --repeat) is published pooled
        group = (ref.rs.repeat_info or {}).get("group")
        members = [(p, r) for p, r in loaded if group and (r.repeat_info or {}).get("group") == group]
        if len(members) > 1:
            ref.runs, ref.stems = [r for _, r in members], [p.stem for p, _ in members]
    return out


def _published_sections(folder: Path) -> list[Section]:
    """Published reference sets grouped by suite (one section per suite, every GPU side by side)."""
    groups: dict[str, list[SetRef]] = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        for suite, (_path, ref) in newest_by_suite(sub, measured=False).items():
            groups.setdefault(suite, []).append(ref)
    return [
        Section(f"Published reference: {suite}", name_sets(refs)) for suite, refs in sorted(groups.items())
    ]


def projection_check(
    h100: dict[str, tuple[Path, SetRef]], h200: dict[str, tuple[Path, SetRef]], suites: list[str]
) -> list[Table]:
    """Project each H100 set to the H200 by roofline scaling and measure the error against the real
    H200 set: how far `llmbench project` can be trusted, per scenario and metric."""
    out: list[Table] = []
    for suite in suites:
        measured = replace(h200[suite][1], name=H200_SLUG)
        projected = SetRef(name=H200_SLUG, rs=project(h100[suite][1].rs, H200_SLUG))
        error, unmatched = validation_tables(validate(projected.rs, measured.rs), projected, measured)
        title = f"Projection check, {suite}: H100 projected to H200 vs measured H200"
        out += [replace(error, title=f"{title} — error per workload and metric"),
                replace(unmatched, title=f"{title} — {unmatched.title}")]
    return out


def _ok_count(refs: list[SetRef]) -> str:
    cases = [c for ref in refs for c in ref.rs.cases]
    return f"{sum(c.status == 'ok' for c in cases)} of {len(cases)}"


def _single_machine_sections(
    h100: dict[str, tuple[Path, SetRef]], h200: dict[str, tuple[Path, SetRef]], suites: list[str],
    headline: frozenset[str],
) -> list[tuple[Section, str]]:
    """A section per suite measured on one of the two machines only, with the path of its set."""
    out = []
    sweeps: dict[str, list[tuple[Path, SetRef]]] = {}  # serving sweeps of one GPU share one section
    for suite in suites:
        path, ref = h100[suite] if suite in h100 else h200[suite]
        gpu = H100_SLUG if suite in h100 else H200_SLUG
        if ref.rs.cases and all(c.scenario == "serving" for c in ref.rs.cases):
            sweeps.setdefault(gpu, []).append((path, ref))
            continue
        side = h100 if suite in h100 else h200
        out.append((Section(f"{suite}: {gpu_name(gpu)} only", name_sets([ref]), metrics=headline,
                            tables=engine_tables(ref, side, headline)), f"{gpu}/{path.name}"))
    for gpu, members in sweeps.items():  # one Pareto chart with a line per server configuration
        title = f"{' + '.join(r.rs.suite for _, r in members)}: {gpu_name(gpu)} only"
        refs = name_sets([r for _, r in members])
        out.append((Section(title, refs, metrics=headline), ", ".join(f"{gpu}/{p.name}" for p, _ in members)))
    return out


BASE_ENGINE = "hf"  # the transformers engine: what another engine's cases are set beside
ENGINE_EXTRA_METRICS = frozenset({"device_memory_used_gib"})  # what an engine preallocates, beside the headline


def engine_tables(ref: SetRef, same_gpu: dict[str, tuple[Path, SetRef]], headline: frozenset[str]) -> list[Table]:
    """The cases of a suite run on another engine (vLLM, TensorRT-LLM), each against the transformers
    engine's case of the same params from the same GPU's other sets: the engines side by side. None
    where the suite runs the transformers engine only, or no set of that GPU has its twins."""
    if not any(c.params.get("engine", BASE_ENGINE) != BASE_ENGINE for c in ref.rs.cases):
        return []
    scenarios = {c.scenario for c in ref.rs.cases}
    partners = [r for _p, r in same_gpu.values() if r is not ref and any(
        c.scenario in scenarios and c.params.get("engine") == BASE_ENGINE for c in r.rs.cases)]
    if not partners:
        return []
    diff = base_diff(by_gpu([ref, *partners])[0], "engine", BASE_ENGINE)
    mine = {c.id for c in ref.rs.cases}
    diff.rows = [r for r in diff.rows if r.metric in headline | ENGINE_EXTRA_METRICS]
    diff.unmatched = [u for u in diff.unmatched if u[0] in mine]
    return [replace(t, title=f"engines side by side — {t.title}") for t in basediff_tables(diff)]


def joined_from_others(ref: SetRef, others: dict[str, tuple[Path, SetRef]], slug: str) -> SetRef | None:
    """The other GPU's side of a suite it never ran as a whole (the headline suite): each of the suite's
    cases as the other GPU's newest sets have it, found by case id (a headline case has the params of
    a case of ceilings, inference-llama3-8b, ...). None where no case joins."""
    ids = {c.id for c in ref.rs.cases}
    cases: dict[str, CaseResult] = {}
    used: list[str] = []
    for suite, (_path, other) in sorted(others.items(), key=lambda kv: kv[1][1].rs.created_at, reverse=True):
        hits = [c for c in other.rs.cases if c.id in ids and c.id not in cases]
        cases.update((c.id, c) for c in hits)
        if hits:
            used.append(suite)
    if not cases:
        return None
    first = others[used[0]][1].rs
    rs = first.model_copy(update={"suite": ref.rs.suite, "cases": list(cases.values()),
                                  "description": f"{gpu_name(slug)}'s cases of {ref.rs.suite} from its sets of "
                                                 f"{', '.join(sorted(used))}"})
    return SetRef(name=slug, rs=rs, stem=f"{slug}: {' + '.join(sorted(used))}")


def _cost_hook(prices: dict[str, Price]) -> Callable[[Comparison], list[Table]] | None:
    return (lambda cmp: [cost_table(cmp, prices)]) if prices else None




def pool_spread_runs(sets: dict[str, tuple[Path, SetRef]], folder: Path) -> None:
    """Pool the spread runs of a GPU (`run --repeat` passes kept under results/spread/<slug>/) into the
    published side of the same suite, so its cases carry their between-run spread (the noise floor in
    the answer, and intervals that include it); the other cases keep their single run."""
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        rs = load_checked(path)
        if rs.suite in sets and is_measured(rs):
            ref = sets[rs.suite][1]
            if not ref.runs:
                ref.runs, ref.stems = [ref.rs], [ref.stem]
            ref.runs.append(rs)
            ref.stems.append(f"{SPREAD_DIR}/{path.stem}")


def publish(results_dir: Path) -> list[Path]:
    """Write the Markdown comparison and the HTML report under `results_dir`; return their paths."""
    h100 = newest_by_suite(results_dir / H100_SLUG)
    h200 = newest_by_suite(results_dir / H200_SLUG)
    pool_spread_runs(h100, results_dir / SPREAD_DIR / H100_SLUG)
    pool_spread_runs(h200, results_dir / SPREAD_DIR / H200_SLUG)
    common = sorted(set(h100) & set(h200))
    headline = frozenset(headline_metric_names())
    floor = floor_from_folders(f for slug in (H100_SLUG, H200_SLUG)
                               for f in (results_dir / slug, results_dir / SPREAD_DIR / slug) if f.is_dir())
    sections = [
        Section(f"{suite}: H100 vs H200", name_sets([h100[suite][1], h200[suite][1]]), metrics=headline,
                floor=floor)
        for suite in common
    ]
    one_side = sorted(set(h100) ^ set(h200))
    prices_path = results_dir.parent / PRICES_EXAMPLE
    prices = load_prices(prices_path) if prices_path.is_file() else {}
    joined = []  # a suite run on one GPU whose cases the other GPU measured in its own suites
    joined_inputs = []
    for suite in list(one_side):
        mine, others, slug = (h100, h200, H200_SLUG) if suite in h100 else (h200, h100, H100_SLUG)
        other = joined_from_others(mine[suite][1], others, slug)
        if other is not None and suite == "headline":
            sides = [mine[suite][1], other] if suite in h100 else [other, mine[suite][1]]
            joined.append(Section(f"{suite}: H100 vs H200", name_sets(sides), metrics=headline, floor=floor,
                                  extra_tables=_cost_hook(prices), note=f"{other.rs.description} (joined by case "
                                  f"id); costs at the example prices of {PRICES_EXAMPLE}."))
            one_side.remove(suite)
            files = [f"{H100_SLUG}/{mine[suite][0].name}" if suite in h100 else other.rs.description or "",
                     f"{H200_SLUG}/{mine[suite][0].name}" if suite in h200 else other.rs.description or ""]
            joined_inputs.append([suite, *files])
    sections = joined + sections  # the headline suite, made to answer, first
    inputs = Table(
        "Inputs",
        ["suite", "H100 result set (baseline)", "H200 result set"],
        joined_inputs + [[s, str(h100[s][0].relative_to(results_dir)), str(h200[s][0].relative_to(results_dir))]
                         for s in common],
        caption=("suites measured on one machine only: " + ", ".join(one_side)) if one_side else "",
    )
    tables: list[Table] = []
    comparisons: list[tuple[str, Comparison]] = []
    for sec in sections:
        cmp = compare(sec.sets, 0, sec.metrics, sec.floor)
        comparisons.append((sec.title, cmp))
        more = sec.extra_tables(cmp) if sec.extra_tables else []
        tables += [replace(t, title=f"{sec.title} — {t.title}") for t in comparison_tables(cmp) + more]
    tables += projection_check(h100, h200, common)
    single = _single_machine_sections(h100, h200, one_side, headline)
    tables += [t for sec, _ in single for t in sec.tables]
    if single:
        tables.append(Table(
            "Measured on one machine only (no comparison yet; each is a section of the HTML report)",
            ["suite", "GPU", "result set", "cases ok"],
            [[sec.title.split(":")[0], sec.sets[0].rs.gpu_slug, path, _ok_count(sec.sets)]
             for sec, path in single],
        ))
    pair = pair_page(results_dir)
    write_atomic(results_dir / pair.name, pair.markdown)
    answers = pair_answers(comparisons)
    md = f"# {MARKDOWN_TITLE}\n\n"
    md += answers_markdown(answers) if answers else "No suite has a measured result set on both machines yet.\n"
    md += f"\nThe GPU-pair answer, with published and projected evidence: [{pair.name}]({pair.name}).\n"
    md += f"\n{DETAILS_LINE}\n\n" + to_markdown([*tables, inputs])
    md_path, html_path = results_dir / MARKDOWN_NAME, results_dir / HTML_NAME
    write_atomic(md_path, md)
    write_atomic(
        html_path,
        render_html(
            sections + [sec for sec, _ in single] + _published_sections(PUBLISHED),
            "llmbench: H100 vs H200 and published references",
            answers=answers,
            lead=pair.html,
        ),
    )
    return [md_path, html_path]


def main(argv: list[str] | None = None) -> int:
    import sys

    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else "results")
    for p in publish(folder):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
