"""host_bound on the CPU, and the batch size at which the GPU becomes the bottleneck."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from llmbench.harness.worker import run_case
from llmbench.metrics import METRICS
from llmbench.scenarios.host_bound import (
    PROFILE_STEPS,
    PROFILE_WINDOWS,
    bottleneck_batch,
    record_gpu_busy,
    window_steps,
)

FAST = {"warmup_iters": 1, "min_iters": 3, "min_seconds": 0.0, "min_sample_s": 0.0}
TINY = {"features": 16, "hidden": 32, "layers": 1, "dataset_size": 256}


def _run(**params: Any) -> dict[str, Any]:
    return run_case({"scenario": "host_bound", "params": {**TINY, **params}, "settings": FAST, "device": "cpu"})


def test_cpu_case_records_what_means_something_there() -> None:
    out = _run(batch=8)
    assert out["status"] == "ok", out
    m = out["metrics"]
    assert set(m) <= set(METRICS)
    assert m["train_samples_per_s"]["value"] > 0 and m["cpu_ms_per_step"]["value"] > 0
    assert 0 < m["model_time_fraction"]["value"] <= 1
    assert not {"gpu_busy_fraction", "gpu_kernel_ms_per_step", "gpu_span_fraction"} & set(m)  # no GPU figures
    assert out["info"]["steps_per_epoch"] == 32


@pytest.mark.slow
def test_dataloader_workers() -> None:
    out = _run(batch=64, num_workers=1)
    assert out["status"] == "ok", out


def test_bottleneck_by_busy_fraction() -> None:
    pts = [(1, 900.0, 0.05), (64, 50_000.0, 0.4), (1024, 400_000.0, 0.85), (8192, 600_000.0, 0.97)]
    got = bottleneck_batch(pts)
    assert got["batch"] == 1024 and "gpu_busy_fraction" in got["rule"]
    assert bottleneck_batch(pts[:2])["batch"] is None


def test_bottleneck_by_scaling_without_busy_figures() -> None:
    # step time flat (1 ms) up to batch 256, then growing with the batch
    pts = [(1, 1_000.0, None), (16, 16_000.0, None), (256, 256_000.0, None), (4096, 400_000.0, None)]
    got = bottleneck_batch(pts)
    assert got["batch"] == 256 and "proportional" in got["rule"]
    assert bottleneck_batch(pts[:3])["batch"] is None  # still scaling: not reached


def test_profiled_window_steps_aim_at_a_tenth_of_a_second() -> None:
    assert window_steps(0.001) == 100
    assert window_steps(0.5) == PROFILE_STEPS[0]  # slow steps: still a few
    assert window_steps(1e-6) == window_steps(0.0) == PROFILE_STEPS[1]


def _ctx() -> Any:
    ctx = SimpleNamespace(metrics={}, info={})
    ctx.record = lambda name, samples: ctx.metrics.__setitem__(name, samples)
    return ctx


def test_gpu_busy_from_profiled_windows_plumbing_on_the_cpu() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(32, 32)
    ctx = _ctx()
    record_gpu_busy(ctx, lambda: (x @ x, time.sleep(0.01)), step_s=0.05, device="cpu")  # 3 steps a window
    fracs = ctx.metrics["gpu_busy_fraction"]
    assert len(fracs) == len(ctx.metrics["gpu_kernel_ms_per_step"]) == PROFILE_WINDOWS
    assert all(0 < f < 0.9 for f in fracs)  # the sleeps are idle
    assert ctx.info["profiled_step_ms"] >= 10 and "3 steps" in ctx.info["gpu_busy_note"]


def test_gpu_busy_error_leaves_no_figure() -> None:
    ctx = _ctx()
    record_gpu_busy(ctx, lambda: None, step_s=0.05, device="cpu")  # no operators: no kernels to count
    assert "gpu_busy_fraction" not in ctx.metrics and "no GPU kernels" in ctx.info["gpu_busy_error"]


H100_SWEEP = "h100-sxm-80gb/host-bound-20261124T111322Z.json"  # batch 1..10240 x num_workers 0, 4


def _h100_ref() -> Any:
    from llmbench.analysis.inputs import SetRef
    from llmbench.results import load
    from tests.conftest import ROOT

    return SetRef("h100", load(ROOT / "results" / H100_SWEEP))


def test_bottleneck_table_of_the_h100_sweep() -> None:
    from llmbench.report.views import set_tables

    t = next(t for t in set_tables(_h100_ref()) if "bounds training" in t.title)
    by = {r[0]: r for r in t.rows}
    assert set(by) == {"num_workers=0", "num_workers=4"}
    assert by["num_workers=4"][1] == "256" and by["num_workers=0"][1] == "1024"  # busy >= 0.8 from there
    assert "gpu_busy_fraction >= 0.8" in by["num_workers=4"][2]
    assert "256: 96,520/s, busy 0.90" in by["num_workers=4"][3] and by["num_workers=4"][3].startswith("1: ")


def test_cases_without_kernel_time_busy_are_read_by_scaling() -> None:
    from llmbench.analysis.bottleneck import sweeps
    from llmbench.results import CaseResult, MetricResult

    def case(b: int, speed: float) -> CaseResult:  # recorded before gpu_span_fraction: busy is the span
        return CaseResult(id=str(b), scenario="host_bound", status="ok", params={"batch": b, "num_workers": 0},
                          metrics={"train_samples_per_s": MetricResult.single("train_samples_per_s", speed),
                                   "gpu_busy_fraction": MetricResult.single("gpu_busy_fraction", 0.99)})

    (sw,) = sweeps([case(1, 1_000.0), case(16, 16_000.0), case(256, 256_000.0), case(4096, 400_000.0)])
    assert sw.batch == 256 and "proportional" in sw.rule  # not 1, as the span of 0.99 would answer
    assert all(f is None for _, _, f in sw.points)


def test_host_bound_charts_draw_a_line_per_sweep() -> None:
    pytest.importorskip("matplotlib")
    from llmbench.report.charts import scenario_charts

    charts = scenario_charts([_h100_ref()], "host_bound")
    assert [c.title.split(":")[1].split(" against")[0].strip() for c in charts] == [
        "train_samples_per_s", "GPU busy fraction"]  # no bars per case beside them
    for c in charts:
        assert "h100 · num_workers=0 (GPU-bound from batch 1024)" in c.svg
        assert "h100 · num_workers=4 (GPU-bound from batch 256)" in c.svg


def test_show_prints_the_bottleneck_table() -> None:
    from typer.testing import CliRunner

    from llmbench.cli import app
    from tests.conftest import ROOT

    out = CliRunner().invoke(app, ["show", str(ROOT / "results" / H100_SWEEP)], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    assert "bounds training" in out.output and "smallest batch with gpu_busy_fraction >= 0.8" in out.output


def test_compare_json_carries_each_sweeps_bottleneck_batch() -> None:
    from llmbench.analysis.compare import sweep_answers

    got = sweep_answers(_h100_ref())
    assert got is not None and got["power"] == []
    by = {s["sweep"]: s for s in got["bottleneck"]}
    assert by["num_workers=0"]["bottleneck_batch"] == 1024 and by["num_workers=4"]["bottleneck_batch"] == 256
    assert all({"batch", "speed", "gpu_busy_fraction"} == set(p) for s in got["bottleneck"] for p in s["points"])
