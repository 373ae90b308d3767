"""Synthetic result sets built with the real pydantic schema, shared by the compare/report/project tests
(imported as `test_compare_support`); plus checks of the builders themselves."""

from __future__ import annotations

from typing import Any

import numpy as np

from llmbench.analysis.inputs import SetRef, name_sets
from llmbench.ids import case_id
from llmbench.results import CaseResult, MetricResult, ResultSet, Source

H100_ENV = {
    "gpu": {
        "name": "NVIDIA H100 80GB HBM3",
        "slug": "h100-sxm-80gb",
        "count": 1,
        "compute_capability": "9.0",
        "memory_gib": 79.2,
        "driver": "580.159.04",
        "power_limit_w": 700,
        "mig_mode": "disabled",
    },
    "cuda": "13.0",
    "python": "3.12.3",
    "packages": {"torch": "2.11.0", "transformers": "5.17.0"},
    "cpu": {"model": "Intel Xeon Platinum 8480+", "cores": 16},
}
H200_ENV = {
    "gpu": {
        "name": "NVIDIA H200",
        "slug": "h200-sxm-141gb",
        "count": 1,
        "compute_capability": "9.0",
        "memory_gib": 139.8,
        "driver": "580.159.04",
        "power_limit_w": 700,
        "mig_mode": "disabled",
    },
    "cuda": "13.0",
    "python": "3.12.3",
    "packages": {"torch": "2.11.0", "transformers": "5.18.0"},
    "cpu": {"model": "AMD EPYC 9654", "cores": 16},
}


def noisy(center: float, n: int = 30, rel: float = 0.01, seed: int = 0) -> list[float]:
    """Deterministic samples around `center` (median exactly `center` for odd n is not needed)."""
    rng = np.random.default_rng(seed)
    return [float(x) for x in center * (1.0 + rel * rng.standard_normal(n))]


def metric(name: str, value: float, *, samples: bool = True, seed: int = 0) -> MetricResult:
    if samples:
        return MetricResult.from_samples(name, noisy(value, seed=seed))
    return MetricResult.single(name, value)


def case(
    scenario: str,
    params: dict[str, Any],
    metrics: dict[str, MetricResult] | None = None,
    status: str = "ok",
    reason: str | None = None,
) -> CaseResult:
    return CaseResult(
        id=case_id(scenario, params),
        scenario=scenario,
        params=params,
        status=status,  # type: ignore[arg-type]
        reason=reason,
        metrics=metrics or {},
    )


def gemm_case(precision: str, tflops: float, seed: int = 0, samples: bool = True) -> CaseResult:
    return case(
        "gemm",
        {"precision": precision, "shape": [8192, 8192, 8192]},
        {
            "tflops": metric("tflops", tflops, seed=seed, samples=samples),
            "time_ms": metric("time_ms", 1.1e6 / tflops / 1000, seed=seed + 1, samples=samples),
        },
    )


def generate_case(
    precision: str,
    batch: int,
    decode_tps: float,
    ttft: float,
    seed: int = 0,
    samples: bool = True,
    efficiency: float | None = None,
    input_len: int = 128,
) -> CaseResult:
    out_len = 128
    tpot = 1000.0 * batch / decode_tps
    e2e = ttft + (out_len - 1) * tpot
    m = {
        "ttft_ms": metric("ttft_ms", ttft, seed=seed, samples=samples),
        "tpot_ms": metric("tpot_ms", tpot, seed=seed + 1, samples=samples),
        "e2e_ms": metric("e2e_ms", e2e, seed=seed + 2, samples=samples),
        "decode_tokens_per_s": metric("decode_tokens_per_s", decode_tps, seed=seed + 3, samples=samples),
        "output_tokens_per_s": metric(
            "output_tokens_per_s", batch * out_len / e2e * 1000, seed=seed + 4, samples=samples
        ),
        "peak_memory_gib": MetricResult.single("peak_memory_gib", 16.5),
    }
    if efficiency is not None:
        m["roofline_efficiency"] = MetricResult.single("roofline_efficiency", efficiency)
    return case(
        "generate",
        {
            "model": "llama-3-8b",
            "precision": precision,
            "batch_size": batch,
            "input_len": input_len,
            "output_len": out_len,
        },
        m,
    )


def bandwidth_case(kind: str, value: float, seed: int = 0) -> CaseResult:
    name = "tb_per_s" if kind == "d2d" else "gb_per_s"
    return case(
        "bandwidth", {"kind": kind, "size_mib": 1024, "pinned": True}, {name: metric(name, value, seed=seed)}
    )


def result_set(
    env: dict[str, Any],
    cases: list[CaseResult],
    suite: str = "quickstart",
    created_at: str = "2026-11-22T10:00:00Z",
    source: Source | None = None,
) -> ResultSet:
    return ResultSet(suite=suite, created_at=created_at, finished_at=created_at, env=env, cases=cases,
                     source=source or Source())


def h100_set(**kw: Any) -> ResultSet:
    return result_set(
        H100_ENV,
        [
            gemm_case("bf16", 700.0, seed=1),
            gemm_case("fp8", 1300.0, seed=2),
            generate_case("bf16", 1, 60.0, 20.0, seed=3),
            generate_case("fp8", 1, 95.0, 15.0, seed=4),
            bandwidth_case("d2d", 2.9, seed=5),
            bandwidth_case("h2d", 50.0, seed=6),
            case(
                "gemm",
                {"precision": "fp32", "shape": [8192, 8192, 8192]},
                status="oom",
                reason="CUDA out of memory",
            ),
            case(
                "generate",
                {
                    "model": "llama-3-8b",
                    "precision": "nf4",
                    "batch_size": 1,
                    "input_len": 128,
                    "output_len": 128,
                },
                status="skipped",
                reason="bitsandbytes is not installed",
            ),
        ],
        **kw,
    )


def h200_set(**kw: Any) -> ResultSet:
    return result_set(
        H200_ENV,
        [
            gemm_case("bf16", 720.0, seed=11),
            gemm_case("fp8", 1350.0, seed=12),
            generate_case("bf16", 1, 85.0, 19.0, seed=13),
            generate_case("fp8", 1, 130.0, 14.0, seed=14),
            bandwidth_case("d2d", 4.1, seed=15),
            case(
                "gemm",
                {"precision": "fp32", "shape": [8192, 8192, 8192]},
                {"tflops": metric("tflops", 50.0, seed=16)},
            ),
            case(
                "generate",
                {
                    "model": "llama-3-8b",
                    "precision": "nf4",
                    "batch_size": 1,
                    "input_len": 128,
                    "output_len": 128,
                },
                status="failed",
                reason="RuntimeError: boom",
            ),
            gemm_case("tf32", 400.0, seed=17),
        ],
        **kw,
    )


def refs(*sets: ResultSet) -> list[SetRef]:
    return name_sets([SetRef(name="", rs=rs, stem=f"{rs.suite}-{i}") for i, rs in enumerate(sets)])


def test_builders_make_valid_result_sets() -> None:
    for rs in (h100_set(), h200_set()):
        again = ResultSet.model_validate_json(rs.model_dump_json())
        assert [c.id for c in again.cases] == [c.id for c in rs.cases]
        assert len({c.id for c in rs.cases}) == len(rs.cases)
