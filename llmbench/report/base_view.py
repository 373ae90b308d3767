"""`compare --base KEY=VALUE` on one screen: per GPU, what each other value of the param buys over the
base (the geometric mean of the cases' speed ratios with its interval) first, then each case's speed
ratio and, where it measured one, its accuracy beside it (analysis/baseratio.py computes them)."""

from __future__ import annotations

from llmbench.analysis.baseratio import BaseAnswer, is_quality
from llmbench.analysis.caselabels import fmt_param
from llmbench.analysis.inputs import side_names
from llmbench.analysis.summary import interval_basis
from llmbench.report.tables import MISSING, Table, fmt_num, ratio_text

MAX_CASES = 12  # case rows shown per GPU unless every one is asked for (--all), shared among the values


def base_answer_tables(ans: BaseAnswer, every: bool = False) -> list[Table]:
    gpu = side_names([ans.side])[0]
    base = f"{ans.key}={fmt_param(ans.base)}"
    if not ans.comparisons:
        return [Table(f"{gpu}: against {base}", [], [], lead=[
            f"No case has a twin at {base} that differs only in {ans.key} and ran ok on both."])]
    lead = []
    for v in ans.comparisons:
        r, cases = ans.overall(v), len(ans.speed(v))
        lead.append(f"{ans.key}={v} over {base}: " + (
            f"{ratio_text(r)} the speed ({interval_basis(r, [])}), geometric mean over {cases} case(s)"
            if r else "no speed metric measured ok at both") + ".")
    lead.append("Each case against its twin: every run of both on this GPU (the one rule), machines the units "
                "of the interval; > 1: faster than the base.")
    tables = [Table(f"{gpu}: what each {ans.key} buys over {base}", [], [], lead=lead)]
    room = max(MAX_CASES // len(ans.comparisons), 3)
    for v, cmp in ans.comparisons.items():
        quality = {(r.case_id, r.metric): r for r in cmp.rows if is_quality(r.metric)}
        rows = []
        for cid, got in sorted(ans.speed(v).items(), key=lambda kv: -kv[1].value):
            acc = "; ".join(f"{m} {fmt_num(r.values[0])} vs {fmt_num(r.values[1])}"
                            for (c, m), r in quality.items() if c == cid)
            rows.append([ans.labels.get(cid, cid), ratio_text(got), *([acc or MISSING] if quality else [])])
        # the highest and the lowest, fastest first
        shown = rows if every or len(rows) <= room else rows[:room - room // 2] + rows[len(rows) - room // 2:]
        more = len(rows) - len(shown)
        columns = ["case", "speed", *(["accuracy: base vs this"] if quality else [])]
        tables.append(Table(f"{ans.key}={v} over {base}, per case", columns, shown,
                            caption=f"The highest and the lowest; {more} more case(s): --all." if more else "",
                            empty="no case measured a speed metric ok at both"))
    if ans.unmatched:
        tables.append(Table("", [], [], lead=[f"{len(ans.unmatched)} case(s) have no twin at {base} that ran ok "
                                              "(--format json lists them)."]))
    return tables
