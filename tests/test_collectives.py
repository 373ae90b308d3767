"""The collectives scenario: nccl-tests' bandwidth definitions, its aggregation over ranks, the NVLink
ceiling read from NVML, and each collective run over two gloo ranks through torchrun."""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest

from llmbench.hardware import interconnect, nvml
from llmbench.measure.timing import StopRule
from llmbench.placement import Placement
from llmbench.precision import DeviceInfo
from llmbench.scenarios.base import CaseContext
from llmbench.scenarios.collectives import OPS, Collectives, CollectivesParams, bus_factor, message_elements
from llmbench.suite import SUITES_DIR, case_from, load_suite

FAST = {"warmup_iters": 1, "min_iters": 3, "min_seconds": 0.0, "min_sample_s": 0.0}


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_bus_factors_are_nccl_tests_formulas(n: int) -> None:
    """doc/PERFORMANCE.md's summary: all-reduce 2(n-1)/n; reduce-scatter, all-gather, all-to-all (n-1)/n."""
    assert bus_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    for op in ("all_gather", "reduce_scatter", "all_to_all"):
        assert bus_factor(op, n) == pytest.approx((n - 1) / n)
    assert bus_factor("all_reduce", 2) == 1.0 and bus_factor("all_gather", 8) == 0.875


def test_an_unknown_collective_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="all_reduce, all_gather, reduce_scatter, all_to_all"):
        bus_factor("broadcast", 2)


def test_message_elements_split_evenly_over_the_ranks() -> None:
    assert message_elements(2**20, 2, "all_reduce", 3) == 2**19
    assert message_elements(2**20, 2, "all_gather", 3) == 2**19 // 3 * 3
    assert message_elements(10, 4, "all_to_all", 2) == 2


def rank_output(rank: int, times: list[float], link_gb_s: float | None) -> dict[str, Any]:
    link = {"kind": "nvlink", "gb_s_per_direction": link_gb_s} if link_gb_s else None
    return {"rank": rank, "world": 2, "time_s": times, "bytes": 2**30, "interconnect": link,
            "code_path": {"backend": "nccl", "call": "x", "interconnect": "nvlink" if link else "no NVLink"}}


def run_scenario(outputs: list[dict[str, Any]], op: str = "all_reduce") -> CaseContext:
    ctx = CaseContext(DeviceInfo("cpu", "cpu"), StopRule(**FAST), emit_progress=False)
    scenario, params = Collectives(placement=Placement(gpus=2)), CollectivesParams(op=op, size_mib=1024)  # type: ignore[call-arg]
    [launch] = scenario.rank_runs(params, ctx)
    assert launch.nproc == 2 and launch.spec["size_bytes"] == 2**30
    scenario.collect(params, ctx, {launch.name: outputs})
    return ctx


def test_an_iteration_takes_its_slowest_rank_and_bandwidths_follow() -> None:
    ranks = [rank_output(0, [0.010, 0.004, 0.005], 450.0), rank_output(1, [0.008, 0.006, 0.005], 450.0)]
    ctx = run_scenario(ranks, op="all_gather")
    assert ctx.metrics["time_ms"].samples == pytest.approx([10.0, 6.0, 5.0])
    slowest = (0.010, 0.006, 0.005)
    assert ctx.metrics["algbw_gbps"].samples == pytest.approx([2**30 / t / 1e9 for t in slowest], rel=1e-5)
    assert ctx.metrics["busbw_gbps"].samples == pytest.approx([2**30 / t / 1e9 / 2 for t in slowest], rel=1e-5)
    assert ctx.metrics["share_of_interconnect"].value == pytest.approx(2**30 / 0.006 / 1e9 / 2 / 450.0, rel=1e-5)
    assert ctx.code_path["same_on_every_rank"] is True and set(ctx.info["rank_code_path"]) == {0, 1}


def test_no_share_of_the_interconnect_where_a_rank_has_no_known_ceiling() -> None:
    ctx = run_scenario([rank_output(0, [0.01], 450.0), rank_output(1, [0.01], None)])
    assert "share_of_interconnect" not in ctx.metrics and ctx.info["interconnect"] is None
    assert ctx.code_path["same_on_every_rank"] is False


class FakeLinks:
    """The NVML calls interconnect.py makes: `active` of 18 links up on the GPU 'GPU-a'."""

    NVML_FEATURE_ENABLED = 1
    NVML_NVLINK_MAX_LINKS = 18

    class NVMLError(Exception):
        pass

    def __init__(self, active: int) -> None:
        self.active = active

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        if uuid != "GPU-a":
            raise self.NVMLError("not found")
        return uuid

    def nvmlDeviceGetNvLinkState(self, handle: str, link: int) -> int:
        if link >= self.active + 2:
            raise self.NVMLError("no such link")  # what NVML answers past a GPU's links
        return 1 if link < self.active else 0

    def nvmlDeviceGetNvLinkVersion(self, handle: str, link: int) -> int:
        return 7


@pytest.mark.parametrize(("active", "cc", "want"), [(18, (9, 0), 450.0), (12, (8, 0), 300.0), (18, (10, 0), 900.0),
                                                    (0, (9, 0), None), (18, (8, 9), None)])
def test_the_nvlink_ceiling_is_active_links_times_the_generations_figure(
        monkeypatch: pytest.MonkeyPatch, active: int, cc: tuple[int, int], want: float | None) -> None:
    monkeypatch.setattr(nvml, "library", lambda: FakeLinks(active))
    got = interconnect.nvlink_ceiling("a", cc)
    assert (got.gb_s if got else None) == want
    if got:
        assert got.active_links == active and got.source and got.to_dict()["gb_s_per_direction"] == want


def test_no_nvml_no_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvml, "library", lambda: None)
    assert interconnect.nvlink_ceiling("GPU-a", (9, 0)) is None


def test_suites_validate_and_the_tiny_one_has_every_op() -> None:
    full = load_suite(str(SUITES_DIR / "collectives.toml"))
    assert {c.params.size_mib for c in full.cases} == {4**k for k in range(6)}  # 1 MiB .. 1 GiB
    tiny = load_suite(str(SUITES_DIR / "collectives-tiny.toml"))
    assert {c.params.op for c in tiny.cases} == set(OPS)


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_each_collective_over_two_gloo_ranks(op: str) -> None:
    from llmbench.harness.worker import run_case

    out = run_case(case_from("collectives", {"op": op, "size_mib": 0.0625, "placement": {"gpus": 2}}, FAST)
                   .worker_spec("cpu"))
    assert out["status"] == "ok", out
    m, info = out["metrics"], out["info"]
    assert all(math.isfinite(x) and x > 0 for name in ("time_ms", "algbw_gbps", "busbw_gbps")
               for x in m[name]["samples"])
    per_iter = [max(ts) for ts in zip(*info["rank_time_ms"].values(), strict=True)]
    assert m["time_ms"]["samples"] == pytest.approx(per_iter, rel=1e-5)
    assert statistics.median(m["busbw_gbps"]["samples"]) == pytest.approx(
        statistics.median(m["algbw_gbps"]["samples"]) * bus_factor(op, 2), rel=1e-5)
    assert info["bytes"] == 2**16 and "share_of_interconnect" not in m
    assert out["code_path"]["backend"] == "gloo" and out["code_path"]["checked"] is True
    assert len(info["rank_code_path"]) == 2 and out["code_path"]["env"]["NCCL_NVLS_ENABLE"] is not None
