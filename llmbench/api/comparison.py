"""`compare`, `compare_by_suite` and `report_html`: result sets joined and compared, with what was asked
beside them (MIG slices, costs at the prices given, the regression gate, within-set base diffs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmbench.analysis.at_slo import SloAnswer, slo_answer
from llmbench.analysis.basediff import BaseDiff, base_diff, parse_base
from llmbench.analysis.baseratio import BaseAnswer, base_answer
from llmbench.analysis.compare import Comparison, headline_metric_names
from llmbench.analysis.compare import compare as compare_sets
from llmbench.analysis.cost import DEFAULT_RUN_TOKENS
from llmbench.analysis.gate import UNJUDGED, GateResult, gate, input_problems
from llmbench.analysis.inputs import SetRef, display_names, read_inputs, resolve_baseline
from llmbench.analysis.labels import is_measured
from llmbench.analysis.migslice import SliceRow, slice_rows
from llmbench.analysis.noisefloor import floor_beside, floor_of, folder_runs, folder_sets, folders_for
from llmbench.analysis.prices import Price, first_list_prices, load_prices, parse_price, resolve_prices
from llmbench.analysis.runs import ALL_CASES_OPTION as ALL_CASES_OPTION  # `compare --all-cases`
from llmbench.analysis.runs import HEADLINE_SUITE, GpuRuns, declared_cases, load_sets, rule_inputs, suite_cases
from llmbench.analysis.sections import Section, section
from llmbench.analysis.suitejoin import JoinPlan, plan_joins
from llmbench.analysis.summary import summary
from llmbench.errors import UserError, choices_hint
from llmbench.hardware.specs import slugs
from llmbench.report.cost_view import cost_table
from llmbench.results import ResultSet


@dataclass(frozen=True)
class GroupComparison:
    """One comparison of sides that share cases (a suite, or suites joined on shared cases): the
    comparison, how it was joined, and what was asked beside it (MIG slices, costs, the gate)."""

    comparison: Comparison
    notes: list[str]
    mig_slices: list[SliceRow] = field(default_factory=list)
    gate: GateResult | None = None  # None: no threshold was given

    def to_dict(self, prices: dict[str, Price] | None = None, run_tokens: float = DEFAULT_RUN_TOKENS) -> dict[str, Any]:
        """The JSON of `compare --format json` for this group."""
        from llmbench.analysis.cost_rows import cost_data

        part: dict[str, Any] = {"summary": summary(self.comparison).to_dict(), "comparison": self.comparison.to_dict()}
        if self.mig_slices:
            part["mig_slices"] = [r.to_dict() for r in self.mig_slices]
        if prices is not None:
            part["cost"] = cost_data(self.comparison, prices, run_tokens)
        if self.gate is not None:
            part["gate"] = self.gate.to_dict()
        return part


@dataclass(frozen=True)
class CompareResult:
    """What `compare` found: the result sets as sides, a comparison per group that joins, the sides
    left out and why, and the within-set diffs of `base`."""

    sets: list[SetRef]
    groups: list[GroupComparison]
    left_out: list[str]
    base_diffs: list[BaseDiff] | None = None  # None: no base was asked for
    prices: dict[str, Price] | None = None
    run_tokens: float = DEFAULT_RUN_TOKENS
    base_answers: list[BaseAnswer] | None = None  # per GPU, what each value of `base`'s param buys
    at_slo: SloAnswer | None = None  # tokens/s per GPU and $/Mtok at each SLO; None: no capacity case was read

    @property
    def failed_gates(self) -> list[GateResult]:
        return [g.gate for g in self.groups if g.gate is not None and g.gate.failed]

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `compare --format json`."""
        parts = [g.to_dict(self.prices, self.run_tokens) for g in self.groups]
        data: dict[str, Any] = parts[0] if len(parts) == 1 else ({"comparisons": parts} if parts else {})
        if self.base_diffs is not None:
            data["base_diffs"] = [d.to_dict() for d in self.base_diffs]
        if self.base_answers is not None:
            data["base_answers"] = [a.to_dict() for a in self.base_answers]
        if self.at_slo is not None:
            data["at_slo"] = self.at_slo.to_dict()
        return data


