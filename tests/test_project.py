"""Projection: the roofline arithmetic, the labels, and validation against a measured set."""

from __future__ import annotations

import pytest
from test_compare_support import (
    H100_ENV,
    bandwidth_case,
    case,
    gemm_case,
    generate_case,
    h100_set,
    h200_set,
    result_set,
)

from llmbench.analysis.project import PROJECTED_FLAG, project, validate
from llmbench.errors import UserError
from llmbench.hardware.specs import lookup
from llmbench.results import MetricResult, Source

H100, H200, A100 = lookup("h100-sxm-80gb"), lookup("a100-sxm-80gb"), lookup("a100-sxm-80gb")
BW = 3.35 / 4.8  # H100 SXM -> H200 time scale of memory-bound parts


def _one(c, to: str = "h200-sxm-141gb"):  # type: ignore[no-untyped-def]
    return project(result_set(H100_ENV, [c]), to).cases[0]


def test_bandwidth_scales_with_the_bandwidth_ratio() -> None:
    p = _one(bandwidth_case("d2d", 3.0, seed=1))
    src = bandwidth_case("d2d", 3.0, seed=1).metrics["tb_per_s"].value
    assert p.metrics["tb_per_s"].value == pytest.approx(src * 4.8 / 3.35)
    assert p.metrics["tb_per_s"].flags == [PROJECTED_FLAG] and p.metrics["tb_per_s"].samples is None


def test_host_transfers_are_not_projected() -> None:
    p = _one(bandwidth_case("h2d", 50.0))
    assert p.status == "skipped" and "PCIe" in (p.reason or "")


def test_gemm_scales_with_the_precision_peak() -> None:
    c = gemm_case("bf16", 700.0, samples=False)
    p = _one(c, "a100-sxm-80gb")
    assert p.metrics["tflops"].value == pytest.approx(700.0 * 312 / 989.5)
    assert p.metrics["time_ms"].value == pytest.approx(c.metrics["time_ms"].value * 989.5 / 312)
    fp8 = _one(gemm_case("fp8", 1300.0), "a100-sxm-80gb")
    assert fp8.status == "skipped" and "no fp8 math" in (fp8.reason or "")


def test_generate_decode_is_memory_bound_and_prefill_compute_bound() -> None:
    c = generate_case("bf16", 1, 60.0, 20.0, samples=False)
    p = _one(c)
    m = c.metrics
    assert p.metrics["ttft_ms"].value == pytest.approx(m["ttft_ms"].value)  # same bf16 peak on H200
    assert p.metrics["tpot_ms"].value == pytest.approx(m["tpot_ms"].value * BW)
    assert p.metrics["decode_tokens_per_s"].value == pytest.approx(60.0 / BW)
    e2e = m["ttft_ms"].value + (m["e2e_ms"].value - m["ttft_ms"].value) * BW
    assert p.metrics["e2e_ms"].value == pytest.approx(e2e)
    assert p.metrics["output_tokens_per_s"].value == pytest.approx(
        m["output_tokens_per_s"].value * m["e2e_ms"].value / e2e
    )
    assert p.metrics["peak_memory_gib"].value == 16.5  # a property of the model, carried over


def test_roofline_efficiency_limits_the_scaled_share() -> None:
    c = generate_case("bf16", 1, 60.0, 20.0, samples=False, efficiency=0.4)
    p = _one(c)
    factor = 0.4 * BW + 0.6
    assert p.metrics["tpot_ms"].value == pytest.approx(c.metrics["tpot_ms"].value * factor)
    assert p.metrics["roofline_efficiency"].value == pytest.approx(0.4 * BW / factor)
    assert p.info["projection"]["bound_share"] == 0.4


def test_unscalable_metrics_are_dropped_and_listed() -> None:
    c = case(
        "gemm",
        {"precision": "bf16"},
        {
            "tflops": MetricResult.single("tflops", 500.0),
            "avg_power_w": MetricResult.single("avg_power_w", 650.0),
        },
    )
    p = _one(c)
    assert "avg_power_w" not in p.metrics and p.info["projection"]["not_projected"] == ["avg_power_w"]


