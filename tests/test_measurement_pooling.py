"""Never pool different measurements: runs of a case pool only where they took one recorded code path
(else only the passes of one repeat group), and only where each metric was measured by one definition
(metrics.MetricDef.version); a ratio across two definitions is shown, not given."""

from __future__ import annotations

import json

from llmbench.analysis.compare import compare
from llmbench.analysis.noisefloor import cells_of
from llmbench.analysis.runs import case_runs
from llmbench.metrics import METRICS
from llmbench.results import MetricResult, Repeat, ResultSet
from tests.test_compare_support import H100_ENV, H200_ENV, gemm_case, result_set

PATH = {"engine": "torch", "mode": "eager"}


def _run(when: str, tflops: float, definition: int | None = None, path: dict[str, str] | None = None,
         group: str | None = None, env: dict = H100_ENV) -> ResultSet:  # type: ignore[type-arg]
    c = gemm_case("bf16", tflops, samples=False)
    c.code_path = path or {}
    c.started_at = when
    c.metrics = {k: m.model_copy(update={"definition": definition}) if k == "tflops" else m
                 for k, m in c.metrics.items()}
    rs = result_set(env, [c], created_at=when)
    if group:
        rs.repeat = Repeat(group=group, index=int(when[15]) + 1, of=3)
    return rs


def test_a_new_value_records_its_definition_and_an_older_one_reads_as_the_first() -> None:
    m = MetricResult.single("tflops", 700.0)
    assert m.definition == METRICS["tflops"].version == 1 and json.loads(m.model_dump_json())["definition"] == 1
    old = MetricResult.model_validate({"value": 700.0, "unit": "TFLOP/s"})
    assert old.definition is None and old.version == 1 and "definition" not in old.model_dump_json(exclude_none=True)


def test_the_rule_never_pools_two_definitions_of_a_metric() -> None:
    runs = [("a.json", _run("2026-11-22T10:00:00Z", 700.0, None, PATH)),
            ("b.json", _run("2026-11-23T10:00:00Z", 710.0, 1, PATH)),
            ("c.json", _run("2026-11-24T10:00:00Z", 900.0, 2, PATH))]
    got = next(iter(case_runs(runs)["h100-sxm-80gb"].cases.values()))
    assert [r.file for r in got.used] == ["c.json"]
    assert {lo.run.file: lo.why for lo in got.left_out} == {
        "a.json": "another metric definition (tflops v1, not v2)",
        "b.json": "another metric definition (tflops v1, not v2)"}
    # read as version 1, an older set pools with a new run of the first definition
    older = next(iter(case_runs(runs[:2])["h100-sxm-80gb"].cases.values()))
    assert [r.file for r in older.used] == ["b.json", "a.json"]


def test_the_noise_floor_keeps_two_definitions_in_cells_of_their_own() -> None:
    cells = cells_of([_run("2026-11-22T10:00:00Z", 700.0, 1, PATH), _run("2026-11-23T10:00:00Z", 900.0, 2, PATH)])
    tflops = [k for k in cells if k[3] == "tflops"]
    assert len(tflops) == 2 and all(sum(len(v) for v in cells[k].values()) == 1 for k in tflops)


def test_a_ratio_across_two_definitions_is_shown_not_given() -> None:
    sides = case_runs([("h100.json", _run("2026-11-22T10:00:00Z", 700.0, 1, PATH)),
                       ("h200.json", _run("2026-11-23T10:00:00Z", 900.0, 2, PATH, env=H200_ENV))])
    cmp = compare([sides["h100-sxm-80gb"].side("h100"), sides["h200-sxm-141gb"].side("h200")])
    row = next(r for r in cmp.rows if r.metric == "tflops")
    assert row.better == "neither" and row.ratios == [None, None] and row.values == [700.0, 900.0]


def test_runs_without_a_code_path_pool_only_within_one_repeat_group() -> None:
    runs = [(f"{g}{k}.json", _run(f"2026-11-2{d}T10:0{k}:00Z", 700.0 + k + 10 * d, 1, None, g))
            for d, g in ((2, "old"), (3, "new")) for k in range(3)]
    runs.append(("lone.json", _run("2026-11-21T10:00:00Z", 650.0)))
    got = next(iter(case_runs(runs)["h100-sxm-80gb"].cases.values()))
    assert sorted(r.file for r in got.used) == ["new0.json", "new1.json", "new2.json"]
    assert {lo.run.file for lo in got.left_out} == {"old0.json", "old1.json", "old2.json", "lone.json"}
    assert all(lo.why == "recorded no code path: pooled only within one repeat group" for lo in got.left_out)
    two = case_runs([runs[-1], ("lone2.json", _run("2026-11-21T11:00:00Z", 660.0))])
    lone = next(iter(two["h100-sxm-80gb"].cases.values()))
    assert len(lone.used) == 1  # two pathless runs outside any repeat group are two measurements
