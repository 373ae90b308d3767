"""compare: ratio orientation, bootstrap CIs, joins with missing and failed cases, geomeans, labels."""

from __future__ import annotations

import numpy as np
import pytest
from test_compare_support import H100_ENV, H200_ENV, case, h100_set, h200_set, metric, refs, result_set

from llmbench.analysis.basediff import base_diff, parse_base
from llmbench.analysis.compare import Ratio, compare, geomean, headline_metric_names, orient, ratio
from llmbench.analysis.inputs import resolve_baseline
from llmbench.errors import UserError
from llmbench.metrics import METRICS
from llmbench.results import CaseResult, MetricResult, Source


@pytest.mark.parametrize("name", sorted(METRICS))
def test_every_catalogue_metric_is_oriented_so_above_one_is_better(name: str) -> None:
    better = METRICS[name].better
    base, improved = (
        MetricResult.single(name, 10.0),
        MetricResult.single(name, 20.0 if better == "higher" else 5.0),
    )
    r = ratio(base, improved, better)
    if better == "neither":
        assert r is None
    else:
        assert r is not None and r.value == pytest.approx(2.0) and r.ci is None


def test_orient_arrays_and_neither() -> None:
    assert orient(np.array([2.0]), np.array([1.0]), "higher")[0] == 2.0
    assert orient(np.array([2.0]), np.array([1.0]), "lower")[0] == 0.5
    with pytest.raises(ValueError):
        orient(1.0, 1.0, "neither")


def test_ci_of_known_samples_brackets_the_ratio_of_medians_and_is_reproducible() -> None:
    base = MetricResult.from_samples("decode_tokens_per_s", [100.0, 101.0, 99.0, 100.5, 99.5] * 4)
    this = MetricResult.from_samples("decode_tokens_per_s", [150.0, 151.5, 148.5, 150.75, 149.25] * 4)
    r = ratio(base, this, "higher", "case:m")
    assert r is not None and r.ci is not None
    assert r.value == pytest.approx(1.5)
    assert r.ci[0] <= 1.5 <= r.ci[1]
    assert r.ci[0] > 1.45 and r.ci[1] < 1.55  # ±1% noise: the interval is tight
    again = ratio(base, this, "higher", "case:m")
    assert again is not None and again.ci == r.ci
    # identical constant samples: a degenerate interval at the point value
    flat = MetricResult.from_samples("ttft_ms", [10.0] * 8)
    r2 = ratio(flat, MetricResult.from_samples("ttft_ms", [5.0] * 8), "lower")
    assert r2 is not None and r2.ci == (2.0, 2.0)


def test_no_ci_without_samples_on_either_side() -> None:
    with_samples = MetricResult.from_samples("tflops", [1.0, 2.0, 3.0])
    r = ratio(MetricResult.single("tflops", 2.0), with_samples, "higher")
    assert r is not None and r.ci is None and r.value == 1.0


def test_geomean_point_and_ci() -> None:
    g = geomean([Ratio(2.0), Ratio(8.0)])
    assert g.value == pytest.approx(4.0) and g.ci is None
    draws = np.full(10, 2.0)
    g2 = geomean([Ratio(2.0, (2.0, 2.0), draws), Ratio(2.0, (2.0, 2.0), draws)])
    assert g2.ci == (pytest.approx(2.0), pytest.approx(2.0))


def test_join_lists_one_sided_and_failed_cases_and_never_drops_them() -> None:
    a, b = refs(h100_set(), h200_set())
    cmp = compare([a, b], 0)
    one = {n.case: n.statuses for n in cmp.one_sided}
    assert one == {"kind=h2d": ["ok", None], "precision=tf32": [None, "ok"]}
    bad = {n.case: (n.statuses, n.reasons) for n in cmp.not_ok}
    assert bad["precision=fp32"][0] == ["oom", "ok"]
    assert bad["precision=nf4"] == (
        ["skipped", "failed"],
        ["bitsandbytes is not installed", "RuntimeError: boom"],
    )
    every = {c.id for c in a.rs.cases} | {c.id for c in b.rs.cases}
    shown = {r.case_id for r in cmp.rows} | {n.case_id for n in cmp.one_sided + cmp.not_ok}
    assert shown == every
    tpot = next(r for r in cmp.rows if r.metric == "tpot_ms" and r.case == "precision=bf16")
    assert (
        tpot.ratios[0] is None and tpot.ratios[1] is not None and tpot.ratios[1].value > 1
    )  # faster = better


def test_geomeans_per_scenario_and_overall() -> None:
    cmp = compare(refs(h100_set(), h200_set()), 0)
    keys = {(g.scenario, g.metric) for g in cmp.geomeans}
    assert {("gemm", "speed"), ("generate", "speed"), ("bandwidth", "speed"), ("overall", "speed")} <= keys
    assert ("generate", "peak_memory_gib") in keys and ("generate", "speed") in keys
    bw = next(g for g in cmp.geomeans if g.scenario == "bandwidth" and g.metric == "tb_per_s")
    assert bw.ratios[1] is not None and bw.ratios[1].value == pytest.approx(4.1 / 2.9, rel=0.02)
    assert bw.ratios[1].ci is not None