def test_projected_set_is_labelled_and_keeps_case_ids() -> None:
    src = h100_set()
    p = project(src, "h200-sxm-141gb")
    assert p.source.kind == "projected" and "not a measurement" in (p.source.note or "")
    assert (
        p.env["gpu"]["slug"] == "h200-sxm-141gb" and p.env["projected_from"]["gpu"]["slug"] == "h100-sxm-80gb"
    )
    assert [c.id for c in p.cases] == [c.id for c in src.cases]
    oom = next(c for c in p.cases if c.params.get("precision") == "fp32")
    assert oom.status == "skipped" and "oom on h100-sxm-80gb" in (oom.reason or "")


def test_bad_inputs() -> None:
    with pytest.raises(UserError, match="valid: "):
        project(h100_set(), "h300")
    with pytest.raises(UserError, match="only measured"):
        project(h100_set(source=Source(kind="published", citation="x")), "h200-sxm-141gb")


def test_validate_reports_error_per_scenario_and_metric() -> None:
    p = project(h100_set(), "h200-sxm-141gb")
    v = validate(p, h200_set())
    rows = {(r.scenario, r.metric): r for r in v.rows}
    bw = rows[("bandwidth", "tb_per_s")]
    proj = next(c for c in p.cases if c.params.get("kind") == "d2d").metrics["tb_per_s"].value
    meas = next(c for c in h200_set().cases if c.params.get("kind") == "d2d").metrics["tb_per_s"].value
    assert bw.n == 1 and bw.mean_pct == pytest.approx((proj / meas - 1) * 100)
    assert ("generate", "peak_memory_gib") not in rows  # carried-over figures are not validated
    assert set(v.unmatched) >= {c.id for c in h200_set().cases if c.params.get("precision") == "tf32"}
    with pytest.raises(UserError):
        validate(h200_set(), h100_set())


def test_skinny_gemms_project_as_memory_bound_and_square_ones_as_compute_bound() -> None:
    from llmbench.hardware.specs import lookup
    from llmbench.scenarios.gemm import Gemm, GemmParams

    h100 = lookup("h100-sxm-80gb")
    assert h100 is not None

    def bound(shape: list[int], precision: str = "bf16") -> str | None:
        return Gemm.reading.bound(GemmParams.model_validate({"precision": precision, "shape": shape}), "tflops", h100)

    assert bound([16, 14336, 4096]) == "memory"  # intensity ~16 FLOP/B, ridge ~295
    assert bound([8192, 8192, 8192]) == "compute"
    assert bound([16, 14336, 4096], "fp8") == "memory"
    assert bound([1024, 1024, 1024], "fp8") == "compute"  # under the ridge, but fits in L2


def test_the_decode_efficiency_does_not_shrink_a_prefills_compute_scaling() -> None:
    """roofline_efficiency is the decode step's share of the memory roofline: TTFT (compute-bound)
    scales by the full peak ratio on an A100, decode only in the bound share."""
    c = generate_case("bf16", 1, 60.0, 20.0, samples=False, efficiency=0.5)
    p = _one(c, "a100-sxm-80gb")
    assert p.metrics["ttft_ms"].value == pytest.approx(20.0 * 989.5 / 312)
    bw = 3.35 / 2.039
    assert p.metrics["tpot_ms"].value == pytest.approx(c.metrics["tpot_ms"].value * (0.5 * bw + 0.5))
    assert p.info["projection"]["bound_share_of"] == "memory"


def test_a_case_that_does_not_fit_the_target_is_not_projected() -> None:
    c = generate_case("bf16", 1, 60.0, 20.0, samples=False)
    c.metrics["peak_reserved_gib"] = MetricResult.single("peak_reserved_gib", 41.7)
    assert _one(c, "a100-sxm-80gb").status == "ok"
    small = _one(c, "a100-sxm-40gb")
    assert small.status == "skipped" and "41.7 GiB" in (small.reason or "") and "a100-sxm-40gb" in (small.reason or "")


def test_validate_against_a_published_figure() -> None:
    p = project(h100_set(), "a100-sxm-80gb")
    pub = h200_set(source=Source(kind="published", citation="a table"))
    assert validate(p, pub).rows
    with pytest.raises(UserError, match="measured or published"):
        validate(p, p)
