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