def compare(files: Sequence[Path], *, baseline: str | None = None, base: str | None = None,
            headline: bool = False, pool: bool = False, fail_if_slower: float | None = None,
            prices: Sequence[str] = (), prices_file: Path | None = None, run_tokens: float = DEFAULT_RUN_TOKENS,
            noise_floor: Sequence[Path] = (), mix_suites: bool = False, unjudged: str = "fail",
            all_cases: bool = False) -> CompareResult:
    """Compare result sets (files, folders, oneshot bundles) case by case against `baseline` (a GPU slug
    or file stem; default the first), per suite unless `mix_suites`; `base` ('precision=bf16') compares
    within each set; `fail_if_slower` (0.05) gates the headline metrics (`unjudged`: what a slower cell
    that cannot be judged does, "fail" or "pass"); `prices` ('slug=USD') add costs. Sets of two GPUs or
    more cover the declared cases (the headline suite's: `runs.rule_inputs`) unless `all_cases`."""
    if unjudged not in UNJUDGED:
        raise UserError(f"--unjudged {unjudged!r}: {choices_hint(unjudged, UNJUDGED)}")
    inputs = read_inputs(list(files))
    beside = folder_sets(folders_for(files))
    # the floor reads every run given or beside them (a bundle's members among them), as the pages read a tree
    floor_runs = folder_runs(noise_floor) if noise_floor else [*(rs for _, rs in beside), *(rs for _, _, rs in inputs)]
    gpus = len({rs.gpu_slug for _, _, rs in inputs if is_measured(rs)})
    # a gate judges the runs given; an answer reads every run of its cases beside them too
    rule = rule_inputs(inputs, beside if fail_if_slower is None else [], all_cases) if gpus > 1 else None
    sets = load_sets(list(files), pool=pool, loaded=rule.loaded if rule else inputs)
    if rule is not None and rule.ids is not None:
        sets = [s.only(rule.ids) for s in sets]
    if len(sets) < 2 and base is None:
        raise UserError("compare needs two or more result sets (sides, after pooling repeat groups"
                        + (" and --pool" if pool else "") + "), or --base KEY=VALUE to compare within one")
    if len(sets) < 2 and fail_if_slower is not None:
        raise UserError("--fail-if-slower needs two or more result sets (a baseline and a candidate)")
    plan = plan_joins(sets, mix_suites) if len(sets) >= 2 else JoinPlan([], [], [])
    joined = [(g, n) for g, n in zip(plan.groups, plan.notes, strict=True) if _joins(g)]
    if base is not None and fail_if_slower is None:
        joined = []  # the question is within each GPU: what the param buys there (`base_answers`)
    if len(sets) >= 2 and not joined and base is None and not _joins(sets):  # nothing to compare: say why
        raise UserError(f"no case joins: the result sets share no case id (suites: "
                        f"{', '.join(sorted({s.rs.suite for s in sets}))}); compare result sets of the same suite, "
                        "or cases with the same scenario and params")
    priced = _priced(sets, prices, prices_file)
    left_out = plan.left_out + [f"Not compared: the {len(g)} result sets of {g[0].rs.suite} share no case."
                                for g in plan.groups if not _joins(g) and len({s.rs.suite for s in g}) == 1]
    names = headline_metric_names()
    problems = input_problems(inputs, slugs()) if fail_if_slower is not None else []
    groups = []
    for group, notes in joined:
        notes = ([rule.note] if rule is not None else []) + notes
        floor = floor_beside(floor_runs, [s.all_runs for s in group])
        cmp = compare_sets(group, resolve_baseline(group, baseline), names if headline else None, floor)
        groups.append(GroupComparison(
            cmp, notes, slice_rows(cmp),
            gate(cmp, fail_if_slower, names, unjudged, problems) if fail_if_slower is not None else None))
    if not joined and baseline is not None:
        resolve_baseline(sets, baseline)
    diffs, answers = None, None
    if base is not None:
        key, value = parse_base(base)
        every = rule_inputs(inputs, beside, all_cases=True).loaded  # every run of each case on its GPU
        by_gpu = load_sets(list(files), by_gpu=True, loaded=every)  # each GPU's sets together
        diffs = [base_diff(s, key, value) for s in by_gpu]
        whole = floor_of([*floor_runs, *(rs for _, _, rs in every)])
        asked = _asked_cases(inputs)
        answers = [base_answer(_declared(s, all_cases, asked), key, value, whole)
                   for s in by_gpu if s.chosen is not None]
    return CompareResult(sets, groups, left_out, diffs, priced, run_tokens, answers,
                         at_slo_of(inputs, sets, priced))


def at_slo_of(inputs: list[tuple[str, str, ResultSet]], sets: list[SetRef],
              priced: dict[str, Price] | None) -> SloAnswer | None:
    """"At the SLO" of the capacity cases among the sets read (None where none is one): a column per GPU
    of the sides, priced at the user's prices, else at the list prices shipped with llmbench."""
    gpus = [s.rs.gpu_slug for s in sets if is_measured(s.rs)]
    return slo_answer([(where, rs) for _, where, rs in inputs], gpus, priced, first_list_prices())


def _asked_cases(inputs: list[tuple[str, str, ResultSet]]) -> set[str] | None:
    """The cases the sets given hold where none of them is a headline set (`compare --base` over a
    suite's files asks about that suite's cases); None: the declared cases decide."""
    if any(rs.suite == HEADLINE_SUITE for _, _, rs in inputs):
        return None
    return {c.id for _, _, rs in inputs for c in rs.cases}


def _declared(side: SetRef, all_cases: bool, asked: set[str] | None = None) -> SetRef:
    """A GPU's side cut, unless `all_cases`, to the cases asked about (those of the sets given, when no
    headline set is among them), else to the declared cases (`runs.declared_cases`: the headline
    suite's where it ran them). Each case keeps every run of it on the GPU (the one rule)."""
    chosen = side.chosen
    if all_cases or not isinstance(chosen, GpuRuns):
        return side
    if asked is not None:
        return side.only(asked & set(chosen.cases))
    got = declared_cases({chosen.gpu: chosen}, at_least=1)
    return side if got is None else side.only(got[1])


