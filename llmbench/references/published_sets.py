"""Published reference figures, kept as result sets under results/published/<gpu-slug>/ so they can be
compared like measurements, and always shown as published.

Every figure is copied from the cited source (only units converted, as noted); nothing is estimated.
The JSON files are generated from this module (`write_published`), so case ids are computed exactly
as the harness computes them; a test checks the committed files match.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmbench.ids import case_id
from llmbench.references.published_a100 import a100_reference_sets
from llmbench.references.published_ratios import write_ratios
from llmbench.results import CaseResult, MetricResult, ResultSet, Source, save

TRTLLM_URL = (
    "https://github.com/NVIDIA/TensorRT-LLM/blob/00f37686aa854010d68bcbd0f4ab000221541ca6/"
    "docs/source/performance/perf-overview.md"
)
TRTLLM_CITATION = (
    "NVIDIA TensorRT-LLM documentation, 'Performance Overview' (perf-overview.md, v1.0 era), table "
    "'Llama 3.1 8B', TP1 FP8 (nvidia/Llama-3.1-8B-Instruct-FP8), metric 'Total Output Throughput "
    "(tokens/sec)', trtllm-bench throughput (offline, requests at infinite rate), DGX H100 / DGX H200"
)
# (input length, output length) -> (H200 TP1 FP8, H100 TP1 FP8) output tokens/s
TRTLLM_LLAMA31_8B: dict[tuple[int, int], tuple[float, float]] = {
    (128, 128): (27911, 28312),
    (128, 2048): (26221, 22714),
    (128, 4096): (18027, 14325),
    (500, 2000): (20770, 17660),
    (1000, 1000): (17744, 15220),
    (1000, 2000): (16828, 13899),
    (2048, 128): (3538, 3450),
    (2048, 2048): (12194, 9305),
    (5000, 500): (3902, 3459),
    (20000, 2000): (1804, 1351),
}

HABR_2020 = (
    "Habr, 2 December 2020, 'Играемся с 3090 и пробуем MIG на A100' ('Playing with a 3090 and trying MIG on "
    "an A100'), table 'Наивные метрики' (gpu-burn, 120 s); llmbench seeds/000, SEEDS.md section 1"
)
# GPU -> (fp32 Gflop/s, tensor-core `-tc` Gflop/s)
GPU_BURN = {
    "rtx-3090-24gb": ("NVIDIA GeForce RTX 3090", 16500, 38500),
    "a100-40gb": ("NVIDIA A100 40GB (form factor not stated in the source)", 16700, 81500),
}

HABR_2024 = (
    "Habr, 2024, 'Тестирование H100 vs A100 в трейне и инференсе Llama 3, погружение в FP8 и пробы движка "
    "TensorRT-LLM', section 11 'Инференс FP8 через TensorRT LLM'; llmbench seeds/004, SEEDS.md section 5"
)
H100_PCIE_TRTLLM = {"bf16": 70.0, "fp8": 112.0}  # Llama 3 8B on an H100 80GB PCIe, the author's "t/s"

VIBLO_2021 = (
    "multi_instance_gpu.md (Vietnamese MIG how-to, 2021), section 5 'MIG-devices with "
    "Triton-inference-server', perf_analyzer output; llmbench seeds/001, SEEDS.md section 2"
)
# concurrency -> (infer/s, latency us) on a full A100-PCIE-40GB and on one MIG 3g.20gb slice of it
TRITON_FULL = {1: (38.8, 26482), 2: (41.8, 48132), 3: (41.8, 72420)}
TRITON_3G = {1: (19.6, 51688), 2: (20.4, 98995), 3: (20.2, 148630)}


def _case(scenario: str, params: dict[str, Any], metrics: dict[str, float]) -> CaseResult:
    return CaseResult(
        id=case_id(scenario, params),
        scenario=scenario,
        params=params,
        status="ok",
        metrics={k: MetricResult.single(k, v) for k, v in metrics.items()},
    )


def _set(
    suite: str,
    gpu: dict[str, Any],
    created: str,
    citation: str,
    url: str | None,
    note: str,
    cases: list[CaseResult],
) -> ResultSet:
    return ResultSet(
        suite=suite,
        created_at=created,
        env={"gpu": gpu},
        cases=cases,
        source=Source(kind="published", citation=citation, url=url, note=note),
    )


def trtllm_sets() -> dict[str, ResultSet]:
    out = {}
    for idx, (slug, name) in enumerate(
        (
            ("h200-sxm-141gb", "NVIDIA H200 SXM 141GB (DGX H200)"),
            ("h100-sxm-80gb", "NVIDIA H100 SXM 80GB (DGX H100)"),
        )
    ):
        cases = [
            _case(
                "serving",
                {
                    "model": "llama-3.1-8b",
                    "engine": "trtllm",
                    "precision": "fp8",
                    "tp": 1,
                    "input_len": isl,
                    "output_len": osl,
                    "request_rate": "inf",
                },
                {"output_tokens_per_s": figures[idx]},
            )
            for (isl, osl), figures in TRTLLM_LLAMA31_8B.items()
        ]
        out[slug] = _set(
            "trtllm-llama3.1-8b-fp8-throughput",
            {"name": name, "slug": slug, "count": 1},
            "2025-01-01T00:00:00Z",
            TRTLLM_CITATION,
            TRTLLM_URL,
            "offline max-throughput figures from NVIDIA's tables; other software than llmbench's "
            "harness; created_at is a placeholder date, see the url's commit",
            cases,
        )
    return out


def gpu_burn_sets() -> dict[str, ResultSet]:
    out = {}
    for slug, (name, fp32, tc) in GPU_BURN.items():
        cases = [
            _case(
                "gemm",
                {"tool": "gpu-burn", "precision": "fp32", "tensor_cores": False},
                {"tflops": fp32 / 1000},
            ),
            _case(
                "gemm", {"tool": "gpu-burn", "precision": "fp32", "tensor_cores": True}, {"tflops": tc / 1000}
            ),
        ]
        out[slug] = _set(
            "gpu-burn-habr-2020",
            {"name": name, "slug": slug, "count": 1},
            "2020-12-02T00:00:00Z",
            HABR_2020,
            None,
            "Gflop/s in the source, / 1000 here; tensor_cores = gpu-burn -tc",
            cases,
        )
    return out


def h100_pcie_trtllm_set() -> ResultSet:
    cases = [
        _case(
            "generate",
            {"model": "llama-3-8b", "engine": "trtllm", "precision": p},
            {"output_tokens_per_s": v},
        )
        for p, v in H100_PCIE_TRTLLM.items()
    ]
    return _set(
        "trtllm-llama3-8b-habr-2024",
        {"name": "NVIDIA H100 80GB PCIe", "slug": "h100-pcie-80gb", "count": 1},
        "2024-01-01T00:00:00Z",
        HABR_2024,
        None,
        "the author's 't/s' from a simple single-request run; batch size and lengths not stated; "
        "created_at is a placeholder (2024)",
        cases,
    )


def triton_mig_sets() -> dict[str, ResultSet]:
    out = {}
    for slug, mig, table in (
        ("a100-pcie-40gb", "disabled", TRITON_FULL),
        ("a100-pcie-40gb-mig-3g.20gb", "3g.20gb", TRITON_3G),
    ):
        cases = [
            _case(
                "serving",
                {"engine": "triton", "concurrency": c, "model": "not stated"},
                {"request_throughput_per_s": tput, "e2e_ms": lat_us / 1000},
            )
            for c, (tput, lat_us) in table.items()
        ]
        out[slug] = _set(
            "triton-a100-mig-2021",
            {"name": "NVIDIA A100-PCIE-40GB", "slug": slug, "count": 1, "mig_mode": mig},
            "2021-01-01T00:00:00Z",
            VIBLO_2021,
            None,
            "infer/s as req/s; latency (us in the source) as e2e_ms; created_at is a placeholder (2021)",
            cases,
        )
    return out


def published_sets() -> dict[Path, ResultSet]:
    """Relative path under results/published/ -> result set."""
    files: dict[Path, ResultSet] = {}
    for group in (
        trtllm_sets(),
        gpu_burn_sets(),
        triton_mig_sets(),
        {"h100-pcie-80gb": h100_pcie_trtllm_set()},
        *a100_reference_sets(),
    ):
        for slug, rs in group.items():
            files[Path(slug) / f"{rs.suite}.json"] = rs
    return files


def write_published(folder: Path) -> list[Path]:
    """(Re)write every published result set under `folder` (results/published), and the ratio-only
    claims (published_ratios.py)."""
    written = []
    for rel, rs in published_sets().items():
        save(rs, folder / rel)
        written.append(folder / rel)
    return [*written, write_ratios(folder)]
