"""Per-step kernel accounting: the arithmetic on known spans, and the profiler plumbing on the CPU."""

from __future__ import annotations

import time

import pytest

from llmbench.measure.kernel_profile import (
    KernelTally,
    busy_fraction,
    decode_step_profile,
    kernel_tally,
    per_step,
    profiled_windows,
)


def test_tally_unions_overlaps_and_sums_by_name() -> None:
    t = KernelTally.from_spans([("a", 0.0, 10.0), ("b", 5.0, 15.0), ("a", 20.0, 30.0)])
    assert t.count == 3
    assert t.busy_s == pytest.approx(25e-6)  # [0, 15] and [20, 30]
    assert t.by_name_s == pytest.approx({"a": 20e-6, "b": 10e-6})


def test_per_step_is_the_difference_over_the_extra_steps() -> None:
    short = KernelTally(busy_s=0.010, count=100, by_name_s={"prefill": 0.006, "step": 0.004})
    long = KernelTally(busy_s=0.022, count=160, by_name_s={"prefill": 0.006, "step": 0.016})
    p = per_step(short, long, extra_steps=6)
    assert p.busy_s == pytest.approx(0.002)
    assert p.kernels == pytest.approx(10.0)
    assert p.by_name_s == pytest.approx({"step": 0.002})  # the prefill cancels
    assert p.top(1) == [("step", pytest.approx(0.002))]


def test_per_step_clamps_noise_and_rejects_no_extra_steps() -> None:
    short = KernelTally(busy_s=0.010, count=10)
    long = KernelTally(busy_s=0.009, count=9)
    assert per_step(short, long, 1).busy_s == 0.0
    with pytest.raises(ValueError, match="more steps"):
        per_step(short, long, 0)


def test_kernel_tally_reads_the_profiler_events() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(64, 64)
    t = kernel_tally(lambda: [x @ x for _ in range(7)], device="cpu")
    assert t.count >= 7
    assert any("mm" in name for name in t.by_name_s)
    assert t.busy_s > 0
    with pytest.raises(ValueError, match="valid: cuda, cpu"):
        kernel_tally(lambda: None, device="tpu")


def test_decode_step_profile_counts_the_extra_steps_only() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(32, 32)

    def generate(n: int) -> None:
        for _ in range(n):
            torch.mm(x, x)

    p = decode_step_profile(generate, 2, 6, device="cpu")
    one_step = kernel_tally(lambda: generate(1), device="cpu").count
    assert one_step >= 1
    assert p.kernels == one_step  # (events of 6 steps - events of 2) / 4


def test_busy_fraction_merges_overlapping_kernels() -> None:
    # stream 1: [0, 2] and [5, 6]; stream 2: [1, 3] overlaps the first; a copy [5.2, 5.5] inside the second
    kernels = [(0.0, 2.0), (5.0, 6.0), (1.0, 3.0), (5.2, 5.5)]
    assert busy_fraction(kernels, 10.0) == pytest.approx(0.4)  # union [0, 3] + [5, 6]; summed durations: 0.53
    assert busy_fraction([(0.0, 1.0), (3.0, 4.0)], 8.0) == pytest.approx(0.25)  # gaps between launches idle
    assert busy_fraction([], 1.0) == 0.0


def test_busy_fraction_caps_clock_disagreement_and_rejects_no_wall_time() -> None:
    assert busy_fraction([(0.0, 1.000003)], 1.0) == 1.0  # profiler clock vs the host's
    with pytest.raises(ValueError, match="positive"):
        busy_fraction([(0.0, 1.0)], 0.0)


def test_profiled_windows_on_the_cpu() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(32, 32)

    def step() -> None:
        x @ x
        time.sleep(0.02)  # the host waiting (a DataLoader): no operator runs

    wins = profiled_windows(step, steps=3, windows=2, device="cpu")
    assert [w.steps for w in wins] == [3, 3]
    for w in wins:
        assert w.wall_s >= 0.06
        assert 0 < w.busy_s < w.wall_s
        assert w.busy_fraction == pytest.approx(w.busy_s / w.wall_s)
        assert w.busy_fraction < 0.9  # the sleeps are idle
        assert min(s for s, _ in w.intervals) == 0.0  # relative to the window's first event
    with pytest.raises(ValueError, match=">= 1"):
        profiled_windows(step, steps=0, windows=1, device="cpu")
