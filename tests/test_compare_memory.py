"""`compare` of a set whose metric holds 200,000 samples stays within a stated memory (the bootstrap thins
an array to MAX_BOOTSTRAP_SAMPLES order statistics and draws in batches): before, it took 6.4 GB, and
10 M samples asked for 149 GiB. Peak memory of a real `llmbench` process (tests/test_bounded_reads.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_bounded_reads import peak_rss_mib
from test_compare_support import H100_ENV, H200_ENV, case, result_set

from llmbench.measure.stats import MAX_BOOTSTRAP_SAMPLES, bootstrap_distribution
from llmbench.results import MetricResult, save

LIMIT_MIB = 1024  # the stated bound: a comparison of such a set within 1 GiB


def _set(env: dict, n: int, centre: float, seed: int):  # type: ignore[no-untyped-def]
    samples = [float(x) for x in centre * (1 + 0.01 * np.random.default_rng(seed).standard_normal(n))]
    c = case("gemm", {"precision": "bf16", "shape": [8192, 8192, 8192]},
             {"tflops": MetricResult.from_samples("tflops", samples)})
    return result_set(env, [c])


@pytest.mark.slow
def test_compare_of_200k_samples_stays_within_a_gib(tmp_path: Path) -> None:
    save(_set(H100_ENV, 200_000, 700.0, 1), tmp_path / "a.json")
    save(_set(H200_ENV, 200_000, 720.0, 2), tmp_path / "b.json")
    rss, done = peak_rss_mib(["compare", "a.json", "b.json", "-f", "json"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert rss < LIMIT_MIB, f"compare held {rss} MiB (bound {LIMIT_MIB})"
    assert '"tflops"' in done.stdout


def test_a_long_sample_array_is_thinned_to_its_order_statistics() -> None:
    x = np.random.default_rng(3).normal(100.0, 1.0, 5 * MAX_BOOTSTRAP_SAMPLES)
    got = bootstrap_distribution(x)
    assert got.size == 2000
    assert abs(float(np.median(got)) - float(np.median(x))) < 0.05  # the median's replicates sit on its median