def price_sets(sets: list[SetRef], given: Sequence[str], file: Path | None) -> dict[str, Price] | None:
    """The prices of the sets' GPUs, or None where no price was given (no cost table)."""
    if not given and file is None:
        return None
    return resolve_prices(list(given), file, [s.rs.gpu_slug for s in sets])


def _priced(sets: list[SetRef], given: Sequence[str], file: Path | None) -> dict[str, Price] | None:
    """The prices of a comparison's sides: costs are shown beside a comparison, so two sets or more."""
    priced = price_sets(sets, given, file)
    if priced is not None and len(sets) < 2:
        raise UserError("--price/--prices need two or more result sets (costs are shown beside a comparison)")
    return priced


def _joins(sets: list[SetRef]) -> bool:
    ids = [{c.id for c in s.cases()} for s in sets]
    return bool(set.intersection(*ids)) or any(ids[0] & other for other in ids[1:])


@dataclass(frozen=True)
class SuitesCompared:
    """`compare_by_suite`'s answer: a section per suite compared ("Suite NAME", sections.Section), the suites
    measured on one GPU only, the prices given."""

    suites: list[Section]
    single: list[tuple[str, str]]  # (suite, the one side's name)
    prices: dict[str, Price] | None = None


def compare_by_suite(files: Sequence[Path], *, baseline: str | None = None, prices: Sequence[str] = (),
                     prices_file: Path | None = None) -> SuitesCompared:
    """Per suite, each GPU's runs of its cases (chosen by the one rule over every set given), each suite
    measured on two or more GPUs compared on its headline metrics against `baseline` where the suite has
    it (else its first GPU): what a fleet collected. A price for a GPU none measured is a UserError
    (leave it out first)."""
    sets = load_sets(list(files), by_gpu=True)
    priced = price_sets(sets, prices, prices_file)
    by_suite = {suite: [s.only(set(held[s.rs.gpu_slug])) for s in sets if s.rs.gpu_slug in held]  # a side per GPU
                for suite, held in suite_cases(s.chosen for s in sets if isinstance(s.chosen, GpuRuns)).items()}
    done, single = [], []
    for suite, group in by_suite.items():
        if len(group) < 2:
            single.append((suite, group[0].name))
            continue
        done.append(section(f"Suite {suite}", group, _lenient_baseline(group, baseline), headline_metric_names()))
    return SuitesCompared(done, single, priced)


def _lenient_baseline(group: list[SetRef], name: str | None) -> int:
    """The named baseline where this suite has it, else the first set."""
    if name is not None and any(name in (s.name, s.stem, s.rs.gpu_slug) for s in group):
        return resolve_baseline(group, name)
    return 0


def check_prices(price: Sequence[str], prices_file: Path | None) -> None:
    """Price options checked before anything is rented: the syntax, the file, and that each --price
    names a GPU of the spec table (the slugs result sets will carry)."""
    if prices_file is not None:
        load_prices(prices_file)
    known = slugs()
    for text in price:
        slug, _ = parse_price(text)
        if slug not in known:
            raise UserError(f"--price {text!r}: {slug!r} is not a GPU slug; {choices_hint(slug, known)}")


def measured_prices(price: Sequence[str], files: Sequence[Path]) -> tuple[list[str], list[str]]:
    """The --price options of GPUs the result sets in `files` were measured on, and those of none."""
    measured = {s.rs.gpu_slug for s in load_sets(list(files))}
    kept = [p for p in price if parse_price(p)[0] in measured]
    return kept, sorted(set(price) - set(kept))


def report_html(files: Sequence[Path], *, baseline: str | None = None, title: str = "llmbench report",
                pool: bool = False, all_metrics: bool = False, prices: Sequence[str] = (),
                prices_file: Path | None = None, run_tokens: float = DEFAULT_RUN_TOKENS) -> str:
    """One self-contained page for a result set or a comparison of several (costs where prices are given).
    Needs matplotlib (llmbench[report]): without it, a UserError naming the install."""
    sets = load_sets(list(files), pool=pool)
    priced = _priced(sets, prices, prices_file)
    from llmbench.report.html import REPORT_EXTRA, charts_missing, render_html

    missing = charts_missing()  # plots need matplotlib, an optional extra: the other commands work without it
    if missing:
        raise UserError(f"llmbench report needs {missing}, which is not installed: {REPORT_EXTRA}")
    sec = section(
        ", ".join(dict.fromkeys(s.rs.suite for s in sets)) + ": " + " vs ".join(s.label for s in display_names(sets)),
        sets,
        resolve_baseline(sets, baseline),
        None if all_metrics else frozenset(headline_metric_names()),
    )
    costs = {sec.title: [cost_table(sec.cmp, priced, run_tokens)]} if priced is not None and sec.cmp else {}
    return render_html([sec], title, more=costs)