def test_environment_differences_shown() -> None:
    cmp = compare(refs(h100_set(), h200_set()), 0)
    diffs = dict(cmp.env_diffs)
    assert diffs["gpu.name"] == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    assert diffs["cpu.model"] == ["Intel Xeon Platinum 8480+", "AMD EPYC 9654"]
    assert diffs["packages.transformers"] == ["5.17.0", "5.18.0"]
    assert "gpu.driver" not in diffs and "packages.torch" not in diffs
    assert "llmbench commit" not in diffs  # neither set recorded one


def test_different_llmbench_code_on_the_two_sides_is_shown() -> None:
    """A resumed set can span commits; a comparison across code versions must say so."""
    a, b = h100_set(), h200_set()
    a.llmbench = {"git_commit": "a1b19d021558c6a5"}
    a.cases[0].info["llmbench_commit"] = "2ec14b8e0608ab61"
    b.llmbench = {"git_commit": "4b3c94dc1fd44942"}
    diffs = dict(compare(refs(a, b), 0).env_diffs)
    assert diffs["llmbench commit"] == ["2ec14b8, a1b19d0", "4b3c94d"]
    b.llmbench = {"git_commit": "2ec14b8e0608ab61"}
    a.llmbench = {"git_commit": "2ec14b8e0608ab61"}
    assert "llmbench commit" not in dict(compare(refs(a, b), 0).env_diffs)


def test_published_sets_are_labelled_and_the_mix_is_announced() -> None:
    pub = h200_set(source=Source(kind="published", citation="Vendor table X"))
    cmp = compare(refs(h100_set(), pub), 0)
    assert cmp.sets[1].label.endswith("[published]")
    assert cmp.warning is not None and "published" in cmp.warning
    assert compare(refs(h100_set(), h200_set()), 0).warning is None


def test_baseline_by_slug_or_stem_and_clear_errors() -> None:
    sets = refs(h100_set(), h200_set())
    assert resolve_baseline(sets, "h200-sxm-141gb") == 1
    assert resolve_baseline(sets, sets[0].stem) == 0
    with pytest.raises(UserError, match=r"'a100'.*valid: .*h100-sxm-80gb"):
        resolve_baseline(sets, "a100")
    same = refs(h100_set(), h100_set())
    with pytest.raises(UserError, match="ambiguous"):
        resolve_baseline(same, "h100-sxm-80gb")


def test_within_set_diff_against_a_base_variation() -> None:
    ref = refs(h100_set())[0]
    bd = base_diff(ref, *parse_base("precision=bf16"))
    tflops = next(r for r in bd.rows if r.scenario == "gemm" and r.metric == "tflops")
    assert tflops.diff_pct == pytest.approx((tflops.value / tflops.base_value - 1) * 100)
    assert tflops.improved is True
    ttft = next(r for r in bd.rows if r.scenario == "generate" and r.metric == "ttft_ms")
    assert ttft.diff_pct is not None and ttft.diff_pct < 0 and ttft.improved is True  # lower latency = better
    why = {label: text for _, label, text in bd.unmatched}
    assert why["precision=fp32"].startswith("status oom")
    assert any("no param 'precision'" in t for t in why.values())  # bandwidth cases have no precision
    with pytest.raises(UserError, match="valid: bf16, fp32, fp8, nf4"):
        base_diff(ref, "precision", "int4")
    with pytest.raises(UserError, match=r"valid: .*batch_size"):
        base_diff(ref, "nope", 1)
    with pytest.raises(UserError, match="KEY=VALUE"):
        parse_base("precision")
    assert parse_base("batch_size=8") == ("batch_size", 8)


def test_an_option_added_later_is_its_default_where_a_set_leaves_it_out() -> None:
    """A fused case records no `fuse` (left out at its default, as its id is): --base fuse=true finds it,
    and each unfused case sits against it; --base fuse=false the other way round."""
    def gen(fuse: bool, tps: float) -> CaseResult:
        params = {"model": "llama-3-8b", "pretrained": None, "weights": "random", "precision": "bf16",
                  "batch_size": 1, "input_len": 128, "output_len": 128, "engine": "hf", "mode": "compiled"}
        return case("generate", params | ({} if fuse else {"fuse": False}),
                    {"decode_tokens_per_s": MetricResult.single("decode_tokens_per_s", tps)})

    ref = refs(result_set(H100_ENV, [gen(True, 200.0), gen(False, 180.0)]))[0]
    fused = base_diff(ref, *parse_base("fuse=true"))
    assert [(r.base_value, r.value) for r in fused.rows] == [(200.0, 180.0)] and fused.unmatched == []
    unfused = base_diff(ref, *parse_base("fuse=false"))
    assert [(r.base_value, r.value) for r in unfused.rows] == [(180.0, 200.0)] and unfused.unmatched == []
    with pytest.raises(UserError, match="valid: False, True"):
        base_diff(ref, "fuse", "no")


def test_a_case_without_counterpart_is_listed() -> None:
    rs = result_set(
        H100_ENV,
        [
            case("gemm", {"precision": "fp8"}, {"tflops": MetricResult.single("tflops", 1.0)}),
            case("gemm", {"precision": "bf16", "shape": [1, 2, 3]}),
        ],
    )
    bd = base_diff(refs(rs)[0], "precision", "bf16")
    assert bd.rows == [] and bd.unmatched[0][2].startswith("no case differing only in precision")


def test_speed_geomean_counts_one_measurement_once() -> None:
    """TPOT and decode tok/s are reciprocals of one timing: a decode-only speed-up enters 'speed' once."""
    def gen(decode_tps: float, seed: int) -> CaseResult:
        tpot = 1000.0 / decode_tps
        return case("generate", {"model": "m", "precision": "bf16"}, {
            "ttft_ms": metric("ttft_ms", 20.0, seed=seed),
            "tpot_ms": metric("tpot_ms", tpot, seed=seed),  # same seed: exactly reciprocal samples' medians
            "decode_tokens_per_s": metric("decode_tokens_per_s", decode_tps, seed=seed),
        })

    a = result_set(H100_ENV, [gen(60.0, 1)])
    b = result_set(H200_ENV, [gen(90.0, 2)])
    cmp = compare(refs(a, b), 0)
    speed = next(g for g in cmp.geomeans if (g.scenario, g.metric) == ("generate", "speed"))
    decode = next(g for g in cmp.geomeans if g.metric == "decode_tokens_per_s").ratios[1]
    ttft = next(g for g in cmp.geomeans if g.metric == "ttft_ms").ratios[1]
    assert speed.n == 2  # two families: prefill, decode
    assert decode is not None and ttft is not None and speed.ratios[1] is not None
    assert speed.ratios[1].value == pytest.approx((decode.value * ttft.value) ** 0.5, rel=0.01)
    assert speed.ratios[1].ci is not None


def test_every_declared_family_has_several_members() -> None:
    families: dict[str, list[str]] = {}
    for m in METRICS.values():
        if m.family:
            families.setdefault(m.family, []).append(m.name)
    assert families and all(len(v) >= 2 for v in families.values()), families
    assert METRICS["tpot_ms"].family == METRICS["decode_tokens_per_s"].family
    assert METRICS["ttft_ms"].family == METRICS["prefill_tokens_per_s"].family
    assert METRICS["kl_divergence"].family_name == "kl_divergence"


@pytest.mark.parametrize("batches", [(25, 64), (32, 32)])
def test_max_batch_cases_compare_their_answers_and_rates_not_steps_of_other_batches(
    batches: tuple[int, int]
) -> None:
    """Each side measured a max_batch case at the batch its own search found: the answers are a row of
    their own (ratioed), rates per token compare, and a step's time or memory compares only where both
    sides ran the same batch (a step of 64 samples against one of 25 says nothing)."""
    def qlora(found: int, tok_s: float, seed: int) -> CaseResult:
        c = case("qlora", {"model": "llama-3-70b", "batch_size": 1, "max_batch": True}, {
            "train_tokens_per_s": metric("train_tokens_per_s", tok_s, seed=seed),
            "step_ms": metric("step_ms", found * 512 / tok_s * 1e3, seed=seed),
            "peak_memory_gib": metric("peak_memory_gib", 40.0 + found, samples=False),
        })
        c.info["max_batch"] = {"batch_size": found, "probes": []}
        return c

    a = result_set(H100_ENV, [qlora(batches[0], 917.0, 1)])
    b = result_set(H200_ENV, [qlora(batches[1], 989.0, 2)])
    cmp = compare(refs(a, b), 0)
    rows = {r.metric: r for r in cmp.rows}
    assert next(iter(rows)) == "max_batch_size" and rows["max_batch_size"].values == [batches[0], batches[1]]
    found = rows["max_batch_size"].ratios[1]
    assert found is not None and found.value == pytest.approx(batches[1] / batches[0])
    tok = rows["train_tokens_per_s"].ratios[1]
    assert tok is not None and tok.value == pytest.approx(989.0 / 917.0, rel=0.01)
    same = batches[0] == batches[1]
    for per_step in ("step_ms", "peak_memory_gib"):
        assert (rows[per_step].ratios[1] is not None) is same and (rows[per_step].better == "lower") is same
    speed = next(g for g in cmp.geomeans if (g.scenario, g.metric) == ("qlora", "speed")).ratios[1]
    assert speed is not None and speed.value == pytest.approx(
        tok.value if not same else (tok.value * rows["step_ms"].ratios[1].value) ** 0.5, rel=0.01)
    # a published (headline-only) comparison keeps the answers too
    assert "max_batch_size" in {r.metric for r in compare(refs(a, b), 0, headline_metric_names()).rows}
